/* test_rec_capture.c — gt-record's capture control: --max-size sizes, the capture state machine
 * (delay, signals, NVTX ranges, max size), the ticker gate, the ring's window copy (filters,
 * definitions once, GIL at the cut, capture records) and rotation with definitions replayed;
 * and, with arguments, a trace inspector for tests/cli/record_capture*.sh:
 *   test_rec_capture                 run the unit tests
 *   test_rec_capture show TRACE      one fact per line:
 *     meta KEY VALUE | capture TIME PID EVENT SOURCE NAME | sample TIME PID TID LEAF_IP |
 *     thread PID TID TIME NAME | end REASON N_SAMPLES | thread_cpu TIME TID |
 *     ticks_whole SOURCE INTENDED DONE | samples N | bad N | truncated 0|1 |
 *     captured_ns N (the format's rule over pid-0 capture records, FORMAT.md) | first_ns N | last_ns N
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "gt_util.h"
#include "gtt.h"
#include "gtt_priv.h"
#include "ring.h"
#include "testhelp.h"
#include "ticker.h"

/* ---- the inspector ---- */

typedef struct cap_ev { uint64_t t; uint32_t event; } cap_ev;

static int cmp_ev(const void *a, const void *b)
{
	const cap_ev *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int show(const char *path)
{
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open(path, &err);
	gtt_record rec;
	uint64_t n_samples = 0, n_bad = 0, first = UINT64_MAX, last = 0;
	cap_ev *ev = NULL;
	size_t n_ev = 0, cap_ev_n = 0;

	if (!r) {
		printf("open_error %s\n", gtt_strerror(err));
		return 2;
	}
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		uint64_t t0, t1;
		if (rc < 0) {
			n_bad++;
			continue;
		}
		switch (rec.tag) {
		case GTT_REC_META:
			printf("meta %s %s\n", rec.u.meta.key, rec.u.meta.value);
			break;
		case GTT_REC_CAPTURE:
			printf("capture %llu %u %u %u %s\n", (unsigned long long)rec.u.capture.time_ns, rec.u.capture.pid,
			       rec.u.capture.event, rec.u.capture.source, rec.u.capture.name[0] ? rec.u.capture.name : "-");
			if (rec.u.capture.pid == 0) {
				if (GT_GROW(ev, cap_ev_n, n_ev + 1) < 0)
					return 2;
				ev[n_ev++] = (cap_ev){ rec.u.capture.time_ns, rec.u.capture.event };
			}
			break;
		case GTT_REC_SAMPLE:
			n_samples++;
			printf("sample %llu %u %u %llx\n", (unsigned long long)rec.u.sample.time_ns, rec.u.sample.pid,
			       rec.u.sample.tid,
			       (unsigned long long)(rec.u.sample.n_user ? rec.u.sample.ips[rec.u.sample.n_kernel] : 0));
			break;
		case GTT_REC_THREAD:
			printf("thread %u %u %llu %s\n", rec.u.thread.pid, rec.u.thread.tid,
			       (unsigned long long)rec.u.thread.time_ns, rec.u.thread.name[0] ? rec.u.thread.name : "-");
			break;
		case GTT_REC_END:
			printf("end %u %llu\n", rec.u.end.reason, (unsigned long long)rec.u.end.n_samples);
			break;
		case GTT_REC_THREAD_CPU:
			printf("thread_cpu %llu %u\n", (unsigned long long)rec.u.thread_cpu.time_ns, rec.u.thread_cpu.tid);
			break;
		case GTT_REC_TICKS:
			if (rec.u.ticks.flags & GTT_TICKS_WHOLE)
				printf("ticks_whole %u %llu %llu\n", rec.u.ticks.source, (unsigned long long)rec.u.ticks.intended,
				       (unsigned long long)rec.u.ticks.done);
			break;
		default:
			break;
		}
		/* the trace's time span, as the analyzer sees it (a time of 0 means "before") */
		if (rec.tag != GTT_REC_META && rec.tag != GTT_REC_ARCHIVE && rec.tag != GTT_REC_HEALTH &&
		    rec.tag != GTT_REC_TICKS && gtt_rec_times(&rec, &t0, &t1)) {
			if (t0 && t0 < first)
				first = t0;
			if (t1 > last)
				last = t1;
		}
	}
	printf("samples %llu\nbad %llu\ntruncated %d\n", (unsigned long long)n_samples, (unsigned long long)n_bad,
	       gtt_reader_truncated(r));
	printf("first_ns %llu\nlast_ns %llu\n", (unsigned long long)(first == UINT64_MAX ? 0 : first),
	       (unsigned long long)last);
	/* captured time: before the first pid-0 record the opposite state of its event */
	if (n_ev) {
		qsort(ev, n_ev, sizeof(*ev), cmp_ev);
		uint64_t total = 0, since = first;
		int on = ev[0].event == GTT_CAPTURE_STOP;
		for (size_t i = 0; i < n_ev; i++) {
			if (ev[i].event == GTT_CAPTURE_START && !on) {
				on = 1;
				since = ev[i].t;
			} else if (ev[i].event == GTT_CAPTURE_STOP && on) {
				on = 0;
				if (ev[i].t > since)
					total += ev[i].t - since;
			}
		}
		if (on && last > since)
			total += last - since;
		printf("captured_ns %llu\n", (unsigned long long)total);
	}
	free(ev);
	gtt_reader_close(r);
	return 0;
}

