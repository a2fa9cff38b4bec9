/* test_rec_trace.c — recorder unit tests (tick schedule, ELF trimming) and, with arguments, a
 * trace inspector for the tests/cli/record_*.sh scripts:
 *   test_rec_trace                         run the unit tests
 *   test_rec_trace summary TRACE [BINARY FUNC,FUNC,...]
 * prints one fact per line ("samples 123", "thread 1 2 name 45", "lag 1 START END MAX", ...);
 * with BINARY, also "func NAME INCLUSIVE LEAF" per function: samples whose user frames (fp) or
 * stack words (dwarf) hit FUNC in BINARY, and those whose leaf (or IP) is in it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "elf.h"
#include "gtt.h"
#include "testhelp.h"
#include "ticker.h"

/* ---- summary mode ---- */

typedef struct thr {
	uint32_t pid, tid;
	char name[64];
	uint64_t samples, sample_ns;
	uint64_t first_ns, in_ns, oncpu_ns; /* on-CPU time from switch records */
	int in;
} thr;
typedef struct fn { char name[64]; uint64_t lo, hi; uint64_t incl, leaf; } fn;
typedef struct bmap { uint32_t pid; uint64_t start, end, pgoff; } bmap;

static thr *thread_get(thr **v, size_t *n, uint32_t pid, uint32_t tid)
{
	size_t i;
	for (i = 0; i < *n; i++)
		if ((*v)[i].tid == tid && (*v)[i].pid == pid)
			return &(*v)[i];
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	memset(&(*v)[*n], 0, sizeof(thr));
	(*v)[*n].pid = pid;
	(*v)[*n].tid = tid;
	return &(*v)[(*n)++];
}

static void hex(const uint8_t *b, uint32_t n, char *out)
{
	uint32_t i;
	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
	if (n == 0)
		strcpy(out, "-");
}

/* Which function (index) of fns holds runtime address ip of pid, or -1. */
static int which_fn(uint64_t ip, uint32_t pid, const bmap *maps, size_t n_maps, const fn *fns, size_t n_fns,
                    uint64_t bias)
{
	size_t i, k;
	for (i = 0; i < n_maps; i++) {
		if (maps[i].pid != pid || ip < maps[i].start || ip >= maps[i].end)
			continue;
		uint64_t vaddr = ip - maps[i].start + maps[i].pgoff + bias;
		for (k = 0; k < n_fns; k++)
			if (vaddr >= fns[k].lo && vaddr < fns[k].hi)
				return (int)k;
	}
	return -1;
}

/* The functions of binary named in funcs (comma list) with their address ranges. 0, or -1 said. */
static int load_fns(const char *binary, const char *funcs, fn *fns, size_t *n_fns, uint64_t *bias, char *binpath,
                    size_t binlen)
{
	rec_elf *e = rec_elf_open(binary);
	char *list = strdup(funcs), *save = NULL, *tok;
	if (!e) {
		printf("error cannot open %s\n", binary);
		return -1;
	}
	if (!realpath(binary, binpath))
		snprintf(binpath, binlen, "%s", binary);
	*bias = rec_elf_first_load_vaddr(e);
	for (tok = strtok_r(list, ",", &save); tok && (*n_fns) < 16; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v, sz;
		if (rec_elf_symbol(e, tok, &v, &sz) == 0) {
			snprintf(fns[(*n_fns)].name, sizeof(fns[(*n_fns)].name), "%s", tok);
			fns[(*n_fns)].lo = v;
			fns[(*n_fns)].hi = v + sz;
			fns[(*n_fns)].incl = fns[(*n_fns)].leaf = 0;
			(*n_fns)++;
		} else {
			printf("error no symbol %s in %s\n", tok, binary);
		}
	}
	free(list);
	rec_elf_close(e);
	return 0;
}

