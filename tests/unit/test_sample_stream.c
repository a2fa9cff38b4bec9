/* test_sample_stream.c — samples, Python stack reads and GIL records streamed by the loader
 * (ana_opts.stream_samples: load_stream.c, the window merge of python.c, sample_sum.c) against the
 * same model made from every record kept: a trace written here (100 s of two Python threads and a
 * native one sampled at 100 Hz, their Python stacks read at 100 Hz with torn reads and reader
 * stalls, GIL hand-overs with and without the read before them, CUDA work delivered in 100 ms
 * batches) gives a byte-equal report both ways, whole and as a window, and so do the real Python
 * recordings in testdata/; the streamed model keeps none of those records, counts the same classes
 * per thread, and its reorder queue and merge window never hold more than a small part of them (a
 * count, not a time: memory bounded by the chunk index's horizon, not by the trace). A format 1.0
 * trace (no time ranges in its index) is bounded by the horizon pass 1 measured, and agrees too.
 * fold --weight wall and gpu-time (launch stacks of every third call, exact then 1-in-N) on their
 * own models, which keep no read or CUDA record, fold as the model that keeps them all. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff.h"
#include "export.h"
#include "fold.h"
#include "gpu_sum.h"
#include "report.h"
#include "sample_sum.h"
#include "testhelp.h"

#define PID 900
#define T0 7000000000ull
#define SECONDS 100
#define N_CODES 6

static gtt_writer *W;
static uint64_t n_samples, n_reads, n_gil;

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

static void put(const gtt_record *r)
{
	if (gtt_write(W, r) != 0) {
		printf("FAIL: write %s\n", gtt_tag_name(r->tag));
		exit(1);
	}
}

/* CUDA records wait for their batch, as CUPTI's buffers do */
static gtt_record batch[4096];
static size_t n_batch;

static void deliver(void)
{
	for (size_t i = 0; i < n_batch; i++)
		put(&batch[i]);
	n_batch = 0;
}

static void definitions(void)
{
	static const char *const funcs[N_CODES] = { "main", "train", "step", "forward", "<lambda>", "load" };
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "frequency_hz", .value = "100" };
	put(&r);
	r = (gtt_record){ .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = T0, .pid = PID, .event = GTT_PROC_EXEC, .comm = "python3" };
	put(&r);
	r = (gtt_record){ .tag = GTT_REC_MAPPING };
	r.u.mapping = (gtt_mapping){ .time_ns = T0, .pid = PID, .prot = 5, .start = 0x400000, .end = 0x800000,
	                             .path = "/usr/bin/python3.11" };
	put(&r);
	r.u.mapping = (gtt_mapping){ .time_ns = T0, .pid = PID, .prot = 5, .start = 0x7f0000000000ull,
	                             .end = 0x7f0000400000ull, .path = "/usr/lib/libtorch_cpu.so" };
	put(&r);
	for (uint32_t t = 0; t < 3; t++) {
		r = (gtt_record){ .tag = GTT_REC_THREAD };
		r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = PID + t, .event = GTT_THREAD_START,
		                           .name = t == 2 ? "native" : t ? "worker" : "main" };
		put(&r);
	}
	for (uint32_t i = 0; i < N_CODES; i++) {
		r = (gtt_record){ .tag = GTT_REC_PY_CODE };
		r.u.py_code = (gtt_py_code){ .pid = PID, .code_id = 0x1000 + i, .first_line = 10 * (int)i + 1,
		                             .name = funcs[i], .qualname = funcs[i], .filename = "/srv/train.py" };
		put(&r);
	}
	r = (gtt_record){ .tag = GTT_REC_STRING };
	r.u.string = (gtt_string){ .pid = PID, .id = 1, .text = "cudaLaunchKernel" };
	put(&r);
	r.u.string = (gtt_string){ .pid = PID, .id = 2, .text = "_Z4gemmPfi" };
	put(&r);
	r = (gtt_record){ .tag = GTT_REC_CUDA_DEVICE };
	r.u.cuda_device = (gtt_cuda_device){ .pid = PID, .device = 0, .cc_major = 9, .sm_count = 132,
	                                     .global_mem_bytes = 80ull << 30, .name = "TestGPU", .uuid = "GPU-0000" };
	put(&r);
}

