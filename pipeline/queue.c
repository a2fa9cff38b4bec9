/* queue.c — the hidden-state queue: a mutex-protected ring with a min_ready watermark and depth sampling. */
#include "queue.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gt_counters.h"

/* The ready count as a counter on the profiler's clock (a no-op unless run under gt-record):
 * emitted at the same instant the telemetry's observation uses, so the trace's step function
 * and telemetry.json's samples agree exactly. */
#define COUNTER_READY "queue.ready"

struct pl_queue {
	pthread_mutex_t mu;
	pthread_cond_t not_full, ready;
	void **ring;
	int depth, min_ready, head, count;
	int producers_left, aborted;
	/* observation */
	int64_t start_ns, last_ns, area_ns, below_ns, interval_ns, next_sample_ns;
	int min_seen, max_seen;
	int64_t puts, gets, producer_wait_ns, consumer_wait_ns;
	int64_t *sample_t;
	int32_t *sample_d;
	size_t n_samples, max_samples;
};

int64_t pl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

pl_queue *pl_queue_create(int depth, int min_ready, int n_producers, int64_t start_ns,
                          int64_t sample_interval_ns, size_t max_samples)
{
	pl_queue *q = NULL;
	if (depth < 1 || min_ready < 0 || min_ready > depth || n_producers < 1 || sample_interval_ns <= 0)
		return NULL;
	q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->ring = calloc((size_t)depth, sizeof *q->ring);
	q->sample_t = malloc((max_samples ? max_samples : 1) * sizeof *q->sample_t);
	q->sample_d = malloc((max_samples ? max_samples : 1) * sizeof *q->sample_d);
	if (!q->ring || !q->sample_t || !q->sample_d) {
		pl_queue_destroy(q);
		return NULL;
	}
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->not_full, NULL);
	pthread_cond_init(&q->ready, NULL);
	q->depth = depth;
	q->min_ready = min_ready;
	q->producers_left = n_producers;
	q->start_ns = q->last_ns = q->next_sample_ns = start_ns;
	q->interval_ns = sample_interval_ns;
	q->max_samples = max_samples;
	q->min_seen = q->max_seen = 0;
	gt_counter_watermark(COUNTER_READY, min_ready);
	gt_counter_at(COUNTER_READY, (uint64_t)start_ns, 0);
	return q;
}

void pl_queue_destroy(pl_queue *q)
{
	if (!q)
		return;
	if (q->ring) {
		pthread_mutex_destroy(&q->mu);
		pthread_cond_destroy(&q->not_full);
		pthread_cond_destroy(&q->ready);
	}
	free(q->ring);
	free(q->sample_t);
	free(q->sample_d);
	free(q);
}

/* Accounts the time since the last change at the current count; call before changing it. */
static void observe(pl_queue *q, int64_t now)
{
	if (now < q->last_ns)
		now = q->last_ns;
	while (q->next_sample_ns <= now && q->n_samples < q->max_samples) {
		q->sample_t[q->n_samples] = q->next_sample_ns - q->start_ns;
		q->sample_d[q->n_samples] = q->count;
		q->n_samples++;
		q->next_sample_ns += q->interval_ns;
	}
	q->area_ns += (int64_t)q->count * (now - q->last_ns);
	if (q->count <= q->min_ready)
		q->below_ns += now - q->last_ns;
	q->last_ns = now;
}

static void counted(pl_queue *q)
{
	if (q->count < q->min_seen)
		q->min_seen = q->count;
	if (q->count > q->max_seen)
		q->max_seen = q->count;
}

int pl_queue_put(pl_queue *q, void *item, int64_t *waited_ns)
{
	int rc = 0;
	int64_t t0 = pl_now_ns(), waited = 0;

	pthread_mutex_lock(&q->mu);
	if (q->count == q->depth && !q->aborted) {
		while (q->count == q->depth && !q->aborted)
			pthread_cond_wait(&q->not_full, &q->mu);
		waited = pl_now_ns() - t0;
		q->producer_wait_ns += waited;
	}
	if (q->aborted) {
		rc = -1;
		goto out;
	}
	int64_t now = pl_now_ns();
	observe(q, now);
	q->ring[(q->head + q->count) % q->depth] = item;
	q->count++;
	q->puts++;
	counted(q);
	gt_counter_at(COUNTER_READY, (uint64_t)now, q->count);
	if (q->count >= q->min_ready)
		pthread_cond_broadcast(&q->ready);
out:
	pthread_mutex_unlock(&q->mu);
	if (waited_ns)
		*waited_ns = waited;
	return rc;
}

void *pl_queue_get(pl_queue *q, int64_t *waited_ns)
{
	void *item = NULL;
	int64_t t0 = pl_now_ns(), waited = 0;

	pthread_mutex_lock(&q->mu);
	/* wait below the watermark while producers remain; with none left, drain */
	if (!q->aborted && (q->count == 0 || q->count < q->min_ready) && q->producers_left > 0) {
		while (!q->aborted && (q->count == 0 || q->count < q->min_ready) && q->producers_left > 0)
			pthread_cond_wait(&q->ready, &q->mu);
		waited = pl_now_ns() - t0;
		q->consumer_wait_ns += waited;
	}
	if (q->aborted || q->count == 0)
		goto out;
	int64_t now = pl_now_ns();
	observe(q, now);
	item = q->ring[q->head];
	q->head = (q->head + 1) % q->depth;
	q->count--;
	q->gets++;
	counted(q);
	gt_counter_at(COUNTER_READY, (uint64_t)now, q->count);
	pthread_cond_signal(&q->not_full);
out:
	pthread_mutex_unlock(&q->mu);
	if (waited_ns)
		*waited_ns = waited;
	return item;
}

void pl_queue_producer_done(pl_queue *q)
{
	pthread_mutex_lock(&q->mu);
	if (q->producers_left > 0 && --q->producers_left == 0)
		pthread_cond_broadcast(&q->ready);
	pthread_mutex_unlock(&q->mu);
}

void pl_queue_abort(pl_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->aborted = 1;
	pthread_cond_broadcast(&q->ready);
	pthread_cond_broadcast(&q->not_full);
	pthread_mutex_unlock(&q->mu);
}

void *pl_queue_take_left(pl_queue *q)
{
	void *item = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->count > 0) {
		item = q->ring[q->head];
		q->head = (q->head + 1) % q->depth;
		q->count--;
	}
	pthread_mutex_unlock(&q->mu);
	return item;
}

void pl_queue_finish(pl_queue *q, int64_t end_ns, pl_queue_stats *out)
{
	pthread_mutex_lock(&q->mu);
	observe(q, end_ns);
	/* the value held until the end: the trace's span is the span observed here */
	gt_counter_at(COUNTER_READY, (uint64_t)q->last_ns, q->count);
	int64_t span = q->last_ns - q->start_ns;
	*out = (pl_queue_stats){
		.depth = q->depth,
		.min_ready = q->min_ready,
		.puts = q->puts,
		.gets = q->gets,
		.min_seen = q->min_seen,
		.max_seen = q->max_seen,
		.mean = span > 0 ? (double)q->area_ns / (double)span : (double)q->count,
		.observed_ns = span,
		.at_or_below_ns = q->below_ns,
		.producer_wait_ns = q->producer_wait_ns,
		.consumer_wait_ns = q->consumer_wait_ns,
		.sample_interval_ns = q->interval_ns,
		.sample_t_ns = q->sample_t,
		.sample_depth = q->sample_d,
		.n_samples = q->n_samples,
	};
	pthread_mutex_unlock(&q->mu);
}
