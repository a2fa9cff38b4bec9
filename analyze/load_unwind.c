/* load_unwind.c — pass 2 of ana_model_load(): each sample's native stack, symbolized and
 * unwound once per distinct callchain or per stack copy; truncated stacks counted by thread,
 * reason and the frame where they stopped; stitched samples that ran ahead of the first
 * complete stack of their image unwound again at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The stack of sample raw of the raw list: from its unwind kept by collect_pass (uw_ids[raw]),
 * else unwound again. Its stack id in *sid; 0, GTT_ENOMEM, or GTT_EINVAL when the sample no
 * longer reads. */
static int unwind_raw(loader *L, size_t raw, const uint32_t *uw_ids, ana_unwind_info *ui, uint32_t *sid)
{
	gtt_record rec;
	int n;
	if (uw_ids && uw_ids[raw]) {
		n = ana_sym_sample_unwound(L->sym, uw_ids[raw], L->frames, MAX_DEPTH, ui);
	} else {
		int k = read_raw(L, &L->raws.v[raw], &rec);
		if (k < 0)
			return k;
		n = ana_sym_sample(L->sym, &rec.u.sample, L->frames, MAX_DEPTH, ui);
	}
	*sid = n < 0 ? ANA_NO_ID : ana_stack_intern(L->m, L->frames, (uint32_t)n);
	return *sid == ANA_NO_ID ? GTT_ENOMEM : 0;
}

/* Samples stitched up to a thread entry early on, before the image's complete stacks showed
 * the entry's callers: unwound again now that they may have. */
static int redo_deferred(loader *L, const uint32_t *uw_ids)
{
	for (size_t i = 0; i < L->deferred.n; i++) {
		ana_sample *e = &L->m->samples.v[L->deferred.v[i].sample];
		ana_unwind_info ui;
		uint32_t sid;
		int rc = unwind_raw(L, L->deferred.v[i].raw, uw_ids, &ui, &sid);
		if (rc < 0)
			return rc;
		if (!ui.pending && ui.unwind == e->unwind)
			e->stack_id = sid;
	}
	return 0;
}

/* The samples of pass 2 shown to the symbolizer ahead (each distinct callchain once per
 * address space, each stack copy), which then symbolizes their addresses binary by binary:
 * the DWARF of one binary in memory at a time, not of every binary the samples reach. The
 * unwinds of the stack copies are kept (uw_ids[raw], 0 where the symbolizer's budget ran out:
 * read and unwound again), so that pass 2 does not read them again. 0, GTT_ENOMEM or
 * GTT_EINVAL. */
static int collect_pass(loader *L, uint32_t *uw_ids)
{
	ana_model *m = L->m;
	size_t next_raw = 0;
	int rc = 0;
	for (size_t i = 0; i < m->samples.n && rc == 0; i++) {
		const ana_sample *e = &m->samples.v[i];
		if (e->stack_id != ANA_NO_ID) {
			chain *c = &L->chains.v[e->stack_id];
			uint32_t space = ana_sym_space_id(L->sym, e->pid, e->time_ns);
			if (!space)
				return GTT_ENOMEM;
			if (c->space == space)
				continue;
			gtt_sample smp = { .time_ns = e->time_ns, .pid = e->pid, .tid = e->tid, .cpu = e->cpu,
			                   .n_kernel = c->n_kernel, .n_user = c->n_user,
			                   .ips = c->n_kernel + c->n_user ? L->chain_ips.v + c->off : NULL };
			rc = ana_sym_collect(L->sym, &smp, NULL);
			c->space = space; /* until pass 2 proper: which space a chain was shown in */
		} else {
			gtt_record rec;
			size_t raw = next_raw++;
			if ((rc = read_raw(L, &L->raws.v[raw], &rec)) == 0)
				rc = ana_sym_collect(L->sym, &rec.u.sample, &uw_ids[raw]);
		}
	}
	for (size_t i = 0; i < L->chains.n; i++)
		L->chains.v[i].space = 0;
	return rc < 0 ? rc : ana_sym_prepare(L->sym);
}

