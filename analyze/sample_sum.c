/* sample_sum.c — the report's aggregates of samples, Python reads and GIL records (sample_sum.h):
 * fed one by one, by the loader's streaming pass or from a model's arrays. */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "gt_util.h"
#include "sample_sum.h"

uint64_t ana_config_period_ns(const ana_model *m)
{
	uint64_t period = 0;
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].kind == GTT_HEALTH_CONFIG && m->health.v[i].source == GTT_SRC_PERF &&
		    m->health.v[i].value[1])
			period = m->health.v[i].value[1];
	if (period)
		return period;
	const char *hz = ana_meta_get(m, "frequency_hz");
	if (hz && atof(hz) > 0)
		return gt_hz_to_period_ns(atof(hz));
	return 0;
}

ana_sample_sum *ana_ssum_new(const ana_model *m, uint64_t n_samples)
{
	ana_sample_sum *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* the median weight (report.c) looks at every (n / k)-th sample, k = min(n, ANA_SSUM_PICKS) */
	if (n_samples && !ana_config_period_ns(m))
		s->pick_step = n_samples / (n_samples < ANA_SSUM_PICKS ? n_samples : ANA_SSUM_PICKS);
	return s;
}

void ana_ssum_free(ana_sample_sum *s)
{
	if (!s)
		return;
	free(s->rows.v);
	ana_idtable_free(&s->row_table);
	free(s->picks.v);
	free(s->figs.v);
	free(s->read_rows.v);
	ana_idtable_free(&s->read_table);
	free(s);
}

static int row_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_ssum_row *a = &((const ana_sample_sum *)ctx)->rows.v[id], *b = key;
	return a->thread_idx == b->thread_idx && a->stack_id == b->stack_id && a->cls == b->cls &&
	       a->truncated == b->truncated;
}

int ana_ssum_sample(ana_sample_sum *s, const ana_sample *smp)
{
	if (s->pick_step && s->n_seen % s->pick_step == 0 && s->picks.n < ANA_SSUM_PICKS) {
		uint64_t *w = ana_vec_push(s->picks);
		if (!w)
			return GTT_ENOMEM;
		*w = smp->weight_ns;
	}
	s->n_seen++;
	ana_ssum_row key = { smp->thread_idx, smp->stack_id, smp->cls, ANA_UNWIND_TRUNCATED(smp->unwind), 0, 0 };
	uint64_t h = ana_hash_u64((uint64_t)smp->thread_idx << 32 ^ smp->stack_id ^ (uint64_t)smp->cls << 56 ^
	                          (uint64_t)key.truncated << 55);
	uint32_t *slot = ana_idtable_slot(&s->row_table, h, row_eq, &key, s);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		ana_ssum_row *r = ana_vec_push(s->rows);
		if (!r)
			return GTT_ENOMEM;
		*r = key;
		*slot = (uint32_t)s->rows.n;
		s->row_table.n++;
	}
	ana_ssum_row *r = &s->rows.v[*slot - 1];
	r->n++;
	r->weight_ns = ana_sat_add(r->weight_ns, smp->weight_ns);
	return 0;
}

void ana_ssum_unwind(ana_sample_sum *s, int unwind)
{
	s->n_unwind[unwind >= 0 && unwind < ANA_UNWIND_COUNT ? unwind : 0]++;
}

void ana_ssum_read(ana_sample_sum *s, const ana_pystack *p)
{
	size_t k;
	s->n_reads++;
	if (s->n_py_pids == ANA_SSUM_PY_PIDS)
		return;
	for (k = 0; k < s->n_py_pids && s->py_pids[k] != p->pid; k++)
		;
	if (k == s->n_py_pids)
		s->py_pids[s->n_py_pids++] = p->pid;
}

static int read_row_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_ssum_read_row *a = &((const ana_sample_sum *)ctx)->read_rows.v[id], *b = key;
	return a->frames == b->frames && a->n_frames == b->n_frames && a->pid == b->pid && a->tid == b->tid &&
	       a->held == b->held;
}