/* A sample: the interpreter alone, or a library called from it (a few stack shapes). */
static void sample(uint32_t tid, uint64_t t)
{
	static const uint64_t ips[4][4] = { { 0x401000, 0x402000, 0x403000, 0 },
	                                    { 0x7f0000001000ull, 0x402000, 0x403000, 0 },
	                                    { 0x401100, 0x402100, 0x402000, 0x403000 },
	                                    { 0x7f0000002000ull, 0x7f0000001000ull, 0x403000, 0 } };
	uint32_t k = rnd(4);
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample = (gtt_sample){ .time_ns = t, .pid = PID, .tid = tid, .cpu = tid % 2, .period_ns = rnd(8) ? 10000000 : 0,
	                           .n_user = ips[k][3] ? 4 : 3, .ips = ips[k] };
	put(&r);
	n_samples++;
}

static void py_read(uint32_t tid, uint64_t t, int holds)
{
	gtt_py_frame fr[5];
	uint32_t n = 1 + rnd(5);
	for (uint32_t i = 0; i < n; i++)
		fr[i] = (gtt_py_frame){ .code_id = 0x1000 + (n - 1 - i + rnd(2)) % N_CODES, .line = 12 + (int)rnd(30),
		                        .flags = i + 1 == n || rnd(5) == 0 ? GTT_PYFRAME_ENTRY : 0 };
	uint32_t flags = (holds ? GTT_PYSTACK_HOLDS_GIL : 0) | (rnd(10) == 0 ? GTT_PYSTACK_TORN : 0) |
	                 (rnd(2) ? GTT_PYSTACK_GIL_READ : 0);
	gtt_record r = { .tag = GTT_REC_PY_STACK };
	r.u.py_stack = (gtt_py_stack){ .time_ns = t, .pid = PID, .tid = tid, .thread_id = 0x55d000 + tid,
	                               .flags = flags, .n_frames = n, .frames = fr };
	put(&r);
	n_reads++;
}

static int write_trace(const char *path, uint32_t minor)
{
	gtt_writer_opts wo;
	gtt_writer_opts_init(&wo);
	wo.minor = minor;
	wo.block_bytes = 16384;
	int err = 0, fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	W = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &wo, &err) : NULL;
	if (!W)
		return -1;
	rnd_state = 0x9e3779b97f4a7c15ull;
	n_samples = n_reads = n_gil = 0;
	definitions();
	uint32_t holder = PID, corr = 0;
	uint64_t switches = 1, last_poll = T0;
	int locked = 1;
	for (uint64_t ms = 0; ms < SECONDS * 1000ull; ms++) {
		uint64_t t = T0 + ms * 1000000ull;
		/* the reader stalls for 300 ms every 20 s; the GIL poll misses a stretch every 30 s */
		int stalled = ms % 20000 >= 19700, poll_off = ms % 30000 >= 29000;
		if (ms % 10 == 0) {
			for (uint32_t th = 0; th < 3; th++)
				sample(PID + th, t + rnd(10000000));
			for (uint32_t th = 0; th < 2 && !stalled; th++)
				py_read(PID + th, t + rnd(10000000), locked && holder == PID + th);
		}
		if (!poll_off && rnd(5) == 0) {
			/* a hand-over (or a release) seen by the poll, dated after the read before it */
			gtt_record r = { .tag = GTT_REC_GIL };
			uint64_t at = t + rnd(1000000);
			locked = rnd(6) != 0;
			holder = rnd(2) ? PID : PID + 1;
			switches += 1 + rnd(3);
			r.u.gil = (gtt_gil){ .time_ns = at, .pid = PID, .holder_tid = locked ? holder : 0, .locked = (uint32_t)locked,
			                     .switches = switches, .prev_ns = rnd(4) ? (last_poll > T0 ? last_poll : at - 500000) : 0 };
			put(&r);
			n_gil++;
			last_poll = at;
		}
		if (rnd(8) == 0 && n_batch + 2 <= sizeof(batch) / sizeof(batch[0])) {
			uint64_t s = t + rnd(1000000), ks = s + 20000 + rnd(3000000);
			gtt_record a = { .tag = GTT_REC_CUDA_API }, k = { .tag = GTT_REC_CUDA_KERNEL };
			a.u.api = (gtt_cuda_api){ .start_ns = s, .end_ns = s + 8000, .pid = PID, .tid = PID + rnd(2),
			                          .correlation = ++corr, .domain = GTT_API_RUNTIME, .name_id = 1 };
			k.u.kernel = (gtt_cuda_kernel){ .start_ns = ks, .end_ns = ks + 50000 + rnd(2000000), .pid = PID,
			                                .device = 0, .stream = 7, .correlation = corr, .name_id = 2 };
			batch[n_batch++] = a;
			batch[n_batch++] = k;
			if (corr % 3 == 0) {
				/* the agent's launch stack of every third call: the first ones exact, the
				 * rest 1-in-N samples (fold --weight gpu-time shares the group among them) */
				gtt_py_frame fr[3];
				for (uint32_t i = 0; i < 3; i++)
					fr[i] = (gtt_py_frame){ .code_id = 0x1000 + (corr / 3 + i) % N_CODES, .line = 20 + (int)i };
				gtt_record c = { .tag = GTT_REC_CUDA_CALLSTACK };
				c.u.callstack = (gtt_cuda_callstack){ .time_ns = s, .pid = PID, .tid = a.u.api.tid,
				                                      .correlation = corr, .domain = GTT_API_RUNTIME, .name_id = 1,
				                                      .flags = (corr < 300 ? GTT_CALLSTACK_FIRST : GTT_CALLSTACK_NTH) |
				                                               GTT_CALLSTACK_NATIVE_NONE,
				                                      .n_py = 1 + corr % 3, .py = fr };
				put(&c);
			}
		}
		if (ms % 100 == 99)
			deliver();
	}
	deliver();
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end = (gtt_end){ .time_ns = T0 + SECONDS * 1000000000ull + 20000000, .reason = GTT_END_DURATION,
	                     .n_samples = n_samples };
	put(&e);
	return gtt_writer_close(W);
}