/* ---- unit tests ---- */

static void test_sizes(void)
{
	uint64_t b = 0;
	th_check(rec_capture_parse_size("64K", &b) == 0 && b == 65536, "size: 64K = 65536");
	th_check(rec_capture_parse_size("1.5M", &b) == 0 && b == 1572864, "size: 1.5M");
	th_check(rec_capture_parse_size("2GiB", &b) == 0 && b == 2ull << 30, "size: 2GiB");
	th_check(rec_capture_parse_size("10MB", &b) == 0 && b == 10ull << 20, "size: 10MB (powers of 1024)");
	th_check(rec_capture_parse_size("4096", &b) == 0 && b == 4096, "size: plain bytes");
	th_check(rec_capture_parse_size("0", &b) < 0 && rec_capture_parse_size("-1M", &b) < 0 &&
	         rec_capture_parse_size("5X", &b) < 0 && rec_capture_parse_size("", &b) < 0 &&
	         rec_capture_parse_size("M", &b) < 0 && rec_capture_parse_size("1e30", &b) < 0,
	         "size: 0, negative, unknown suffix, empty, no number, too large are refused");
}

#define S GT_NS_PER_SEC

static void test_delay(void)
{
	rec_capture_opts o = { .delay_s = 1.0 };
	rec_capture *c = rec_capture_create(&o, 10 * S);
	rec_capture_action a;
	char rule[256];

	th_check(c && rec_capture_switchable(c) && !rec_capture_is_on(c), "delay: sampling starts off");
	rec_capture_rule(c, rule, sizeof(rule));
	th_check(strstr(rule, "after 1 s") != NULL, "delay: the rule says so (%s)", rule);
	rec_capture_poll(c, 10 * S + S / 2, 0, &a);
	th_check(!a.start && !a.stop, "delay: nothing before the delay is over");
	rec_capture_poll(c, 11 * S, 0, &a);
	th_check(a.start && a.source == GTT_CAPTURE_DELAY, "delay: sampling starts when it is over");
	rec_capture_switched(c, NULL, 11 * S, 1, a.source);
	rec_capture_poll(c, 12 * S, 0, &a);
	uint32_t n = 0;
	th_check(!a.start && !a.stop && rec_capture_is_on(c) &&
	         rec_capture_captured_ns(c, 13 * S, &n) == 2 * S && n == 1,
	         "delay: then stays on (2 s captured up to 13 s, one interval)");
	rec_capture_destroy(c);
}

