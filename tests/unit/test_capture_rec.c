/* test_capture_rec.c — the capture record (tag 32): round trip of every field through a 1.0 and a
 * 1.1 (packed) trace, its place in the definitions stream, its time for the chunk index, and
 * payloads cut short. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "memtrace.h"
#include "testhelp.h"

typedef struct caps { gtt_capture *out; char (*names)[64]; int n, cap; } caps;

static void keep_capture(void *ctx, const gtt_record *r)
{
	caps *c = ctx;
	if (c->n >= c->cap)
		return;
	c->out[c->n] = r->u.capture;
	snprintf(c->names[c->n], 64, "%s", r->u.capture.name);
	c->out[c->n].name = c->names[c->n];
	c->n++;
}

/* Write recs to a trace of the given minor version and read every capture record back into out. */
static int roundtrip(uint32_t minor, const gtt_record *recs, int n, gtt_capture *out, char names[][64], int cap)
{
	caps c = { out, names, 0, cap };
	return memtrace_roundtrip(minor, recs, n, GTT_REC_CAPTURE, keep_capture, &c);
}

int main(void)
{
	gtt_record recs[3] = { { .tag = GTT_REC_CAPTURE }, { .tag = GTT_REC_COUNTER }, { .tag = GTT_REC_CAPTURE } };
	recs[0].u.capture = (gtt_capture){ .time_ns = 1000000123, .pid = 77, .tid = 78, .event = GTT_CAPTURE_START,
	                                   .source = GTT_CAPTURE_NVTX, .name = "train_step" };
	recs[1].u.counter = (gtt_counter){ .time_ns = 1000000500, .pid = 77, .name_id = 1, .value = 3 };
	recs[2].u.capture = (gtt_capture){ .time_ns = 2000000456, .pid = 77, .tid = 79, .event = GTT_CAPTURE_STOP,
	                                   .source = GTT_CAPTURE_NVTX, .name = "train_step@mydomain" };
	th_check(strcmp(gtt_tag_name(GTT_REC_CAPTURE), "capture") == 0, "tag 32 is named capture");
	for (uint32_t minor = 0; minor <= 1; minor++) {
		gtt_capture c[4];
		char names[4][64];
		int n = roundtrip(minor, recs, 3, c, names, 4);
		th_check(n == 2, "1.%u: both capture records come back (%d)", minor, n);
		if (n == 2) {
			th_check(c[0].time_ns == 1000000123 && c[0].pid == 77 && c[0].tid == 78 && c[0].event == GTT_CAPTURE_START &&
			         c[0].source == GTT_CAPTURE_NVTX && strcmp(c[0].name, "train_step") == 0,
			         "1.%u: start: every field as written", minor);
			th_check(c[1].time_ns == 2000000456 && c[1].tid == 79 && c[1].event == GTT_CAPTURE_STOP &&
			         strcmp(c[1].name, "train_step@mydomain") == 0, "1.%u: stop: every field as written", minor);
		}
	}
	th_check(gtt_is_defs_tag(GTT_REC_CAPTURE), "capture records go into the definitions stream (read by every window)");
	uint64_t t0 = 0, t1 = 0;
	th_check(gtt_rec_times(&recs[2], &t0, &t1) == 1 && t0 == 2000000456 && t1 == t0,
	         "the chunk index knows a capture record's time");

	/* the 1.0 payload: u64 time, u32 pid, u32 tid, u32 event, u32 source, str name */
	enc e = { 0 };
	th_check(gtt_encode(&e, &recs[0]) == 0 && e.n == 8 + 4 * 4 + 4 + 10,
	         "payload is %zu bytes, as docs/FORMAT.md lays it out", e.n);
	void *scratch = NULL;
	size_t cap = 0;
	gtt_record d;
	int all_bad = 1;
	for (size_t cut = 0; cut < e.n; cut++)
		all_bad &= gtt_decode(GTT_REC_CAPTURE, e.p, (uint32_t)cut, &d, &scratch, &cap) != 0;
	th_check(all_bad, "every cut-short payload is refused");
	th_check(gtt_decode(GTT_REC_CAPTURE, e.p, (uint32_t)e.n, &d, &scratch, &cap) == 0 &&
	         strcmp(d.u.capture.name, "train_step") == 0, "the whole payload decodes");
	free(e.p);
	free(scratch);
	return th_report();
}
