/* test_model_load.c — ana_model_load() on traces written here with gtt_writer: symbolization of
 * addresses in this very executable (from disk, from an embedded archive, missing), DWARF
 * unwinding of a register + stack copy captured here, per-thread CPU figures, truncated,
 * corrupt, empty and foreign files. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <libelf.h>

#include "demangle.h"
#include "dwfl.h"
#include "fold.h"
#include "gtt.h"
#include "model.h"
#include "testhelp.h"

#define T0 1000000000000ull
#define SEC 1000000000ull

static char dir[] = "/tmp/gt-test-model.XXXXXX";
static char exe[4096];
static uint64_t map_start, map_end, map_pgoff, stack_end;
static uint8_t bid[64];
static size_t bid_len;

__attribute__((noinline)) int tm_leaf(int x);
__attribute__((noinline)) int tm_middle(int x);
__attribute__((noinline)) int tm_leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int tm_middle(int x) { return tm_leaf(x) + 2; }

/* The executable mapping of this program that contains addr, from /proc/self/maps. */
/* The GNU build-id of the file at path through libelf (an analysis test links no recorder
 * code); 0 when none. */
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

static int find_self_mapping(uintptr_t addr)
{
	char line[8192];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	int found = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			stack_end = hi;
		if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) == 3 && lo <= addr && addr < hi) {
			map_start = lo;
			map_end = hi;
			map_pgoff = off;
			found = 0;
		}
	}
	fclose(f);
	bid_len = build_id_of(exe, bid, sizeof(bid));
	return found;
}

static void put(gtt_writer *w, gtt_record *r)
{
	if (gtt_write(w, r) < 0)
		printf("FAIL: gtt_write tag %u\n", r->tag);
}

static void put_meta(gtt_writer *w, const char *k, const char *v)
{
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta.key = k;
	r.u.meta.value = v;
	put(w, &r);
}

static void put_mapping(gtt_writer *w, uint32_t pid, const char *path)
{
	gtt_record r = { .tag = GTT_REC_MAPPING };
	r.u.mapping.time_ns = T0;
	r.u.mapping.pid = pid;
	r.u.mapping.prot = PROT_READ | PROT_EXEC;
	r.u.mapping.start = map_start;
	r.u.mapping.end = map_end;
	r.u.mapping.pgoff = map_pgoff;
	r.u.mapping.build_id_len = (uint32_t)bid_len;
	memcpy(r.u.mapping.build_id, bid, bid_len);
	r.u.mapping.path = path;
	put(w, &r);
}

static void put_sample(gtt_writer *w, uint64_t t, uint32_t pid, uint32_t tid, const uint64_t *ips, uint32_t n_kernel,
                       uint32_t n_user)
{
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample.time_ns = t;
	r.u.sample.pid = pid;
	r.u.sample.tid = tid;
	r.u.sample.period_ns = 10000000;
	r.u.sample.n_kernel = n_kernel;
	r.u.sample.n_user = n_user;
	r.u.sample.ips = ips;
	put(w, &r);
}

