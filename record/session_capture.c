/* session_capture.c — capture control in the recording flow: the rule turned into perf
 * ioctls, the ticker gate and capture records in the drain loop; the ring's rotation, its
 * SIGUSR2 windows and its final window; what the summary says about it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gt_util.h"
#include "rec_err.h"
#include "session_priv.h"

#define NVTX_MERGE_NS (100 * GT_NS_PER_MS) /* nvtx capture: the agent's side files are read this often */

static int has_capture(const rec_opts *o)
{
	const rec_capture_opts *c = &o->capture;
	return c->delay_s > 0 || c->range != REC_CAP_ALWAYS || c->ring_s > 0 || c->max_size;
}

/* Every record written, under the writer's lock. */
static void tap(void *ctx, const gtt_record *rec)
{
	sess *s = ctx;
	rec_capture_observe(s->cap, rec);
	rec_ring_tap(s->ring, rec);
}

int rec_sess_capture_open(sess *s)
{
	char err[PATH_MAX + 200];

	if (!has_capture(s->o))
		return 0;
	if (!(s->cap = rec_capture_create(&s->o->capture, gtt_now_ns()))) {
		rec_sess_say("out of memory");
		return GT_EXIT_BROKEN;
	}
	if (s->o->capture.ring_s > 0) {
		s->ring = rec_ring_create(s->o->output, s->o->capture.ring_s, rec_out_fd(s->out), s->cap, gtt_now_ns(),
		                          s->ring_note, sizeof(s->ring_note), err, sizeof(err));
		if (!s->ring) {
			rec_sess_say("%s", err);
			return GT_EXIT_BROKEN;
		}
	}
	gtt_writer_set_tap(s->w, tap, s);
	return 0;
}

void rec_sess_capture_meta(sess *s)
{
	char rule[512];

	if (!s->cap)
		return;
	rec_capture_rule(s->cap, rule, sizeof(rule));
	rec_sess_meta(s, "capture", "%s", rule);
	if (s->o->capture.ring_s > 0)
		rec_sess_meta(s, "ring_seconds", "%g", s->o->capture.ring_s);
	if (s->o->capture.max_size)
		rec_sess_meta(s, "max_size_bytes", "%llu", (unsigned long long)s->o->capture.max_size);
}

int rec_sess_capture_need_agent(sess *s, const char *why)
{
	if (s->o->capture.range != REC_CAP_NVTX)
		return 0;
	rec_sess_say("--capture-range=nvtx:%s needs the CUDA agent, which learns of the NVTX ranges: %s",
	             s->o->capture.nvtx_name, why && why[0] ? why : "it is not there");
	return GT_EXIT_BROKEN;
}

int rec_sess_capture_agent_rule(sess *s)
{
	char err[400] = "";

	/* Without --capture-range=nvtx the agent keeps what the environment says (GT_CUPTI_CAPTURE_NVTX:
	 * the agent-level control documented in docs/CUDA.md). */
	if (!s->cuda || s->o->capture.range != REC_CAP_NVTX)
		return 0;
	if (rec_cuda_capture_nvtx(s->cuda, s->o->capture.nvtx_name, err, sizeof(err)) != 0) {
		rec_sess_say("%s", err);
		return GT_EXIT_BROKEN;
	}
	return 0;
}

/* Switch sampling and everything that follows it: the perf events, the side loops (gate),
 * the drain schedule's accounting, the capture record. */
static int apply(sess *s, uint64_t now, int on, uint32_t source)
{
	/* a start is dated before its ioctls (an event may sample as soon as it is enabled), a stop
	 * after them (one may sample until it is disabled): every sample lies inside the interval */
	uint64_t before = gtt_now_ns();
	if (rec_capture_switchable(s->cap)) {
		if (on) {
			rec_perf_sampling(s->perf, 1);
			rec_sess_gate_sampling(s, gtt_now_ns());
			rec_ticker_resume(s->drain, now);
			rec_ticker_gate_open();
		} else {
			rec_perf_sampling(s->perf, 0);
			rec_ticker_pause(s->drain, now);
			rec_ticker_gate_close();
		}
	}
	now = on ? before : gtt_now_ns();
	/* the switches a user caused (a signal) or waited for (the delay) are said; NVTX ranges
	 * come too often for that (the summary counts them) */
	if (!s->o->quiet && (source == GTT_CAPTURE_SIGNAL || source == GTT_CAPTURE_DELAY)) {
		if (s->tty)
			fprintf(stderr, "\r\033[K");
		rec_sess_say("sampling %s at +%.3f s (%s)", on ? "started" : "stopped", gt_ns_to_s(now - s->start_ns),
		             source == GTT_CAPTURE_DELAY ? "--delay" : on ? "SIGUSR1" : "SIGUSR2");
	}
	return rec_capture_switched(s->cap, s->w, now, on, source);
}

