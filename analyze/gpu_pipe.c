/* gpu_pipe.c — the GPU sweep's entry points (gpu_sum.h) and, for an accumulator fed samples by a
 * streaming loader, the sweep on a thread of its own and its launch estimator on another: the
 * caller's thread only copies each record, sample and watermark into batches, in the order it
 * makes the calls, and the sweep's thread makes the same calls in the same order; it hands the
 * estimator's calls on the same way. So the sums are those of one thread. */
#include <pthread.h>
#include <stdlib.h>

#include "gpu_sum_priv.h"
#include "gt_ring.h"

/* ---- a batch pipe: one thread hands items over in order, another runs them in that order ---- */

/* Batches in a ring (gt_ring.h): the caller fills batch cur while the thread runs the ones
 * published before it; at most PIPE_BATCHES x PIPE_BATCH items wait. */
#define PIPE_BATCH 4096
#define PIPE_BATCHES 4

typedef struct bpipe {
	size_t size;           /* of an item */
	int (*run)(void *ctx, void *item);
	/* NULL, or what to fetch into the cache for an item run soon: called for the item
	 * AHEAD_FAR places ahead (stage 0) and again AHEAD_NEAR ahead (stage 1) */
	void (*ahead)(void *ctx, const void *item, int stage);
	void *ctx;
	char *buf;             /* PIPE_BATCHES batches of PIPE_BATCH items */
	size_t n[PIPE_BATCHES];
	gt_ring ring;
	long cur;              /* the caller's batch being filled, -1 none */
	size_t cur_n;
	int err;               /* the thread's error (set before it stops the ring) */
	pthread_t th;
} bpipe;

#define ITEM_AHEAD 6
#define AHEAD_FAR 16
#define AHEAD_NEAR 8

static void *bpipe_main(void *arg)
{
	bpipe *p = arg;
	long k;
	while ((k = gt_ring_consume(&p->ring)) >= 0) {
		size_t n = p->n[k];
		char *b = p->buf + (size_t)k * PIPE_BATCH * p->size;
		int rc = 0;
		for (size_t i = 0; i < n && rc == 0; i++) {
			/* the caller wrote the items on another core: fetched a few ahead, their cache
			 * lines come over while the ones before them run; for writing, since a run may
			 * change its item (gs_add numbers an event) and a line only shared would then
			 * cost a second trip */
			if (i + ITEM_AHEAD < n) {
				__builtin_prefetch(b + (i + ITEM_AHEAD) * p->size, 1);
				__builtin_prefetch(b + (i + ITEM_AHEAD) * p->size + 64, 1);
			}
			if (p->ahead && i + AHEAD_FAR < n)
				p->ahead(p->ctx, b + (i + AHEAD_FAR) * p->size, 0);
			if (p->ahead && i + AHEAD_NEAR < n)
				p->ahead(p->ctx, b + (i + AHEAD_NEAR) * p->size, 1);
			rc = p->run(p->ctx, b + i * p->size);
		}
		if (rc < 0) {
			p->err = rc;
			gt_ring_stop(&p->ring); /* the caller learns it at its next hand-over */
			break;
		}
		gt_ring_release(&p->ring);
	}
	return NULL;
}

/* A pipe running run(ctx, item) on a thread of its own (ahead: bpipe.ahead); NULL when none
 * could be made. */
static bpipe *bpipe_new(size_t size, int (*run)(void *, void *), void (*ahead)(void *, const void *, int), void *ctx)
{
	bpipe *p = calloc(1, sizeof(*p));
	if (!p || !(p->buf = malloc(PIPE_BATCHES * PIPE_BATCH * size)) || gt_ring_init(&p->ring, PIPE_BATCHES, 1) < 0) {
		if (p)
			free(p->buf);
		free(p);
		return NULL;
	}
	p->size = size;
	p->run = run;
	p->ahead = ahead;
	p->ctx = ctx;
	p->cur = -1;
	if (pthread_create(&p->th, NULL, bpipe_main, p) != 0) {
		gt_ring_destroy(&p->ring);
		free(p->buf);
		free(p);
		return NULL;
	}
	return p;
}