static void test_signals(void)
{
	rec_capture_opts o = { .range = REC_CAP_SIGNAL };
	rec_capture *c = rec_capture_create(&o, S);
	rec_capture_action a;

	th_check(c && !rec_capture_is_on(c) && rec_capture_wants_signals(c), "signal: starts off, wants the signals");
	rec_capture_poll(c, 2 * S, 0, &a);
	th_check(!a.start, "signal: nothing without a signal");
	for (int pair = 0; pair < 2; pair++) {
		rec_capture_signal(SIGUSR1);
		rec_capture_poll(c, (3 + 2 * (uint64_t)pair) * S, 0, &a);
		th_check(a.start && a.source == GTT_CAPTURE_SIGNAL, "signal: SIGUSR1 starts (pair %d)", pair + 1);
		rec_capture_switched(c, NULL, (3 + 2 * (uint64_t)pair) * S, 1, a.source);
		rec_capture_signal(SIGUSR1);
		rec_capture_poll(c, (3 + 2 * (uint64_t)pair) * S + 1, 0, &a);
		th_check(!a.start && !a.stop, "signal: a second SIGUSR1 changes nothing");
		rec_capture_signal(SIGUSR2);
		rec_capture_poll(c, (4 + 2 * (uint64_t)pair) * S, 0, &a);
		th_check(a.stop && a.source == GTT_CAPTURE_SIGNAL, "signal: SIGUSR2 stops (pair %d)", pair + 1);
		rec_capture_switched(c, NULL, (4 + 2 * (uint64_t)pair) * S, 0, a.source);
	}
	uint32_t n = 0;
	th_check(rec_capture_captured_ns(c, 10 * S, &n) == 2 * S && n == 2, "signal: two intervals of 1 s");
	/* both between two polls: the later wins */
	rec_capture_signal(SIGUSR1);
	rec_capture_signal(SIGUSR2);
	rec_capture_poll(c, 11 * S, 0, &a);
	th_check(!a.start && !a.stop, "signal: SIGUSR1 then SIGUSR2 before a poll: stays off");
	rec_capture_signal(SIGUSR2);
	rec_capture_signal(SIGUSR1);
	rec_capture_poll(c, 12 * S, 0, &a);
	th_check(a.start, "signal: SIGUSR2 then SIGUSR1 before a poll: on");
	rec_capture_destroy(c);
}

static gtt_record cap_rec(uint32_t pid, uint32_t event, const char *name)
{
	gtt_record r = { .tag = GTT_REC_CAPTURE };
	r.u.capture.time_ns = 5 * S;
	r.u.capture.pid = pid;
	r.u.capture.tid = pid;
	r.u.capture.event = event;
	r.u.capture.source = GTT_CAPTURE_NVTX;
	r.u.capture.name = name;
	return r;
}

static void test_nvtx(void)
{
	rec_capture_opts o = { .range = REC_CAP_NVTX, .nvtx_name = "step" };
	rec_capture *c = rec_capture_create(&o, S);
	rec_capture_action a;
	gtt_record r;

	th_check(c && !rec_capture_is_on(c) && !rec_capture_wants_signals(c), "nvtx: starts off");
	r = cap_rec(0, GTT_CAPTURE_START, "step");
	rec_capture_observe(c, &r);
	r = cap_rec(42, GTT_CAPTURE_START, "other");
	rec_capture_observe(c, &r);
	rec_capture_poll(c, 2 * S, 0, &a);
	th_check(!a.start, "nvtx: gt-record's own records and other names do not start it");
	r = cap_rec(42, GTT_CAPTURE_START, "step");
	rec_capture_observe(c, &r);
	rec_capture_observe(c, &r); /* nested */
	rec_capture_poll(c, 3 * S, 0, &a);
	th_check(a.start && a.source == GTT_CAPTURE_NVTX, "nvtx: the agent's range start starts sampling");
	rec_capture_switched(c, NULL, 3 * S, 1, a.source);
	r = cap_rec(42, GTT_CAPTURE_STOP, "step");
	rec_capture_observe(c, &r);
	rec_capture_poll(c, 4 * S, 0, &a);
	th_check(!a.stop, "nvtx: one of two nested ranges closed: still on");
	rec_capture_observe(c, &r);
	rec_capture_poll(c, 5 * S, 0, &a);
	th_check(a.stop && a.source == GTT_CAPTURE_NVTX, "nvtx: the last range closed stops it");
	rec_capture_switched(c, NULL, 5 * S, 0, a.source);
	rec_capture_observe(c, &r); /* a stray stop */
	r = cap_rec(43, GTT_CAPTURE_START, "step");
	rec_capture_observe(c, &r);
	rec_capture_poll(c, 6 * S, 0, &a);
	th_check(a.start, "nvtx: a stray stop does not hold the next range back");
	rec_capture_destroy(c);
}