void rec_sess_capture_begin(sess *s)
{
	uint64_t now = gtt_now_ns();

	if (!s->cap)
		return;
	rec_ticker_set_gated(s->drain, 0); /* the drain loop runs on: it reads the tracking events */
	/* off from the recording's start (its meta start_ns): nothing was captured before */
	rec_capture_begin(s->cap, s->w, s->start_ns ? s->start_ns : now);
	if (!rec_capture_is_on(s->cap)) {
		rec_ticker_pause(s->drain, now);
		rec_ticker_gate_close();
	}
}

uint64_t rec_sess_capture_wait(sess *s)
{
	uint64_t period, now;
	struct timespec ts;

	if (rec_capture_is_on(s->cap))
		return rec_ticker_wait(s->drain);
	/* not sampling: nothing is due, one period of sleep */
	period = gt_hz_to_period_ns(s->o->drain_hz > 0 ? s->o->drain_hz : 40);
	ts.tv_sec = (time_t)(period / GT_NS_PER_SEC);
	ts.tv_nsec = (long)(period % GT_NS_PER_SEC);
	nanosleep(&ts, NULL);
	now = gtt_now_ns();
	return now;
}

/* The trace's size as it will be on disk: the file, plus what is buffered at the compression
 * ratio so far; *pending gets the raw bytes not yet compressed. */
static uint64_t trace_bytes(sess *s, uint64_t *pending)
{
	gtt_writer_stats st;
	uint64_t total = gtt_writer_bytes(s->w), raw_done;
	double ratio = 1.0;

	gtt_writer_get_stats(s->w, &st);
	raw_done = st.raw_bytes - st.pending_bytes;
	if (raw_done > 0 && st.packed_bytes > 0)
		ratio = (double)st.packed_bytes / (double)raw_done;
	if (ratio > 1.0)
		ratio = 1.0;
	*pending = st.pending_bytes;
	return total - st.pending_bytes + (uint64_t)((double)st.pending_bytes * ratio);
}

/* --max-size: the size the trace will have one drain period from now (its size now plus the
 * growth of the last period), so that it stops before SIZE rather than a period past it. The
 * estimate is made exact by a flush when it says the size is reached (early on, before any
 * block was compressed, it counts raw bytes: DWARF stacks shrink 10-40x). */
static uint64_t size_for_limit(sess *s)
{
	uint64_t pending = 0, est, grown;

	if (!s->o->capture.max_size)
		return 0;
	est = trace_bytes(s, &pending);
	grown = est > s->size_last ? est - s->size_last : 0;
	if (est + grown >= s->o->capture.max_size && pending > 0 && gtt_writer_flush(s->w) == 0) {
		est = trace_bytes(s, &pending);
		grown = est > s->size_last ? est - s->size_last : 0;
	}
	s->size_last = est;
	return est + grown;
}

static void fmt_size(uint64_t n, char *buf, size_t len)
{
	if (n >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)n / (double)(1ull << 30));
	else if (n >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, len, "%.0f KiB", (double)n / 1024);
}

/* SIGUSR2 in ring mode: the window so far into the next dump file, its archive first (here:
 * the archive is the session's), the records copied on the ring's thread. */
static void ring_dump(sess *s, uint64_t now)
{
	char err[PATH_MAX + 200];
	rec_archive_stats as;
	gtt_writer *dw = rec_ring_dump_begin(s->ring, s->w, now, err, sizeof(err));

	if (!dw) {
		rec_sess_say("%s", err);
		return;
	}
	if (!s->o->no_archive)
		rec_archive_write(s->arch, dw, &as);
	if (rec_ring_dump_go(s->ring) < 0)
		rec_sess_say("SIGUSR2: cannot start writing the window");
}

