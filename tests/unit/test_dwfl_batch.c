/* test_dwfl_batch.c — symbolizing by binary (ana_sym_collect + ana_sym_prepare, what the loader
 * does) gives the same frames as symbolizing each address when asked (ana_sym_sample alone), for
 * addresses in this executable (functions, an inlined call) and in the C library, seen from
 * several process images; and the loader really symbolizes ahead (no address left for later). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <libelf.h>

#include "dwfl.h"
#include "gtt.h"
#include "model.h"
#include "model_priv.h"
#include "testhelp.h"

#define T0 1000000000000ull
#define N_PIDS 4

typedef struct map { uint64_t start, end, pgoff; char path[4096]; uint8_t bid[64]; size_t bid_len; } map;
static map self_map, libc_map;

__attribute__((noinline)) int tb_leaf(int x);
__attribute__((noinline)) int tb_middle(int x);
__attribute__((noinline)) int tb_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int tb_middle(int x) { return tb_leaf(x) + 2; }

/* An instruction inside an inlined call, its address published by the asm itself. */
extern const uint64_t tb_inl_addr;
static inline __attribute__((always_inline)) int tb_inlined(int x)
{
	__asm__ volatile("nop\n.Ltb_inl_mark:\n\tnop\n\t.pushsection .data.rel.local,\"aw\"\n\t.globl tb_inl_addr\n"
	                 "\t.p2align 3\ntb_inl_addr:\n\t.quad .Ltb_inl_mark\n\t.popsection" ::: "memory");
	return x * 7;
}
__attribute__((noinline)) int tb_outer(int x);
__attribute__((noinline)) int tb_outer(int x) { return tb_inlined(x) + 1; }

static size_t build_id_of(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *id = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	size_t len = n > 0 && (size_t)n <= cap ? (size_t)n : 0;
	if (len)
		memcpy(buf, id, len);
	elf_end(e);
	close(fd);
	return len;
}

/* The executable mapping holding addr, from /proc/self/maps. 0 or -1. */
static int find_mapping(uintptr_t addr, map *mp)
{
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	int rc = -1;
	if (!f)
		return -1;
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		int pos = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) >= 3 && lo <= addr && addr < hi &&
		    pos > 0) {
			mp->start = lo;
			mp->end = hi;
			mp->pgoff = off;
			snprintf(mp->path, sizeof(mp->path), "%s", line + pos);
			mp->path[strcspn(mp->path, "\n")] = 0;
			mp->bid_len = build_id_of(mp->path, mp->bid, sizeof(mp->bid));
			rc = mp->path[0] == '/' ? 0 : -1;
		}
	}
	fclose(f);
	return rc;
}

static void put(gtt_writer *w, gtt_record *r)
{
	if (gtt_write(w, r) < 0)
		printf("FAIL: gtt_write tag %u\n", r->tag);
}

static void put_mapping(gtt_writer *w, uint32_t pid, const map *mp)
{
	gtt_record r = { .tag = GTT_REC_MAPPING };
	r.u.mapping.time_ns = T0;
	r.u.mapping.pid = pid;
	r.u.mapping.prot = PROT_READ | PROT_EXEC;
	r.u.mapping.start = mp->start;
	r.u.mapping.end = mp->end;
	r.u.mapping.pgoff = mp->pgoff;
	r.u.mapping.build_id_len = (uint32_t)mp->bid_len;
	memcpy(r.u.mapping.build_id, mp->bid, mp->bid_len);
	r.u.mapping.path = mp->path;
	put(w, &r);
}

/* The callchains of the samples, leaf first (return addresses after the first). */
#define N_CHAINS 4
static uint64_t chains[N_CHAINS][3];
static uint32_t chain_len[N_CHAINS];

static void make_chains(void)
{
	uint64_t in_libc = (uint64_t)(uintptr_t)&fclose + 1, in_libc2 = (uint64_t)(uintptr_t)&qsort + 1;
	/* a return address into tb_middle: just after its call of tb_leaf, within the function */
	uint64_t ret_middle = (uint64_t)(uintptr_t)&tb_middle + 5;
	uint64_t c[N_CHAINS][3] = {
		{ (uint64_t)(uintptr_t)&tb_leaf + 1, ret_middle, 0 },
		{ tb_inl_addr, (uint64_t)(uintptr_t)&tb_middle + 5, 0 },
		{ in_libc, ret_middle, 0 },
		{ in_libc2, in_libc + 3, (uint64_t)(uintptr_t)&tb_outer + 4 },
	};
	uint32_t n[N_CHAINS] = { 2, 2, 2, 3 };
	memcpy(chains, c, sizeof(c));
	memcpy(chain_len, n, sizeof(n));
}

static int write_trace(const char *path)
{
	int err;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w)
		return -1;
	for (uint32_t p = 0; p < N_PIDS; p++) {
		put_mapping(w, 100 + p, &self_map);
		put_mapping(w, 100 + p, &libc_map);
	}
	uint64_t t = T0 + 1000;
	for (uint32_t rep = 0; rep < 3; rep++)
		for (uint32_t p = 0; p < N_PIDS; p++)
			for (uint32_t c = 0; c < N_CHAINS; c++) {
				gtt_record r = { .tag = GTT_REC_SAMPLE };
				r.u.sample.time_ns = t++;
				r.u.sample.pid = r.u.sample.tid = 100 + p;
				r.u.sample.period_ns = 10000000;
				r.u.sample.n_user = chain_len[c];
				r.u.sample.ips = chains[c];
				put(w, &r);
			}
	return gtt_writer_close(w);
}

