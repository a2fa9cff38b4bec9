/* test_gpu_stream.c — the GPU report's aggregates streamed by the loader (ana_opts.stream_cuda,
 * analyze/gpu_sum.c, gpu_blame.c) against the same aggregates made from every record kept: a
 * trace written here (two devices, three host threads, 100 s of launches, copies, memsets and
 * syncs delivered in 100 ms batches, the way CUPTI hands its buffers over, samples between them)
 * gives a byte-equal report both ways (and diff's and check's tables-only mode the same kernel and
 * API rows); the streamed model keeps no CUDA record, and its reorder
 * queue never holds more than a small part of them (a count, not a time: memory bounded by the
 * chunk index's horizon, not by the trace). A format 1.0 trace (no time ranges in its index)
 * gets its horizon from pass 1, which measures how late each record came: bounded the same way,
 * by no more than the 1.1 trace's chunks promise, and it agrees too. A damaged CUDA chunk is
 * reported by report's mode as when every chunk is expanded in pass 1. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"
#include "gpu_sum.h"
#include "report.h"
#include "testhelp.h"

#define PID 700
#define T0 5000000000ull
#define SECONDS 100

static gtt_writer *W;
static uint64_t n_cuda;

static uint64_t rnd_state = 88172645463325252ull;
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
static gtt_record *batch;
static size_t n_batch, cap_batch;

static void later(const gtt_record *r)
{
	if (n_batch == cap_batch) {
		cap_batch = cap_batch ? cap_batch * 2 : 1024;
		if (!(batch = realloc(batch, cap_batch * sizeof(*batch))))
			exit(1);
	}
	batch[n_batch++] = *r;
	n_cuda++;
}

static void deliver(void)
{
	for (size_t i = 0; i < n_batch; i++)
		put(&batch[i]);
	n_batch = 0;
}

static void definitions(void)
{
	static const char *const names[] = { "", "cudaLaunchKernel", "cudaMemcpyAsync", "cudaStreamSynchronize",
	                                     "cudaMemsetAsync", "_Z4gemmPfi", "_Z4reluPf", "_Z7softmaxPf" };
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "frequency_hz", .value = "100" };
	put(&r);
	for (uint32_t i = 1; i < sizeof(names) / sizeof(names[0]); i++) {
		r = (gtt_record){ .tag = GTT_REC_STRING };
		r.u.string = (gtt_string){ .pid = PID, .id = i, .text = names[i] };
		put(&r);
	}
	for (uint32_t d = 0; d < 2; d++) {
		r = (gtt_record){ .tag = GTT_REC_CUDA_DEVICE };
		r.u.cuda_device = (gtt_cuda_device){ .pid = PID, .device = d, .cc_major = 9, .sm_count = 132,
		                                     .global_mem_bytes = 80ull << 30, .name = "TestGPU",
		                                     .uuid = d ? "GPU-1111" : "GPU-0000" };
		put(&r);
	}
	for (uint32_t t = 0; t < 3; t++) {
		r = (gtt_record){ .tag = GTT_REC_THREAD };
		r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = PID + t, .event = GTT_THREAD_START,
		                           .name = t ? "worker" : "main" };
		put(&r);
	}
}

/* One call of thread tid at t: its API record, and the work it started (a kernel mostly). */
static void activity(uint32_t tid, uint64_t t, uint32_t corr)
{
	uint32_t what = rnd(100), dev = tid % 2;
	uint64_t api_end = t + 2000 + rnd(5000), ws = api_end + 1000 + rnd(400000), wd = 2000 + rnd(600000);
	gtt_record a = { .tag = GTT_REC_CUDA_API }, w = { 0 };
	a.u.api = (gtt_cuda_api){ .start_ns = t, .end_ns = api_end, .pid = PID, .tid = tid, .correlation = corr,
	                          .domain = GTT_API_RUNTIME, .name_id = 1 };
	if (what < 75) {
		w.tag = GTT_REC_CUDA_KERNEL;
		w.u.kernel = (gtt_cuda_kernel){ .start_ns = ws, .end_ns = ws + wd, .pid = PID, .device = dev,
		                                .stream = 7, .correlation = corr, .name_id = 5 + rnd(3) };
	} else if (what < 87) {
		a.u.api.name_id = 2;
		w.tag = GTT_REC_CUDA_MEMCPY;
		w.u.memcpy = (gtt_cuda_memcpy){ .start_ns = ws, .end_ns = ws + wd / 8, .pid = PID, .device = dev,
		                                .stream = 7, .correlation = corr, .kind = 1 + rnd(3), .flags = 1,
		                                .bytes = 4096ull << rnd(10) };
	} else if (what < 92) {
		a.u.api.name_id = 4;
		w.tag = GTT_REC_CUDA_MEMSET;
		w.u.memset = (gtt_cuda_memset){ .start_ns = ws, .end_ns = ws + 3000, .pid = PID, .device = dev,
		                                .stream = 7, .correlation = corr, .bytes = 1 << 20 };
	} else {
		a.u.api.name_id = 3;
		a.u.api.end_ns = t + wd;
		w.tag = GTT_REC_CUDA_SYNC;
		w.u.sync = (gtt_cuda_sync){ .start_ns = t + 500, .end_ns = t + wd, .pid = PID, .stream = 7,
		                            .correlation = corr, .kind = GTT_SYNC_STREAM };
	}
	later(&a);
	later(&w);
}

