/* load_stream.c — the loader's passes 2 and 3 for a model that keeps no samples, Python reads or
 * GIL records (ana_opts.stream_samples, `report`): pass 2 reads the samples again to unwind them
 * in file order (a stack id is all it keeps of each), pass 3 reads samples, reads, GIL and CUDA
 * records once more and merges them in time order, behind a reorder queue sized from the chunk
 * index, into the report's aggregates (sample_sum.h, gpu_sum.h) and the threads' class counts. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "captured.h"
#include "gpu_sum.h"
#include "heap.h"
#include "load_pipe.h"
#include "load_priv.h"
#include "python.h"
#include "sample_sum.h"
#include "window.h"

/* A sample as the model would hold it, from its record. */
static void sample_of(const gtt_sample *s, uint64_t period, ana_sample *e)
{
	memset(e, 0, sizeof(*e));
	e->time_ns = s->time_ns;
	e->weight_ns = s->period_ns ? s->period_ns : period;
	e->pid = s->pid;
	e->tid = s->tid;
	e->cpu = s->cpu;
	e->stack_id = ANA_NO_ID;
	e->cls = ANA_CLASS_NONPY;
}

/* The next record for a pass after pass 1, from the pipe that decodes it ahead: 1, or 0 at the
 * end (pass 1 met the same end or error and said so); corrupt chunks skipped as pass 1 skipped
 * them. A pass that reads samples whole after pass 1 read them bare (unmet, L->p1_bare) can meet
 * what pass 1 could not see (a stack copies' frame that does not expand): then GTT_ECORRUPT or
 * GTT_EINVAL, at *off. */
static int next_record(ana_pipe *pp, int unmet, gtt_record **rec, uint64_t *off)
{
	for (;;) {
		uint64_t at = 0;
		int n = ana_pipe_next(pp, rec, &at);
		if (n > 0)
			return 1;
		if (unmet && (n == GTT_ECORRUPT || n == GTT_EINVAL)) {
			*off = at; /* (only then: a later failure is not a read error at the last record) */
			return n;  /* (no --skip-corrupt: pass 1 would have stopped at any error it met) */
		}
		if (n == 0 || (n != GTT_ECORRUPT && n != GTT_EINVAL))
			return 0;
	}
}

/* Pass 2's reading from the start, samples only, decoded on a thread of its own. 0 or
 * GTT_ENOMEM. */
static int pass2_read(loader *L)
{
	gtt_reader_rewind(L->r); /* the window, if any, stays */
	L->pipe = ana_pipe_start(L->r, ANA_PIPE_PASS2, 1, !L->m->window.on);
	return L->pipe ? 0 : GTT_ENOMEM;
}

static void pass2_read_end(loader *L)
{
	ana_pipe_free(L->pipe); /* the reader is this thread's again */
	L->pipe = NULL;
}

/* Pass 2's first read: every sample shown to the symbolizer, its stack copy's unwind kept (its id
 * in L->sstack.v[k] until the second read puts the stack id there; 0 for a callchain's or where
 * the symbolizer's budget was spent). *n_raw: samples with registers or a stack copy and no kept
 * unwind, which the second read unwinds from their records again. 0 or <0 (*err_off: a read
 * error's offset). */
static int pass2_collect(loader *L, uint64_t *n_raw, uint64_t *err_off)
{
	ana_model *m = L->m;
	uint64_t k = 0;
	gtt_record *rec;
	int rc = 0, n;
	*n_raw = 0;
	while (k < L->n_samples_seen && (n = next_record(L->pipe, L->p1_bare, &rec, err_off)) != 0) {
		if (n < 0)
			return n;
		if (rec->tag != GTT_REC_SAMPLE || !ana_window_keep(&m->window, rec))
			continue;
		uint32_t chain_id = ANA_NO_ID, uw = 0;
		if ((rc = ana_load_intern_chain(L, &rec->u.sample, &chain_id)) < 0)
			return rc;
		const gtt_sample *s = &rec->u.sample;
		rc = chain_id != ANA_NO_ID ? ana_load_collect_chain(L, chain_id, s->pid, s->tid, s->cpu, s->time_ns)
		                           : ana_sym_collect(L->sym, s, &uw);
		if (rc < 0)
			return rc;
		if (chain_id == ANA_NO_ID && !uw && (s->flags & (GTT_SAMPLE_REGS | GTT_SAMPLE_STACK)))
			++*n_raw;
		L->sstack.v[k++] = uw;
	}
	return 0;
}

