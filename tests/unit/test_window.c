/* test_window.c — ana_model_load() with a time window (--from/--to): a trace written here with
 * known records at known times, read whole and in windows, packed (index at the end, rebuilt by
 * a scan) and 1.0 plain; exact counts and cut intervals, the state carried in at the window's
 * start, and a corrupt chunk outside the window that a windowed read never touches. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtt.h"
#include "model.h"
#include "model_priv.h"
#include "testhelp.h"

#define SEC ((uint64_t)1000000000)
#define MS ((uint64_t)1000000)
#define T0 (1000 * SEC)
#define ORIGIN (T0 - SEC / 2) /* the recorder's start_ns: half a second before the first record */
#define PID 10u

static char dir[] = "/tmp/gt-test-window.XXXXXX";

static void put(gtt_writer *w, const gtt_record *r)
{
	if (gtt_write(w, r) != 0)
		fprintf(stderr, "write failed: tag %u\n", r->tag);
}

/* 10 s of records from T0: a sample every 10 ms (threads 11 and 12 by turns), thread 11 on CPU
 * for the first 50 ms of every 100 ms, a GIL hand-over at k s + 500 ms, a /proc reading of
 * thread 11 every second (0.5 s of CPU per second), a kernel across every second boundary
 * [k s + 900 ms, k s + 1100 ms). */
/* capture: sampling on over [T0 + 2 s, T0 + 4 s) and from T0 + 6 s on (gt-record's pid-0 records) */
static int write_trace(const char *path, uint32_t minor, int no_index, int shuffle, int capture)
{
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	o.block_bytes = 4096; /* many chunks: a window reads few of them */
	o.no_index = no_index;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), err;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &o, &err) : NULL;
	if (!w)
		return -1;
	char start[32];
	snprintf(start, sizeof(start), "%llu", (unsigned long long)ORIGIN);
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "start_ns", .value = start };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "prog" };
	put(w, &r);
	for (uint32_t tid = 11; tid <= 12; tid++) {
		r = (gtt_record){ .tag = GTT_REC_THREAD };
		r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = tid, .event = GTT_THREAD_START,
		                           .name = tid == 11 ? "eleven" : "twelve" };
		put(w, &r);
	}
	uint64_t ips[2] = { 0x401000, 0x402000 };
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t t = T0 + i * 10 * MS;
		r = (gtt_record){ .tag = GTT_REC_SAMPLE };
		r.u.sample = (gtt_sample){ .time_ns = t, .pid = PID, .tid = 11 + (uint32_t)(i & 1), .period_ns = 10 * MS,
		                           .n_user = 2, .ips = ips };
		/* under capture control samples come only while sampling is on (the analyzer distrusts
		 * capture records that samples contradict: analyze/captured.c) */
		if (!capture || (i >= 200 && i < 400) || i >= 600)
			put(w, &r);
		if (i % 10 == 0 || i % 10 == 5) {
			/* shuffled: each "in" written after the "out" 50 ms later, as perf's per-CPU
			 * buffers can deliver a thread that moved between CPUs */
			static gtt_record held;
			r = (gtt_record){ .tag = GTT_REC_SWITCH };
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = PID, .tid = 11,
			                       .kind = i % 10 == 0 ? GTT_SWITCH_IN : GTT_SWITCH_OUT };
			if (shuffle && i % 10 == 0) {
				held = r;
			} else {
				put(w, &r);
				if (shuffle)
					put(w, &held);
			}
		}
		if (capture && (i == 200 || i == 400 || i == 600)) {
			r = (gtt_record){ .tag = GTT_REC_CAPTURE };
			r.u.capture = (gtt_capture){ .time_ns = t, .event = i == 400 ? GTT_CAPTURE_STOP : GTT_CAPTURE_START,
			                             .source = GTT_CAPTURE_SIGNAL, .name = "" };
			put(w, &r);
		}
		if (i % 100 == 50) {
			r = (gtt_record){ .tag = GTT_REC_GIL };
			r.u.gil = (gtt_gil){ .time_ns = t, .pid = PID, .holder_tid = 11 + (uint32_t)(i / 100 % 2), .locked = 1,
			                     .switches = i / 100 + 1 };
			put(w, &r);
		}
		if (i % 100 == 0) {
			r = (gtt_record){ .tag = GTT_REC_THREAD_CPU };
			r.u.thread_cpu = (gtt_thread_cpu){ .time_ns = t, .pid = PID, .tid = 11, .utime_ns = i / 100 * SEC / 2 };
			put(w, &r);
			r = (gtt_record){ .tag = GTT_REC_CUDA_KERNEL };
			r.u.kernel = (gtt_cuda_kernel){ .start_ns = t + 900 * MS, .end_ns = t + 1100 * MS, .pid = PID };
			put(w, &r);
		}
	}
	r = (gtt_record){ .tag = GTT_REC_END };
	r.u.end = (gtt_end){ .time_ns = T0 + 10 * SEC, .reason = GTT_END_DURATION, .n_samples = 1000 };
	put(w, &r);
	return gtt_writer_close(w);
}

