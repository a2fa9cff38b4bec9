/* load_unwind.c — pass 2 of ana_model_load(): each sample's native stack, symbolized and
 * unwound once per distinct callchain or per stack copy; truncated stacks counted by thread,
 * reason and the frame where they stopped; stitched samples that ran ahead of the first
 * complete stack of their image unwound again at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_priv.h"

static int trunc_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_trunc *a = &((const ana_model *)ctx)->truncs.v[id], *b = key;
	return a->thread_idx == b->thread_idx && a->frame == b->frame && a->unwind == b->unwind;
}

/* Count a truncated stack (root-first frames fr[0..n)) for its thread, reason and the
 * outermost frame it reached. 0 or GTT_ENOMEM. */
static int count_truncated(loader *L, const ana_sample *e, const uint32_t *fr, int n)
{
	ana_model *m = L->m;
	ana_trunc key = { e->thread_idx, n > 0 ? fr[0] : ANA_NO_ID, e->unwind, 0 };
	uint64_t h = ana_hash_u64((uint64_t)key.thread_idx << 40 ^ (uint64_t)key.unwind << 32 ^ key.frame);
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

/* Unwind a sample of the raw list again (pass 2 decoded it before). Its stack id, or
 * ANA_NO_ID on ENOMEM. */
static uint32_t unwind_raw(loader *L, const raw_sample *r, void **scratch, size_t *scratch_cap,
                           ana_unwind_info *ui, int *n_out)
{
	gtt_record rec;
	/* the same bytes decoded in pass 1: no new error is possible but ENOMEM */
	if (gtt_decode(GTT_REC_SAMPLE, r->payload, r->len, &rec, scratch, scratch_cap) < 0)
		return ANA_NO_ID;
	int n = ana_sym_sample(L->sym, &rec.u.sample, L->frames, MAX_DEPTH, ui);
	*n_out = n;
	return n < 0 ? ANA_NO_ID : ana_stack_intern(L->m, L->frames, (uint32_t)n);
}

/* Samples stitched up to a thread entry early on, before the image's complete stacks showed
 * the entry's callers: unwound again now that they may have. */
static int redo_deferred(loader *L, void **scratch, size_t *scratch_cap)
{
	for (size_t i = 0; i < L->deferred.n; i++) {
		ana_sample *e = &L->m->samples.v[L->deferred.v[i].sample];
		ana_unwind_info ui;
		int n;
		uint32_t sid = unwind_raw(L, &L->raws.v[L->deferred.v[i].raw], scratch, scratch_cap, &ui, &n);
		if (sid == ANA_NO_ID)
			return GTT_ENOMEM;
		if (!ui.pending && ui.unwind == e->unwind)
			e->stack_id = sid;
	}
	return 0;
}

int ana_load_pass2(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	void *scratch = NULL;
	size_t scratch_cap = 0, next_raw = 0;
	int rc = 0;
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
			sid = unwind_raw(L, &L->raws.v[raw], &scratch, &scratch_cap, &ui, &n);
			if (sid == ANA_NO_ID)
				goto nomem;
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
	if (redo_deferred(L, &scratch, &scratch_cap) < 0)
		goto nomem;
	goto out;
nomem:
	snprintf(errbuf, errlen, "%s: out of memory", m->path);
	rc = GTT_ENOMEM;
out:
	free(scratch);
	return rc;
}

