/* session_gate.c — the switch gate in the recording flow (--switch-events, swgate.h): the meta
 * key, the first gate record, one decision per drain turned into closing or opening the switch
 * events and a `switch_gate` record, and what the summary says of it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gt_util.h"
#include "session_priv.h"

static int write_gate(sess *s, uint64_t t, uint32_t event, uint32_t reason, uint64_t rate, uint64_t limit)
{
	gtt_record r = { .tag = GTT_REC_SWITCH_GATE };
	r.u.gate = (gtt_switch_gate){ t, event, reason, rate, limit, (uint32_t)s->target };
	return gtt_write(s->w, &r) < 0 ? -1 : 0;
}

/* A rate for people: "112 000". */
static void fmt_rate(uint64_t v, char *buf, size_t len)
{
	if (v >= 1000)
		snprintf(buf, len, "%llu %03llu", (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

void rec_sess_gate_start(sess *s)
{
	const rec_opts *o = s->o;

	if (o->switches == REC_SW_OFF) {
		rec_sess_meta(s, "switch_events", "off");
		return;
	}
	if (!rec_perf_switch_gateable(s->perf)) {
		/* per task: every switch (auto needs the per-CPU switch events of a system-wide
		 * recording; per-task events pay at every switch whatever is recorded) */
		rec_sess_meta(s, "switch_events", "on");
		return;
	}
	rec_swgate_opts go = { .limit_per_cpu = o->switch_limit ? o->switch_limit : REC_SWGATE_LIMIT,
	                       .sample_hz = o->freq_hz };
	if (!(s->gate = rec_swgate_create(&go, s->start_ns))) {
		rec_sess_note(s, GTT_SRC_PERF, "switch gate: out of memory; every context switch is recorded");
		rec_sess_meta(s, "switch_events", "on");
		return;
	}
	rec_sess_meta(s, "switch_events", "auto,%llu", (unsigned long long)go.limit_per_cpu);
	if (write_gate(s, s->start_ns, GTT_GATE_OPEN, GTT_GATE_START, 0, 0) < 0)
		s->write_rc = -EIO;
}

/* The first close is said on stderr: the user should know the timeline's gaps are sampled. */
static void say_first_close(sess *s, uint64_t t, const rec_swgate_move *mv)
{
	char rate[32], lim[32];
	if (s->o->quiet || s->gate_said)
		return;
	s->gate_said = 1;
	fmt_rate(mv->rate_per_s, rate, sizeof(rate));
	fmt_rate(s->o->switch_limit ? s->o->switch_limit : REC_SWGATE_LIMIT, lim, sizeof(lim));
	if (s->tty)
		fprintf(stderr, "\r\033[K");
	rec_sess_say("%s context switches a second at +%.3f s, over the limit of %s per busy CPU: recording "
	             "them 0.2 s in every 4 s (on-CPU time from /proc; --switch-events=on keeps every one)",
	             rate, gt_ns_to_s(t - s->start_ns), lim);
}

/* The switch events would not open again (file descriptors, memory, a CPU gone): the switches
 * stay off, and the trace says so with the gate closed for good. */
static void gate_failed(sess *s, uint64_t t, int rc)
{
	char text[200];

	snprintf(text, sizeof(text), "switch gate: the context-switch events could not be opened again (%s); "
	         "no switch is recorded from here", strerror(-rc));
	rec_sess_note(s, GTT_SRC_PERF, text);
	if (write_gate(s, t, GTT_GATE_CLOSED, GTT_GATE_FAILED, 0, 0) < 0)
		s->write_rc = -EIO;
	rec_swgate_destroy(s->gate);
	s->gate = NULL;
}

void rec_sess_gate_sampling(sess *s, uint64_t now)
{
	int rc = rec_perf_take_switch_error(s->perf);

	if (rc < 0 && s->gate)
		gate_failed(s, now, rc);
}

void rec_sess_gate_step(sess *s, uint64_t now)
{
	rec_perf_stats st;
	rec_swgate_move mv;
	uint64_t t = now;
	int rc;

	if (!s->gate)
		return;
	rec_perf_get_stats(s->perf, &st);
	rec_swgate_counts c = { st.switch_outs, st.samples, rec_perf_decoded_to(s->perf) };
	if (!rec_swgate_step(s->gate, now, &c, &mv))
		return;
	if (mv.event == GTT_GATE_CLOSED || mv.reason != GTT_GATE_UNDER) {
		rc = rec_perf_switches(s->perf, mv.event == GTT_GATE_OPEN, &t);
		if (rc < 0) {
			gate_failed(s, t, rc);
			return;
		}
	}
	if (mv.event == GTT_GATE_OPEN && mv.reason == GTT_GATE_WINDOW)
		rec_swgate_opened(s->gate, t, &c); /* the window counts from when it was open */
	if (write_gate(s, t, mv.event, mv.reason, mv.rate_per_s, mv.limit_per_s) < 0)
		s->write_rc = -EIO;
	if (mv.event == GTT_GATE_CLOSED && mv.reason == GTT_GATE_OVER)
		say_first_close(s, t, &mv);
}

void rec_sess_gate_summary(sess *s, uint64_t end_ns)
{
	rec_swgate_stats gs;
	char rate[32];

	if (!s->gate)
		return;
	rec_swgate_get_stats(s->gate, end_ns, &gs);
	if (!s->o->quiet && gs.closes) {
		fmt_rate(gs.max_rate_per_s, rate, sizeof(rate));
		if (rec_capture_switchable(s->cap)) /* the gate's time is not the captured time */
			rec_sess_say("context switches recorded only in windows while sampling (up to %s a second; on-CPU "
			             "time from /proc)", rate);
		else
			rec_sess_say("context switches recorded %.1f %% of the time (up to %s a second; on-CPU time from /proc)",
			             end_ns > s->start_ns ? 100.0 * (double)gs.open_ns / (double)(end_ns - s->start_ns) : 0.0,
			             rate);
	}
}

void rec_sess_gate_close(sess *s)
{
	rec_swgate_destroy(s->gate);
	s->gate = NULL;
}