static ana_model *load_opts(const char *path, double from_s, double to_s, int keep_switches, char *err,
                            size_t errlen)
{
	ana_opts o;
	ana_opts_init(&o);
	o.keep_switches = keep_switches;
	if (from_s >= 0) {
		o.has_from = 1;
		o.from_ns = (uint64_t)(from_s * SEC);
	}
	if (to_s >= 0) {
		o.has_to = 1;
		o.to_ns = (uint64_t)(to_s * SEC);
	}
	return ana_model_load(path, &o, err, errlen);
}

static ana_model *load(const char *path, double from_s, double to_s, char *err, size_t errlen)
{
	return load_opts(path, from_s, to_s, 1, err, errlen);
}

/* On-CPU time of thread 11: folded while reading (switches not kept) and from the kept
 * switches, whole and in the window; both must be what the trace says, shuffled or not. */
static void check_oncpu(const char *path, const char *what)
{
	char err[512] = "";
	for (int keep = 0; keep <= 1; keep++) {
		ana_model *m = load_opts(path, -1, -1, keep, err, sizeof(err)), *w = load_opts(path, 2.5, 5.5, keep, err, sizeof(err));
		ana_thread *a = m ? ana_thread_find(m, PID, 11) : NULL, *b = w ? ana_thread_find(w, PID, 11) : NULL;
		th_check(a && b && a->oncpu_known && a->oncpu_ns == 5 * SEC && b->oncpu_ns == 1500 * MS,
		         "%s, switches %s: thread 11 on CPU 5 s in all, 1.5 s in the window (%" PRIu64 ", %" PRIu64 ")",
		         what, keep ? "kept" : "folded while read", a ? a->oncpu_ns : 0, b ? b->oncpu_ns : 0);
		th_check(m && (keep ? m->switches.n == 200 : m->switches.n == 0), "%s: switches %s", what,
		         keep ? "kept when asked" : "not kept by default");
		size_t nw = 0, late = 0;
		const char *const *wl = m ? ana_model_warnings(m, &nw) : NULL;
		for (size_t i = 0; i < nw; i++)
			late += strstr(wl[i], "context switch") != NULL;
		th_check(m && !late, "%s: no warning about switches out of order", what);
		ana_model_free(m);
		ana_model_free(w);
	}
}