/* Embed this executable as the archive of the binary at fake_path. */
static void put_archive(gtt_writer *w, const char *fake_path)
{
	int fd = open(exe, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	uint8_t *data = malloc((size_t)st.st_size);
	if (data && read(fd, data, (size_t)st.st_size) == st.st_size) {
		/* in pieces, to exercise reassembly */
		uint64_t piece = (uint64_t)st.st_size / 3 + 1;
		for (uint64_t off = 0; off < (uint64_t)st.st_size; off += piece) {
			gtt_record r = { .tag = GTT_REC_ARCHIVE };
			r.u.archive.build_id_len = (uint32_t)bid_len;
			memcpy(r.u.archive.build_id, bid, bid_len);
			r.u.archive.path = fake_path;
			r.u.archive.kind = GTT_ARCHIVE_ELF;
			r.u.archive.total_bytes = (uint64_t)st.st_size;
			r.u.archive.offset = off;
			r.u.archive.len = (uint32_t)((uint64_t)st.st_size - off < piece ? (uint64_t)st.st_size - off : piece);
			r.u.archive.data = data + off;
			put(w, &r);
		}
	}
	free(data);
	close(fd);
}

/* A small trace: one process (pid 100) with two threads; samples in tm_leaf <- tm_middle. */
static void write_basic(const char *path, const char *map_path, int archive)
{
	int err;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w) {
		printf("FAIL: cannot write %s\n", path);
		return;
	}
	put_meta(w, "command", "./prog --flag");
	put_meta(w, "frequency_hz", "100");
	gtt_record r = { .tag = GTT_REC_PROCESS };
	r.u.process.time_ns = T0;
	r.u.process.pid = 100;
	r.u.process.event = GTT_PROC_START;
	r.u.process.comm = "/usr/bin/prog --flag";
	put(w, &r);
	const uint32_t tids[2] = { 100, 101 };
	const char *names[2] = { "main", "worker" };
	for (int i = 0; i < 2; i++) {
		gtt_record t = { .tag = GTT_REC_THREAD };
		t.u.thread.time_ns = T0;
		t.u.thread.pid = 100;
		t.u.thread.tid = tids[i];
		t.u.thread.event = GTT_THREAD_START;
		t.u.thread.name = names[i];
		put(w, &t);
	}
	put_mapping(w, 100, map_path);
	/* worker: /proc readings at 1 s and 3 s; switches in 1.0-1.5 s and 2.0 s-end */
	uint64_t cpu_t[2] = { T0 + 1 * SEC, T0 + 3 * SEC }, cpu_u[2] = { SEC / 2, 3 * SEC / 2 }, cpu_s[2] = { 0, SEC / 2 };
	for (int i = 0; i < 2; i++) {
		gtt_record c = { .tag = GTT_REC_THREAD_CPU };
		c.u.thread_cpu.time_ns = cpu_t[i];
		c.u.thread_cpu.pid = 100;
		c.u.thread_cpu.tid = 101;
		c.u.thread_cpu.utime_ns = cpu_u[i];
		c.u.thread_cpu.stime_ns = cpu_s[i];
		c.u.thread_cpu.state = 'R';
		put(w, &c);
	}
	uint64_t sw_t[3] = { T0 + SEC, T0 + 3 * SEC / 2, T0 + 2 * SEC };
	uint32_t sw_k[3] = { GTT_SWITCH_IN, GTT_SWITCH_OUT, GTT_SWITCH_IN };
	for (int i = 0; i < 3; i++) {
		gtt_record s = { .tag = GTT_REC_SWITCH };
		s.u.sw.time_ns = sw_t[i];
		s.u.sw.pid = 100;
		s.u.sw.tid = 101;
		s.u.sw.kind = sw_k[i];
		put(w, &s);
	}
	uint64_t leaf = (uint64_t)(uintptr_t)&tm_leaf + 1, mid_ret = (uint64_t)(uintptr_t)&tm_middle + 5;
	uint64_t chain[2] = { leaf, mid_ret };
	for (int i = 0; i < 30; i++)
		put_sample(w, T0 + (uint64_t)(i + 1) * 10000000, 100, 101, chain, 0, 2);
	uint64_t only_mid[1] = { mid_ret };
	for (int i = 0; i < 10; i++)
		put_sample(w, T0 + (uint64_t)(i + 1) * 10000000 + 1, 100, 100, only_mid, 0, 1);
	/* an address in no mapping, and a kernel frame above a user one */
	uint64_t nowhere[1] = { 0x10 };
	put_sample(w, T0 + 5 * SEC / 2, 100, 100, nowhere, 0, 1);
	uint64_t kern[2] = { 0xffffffff81000010ull, leaf };
	put_sample(w, T0 + 5 * SEC / 2 + 1, 100, 100, kern, 1, 1);
	if (archive)
		put_archive(w, map_path);
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end.time_ns = T0 + 3 * SEC;
	e.u.end.reason = GTT_END_TARGET_EXIT;
	put(w, &e);
	gtt_writer_close(w);
}

static const ana_frame *leaf_frame(const ana_model *m, const ana_sample *s)
{
	const ana_stack *st = &m->stacks.v[s->stack_id];
	return st->n ? &m->frames.v[st->frames[st->n - 1]] : NULL;
}

static int stack_has(const ana_model *m, const ana_sample *s, const char *name)
{
	const ana_stack *st = &m->stacks.v[s->stack_id];
	for (uint32_t i = 0; i < st->n; i++)
		if (strcmp(m->frames.v[st->frames[i]].name, name) == 0)
			return 1;
	return 0;
}