int ana_ssum_read_stack(ana_sample_sum *s, const ana_pystack *p)
{
	if (!p->n_frames)
		return 0;
	ana_ssum_read_row key = { p->frames, p->n_frames, p->pid, p->tid, p->flags & 1, 0 };
	uint64_t h = ana_hash_u64((uint64_t)(uintptr_t)p->frames ^ (uint64_t)p->n_frames << 48 ^
	                          ana_hash_u64((uint64_t)p->pid << 32 | p->tid) ^ key.held);
	uint32_t *slot = ana_idtable_slot(&s->read_table, h, read_row_eq, &key, s);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		ana_ssum_read_row *r = ana_vec_push(s->read_rows);
		if (!r)
			return GTT_ENOMEM;
		*r = key;
		*slot = (uint32_t)s->read_rows.n;
		s->read_table.n++;
	}
	s->read_rows.v[*slot - 1].n++;
	return 0;
}

static ana_gil_fig *fig_of(const ana_sample_sum *s, uint32_t pid)
{
	/* a few processes: a scan */
	for (size_t i = 0; i < s->figs.n; i++)
		if (s->figs.v[i].pid == pid)
			return &s->figs.v[i];
	return NULL;
}

int ana_ssum_gil(ana_sample_sum *s, const gtt_gil *g)
{
	ana_gil_fig *f = fig_of(s, g->pid);
	s->n_gil++;
	if (!f) {
		if (!(f = ana_vec_push(s->figs)))
			return GTT_ENOMEM;
		f->pid = g->pid;
		f->first_ns = g->time_ns;
		f->first_switches = g->switches;
	} else if (f->prev_locked) {
		f->held_ns += g->time_ns - f->prev_ns;
	}
	if (g->locked && g->holder_tid) {
		if (f->last_holder && g->holder_tid != f->last_holder)
			f->handoffs++;
		f->last_holder = g->holder_tid;
	}
	if (g->switches && f->first_switches) {
		f->have_switches = 1;
		f->switches = ana_span(f->first_switches, g->switches); /* a counter that went back: 0 */
	}
	f->prev_ns = g->time_ns;
	f->prev_locked = g->locked != 0;
	return 0;
}

int ana_ssum_gil_figures(const ana_sample_sum *s, uint32_t pid, uint64_t end_ns, uint64_t *span_ns,
                         uint64_t *held_ns, uint64_t *handoffs, uint64_t *switches, int *have_switches)
{
	const ana_gil_fig *f = fig_of(s, pid);
	*span_ns = *held_ns = *handoffs = *switches = 0;
	*have_switches = 0;
	if (!f)
		return 0;
	*held_ns = f->held_ns;
	*handoffs = f->handoffs;
	*switches = f->switches;
	*have_switches = f->have_switches;
	if (f->prev_locked && end_ns > f->prev_ns)
		*held_ns += end_ns - f->prev_ns;
	*span_ns = end_ns > f->first_ns ? end_ns - f->first_ns : 0;
	return 1;
}

/* The sums of a model that kept its records: its arrays fed as the loader left them (samples,
 * reads and GIL records each in time order). NULL on ENOMEM. */
static ana_sample_sum *sum_of_arrays(const ana_model *m)
{
	ana_sample_sum *s = ana_ssum_new(m, m->samples.n);
	if (!s)
		return NULL;
	for (size_t i = 0; i < m->samples.n; i++) {
		ana_ssum_unwind(s, m->samples.v[i].unwind);
		if (ana_ssum_sample(s, &m->samples.v[i]) < 0)
			goto fail;
	}
	s->n_samples = m->samples.n;
	for (size_t i = 0; i < m->pystacks.n; i++)
		ana_ssum_read(s, &m->pystacks.v[i]);
	for (size_t i = 0; i < m->gil.n; i++)
		if (ana_ssum_gil(s, &m->gil.v[i]) < 0)
			goto fail;
	return s;
fail:
	ana_ssum_free(s);
	return NULL;
}

const ana_sample_sum *ana_sample_sum_of(const ana_model *m)
{
	if (!m->ssum) {
		/* made once and kept with the model (a cache: the model's figures do not change) */
		ana_model *mut = (ana_model *)m;
		mut->ssum = sum_of_arrays(m);
	}
	return m->ssum;
}

void ana_sample_sum_forget(const ana_model *m)
{
	if (m->ssum && !m->samples_streamed) {
		ana_model *mut = (ana_model *)m;
		ana_ssum_free(mut->ssum);
		mut->ssum = NULL;
	}
}

uint64_t ana_model_n_samples(const ana_model *m)
{
	return m->samples_streamed && m->ssum ? m->ssum->n_samples : m->samples.n;
}