/* The window [2.5 s, 5.5 s) of the recording, that is [T0 + 2 s, T0 + 5 s) of trace time. */
static void check_window(const char *path, const char *what)
{
	char err[512] = "";
	ana_model *m = load(path, 2.5, 5.5, err, sizeof(err));
	th_check(m != NULL, "%s: window loads (%s)", what, err);
	if (!m)
		return;
	const uint64_t from = T0 + 2 * SEC, to = T0 + 5 * SEC;
	th_check(m->window.on && m->window.origin_ns == ORIGIN && m->window.from_ns == from && m->window.to_ns == to,
	         "%s: the window counts from the recorder's start_ns (origin %" PRIu64 ", from %" PRIu64 ")", what,
	         m->window.origin_ns, m->window.from_ns);
	th_check(m->start_ns == from && m->end_ns == to, "%s: the model spans the window (%" PRIu64 " .. %" PRIu64 ")",
	         what, m->start_ns - T0, m->end_ns - T0);
	th_check(m->samples.n == 300, "%s: 300 samples in 3 s (got %zu)", what, m->samples.n);
	int inside = 1;
	for (size_t i = 0; i < m->samples.n; i++)
		inside &= m->samples.v[i].time_ns >= from && m->samples.v[i].time_ns < to;
	th_check(inside && m->samples.n && m->samples.v[0].time_ns == from, "%s: every sample inside, the first at its start",
	         what);
	th_check(m->switches.n == 60, "%s: 60 switches (got %zu)", what, m->switches.n);
	ana_thread *t11 = ana_thread_find(m, PID, 11);
	th_check(t11 && t11->oncpu_known && t11->oncpu_ns == 1500 * MS, "%s: thread 11 on CPU 1.5 s in the window (%" PRIu64 ")",
	         what, t11 ? t11->oncpu_ns : 0);
	th_check(t11 && t11->cpu_known && t11->cpu_ns == 1500 * MS,
	         "%s: thread 11's /proc CPU over the window counts from the reading before it (%" PRIu64 ")", what,
	         t11 ? t11->cpu_ns : 0);
	th_check(m->kernels.n == 4, "%s: 4 kernels overlap the window (got %zu)", what, m->kernels.n);
	if (m->kernels.n == 4) {
		uint64_t lo = UINT64_MAX, hi = 0, busy = 0;
		for (size_t i = 0; i < 4; i++) {
			const gtt_cuda_kernel *k = &m->kernels.v[i];
			lo = k->start_ns < lo ? k->start_ns : lo;
			hi = k->end_ns > hi ? k->end_ns : hi;
			busy += k->end_ns - k->start_ns;
		}
		th_check(lo == from && hi == to && busy == 600 * MS,
		         "%s: kernels cut at the window's edges (busy %" PRIu64 " ms)", what, busy / MS);
	}
	/* the GIL holder when the window began: the hand-over at T0 + 1.5 s, moved to its start */
	size_t first = 0;
	for (size_t i = 0; i < m->gil.n; i++)
		if (m->gil.v[i].time_ns < m->gil.v[first].time_ns)
			first = i;
	th_check(m->gil.n == 4 && m->gil.v[first].time_ns == from && m->gil.v[first].holder_tid == 12 &&
	         m->gil.v[first].switches == 2,
	         "%s: the GIL state at the window's start is carried in (%zu records)", what, m->gil.n);
	th_check(m->has_end && !m->end_mismatch, "%s: END read, its sample count not compared with a window's", what);
	ana_model_free(m);

	/* two windows that meet hold every sample once */
	ana_model *a = load(path, 0, 4.5, err, sizeof(err)), *b = load(path, 4.5, -1, err, sizeof(err));
	th_check(a && b && a->samples.n + b->samples.n == 1000 && a->samples.n == 400,
	         "%s: [0, 4.5) and [4.5, end) split the 1000 samples (%zu + %zu)", what, a ? a->samples.n : 0,
	         b ? b->samples.n : 0);
	th_check(b && b->end_ns == T0 + 10 * SEC + 100 * MS, "%s: an open window ends with the recording (its last kernel)", what);
	ana_model_free(a);
	ana_model_free(b);

	m = load(path, 60, -1, err, sizeof(err));
	th_check(!m && strstr(err, "after the recording's end"), "%s: a window after the end is refused (%s)", what, err);
	ana_model_free(m);
}

/* The on-CPU time the loader folded while reading (or, under capture control, in its second
 * read) is what the model's own switches give when folded all at once in time order. */
static void check_same_oncpu(const char *path, double from_s, double to_s, const char *what)
{
	char err[512] = "";
	ana_model *m = load(path, from_s, to_s, err, sizeof(err));
	uint64_t got[4] = { 0 };
	int ok = m && m->threads.n <= 4;
	for (size_t i = 0; ok && i < m->threads.n; i++)
		got[i] = m->threads.v[i].oncpu_ns;
	ok = ok && ana_threads_oncpu(m) == 0;
	for (size_t i = 0; ok && i < m->threads.n; i++)
		ok = got[i] == m->threads.v[i].oncpu_ns;
	th_check(ok, "%s: on-CPU time folded while reading = folded from the kept switches", what);
	ana_model_free(m);
}