static void test_max_size(void)
{
	rec_capture_opts o = { .max_size = 1 << 20 };
	rec_capture *c = rec_capture_create(&o, S);
	rec_capture_action a;

	th_check(c && rec_capture_is_on(c) && !rec_capture_switchable(c), "max-size: sampling on, nothing to switch");
	rec_capture_poll(c, 2 * S, (1 << 20) - 1, &a);
	th_check(!a.end, "max-size: below the size, nothing");
	rec_capture_poll(c, 3 * S, 1 << 20, &a);
	th_check(a.end && a.stop && a.source == GTT_CAPTURE_MAX_SIZE, "max-size: at the size, stop and end");
	rec_capture_poll(c, 4 * S, 2 << 20, &a);
	th_check(!a.end, "max-size: said once");
	rec_capture_destroy(c);
}

/* ---- the ticker gate ---- */

typedef struct gate_loop { rec_ticker *t; int stop; uint64_t ticks_in_gate; int in_gate; } gate_loop;

static void *gate_thread(void *arg)
{
	gate_loop *g = arg;
	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		rec_ticker_wait(g->t);
		if (__atomic_load_n(&g->in_gate, __ATOMIC_ACQUIRE))
			g->ticks_in_gate++;
	}
	return NULL;
}

static void test_gate(void)
{
	gate_loop g = { 0 };
	pthread_t thr;
	g.t = rec_ticker_create(GTT_SRC_PROCSTAT, 2 * GT_NS_PER_MS, 0, NULL);
	pthread_create(&thr, NULL, gate_thread, &g);
	usleep(100000);
	uint64_t before = rec_ticker_done(g.t);
	rec_ticker_gate_close();
	usleep(20000); /* the loop reaches the gate */
	__atomic_store_n(&g.in_gate, 1, __ATOMIC_RELEASE);
	usleep(300000);
	__atomic_store_n(&g.in_gate, 0, __ATOMIC_RELEASE);
	uint64_t during = rec_ticker_done(g.t);
	rec_ticker_gate_open();
	usleep(100000);
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	uint64_t after = rec_ticker_done(g.t);
	th_check(before > 10, "gate: the loop ticks while the gate is open (%llu)", (unsigned long long)before);
	th_check(g.ticks_in_gate == 0, "gate: no tick while it is closed (%llu)", (unsigned long long)g.ticks_in_gate);
	th_check(after > during + 10, "gate: the loop goes on when it opens (%llu more)",
	         (unsigned long long)(after - during));
	rec_ticker_destroy(g.t);
	/* an ungated ticker (the drain loop) ignores it */
	rec_ticker *t = rec_ticker_create(GTT_SRC_PERF, GT_NS_PER_MS, 0, NULL);
	rec_ticker_set_gated(t, 0);
	rec_ticker_gate_close();
	for (int i = 0; i < 5; i++)
		rec_ticker_wait(t);
	rec_ticker_gate_open();
	th_check(rec_ticker_done(t) == 5, "gate: an ungated ticker runs while it is closed");
	rec_ticker_destroy(t);
}

/* ---- the window copy ---- */

typedef struct seg { int fd; gtt_writer *w; uint8_t *p; size_t n; } seg;

static void seg_open(seg *g)
{
	int err = 0;
	g->fd = memfd_create("seg", MFD_CLOEXEC);
	g->w = gtt_writer_fdopen(dup(g->fd), 0, &err);
	if (!g->w)
		abort();
}

static void seg_close(seg *g)
{
	gtt_writer_close(g->w);
	g->n = (size_t)lseek(g->fd, 0, SEEK_END);
	g->p = malloc(g->n);
	if (!g->p || pread(g->fd, g->p, g->n, 0) != (ssize_t)g->n)
		abort();
	close(g->fd);
}

static void w_meta(gtt_writer *w, const char *k, const char *v)
{
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta.key = k;
	r.u.meta.value = v;
	gtt_write(w, &r);
}

static void w_thread(gtt_writer *w, uint32_t tid, uint64_t t, uint32_t event, const char *name)
{
	gtt_record r = { .tag = GTT_REC_THREAD };
	r.u.thread.time_ns = t;
	r.u.thread.pid = 7;
	r.u.thread.tid = tid;
	r.u.thread.event = event;
	r.u.thread.name = name;
	gtt_write(w, &r);
}

static void w_sample(gtt_writer *w, uint64_t t)
{
	uint64_t ips[2] = { 0x401000 + t / S, 0x400800 };
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample.time_ns = t;
	r.u.sample.pid = r.u.sample.tid = 7;
	r.u.sample.period_ns = 10000000;
	r.u.sample.n_user = 2;
	r.u.sample.ips = ips;
	gtt_write(w, &r);
}

