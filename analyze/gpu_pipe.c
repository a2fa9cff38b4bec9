/* gpu_pipe.c — the GPU sweep's entry points (gpu_sum.h) and, for an accumulator fed samples by a
 * streaming loader, the sweep on a thread of its own: the caller's thread only copies each
 * record, sample and watermark into batches, in the order it makes the calls, and the sweep's
 * thread makes the same calls in the same order, so the sums are those of one thread. */
#include <pthread.h>
#include <stdlib.h>

#include "gpu_sum_priv.h"

/* What the caller handed over: one call of ana_gpu_acc_add, _sample or _advance. */
enum { IT_EV, IT_SAMPLE, IT_ADVANCE };
typedef struct gs_item {
	uint32_t what, leaf;   /* IT_*; a sample's leaf frame */
	union {
		gs_ev ev;
		ana_sample s;
		struct { uint64_t records, samples; } w;
	} u;
} gs_item;

/* Batches in a ring: the caller fills b[tail % PIPE_BATCHES] (cur) while the thread sweeps
 * b[head % ...] up to tail; at most PIPE_BATCHES x PIPE_BATCH items (104 bytes each, 1.7 MiB) wait. */
#define PIPE_BATCH 4096
#define PIPE_BATCHES 4

typedef struct pipe_batch {
	gs_item it[PIPE_BATCH];
	size_t n;
} pipe_batch;

typedef struct gs_pipe gs_pipe;
struct gs_pipe {
	ana_gpu_acc *a;
	pipe_batch *b;
	pipe_batch *cur;       /* the caller's batch being filled, NULL none */
	size_t head, tail;     /* [head, tail) handed over (under mu) */
	int end, stop, err;    /* (under mu) no more batches; give up; the sweep's error */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static int run_item(ana_gpu_acc *a, gs_item *it)
{
	switch (it->what) {
	case IT_EV: return gs_add(a, &it->u.ev);
	case IT_SAMPLE: return gs_sample(a, &it->u.s, it->leaf);
	default: return gs_advance(a, it->u.w.records, it->u.w.samples);
	}
}

static void *pipe_main(void *arg)
{
	gs_pipe *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->head == p->tail && !p->end && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop || p->head == p->tail) { /* given up, or every batch swept after the end */
			pthread_mutex_unlock(&p->mu);
			break;
		}
		pipe_batch *b = &p->b[p->head % PIPE_BATCHES];
		pthread_mutex_unlock(&p->mu);
		int rc = 0;
		for (size_t i = 0; i < b->n && rc == 0; i++)
			rc = run_item(p->a, &b->it[i]);
		pthread_mutex_lock(&p->mu);
		p->head++;
		if (rc < 0)
			p->err = rc;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (rc < 0)
			break; /* the caller learns it at its next hand-over */
	}
	return NULL;
}

void gs_pipe_start(ana_gpu_acc *a)
{
	gs_pipe *p = calloc(1, sizeof(*p));
	if (!p || !(p->b = malloc(PIPE_BATCHES * sizeof(*p->b)))) {
		free(p);
		return; /* the caller's thread sweeps */
	}
	p->a = a;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->th, NULL, pipe_main, p) != 0) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p->b);
		free(p);
		return;
	}
	a->pipe = p;
}

/* The next free item of the caller's batch, NULL when the sweep failed (*err). */
static gs_item *item(gs_pipe *p, int *err)
{
	if (!p->cur) {
		pthread_mutex_lock(&p->mu);
		while (p->tail - p->head == PIPE_BATCHES && !p->err)
			pthread_cond_wait(&p->cv, &p->mu);
		*err = p->err;
		if (!*err) {
			p->cur = &p->b[p->tail % PIPE_BATCHES];
			p->cur->n = 0;
		}
		pthread_mutex_unlock(&p->mu);
		if (*err)
			return NULL;
	}
	return &p->cur->it[p->cur->n];
}

/* The item just filled is in; a full batch goes to the thread. 0 or the sweep's error. */
static int put(gs_pipe *p)
{
	int err;
	if (++p->cur->n < PIPE_BATCH)
		return 0;
	pthread_mutex_lock(&p->mu);
	p->tail++;
	p->cur = NULL;
	err = p->err;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return err;
}

static void pipe_join(ana_gpu_acc *a, int stop)
{
	gs_pipe *p = a->pipe;
	pthread_mutex_lock(&p->mu);
	if (p->cur && !stop)
		p->tail++; /* the last, partly filled batch */
	p->cur = NULL;
	p->end = 1;
	p->stop = stop;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
}

int gs_pipe_end(ana_gpu_acc *a)
{
	gs_pipe *p = a->pipe;
	if (!p)
		return 0;
	pipe_join(a, 0);
	int rc = p->err;
	free(p->b);
	free(p);
	a->pipe = NULL;
	return rc;
}

void gs_pipe_stop(ana_gpu_acc *a)
{
	gs_pipe *p = a->pipe;
	if (!p)
		return;
	pipe_join(a, 1);
	free(p->b);
	free(p);
	a->pipe = NULL;
}

/* ---- gpu_sum.h's entry points ---- */

int ana_gpu_acc_add(ana_gpu_acc *a, const gtt_record *rec)
{
	gs_ev ev;
	int err;
	if (!a->pipe)
		return gs_ev_of(rec, &ev) ? gs_add(a, &ev) : 0;
	gs_item *it = item(a->pipe, &err);
	if (!it)
		return err;
	if (!gs_ev_of(rec, &it->u.ev))
		return 0; /* not one the sweep takes: the item stays free */
	it->what = IT_EV;
	return put(a->pipe);
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
	gs_item *it = item(a->pipe, &err);
	if (!it)
		return err;
	it->what = IT_SAMPLE;
	it->leaf = leaf;
	it->u.s = *s;
	return put(a->pipe);
}

int ana_gpu_acc_advance(ana_gpu_acc *a, uint64_t w_records, uint64_t w_samples)
{
	int err;
	if (!a->pipe)
		return gs_advance(a, w_records, w_samples);
	gs_item *it = item(a->pipe, &err);
	if (!it)
		return err;
	it->what = IT_ADVANCE;
	it->u.w.records = w_records;
	it->u.w.samples = w_samples;
	return put(a->pipe);
}