static void test_basic(void)
{
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/basic.gtt", dir);
	write_basic(path, exe, 0);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "basic trace loads (%s)", m ? "ok" : err);
	if (!m)
		return;
	th_check(m->samples.n == 42, "42 samples loaded (got %zu)", m->samples.n);
	th_check(m->threads.n == 2 && m->threads.v[0].tid == 100 && m->threads.v[1].tid == 101,
	         "two threads sorted by tid");
	const ana_thread *wk = ana_thread_find(m, 100, 101);
	th_check(wk && strcmp(wk->name, "worker") == 0, "thread name from the thread record");
	th_check(wk && wk->n_samples == 30 && wk->sampled_ns == 30 * 10000000ull, "worker: 30 samples, 300 ms");
	th_check(wk && wk->cpu_ns == 3 * SEC / 2, "worker: /proc CPU = growth between readings (%" PRIu64 ")",
	         wk ? wk->cpu_ns : 0);
	th_check(wk && wk->oncpu_ns == 3 * SEC / 2, "worker: on-CPU from switches 0.5 s + 1.0 s (%" PRIu64 ")",
	         wk ? wk->oncpu_ns : 0);
	th_check(m->start_ns == T0 && m->end_ns == T0 + 3 * SEC, "start/end from the records");
	th_check(strcmp(ana_meta_get(m, "command"), "./prog --flag") == 0, "meta lookup");
	int leaf_ok = 0, mid_ok = 0, chain_ok = 0, unknown_ok = 0, kernel_ok = 0;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		const ana_frame *f = leaf_frame(m, s);
		if (s->tid == 101 && f && strcmp(f->name, "tm_leaf") == 0) {
			leaf_ok++;
			chain_ok += m->stacks.v[s->stack_id].n == 2 && stack_has(m, s, "tm_middle");
		}
		if (s->tid == 100 && f && strcmp(f->name, "tm_middle") == 0 && m->stacks.v[s->stack_id].n == 1)
			mid_ok++;
		if (f && strcmp(f->name, "[unknown]") == 0)
			unknown_ok++;
		if (f && f->kind == ANA_FRAME_KERNEL && stack_has(m, s, "tm_leaf"))
			kernel_ok++;
	}
	th_check(leaf_ok == 30, "leaf address symbolized as tm_leaf (%d of 30)", leaf_ok);
	th_check(chain_ok == 30, "return address symbolized as the caller tm_middle, root first (%d)", chain_ok);
	th_check(mid_ok == 10, "one-frame samples of the main thread (%d)", mid_ok);
	th_check(unknown_ok == 1, "address outside every mapping is [unknown]");
	th_check(kernel_ok == 1, "kernel frame is the leaf, above the user frames");
	const ana_frame *lf = NULL;
	for (size_t i = 0; i < m->frames.n; i++)
		if (strcmp(m->frames.v[i].name, "tm_leaf") == 0)
			lf = &m->frames.v[i];
	const char *base = strrchr(exe, '/');
	th_check(lf && lf->module && strcmp(lf->module, base + 1) == 0, "frame module is the binary's basename");
	th_check(lf && lf->file && strstr(lf->file, "test_model_load.c") && lf->line > 0,
	         "source file and line from DWARF (%s:%d)", lf && lf->file ? lf->file : "-", lf ? lf->line : 0);
	/* strings from records live in the model's interned strings (freed with the model, never
	 * one by one through lib's borrowed const char * fields) */
	th_check(m->processes.n == 1 && m->processes.v[0].comm == ana_intern_str(m, "/usr/bin/prog --flag") &&
	         m->mappings.n >= 1 && m->mappings.v[0].m.path == ana_intern_str(m, m->mappings.v[0].m.path),
	         "process command and mapping path are interned model strings");
	/* interning: equal stacks share an id */
	th_check(m->samples.v[0].stack_id == m->samples.v[2].stack_id || m->samples.v[0].tid != m->samples.v[2].tid,
	         "equal stacks are interned once");
	for (size_t i = 1; i < m->samples.n; i++)
		if (m->samples.v[i].time_ns < m->samples.v[i - 1].time_ns) {
			th_check(0, "samples in time order");
			break;
		}
	ana_model_free(m);
}

/* The binary is "gone" (a path that does not exist): symbols come from the embedded copy,
 * and without it (--no-archive) addresses show as [module+0xOFF]. */
static void test_archive(void)
{
	char path[4200], err[512];
	const char *fake = "/nonexistent/dir/gone_binary";
	snprintf(path, sizeof(path), "%s/archive.gtt", dir);
	write_basic(path, fake, 1);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "archive trace loads (%s)", m ? "ok" : err);
	if (!m)
		return;
	int n = 0;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_frame *f = leaf_frame(m, &m->samples.v[i]);
		n += f && strcmp(f->name, "tm_leaf") == 0 && strcmp(f->module, "gone_binary") == 0;
	}
	th_check(n == 30, "symbols from the embedded archive (%d of 30 tm_leaf leaves)", n);
	th_check(m->n_archive_bytes > 0, "archive size counted");
	ana_model_free(m);

	o.no_archive = 1;
	m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "archive trace loads with --no-archive");
	if (!m)
		return;
	n = 0;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_frame *f = leaf_frame(m, &m->samples.v[i]);
		n += f && strncmp(f->name, "[gone_binary+0x", 15) == 0;
	}
	th_check(n == 40, "without the archive: [gone_binary+0xOFF] leaf frames (%d of 40)", n);
	size_t nw;
	const char *const *w = ana_model_warnings(m, &nw);
	int warned = 0;
	for (size_t i = 0; i < nw; i++)
		warned |= strstr(w[i], "gone_binary") != NULL;
	th_check(warned, "a warning names the binary without symbols");
	ana_model_free(m);
}

