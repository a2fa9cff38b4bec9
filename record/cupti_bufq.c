/* cupti_bufq.c — activity buffer stock and full-buffer queue (see cupti_bufq.h). One mutex,
 * held for a few pointer moves; the flush thread sleeps on a condition variable that CUPTI's
 * completion signals. */
#include "cupti_bufq.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct full {
	uint8_t *buf;
	size_t valid;
} full;

struct ag_bufq {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	size_t buf_bytes;
	unsigned max, stock_target;
	uint8_t **stock;          /* ready buffers, LIFO (the most recently used is warm) */
	unsigned n_stock;
	full *q;                  /* full buffers, FIFO ring of max entries */
	unsigned q_head, q_n;
	unsigned n_exist;         /* allocated: in the stock, with CUPTI, queued, or being read */
	int woken;
	ag_bufq_stats st;
};

static void cv_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

ag_bufq *ag_bufq_create(size_t buf_bytes, unsigned max_bufs, unsigned stock)
{
	ag_bufq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	if (max_bufs < 2)
		max_bufs = 2;
	q->buf_bytes = buf_bytes;
	q->max = max_bufs;
	q->stock_target = stock < max_bufs ? stock : max_bufs;
	q->stock = calloc(max_bufs, sizeof(*q->stock));
	q->q = calloc(max_bufs, sizeof(*q->q));
	if (!q->stock || !q->q) {
		ag_bufq_destroy(q);
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	cv_init(&q->cv);
	return q;
}

void ag_bufq_destroy(ag_bufq *q)
{
	if (!q)
		return;
	for (unsigned i = 0; q->stock && i < q->n_stock; i++)
		free(q->stock[i]);
	for (unsigned i = 0; q->q && i < q->q_n; i++)
		free(q->q[(q->q_head + i) % q->max].buf);
	free(q->stock);
	free(q->q);
	free(q);
}

size_t ag_bufq_buf_bytes(const ag_bufq *q)
{
	return q->buf_bytes;
}

/* Zeroed (CUPTI is told it gets zeroed buffers, so it does not clear them on the application
 * thread), 16-byte aligned (CUPTI wants 8). */
static uint8_t *alloc_buf(size_t bytes)
{
	return calloc(1, bytes);
}

uint8_t *ag_bufq_request(ag_bufq *q)
{
	uint8_t *b = NULL;
	int make = 0;
	pthread_mutex_lock(&q->lock);
	if (q->n_stock) {
		b = q->stock[--q->n_stock];
		q->st.n_requests++;
	} else if (q->n_exist < q->max) {
		q->n_exist++;
		make = 1;
	} else {
		q->st.n_refused++;
	}
	pthread_mutex_unlock(&q->lock);
	if (!make)
		return b;
	/* the stock ran dry (a burst, or the flush thread is behind): this thread pays once */
	b = alloc_buf(q->buf_bytes);
	pthread_mutex_lock(&q->lock);
	if (b) {
		q->st.n_requests++;
		q->st.n_alloc_app++;
	} else {
		q->n_exist--;
		q->st.n_refused++;
	}
	pthread_mutex_unlock(&q->lock);
	return b;
}

void ag_bufq_complete(ag_bufq *q, uint8_t *buf, size_t valid)
{
	if (!buf)
		return;
	pthread_mutex_lock(&q->lock);
	/* at most max buffers exist, so the ring always has room for one CUPTI held */
	q->q[(q->q_head + q->q_n) % q->max] = (full){ buf, valid };
	q->q_n++;
	if (q->q_n > q->st.peak_queued)
		q->st.peak_queued = q->q_n;
	q->st.n_complete++;
	q->woken = 1;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->lock);
}

int ag_bufq_take(ag_bufq *q, uint8_t **buf, size_t *valid)
{
	int got = 0;
	pthread_mutex_lock(&q->lock);
	if (q->q_n) {
		*buf = q->q[q->q_head].buf;
		*valid = q->q[q->q_head].valid;
		q->q_head = (q->q_head + 1) % q->max;
		q->q_n--;
		got = 1;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

void ag_bufq_release(ag_bufq *q, uint8_t *buf, size_t valid)
{
	if (!buf)
		return;
	/* back to all zeros: CUPTI only wrote the first valid bytes */
	memset(buf, 0, valid < q->buf_bytes ? valid : q->buf_bytes);
	pthread_mutex_lock(&q->lock);
	if (q->n_stock < q->max) {
		q->stock[q->n_stock++] = buf;
		buf = NULL;
	} else {
		q->n_exist--;
	}
	pthread_mutex_unlock(&q->lock);
	free(buf);
}

void ag_bufq_refill(ag_bufq *q)
{
	for (;;) {
		pthread_mutex_lock(&q->lock);
		int need = q->n_stock < q->stock_target && q->n_exist < q->max;
		if (need)
			q->n_exist++;
		pthread_mutex_unlock(&q->lock);
		if (!need)
			return;
		uint8_t *b = alloc_buf(q->buf_bytes);
		if (b)
			memset(b, 0, q->buf_bytes);    /* touch: the page faults here, not on the app thread */
		pthread_mutex_lock(&q->lock);
		if (b)
			q->stock[q->n_stock++] = b;
		else
			q->n_exist--;
		pthread_mutex_unlock(&q->lock);
		if (!b)
			return;
	}
}

void ag_bufq_wait(ag_bufq *q, uint64_t timeout_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_mutex_lock(&q->lock);
	while (!q->woken && !q->q_n)
		if (pthread_cond_timedwait(&q->cv, &q->lock, &ts) != 0)
			break;
	q->woken = 0;
	pthread_mutex_unlock(&q->lock);
}

void ag_bufq_wake(ag_bufq *q)
{
	pthread_mutex_lock(&q->lock);
	q->woken = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->lock);
}

void ag_bufq_atfork(ag_bufq *q, int phase)
{
	if (phase == 0) {
		pthread_mutex_lock(&q->lock);
		return;
	}
	if (phase == 2) {
		while (q->q_n && q->n_stock < q->max) {
			memset(q->q[q->q_head].buf, 0, q->q[q->q_head].valid < q->buf_bytes ? q->q[q->q_head].valid : q->buf_bytes);
			q->stock[q->n_stock++] = q->q[q->q_head].buf;
			q->q_head = (q->q_head + 1) % q->max;
			q->q_n--;
		}
		cv_init(&q->cv);
		memset(&q->st, 0, sizeof(q->st));
	}
	pthread_mutex_unlock(&q->lock);
}

void ag_bufq_stats_get(ag_bufq *q, ag_bufq_stats *st)
{
	pthread_mutex_lock(&q->lock);
	*st = q->st;
	st->n_exist = q->n_exist;
	pthread_mutex_unlock(&q->lock);
}