static void sample(uint32_t tid, uint64_t t)
{
	static const uint64_t ips[3][3] = { { 0x401000, 0x402000, 0x403000 }, { 0x401100, 0x402000, 0x403000 },
	                                    { 0x404000, 0x403000, 0 } };
	uint32_t k = rnd(3);
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample = (gtt_sample){ .time_ns = t, .pid = PID, .tid = tid, .period_ns = 10000000,
	                           .n_user = k == 2 ? 2 : 3, .ips = ips[k] };
	put(&r);
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
	rnd_state = 88172645463325252ull;
	n_cuda = 0;
	definitions();
	uint32_t corr = 0;
	for (uint64_t ms = 0; ms < SECONDS * 1000ull; ms++) {
		uint64_t t = T0 + ms * 1000000ull;
		for (uint32_t th = 0; th < 3; th++)
			if (rnd(4) == 0) /* ~750 calls a second */
				activity(PID + th, t + rnd(1000000), ++corr);
		if (ms % 10 == 0)
			for (uint32_t th = 0; th < 3; th++)
				sample(PID + th, t + rnd(10000000));
		if (ms % 100 == 99)
			deliver();
	}
	deliver();
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end = (gtt_end){ .time_ns = T0 + SECONDS * 1000000000ull, .reason = GTT_END_DURATION,
	                     .n_samples = SECONDS * 100ull * 3 };
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
	fclose(f);
	return buf;
}

/* The 1.1 trace's horizon (from its chunk index), for the 1.0 twin's (measured by pass 1). */
static uint64_t horizon_11;