int ana_load_stream_pass2(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	uint64_t period = ana_fill_period_ns(m), k = 0, n_raw = 0, err_off = 0;
	ana_priv *p = ana_priv_get(m);
	gtt_record *rec;
	int rc = GTT_ENOMEM;
	memset(L->tc, 0, sizeof(L->tc));
	if (!p || !(m->ssum = L->ssum = ana_ssum_new(m, L->n_samples_seen)))
		goto fail;
	m->samples_streamed = 1;
	L->ssum->n_samples = L->n_samples_seen;
	/* samples outside the captured intervals are counted now (ana_capture_build warns) */
	if (ana_capture_intervals(m) < 0 ||
	    (L->n_samples_seen && GT_GROW(L->sstack.v, L->sstack.cap, L->n_samples_seen) < 0))
		goto fail;
	/* samples only: the records between them are passed over without being decoded */
	gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_SAMPLE));
	/* first every sample is shown to the symbolizer, which then symbolizes binary by binary
	 * (one binary's DWARF in memory at a time); then the samples are read again for their stacks */
	gtt_reader_skip_stacks(L->r, 0);
	if (L->n_samples_seen && (rc = pass2_read(L)) < 0)
		goto fail;
	if (L->n_samples_seen && (rc = pass2_collect(L, &n_raw, &err_off)) < 0)
		goto fail;
	pass2_read_end(L);
	if ((rc = ana_load_collect_done(L)) < 0)
		goto fail;
	/* the stacks again: from the unwinds kept, so the samples come bare (their stack copies'
	 * frames not even expanded) unless some were not kept. (Under --skip-corrupt a chunk whose
	 * stack copies do not expand was skipped by the reads so far: it is read whole again, to be
	 * skipped again) */
	gtt_reader_skip_stacks(L->r, n_raw == 0 && L->p1_bare);
	if (L->n_samples_seen && (rc = pass2_read(L)) < 0)
		goto fail;
	while (k < L->n_samples_seen && next_record(L->pipe, 0, &rec, &err_off)) {
		if (rec->tag != GTT_REC_SAMPLE || !ana_window_keep(&m->window, rec))
			continue;
		ana_sample e;
		sample_of(&rec->u.sample, period, &e);
		uint32_t uw = L->sstack.v[k]; /* (the first read's, replaced below) */
		if ((rc = ana_load_intern_chain(L, &rec->u.sample, &e.stack_id)) < 0 ||
		    (rc = ana_load_unwind_one(L, &e, &rec->u.sample, e.stack_id == ANA_NO_ID ? uw : 0, k)) < 0)
			goto fail;
		if (e.stack_id > ANA_SSTACK_ID_MASK) {
			rc = GTT_ENOMEM; /* (2^27 distinct stacks: memory runs out first) */
			goto fail;
		}
		L->sstack.v[L->sstack.n++] = e.stack_id | (e.unwind_ok ? ANA_SSTACK_OK : 0) |
		                             (uint32_t)e.unwind << ANA_SSTACK_UNWIND_SHIFT;
		ana_ssum_unwind(L->ssum, e.unwind);
		if (m->capture_controlled && ana_capture_outside(m, e.time_ns, e.weight_ns))
			p->n_outside_captured++;
		if ((++k & 0x3ff) == 0)
			ana_load_progress(L, "symbolizing", k, L->n_samples_seen);
	}
	pass2_read_end(L); /* before the deferred samples are read again where they were */
	rc = GTT_EINVAL;
	gtt_reader_skip_stacks(L->r, 0); /* deferred samples without a kept unwind are read whole */
	if (k != L->n_samples_seen || (rc = ana_load_unwind_done(L)) < 0)
		goto fail;
	gtt_reader_only(L->r, 0);
	/* built again where the loader builds them (ana_capture_build), with its checks */
	m->captured.n = 0;
	m->capture_controlled = 0;
	return 0;
fail:
	pass2_read_end(L);
	gtt_reader_only(L->r, 0);
	gtt_reader_skip_stacks(L->r, 0);
	if (rc == GTT_ENOMEM)
		snprintf(errbuf, errlen, "%s: out of memory", m->path);
	else if (err_off) /* what pass 1 would have said, had it expanded the stack copies */
		ana_load_read_error(L, rc, err_off, errbuf, errlen);
	else
		snprintf(errbuf, errlen, "%s: a sample read in the first pass no longer reads", m->path);
	return rc;
}

/* ---- pass 3 ---- */

/* A sample, Python read or GIL record in the reorder queue. */
enum { SE_SAMPLE = 0, SE_READ = 1, SE_GIL = 2 };
typedef struct sev {
	uint64_t t, seq;
	uint32_t type, k2;     /* k2: a read's tid, a GIL record's pid (the arrays' order at equal times) */
	union {
		ana_sample s;
		ana_pystack p;
		gtt_gil g;
	} u;
} sev;