static char *report_of(const ana_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	ana_report(m, NULL, f);
	for (size_t i = 0, n = 0; i < (ana_model_warnings(m, &n), n); i++)
		fprintf(f, "warning: %s\n", ana_model_warnings(m, &n)[i]);
	fclose(f);
	return buf;
}

/* ana_fold of m with these options, as text (NULL on failure). */
static char *fold_text(const ana_model *m, const ana_fold_opts *fo)
{
	ana_folded fd;
	char *buf = NULL;
	size_t len = 0;
	if (ana_fold(m, fo, &fd) < 0)
		return NULL;
	FILE *f = open_memstream(&buf, &len);
	if (f) {
		ana_fold_write(&fd, f);
		fclose(f);
	}
	ana_folded_free(&fd);
	return buf;
}

/* The speedscope export's collectors, one per GIL selection, fed by the loader (its sample_sink). */
static const int sscope_gil[] = { -1, 1 << ANA_CLASS_PY_GIL, 1 << ANA_CLASS_NATIVE_NOGIL | 1 << ANA_CLASS_WAIT_GIL,
	                          1 << ANA_CLASS_NONPY };
#define N_SSCOPE (sizeof(sscope_gil) / sizeof(sscope_gil[0]))
static ana_sscope *sscopes[N_SSCOPE];

static void sscope_sink(void *ctx, const ana_model *m, const ana_sample *smp)
{
	(void)ctx;
	for (size_t i = 0; i < N_SSCOPE; i++)
		ana_sscope_sample(sscopes[i], m, smp);
}

static void sscopes_free(void)
{
	for (size_t i = 0; i < N_SSCOPE; i++) {
		ana_sscope_free(sscopes[i]);
		sscopes[i] = NULL;
	}
}

/* The file c (NULL: m's own export with eo) writes, as a string (NULL on failure). */
static char *sscope_text(ana_sscope *c, const ana_model *m, const ana_export_opts *eo)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = c ? ana_sscope_write(c, m, f) : ana_export_speedscope(m, eo, f);
	fclose(f);
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The speedscope files of the streamed model (its collectors, set aside past 240 bytes in memory: 10 samples)
 * are the kept model's, byte for byte, for every selection. */