static void w_gil(gtt_writer *w, uint64_t t, uint32_t holder)
{
	gtt_record r = { .tag = GTT_REC_GIL };
	r.u.gil.time_ns = t;
	r.u.gil.pid = 7;
	r.u.gil.holder_tid = holder;
	r.u.gil.locked = holder != 0;
	gtt_write(w, &r);
}

static void w_health(gtt_writer *w, uint64_t t, uint64_t end, uint32_t kind, const char *text)
{
	gtt_health h = { .time_ns = t, .end_ns = end, .source = GTT_SRC_PERF, .kind = kind, .text = text };
	gtt_write_health(w, &h);
}

static void w_common(gtt_writer *w, uint64_t t, uint64_t map_t)
{
	gtt_record r = { .tag = GTT_REC_PROCESS };
	r.u.process.time_ns = t;
	r.u.process.pid = 7;
	r.u.process.event = GTT_PROC_START;
	r.u.process.comm = "prog";
	gtt_write(w, &r);
	gtt_record m = { .tag = GTT_REC_MAPPING };
	m.u.mapping.time_ns = map_t;
	m.u.mapping.pid = 7;
	m.u.mapping.prot = 5;
	m.u.mapping.start = 0x400000;
	m.u.mapping.end = 0x500000;
	m.u.mapping.path = "/bin/prog";
	gtt_write(w, &m);
}

typedef struct wfacts {
	uint64_t samples, first_sample, threads_7, threads_8, threads_9, metas_command, gil, lag, notes, ticks, whole;
	uint64_t kernels, mappings, processes, start_ns, start_rt, run_start;
	uint64_t gil_at_cut_holder, cap_start_t, cap_stop_t, n_cap;
	uint32_t cap_start_src, cap_stop_src, end_reason;
	uint64_t end_samples;
	int bad;
} wfacts;

static wfacts read_window(const uint8_t *p, size_t n, uint64_t cut)
{
	wfacts f;
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open_mem(p, n, &err);
	gtt_record rec;
	memset(&f, 0, sizeof(f));
	f.first_sample = UINT64_MAX;
	while (r && (rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			f.bad++;
			continue;
		}
		switch (rec.tag) {
		case GTT_REC_SAMPLE:
			f.samples++;
			if (rec.u.sample.time_ns < f.first_sample)
				f.first_sample = rec.u.sample.time_ns;
			break;
		case GTT_REC_THREAD:
			f.threads_7 += rec.u.thread.tid == 7;
			f.threads_8 += rec.u.thread.tid == 8;
			f.threads_9 += rec.u.thread.tid == 9;
			break;
		case GTT_REC_META:
			f.metas_command += !strcmp(rec.u.meta.key, "command");
			if (!strcmp(rec.u.meta.key, "start_ns"))
				f.start_ns = strtoull(rec.u.meta.value, NULL, 10);
			if (!strcmp(rec.u.meta.key, "start_realtime_ns"))
				f.start_rt = strtoull(rec.u.meta.value, NULL, 10);
			if (!strcmp(rec.u.meta.key, "run_start_ns"))
				f.run_start = strtoull(rec.u.meta.value, NULL, 10);
			break;
		case GTT_REC_GIL:
			f.gil++;
			if (rec.u.gil.time_ns == cut)
				f.gil_at_cut_holder = rec.u.gil.holder_tid;
			break;
		case GTT_REC_HEALTH:
			f.lag += rec.u.health.kind == GTT_HEALTH_LAG_WINDOW;
			f.notes += rec.u.health.kind == GTT_HEALTH_NOTE;
			break;
		case GTT_REC_TICKS:
			f.ticks++;
			f.whole += (rec.u.ticks.flags & GTT_TICKS_WHOLE) != 0;
			break;
		case GTT_REC_CUDA_KERNEL: f.kernels++; break;
		case GTT_REC_MAPPING: f.mappings++; break;
		case GTT_REC_PROCESS: f.processes++; break;
		case GTT_REC_CAPTURE:
			f.n_cap++;
			if (rec.u.capture.event == GTT_CAPTURE_START) {
				f.cap_start_t = rec.u.capture.time_ns;
				f.cap_start_src = rec.u.capture.source;
			} else {
				f.cap_stop_t = rec.u.capture.time_ns;
				f.cap_stop_src = rec.u.capture.source;
			}
			break;
		case GTT_REC_END:
			f.end_reason = rec.u.end.reason;
			f.end_samples = rec.u.end.n_samples;
			break;
		}
	}
	gtt_reader_close(r);
	return f;
}