/* The next free item of the caller's batch, NULL when the thread failed (*err). */
static void *bpipe_item(bpipe *p, int *err)
{
	*err = 0;
	if (p->cur < 0 && (p->cur = gt_ring_produce(&p->ring)) < 0) {
		*err = p->err; /* set before the thread stopped the ring */
		return NULL;
	}
	return p->buf + ((size_t)p->cur * PIPE_BATCH + p->cur_n) * p->size;
}

/* The item just filled is in; a full batch goes to the thread. 0 (the thread's error comes at
 * the next bpipe_item or at bpipe_end). */
static int bpipe_put(bpipe *p)
{
	if (++p->cur_n < PIPE_BATCH)
		return 0;
	p->n[p->cur] = p->cur_n;
	p->cur = -1;
	p->cur_n = 0;
	gt_ring_publish(&p->ring, 0);
	return 0;
}

/* End the thread: after it ran every item (0 or its error), or (stop) at once. p is freed. */
static int bpipe_end(bpipe *p, int stop)
{
	if (p->cur >= 0 && !stop) { /* the last, partly filled batch */
		p->n[p->cur] = p->cur_n;
		gt_ring_publish(&p->ring, 1);
	} else {
		gt_ring_end(&p->ring, stop);
	}
	pthread_join(p->th, NULL);
	int rc = p->err;
	gt_ring_destroy(&p->ring);
	free(p->buf);
	free(p);
	return rc;
}

/* ---- the sweep's thread ---- */

/* What the caller handed over: one call of ana_gpu_acc_add, _sample or _advance (104 bytes: 4
 * batches of 4 096 are 1.7 MiB). */
enum { IT_EV, IT_SAMPLE, IT_ADVANCE };
typedef struct gs_item {
	uint32_t what, leaf;   /* IT_*; a sample's leaf frame */
	union {
		gs_ev ev;
		ana_sample s;
		struct { uint64_t records, samples; } w;
	} u;
} gs_item;

static int run_item(void *ctx, void *item)
{
	ana_gpu_acc *a = ctx;
	gs_item *it = item;
	switch (it->what) {
	case IT_EV: return gs_add(a, &it->u.ev);
	case IT_SAMPLE: return gs_sample(a, &it->u.s, it->leaf);
	default: return gs_advance(a, it->u.w.records, it->u.w.samples);
	}
}

/* ---- the launch estimator's thread (fed by the sweep's) ---- */

/* One call of ana_launch_acc_api, _stack or _work, in the sweep's order. */
enum { LT_API, LT_STACK, LT_WORK };
typedef struct gs_litem {
	uint32_t what, kind, pid, corr, name_id;
	const ana_callstack *cs;
	gtt_cuda_api api;      /* LT_API */
	uint64_t start_ns, end_ns;
} gs_litem;

static int run_litem(void *ctx, void *item)
{
	ana_launch_acc *l = ctx;
	gs_litem *it = item;
	switch (it->what) {
	case LT_API: return ana_launch_acc_api(l, &it->api);
	case LT_STACK: return ana_launch_acc_stack(l, it->cs);
	default: return ana_launch_acc_work(l, it->kind, it->pid, it->corr, it->name_id, it->start_ns, it->end_ns);
	}
}

/* The estimator looks each call up in its table of the last 10 s of calls (tens of MiB: nearly
 * every lookup a cache miss, then a second for the call's entry): the slot is fetched early, the
 * entry it names later, so the misses overlap the items run meanwhile. */
static void litem_ahead(void *ctx, const void *item, int stage)
{
	const gs_litem *it = item;
	uint32_t pid = it->what == LT_API ? it->api.pid : it->pid, corr = it->what == LT_API ? it->api.correlation : it->corr;
	if (it->what == LT_STACK)
		return; /* a bounded sample of calls: not worth it */
	if (stage == 0)
		ana_launch_acc_prefetch(ctx, ana_hash_corr(pid, corr));
	else
		ana_launch_acc_prefetch_call(ctx, ana_hash_corr(pid, corr));
}

static gs_litem *litem(ana_gpu_acc *a, int *err)
{
	return bpipe_item(a->lpipe, err);
}

int gs_launch_api(ana_gpu_acc *a, const gtt_cuda_api *x)
{
	int err;
	if (!a->lpipe)
		return ana_launch_acc_api(a->launch, x);
	gs_litem *it = litem(a, &err);
	if (!it)
		return err;
	it->what = LT_API;
	it->api = *x;
	return bpipe_put(a->lpipe);
}

