/* gt_ring.c — the batch ring between two threads (gt_ring.h): one lock, a condition variable per
 * side, and each side told to wake only when the other waits and there is enough for it. */
#include "gt_ring.h"
#include "gtt.h"

int gt_ring_init(gt_ring *q, size_t n_slots, size_t wake)
{
	*q = (gt_ring){ .n = n_slots ? n_slots : 1 };
	q->wake = wake < 1 ? 1 : wake > q->n ? q->n : wake;
	if (pthread_mutex_init(&q->mu, NULL) != 0)
		return GTT_ENOMEM;
	if (pthread_cond_init(&q->cv_p, NULL) != 0) {
		pthread_mutex_destroy(&q->mu);
		return GTT_ENOMEM;
	}
	if (pthread_cond_init(&q->cv_c, NULL) != 0) {
		pthread_cond_destroy(&q->cv_p);
		pthread_mutex_destroy(&q->mu);
		return GTT_ENOMEM;
	}
	return 0;
}

void gt_ring_destroy(gt_ring *q)
{
	pthread_cond_destroy(&q->cv_c);
	pthread_cond_destroy(&q->cv_p);
	pthread_mutex_destroy(&q->mu);
}

/* (under mu) Wake the consumer if it waits and has reason to go on. */
static void wake_consumer(gt_ring *q)
{
	if (q->c_waits && (q->tail - q->head >= q->wake || q->end || q->drain || q->cancel))
		pthread_cond_signal(&q->cv_c);
}

long gt_ring_produce(gt_ring *q)
{
	pthread_mutex_lock(&q->mu);
	if (!q->stop && q->tail - q->head == q->n) {
		/* full: woken when wake slots are free again, not for each one */
		q->p_waits = 1;
		while (!q->stop && q->tail - q->head > q->n - q->wake)
			pthread_cond_wait(&q->cv_p, &q->mu);
		q->p_waits = 0;
	}
	long slot = q->stop ? -1 : (long)(q->tail % q->n);
	pthread_mutex_unlock(&q->mu);
	return slot;
}

void gt_ring_publish(gt_ring *q, int last)
{
	pthread_mutex_lock(&q->mu);
	q->tail++;
	if (last)
		q->end = 1;
	wake_consumer(q);
	pthread_mutex_unlock(&q->mu);
}

int gt_ring_drain(gt_ring *q)
{
	pthread_mutex_lock(&q->mu);
	q->drain = 1;
	wake_consumer(q);
	q->p_waits = 1;
	while (!q->stop && q->head != q->tail)
		pthread_cond_wait(&q->cv_p, &q->mu);
	q->p_waits = 0;
	q->drain = 0;
	int rc = q->stop ? -1 : 0;
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void gt_ring_end(gt_ring *q, int cancel)
{
	pthread_mutex_lock(&q->mu);
	q->end = 1;
	q->cancel |= cancel;
	wake_consumer(q);
	pthread_mutex_unlock(&q->mu);
}

long gt_ring_consume(gt_ring *q)
{
	pthread_mutex_lock(&q->mu);
	if (q->head == q->tail && !q->end && !q->cancel) {
		/* empty: woken when wake slots are published, the last one is, or the producer waits
		 * for this side */
		q->c_waits = 1;
		while (!q->cancel && !(q->tail - q->head >= q->wake || (q->head != q->tail && q->drain) || q->end))
			pthread_cond_wait(&q->cv_c, &q->mu);
		q->c_waits = 0;
	}
	long slot = q->cancel || q->head == q->tail ? -1 : (long)(q->head % q->n);
	pthread_mutex_unlock(&q->mu);
	return slot;
}

void gt_ring_release(gt_ring *q)
{
	pthread_mutex_lock(&q->mu);
	q->head++;
	if (q->p_waits && (q->head == q->tail || (!q->drain && q->tail - q->head <= q->n - q->wake)))
		pthread_cond_signal(&q->cv_p);
	pthread_mutex_unlock(&q->mu);
}

void gt_ring_stop(gt_ring *q)
{
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_signal(&q->cv_p);
	pthread_mutex_unlock(&q->mu);
}