typedef struct p3 {
	loader *L;
	ana_pymerge *merge;
	ana_gpu_acc *gpu;
	ANA_VEC(sev) heap;
	uint64_t seq, max_t, w, horizon_ns, n_late;
	size_t next_stack;     /* the next sample's entry in L->sstack */
	int read_rc;           /* a read error pass 1 did not meet, at read_off: the load fails */
	uint64_t read_off;
} p3;

static int sev_less(const sev *x, const sev *y)
{
	if (x->t != y->t)
		return x->t < y->t;
	if (x->type != y->type)
		return x->type < y->type;
	if (x->k2 != y->k2)
		return x->k2 < y->k2;
	return x->seq < y->seq;
}

ANA_HEAP_DEFINE(sev_heap, sev, sev_less)

static int heap_push(p3 *P, const sev *e)
{
	if (ana_heap_push(sev_heap, P->heap, e) < 0)
		return GTT_ENOMEM;
	if (P->heap.n > P->L->ssum->peak_queued)
		P->L->ssum->peak_queued = P->heap.n;
	return 0;
}

/* A sample merged and classified: into its thread's class counts, the caller's sink (if any), the
 * sums and the GPU sweep (when there is one: the report's). */
static int sink(void *ctx, ana_sample *s, size_t tag)
{
	p3 *P = ctx;
	(void)tag;
	ana_count_class(P->L->m, s);
	if (P->L->o->sample_sink)
		P->L->o->sample_sink(P->L->o->sample_sink_ctx, P->L->m, s);
	int rc = ana_ssum_sample(P->L->ssum, s);
	return rc < 0 || !P->gpu ? rc : ana_gpu_acc_sample(P->gpu, s);
}

/* Everything before w is in (UINT64_MAX: all of it): what is final goes on, in time order. */
static int flush(p3 *P, uint64_t w)
{
	int rc = 0;
	sev e;
	while (rc == 0 && P->heap.n && (P->heap.v[0].t < w || w == UINT64_MAX)) {
		e = ana_heap_pop(sev_heap, P->heap);
		switch (e.type) {
		case SE_SAMPLE:
			rc = P->merge ? ana_pymerge_sample(P->merge, &e.u.s, 0) : sink(P, &e.u.s, 0);
			break;
		case SE_READ:
			ana_ssum_read(P->L->ssum, &e.u.p);
			if (P->L->o->sum_reads) /* fold --weight wall's counts */
				rc = ana_ssum_read_stack(P->L->ssum, &e.u.p);
			if (rc == 0 && P->merge)
				rc = ana_pymerge_read(P->merge, &e.u.p);
			break;
		default:
			rc = ana_ssum_gil(P->L->ssum, &e.u.g);
			if (rc == 0 && P->merge)
				rc = ana_pymerge_gil(P->merge, &e.u.g);
			break;
		}
	}
	if (rc < 0)
		return rc;
	P->w = w;
	if (P->merge && (rc = ana_pymerge_advance(P->merge, w)) < 0)
		return rc;
	uint64_t ws = P->merge ? ana_pymerge_waiting(P->merge) : UINT64_MAX;
	return P->gpu ? ana_gpu_acc_advance(P->gpu, w, ws < w ? ws : w) : 0;
}