int rec_sess_capture_step(sess *s, uint64_t now)
{
	rec_capture_action a;
	char msg[PATH_MAX * 2 + 300];
	int rc;

	if (!s->cap)
		return 0;
	/* nvtx: gt-record learns of the ranges from the agent's side files; read them often */
	if (s->o->capture.range == REC_CAP_NVTX && s->cuda && now >= s->merge_ns + NVTX_MERGE_NS) {
		s->merge_ns = now;
		rec_cuda_merge(s->cuda, s->w);
	}
	rec_capture_poll(s->cap, now, size_for_limit(s), &a);
	if ((a.start || a.stop) && apply(s, now, a.start, a.source) < 0) {
		s->write_rc = -EIO;
		s->end_reason = GTT_END_ERROR;
		return -1;
	}
	if (a.end) {
		char want[32], got[32];
		fmt_size(s->o->capture.max_size, want, sizeof(want));
		uint64_t pending;
		fmt_size(trace_bytes(s, &pending), got, sizeof(got));
		if (!s->o->quiet) {
			if (s->tty)
				fprintf(stderr, "\r\033[K");
			rec_sess_say("the trace reached --max-size %s with what the next %.0f ms would add (it is %s): "
			             "recording stopped", want, 1e3 / (s->o->drain_hz > 0 ? s->o->drain_hz : 40), got);
		}
		s->end_reason = GTT_END_MAX_SIZE;
		s->capture_ended = 1;
		return 1;
	}
	if (!s->ring)
		return 0;
	if (a.dump)
		ring_dump(s, now);
	rc = rec_ring_poll(s->ring, s->w, now, msg, sizeof(msg));
	if (msg[0] && (!s->o->quiet || rc < 0)) {
		if (s->tty)
			fprintf(stderr, "\r\033[K");
		rec_sess_say("%s", msg);
	}
	if (rc < 0) {
		s->write_rc = rc == -EIO ? -EIO : rc;
		s->end_reason = GTT_END_ERROR;
		return -1;
	}
	return 0;
}

void rec_sess_capture_release(sess *s)
{
	if (rec_capture_switchable(s->cap))
		rec_ticker_gate_open();
}

int rec_sess_capture_ring_final(sess *s, uint64_t end_ns)
{
	char err[PATH_MAX * 2 + 200];
	gtt_writer *fw;

	if (rec_ring_dump_wait(s->ring, err, sizeof(err)) && err[0] && !s->o->quiet)
		rec_sess_say("%s", err);
	if (s->tty && !s->o->quiet)
		fprintf(stderr, "\r\033[Kgt-record: writing the ring's window...");
	fw = rec_ring_final_begin(s->ring, s->w, end_ns, &s->end_samples, err, sizeof(err));
	if (!fw) {
		if (s->tty && !s->o->quiet)
			fprintf(stderr, "\r\033[K");
		rec_sess_say("--ring: %s; the segments stay: %s (the last complete window) and %s.ring", err,
		             s->o->output, s->o->output);
		return -1;
	}
	/* the last segment is whole (its index written); the window takes over */
	if (gtt_writer_close(s->w) < 0)
		rec_sess_note(s, GTT_SRC_WRITER, "the ring's last segment did not close cleanly");
	s->w = fw;
	s->have_end_samples = 1;
	return 0;
}

void rec_sess_capture_ring_commit(sess *s)
{
	char err[PATH_MAX * 2 + 200];
	rec_ring_stats st;

	if (!s->ring)
		return;
	rec_ring_get_stats(s->ring, &st);
	if (!st.window_end_ns)
		return; /* no final window (a write error): the segments are the result */
	if (rec_ring_final_commit(s->ring, s->w, err, sizeof(err)) < 0) {
		rec_sess_say("--ring: %s", err);
		s->write_rc = -EIO;
	}
	s->w = NULL;
}

void rec_sess_capture_summary(sess *s, uint64_t end_ns)
{
	uint32_t n = 0;
	uint64_t cap_ns;
	rec_ring_stats st;

	if (!s->cap || s->o->quiet)
		return;
	if (s->ring_note[0])
		rec_sess_say("%s", s->ring_note);
	if (s->ring) {
		rec_ring_get_stats(s->ring, &st);
		if (st.window_end_ns)
			rec_sess_say("ring: the last %.1f s of %.1f s kept in %s (%llu samples; %u segments%s)",
			             gt_ns_to_s(st.window_end_ns - st.window_start_ns), gt_ns_to_s(end_ns - s->start_ns),
			             s->o->output, (unsigned long long)s->end_samples, st.n_segments,
			             st.n_dumps ? ", windows written on SIGUSR2 too" : "");
	}
	if (rec_capture_switchable(s->cap)) {
		cap_ns = rec_capture_captured_ns(s->cap, end_ns, &n);
		rec_sess_say("captured %.2f s of %.2f s in %u interval%s%s", gt_ns_to_s(cap_ns),
		             gt_ns_to_s(end_ns - s->start_ns), n, n == 1 ? "" : "s",
		             n ? "" : " (sampling never started)");
	}
}

void rec_sess_capture_close(sess *s)
{
	rec_ring_destroy(s->ring);
	s->ring = NULL;
	rec_capture_destroy(s->cap);
	s->cap = NULL;
}