static void compare_sscope(const char *what, const ana_model *kept, const ana_model *fm)
{
	int same = 1, spilled = 0;
	size_t len = 0;
	for (size_t i = 0; i < N_SSCOPE; i++) {
		ana_export_opts eo;
		ana_export_opts_init(&eo);
		eo.gil = sscope_gil[i];
		char *a = sscope_text(NULL, kept, &eo), *b = sscope_text(sscopes[i], fm, NULL);
		if (!a || !b || strcmp(a, b) != 0 || ana_sscope_unordered(sscopes[i])) {
			same = 0;
			printf("  speedscope selection %zu differs (%s)\n", i, ana_sscope_error(sscopes[i]));
		}
		spilled |= ana_sscope_spilled_bytes(sscopes[i]) > 0;
		if (i == 0 && a)
			len = strlen(a);
		free(a);
		free(b);
	}
	th_check(same && len > 1000 && spilled, "%s: its speedscope files (samples handed over as merged, set aside in "
	         "a temporary file) are the kept model's, byte for byte, whole and by GIL class (%zu bytes)", what, len);
}

/* fold's own model (ana_fold_load_opts: samples merged and counted as they stream, CUDA records
 * counted by name) folds as the model that keeps every record, whatever the selection; so does
 * pprof's, and speedscope's export, which takes each sample as the loader merges it. */
static void compare_fold(const char *path, const char *what, const ana_model *kept, double from_s, double to_s)
{
	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	ana_fold_load_opts(&o, ANA_WEIGHT_SAMPLES, 0);
	for (size_t i = 0; i < N_SSCOPE; i++)
		if (!(sscopes[i] = ana_sscope_new(sscope_gil[i], 240))) {
			th_check(0, "%s: a speedscope collector made", what);
			sscopes_free();
			return;
		}
	o.sample_sink = sscope_sink;
	if (to_s > 0) {
		o.has_from = o.has_to = 1;
		o.from_ns = (uint64_t)(from_s * 1e9);
		o.to_ns = (uint64_t)(to_s * 1e9);
	}
	ana_model *fm = ana_model_load(path, &o, eb, sizeof(eb));
	th_check(fm && fm->samples_streamed && !fm->samples.n && !fm->pystacks.n && !fm->kernels.n && !fm->apis.n,
	         "%s: fold's model keeps no sample, Python read or CUDA record (%s)", what, eb);
	if (!fm) {
		sscopes_free();
		return;
	}
	static const struct { int threads, annotate, gil, python_only; const char *tids; } sel[] = {
		{ 0, 0, -1, 0, NULL }, { 1, 0, -1, 0, NULL }, { 0, 1, -1, 0, NULL }, { 1, 1, -1, 1, NULL },
		{ 0, 0, 1 << ANA_CLASS_PY_GIL, 0, NULL }, { 1, 0, -1, 0, "901,902" },
	};
	int same = 1, n_lines = 0;
	for (size_t i = 0; i < sizeof(sel) / sizeof(sel[0]); i++) {
		ana_fold_opts fo;
		ana_fold_opts_init(&fo);
		fo.threads = sel[i].threads;
		fo.annotate_class = sel[i].annotate;
		fo.gil = sel[i].gil;
		fo.python_only = sel[i].python_only;
		fo.tid_filter = sel[i].tids;
		char *a = fold_text(kept, &fo), *b = fold_text(fm, &fo);
		if (!a || !b || strcmp(a, b) != 0) {
			same = 0;
			printf("  fold selection %zu differs\n", i);
		}
		for (const char *p = a; p && *p; p++)
			n_lines += *p == '\n';
		free(a);
		free(b);
	}
	th_check(same && n_lines > 0, "%s: its folds equal the kept model's: all, --threads, --annotate, python-only, "
	         "--gil, --tid (%d lines)", what, n_lines);
	/* the pprof export (it loads as fold does): the same bytes, whole and by GIL class */
	int pp_same = 1;
	size_t pp_len = 0;
	for (int g = -1; g < ANA_CLASS_COUNT; g++) {
		ana_export_opts eo;
		ana_export_opts_init(&eo);
		eo.gil = g < 0 ? -1 : 1 << g;
		uint8_t *a = NULL, *b = NULL;
		size_t na = 0, nb = 0;
		int ra = ana_export_pprof_raw(kept, &eo, &a, &na), rb = ana_export_pprof_raw(fm, &eo, &b, &nb);
		if (ra < 0 || rb < 0 || na != nb || memcmp(a, b, na) != 0)
			pp_same = 0;
		if (g < 0)
			pp_len = na;
		free(a);
		free(b);
	}
	th_check(pp_same && pp_len > 0, "%s: its pprof profile is the kept model's, byte for byte, whole and per GIL "
	         "class (%zu bytes)", what, pp_len);
	compare_sscope(what, kept, fm);
	/* diff's and check's profile (they load the same way, their CUDA tables aside): every
	 * function's self and total samples and the GIL classes' shares as from the kept model */
	ana_profile *pa = ana_profile_from_model(kept), *pb = ana_profile_from_model(fm);
	ana_diff d = { 0 };
	int equal = pa && pb && ana_diff_compute(pa, pb, 0, &d) == 0 && d.n > 0 && d.base_n == d.new_n &&
	            ana_profile_has_gil(pa) == ana_profile_has_gil(pb);
	for (size_t i = 0; equal && i < d.n; i++)
		equal = d.rows[i].base_self == d.rows[i].new_self && d.rows[i].base_total == d.rows[i].new_total;
	ana_share_row gil[ANA_CLASS_COUNT];
	if (equal)
		ana_diff_gil(pa, pb, 3, gil);
	for (int c = 0; equal && c < ANA_CLASS_COUNT; c++)
		equal = gil[c].base_pct == gil[c].new_pct;
	th_check(equal, "%s: diff's profile of it equals the kept model's (%zu functions, %llu samples)", what, d.n,
	         (unsigned long long)d.new_n);
	ana_diff_free(&d);
	ana_profile_free(pa);
	ana_profile_free(pb);
	ana_model_free(fm);
	sscopes_free();
}