/* One record of pass 3 into the queue (or the GPU accumulator). 0 or <0. */
static int take(p3 *P, gtt_record *rec)
{
	loader *L = P->L;
	ana_model *m = L->m;
	sev e;
	uint64_t t;
	switch (rec->tag) {
	case GTT_REC_SAMPLE: t = rec->u.sample.time_ns; break;
	case GTT_REC_PY_STACK: t = rec->u.py_stack.time_ns; break;
	case GTT_REC_GIL: t = rec->u.gil.time_ns; break;
	case GTT_REC_CUDA_KERNEL: t = rec->u.kernel.start_ns; break;
	case GTT_REC_CUDA_MEMCPY: t = rec->u.memcpy.start_ns; break;
	case GTT_REC_CUDA_MEMSET: t = rec->u.memset.start_ns; break;
	case GTT_REC_CUDA_SYNC: t = rec->u.sync.start_ns; break;
	case GTT_REC_CUDA_API: t = rec->u.api.start_ns; break;
	default: return 0;
	}
	/* the latest start read: nothing later in the file starts a horizon before it. (Of the
	 * kinds this pass reads: the bound holds for any records of the file, and a lower one
	 * only holds the queue's records a little longer) */
	if (t > P->max_t)
		P->max_t = t;
	if (!ana_window_keep(&m->window, rec))
		return 0;
	if (ana_load_streamed(rec->tag))
		return P->gpu ? ana_gpu_acc_add(P->gpu, rec) : 0;
	memset(&e, 0, sizeof(e));
	e.t = t;
	e.seq = P->seq++;
	if (t < P->w)
		P->n_late++; /* behind what the index promised (a hand-made file): merged where it came */
	if (rec->tag == GTT_REC_SAMPLE) {
		if (P->next_stack >= L->sstack.n)
			return GTT_EINVAL; /* not the samples pass 2 read */
		uint32_t st = L->sstack.v[P->next_stack++];
		sample_of(&rec->u.sample, ana_fill_period_ns(m), &e.u.s);
		e.type = SE_SAMPLE;
		e.u.s.stack_id = st & ANA_SSTACK_ID_MASK;
		e.u.s.unwind_ok = (st & ANA_SSTACK_OK) != 0;
		e.u.s.unwind = (uint8_t)(st >> ANA_SSTACK_UNWIND_SHIFT & 0xf);
		size_t h = TCACHE_SLOT(e.u.s.pid, e.u.s.tid);
		if (!L->tc[h].used || L->tc[h].pid != e.u.s.pid || L->tc[h].tid != e.u.s.tid) {
			L->tc[h].used = 1;
			L->tc[h].pid = e.u.s.pid;
			L->tc[h].tid = e.u.s.tid;
			L->tc[h].idx = (uint32_t)(ana_thread_find(m, e.u.s.pid, e.u.s.tid) - m->threads.v);
		}
		e.u.s.thread_idx = L->tc[h].idx;
	} else if (rec->tag == GTT_REC_PY_STACK) {
		const gtt_py_stack *p = &rec->u.py_stack;
		e.type = SE_READ;
		e.k2 = p->tid;
		e.u.p = (ana_pystack){ p->time_ns, p->pid, p->tid, p->flags, p->n_frames, NULL };
		/* a thread's Python stack changes little between reads: one copy per distinct stack */
		if (p->n_frames && !(e.u.p.frames = ana_pyframes_intern(m, p->frames, p->n_frames)))
			return GTT_ENOMEM;
	} else {
		e.type = SE_GIL;
		e.k2 = rec->u.gil.pid;
		e.u.g = rec->u.gil;
	}
	return heap_push(P, &e);
}

/* 1 when a read error at offset off lies in a chunk pass 1 did not expand (a CUDA chunk whose
 * header was all it took, gtt_reader_summarize): pass 3 reports it as pass 1 would have. A chunk
 * whose checksum fails was met by pass 1 like any other. */
static int unmet_error(loader *L, uint64_t off)
{
	gtt_chunk_info ci;
	return L->cuda_summed && gtt_reader_chunk_at(L->r, off, &ci) == 1 && ci.tag == GTT_REC_PACKED &&
	       ci.stream == GTT_STREAM_CUDA && ci.first_ns != 0;
}

/* What pass 3 reads: samples, Python reads, GIL records and (for the report's GPU sweep) the CUDA
 * records. */
#define PASS3_KINDS (GTT_KIND_BIT(GTT_REC_SAMPLE) | GTT_KIND_BIT(GTT_REC_PY_STACK) | GTT_KIND_BIT(GTT_REC_GIL))
#define PASS3_CUDA_KINDS                                                                                  \
	(GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY) | GTT_KIND_BIT(GTT_REC_CUDA_MEMSET) | \
	 GTT_KIND_BIT(GTT_REC_CUDA_SYNC) | GTT_KIND_BIT(GTT_REC_CUDA_API))