static void test_window_copy(void)
{
	seg a, b, out;
	seg_open(&a);
	w_meta(a.w, "start_ns", "100000000000");
	w_meta(a.w, "start_realtime_ns", "5000000000000");
	w_meta(a.w, "command", "prog");
	w_common(a.w, 100 * S, 100 * S);
	w_thread(a.w, 7, 100 * S, GTT_THREAD_START, "main");
	w_thread(a.w, 8, 101 * S, GTT_THREAD_START, "gone");
	w_thread(a.w, 8, 102 * S, GTT_THREAD_EXIT, "");
	w_sample(a.w, 101 * S);
	w_sample(a.w, 103 * S);
	w_sample(a.w, 105 * S);
	w_gil(a.w, 102 * S, 7);
	w_gil(a.w, 104 * S + S / 2, 0);
	w_health(a.w, 101 * S, 101 * S + S / 2, GTT_HEALTH_LAG_WINDOW, "");
	w_health(a.w, 105 * S, 105 * S + S / 5, GTT_HEALTH_LAG_WINDOW, "");
	w_health(a.w, 100 * S, 100 * S, GTT_HEALTH_NOTE, "n1");
	gtt_record t = { .tag = GTT_REC_TICKS };
	t.u.ticks.start_ns = 103 * S;
	t.u.ticks.end_ns = 104 * S - 1;
	t.u.ticks.source = 1;
	gtt_write(a.w, &t);
	t.u.ticks.start_ns = 104 * S;
	t.u.ticks.end_ns = 105 * S;
	gtt_write(a.w, &t);
	t.u.ticks.flags = GTT_TICKS_WHOLE;
	t.u.ticks.start_ns = 100 * S;
	gtt_write(a.w, &t);
	gtt_record k = { .tag = GTT_REC_CUDA_KERNEL };
	k.u.kernel.start_ns = 103 * S + S / 2;
	k.u.kernel.end_ns = 104 * S + S / 2;
	k.u.kernel.pid = 7;
	gtt_write(a.w, &k);
	seg_close(&a);
	/* the next segment, as a rotation starts it: definitions replayed with time 0 */
	seg_open(&b);
	w_meta(b.w, "command", "prog");
	w_meta(b.w, "start_ns", "106000000000");
	w_meta(b.w, "run_start_ns", "100000000000");
	w_common(b.w, 0, 0);
	w_thread(b.w, 7, 0, GTT_THREAD_START, "main");
	w_health(b.w, 100 * S, 100 * S, GTT_HEALTH_NOTE, "n1");
	w_sample(b.w, 107 * S);
	w_sample(b.w, 108 * S);
	w_thread(b.w, 9, 107 * S, GTT_THREAD_START, "new");
	seg_close(&b);

	seg_open(&out);
	const uint8_t *segs[2] = { a.p, b.p };
	size_t lens[2] = { a.n, b.n };
	rec_capture_iv iv = { 100 * S, 0, GTT_CAPTURE_RING, 0 };
	rec_ring_copy_in in = { segs, lens, 2, 104 * S, 109 * S, &iv, 1, NULL };
	rec_ring_copy_out co;
	int rc = rec_ring_copy_window(&in, out.w, &co);
	seg_close(&out);
	wfacts f = read_window(out.p, out.n, 104 * S);
	th_check(rc == 0 && f.bad == 0, "window: copied, and reads without an error");
	th_check(f.samples == 3 && co.n_samples == 3 && f.first_sample == 105 * S,
	         "window: the samples from the cut on (3: 105, 107, 108 s), counted for the END record");
	th_check(f.threads_7 == 1 && f.threads_9 == 1, "window: a thread defined in both segments is kept once, "
	         "a new one is kept");
	th_check(f.metas_command == 1 && f.processes == 1 && f.mappings == 1 && f.notes == 1,
	         "window: meta, process, mapping and note once each");
	th_check(f.start_ns == 104 * S && f.run_start == 100 * S && f.start_rt == 5004 * S,
	         "window: start_ns is the cut, start_realtime_ns moved with it, run_start_ns the recording's");
	th_check(f.gil == 2 && f.gil_at_cut_holder == 7, "window: the GIL state at the cut (holder 7), then its change");
	th_check(f.lag == 1 && f.ticks == 1 && f.whole == 0,
	         "window: lag windows and tick intervals before the cut left out, no whole-recording summary");
	th_check(f.kernels == 1, "window: a kernel running across the cut is kept");
	th_check(f.n_cap == 2 && f.cap_start_t == 104 * S && f.cap_start_src == GTT_CAPTURE_RING &&
	         f.cap_stop_t == 109 * S && f.cap_stop_src == GTT_CAPTURE_RING,
	         "window: capture records say it holds [cut, end] (source ring)");
	free(out.p);
	/* signal intervals clipped: one before the cut, one across it, one inside */
	seg_open(&out);
	rec_capture_iv ivs[3] = { { 100 * S, 102 * S, 1, 1 }, { 103 * S, 105 * S, 1, 1 }, { 107 * S, 0, 1, 0 } };
	rec_ring_copy_in in2 = { segs, lens, 2, 104 * S, 109 * S, ivs, 3, NULL };
	rc = rec_ring_copy_window(&in2, out.w, &co);
	seg_close(&out);
	int err = 0;
	gtt_reader *r = gtt_reader_open_mem(out.p, out.n, &err);
	gtt_record rec;
	char seq[256] = "";
	while (r && gtt_reader_next(r, &rec) > 0)
		if (rec.tag == GTT_REC_CAPTURE)
			snprintf(seq + strlen(seq), sizeof(seq) - strlen(seq), "%s%llu/%u/%u", seq[0] ? " " : "",
			         (unsigned long long)(rec.u.capture.time_ns / S), rec.u.capture.event, rec.u.capture.source);
	gtt_reader_close(r);
	th_check(rc == 0 && strcmp(seq, "104/1/5 105/2/1 107/1/1 109/2/5") == 0,
	         "window: captured intervals clipped to the window (%s)", seq);
	free(out.p);
	free(a.p);
	free(b.p);
}