/* fold --weight wall and gpu-time on their own models (ana_fold_load_opts: Python reads counted by
 * stack, thread and GIL state; CUDA records joined to the launch stacks as they are read again)
 * fold as the model that keeps every record, whatever the selection. */
static void compare_fold_weights(const char *path, const char *what, double from_s, double to_s)
{
	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	if (to_s > 0) {
		o.has_from = o.has_to = 1;
		o.from_ns = (uint64_t)(from_s * 1e9);
		o.to_ns = (uint64_t)(to_s * 1e9);
	}
	ana_model *kept = ana_model_load(path, &o, eb, sizeof(eb));
	th_check(kept != NULL, "%s: loads keeping every record (%s)", what, eb);
	static const struct { int threads, gil, python_only; const char *tids; } sel[] = {
		{ 0, -1, 0, NULL }, { 1, -1, 0, NULL }, { 0, -1, 1, NULL }, { 1, -1, 1, "901" },
		{ 0, (1 << ANA_CLASS_PY_GIL) | (1 << ANA_CLASS_NATIVE_GIL), 0, NULL },
		{ 1, (1 << ANA_CLASS_NATIVE_NOGIL) | (1 << ANA_CLASS_WAIT_GIL), 0, NULL }, { 1, -1, 0, "901,902" },
	};
	for (int w = ANA_WEIGHT_GPU_TIME; kept && w <= ANA_WEIGHT_WALL; w++) {
		ana_opts fo_load = o;
		ana_fold_load_opts(&fo_load, w, 0);
		ana_model *fm = ana_model_load(path, &fo_load, eb, sizeof(eb));
		const char *wn = w == ANA_WEIGHT_WALL ? "wall" : "gpu-time";
		th_check(fm && !fm->samples.n && !fm->pystacks.n && !fm->kernels.n && !fm->apis.n && !fm->memcpys.n &&
		         (w == ANA_WEIGHT_WALL || fm->gpu_launches),
		         "%s: fold --weight %s's model keeps no sample, Python read or CUDA record (%s)", what, wn, eb);
		if (!fm)
			continue;
		int same = 1, n_lines = 0;
		uint64_t total = 0;
		for (size_t i = 0; i < sizeof(sel) / sizeof(sel[0]); i++) {
			ana_fold_opts fo;
			ana_fold_opts_init(&fo);
			fo.weight = w;
			fo.threads = sel[i].threads;
			fo.gil = w == ANA_WEIGHT_WALL ? sel[i].gil : -1;
			fo.python_only = sel[i].python_only;
			fo.tid_filter = sel[i].tids;
			ana_folded fa, fb;
			int ra = ana_fold(kept, &fo, &fa), rb = ana_fold(fm, &fo, &fb);
			char *a = ra == 0 ? fold_text(kept, &fo) : NULL, *b = rb == 0 ? fold_text(fm, &fo) : NULL;
			if (!a || !b || strcmp(a, b) != 0 || fa.total != fb.total || fa.n != fb.n) {
				same = 0;
				printf("  fold --weight %s selection %zu differs\n", wn, i);
			}
			for (size_t k = 0; same && k < fa.n; k++)
				same = fa.lines[k].weight_ns == fb.lines[k].weight_ns;
			for (const char *p = a; p && *p; p++)
				n_lines += *p == '\n';
			if (i == 0 && ra == 0)
				total = fa.total;
			if (ra == 0)
				ana_folded_free(&fa);
			if (rb == 0)
				ana_folded_free(&fb);
			free(a);
			free(b);
		}
		/* (the real Python recordings have no GPU work: nothing to fold either way) */
		int any = w == ANA_WEIGHT_WALL ? kept->pystacks.n > 0 : kept->kernels.n > 0;
		th_check(same && (n_lines > 0 && total > 0) == any, "%s: fold --weight %s streamed equals the kept records' fold: "
		         "all, --threads, --python-only, --tid, --gil held/released (%d lines, %llu in all)", what, wn,
		         n_lines, (unsigned long long)total);
		/* a window of fold's own is the loader's: refused on the streamed model */
		ana_fold_opts fo;
		ana_fold_opts_init(&fo);
		fo.weight = w;
		fo.from_ns = 1000000;
		ana_folded fd;
		th_check(ana_fold(fm, &fo, &fd) == GTT_EINVAL, "%s: fold --weight %s of a window on the streamed model is "
		         "refused", what, wn);
		ana_model_free(fm);
	}
	ana_model_free(kept);
}