static int read_all(p3 *P)
{
	loader *L = P->L;
	ana_model *m = L->m;
	gtt_record *rec;
	uint64_t n = 0, off = 0, size = gtt_reader_size(L->r);
	int rc = 0;
	/* a window's GIL state when it began (load_window.c): after the window's own records at its
	 * first instant, as in the arrays */
	for (size_t i = 0; rc == 0 && i < m->gil.n; i++) {
		sev e;
		memset(&e, 0, sizeof(e));
		e.t = m->gil.v[i].time_ns;
		e.seq = UINT64_MAX - m->gil.n + i;
		e.type = SE_GIL;
		e.k2 = m->gil.v[i].pid;
		e.u.g = m->gil.v[i];
		rc = heap_push(P, &e);
	}
	gtt_reader_rewind(L->r); /* the window, if any, stays */
	/* the kinds merged here only: the others (context switches above all: most of a
	 * GIL-contended trace's records) are passed over, their chunks not even expanded where
	 * they have a stream of their own */
	gtt_reader_only(L->r, PASS3_KINDS | (P->gpu ? PASS3_CUDA_KINDS : 0));
	/* a sample's figures only: its stack is pass 2's (but see pass 2's second read) */
	gtt_reader_skip_stacks(L->r, L->p1_bare);
	/* decoded on a thread of its own, in file order (load_pipe.c); corrupt chunks skipped as
	 * pass 1 skipped them, the reading ends where pass 1's ended */
	ana_pipe *pp = rc == 0 ? ana_pipe_start(L->r, ANA_PIPE_PASS3, 1, !L->m->window.on) : NULL;
	if (rc == 0 && !pp)
		rc = GTT_ENOMEM;
	while (rc == 0) {
		int k = ana_pipe_next(pp, &rec, &off);
		if ((k == GTT_ECORRUPT || k == GTT_EINVAL) && !unmet_error(L, off))
			continue; /* pass 1 met it and said so (or, with --skip-corrupt, counted it) */
		if (k == GTT_ECORRUPT || k == GTT_EINVAL) {
			if (L->o->skip_corrupt) {
				m->n_corrupt++;
				continue;
			}
			P->read_rc = rc = k;
			P->read_off = off;
			break;
		}
		if (k <= 0)
			break;
		if ((rc = take(P, rec)) < 0)
			break;
		if ((++n & 0xff) == 0) {
			if (P->horizon_ns != UINT64_MAX && P->max_t > P->horizon_ns)
				rc = flush(P, P->max_t - P->horizon_ns);
			if ((n & 0xffff) == 0)
				ana_load_progress(L, "merging", off, size);
		}
	}
	ana_pipe_free(pp); /* the reader is this thread's again */
	gtt_reader_only(L->r, 0);
	gtt_reader_skip_stacks(L->r, 0);
	if (rc == 0 && P->next_stack != L->sstack.n)
		rc = GTT_EINVAL;
	return rc == 0 ? flush(P, UINT64_MAX) : rc;
}

int ana_load_stream_pass3(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	const ana_opts *o = L->o;
	p3 P = { .L = L, .horizon_ns = ana_load_horizon(L) };
	int rc = GTT_ENOMEM;
	memset(L->tc, 0, sizeof(L->tc));
	/* the report's GPU sweep, fed the samples as they are merged; the tables' mode (fold, diff)
	 * counted the CUDA records by name in pass 1 and reads none here */
	int sweep = o->stream_cuda == ANA_STREAM_CUDA_REPORT;
	if (sweep && !(P.gpu = ana_gpu_acc_new(m, P.horizon_ns)))
		goto out;
	if (sweep)
		ana_gpu_acc_feed_samples(P.gpu);
	/* analyze/python.c splices Python frames into the native stacks and sets each sample's
	 * class (samples of threads never seen in a Python read stay ANA_CLASS_NONPY) */
	if (!o->no_python_merge && L->n_pyreads && !(P.merge = ana_pymerge_new(m, o, sink, &P)))
		goto out;
	if ((rc = read_all(&P)) < 0)
		goto out;
	if (P.merge) {
		L->ssum->peak_merge = ana_pymerge_peak(P.merge);
		rc = ana_pymerge_finish(P.merge);
		P.merge = NULL;
		if (rc < 0)
			goto out;
	}
	m->cuda_streamed = 1;
	if (sweep) {
		rc = ana_gpu_acc_finish(P.gpu, &m->gpu);
		P.gpu = NULL;
	} else {
		ana_gpu_tables *t = L->gpu_tables ? L->gpu_tables : ana_gpu_tables_new();
		L->gpu_tables = NULL;
		rc = t ? ana_gpu_tables_finish(t, m, &m->gpu) : GTT_ENOMEM;
	}
	if (rc == 0 && P.n_late)
		ana_warn(m, "%s: %" PRIu64 " samples, Python reads or GIL records came later in the file than its chunk "
		         "index promised: merged where they came, so the Python and GPU figures are approximate",
		         m->path, P.n_late);
out:
	ana_pymerge_free(P.merge);
	ana_gpu_acc_free(P.gpu);
	free(P.heap.v);
	if (P.read_rc)
		ana_load_read_error(L, P.read_rc, P.read_off, errbuf, errlen);
	else if (rc == GTT_EINVAL)
		snprintf(errbuf, errlen, "%s: a sample read in the first pass no longer reads", m->path);
	else if (rc < 0)
		snprintf(errbuf, errlen, "%s: out of memory while merging samples, Python and CUDA records", m->path);
	return rc;
}
