/* test_switch_gate_rec.c — the switch gate record (tag 33): round trip of every field through a
 * 1.0 and a 1.1 (packed) trace, its place in the definitions stream, its time for the chunk
 * index and for a clock shift, and payloads cut short. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "memtrace.h"
#include "testhelp.h"

typedef struct gates { gtt_switch_gate v[4]; int n; } gates;

static void keep_gate(void *ctx, const gtt_record *r)
{
	gates *g = ctx;
	if (g->n < 4)
		g->v[g->n++] = r->u.gate;
}

/* Write recs to a trace of the given minor version and read every gate record back into out. */
static int roundtrip(uint32_t minor, const gtt_record *recs, int n, gtt_switch_gate *out, int cap)
{
	gates g = { .n = 0 };
	int got = memtrace_roundtrip(minor, recs, n, GTT_REC_SWITCH_GATE, keep_gate, &g);
	for (int i = 0; i < g.n && i < cap; i++)
		out[i] = g.v[i];
	return got;
}

int main(void)
{
	gtt_record recs[3] = { { .tag = GTT_REC_SWITCH_GATE }, { .tag = GTT_REC_SWITCH }, { .tag = GTT_REC_SWITCH_GATE } };
	recs[0].u.gate = (gtt_switch_gate){ .time_ns = 1000000123, .event = GTT_GATE_CLOSED, .reason = GTT_GATE_OVER,
	                                    .rate_per_s = 112345, .limit_per_s = 10000 };
	recs[1].u.sw = (gtt_switch){ .time_ns = 1000000500, .pid = 7, .tid = 8, .cpu = 1, .kind = GTT_SWITCH_IN };
	recs[2].u.gate = (gtt_switch_gate){ .time_ns = 5000000456, .event = GTT_GATE_OPEN, .reason = GTT_GATE_WINDOW,
	                                    .rate_per_s = 0, .limit_per_s = 20000, .pid = 4242 };
	th_check(strcmp(gtt_tag_name(GTT_REC_SWITCH_GATE), "switch_gate") == 0, "tag 33 is named switch_gate");
	for (uint32_t minor = 0; minor <= 1; minor++) {
		gtt_switch_gate g[4];
		int n = roundtrip(minor, recs, 3, g, 4);
		th_check(n == 2, "1.%u: both gate records come back (%d)", minor, n);
		if (n == 2) {
			th_check(g[0].time_ns == 1000000123 && g[0].event == GTT_GATE_CLOSED && g[0].reason == GTT_GATE_OVER &&
			         g[0].rate_per_s == 112345 && g[0].limit_per_s == 10000, "1.%u: closed: every field as written", minor);
			th_check(g[1].time_ns == 5000000456 && g[1].event == GTT_GATE_OPEN && g[1].reason == GTT_GATE_WINDOW &&
			         g[1].rate_per_s == 0 && g[1].limit_per_s == 20000 && g[1].pid == 4242 && g[0].pid == 0,
			         "1.%u: open: every field as written", minor);
		}
	}
	th_check(gtt_is_defs_tag(GTT_REC_SWITCH_GATE), "gate records go into the definitions stream (read by every window)");
	uint64_t t0 = 0, t1 = 0;
	th_check(gtt_rec_times(&recs[2], &t0, &t1) == 1 && t0 == 5000000456 && t1 == t0,
	         "the chunk index knows a gate record's time");
	gtt_record moved = recs[0];
	gtt_rec_shift(&moved, -123);
	th_check(moved.u.gate.time_ns == 1000000000 && moved.u.gate.rate_per_s == 112345,
	         "a clock shift moves the time and nothing else");

	/* the 1.0 payload: u64 time, u32 event, u32 reason, u64 rate_per_s, u64 limit_per_s, u32 pid */
	enc e = { 0 };
	th_check(gtt_encode(&e, &recs[0]) == 0 && e.n == 8 + 4 + 4 + 8 + 8 + 4,
	         "payload is %zu bytes, as docs/FORMAT.md lays it out", e.n);
	void *scratch = NULL;
	size_t cap = 0;
	gtt_record d;
	int all_bad = 1;
	for (size_t cut = 0; cut < e.n - 4; cut++)
		all_bad &= gtt_decode(GTT_REC_SWITCH_GATE, e.p, (uint32_t)cut, &d, &scratch, &cap) != 0;
	th_check(all_bad, "every payload cut short of limit_per_s is refused");
	th_check(gtt_decode(GTT_REC_SWITCH_GATE, e.p, (uint32_t)e.n - 4, &d, &scratch, &cap) == 0 && d.u.gate.pid == 0 &&
	         d.u.gate.limit_per_s == 10000, "a payload without pid (its first form) decodes, pid 0");
	th_check(gtt_decode(GTT_REC_SWITCH_GATE, e.p, (uint32_t)e.n, &d, &scratch, &cap) == 0 &&
	         d.u.gate.rate_per_s == 112345, "the whole payload decodes");
	free(e.p);
	free(scratch);
	return th_report();
}
