/* session_job.c — what makes a recording one part of a job: clock pairs for merging, one
 * clock for perf and us inside a time namespace, and each process's rank and role. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "gt_util.h"
#include "session_priv.h"

#define CLOCK_PERIOD_NS (10 * GT_NS_PER_SEC) /* periodic pairs: drift and realtime steps show */

void rec_sess_job_start(sess *s)
{
	rec_clock_offset *c = &s->clk;
	char text[256];

	rec_clock_perf_offset(c);
	rec_sess_meta(s, "clock_perf_offset_ns", "%" PRId64, c->offset_ns);
	if (c->have_timens)
		rec_sess_meta(s, "timens_monotonic_offset_ns", "%" PRId64, c->timens_ns);
	if (c->have_measured && !c->agree) {
		snprintf(text, sizeof(text),
		         "clock: perf's timestamps differ from CLOCK_MONOTONIC by %" PRId64 " ns (+- %" PRIu64
		         " ns), not the time namespace's %" PRId64 " ns; using the measured offset",
		         c->measured_ns, c->uncertainty_ns, c->have_timens ? c->timens_ns : 0);
		rec_sess_note(s, GTT_SRC_PERF, text);
	}
	if (!(s->ids = rec_procid_create()))
		rec_sess_note(s, GTT_SRC_WRITER, "out of memory: process identities (rank, role) are not recorded");
	if (rec_clock_write(s->w, GTT_CLOCK_START) < 0)
		s->write_rc = -EIO;
	s->clock_next_ns = gtt_now_ns() + CLOCK_PERIOD_NS;
}

void rec_sess_job_sampler(sess *s)
{
	rec_perf_set_clock_offset(s->perf, s->clk.offset_ns);
}

static int agent_clock(void *ctx, uint32_t pid, int64_t *shift_ns)
{
	sess *s = ctx;
	return rec_procid_clock_shift(s->ids, pid, shift_ns);
}

void rec_sess_job_cuda(sess *s)
{
	rec_cuda_set_clock(s->cuda, agent_clock, s);
}

void rec_sess_job_step(sess *s, uint64_t now)
{
	if (now < s->clock_next_ns)
		return;
	s->clock_next_ns = now + CLOCK_PERIOD_NS;
	if (rec_clock_write(s->w, GTT_CLOCK_PERIODIC) < 0 && s->write_rc == 0)
		s->write_rc = -EIO;
}

void rec_sess_job_finish(sess *s)
{
	if (s->write_rc == 0 && rec_clock_write(s->w, GTT_CLOCK_END) < 0)
		s->write_rc = -EIO;
	rec_procid_destroy(s->ids);
	s->ids = NULL;
}

void rec_sess_job_observe(sess *s, const gtt_record *r)
{
	if (r->tag == GTT_REC_PROCESS && rec_procid_observe(s->ids, s->w, r) == -EIO && s->write_rc == 0)
		s->write_rc = -EIO;
}