/* ---- rotation, replay, SIGUSR2 windows and the final window, on real files ---- */

static void ring_tap(void *ctx, const gtt_record *rec)
{
	rec_ring_tap(ctx, rec);
}

static wfacts read_path(const char *path, uint64_t cut)
{
	FILE *f = fopen(path, "rb");
	wfacts w;
	memset(&w, 0, sizeof(w));
	w.bad = -1;
	if (!f)
		return w;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) == (size_t)n)
		w = read_window(p, (size_t)n, cut);
	free(p);
	fclose(f);
	return w;
}

static void test_rotation(void)
{
	char dir[] = "/tmp/gt-ring-XXXXXX", path[128], ring_path[160], dump[160], note[512], err[512], msg[1024];
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/t.gtt", dir);
	snprintf(ring_path, sizeof(ring_path), "%s/t.gtt.ring", dir);
	snprintf(dump, sizeof(dump), "%s/t.1.gtt", dir);
	int fd = open(path, O_CREAT | O_RDWR | O_EXCL | O_CLOEXEC, 0600), werr = 0;
	rec_ring *r = rec_ring_create(path, 1.0, fd, NULL, 1000 * S, note, sizeof(note), err, sizeof(err));
	th_check(r != NULL, "ring: created (%s)", r ? "" : err);
	if (!r)
		return;
	gtt_writer *w = gtt_writer_fdopen(dup(fd), 0, &werr);
	gtt_writer_set_tap(w, ring_tap, r);
	rec_ring_committed(r, 1);
	w_meta(w, "start_ns", "1000000000000");
	w_meta(w, "command", "prog");
	w_common(w, 1000 * S, 1000 * S);
	w_thread(w, 7, 1000 * S, GTT_THREAD_START, "main");
	for (int i = 1; i < 10; i++)
		w_sample(w, 1000 * S + (uint64_t)i * S / 10);
	rec_ring_poll(r, w, 1000 * S + S / 2, msg, sizeof(msg));
	th_check(access(ring_path, F_OK) != 0, "ring: no rotation before SECONDS");
	int rc = rec_ring_poll(r, w, 1001 * S, msg, sizeof(msg));
	th_check(rc == 0 && access(ring_path, F_OK) == 0, "ring: after SECONDS the next segment is PATH.ring (%s)", msg);
	wfacts s1 = read_path(path, 0);
	th_check(s1.bad == 0 && s1.samples == 9 && s1.threads_7 == 1, "ring: PATH holds the first segment, whole");
	w_thread(w, 8, 1001 * S + S / 2, GTT_THREAD_START, "worker");
	w_thread(w, 9, 1001 * S + S / 2, GTT_THREAD_START, "brief");
	w_thread(w, 9, 1001 * S + S / 2 + 1, GTT_THREAD_EXIT, "");
	for (int i = 1; i < 10; i++)
		w_sample(w, 1001 * S + (uint64_t)i * S / 10);
	rc = rec_ring_poll(r, w, 1002 * S, msg, sizeof(msg));
	wfacts s2 = read_path(path, 0);
	th_check(rc == 0 && s2.bad == 0 && s2.samples == 9 && s2.first_sample > 1001 * S,
	         "ring: at the next rotation PATH holds the second segment (the last complete window)");
	th_check(s2.threads_7 == 1 && s2.metas_command == 1 && s2.processes == 1 && s2.mappings == 1 &&
	         s2.start_ns == 1001 * S && s2.run_start == 1000 * S,
	         "ring: it stands alone: the definitions replayed, its start and the run's start in its meta");
	th_check(s2.n_cap == 1 && s2.cap_start_t == 1001 * S && s2.cap_start_src == GTT_CAPTURE_RING,
	         "ring: it says from when it holds data (a capture start, source ring)");
	for (int i = 1; i < 5; i++)
		w_sample(w, 1002 * S + (uint64_t)i * S / 10);
	/* SIGUSR2 at 1002.45 s: the window [1001.45, 1002.45] */
	gtt_writer *dw = rec_ring_dump_begin(r, w, 1002 * S + 45 * S / 100, err, sizeof(err));
	th_check(dw != NULL && rec_ring_dump_go(r) == 0, "ring: a SIGUSR2 window begun (%s)", dw ? "" : err);
	rec_ring_dump_wait(r, msg, sizeof(msg));
	wfacts d = read_path(dump, 1001 * S + 45 * S / 100);
	th_check(d.bad == 0 && d.samples == 5 + 4 && d.end_reason == GTT_END_SNAPSHOT && d.end_samples == 9,
	         "ring: the window went to PATH-stem.1.gtt: 9 samples, END says snapshot (%s)", msg);
	th_check(d.threads_8 == 1 && d.threads_7 == 1, "ring: with the threads of the window");
	uint64_t n_samples = 0;
	gtt_writer *fw = rec_ring_final_begin(r, w, 1002 * S + S / 2, &n_samples, err, sizeof(err));
	th_check(fw != NULL && n_samples == 9, "ring: the final window [1001.5, 1002.5] has 9 samples (%llu) %s",
	         (unsigned long long)n_samples, fw ? "" : err);
	gtt_writer_close(w);
	if (fw) {
		gtt_record e = { .tag = GTT_REC_END };
		e.u.end.reason = GTT_END_SIGNAL;
		e.u.end.n_samples = n_samples;
		gtt_write(fw, &e);
		th_check(rec_ring_final_commit(r, fw, err, sizeof(err)) == 0, "ring: final window committed");
	}
	wfacts f = read_path(path, 0);
	th_check(f.bad == 0 && f.samples == 9 && f.start_ns == 1001 * S + S / 2 && access(ring_path, F_OK) != 0,
	         "ring: PATH is the window, PATH.ring is gone");
	th_check(f.threads_8 == 1, "ring: a thread started in the window is defined once, with its start time");
	rec_ring_stats st;
	rec_ring_get_stats(r, &st);
	th_check(st.n_segments == 3 && st.n_dumps == 1, "ring: 3 segments, 1 dump");
	rec_ring_destroy(r);
	close(fd);
	unlink(path);
	unlink(dump);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "show") == 0)
		return show(argv[2]);
	if (argc > 1) {
		fprintf(stderr, "usage: test_rec_capture [show TRACE]\n");
		return 64;
	}
	test_sizes();
	test_delay();
	test_signals();
	test_nvtx();
	test_max_size();
	test_gate();
	test_window_copy();
	test_rotation();
	return th_report();
}