/* Which of fns a sample is in (anywhere on its stack) and at its leaf. */
static void count_fns(const gtt_sample *s, const bmap *maps, size_t n_maps, fn *fns, size_t n_fns, uint64_t bias)
{
	int seen[16] = { 0 }, leaf = -1;
	uint32_t k;
	if (s->n_user) {
		leaf = which_fn(s->ips[s->n_kernel], s->pid, maps, n_maps, fns, n_fns, bias);
		for (k = 0; k < s->n_user; k++) {
			int f = which_fn(s->ips[s->n_kernel + k], s->pid, maps, n_maps, fns, n_fns, bias);
			if (f >= 0)
				seen[f] = 1;
		}
	}
	if (s->flags & GTT_SAMPLE_REGS && s->n_regs > 8 && (s->regs_mask >> 8 & 1)) {
		uint32_t ipi = (uint32_t)__builtin_popcountll(s->regs_mask & 0xffull);
		leaf = which_fn(s->regs[ipi], s->pid, maps, n_maps, fns, n_fns, bias);
		if (leaf >= 0)
			seen[leaf] = 1;
	}
	if (s->flags & GTT_SAMPLE_STACK) {
		for (k = 0; k + 8 <= s->stack_len; k += 8) {
			uint64_t w;
			memcpy(&w, s->stack + k, 8);
			int f = which_fn(w, s->pid, maps, n_maps, fns, n_fns, bias);
			if (f >= 0)
				seen[f] = 1;
		}
	}
	for (k = 0; k < n_fns; k++)
		fns[k].incl += seen[k];
	if (leaf >= 0)
		fns[leaf].leaf++;
}

static void print_health(const gtt_health *h, uint64_t *lost)
{
	if (h->kind == GTT_HEALTH_LOST)
		*lost += h->count;
	if (h->kind == GTT_HEALTH_LAG_WINDOW)
		printf("lag %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", h->source, h->time_ns,
		       h->end_ns, h->value[0]);
	else if (h->kind == GTT_HEALTH_CONFIG)
		printf("config %u ring_bytes %" PRIu64 " period_ns %" PRIu64 " stack_bytes %" PRIu64 "\n",
		       h->source, h->value[0], h->value[1], h->value[2]);
	else if (h->kind == GTT_HEALTH_LOST)
		printf("lost_window %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", h->time_ns,
		       h->end_ns, h->count);
	else
		printf("health %u %u %s\n", h->source, h->kind, h->text);
}

/* A context switch into a thread's on-CPU time. */
static void take_switch(thr *t, const gtt_switch *sw)
{
	if (sw->kind == GTT_SWITCH_IN) {
		t->in = 1;
		t->in_ns = sw->time_ns;
	} else {
		/* an OUT without an IN: it was running when sampling began */
		uint64_t from = t->in ? t->in_ns : t->first_ns ? t->first_ns : sw->time_ns;
		t->oncpu_ns += sw->time_ns - from;
		t->in = 0;
	}
	if (!t->first_ns)
		t->first_ns = sw->time_ns;
}

/* One thread's line; its on-CPU and sampled time into the totals. */
static void print_thread(thr *t, uint64_t last_ns, uint64_t *oncpu_ns, uint64_t *sampled_ns)
{
	if (t->in && last_ns > t->in_ns)
		t->oncpu_ns += last_ns - t->in_ns; /* still running at the end */
	*oncpu_ns += t->oncpu_ns;
	*sampled_ns += t->sample_ns;
	printf("thread %u %u %s %" PRIu64 " oncpu_ms %.1f\n", t->pid, t->tid, t->name[0] ? t->name : "-",
	       t->samples, (double)t->oncpu_ns / 1e6);
}