static void compare(const char *path, const char *what, int v10)
{
	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	ana_model *kept = ana_model_load(path, &o, eb, sizeof(eb));
	o.stream_cuda = 1;
	ana_model *streamed = ana_model_load(path, &o, eb, sizeof(eb));
	th_check(kept && streamed, "%s: loads both ways (%s)", what, eb);
	if (!kept || !streamed)
		goto out;
	uint64_t n_kept = kept->kernels.n + kept->memcpys.n + kept->memsets.n + kept->syncs.n + kept->apis.n;
	th_check(n_kept == n_cuda, "%s: all %llu CUDA records kept when asked (%llu)", what, (unsigned long long)n_cuda,
	         (unsigned long long)n_kept);
	th_check(!streamed->kernels.n && !streamed->memcpys.n && !streamed->memsets.n && !streamed->syncs.n &&
	         !streamed->apis.n, "%s: none kept when streamed", what);
	const ana_gpu_sum *s = streamed->gpu;
	th_check(s && s->n_fed == n_cuda, "%s: every record fed to the aggregates (%llu)", what,
	         s ? (unsigned long long)s->n_fed : 0ull);
	if (!s)
		goto out;
	th_check(s->n_late == 0, "%s: no record came later than the chunk index promised (%llu)", what,
	         (unsigned long long)s->n_late);
	th_check(s->peak_queued * 50 < s->n_fed && s->horizon_ns < 2000000000ull,
	         "%s: the reorder queue held at most 2%% of the records (%llu of %llu; horizon %.3f s)", what,
	         (unsigned long long)s->peak_queued, (unsigned long long)s->n_fed, (double)s->horizon_ns / 1e9);
	/* a batch's first records wait nearly 100 ms for it, while samples up to the batch's end are
	 * written: a horizon much below that could not hold them */
	th_check(s->horizon_ns >= 90000000ull, "%s: the horizon covers the batches' delay (%.3f s)", what,
	         (double)s->horizon_ns / 1e9);
	if (!v10)
		horizon_11 = s->horizon_ns;
	else
		th_check(s->horizon_ns <= horizon_11, "%s: measured record by record, the horizon is within the 1.1 "
		         "chunks' (%.6f s, %.6f s)", what, (double)s->horizon_ns / 1e9, (double)horizon_11 / 1e9);
	char *a = report_of(kept), *b = report_of(streamed);
	th_check(a && b && strcmp(a, b) == 0, "%s: the report is the same streamed and from the records", what);
	if (a && b && strcmp(a, b) != 0) {
		FILE *f = fopen("/tmp/gt-gpu-stream.kept", "w"), *g = fopen("/tmp/gt-gpu-stream.streamed", "w");
		if (f && g)
			fprintf(f, "%s", a), fprintf(g, "%s", b);
		if (f)
			fclose(f);
		if (g)
			fclose(g);
		printf("reports left in /tmp/gt-gpu-stream.{kept,streamed}\n");
	}
	th_check(b && strstr(b, "GPU-idle blame, GPU 1") && strstr(b, "Longest GPU idle gaps") &&
	         strstr(b, "submitted by thread") && strstr(b, "GPU 1: busy"),
	         "%s: both devices, their blame and the top gaps are in it", what);
	/* report's mode: samples streamed as well (pass 3), the sweep on a thread of its own */
	o.stream_cuda = ANA_STREAM_CUDA_REPORT;
	o.stream_samples = 1;
	ana_model *piped = ana_model_load(path, &o, eb, sizeof(eb));
	char *c = piped ? report_of(piped) : NULL;
	th_check(a && c && strcmp(a, c) == 0, "%s: the report is the same with samples streamed and the GPU sweep on "
	         "its own thread", what);
	ana_model_free(piped);
	o.stream_samples = 0;
	free(c);
	free(a);
	free(b);
	/* diff's and check's mode: the tables only, counted while pass 1 reads */
	o.stream_cuda = ANA_STREAM_CUDA_TABLES;
	ana_model *tab = ana_model_load(path, &o, eb, sizeof(eb));
	const ana_gpu_sum *t = tab ? tab->gpu : NULL;
	int same = t && t->n_fed == s->n_fed && t->n_kernels == s->n_kernels && t->n_apis == s->n_apis &&
	           t->kernel_ns == s->kernel_ns && t->n_kernel_rows == s->n_kernel_rows && t->n_api_rows == s->n_api_rows;
	for (size_t i = 0; same && i < s->n_kernel_rows; i++)
		same = strcmp(t->kernels[i].name, s->kernels[i].name) == 0 && t->kernels[i].count == s->kernels[i].count &&
		       t->kernels[i].total_ns == s->kernels[i].total_ns && t->kernels[i].max_ns == s->kernels[i].max_ns;
	for (size_t i = 0; same && i < s->n_api_rows; i++)
		same = strcmp(t->apis[i].name, s->apis[i].name) == 0 && t->apis[i].count == s->apis[i].count &&
		       t->apis[i].total_ns == s->apis[i].total_ns && t->apis[i].domain == s->apis[i].domain;
	th_check(same && !tab->kernels.n && !tab->apis.n,
	         "%s: the tables-only mode counts the same kernel and API rows, keeping no record", what);
	ana_model_free(tab);
	/* fold's mode for the weights that are not GPU time (and gt-render flame's, the sample
	 * exports'): CUDA records counted by name, none kept, the same folded stacks */
	ana_opts fopts;
	ana_opts_init(&fopts);
	ana_fold_load_opts(&fopts, ANA_WEIGHT_SAMPLES, 1);
	ana_model *fm = ana_model_load(path, &fopts, eb, sizeof(eb));
	ana_fold_opts fo;
	ana_fold_opts_init(&fo);
	fo.threads = 1;
	ana_folded fa = { 0 }, fb = { 0 };
	int folded = fm && ana_fold(kept, &fo, &fa) == 0 && ana_fold(fm, &fo, &fb) == 0;
	char *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	FILE *f1 = folded ? open_memstream(&ta, &la) : NULL, *f2 = folded ? open_memstream(&tb, &lb) : NULL;
	if (f1 && f2) {
		ana_fold_write(&fa, f1);
		ana_fold_write(&fb, f2);
	}
	if (f1)
		fclose(f1);
	if (f2)
		fclose(f2);
	th_check(fm && !fm->kernels.n && !fm->apis.n && !fm->memcpys.n && !fm->syncs.n && ana_gpu_sum_kernels(fm) &&
	         ta && tb && la > 0 && strcmp(ta, tb) == 0 && fa.total == fb.total,
	         "%s: fold's load options keep no CUDA record (kernels %llu counted) and fold the same %llu samples",
	         what, fm ? (unsigned long long)ana_gpu_sum_kernels(fm) : 0ull, (unsigned long long)fa.total);
	free(ta);
	free(tb);
	if (folded) {
		ana_folded_free(&fa);
		ana_folded_free(&fb);
	}
	ana_model_free(fm);
out:
	ana_model_free(kept);
	ana_model_free(streamed);
}

