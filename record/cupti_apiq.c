/* cupti_apiq.c — per-thread single-producer queues of API call records (see cupti_apiq.h). The
 * owner writes the slot at head and publishes head with a release store; the flush thread reads
 * [tail, head) after an acquire load and then publishes tail. Queues are linked in one list under
 * a mutex taken only when a thread makes its first record, when the flush thread drains, and in a
 * fork()ed child. */
#include "cupti_apiq.h"

#include <pthread.h>
#include <stdlib.h>

#define QCAP 4096u           /* calls per thread between two drains (50 ms apart while tracing:
                                82 000 calls/s on one thread before the half-full wake-up) */

struct ag_apiq {
	uint32_t head;           /* written by the owner (release) */
	uint32_t tail;           /* written by the flush thread (release) */
	int gone;                /* the owner exited: free once drained */
	int woke;                /* the owner asked for an early drain since the last one */
	void (*wake)(void);
	struct ag_apiq *next;
	ag_api_call slot[QCAP];
};

static struct {
	pthread_mutex_t lock;
	ag_apiq *list;
} Q = { .lock = PTHREAD_MUTEX_INITIALIZER };

ag_apiq *ag_apiq_new(void (*wake)(void))
{
	ag_apiq *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->wake = wake;
	pthread_mutex_lock(&Q.lock);
	q->next = Q.list;
	Q.list = q;
	pthread_mutex_unlock(&Q.lock);
	return q;
}

int ag_apiq_put(ag_apiq *q, const ag_api_call *c)
{
	uint32_t h = q->head, t = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
	if (h - t >= QCAP)
		return -1; /* the caller has somewhere else to put it, or counts it lost */
	q->slot[h % QCAP] = *c;
	__atomic_store_n(&q->head, h + 1, __ATOMIC_RELEASE);
	if (h - t + 1 >= QCAP / 2 && !__atomic_load_n(&q->woke, __ATOMIC_RELAXED) && q->wake) {
		__atomic_store_n(&q->woke, 1, __ATOMIC_RELAXED);
		q->wake();
	}
	return 0;
}

void ag_apiq_release(ag_apiq *q)
{
	if (q)
		__atomic_store_n(&q->gone, 1, __ATOMIC_RELEASE);
}

uint64_t ag_apiq_drain(ag_apiq_fn fn, void *ctx)
{
	uint64_t n = 0;
	pthread_mutex_lock(&Q.lock);
	for (ag_apiq **pp = &Q.list; *pp;) {
		ag_apiq *q = *pp;
		int gone = __atomic_load_n(&q->gone, __ATOMIC_ACQUIRE); /* before head: all its calls are in */
		uint32_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE), t = q->tail;
		for (; t != h; t++, n++)
			fn(ctx, &q->slot[t % QCAP]);
		__atomic_store_n(&q->tail, t, __ATOMIC_RELEASE);
		__atomic_store_n(&q->woke, 0, __ATOMIC_RELAXED);
		if (gone) {
			*pp = q->next;
			free(q);
		} else {
			pp = &q->next;
		}
	}
	pthread_mutex_unlock(&Q.lock);
	return n;
}

void ag_apiq_fork_child(ag_apiq *keep)
{
	/* the lock may have been held by a thread that does not exist here: start it afresh */
	pthread_mutex_init(&Q.lock, NULL);
	for (ag_apiq *q = Q.list, *next; q; q = next) {
		next = q->next;
		if (q != keep)
			free(q);
	}
	Q.list = keep;
	if (keep) {
		keep->next = NULL;
		keep->head = keep->tail = 0;
		keep->woke = 0;
	}
}