static int summary(const char *path, const char *binary, const char *funcs)
{
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open(path, &err);
	gtt_record rec;
	thr *threads = NULL;
	size_t n_threads = 0, i, n_fns = 0, n_maps = 0;
	fn fns[16];
	bmap *maps = NULL;
	uint64_t n_samples = 0, n_regs = 0, n_stack = 0, stack_bytes = 0, sample_bytes = 0, n_user = 0,
	         n_kernel_frames = 0, n_switch = 0, n_cpu = 0, lost = 0, n_map = 0, n_map_bid = 0, n_records = 0,
	         archive_bytes = 0, n_rename = 0, n_kernel_noregs = 0;
	uint64_t bias = 0, last_ns = 0, oncpu_ns = 0, sampled_ns = 0;
	char binpath[4096] = "";

	if (!r) {
		printf("error %s\n", gtt_strerror(err));
		return 2;
	}
	if (binary && load_fns(binary, funcs, fns, &n_fns, &bias, binpath, sizeof(binpath)) < 0)
		return 2;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			printf("bad_chunk %s at %" PRIu64 "\n", gtt_strerror(rc), gtt_reader_offset(r));
			continue;
		}
		n_records++;
		switch (rec.tag) {
		case GTT_REC_META:
			printf("meta %s %s\n", rec.u.meta.key, rec.u.meta.value);
			break;
		case GTT_REC_PROCESS:
			printf("process %u %u %u %d %s\n", rec.u.process.pid, rec.u.process.ppid, rec.u.process.event,
			       rec.u.process.status, rec.u.process.comm);
			break;
		case GTT_REC_THREAD: {
			thr *t = thread_get(&threads, &n_threads, rec.u.thread.pid, rec.u.thread.tid);
			if (rec.u.thread.event != GTT_THREAD_EXIT && rec.u.thread.name[0])
				snprintf(t->name, sizeof(t->name), "%s", rec.u.thread.name);
			if (rec.u.thread.event == GTT_THREAD_NAME)
				n_rename++;
			break;
		}
		case GTT_REC_MAPPING: {
			char id[2 * GTT_BUILD_ID_MAX + 1];
			hex(rec.u.mapping.build_id, rec.u.mapping.build_id_len, id);
			n_map++;
			if (rec.u.mapping.build_id_len)
				n_map_bid++;
			printf("mapping %u %" PRIx64 " %" PRIx64 " %s %s\n", rec.u.mapping.pid, rec.u.mapping.start,
			       rec.u.mapping.end, id, rec.u.mapping.path);
			if (binpath[0] && strcmp(rec.u.mapping.path, binpath) == 0) {
				maps = realloc(maps, (n_maps + 1) * sizeof(*maps));
				maps[n_maps].pid = rec.u.mapping.pid;
				maps[n_maps].start = rec.u.mapping.start;
				maps[n_maps].end = rec.u.mapping.end;
				maps[n_maps].pgoff = rec.u.mapping.pgoff;
				n_maps++;
			}
			break;
		}
		case GTT_REC_SAMPLE: {
			const gtt_sample *s = &rec.u.sample;
			thr *t = thread_get(&threads, &n_threads, s->pid, s->tid);
			t->samples++;
			t->sample_ns += s->period_ns;
			if (!t->first_ns || s->time_ns - s->period_ns < t->first_ns)
				t->first_ns = s->time_ns - s->period_ns;
			if (s->time_ns > last_ns)
				last_ns = s->time_ns;
			n_samples++;
			sample_bytes += rec.len + GTT_CHUNK_HEADER_LEN;
			n_user += s->n_user;
			n_kernel_frames += s->n_kernel;
			if (s->flags & GTT_SAMPLE_REGS)
				n_regs++;
			else if (s->flags & GTT_SAMPLE_KERNEL)
				n_kernel_noregs++;
			if (s->flags & GTT_SAMPLE_STACK) {
				n_stack++;
				stack_bytes += s->stack_len;
			}
			if (n_fns)
				count_fns(s, maps, n_maps, fns, n_fns, bias);
			break;
		}
		case GTT_REC_SWITCH:
			take_switch(thread_get(&threads, &n_threads, rec.u.sw.pid, rec.u.sw.tid), &rec.u.sw);
			n_switch++;
			break;
		case GTT_REC_THREAD_CPU:
			n_cpu++;
			break;
		case GTT_REC_HEALTH:
			print_health(&rec.u.health, &lost);
			break;
		case GTT_REC_TICKS:
			if (rec.u.ticks.flags & GTT_TICKS_WHOLE)
				printf("ticks_whole %u period %" PRIu64 " intended %" PRIu64 " done %" PRIu64 " p50 %" PRIu64
				       " p99 %" PRIu64 " max %" PRIu64 "\n", rec.u.ticks.source, rec.u.ticks.period_ns,
				       rec.u.ticks.intended, rec.u.ticks.done, rec.u.ticks.late_p50_ns, rec.u.ticks.late_p99_ns,
				       rec.u.ticks.late_max_ns);
			break;
		case GTT_REC_ARCHIVE:
			archive_bytes += rec.u.archive.len;
			if (rec.u.archive.offset == 0)
				printf("archive %s %" PRIu64 "\n", rec.u.archive.path, rec.u.archive.total_bytes);
			break;
		case GTT_REC_END:
			printf("end %u %d %" PRIu64 "\n", rec.u.end.reason, rec.u.end.status, rec.u.end.n_samples);
			break;
		default:
			break;
		}
	}
	for (i = 0; i < n_threads; i++)
		print_thread(&threads[i], last_ns, &oncpu_ns, &sampled_ns);
	printf("oncpu_ms %.1f\n", (double)oncpu_ns / 1e6);
	printf("received_pct %.1f\n", oncpu_ns ? 100.0 * (double)sampled_ns / (double)oncpu_ns : 0.0);
	for (i = 0; i < n_fns; i++)
		printf("func %s %" PRIu64 " %" PRIu64 "\n", fns[i].name, fns[i].incl, fns[i].leaf);
	printf("records %" PRIu64 "\n", n_records);
	printf("truncated %d\n", gtt_reader_truncated(r));
	printf("samples %" PRIu64 "\n", n_samples);
	printf("samples_regs %" PRIu64 "\n", n_regs);
	printf("samples_stack %" PRIu64 "\n", n_stack);
	printf("samples_kernel_noregs %" PRIu64 "\n", n_kernel_noregs);
	printf("stack_bytes_avg %" PRIu64 "\n", n_stack ? stack_bytes / n_stack : 0);
	printf("sample_bytes_avg %" PRIu64 "\n", n_samples ? sample_bytes / n_samples : 0);
	printf("user_frames_avg %.2f\n", n_samples ? (double)n_user / (double)n_samples : 0.0);
	printf("kernel_frames %" PRIu64 "\n", n_kernel_frames);
	printf("switches %" PRIu64 "\n", n_switch);
	printf("thread_cpu %" PRIu64 "\n", n_cpu);
	printf("renames %" PRIu64 "\n", n_rename);
	printf("lost %" PRIu64 "\n", lost);
	printf("mappings %" PRIu64 "\n", n_map);
	printf("mappings_build_id %" PRIu64 "\n", n_map_bid);
	printf("archive_bytes %" PRIu64 "\n", archive_bytes);
	printf("file_bytes %" PRIu64 "\n", gtt_reader_size(r));
	free(threads);
	free(maps);
	gtt_reader_close(r);
	return 0;
}

