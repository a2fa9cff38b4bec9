/* load_unwind.c — pass 2 of ana_model_load(): each sample's native stack, symbolized and
 * unwound once per distinct callchain or per stack copy; truncated stacks counted by thread,
 * reason and the frame where they stopped; stitched samples that ran ahead of the first
 * complete stack of their image unwound again at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_pipe.h"
#include "load_priv.h"

/* The function of frame id f for counting: its interned name and module (a function's frames
 * differ by the line executing), NULL for none. */
static const char *func_of(const ana_model *m, uint32_t f, const char **module)
{
	*module = f == ANA_NO_ID ? NULL : m->frames.v[f].module;
	return f == ANA_NO_ID ? NULL : m->frames.v[f].name;
}

static int trunc_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_model *m = ctx;
	const ana_trunc *a = &m->truncs.v[id], *b = key;
	const char *ma, *mb;
	return a->thread_idx == b->thread_idx && a->unwind == b->unwind &&
	       func_of(m, a->frame, &ma) == func_of(m, b->frame, &mb) && ma == mb;
}

/* Count a truncated stack (root-first frames fr[0..n)) for its thread, reason and the
 * function of the outermost frame it reached (the row keeps the first such frame). 0 or
 * GTT_ENOMEM. */
static int count_truncated(loader *L, const ana_sample *e, const uint32_t *fr, int n)
{
	ana_model *m = L->m;
	ana_trunc key = { e->thread_idx, n > 0 ? fr[0] : ANA_NO_ID, e->unwind, 0 };
	const char *module, *name = func_of(m, key.frame, &module);
	uint64_t h = ana_hash_u64((uint64_t)key.thread_idx << 40 ^ (uint64_t)key.unwind << 32 ^
	                          ana_hash_u64((uint64_t)(uintptr_t)name ^ (uint64_t)(uintptr_t)module));
	uint32_t *slot = ana_idtable_slot(&L->trunc_table, h, trunc_eq, &key, m);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		ana_trunc *t = ana_vec_push(m->truncs);
		if (!t)
			return GTT_ENOMEM;
		*t = key;
		*slot = (uint32_t)m->truncs.n;
		L->trunc_table.n++;
	}
	m->truncs.v[*slot - 1].n_samples++;
	return 0;
}

/* A sample of the raw list read again (pass 1 decoded it: read it again where it was, a
 * packed chunk is expanded once for the run of its samples). 0, GTT_ENOMEM, or GTT_EINVAL
 * when the sample no longer reads. */
static int read_raw(loader *L, const raw_sample *r, gtt_record *rec)
{
	int k;
	if ((k = gtt_reader_seek(L->r, &r->pos)) < 0 || (k = gtt_reader_next(L->r, rec)) != 1 ||
	    rec->tag != GTT_REC_SAMPLE)
		return k == GTT_ENOMEM ? GTT_ENOMEM : GTT_EINVAL;
	return 0;
}

/* The stack of sample raw of the raw list: from its unwind kept by collect_pass (L->uw_ids[raw],
 * arrays only), else unwound again. Its stack id in *sid; 0, GTT_ENOMEM, or GTT_EINVAL when the
 * sample no longer reads. */
static int unwind_raw(loader *L, size_t raw, ana_unwind_info *ui, uint32_t *sid)
{
	gtt_record rec;
	int n;
	if (L->uw_ids && raw < L->n_uw_ids && L->uw_ids[raw]) {
		n = ana_sym_sample_unwound(L->sym, L->uw_ids[raw], L->frames, MAX_DEPTH, ui);
	} else {
		int k = read_raw(L, &L->raws.v[raw], &rec);
		if (k < 0)
			return k;
		n = ana_sym_sample(L->sym, &rec.u.sample, L->frames, MAX_DEPTH, ui);
	}
	*sid = n < 0 ? ANA_NO_ID : ana_stack_intern(L->m, L->frames, (uint32_t)n);
	return *sid == ANA_NO_ID ? GTT_ENOMEM : 0;
}

/* The sample a deferred entry stands for: its stack and how it ended. */
static void deferred_result(loader *L, const deferred *d, uint32_t **sid, uint8_t *unwind)
{
	if (L->sstack.v) {
		*sid = &L->sstack.v[d->sample];
		*unwind = d->unwind;
	} else {
		*sid = &L->m->samples.v[d->sample].stack_id;
		*unwind = L->m->samples.v[d->sample].unwind;
	}
}

