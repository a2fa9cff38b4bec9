/* queue.h — the hidden-state queue between targets and drafters: bounded, with a min_ready watermark. */
#ifndef PL_QUEUE_H
#define PL_QUEUE_H
#include <stddef.h>
#include <stdint.h>

typedef struct pl_queue pl_queue;

typedef struct pl_queue_stats {
	int depth, min_ready;
	int64_t puts, gets;
	int min_seen, max_seen;        /* lowest / highest number of ready items over the run */
	double mean;                   /* time-weighted mean number of ready items */
	int64_t observed_ns;           /* time covered by mean and the fraction below */
	int64_t at_or_below_ns;        /* time with ready items <= min_ready */
	int64_t producer_wait_ns;      /* total time producers blocked on a full queue */
	int64_t consumer_wait_ns;      /* total time consumers waited below the watermark */
	int64_t sample_interval_ns;
	const int64_t *sample_t_ns;    /* sample times, relative to the queue's start */
	const int32_t *sample_depth;   /* ready items at each sample time */
	size_t n_samples;
} pl_queue_stats;

/* A queue of at most depth items (depth >= 1). Consumers wait while fewer than min_ready
 * (0..depth) items are ready, unless every one of the n_producers is done, in which case they
 * drain what is left. The depth is sampled every sample_interval_ns (capped at max_samples
 * samples) from start_ns (CLOCK_MONOTONIC). NULL on ENOMEM or bad arguments. */
pl_queue *pl_queue_create(int depth, int min_ready, int n_producers, int64_t start_ns,
                          int64_t sample_interval_ns, size_t max_samples);

/* Frees the queue (accepts NULL); items still inside are not touched (see pl_queue_take_left). */
void pl_queue_destroy(pl_queue *q);

/* Adds item (not NULL), blocking while the queue is full. Returns 0, or -1 when the queue was
 * aborted (the caller still owns item). waited_ns (may be NULL) receives the time blocked. */
int pl_queue_put(pl_queue *q, void *item, int64_t *waited_ns);

/* Takes the oldest item, waiting below the watermark. NULL when every producer is done and
 * the queue is empty, or when it was aborted. waited_ns (may be NULL) gets the time blocked. */
void *pl_queue_get(pl_queue *q, int64_t *waited_ns);

/* One producer will put no more items; the last one wakes every waiting consumer. */
void pl_queue_producer_done(pl_queue *q);

/* Wakes everybody and makes every later put/get fail at once (used on errors). */
void pl_queue_abort(pl_queue *q);

/* After all workers stopped: removes and returns one leftover item, NULL when empty. */
void *pl_queue_take_left(pl_queue *q);

/* Ends the observation at end_ns (fills samples up to it) and copies the statistics; the
 * sample arrays stay owned by the queue. Call once, after the workers are done. */
void pl_queue_finish(pl_queue *q, int64_t end_ns, pl_queue_stats *out);

/* CLOCK_MONOTONIC now, in nanoseconds. */
int64_t pl_now_ns(void);

#endif