static int cmp_sample_time(const void *x, const void *y)
{
	const ana_sample *a = x, *b = y;
	return a->time_ns < b->time_ns ? -1 : a->time_ns > b->time_ns;
}

/* The accumulator fed samples (its sweep on a thread of its own: gpu_pipe.c) against the one that
 * reads the model's arrays on the caller's thread, on the same records: the same report; and
 * one given up half way (an error in the caller) ends its thread and frees all (ASan). */
static void piped_vs_direct(const char *path)
{
	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, eb, sizeof(eb));
	ana_sample *smp = NULL;
	char *a = NULL, *b = NULL;
	th_check(m != NULL, "piped: loads (%s)", eb);
	if (!m)
		return;
	a = report_of(m); /* the direct sweep, cached in the model */
	smp = malloc((m->samples.n + 1) * sizeof(*smp));
	ana_gpu_acc *acc = ana_gpu_acc_new(m, UINT64_MAX);
	int rc = smp && acc ? 0 : -1;
	if (acc)
		ana_gpu_acc_feed_samples(acc);
	if (smp)
		memcpy(smp, m->samples.v, m->samples.n * sizeof(*smp));
	qsort(smp, m->samples.n, sizeof(*smp), cmp_sample_time);
	gtt_record rec;
#define FEED(VEC, TAG, FIELD)                                              \
	for (size_t i = 0; rc == 0 && i < m->VEC.n; i++) {                 \
		rec.tag = TAG;                                             \
		rec.u.FIELD = m->VEC.v[i];                                 \
		rc = ana_gpu_acc_add(acc, &rec);                           \
	}
	FEED(apis, GTT_REC_CUDA_API, api)
	FEED(kernels, GTT_REC_CUDA_KERNEL, kernel)
	FEED(memcpys, GTT_REC_CUDA_MEMCPY, memcpy)
	FEED(memsets, GTT_REC_CUDA_MEMSET, memset)
	FEED(syncs, GTT_REC_CUDA_SYNC, sync)
	for (size_t i = 0; rc == 0 && i < m->samples.n; i++)
		rc = ana_gpu_acc_sample(acc, &smp[i]);
	if (rc == 0)
		rc = ana_gpu_acc_advance(acc, 0, 0); /* nothing is final before the end: a no-op */
	ana_gpu_sum *s = NULL;
	if (rc == 0)
		rc = ana_gpu_acc_finish(acc, &s);
	else
		ana_gpu_acc_free(acc);
	th_check(rc == 0 && s && s->n_fed == n_cuda && m->samples.n > 10000,
	         "piped: %llu records and %zu samples swept on the accumulator's thread",
	         s ? (unsigned long long)s->n_fed : 0ull, m->samples.n);
	if (s) {
		ana_gpu_sum_forget(m);
		m->gpu = s; /* the report of the piped sums (freed with the model) */
		b = report_of(m);
	}
	th_check(a && b && strcmp(a, b) == 0, "piped: the report equals the direct sweep's");
	/* given up after a few batches: the thread ends, nothing leaks */
	acc = ana_gpu_acc_new(m, 1000000);
	if (acc) {
		ana_gpu_acc_feed_samples(acc);
		rc = 0;
		for (size_t i = 0; rc == 0 && i < m->kernels.n && i < 20000; i++) {
			rec.tag = GTT_REC_CUDA_KERNEL;
			rec.u.kernel = m->kernels.v[i];
			rc = ana_gpu_acc_add(acc, &rec);
		}
		ana_gpu_acc_free(acc);
	}
	th_check(acc && rc == 0, "piped: an accumulator freed without finishing ends its thread");