/* Samples stitched up to a thread entry early on, before the image's complete stacks showed
 * the entry's callers: unwound again now that they may have. */
/* The stack of a sample from the unwind ana_sym_collect kept as uw_id: its stack id in *sid.
 * 0 or GTT_ENOMEM. */
static int unwind_kept(loader *L, uint32_t uw_id, ana_unwind_info *ui, uint32_t *sid)
{
	int n = ana_sym_sample_unwound(L->sym, uw_id, L->frames, MAX_DEPTH, ui);
	*sid = n < 0 ? ANA_NO_ID : ana_stack_intern(L->m, L->frames, (uint32_t)n);
	return *sid == ANA_NO_ID ? GTT_ENOMEM : 0;
}

static int redo_deferred(loader *L)
{
	for (size_t i = 0; i < L->deferred.n; i++) {
		ana_unwind_info ui;
		uint32_t sid, *dst;
		uint8_t unwind;
		const deferred *d = &L->deferred.v[i];
		int rc = d->uw_id ? unwind_kept(L, d->uw_id, &ui, &sid) : unwind_raw(L, d->raw, &ui, &sid);
		if (rc < 0)
			return rc;
		deferred_result(L, &L->deferred.v[i], &dst, &unwind);
		if (!ui.pending && ui.unwind == unwind)
			*dst = L->sstack.v ? sid | (*dst & ~ANA_SSTACK_ID_MASK) : sid;
	}
	return 0;
}

int ana_load_unwind_one(loader *L, ana_sample *e, const gtt_sample *smp, uint32_t uw_id, size_t idx)
{
	ana_model *m = L->m;
	ana_unwind_info ui = { ANA_UNWIND_NO_USER, 0 };
	int n = 0, rc;
	uint32_t sid;
	size_t h = TCACHE_SLOT(e->pid, e->tid);
	if (!L->tc[h].used || L->tc[h].pid != e->pid || L->tc[h].tid != e->tid) {
		L->tc[h].used = 1;
		L->tc[h].pid = e->pid;
		L->tc[h].tid = e->tid;
		L->tc[h].idx = (uint32_t)(ana_thread_find(m, e->pid, e->tid) - m->threads.v);
	}
	ana_thread *t = &m->threads.v[L->tc[h].idx];
	e->thread_idx = L->tc[h].idx;
	t->n_samples++;
	t->sampled_ns += e->weight_ns;
	if (e->stack_id != ANA_NO_ID) {
		chain *c = &L->chains.v[e->stack_id];
		uint32_t space = ana_sym_space_id(L->sym, e->pid, e->time_ns);
		if (!space)
			return GTT_ENOMEM;
		if (c->space != space) {
			gtt_sample cs = { .time_ns = e->time_ns, .pid = e->pid, .tid = e->tid, .cpu = e->cpu,
			                  .n_kernel = c->n_kernel, .n_user = c->n_user,
			                  .ips = c->n_kernel + c->n_user ? L->chain_ips.v + c->off : NULL };
			n = ana_sym_sample(L->sym, &cs, L->frames, MAX_DEPTH, &ui);
			sid = n < 0 ? ANA_NO_ID : ana_stack_intern(m, L->frames, (uint32_t)n);
			if (sid == ANA_NO_ID)
				return GTT_ENOMEM;
			c->space = space;
			c->stack_id = sid;
			c->unwind = ui.unwind;
		}
		sid = c->stack_id;
		ui.unwind = c->unwind;
	} else {
		size_t raw = SIZE_MAX;
		if (uw_id) {
			/* unwound while the samples were shown to the symbolizer: not again */
			if ((rc = unwind_kept(L, uw_id, &ui, &sid)) < 0)
				return rc;
		} else if (smp) {
			/* the record at hand (streaming: decoded now); its place kept only if deferred */
			n = ana_sym_sample(L->sym, smp, L->frames, MAX_DEPTH, &ui);
			sid = n < 0 ? ANA_NO_ID : ana_stack_intern(m, L->frames, (uint32_t)n);
			if (sid == ANA_NO_ID)
				return GTT_ENOMEM;
			if (ui.pending && L->deferred.n < MAX_DEFERRED) {
				raw_sample *r = ana_vec_push(L->raws);
				if (!r)
					return GTT_ENOMEM;
				if (L->pipe)
					r->pos = *ana_pipe_pos(L->pipe);
				else
					gtt_reader_tell(L->r, &r->pos);
			}
			raw = L->raws.n - 1;
		} else {
			raw = L->next_raw++;
			if ((rc = unwind_raw(L, raw, &ui, &sid)) < 0)
				return rc;
		}
		if (ui.pending && L->deferred.n < MAX_DEFERRED) {
			deferred *d = ana_vec_push(L->deferred);
			if (!d)
				return GTT_ENOMEM;
			d->sample = idx;
			d->raw = raw;
			d->uw_id = uw_id;
			d->unwind = ui.unwind;
		}
	}
	e->stack_id = sid;
	e->unwind = ui.unwind;
	e->unwind_ok = !ANA_UNWIND_TRUNCATED(ui.unwind);
	if (!e->unwind_ok) {
		const ana_stack *st = &m->stacks.v[sid];
		if (count_truncated(L, e, st->frames, (int)st->n) < 0)
			return GTT_ENOMEM;
	}
	return 0;
}

