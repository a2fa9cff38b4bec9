/* load_launch.c — fold --weight gpu-time's read of the CUDA records (ana_opts.stream_cuda =
 * ANA_STREAM_CUDA_LAUNCHES): once the launch stacks are made, the work, sync and API records are
 * read again and fed to the launch accumulator (launch.h) with those stacks, in the order
 * ana_launches_build gives them (time, then API < stack < kernel < copy < memset < sync, then file
 * order), through the GPU sweep's reorder queue (gpu_queue.c) bounded by the chunk index's
 * horizon: no record is kept, only launch groups, sites and the calls of the last
 * ANA_LAUNCH_WINDOW_NS. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_sum.h"
#include "gpu_sum_priv.h"
#include "load_priv.h"
#include "window.h"

typedef struct lread {
	const ana_model *m;
	ana_launch_acc *acc;
	gs_queue q;
	size_t *order;           /* m->callstacks by (time, index) */
	size_t next_stack;
	uint64_t seq, max_t, now, n_late, peak;
} lread;

static int cmp_stack_time(const void *x, const void *y, void *ctx)
{
	const ana_model *m = ctx;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	uint64_t a = m->callstacks.v[i].time_ns, b = m->callstacks.v[j].time_ns;
	if (a != b)
		return a < b ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* Launch stacks up to t (at t itself only when inclusive: before work, after API calls). */
static int feed_stacks(lread *R, uint64_t t, int inclusive)
{
	const ana_model *m = R->m;
	while (R->next_stack < m->callstacks.n) {
		const ana_callstack *cs = &m->callstacks.v[R->order[R->next_stack]];
		if (cs->time_ns > t || (!inclusive && cs->time_ns == t))
			break;
		int rc = ana_launch_acc_stack(R->acc, cs);
		if (rc < 0)
			return rc;
		R->next_stack++;
	}
	return 0;
}

static int feed_event(lread *R, const gs_ev *e)
{
	switch (e->type) {
	case GS_API: return ana_launch_acc_api(R->acc, &e->u.a);
	case GS_KERNEL:
		return ana_launch_acc_work(R->acc, ANA_WORK_KERNEL, e->u.k.pid, e->u.k.correlation, e->u.k.name_id,
		                           e->u.k.start_ns, e->u.k.end_ns);
	case GS_COPY:
		return ana_launch_acc_work(R->acc, ANA_WORK_COPY, e->u.c.pid, e->u.c.correlation,
		                           e->u.c.kind <= 5 ? e->u.c.kind : 0, e->u.c.start_ns, e->u.c.end_ns);
	case GS_MEMSET:
		return ana_launch_acc_work(R->acc, ANA_WORK_MEMSET, e->u.s.pid, e->u.s.correlation, 0, e->u.s.start_ns,
		                           e->u.s.end_ns);
	default:
		return ana_launch_acc_work(R->acc, ANA_WORK_SYNC, e->u.y.pid, e->u.y.correlation, 0, e->u.y.start_ns,
		                           e->u.y.end_ns);
	}
}

/* Every queued record before w (all at UINT64_MAX, then the stacks left), in order. */
static int release(lread *R, uint64_t w)
{
	gs_ev ev;
	int rc = gs_queue_release(&R->q, w);
	while (rc == 0 && (rc = gs_queue_next(&R->q, w, &ev)) > 0) {
		if (ev.t < R->now)
			R->n_late++; /* behind what the index promised (a hand-made file): joined where it came */
		else
			R->now = ev.t;
		if ((rc = feed_stacks(R, ev.t, ev.type > GS_STACK)) == 0)
			rc = feed_event(R, &ev);
	}
	if (rc == 0 && w == UINT64_MAX)
		rc = feed_stacks(R, UINT64_MAX, 1);
	return rc;
}

/* (load_priv.h) */
int ana_load_launches(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	uint64_t horizon = ana_load_horizon(L);
	lread R = { .m = m };
	gtt_record rec;
	int rc = GTT_ENOMEM;
	size_t ns = m->callstacks.n;
	if (!m->gpu || !(R.acc = ana_launch_acc_new()) || gs_queue_init(&R.q, horizon) < 0 ||
	    !(R.order = malloc((ns ? ns : 1) * sizeof(*R.order))))
		goto out;
	for (size_t i = 0; i < ns; i++)
		R.order[i] = i;
	qsort_r(R.order, ns, sizeof(*R.order), cmp_stack_time, m);
	rc = 0;
	/* a trace without CUDA work, syncs or API calls is not read again */
	if (L->n_streamed) {
		gtt_reader_rewind(L->r); /* the window, if any, stays */
		gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY) |
		                      GTT_KIND_BIT(GTT_REC_CUDA_MEMSET) | GTT_KIND_BIT(GTT_REC_CUDA_SYNC) |
		                      GTT_KIND_BIT(GTT_REC_CUDA_API));
		for (;;) {
			int n = gtt_reader_next(L->r, &rec);
			if (n == 0 || (n < 0 && n != GTT_ECORRUPT && n != GTT_EINVAL))
				break; /* pass 1 met the same end or error and said so */
			gs_ev ev;
			if (n < 0 || !ana_window_keep(&m->window, &rec) || !gs_ev_of(&rec, &ev))
				continue;
			ev.seq = R.seq++;
			if (ev.t > R.max_t)
				R.max_t = ev.t;
			if ((rc = gs_queue_push(&R.q, &ev, &R.peak)) < 0)
				break;
			if (horizon != UINT64_MAX && R.max_t > horizon && (R.seq & 63) == 0 &&
			    (rc = release(&R, R.max_t - horizon)) < 0)
				break;
		}
		gtt_reader_only(L->r, 0);
	}
	if (rc == 0)
		rc = release(&R, UINT64_MAX);
	if (rc == 0) {
		ana_launches_free(&m->gpu->launches);
		rc = ana_launch_acc_finish(R.acc, &m->gpu->launches);
		R.acc = NULL;
	}
	if (rc == 0) {
		m->gpu_launches = 1;
		if (R.n_late)
			ana_warn(m, "%s: %" PRIu64 " CUDA records came later in the file than its chunk index promised: "
			         "joined to launch stacks where they came, so GPU time by launch site is approximate",
			         m->path, R.n_late);
	}
out:
	ana_launch_acc_free(R.acc);
	gs_queue_free(&R.q);
	free(R.order);
	if (rc < 0)
		snprintf(errbuf, errlen, "%s: out of memory while joining CUDA records to launch stacks", m->path);
	return rc;
}