int gs_launch_stack(ana_gpu_acc *a, const ana_callstack *cs)
{
	int err;
	if (!a->lpipe)
		return ana_launch_acc_stack(a->launch, cs);
	gs_litem *it = litem(a, &err);
	if (!it)
		return err;
	it->what = LT_STACK;
	it->cs = cs;
	return bpipe_put(a->lpipe);
}

int gs_launch_work(ana_gpu_acc *a, uint32_t kind, uint32_t pid, uint32_t corr, uint32_t name_id, uint64_t start_ns,
                   uint64_t end_ns)
{
	int err;
	if (!a->lpipe)
		return ana_launch_acc_work(a->launch, kind, pid, corr, name_id, start_ns, end_ns);
	gs_litem *it = litem(a, &err);
	if (!it)
		return err;
	*it = (gs_litem){ .what = LT_WORK, .kind = kind, .pid = pid, .corr = corr, .name_id = name_id,
	                  .start_ns = start_ns, .end_ns = end_ns };
	return bpipe_put(a->lpipe);
}

/* ---- starting and ending ---- */

void gs_pipe_start(ana_gpu_acc *a)
{
	if (!(a->pipe = bpipe_new(sizeof(gs_item), run_item, NULL, a)))
		return; /* the caller's thread sweeps (and estimates) */
	/* the launch estimator (a third of the sweep's time) on a thread of its own too; it reads only
	 * what it is handed and the model's launch stacks, which stay put */
	a->lpipe = bpipe_new(sizeof(gs_litem), run_litem, litem_ahead, a->launch);
}

int gs_pipe_end(ana_gpu_acc *a)
{
	int rc = 0;
	if (a->pipe) {
		rc = bpipe_end(a->pipe, 0);
		a->pipe = NULL;
	}
	if (a->lpipe) { /* after the sweep's thread, which feeds it */
		int lrc = bpipe_end(a->lpipe, rc < 0);
		a->lpipe = NULL;
		if (rc == 0)
			rc = lrc;
	}
	return rc;
}

void gs_pipe_stop(ana_gpu_acc *a)
{
	if (a->pipe)
		bpipe_end(a->pipe, 1);
	if (a->lpipe)
		bpipe_end(a->lpipe, 1);
	a->pipe = a->lpipe = NULL;
}

/* ---- gpu_sum.h's entry points ---- */

int ana_gpu_acc_add(ana_gpu_acc *a, const gtt_record *rec)
{
	gs_ev ev;
	int err;
	if (!a->pipe)
		return gs_ev_of(rec, &ev) ? gs_add(a, &ev) : 0;
	gs_item *it = bpipe_item(a->pipe, &err);
	if (!it)
		return err;
	if (!gs_ev_of(rec, &it->u.ev))
		return 0; /* not one the sweep takes: the item stays free */
	it->what = IT_EV;
	return bpipe_put(a->pipe);
}

void ana_gpu_acc_feed_samples(ana_gpu_acc *a)
{
	a->fed = 1;
	a->s_mark = 0;
	gs_pipe_start(a);
}

int ana_gpu_acc_sample(ana_gpu_acc *a, const ana_sample *s)
{
	/* the leaf now, on the caller's thread: the model's stacks grow while it merges */
	uint32_t leaf = gs_leaf_frame(a->m, s->stack_id);
	int err;
	if (!a->pipe)
		return gs_sample(a, s, leaf);
	gs_item *it = bpipe_item(a->pipe, &err);
	if (!it)
		return err;
	it->what = IT_SAMPLE;
	it->leaf = leaf;
	it->u.s = *s;
	return bpipe_put(a->pipe);
}

int ana_gpu_acc_advance(ana_gpu_acc *a, uint64_t w_records, uint64_t w_samples)
{
	int err;
	if (!a->pipe)
		return gs_advance(a, w_records, w_samples);
	gs_item *it = bpipe_item(a->pipe, &err);
	if (!it)
		return err;
	it->what = IT_ADVANCE;
	it->u.w.records = w_records;
	it->u.w.samples = w_samples;
	return bpipe_put(a->pipe);
}