static void frames_text(const ana_model *m, const uint32_t *fr, int n, char *out, size_t cap)
{
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		const ana_frame *f = &m->frames.v[fr[i]];
		size_t used = strlen(out);
		snprintf(out + used, cap - used, "%s%s%s:%d", i ? ";" : "", f->name, f->inlined ? "(inl)" : "", f->line);
	}
}

int main(void)
{
	char dir[] = "/tmp/gt-test-dwfl-batch.XXXXXX", path[4200], err[512];
	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp\n");
		return 1;
	}
	if (find_mapping((uintptr_t)&tb_leaf, &self_map) < 0 || !self_map.bid_len ||
	    find_mapping((uintptr_t)&fclose, &libc_map) < 0 || !libc_map.bid_len) {
		printf("SKIP: cannot find this test's or the C library's mapping or build-id\n");
		return 0;
	}
	make_chains();
	snprintf(path, sizeof(path), "%s/batch.gtt", dir);
	th_check(write_trace(path) == 0, "trace written");
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m && m->samples.n == 3 * N_PIDS * N_CHAINS, "trace loads with every sample (%s)", m ? "ok" : err);
	if (!m)
		goto out;
	const ana_sym_stats *st = &ana_priv_get(m)->sym_stats;
	th_check(st->n_addr_cached > 0 && st->n_addr_late == 0,
	         "the loader symbolizes every address ahead, binary by binary (%" PRIu64 " addresses, %" PRIu64
	         " left for later)",
	         st->n_addr_cached, st->n_addr_late);

	/* the same samples through a second symbolizer on the same model, each address looked up
	 * when asked: equal frames are equal ids */
	ana_sym_opts so = { .kernel = 1 };
	ana_sym *live = ana_sym_create(m, &so), *ahead = ana_sym_create(m, &so);
	uint32_t ids[N_PIDS * N_CHAINS];
	int collected = 1;
	for (uint32_t k = 0; k < N_PIDS * N_CHAINS; k++) {
		const ana_sample *e = &m->samples.v[k];
		gtt_sample smp = { .time_ns = e->time_ns, .pid = e->pid, .tid = e->tid,
		                   .n_user = chain_len[k % N_CHAINS], .ips = chains[k % N_CHAINS] };
		collected &= ahead && ana_sym_collect(ahead, &smp, &ids[k]) == 0 && ids[k] > 0;
	}
	th_check(collected && ahead && ana_sym_prepare(ahead) == 0, "ana_sym_collect keeps each unwind, ana_sym_prepare runs");
	int same_live = 1, same_ahead = 1, deep = 1;
	for (uint32_t k = 0; live && ahead && k < N_PIDS * N_CHAINS; k++) {
		const ana_sample *e = &m->samples.v[k];
		const ana_stack *sk = &m->stacks.v[e->stack_id];
		gtt_sample smp = { .time_ns = e->time_ns, .pid = e->pid, .tid = e->tid,
		                   .n_user = chain_len[k % N_CHAINS], .ips = chains[k % N_CHAINS] };
		uint32_t fl[64], fa[64];
		ana_unwind_info ul, ua;
		int nl = ana_sym_sample(live, &smp, fl, 64, &ul);
		int na = ana_sym_sample_unwound(ahead, ids[k], fa, 64, &ua);
		char want[2048], got[2048];
		frames_text(m, sk->frames, (int)sk->n, want, sizeof(want));
		if (nl != (int)sk->n || memcmp(fl, sk->frames, sk->n * sizeof(uint32_t)) != 0 || ul.unwind != e->unwind) {
			frames_text(m, fl, nl, got, sizeof(got));
			printf("  sample %u: loader %s, when asked %s\n", k, want, got);
			same_live = 0;
		}
		if (na != (int)sk->n || memcmp(fa, sk->frames, sk->n * sizeof(uint32_t)) != 0 || ua.unwind != e->unwind) {
			frames_text(m, fa, na, got, sizeof(got));
			printf("  sample %u: loader %s, kept unwind %s\n", k, want, got);
			same_ahead = 0;
		}
		deep &= sk->n >= chain_len[k % N_CHAINS];
	}
	th_check(live && same_live, "symbolizing when asked gives the loader's frames, ids and unwind ends");
	th_check(ahead && same_ahead, "a kept unwind (ana_sym_sample_unwound) gives the loader's frames too");
	th_check(deep, "every address became at least one frame");
	ana_sym_stats sl, sa;
	if (live && ahead) {
		ana_sym_get_stats(live, &sl);
		ana_sym_get_stats(ahead, &sa);
		th_check(sl.n_addr_late == sl.n_addr_cached && sl.n_addr_cached == st->n_addr_cached && sa.n_addr_late == 0,
		         "without ana_sym_collect every address is symbolized late (%" PRIu64 " of %" PRIu64 "), with it none",
		         sl.n_addr_late, sl.n_addr_cached);
	}
	/* the inlined call: its own frame, under its function, from the DWARF the batch read */
	int inl = 0;
	for (size_t i = 0; i < m->frames.n; i++)
		inl |= m->frames.v[i].inlined && strcmp(m->frames.v[i].name, "tb_inlined") == 0;
	th_check(inl, "the inlined call is a frame of its own (DWARF read by the batch)");
	ana_sym_destroy(live);
	ana_sym_destroy(ahead);
out:
	ana_model_free(m);
	unlink(path);
	rmdir(dir);
	(void)tb_middle(1);
	(void)tb_outer(1);
	return th_report();
}