#undef FEED
	free(a);
	free(b);
	free(smp);
	ana_model_free(m);
}

/* A CUDA chunk whose compressed data does not expand (its checksum made right): report's pass 1
 * takes only the header of CUDA chunks, so pass 3 meets the damage; it must be reported as pass 1
 * reports it when it expands every chunk (the records kept): the same words without
 * --skip-corrupt, the same count and report with it. */
static void damaged_cuda(const char *path)
{
	char bad[] = "/tmp/gt-gpu-stream-bad-XXXXXX", eb[256] = "", eb2[256] = "";
	int fd = open(path, O_RDONLY), bfd = mkstemp(bad);
	off_t n = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
	uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
	if (!b || bfd < 0 || pread(fd, b, (size_t)n, 0) != n)
		exit(1);
	close(fd);
	size_t at = 0;
	int k = 1;
	for (size_t off = GTT_HEADER_LEN; !at && off + GTT_CHUNK_HEADER_LEN <= (size_t)n;) {
		uint32_t len = (uint32_t)b[off + 4] | (uint32_t)b[off + 5] << 8 | (uint32_t)b[off + 6] << 16 | (uint32_t)b[off + 7] << 24;
		const uint8_t *p = b + off + GTT_CHUNK_HEADER_LEN;
		if (b[off] == GTT_REC_PACKED && p[0] == GTT_CODEC_ZSTD && p[1] == GTT_STREAM_CUDA && k-- == 0) {
			at = off;
			b[off + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN + len / 2] ^= 0x5a;
			uint32_t crc = gtt_crc32c(gtt_crc32c(0, b + off, 8), p, len);
			for (int i = 0; i < 4; i++)
				b[off + 8 + i] = (uint8_t)(crc >> (8 * i));
		}
		off += GTT_CHUNK_HEADER_LEN + len;
	}
	if (!at || write(bfd, b, (size_t)n) != n)
		exit(1);
	close(bfd);
	free(b);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *kept = ana_model_load(bad, &o, eb, sizeof(eb));
	o.stream_cuda = ANA_STREAM_CUDA_REPORT;
	o.stream_samples = 1;
	ana_model *piped = ana_model_load(bad, &o, eb2, sizeof(eb2));
	th_check(!kept && !piped && eb[0] && strcmp(eb, eb2) == 0 && strstr(eb, "corrupt chunk"),
	         "a damaged CUDA chunk: report's load fails with pass 1's words (%s)", eb2);
	ana_model_free(kept);
	ana_model_free(piped);
	o.skip_corrupt = 1;
	piped = ana_model_load(bad, &o, eb2, sizeof(eb2));
	o.stream_cuda = 0;
	o.stream_samples = 0;
	kept = ana_model_load(bad, &o, eb, sizeof(eb));
	char *a = kept ? report_of(kept) : NULL, *c = piped ? report_of(piped) : NULL;
	th_check(a && c && strcmp(a, c) == 0 && kept->n_corrupt == 1 && piped->n_corrupt == 1,
	         "--skip-corrupt: the damaged CUDA chunk counted once (%llu, %llu), the reports the same",
	         kept ? (unsigned long long)kept->n_corrupt : 0ull, piped ? (unsigned long long)piped->n_corrupt : 0ull);
	free(a);
	free(c);
	ana_model_free(kept);
	ana_model_free(piped);
	unlink(bad);
}

int main(void)
{
	char path[] = "/tmp/gt-gpu-stream-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	th_check(write_trace(path, 1) == 0, "format 1.1 trace written (%llu CUDA records)", (unsigned long long)n_cuda);
	compare(path, "1.1", 0);
	piped_vs_direct(path);
	damaged_cuda(path);
	th_check(write_trace(path, 0) == 0, "format 1.0 trace written");
	compare(path, "1.0", 1);
	unlink(path);
	free(batch);
	return th_report();
}
