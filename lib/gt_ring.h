/* gt_ring.h — batches handed from one thread to another, in order: a bounded ring of slots whose
 * contents are the caller's. The producer fills the slot gt_ring_produce gives and publishes it;
 * the consumer takes the slots in that order (gt_ring_consume) and releases each when it is done
 * with it. Wake-ups come in batches: a waiting consumer is woken when `wake` slots are published
 * (sooner for the last one, or when the producer waits for it), a producer that found every slot
 * taken when `wake` are free again. One producer thread, one consumer thread.
 * Return rule: lib/'s (0 or a negative GTT_E* code); a slot number, or -1 where the call says. */
#ifndef GT_RING_H
#define GT_RING_H

#include <pthread.h>
#include <stddef.h>

typedef struct gt_ring {
	size_t n, wake;
	size_t head, tail;     /* [head, tail) published and not released; head is the consumer's next */
	int end, cancel, stop; /* no slot follows; the consumer is to stop; the consumer stopped */
	int drain;             /* the producer waits until every published slot is released */
	int p_waits, c_waits;
	pthread_mutex_t mu;
	pthread_cond_t cv_p, cv_c;
} gt_ring;

/* A ring of n_slots (>= 1) slots, waking by wake (1..n_slots). 0, or GTT_ENOMEM when the lock
 * cannot be made. */
int gt_ring_init(gt_ring *q, size_t n_slots, size_t wake);
/* After both threads are done with it. */
void gt_ring_destroy(gt_ring *q);

/* ---- the producer ---- */
/* The slot to fill next (0..n-1), waiting while every slot is published and not released; -1
 * once the consumer stopped. */
long gt_ring_produce(gt_ring *q);
/* The slot gt_ring_produce gave is filled; last: no slot follows it. */
void gt_ring_publish(gt_ring *q, int last);
/* Wait until the consumer has released every published slot (it is woken for them at once): 0,
 * or -1 when it stopped instead. */
int gt_ring_drain(gt_ring *q);
/* No slot follows (when the last one was not published as such). cancel: the consumer stops at
 * its next gt_ring_consume, slots published and not taken left unread. */
void gt_ring_end(gt_ring *q, int cancel);

/* ---- the consumer ---- */
/* The next published slot, waiting for it; -1 once every slot up to the last was taken, or the
 * producer ended with cancel. */
long gt_ring_consume(gt_ring *q);
/* The consumer is done with the slot gt_ring_consume gave last. */
void gt_ring_release(gt_ring *q);
/* Give up: gt_ring_produce and gt_ring_drain return -1 from now on (whatever the consumer wants
 * the producer to learn, such as its error, it sets before). */
void gt_ring_stop(gt_ring *q);

#endif