int ana_load_unwind_done(loader *L)
{
	return redo_deferred(L);
}

/* The samples of pass 2 shown to the symbolizer ahead (each distinct callchain once per
 * address space, each stack copy), which then symbolizes their addresses binary by binary:
 * the DWARF of one binary in memory at a time, not of every binary the samples reach. The
 * unwinds of the stack copies are kept (L->uw_ids[raw], 0 where the symbolizer's budget ran
 * out: read and unwound again), so that pass 2 does not read them again. 0, GTT_ENOMEM or
 * GTT_EINVAL. */
static int collect_pass(loader *L)
{
	ana_model *m = L->m;
	size_t next_raw = 0;
	int rc = 0;
	for (size_t i = 0; i < m->samples.n && rc == 0; i++) {
		const ana_sample *e = &m->samples.v[i];
		if (e->stack_id != ANA_NO_ID) {
			rc = ana_load_collect_chain(L, e->stack_id, e->pid, e->tid, e->cpu, e->time_ns);
		} else {
			gtt_record rec;
			size_t raw = next_raw++;
			if ((rc = read_raw(L, &L->raws.v[raw], &rec)) == 0)
				rc = ana_sym_collect(L->sym, &rec.u.sample, &L->uw_ids[raw]);
		}
	}
	return rc < 0 ? rc : ana_load_collect_done(L);
}

int ana_load_collect_chain(loader *L, uint32_t chain_id, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time_ns)
{
	chain *c = &L->chains.v[chain_id];
	uint32_t space = ana_sym_space_id(L->sym, pid, time_ns);
	if (!space)
		return GTT_ENOMEM;
	if (c->space == space)
		return 0;
	gtt_sample smp = { .time_ns = time_ns, .pid = pid, .tid = tid, .cpu = cpu,
	                   .n_kernel = c->n_kernel, .n_user = c->n_user,
	                   .ips = c->n_kernel + c->n_user ? L->chain_ips.v + c->off : NULL };
	c->space = space; /* until pass 2 proper: which space a chain was shown in */
	return ana_sym_collect(L->sym, &smp, NULL);
}

int ana_load_collect_done(loader *L)
{
	for (size_t i = 0; i < L->chains.n; i++)
		L->chains.v[i].space = 0;
	return ana_sym_prepare(L->sym);
}

int ana_load_pass2(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	int rc = 0;
	memset(L->tc, 0, sizeof(L->tc));
	/* samples are read again, the records between them passed over without being decoded */
	gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_SAMPLE));
	L->n_uw_ids = L->raws.n;
	if (!(L->uw_ids = calloc(L->raws.n ? L->raws.n : 1, sizeof(*L->uw_ids)))) {
		rc = GTT_ENOMEM;
		goto fail;
	}
	if ((rc = collect_pass(L)) < 0)
		goto fail;
	for (size_t i = 0; i < m->samples.n; i++) {
		if ((rc = ana_load_unwind_one(L, &m->samples.v[i], NULL, 0, i)) < 0)
			goto fail;
		if (((i + 1) & 0x3ff) == 0)
			ana_load_progress(L, "symbolizing", i + 1, L->n_samples_seen);
	}
	if ((rc = redo_deferred(L)) < 0)
		goto fail;
fail:
	gtt_reader_only(L->r, 0);
	free(L->uw_ids);
	L->uw_ids = NULL;
	L->n_uw_ids = 0;
	if (rc == 0)
		return 0;
	if (rc == GTT_ENOMEM)
		snprintf(errbuf, errlen, "%s: out of memory", m->path);
	else
		snprintf(errbuf, errlen, "%s: a sample read in the first pass no longer reads", m->path);
	return rc;
}