/* A different binary at the recorded path (build-id mismatch) is never used. */
static void test_mismatch(void)
{
	char path[4200], err[512], other[4200];
	snprintf(other, sizeof(other), "%s/impostor", dir);
	/* /bin/true is an ELF with another build-id */
	int in = open("/bin/true", O_RDONLY), out = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t k;
	while (in >= 0 && out >= 0 && (k = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)k) != k)
			break;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	snprintf(path, sizeof(path), "%s/mismatch.gtt", dir);
	write_basic(path, other, 0);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "mismatch trace loads");
	if (!m)
		return;
	int n = 0;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_frame *f = leaf_frame(m, &m->samples.v[i]);
		n += f && strncmp(f->name, "[impostor+0x", 12) == 0;
	}
	th_check(n == 40, "binary with another build-id not used (%d of 40 unknown leaves)", n);
	ana_model_free(m);
}

/* A stripped binary: addresses without a symbol are named by the start of their function from
 * the unwind tables, so samples anywhere in one function add up. */
static void test_stripped(void)
{
	char path[4200], err[512], stripped[4200], cmd[9000];
	snprintf(stripped, sizeof(stripped), "%s/stripped", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s' 2>/dev/null", exe, stripped);
	if (system(cmd) != 0) {
		printf("SKIP: objcopy not available for the stripped-binary test\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/stripped.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	if (!w)
		return;
	put_mapping(w, 500, stripped);
	uint64_t a[1] = { (uint64_t)(uintptr_t)&tm_leaf + 1 }, b[1] = { (uint64_t)(uintptr_t)&tm_leaf + 4 };
	put_sample(w, T0 + 1, 500, 500, a, 0, 1);
	put_sample(w, T0 + 2, 500, 500, b, 0, 1);
	gtt_writer_close(w);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m && m->samples.n == 2, "stripped trace loads");
	if (m && m->samples.n == 2) {
		const ana_frame *fa = leaf_frame(m, &m->samples.v[0]), *fb = leaf_frame(m, &m->samples.v[1]);
		char want[64];
		/* this test is a PIE whose text segment has vaddr == file offset */
		snprintf(want, sizeof(want), "[stripped+0x%" PRIx64 "]",
		         (uint64_t)(uintptr_t)&tm_leaf - map_start + map_pgoff);
		th_check(fa && fa == fb && strcmp(fa->name, want) == 0,
		         "two addresses in one stripped function: one frame at its start (%s, %s; want %s)",
		         fa ? fa->name : "-", fb ? fb->name : "-", want);
	}
	ana_model_free(m);
}

/* An inlined call: the address of an instruction inside it, published by the asm itself. */
extern const uint64_t tm_inl_addr;
static inline __attribute__((always_inline)) int tm_inlined(int x)
{
	__asm__ volatile("nop\n.Ltm_inl_mark:\n\tnop\n\t.pushsection .data.rel.local,\"aw\"\n\t.globl tm_inl_addr\n"
	                 "\t.p2align 3\ntm_inl_addr:\n\t.quad .Ltm_inl_mark\n\t.popsection" ::: "memory");
	return x * 7;
}
__attribute__((noinline)) int tm_outer(int x);
__attribute__((noinline)) int tm_outer(int x) { return tm_inlined(x) + 1; }

static void test_inline(void)
{
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/inline.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	if (!w)
		return;
	put_mapping(w, 700, exe);
	uint64_t ip[1] = { tm_inl_addr };
	put_sample(w, T0, 700, 700, ip, 0, 1);
	gtt_writer_close(w);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	if (m && m->samples.n == 1) {
		const ana_stack *st = &m->stacks.v[m->samples.v[0].stack_id];
		const ana_frame *a = st->n == 2 ? &m->frames.v[st->frames[0]] : NULL;
		const ana_frame *b = st->n == 2 ? &m->frames.v[st->frames[1]] : NULL;
		th_check(a && b && strcmp(a->name, "tm_outer") == 0 && !a->inlined && strcmp(b->name, "tm_inlined") == 0 &&
		             b->inlined,
		         "an inlined call is its own frame, marked inlined, under its caller (%u frames: %s%s%s)", st->n,
		         st->n ? m->frames.v[st->frames[0]].name : "", st->n > 1 ? ";" : "",
		         st->n > 1 ? m->frames.v[st->frames[1]].name : "");
	} else {
		th_check(0, "inline trace loads (%s)", m ? "no sample" : err);
	}
	ana_model_free(m);
	(void)tm_outer(1);
}

/* Leaf name of the first sample of a trace loaded with o. */
static char *first_leaf(const char *path, const ana_opts *o)
{
	char err[512];
	ana_model *m = ana_model_load(path, o, err, sizeof(err));
	char *name = NULL;
	if (m && m->samples.n) {
		const ana_frame *f = leaf_frame(m, &m->samples.v[0]);
		name = strdup(f ? f->name : "-");
	}
	ana_model_free(m);
	return name ? name : strdup(m ? "(no samples)" : err);
}

/* Where symbols come from when the binary is not at its recorded path: --symfs DIR/<path>, a
 * separate debug file found through .gnu_debuglink, a debug file under DIR/usr/lib/debug/.build-id. */
static void test_symbol_sources(void)
{
	char cmd[32768], path[4200], symfs[4200], hex[130];
	const char *rec_path = "/opt/gone/app";
	for (size_t i = 0; i < bid_len; i++)
		sprintf(hex + 2 * i, "%02x", bid[i]);
	snprintf(symfs, sizeof(symfs), "%s/symfs", dir);
	snprintf(cmd, sizeof(cmd),
	         "set -e; mkdir -p '%s/opt/gone' '%s/dl' '%s/bid/usr/lib/debug/.build-id/%.2s';"
	         "cp '%s' '%s/opt/gone/app';"
	         "objcopy --only-keep-debug '%s' '%s/dl/app.debug';"
	         "objcopy --strip-all --add-gnu-debuglink='%s/dl/app.debug' '%s' '%s/dl/app';"
	         "cp '%s/dl/app.debug' '%s/bid/usr/lib/debug/.build-id/%.2s/%s.debug' 2>/dev/null",
	         symfs, dir, dir, hex, exe, symfs, exe, dir, dir, exe, dir, dir, dir, hex, hex + 2);
	if (system(cmd) != 0) {
		printf("SKIP: objcopy not available for the symbol-source tests\n");
		return;
	}
	uint64_t leaf[1] = { (uint64_t)(uintptr_t)&tm_leaf + 1 };
	ana_opts o;
	ana_opts_init(&o);
	char *name;

	snprintf(path, sizeof(path), "%s/symfs.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	put_mapping(w, 600, rec_path);
	put_sample(w, T0, 600, 600, leaf, 0, 1);
	gtt_writer_close(w);
	name = first_leaf(path, &o);
	th_check(strncmp(name, "[app+0x", 7) == 0, "binary gone, no --symfs: [app+0xOFF] (%s)", name);
	free(name);
	o.symfs = symfs;
	name = first_leaf(path, &o);
	th_check(strcmp(name, "tm_leaf") == 0, "--symfs DIR finds DIR/<recorded path> (%s)", name);
	free(name);

	/* stripped binary at its recorded path; its symbols in the debug file it links to */
	char stripped[4200];
	snprintf(stripped, sizeof(stripped), "%s/dl/app", dir);
	snprintf(path, sizeof(path), "%s/debuglink.gtt", dir);
	w = gtt_writer_open(path, &e);
	put_mapping(w, 601, stripped);
	put_sample(w, T0, 601, 601, leaf, 0, 1);
	gtt_writer_close(w);
	ana_opts_init(&o);
	name = first_leaf(path, &o);
	th_check(strcmp(name, "tm_leaf") == 0, "stripped binary: symbols from its .gnu_debuglink file (%s)", name);
	free(name);

	/* only a debug file, under DIR/usr/lib/debug/.build-id/xx/yyyy.debug */
	snprintf(symfs, sizeof(symfs), "%s/bid", dir);
	snprintf(path, sizeof(path), "%s/symfs.gtt", dir);
	o.symfs = symfs;
	name = first_leaf(path, &o);
	th_check(strcmp(name, "tm_leaf") == 0, "symbols from a .build-id debug file alone (%s)", name);
	free(name);
}

/* exec replaces a process's image: the same addresses mean another binary after it, and a
 * forked child without mappings of its own runs its parent's image. */
static void test_exec(void)
{
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/exec.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	if (!w)
		return;
	put_mapping(w, 400, exe); /* at T0 */
	gtt_record r = { .tag = GTT_REC_PROCESS };
	r.u.process.time_ns = T0 + SEC;
	r.u.process.pid = 400;
	r.u.process.event = GTT_PROC_EXEC;
	r.u.process.comm = "after";
	put(w, &r);
	gtt_record mp = { .tag = GTT_REC_MAPPING };
	mp.u.mapping.time_ns = T0 + SEC + 1000;
	mp.u.mapping.pid = 400;
	mp.u.mapping.prot = PROT_READ | PROT_EXEC;
	mp.u.mapping.start = map_start;
	mp.u.mapping.end = map_end;
	mp.u.mapping.pgoff = map_pgoff;
	mp.u.mapping.path = "/nonexistent/after";
	put(w, &mp);
	gtt_record fk = { .tag = GTT_REC_PROCESS };
	fk.u.process.time_ns = T0 + SEC / 2;
	fk.u.process.pid = 401;
	fk.u.process.ppid = 400;
	fk.u.process.event = GTT_PROC_FORK;
	fk.u.process.comm = "child";
	put(w, &fk);
	uint64_t leaf[1] = { (uint64_t)(uintptr_t)&tm_leaf + 1 };
	put_sample(w, T0 + SEC / 2, 400, 400, leaf, 0, 1);   /* before the exec */
	put_sample(w, T0 + 2 * SEC, 400, 400, leaf, 0, 1);   /* after it */
	put_sample(w, T0 + 3 * SEC, 401, 401, leaf, 0, 1);   /* the child forked before the exec */
	gtt_writer_close(w);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m && m->samples.n == 3, "exec trace loads");
	if (!m || m->samples.n != 3)
		goto out;
	const ana_frame *a = leaf_frame(m, &m->samples.v[0]), *b = leaf_frame(m, &m->samples.v[1]);
	const ana_frame *c = leaf_frame(m, &m->samples.v[2]);
	th_check(a && strcmp(a->name, "tm_leaf") == 0, "before the exec: the first image (%s)", a ? a->name : "-");
	th_check(b && strncmp(b->name, "[after+0x", 9) == 0, "after the exec: the new image at the same address (%s)",
	         b ? b->name : "-");
	th_check(c && strcmp(c->name, "tm_leaf") == 0, "a child forked before the exec runs the parent's old image (%s)",
	         c ? c->name : "-");
out:
	ana_model_free(m);
}

/* ---- DWARF: unwind a register + stack copy captured in a three-deep chain here ---- */

static uint64_t cap_regs[24];
static uint8_t cap_stack[16384];
static uint32_t cap_stack_len;

/* Copies the live stack, ASan's redzones included: not instrumented, and no memcpy (whose
 * interceptor would check it anyway). */
__attribute__((noinline, no_sanitize_address)) void tm_capture(void);
__attribute__((noinline, no_sanitize_address)) void tm_capture(void)
{
	uint64_t rsp, rbp, rip, rbx, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t"
	                 "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"
	                 : "=r"(rip), "=m"(rsp), "=m"(rbp), "=m"(rbx), "=m"(r12), "=m"(r13), "=m"(r14), "=m"(r15));
	/* perf order for mask bits BX(1) BP(6) SP(7) IP(8) R12..R15(20..23) */
	cap_regs[0] = rbx;
	cap_regs[1] = rbp;
	cap_regs[2] = rsp;
	cap_regs[3] = rip;
	cap_regs[4] = r12;
	cap_regs[5] = r13;
	cap_regs[6] = r14;
	cap_regs[7] = r15;
	cap_stack_len = sizeof(cap_stack);
	if (stack_end - rsp < cap_stack_len)
		cap_stack_len = (uint32_t)(stack_end - rsp);
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)rsp;
	for (uint32_t i = 0; i < cap_stack_len; i++)
		cap_stack[i] = src[i];
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void tm_unw2(void);
__attribute__((noinline)) void tm_unw2(void) { tm_capture(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void tm_unw1(void);
__attribute__((noinline)) void tm_unw1(void) { tm_unw2(); __asm__ volatile("" ::: "memory"); }

static void test_dwarf(void)
{
	char path[4200], err[512];
	tm_unw1();
	snprintf(path, sizeof(path), "%s/dwarf.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	if (!w)
		return;
	put_mapping(w, 200, exe);
	/* libc's mapping too, so the unwinder can go on through main's caller */
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample.time_ns = T0 + 1;
	r.u.sample.pid = 200;
	r.u.sample.tid = 200;
	r.u.sample.flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
	r.u.sample.period_ns = 1000000;
	r.u.sample.regs_abi = 2;
	r.u.sample.regs_mask = (1ull << 1) | (1ull << 6) | (1ull << 7) | (1ull << 8) | (0xfull << 20);
	r.u.sample.n_regs = 8;
	r.u.sample.regs = cap_regs;
	r.u.sample.stack_len = cap_stack_len;
	r.u.sample.stack = cap_stack;
	put(w, &r);
	gtt_writer_close(w);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "dwarf trace loads (%s)", m ? "ok" : err);
	if (!m || m->samples.n != 1)
		goto out;
	const ana_stack *st = &m->stacks.v[m->samples.v[0].stack_id];
	char got[1024] = "";
	for (uint32_t i = 0; i < st->n; i++) {
		strncat(got, m->frames.v[st->frames[i]].name, sizeof(got) - strlen(got) - 2);
		strncat(got, ";", sizeof(got) - strlen(got) - 1);
	}
	th_check(strstr(got, "test_dwarf;tm_unw1;tm_unw2;tm_capture;") != NULL,
	         "stack copy unwound offline through every frame (%s)", got);
	th_check(strstr(got, "main;") != NULL, "unwinding reaches main");
out:
	ana_model_free(m);
}

/* ---- broken input ---- */

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(p, 1, n, f);
		fclose(f);
	}
}

static void test_broken(void)
{
	char path[4200], cut[4200], err[512];
	snprintf(path, sizeof(path), "%s/basic.gtt", dir);
	snprintf(cut, sizeof(cut), "%s/cut.gtt", dir);
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	ana_opts o;
	ana_opts_init(&o);
	/* chunk boundaries, where a cut is not a truncation: from the chunk headers themselves (the
	 * reader's offsets are the starts of the chunks it returns records from, which leaves out
	 * the start of a 1.1 trace's index chunk: a cut there, after the last record, failed the
	 * check whenever the 97-byte steps below landed on it) */
	static uint8_t boundary[1 << 20];
	for (size_t at = GTT_HEADER_LEN; at + GTT_CHUNK_HEADER_LEN <= n;) {
		boundary[at] = 1;
		const uint8_t *h = buf + at + 4;
		at += GTT_CHUNK_HEADER_LEN + ((size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24);
	}
	boundary[n] = 1;
	/* truncated at many offsets: loads, flagged, never crashes, samples only grow */
	int ok = 1, flagged = 1;
	size_t last = 0;
	for (size_t at = 16; at < n; at += 97) {
		write_bytes(cut, buf, at);
		ana_model *m = ana_model_load(cut, &o, err, sizeof(err));
		if (!m) {
			ok = 0;
			printf("  cut at %zu: %s\n", at, err);
			continue;
		}
		if (m->truncated != !boundary[at])
			flagged = 0;
		if (m->samples.n < last)
			ok = 0;
		last = m->samples.n;
		ana_model_free(m);
	}
	th_check(ok, "a trace cut at any offset loads up to the cut");
	th_check(flagged, "cuts inside a chunk are flagged truncated, cuts between chunks are not");
	write_bytes(cut, buf, n / 2);
	ana_model *m = ana_model_load(cut, &o, err, sizeof(err));
	size_t nw = 0;
	if (m)
		ana_model_warnings(m, &nw);
	th_check(m && nw >= 1, "truncation gives a warning");
	ana_model_free(m);

	/* a flipped byte in the middle: corrupt chunk, refused with the offset */
	buf[n / 2] ^= 0x40;
	write_bytes(cut, buf, n);
	m = ana_model_load(cut, &o, err, sizeof(err));
	th_check(!m && strstr(err, "corrupt"), "corrupt chunk refused (%s)", m ? "loaded" : err);
	ana_model_free(m);
	o.skip_corrupt = 1;
	m = ana_model_load(cut, &o, err, sizeof(err));
	th_check(m && m->n_corrupt == 1, "--skip-corrupt reads around it");
	ana_model_free(m);
	o.skip_corrupt = 0;

	write_bytes(cut, "", 0);
	m = ana_model_load(cut, &o, err, sizeof(err));
	th_check(!m && strstr(err, "empty"), "empty file refused (%s)", err);
	ana_model_free(m);
	write_bytes(cut, "hello, this is not a trace at all\n", 34);
	m = ana_model_load(cut, &o, err, sizeof(err));
	th_check(!m && strstr(err, "not a groundtruth trace"), "foreign file refused (%s)", err);
	ana_model_free(m);
	m = ana_model_load("/nonexistent/trace.gtt", &o, err, sizeof(err));
	th_check(!m && strstr(err, "No such file"), "missing file refused (%s)", err);
	ana_model_free(m);
}

/* Kernel frames are named from /proc/kallsyms only for a trace of this very boot. */
static void test_kernel_symbols(void)
{
	char boot[64] = "", line[512], name[256] = "", path[4200], err[512];
	unsigned long long kaddr = 0;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = 0;
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = 0;
	f = fopen("/proc/kallsyms", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char type;
		if (sscanf(line, "%llx %c %255s", &kaddr, &type, name) == 3 && kaddr && (type == 'T' || type == 't') &&
		    !strchr(line, '['))
			break;
		kaddr = 0;
	}
	if (f)
		fclose(f);
	if (!boot[0] || !kaddr) {
		printf("SKIP: no boot id or kernel addresses hidden (kptr_restrict)\n");
		return;
	}
	for (int same = 0; same < 2; same++) {
		snprintf(path, sizeof(path), "%s/kernel%d.gtt", dir, same);
		int e;
		gtt_writer *w = gtt_writer_open(path, &e);
		if (!w)
			return;
		put_meta(w, "boot_id", same ? boot : "00000000-0000-0000-0000-000000000000");
		uint64_t ips[2] = { kaddr + 1, kaddr + 2 };
		put_sample(w, T0, 300, 300, ips, 2, 0);
		gtt_writer_close(w);
		ana_opts o;
		ana_opts_init(&o);
		ana_model *m = ana_model_load(path, &o, err, sizeof(err));
		const ana_frame *leaf = m && m->samples.n ? leaf_frame(m, &m->samples.v[0]) : NULL;
		if (same)
			th_check(leaf && strcmp(leaf->name, name) == 0 && leaf->kind == ANA_FRAME_KERNEL,
			         "same boot: kernel frame named from kallsyms (%s, want %s)", leaf ? leaf->name : "-", name);
		else
			th_check(leaf && strcmp(leaf->name, "[kernel]") == 0 && m->stacks.v[m->samples.v[0].stack_id].n == 1,
			         "other boot: kernel frames collapse into one [kernel] (%s)", leaf ? leaf->name : "-");
		ana_model_free(m);
	}
}

static void test_demangle(void)
{
	char *d = ana_demangle("_ZN2ns5Klass6methodEiPKc");
	th_check(d && strcmp(d, "ns::Klass::method(int, char const*)") == 0, "C++ demangling (%s)", d ? d : "NULL");
	free(d);
	th_check(ana_demangle("plain_c") == NULL, "C names are left alone");
	th_check(ana_demangle("_Zgarbage!") == NULL, "undemanglable names are left alone");
}

/* A launched program's context switches begin at its exec: a first switch 'out' closes a time
 * slice that began there, not at the recording's start (the health check's intended samples
 * were too many by the time the launcher took to exec, 17 ms on a loaded machine). */
static void test_oncpu_from_exec(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/exec.gtt", dir);
	int err;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w) {
		printf("FAIL: cannot write %s\n", path);
		return;
	}
	const uint64_t MS = 1000000;
	put_meta(w, "command", "./prog");
	gtt_record r = { .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = T0 + 10 * MS, .pid = 200, .event = GTT_PROC_START, .comm = "prog" };
	put(w, &r);
	r.u.process = (gtt_process){ .time_ns = T0 + 100 * MS, .pid = 200, .event = GTT_PROC_EXEC, .comm = "./prog" };
	put(w, &r);
	const uint64_t sw_t[3] = { T0 + 101 * MS, T0 + 200 * MS, T0 + 300 * MS };
	const uint32_t sw_k[3] = { GTT_SWITCH_OUT, GTT_SWITCH_IN, GTT_SWITCH_OUT };
	for (int i = 0; i < 3; i++) {
		gtt_record s = { .tag = GTT_REC_SWITCH };
		s.u.sw = (gtt_switch){ .time_ns = sw_t[i], .pid = 200, .tid = 200, .kind = sw_k[i] };
		put(w, &s);
	}
	uint64_t ip[1] = { 0x10 };
	put_sample(w, T0 + 250 * MS, 200, 200, ip, 0, 1);
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end = (gtt_end){ .time_ns = T0 + SEC, .reason = GTT_END_TARGET_EXIT, .n_samples = 1 };
	put(w, &e);
	gtt_writer_close(w);
	char errbuf[256];
	ana_opts o = { 0 };
	ana_model *m = ana_model_load(path, &o, errbuf, sizeof(errbuf));
	const ana_thread *t = m ? ana_thread_find(m, 200, 200) : NULL;
	th_check(t && t->oncpu_known && t->oncpu_ns == 101 * MS,
	         "on-CPU time counts from the exec (1 + 100 ms), not the recording's start (got %.3f ms)",
	         t ? (double)t->oncpu_ns / MS : -1.0);
	ana_model_free(m);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp\n");
		return 1;
	}
	if (find_self_mapping((uintptr_t)&tm_leaf) < 0 || !bid_len) {
		printf("SKIP: cannot find this test's own mapping or build-id\n");
		return 0;
	}
	test_basic();
	test_archive();
	test_mismatch();
	test_exec();
	test_stripped();
	test_symbol_sources();
	test_inline();
	test_dwarf();
	test_broken();
	test_kernel_symbols();
	test_demangle();
	test_oncpu_from_exec();
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", dir);
	return th_report();
}