/* Damage a data chunk whose records all lie after T0 + 8 s. 0 when one was found. */
static int corrupt_late_chunk(const char *path)
{
	int err;
	gtt_reader *r = gtt_reader_open(path, &err);
	const gtt_index_entry *e;
	size_t n;
	uint64_t off = 0;
	if (!r || gtt_reader_index(r, &e, &n) < 0) {
		gtt_reader_close(r);
		return -1;
	}
	for (size_t i = 0; i < n && !off; i++)
		if (!(e[i].flags & (GTT_INDEX_DEFS | GTT_INDEX_PLAIN)) && e[i].first_ns > T0 + 8 * SEC &&
		    e[i].end - e[i].offset > 64)
			off = e[i].offset + 40; /* inside the payload: its checksum no longer holds */
	gtt_reader_close(r);
	int fd = off ? open(path, O_RDWR) : -1;
	uint8_t b;
	int rc = fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1 && (b ^= 0x5a, pwrite(fd, &b, 1, (off_t)off) == 1) ? 0 : -1;
	if (fd >= 0)
		close(fd);
	return rc;
}

int main(void)
{
	char path[256], err[512];
	if (!mkdtemp(dir))
		return 1;
	const struct { uint32_t minor; int no_index; const char *name; } kinds[] = {
		{ 1, 0, "1.1 indexed" }, { 1, 1, "1.1 index rebuilt" }, { 0, 0, "1.0 plain" },
	};
	for (size_t k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/t%zu.gtt", dir, k);
		th_check(write_trace(path, kinds[k].minor, kinds[k].no_index, 0, 0) == 0, "%s: trace written", kinds[k].name);
		check_window(path, kinds[k].name);
		check_oncpu(path, kinds[k].name);
		/* the whole trace, for comparison: every record, start from the recorder's start_ns */
		ana_model *m = load(path, -1, -1, err, sizeof(err));
		th_check(m && !m->window.on && m->samples.n == 1000 && m->switches.n == 200 && m->start_ns == ORIGIN,
		         "%s: without a window, all of it", kinds[k].name);
		ana_model_free(m);
	}

	snprintf(path, sizeof(path), "%s/shuffled.gtt", dir);
	th_check(write_trace(path, 1, 0, 1, 0) == 0, "shuffled switches: trace written");
	check_oncpu(path, "shuffled switches");

	check_same_oncpu(path, -1, -1, "shuffled switches");
	check_same_oncpu(path, 2.5, 5.5, "shuffled switches, window");

	/* under capture control only captured time counts, read again once the intervals are known:
	 * thread 11 is on CPU half of [2 s, 4 s) and of [6 s, 9.95 s] */
	snprintf(path, sizeof(path), "%s/capture.gtt", dir);
	th_check(write_trace(path, 1, 0, 0, 1) == 0, "capture: trace written");
	for (int keep = 0; keep <= 1; keep++) {
		ana_model *m = load_opts(path, -1, -1, keep, err, sizeof(err));
		ana_model *w = load_opts(path, 2.5, 5.5, keep, err, sizeof(err));
		ana_thread *a = m ? ana_thread_find(m, PID, 11) : NULL, *b = w ? ana_thread_find(w, PID, 11) : NULL;
		th_check(m && m->capture_controlled && a && a->oncpu_ns == 3 * SEC,
		         "capture, switches %s: thread 11 on CPU 3 s of captured time (%" PRIu64 ")", keep ? "kept" : "folded",
		         a ? a->oncpu_ns : 0);
		th_check(w && w->captured.n == 1 && b && b->oncpu_ns == 1 * SEC,
		         "capture, window [2.5, 5.5): one captured interval left, 1 s on CPU (%" PRIu64 ")", b ? b->oncpu_ns : 0);
		ana_model_free(m);
		ana_model_free(w);
	}
	check_same_oncpu(path, -1, -1, "capture");
	check_same_oncpu(path, 2.5, 5.5, "capture, window");

	snprintf(path, sizeof(path), "%s/t0.gtt", dir);
	check_same_oncpu(path, -1, -1, "1.1 indexed");
	th_check(corrupt_late_chunk(path) == 0, "a late data chunk damaged");
	ana_model *m = load(path, -1, -1, err, sizeof(err));
	th_check(!m && strstr(err, "corrupt"), "the whole trace meets the damaged chunk (%s)", err);
	ana_model_free(m);
	m = load(path, 2.5, 5.5, err, sizeof(err));
	th_check(m && m->n_corrupt == 0 && m->samples.n == 300,
	         "a window before it reads only its own chunks: no corrupt chunk met (%s)", m ? "ok" : err);
	ana_model_free(m);

	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return th_report();
}