/* ---- unit tests ---- */

/* Drive a ticker with made-up times and read back what it wrote. */
static void test_ticker(void)
{
	char path[] = "/tmp/gt-ticker-XXXXXX";
	int fd = mkstemp(path), err = 0, rc;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	const uint64_t ms = 1000000, t0 = 1000 * ms;
	rec_ticker *t;
	uint64_t k, n_ticks = 0, n_lag = 0, lag_start = 0, lag_end = 0, lag_max = 0, whole_done = 0, whole_int = 0;
	uint64_t whole_p50 = 0, whole_p99 = 0, whole_max = 0, sum_intended = 0, sum_done = 0;
	gtt_reader *r;
	gtt_record rec;

	th_check(w != NULL, "ticker: writer on a temp file");
	if (!w)
		return;
	t = rec_ticker_create(GTT_SRC_PROCSTAT, 10 * ms, t0, w);
	/* 1 s on time (1 ms late each), then a 500 ms stall, then on time again until 3 s */
	for (k = 0; k < 100; k++)
		rec_ticker_tick(t, t0 + k * 10 * ms + 1 * ms);
	rec_ticker_tick(t, t0 + 1500 * ms);   /* tick 100 was due at 1000 ms: 500 ms late */
	for (k = 151; k < 300; k++)
		rec_ticker_tick(t, t0 + k * 10 * ms + 2 * ms);
	th_check(rec_ticker_done(t) == 250, "ticker: 250 ticks taken (%" PRIu64 ")", rec_ticker_done(t));
	th_check(rec_ticker_late_max_ns(t) == 500 * ms, "ticker: max lateness is the stall");
	rec_ticker_finish(t, t0 + 3000 * ms);
	rec_ticker_destroy(t);
	gtt_writer_close(w);

	r = gtt_reader_open(path, &err);
	th_check(r != NULL, "ticker: trace reads back");
	while (r && (rc = gtt_reader_next(r, &rec)) > 0) {
		if (rec.tag == GTT_REC_TICKS && (rec.u.ticks.flags & GTT_TICKS_WHOLE)) {
			whole_done = rec.u.ticks.done;
			whole_int = rec.u.ticks.intended;
			whole_p50 = rec.u.ticks.late_p50_ns;
			whole_p99 = rec.u.ticks.late_p99_ns;
			whole_max = rec.u.ticks.late_max_ns;
		} else if (rec.tag == GTT_REC_TICKS) {
			n_ticks++;
			sum_intended += rec.u.ticks.intended;
			sum_done += rec.u.ticks.done;
		} else if (rec.tag == GTT_REC_HEALTH && rec.u.health.kind == GTT_HEALTH_LAG_WINDOW) {
			n_lag++;
			lag_start = rec.u.health.time_ns;
			lag_end = rec.u.health.end_ns;
			lag_max = rec.u.health.value[0];
		}
	}
	gtt_reader_close(r);
	unlink(path);
	th_check(n_ticks == 3, "ticker: one TICKS record per second (%" PRIu64 ")", n_ticks);
	th_check(sum_intended == 300 && sum_done == 250, "ticker: intervals add up to 300 due, 250 done (%" PRIu64
	         ", %" PRIu64 ")", sum_intended, sum_done);
	th_check(whole_int == 300 && whole_done == 250, "ticker: whole summary 300 due, 250 done");
	th_check(whole_p50 == 2 * ms, "ticker: exact p50 = 2 ms (%" PRIu64 ")", whole_p50);
	th_check(whole_p99 == 2 * ms && whole_max == 500 * ms, "ticker: p99 2 ms, max 500 ms (%" PRIu64 ", %" PRIu64 ")",
	         whole_p99, whole_max);
	th_check(n_lag == 1 && lag_start == t0 + 1000 * ms && lag_end == t0 + 1500 * ms && lag_max == 500 * ms,
	         "ticker: one lag window [1.0 s, 1.5 s) with max 500 ms");
}