int ana_load_pass2(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	size_t next_raw = 0;
	int rc = 0;
	/* samples are read again, the records between them passed over without being decoded */
	gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_SAMPLE));
	uint32_t *uw_ids = calloc(L->raws.n ? L->raws.n : 1, sizeof(*uw_ids));
	if (!uw_ids)
		goto nomem;
	if ((rc = collect_pass(L, uw_ids)) < 0)
		goto fail;
	struct { uint32_t pid, tid, idx, used; } tc[TCACHE]; /* (pid, tid) -> thread index */
	memset(tc, 0, sizeof(tc));
	for (size_t i = 0; i < m->samples.n; i++) {
		ana_sample *e = &m->samples.v[i];
		ana_unwind_info ui = { ANA_UNWIND_NO_USER, 0 };
		int n = 0;
		uint32_t sid;
		size_t h = TCACHE_SLOT(e->pid, e->tid);
		if (!tc[h].used || tc[h].pid != e->pid || tc[h].tid != e->tid) {
			tc[h].used = 1;
			tc[h].pid = e->pid;
			tc[h].tid = e->tid;
			tc[h].idx = (uint32_t)(ana_thread_find(m, e->pid, e->tid) - m->threads.v);
		}
		ana_thread *t = &m->threads.v[tc[h].idx];
		e->thread_idx = tc[h].idx;
		t->n_samples++;
		t->sampled_ns += e->weight_ns;
		if (e->stack_id != ANA_NO_ID) {
			chain *c = &L->chains.v[e->stack_id];
			uint32_t space = ana_sym_space_id(L->sym, e->pid, e->time_ns);
			if (!space)
				goto nomem;
			if (c->space != space) {
				gtt_sample smp = { .time_ns = e->time_ns, .pid = e->pid, .tid = e->tid, .cpu = e->cpu,
				                   .n_kernel = c->n_kernel, .n_user = c->n_user,
				                   .ips = c->n_kernel + c->n_user ? L->chain_ips.v + c->off : NULL };
				n = ana_sym_sample(L->sym, &smp, L->frames, MAX_DEPTH, &ui);
				sid = n < 0 ? ANA_NO_ID : ana_stack_intern(m, L->frames, (uint32_t)n);
				if (sid == ANA_NO_ID)
					goto nomem;
				c->space = space;
				c->stack_id = sid;
				c->unwind = ui.unwind;
			}
			sid = c->stack_id;
			ui.unwind = c->unwind;
		} else {
			size_t raw = next_raw++;
			if ((rc = unwind_raw(L, raw, uw_ids, &ui, &sid)) < 0)
				goto fail;
			if (ui.pending && L->deferred.n < MAX_DEFERRED) {
				deferred *d = ana_vec_push(L->deferred);
				if (!d)
					goto nomem;
				d->sample = i;
				d->raw = raw;
			}
		}
		e->stack_id = sid;
		e->unwind = ui.unwind;
		e->unwind_ok = !ANA_UNWIND_TRUNCATED(ui.unwind);
		if (!e->unwind_ok) {
			const ana_stack *st = &m->stacks.v[sid];
			if (count_truncated(L, e, st->frames, (int)st->n) < 0)
				goto nomem;
		}
		if (((i + 1) & 0x3ff) == 0)
			ana_load_progress(L, "symbolizing", i + 1, L->n_samples_seen);
	}
	if ((rc = redo_deferred(L, uw_ids)) < 0)
		goto fail;
	gtt_reader_only(L->r, 0);
	free(uw_ids);
	return 0;
nomem:
	rc = GTT_ENOMEM;
fail:
	gtt_reader_only(L->r, 0);
	free(uw_ids);
	if (rc == GTT_ENOMEM)
		snprintf(errbuf, errlen, "%s: out of memory", m->path);
	else
		snprintf(errbuf, errlen, "%s: a sample read in the first pass no longer reads", m->path);
	return rc;
}