/* Load path both ways (with the window [from_s, to_s) when to_s > 0); the reports must be equal.
 * The stream's queues hold what comes within a few reorder horizons (everything when no horizon is
 * known), and with bounded at most 2 % of what was read. counted: the trace is this
 * test's (the record counts are known). */
static void compare(const char *path, const char *what, double from_s, double to_s, int bounded, int counted)
{
	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	o.stream_cuda = ANA_STREAM_CUDA_REPORT;
	if (to_s > 0) {
		o.has_from = o.has_to = 1;
		o.from_ns = (uint64_t)(from_s * 1e9);
		o.to_ns = (uint64_t)(to_s * 1e9);
	}
	ana_model *kept = ana_model_load(path, &o, eb, sizeof(eb));
	o.stream_samples = 1;
	ana_model *streamed = ana_model_load(path, &o, eb, sizeof(eb));
	th_check(kept && streamed, "%s: loads both ways (%s)", what, eb);
	if (!kept || !streamed)
		goto out;
	const ana_sample_sum *ss = streamed->ssum;
	th_check(streamed->samples_streamed && ss && !streamed->samples.n && !streamed->pystacks.n &&
	         streamed->gil.n <= 1, "%s: no sample, Python read or GIL record kept when streamed", what);
	if (!ss)
		goto out;
	th_check(ss->n_samples == kept->samples.n && ss->n_reads == kept->pystacks.n && ss->n_gil == kept->gil.n,
	         "%s: every sample, read and GIL record counted (%llu of %zu, %llu of %zu, %llu of %zu)", what,
	         (unsigned long long)ss->n_samples, kept->samples.n, (unsigned long long)ss->n_reads, kept->pystacks.n,
	         (unsigned long long)ss->n_gil, kept->gil.n);
	if (counted && to_s == 0)
		th_check(ss->n_samples == n_samples && ss->n_reads == n_reads && ss->n_gil == n_gil,
		         "%s: as many as were written (%llu samples, %llu reads, %llu GIL records)", what,
		         (unsigned long long)n_samples, (unsigned long long)n_reads, (unsigned long long)n_gil);
	int same_cls = kept->threads.n == streamed->threads.n;
	uint64_t n_py = 0;
	for (size_t i = 0; same_cls && i < kept->threads.n; i++)
		for (int c = 0; c < ANA_CLASS_COUNT; c++) {
			same_cls &= kept->threads.v[i].n_class[c] == streamed->threads.v[i].n_class[c];
			n_py += c > 0 ? kept->threads.v[i].n_class[c] : 0;
		}
	th_check(same_cls && n_py, "%s: the same classes per thread (%llu samples of Python threads)", what,
	         (unsigned long long)n_py);
	uint64_t n_read = ss->n_samples + ss->n_reads + ss->n_gil;
	uint64_t horizon = streamed->gpu ? streamed->gpu->horizon_ns : UINT64_MAX;
	double span_s = (double)(streamed->end_ns - streamed->start_ns) / 1e9;
	if (horizon != UINT64_MAX) {
		/* what comes in three horizons (and a bound of the merge), plus the 256 records read
		 * between two releases of the queue: a count of records, whatever the trace's length;
		 * and for a whole trace at most 2 % of them */
		double rate = (double)n_read / (span_s > 0 ? span_s : 1),
		       held = rate * 3 * ((double)horizon / 1e9 + 0.02) + 256 + 64;
		uint64_t peak_gpu = streamed->gpu->peak_samples;
		th_check((double)ss->peak_queued <= held && (double)ss->peak_merge <= held && (double)peak_gpu <= held &&
		         (!bounded || (ss->peak_queued * 50 < n_read && ss->peak_merge * 50 < n_read && peak_gpu * 50 < n_read)),
		         "%s: the reorder queue held %llu of the %llu records, the merge window %llu, the GPU sweep %llu "
		         "samples (horizon %.3f s: %.0f records)", what, (unsigned long long)ss->peak_queued,
		         (unsigned long long)n_read, (unsigned long long)ss->peak_merge, (unsigned long long)peak_gpu,
		         (double)horizon / 1e9, held);
	} else {
		th_check(!bounded && ss->peak_queued == n_read, "%s: no horizon known: every record held until the end "
		         "(%llu of %llu)", what, (unsigned long long)ss->peak_queued, (unsigned long long)n_read);
	}
	char *a = report_of(kept), *b = report_of(streamed);
	th_check(a && b && strcmp(a, b) == 0, "%s: the report is the same streamed and from the records", what);
	if (a && b && strcmp(a, b) != 0) {
		FILE *f = fopen("/tmp/gt-sample-stream.kept", "w"), *g = fopen("/tmp/gt-sample-stream.streamed", "w");
		if (f && g)
			fprintf(f, "%s", a), fprintf(g, "%s", b);
		if (f)
			fclose(f);
		if (g)
			fclose(g);
		printf("reports left in /tmp/gt-sample-stream.{kept,streamed}\n");
	}
	if (counted)
		th_check(b && strstr(b, "Python and the GIL") && strstr(b, "python+GIL (") && strstr(b, "no GIL (") &&
		         strstr(b, "GPU-idle blame"), "%s: the Python classes and the GPU blame are in it", what);
	free(a);
	free(b);
	compare_fold(path, what, kept, from_s, to_s);
	compare_fold_weights(path, what, from_s, to_s);
out:
	ana_model_free(kept);
	ana_model_free(streamed);
}

int main(void)
{
	char path[] = "/tmp/gt-sample-stream-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	th_check(write_trace(path, 1) == 0, "format 1.1 trace written (%llu samples, %llu reads, %llu GIL records)",
	         (unsigned long long)n_samples, (unsigned long long)n_reads, (unsigned long long)n_gil);
	compare(path, "1.1", 0, 0, 1, 1);
	compare(path, "1.1, 40.5-62 s", 40.5, 62, 0, 1);
	th_check(write_trace(path, 0) == 0, "format 1.0 trace written");
	compare(path, "1.0", 0, 0, 1, 1); /* bounded by the horizon pass 1 measured */
	unlink(path);
	/* real recordings: CPython's eval loop and GIL waits in the stacks, the GIL poll's records */
	static const char *const real[] = { "testdata/python/torch_py312.gtt", "testdata/golden/v1.0/python_gilmix.gtt" };
	const char *root = getenv("GT_ROOT");
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", root ? root : ".", real[i]);
		if (access(p, R_OK) != 0) {
			printf("SKIP: %s not found (run from the tree, or set GT_ROOT)\n", p);
			continue;
		}
		compare(p, real[i], 0, 0, 0, 0);
	}
	return th_report();
}
