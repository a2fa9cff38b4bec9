/* test_gt_ring.c — the batch ring between two threads (lib/gt_ring.c): every slot published is
 * consumed once, in order, with its contents as written, whatever the ring's size and wake-up
 * batch and whichever side is slower; the last slot ends the consumer; a producer that drains
 * waits until the consumer released everything (and the consumer is woken for it at once); a
 * consumer that stops unblocks the producer; an end with cancel leaves published slots unread. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gt_ring.h"
#include "testhelp.h"

#define SLOTS_MAX 16

typedef struct run {
	gt_ring q;
	size_t n_slots;
	long items;                /* items to pass */
	int slow_p, slow_c;        /* sleep now and then on that side */
	int drain_every;           /* the producer drains after every k-th slot (0 never) */
	long stop_after;           /* the consumer stops after this many (-1 never) */
	long slot_item[SLOTS_MAX]; /* the item a slot holds */
	int slot_last[SLOTS_MAX];
	/* what the consumer saw */
	long n_seen, bad_order, drained_bad;
	long in_use;               /* slots the consumer holds: the producer must see 0 after a drain */
	long produced, produce_refused;
} run;

static void nap(unsigned k)
{
	struct timespec ts = { 0, (long)(k % 50) * 1000 };
	nanosleep(&ts, NULL);
}

static void *producer(void *arg)
{
	run *r = arg;
	for (long i = 0; i < r->items; i++) {
		long slot = gt_ring_produce(&r->q);
		if (slot < 0) {
			r->produce_refused = 1;
			return NULL;
		}
		r->slot_item[slot] = i;
		r->slot_last[slot] = i == r->items - 1;
		gt_ring_publish(&r->q, i == r->items - 1);
		r->produced++;
		if (r->slow_p && i % 7 == 0)
			nap((unsigned)i);
		if (r->drain_every && i % r->drain_every == 0 && i != r->items - 1) {
			if (gt_ring_drain(&r->q) < 0) {
				r->produce_refused = 1;
				return NULL;
			}
			if (__atomic_load_n(&r->in_use, __ATOMIC_SEQ_CST) != 0)
				r->drained_bad++;
		}
	}
	return NULL;
}

/* Consume until the end (or stop_after); 1 when the last slot was seen. */
static int consume_all(run *r)
{
	long want = 0;
	for (;;) {
		if (r->stop_after >= 0 && r->n_seen == r->stop_after) {
			gt_ring_stop(&r->q);
			return 0;
		}
		long slot = gt_ring_consume(&r->q);
		if (slot < 0)
			return 0;
		__atomic_store_n(&r->in_use, 1, __ATOMIC_SEQ_CST);
		if (r->slot_item[slot] != want)
			r->bad_order++;
		want = r->slot_item[slot] + 1;
		int last = r->slot_last[slot];
		r->n_seen++;
		if (r->slow_c && r->n_seen % 5 == 0)
			nap((unsigned)r->n_seen);
		__atomic_store_n(&r->in_use, 0, __ATOMIC_SEQ_CST);
		gt_ring_release(&r->q);
		if (last)
			return 1;
	}
}

static void one(size_t n_slots, size_t wake, int slow_p, int slow_c, int drain_every)
{
	run r = { .n_slots = n_slots, .items = 5000, .slow_p = slow_p, .slow_c = slow_c, .drain_every = drain_every,
	          .stop_after = -1 };
	pthread_t th;
	if (gt_ring_init(&r.q, n_slots, wake) != 0 || pthread_create(&th, NULL, producer, &r) != 0) {
		th_check(0, "ring of %zu made", n_slots);
		return;
	}
	int ended = consume_all(&r);
	pthread_join(th, NULL);
	gt_ring_destroy(&r.q);
	th_check(ended && r.n_seen == r.items && !r.bad_order && !r.drained_bad && !r.produce_refused,
	         "%zu slots, wake %zu, slow %s%s: %ld of %ld in order, the last ends it (out of order %ld, a drain "
	         "returned with a slot held %ld)", n_slots, wake, slow_p ? "producer" : slow_c ? "consumer" : "neither",
	         drain_every ? ", draining" : "", r.n_seen, r.items, r.bad_order, r.drained_bad);
}

/* The consumer gives up while the producer waits for room (and, another time, in a drain). */
static void stopped(int drain_every)
{
	run r = { .n_slots = 4, .items = 100000, .drain_every = drain_every, .stop_after = 300 };
	pthread_t th;
	if (gt_ring_init(&r.q, 4, 2) != 0 || pthread_create(&th, NULL, producer, &r) != 0) {
		th_check(0, "ring made");
		return;
	}
	consume_all(&r);
	pthread_join(th, NULL); /* hangs if the stop did not reach it */
	gt_ring_destroy(&r.q);
	th_check(r.produce_refused && r.n_seen == 300 && r.produced < r.items,
	         "the consumer stops after 300%s: the producer is refused (it published %ld)",
	         drain_every ? " (producer draining)" : "", r.produced);
}

/* An end with cancel: slots published and not taken are left unread; without: read to the end. */
static void ended(void)
{
	gt_ring q;
	gt_ring_init(&q, 8, 4);
	for (int i = 0; i < 3; i++) {
		gt_ring_produce(&q);
		gt_ring_publish(&q, 0);
	}
	gt_ring_end(&q, 0);
	int n = 0;
	while (gt_ring_consume(&q) >= 0) {
		gt_ring_release(&q);
		n++;
	}
	th_check(n == 3, "an end without cancel: the 3 slots published before it are read, then -1 (%d)", n);
	gt_ring_destroy(&q);
	gt_ring_init(&q, 8, 4);
	for (int i = 0; i < 3; i++) {
		gt_ring_produce(&q);
		gt_ring_publish(&q, 0);
	}
	gt_ring_end(&q, 1);
	th_check(gt_ring_consume(&q) == -1, "an end with cancel: the consumer stops at once, 3 slots unread");
	gt_ring_destroy(&q);
}

int main(void)
{
	one(1, 1, 0, 0, 0);
	one(4, 1, 0, 1, 0);
	one(4, 1, 1, 0, 0);
	one(16, 8, 0, 1, 0);
	one(16, 8, 1, 0, 0);
	one(16, 8, 0, 0, 3);
	one(16, 8, 0, 1, 50);
	one(16, 16, 1, 1, 0);
	stopped(0);
	stopped(7);
	ended();
	return th_report();
}