/* The type of the section called name in an ELF64 image and whether its bytes equal those of
 * the same section in ref (-1 when there is no such section). */
static int section_type(const uint8_t *img, size_t len, const char *name, const uint8_t *ref, size_t ref_len,
                        int *same_bytes)
{
	Elf64_Ehdr eh;
	if (len < sizeof(eh))
		return -1;
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_shoff > len || (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum)
		return -1;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh.e_shoff);
	const char *strs = (const char *)img + sh[eh.e_shstrndx].sh_offset;
	for (size_t i = 1; i < eh.e_shnum; i++) {
		if (strcmp(strs + sh[i].sh_name, name) != 0)
			continue;
		*same_bytes = 0;
		if (ref && sh[i].sh_type != SHT_NOBITS) {
			Elf64_Ehdr rh;
			memcpy(&rh, ref, sizeof(rh));
			const Elf64_Shdr *rs = (const Elf64_Shdr *)(ref + rh.e_shoff);
			*same_bytes = rs[i].sh_size == sh[i].sh_size && rs[i].sh_offset + rs[i].sh_size <= ref_len &&
			              memcmp(ref + rs[i].sh_offset, img + sh[i].sh_offset, sh[i].sh_size) == 0;
		}
		return (int)sh[i].sh_type;
	}
	return -1;
}

