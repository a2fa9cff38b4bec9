/* load_window.c — the loader's part of a time window (--from/--to, window.h) and of on-CPU
 * time (oncpu.h): the window set up on the reader, the state carried in from before it (GIL
 * holders, /proc readings), its bounds made the model's, and the switches of a trace under
 * capture control read again once its captured intervals are known. */
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "gt_util.h"
#include "load_priv.h"
#include "window.h"

/* A GIL record before the window: the latest of each process tells who held the GIL when the
 * window began (read chunks only: the one before may be in a chunk the window skips). */
int ana_load_carry_gil(loader *L, const gtt_gil *g)
{
	for (size_t i = 0; i < L->gil_carry.n; i++)
		if (L->gil_carry.v[i].pid == g->pid) {
			if (g->time_ns >= L->gil_carry.v[i].time_ns)
				L->gil_carry.v[i] = *g;
			return 0;
		}
	gtt_gil *e = ana_vec_push(L->gil_carry);
	if (!e)
		return GTT_ENOMEM;
	*e = *g;
	return 0;
}

/* A /proc reading before the window: the latest of each thread is where its CPU time in the
 * window counts from (window_finish moves it to the window's start). */
int ana_load_carry_cpu(loader *L, const gtt_thread_cpu *c)
{
	for (size_t i = 0; i < L->cpu_carry.n; i++)
		if (L->cpu_carry.v[i].pid == c->pid && L->cpu_carry.v[i].tid == c->tid) {
			if (c->time_ns >= L->cpu_carry.v[i].time_ns)
				L->cpu_carry.v[i] = *c;
			return 0;
		}
	gtt_thread_cpu *e = ana_vec_push(L->cpu_carry);
	if (!e)
		return GTT_ENOMEM;
	*e = *c;
	return 0;
}

/* --from/--to: the window in trace time, and the reader set to read only its chunks. */
int ana_load_window_open(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	ana_window *w = &m->window;
	int rc = ana_window_origin(L->r, &w->origin_ns);
	if (rc < 0) {
		snprintf(errbuf, errlen, "%s: %s", m->path, gtt_strerror(rc));
		return rc;
	}
	w->on = 1;
	w->whole = L->o->window_whole;
	w->from_ns = L->o->has_from ? ana_sat_add(w->origin_ns, L->o->from_ns) : w->origin_ns;
	w->to_ns = L->o->has_to ? ana_sat_add(w->origin_ns, L->o->to_ns) : UINT64_MAX;
	if (w->to_ns <= w->from_ns) {
		snprintf(errbuf, errlen, "%s: the window is empty (--to must come after --from)", m->path);
		return GTT_EINVAL;
	}
	/* a second before it too: the GIL holder and /proc readings when the window began */
	uint64_t lead = w->from_ns > ANA_WINDOW_LEAD_NS ? w->from_ns - ANA_WINDOW_LEAD_NS : 0;
	if ((rc = gtt_reader_set_window(L->r, lead, w->to_ns - 1)) < 0)
		snprintf(errbuf, errlen, "%s: %s", m->path, gtt_strerror(rc));
	return rc;
}

/* After pass 1 of a window: its bounds become the model's, the GIL holders at its start are
 * known from the records before it. GTT_EINVAL (words in errbuf) for a window after the end. */
int ana_load_window_finish(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	ana_window *w = &m->window;
	uint64_t last = ana_window_index_end(L->r);
	if (m->end_ns > last)
		last = m->end_ns;
	if (m->has_end && m->end.time_ns > last)
		last = m->end.time_ns;
	if (last < w->from_ns) {
		snprintf(errbuf, errlen, "%s: the window starts at %.3f s, after the recording's end (%.3f s)", m->path,
		         gt_ns_to_s(w->from_ns - w->origin_ns), gt_ns_to_s(last > w->origin_ns ? last - w->origin_ns : 0));
		return GTT_EINVAL;
	}
	w->last_ns = last;
	m->start_ns = w->from_ns;
	m->end_ns = last < w->to_ns ? last : w->to_ns;
	/* the state when the window began: who held the GIL, and each thread's CPU time so far
	 * (a reading of the thread that was alive then; one period of /proc readings at most off) */
	for (size_t i = 0; i < L->gil_carry.n; i++) {
		gtt_gil *g = ana_vec_push(m->gil);
		if (!g)
			goto nomem;
		*g = L->gil_carry.v[i];
		g->time_ns = w->from_ns;
	}
	/* first in the array: a reading in the window at its very start sorts after them */
	size_t n = m->thread_cpu.n, k = L->cpu_carry.n;
	if (k && GT_GROW(m->thread_cpu.v, m->thread_cpu.cap, n + k) < 0)
		goto nomem;
	if (k && n) /* no array at all when neither has readings: memmove(NULL, ...) is undefined */
		memmove(m->thread_cpu.v + k, m->thread_cpu.v, n * sizeof(*m->thread_cpu.v));
	for (size_t i = 0; i < k; i++) {
		m->thread_cpu.v[i] = L->cpu_carry.v[i];
		m->thread_cpu.v[i].time_ns = w->from_ns;
	}
	m->thread_cpu.n = n + k;
	return 0;
nomem:
	snprintf(errbuf, errlen, "%s: out of memory", m->path);
	return GTT_ENOMEM;
}

/* Captured intervals of a window: the parts inside it. */
void ana_load_window_captured(ana_model *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->captured.n; i++) {
		ana_interval iv = m->captured.v[i];
		if (iv.start_ns < m->start_ns)
			iv.start_ns = m->start_ns;
		if (iv.end_ns > m->end_ns)
			iv.end_ns = m->end_ns;
		if (iv.end_ns > iv.start_ns)
			m->captured.v[k++] = iv;
	}
	m->captured.n = k;
}

/* On-CPU time: folded while reading; a trace under capture control has its switches read again
 * now that its captured intervals are known (they count only captured time, and a thread's
 * state is unknown again at each interval's start). 0 or GTT_ENOMEM. */
int ana_load_finish_oncpu(loader *L)
{
	ana_model *m = L->m;
	if (!m->capture_controlled)
		return ana_oncpu_finish(L->oncpu, m);
	ana_oncpu *o = ana_oncpu_new(1, ANA_ONCPU_HORIZON_NS);
	gtt_record rec;
	int rc = o ? 0 : GTT_ENOMEM;
	gtt_reader_rewind(L->r); /* the window, if any, stays */
	gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_SWITCH)); /* the other kinds passed over */
	while (rc == 0) {
		int n = gtt_reader_next(L->r, &rec);
		if (n == 0 || (n < 0 && n != GTT_ECORRUPT && n != GTT_EINVAL))
			break; /* pass 1 met the same end or error and said so */
		if (n > 0 && rec.tag == GTT_REC_SWITCH && ana_window_keep(&m->window, &rec))
			rc = ana_oncpu_add(o, m, &rec.u.sw);
	}
	gtt_reader_only(L->r, 0);
	if (rc == 0)
		rc = ana_oncpu_finish(o, m);
	ana_oncpu_free(o);
	return rc;
}