static void test_trim(void)
{
	rec_elf *e = rec_elf_open("/proc/self/exe"), *t = NULL;
	size_t len = 0, tlen = 0;
	const uint8_t *data = rec_elf_data(e, &len);
	uint8_t *trimmed = data ? rec_archive_trim_elf(data, len, &tlen) : NULL;
	char path[] = "/tmp/gt-trim-XXXXXX";
	int fd = mkstemp(path);
	uint8_t id1[64], id2[64];
	uint64_t v1 = 0, v2 = 0, s1 = 0, s2 = 0;

	th_check(trimmed != NULL && tlen > 0 && tlen < len, "trim: our executable trims (%zu -> %zu bytes)", len, tlen);
	if (trimmed && fd >= 0 && write(fd, trimmed, tlen) == (ssize_t)tlen)
		t = rec_elf_open(path);
	th_check(t != NULL, "trim: the trimmed copy is an ELF file");
	th_check(t && rec_elf_build_id(e, id1, sizeof(id1)) == rec_elf_build_id(t, id2, sizeof(id2)) &&
	         memcmp(id1, id2, 20) == 0, "trim: build-id kept");
	th_check(t && rec_elf_symbol(e, "main", &v1, &s1) == 0 && rec_elf_symbol(t, "main", &v2, &s2) == 0 &&
	         v1 == v2 && s1 == s2, "trim: symbols kept");
	th_check(t && rec_elf_first_load_vaddr(e) == rec_elf_first_load_vaddr(t), "trim: program headers kept");
	if (trimmed) {
		int same = 0;
		th_check(section_type(trimmed, tlen, ".eh_frame", data, len, &same) == SHT_PROGBITS && same,
		         "trim: .eh_frame kept byte for byte");
		th_check(section_type(trimmed, tlen, ".symtab", data, len, &same) == SHT_SYMTAB && same &&
		         section_type(trimmed, tlen, ".strtab", data, len, &same) == SHT_STRTAB && same,
		         "trim: .symtab and its strings kept");
		th_check(section_type(trimmed, tlen, ".text", NULL, 0, &same) == SHT_NOBITS, "trim: code left out");
		th_check(section_type(trimmed, tlen, ".debug_info", NULL, 0, &same) == SHT_NOBITS &&
		         section_type(trimmed, tlen, ".debug_line", NULL, 0, &same) == SHT_NOBITS,
		         "trim: .debug_info and .debug_line left out (this test is built with -g)");
		th_check(section_type(trimmed, tlen, ".gnu.hash", NULL, 0, &same) != SHT_GNU_HASH,
		         "trim: the dynamic-linking hash table left out");
		/* within a DWARF budget, the DWARF of inlined frames and lines comes along, whole */
		size_t dlen = 0, slen = 0;
		uint64_t dwarf = 0, dwarf2 = 0;
		uint8_t *withd = rec_archive_trim_elf_dwarf(data, len, 1ull << 40, &dlen, &dwarf);
		uint8_t *small = rec_archive_trim_elf_dwarf(data, len, dwarf ? dwarf - 1 : 0, &slen, &dwarf2);
		th_check(withd && dwarf > 0 && section_type(withd, dlen, ".debug_info", data, len, &same) == SHT_PROGBITS &&
		         same && section_type(withd, dlen, ".debug_line", data, len, &same) == SHT_PROGBITS && same,
		         "trim: within the budget .debug_info and .debug_line are kept byte for byte (%llu bytes of DWARF)",
		         (unsigned long long)dwarf);
		th_check(small && dwarf2 == dwarf && slen == tlen && section_type(small, slen, ".debug_abbrev", NULL, 0, &same) == SHT_NOBITS,
		         "trim: one byte over the budget, all of it is left out");
		free(withd);
		free(small);
	}
	th_check(rec_archive_trim_elf((const uint8_t *)"not an elf file at all, definitely not", 39, &tlen) == NULL,
	         "trim: a non-ELF gives NULL");
	/* a prefix of the file that lacks part of the section header table (at the end of the
	 * file, as every linker writes it) is refused; one that has it trims to an ELF image
	 * whose header and section header table lie inside what was returned */
	if (data && len >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr eh;
		size_t cut, n = 0, n_null = 0, wrong = 0, shdr_end;
		memcpy(&eh, data, sizeof(eh));
		shdr_end = (size_t)eh.e_shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
		for (cut = 0; cut < len; cut += len / 300 + 1) {
			size_t l2 = 0;
			uint8_t *x = rec_archive_trim_elf(data, cut, &l2);
			Elf64_Ehdr oh;
			if (!x) {
				n_null++;
				wrong += cut >= shdr_end; /* had everything it needs: should trim */
			} else if (cut < shdr_end || l2 < sizeof(oh)) {
				wrong++;
			} else {
				memcpy(&oh, x, sizeof(oh));
				wrong += memcmp(oh.e_ident, ELFMAG, SELFMAG) != 0 ||
				         oh.e_shoff + (uint64_t)oh.e_shnum * sizeof(Elf64_Shdr) > l2;
			}
			free(x);
			n++;
		}
		th_check(n >= 300 && shdr_end == len && n_null == n && wrong == 0,
		         "trim: %zu truncated inputs (section headers end the file: %s), %zu refused, %zu wrong",
		         n, shdr_end == len ? "yes" : "no", n_null, wrong);
		/* the whole file, and the file with bytes after it, trim */
		{
			uint8_t *big = malloc(len + 64), *x;
			size_t l2 = 0;
			if (big) {
				memcpy(big, data, len);
				memset(big + len, 0xa5, 64);
			}
			x = big ? rec_archive_trim_elf(big, len + 64, &l2) : NULL;
			th_check(x && l2 == tlen && memcmp(x, trimmed, tlen) == 0,
			         "trim: trailing bytes after the file change nothing (%zu bytes)", l2);
			free(x);
			free(big);
		}
	}
	free(trimmed);
	rec_elf_close(t);
	rec_elf_close(e);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

static int has_text(const char *s, const char *word)
{
	return s && strstr(s, word) != NULL;
}

/* Where a word (and a pid) shows up in a trace, for the CLI tests' "appears nowhere" checks:
 * "stack N" samples whose stack copy holds the word, "text N" records with a string field
 * holding it, "pid N" records about the pid (as process, thread, sample, switch, mapping,
 * thread stats, Python stack or GIL holder). */
static int find(const char *path, const char *word, long pid)
{
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open(path, &err);
	gtt_record rec;
	uint64_t n_stack = 0, n_text = 0, n_pid = 0;
	uint32_t p = pid > 0 ? (uint32_t)pid : UINT32_MAX;
	size_t wl = strlen(word);

	if (!r) {
		printf("error %s\n", gtt_strerror(err));
		return 2;
	}
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0)
			continue;
		switch (rec.tag) {
		case GTT_REC_SAMPLE:
			if (wl && rec.u.sample.stack && rec.u.sample.stack_len >= wl &&
			    memmem(rec.u.sample.stack, rec.u.sample.stack_len, word, wl))
				n_stack++;
			n_pid += rec.u.sample.pid == p || rec.u.sample.tid == p;
			break;
		case GTT_REC_META:
			n_text += has_text(rec.u.meta.value, word);
			break;
		case GTT_REC_PROCESS:
			n_text += has_text(rec.u.process.comm, word);
			n_pid += rec.u.process.pid == p;
			break;
		case GTT_REC_THREAD:
			n_text += has_text(rec.u.thread.name, word);
			n_pid += rec.u.thread.pid == p || rec.u.thread.tid == p;
			break;
		case GTT_REC_MAPPING:
			n_text += has_text(rec.u.mapping.path, word);
			n_pid += rec.u.mapping.pid == p;
			break;
		case GTT_REC_SWITCH:
			n_pid += rec.u.sw.pid == p || rec.u.sw.tid == p;
			break;
		case GTT_REC_THREAD_CPU:
			n_pid += rec.u.thread_cpu.pid == p || rec.u.thread_cpu.tid == p;
			break;
		case GTT_REC_HEALTH:
			n_text += has_text(rec.u.health.text, word);
			n_pid += rec.u.health.pid == p || rec.u.health.tid == p;
			break;
		case GTT_REC_PY_STACK:
			n_pid += rec.u.py_stack.pid == p || rec.u.py_stack.tid == p;
			break;
		case GTT_REC_GIL:
			n_pid += rec.u.gil.pid == p || rec.u.gil.holder_tid == p;
			break;
		case GTT_REC_PY_CODE:
			n_text += has_text(rec.u.py_code.name, word) || has_text(rec.u.py_code.filename, word);
			break;
		case GTT_REC_ARCHIVE:
			n_text += has_text(rec.u.archive.path, word);
			break;
		default:
			break;
		}
	}
	printf("stack %" PRIu64 "\ntext %" PRIu64 "\npid %" PRIu64 "\n", n_stack, n_text, n_pid);
	gtt_reader_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "summary") == 0)
		return summary(argv[2], argc >= 5 ? argv[3] : NULL, argc >= 5 ? argv[4] : NULL);
	if (argc >= 4 && strcmp(argv[1], "find") == 0)
		return find(argv[2], argv[3], argc >= 5 ? atol(argv[4]) : 0);
	if (argc > 1) {
		fprintf(stderr, "usage: test_rec_trace [summary TRACE [BINARY FUNC,...]] [find TRACE WORD [PID]]\n");
		return 64;
	}
	test_ticker();
	test_trim();
	return th_report();
}
