/* gpu_queue.c — the GPU sweep's reorder queue (gpu_sum_priv.h): events come in file order and
 * leave by (time, kind, file order), every one before a watermark at each release. Events within
 * reach of the horizon wait in a calendar of short time buckets (a list per bucket, sorted when
 * the bucket is released: a few events each); the rest — those that came later than an earlier
 * release (late), or too far ahead of the calendar — in a binary heap, merged in at release. The
 * order out is the one a single heap of every event gives. */
#include <stdlib.h>

#include "gpu_sum_priv.h"
#include "heap.h"

/* A bucket spans 2^16 ns (65.5 us): a few CUDA records each at 57 000 records/s. */
#define BUCKET_SHIFT 16
#define CAL_MIN 64
#define CAL_MAX (1u << 18) /* 17 s of buckets: a 1 MiB array of list heads */

static int key_less(const gs_key *x, const gs_key *y)
{
	if (x->t != y->t)
		return x->t < y->t;
	if (x->type != y->type)
		return x->type < y->type;
	return x->seq < y->seq;
}

int gs_queue_init(gs_queue *q, uint64_t horizon_ns)
{
	uint64_t need = horizon_ns == UINT64_MAX ? CAL_MAX : (horizon_ns >> BUCKET_SHIFT) + 2;
	size_t n = CAL_MIN;
	while (n < need && n < CAL_MAX)
		n *= 2;
	q->cal = calloc(n, sizeof(*q->cal));
	q->n_cal = n;
	return q->cal ? 0 : GTT_ENOMEM;
}

void gs_queue_free(gs_queue *q)
{
	free(q->pool.v);
	free(q->link.v);
	free(q->free_ev.v);
	free(q->heap.v);
	free(q->batch.v);
	free(q->cal);
}

ANA_HEAP_DEFINE(key_heap, gs_key, key_less)

int gs_queue_push(gs_queue *q, const gs_ev *e, uint64_t *peak)
{
	uint32_t idx;
	if (q->free_ev.n) {
		idx = q->free_ev.v[--q->free_ev.n];
	} else {
		if (!ana_vec_push(q->pool) || !ana_vec_push(q->link))
			return GTT_ENOMEM;
		idx = (uint32_t)(q->pool.n - 1);
	}
	q->pool.v[idx] = *e;
	gs_link *l = &q->link.v[idx];
	l->t = e->t;
	l->seq = e->seq;
	l->type = e->type;
	uint64_t b = e->t >> BUCKET_SHIFT;
	if (!q->started) {
		q->started = 1;
		q->base = b;
	}
	if (e->t >= q->released && b >= q->base && b - q->base < q->n_cal) {
		uint32_t *head = &q->cal[b & (q->n_cal - 1)];
		l->next = *head;
		*head = idx + 1;
		q->n_in_cal++;
	} else {
		gs_key k = { e->t, e->seq, e->type, idx };
		if (ana_heap_push(key_heap, q->heap, &k) < 0)
			return GTT_ENOMEM;
	}
	if (q->heap.n + q->n_in_cal > *peak)
		*peak = q->heap.n + q->n_in_cal;
	return 0;
}

/* Sort keys[0..n) by key_less: a bucket's few events, or more when records bunch up. */
static int cmp_key(const void *x, const void *y)
{
	return key_less(x, y) ? -1 : key_less(y, x);
}

static void sort_keys(gs_key *k, size_t n)
{
	if (n > 32) {
		qsort(k, n, sizeof(*k), cmp_key);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		gs_key x = k[i];
		size_t j = i;
		for (; j > 0 && key_less(&x, &k[j - 1]); j--)
			k[j] = k[j - 1];
		k[j] = x;
	}
}

int gs_queue_release(gs_queue *q, uint64_t w)
{
	q->batch.n = 0;
	q->next_batch = 0;
	if (q->n_in_cal) {
		uint64_t wb = w >> BUCKET_SHIFT, last = q->base + q->n_cal - 1;
		if (wb < last)
			last = wb;
		/* buckets before w's are taken whole; w's keeps what is not before w */
		for (uint64_t b = q->base; b <= last && q->n_in_cal; b++) {
			uint32_t *link = &q->cal[b & (q->n_cal - 1)];
			size_t from = q->batch.n;
			while (*link) {
				uint32_t idx = *link - 1;
				const gs_link *e = &q->link.v[idx];
				if (e->t >= w) {
					link = &q->link.v[idx].next;
					continue;
				}
				gs_key *k = ana_vec_push(q->batch);
				if (!k)
					return GTT_ENOMEM;
				*k = (gs_key){ e->t, e->seq, e->type, idx };
				*link = e->next;
				q->n_in_cal--;
			}
			if (q->batch.n > from) /* (an empty batch has no array yet) */
				sort_keys(q->batch.v + from, q->batch.n - from);
		}
	}
	/* every bucket before w's is empty now: the calendar starts at w's */
	if (w >> BUCKET_SHIFT > q->base)
		q->base = w >> BUCKET_SHIFT;
	if (w > q->released)
		q->released = w;
	return 0;
}

/* How far ahead in a release's batch gs_queue_next fetches events into the cache: they were
 * queued a horizon ago (a sweep's other tables have pushed them out since), and the sweep reads
 * the one PREFETCH_AHEAD (gpu_sum.c: 12) ahead of the next for its own prefetches. */
#define POOL_AHEAD 20

int gs_queue_next(gs_queue *q, uint64_t w, gs_ev *out)
{
	gs_key k;
	if (q->next_batch + POOL_AHEAD < q->batch.n) {
		const char *p = (const char *)&q->pool.v[q->batch.v[q->next_batch + POOL_AHEAD].idx];
		__builtin_prefetch(p);
		__builtin_prefetch(p + 64);
	}
	int from_heap = q->heap.n && q->heap.v[0].t < w;
	if (q->next_batch < q->batch.n) {
		if (from_heap && key_less(&q->heap.v[0], &q->batch.v[q->next_batch]))
			k = ana_heap_pop(key_heap, q->heap);
		else
			k = q->batch.v[q->next_batch++];
	} else if (from_heap) {
		k = ana_heap_pop(key_heap, q->heap);
	} else {
		return 0;
	}
	*out = q->pool.v[k.idx];
	uint32_t *f = ana_vec_push(q->free_ev);
	if (!f)
		return GTT_ENOMEM;
	*f = k.idx;
	return 1;
}

uint64_t gs_queue_min_before(const gs_queue *q, uint64_t w)
{
	uint64_t m = w;
	for (size_t i = q->next_batch; i < q->batch.n; i++) /* released, not handed out yet */
		if (q->batch.v[i].t < m)
			m = q->batch.v[i].t;
	if (q->heap.n && q->heap.v[0].t < m)
		m = q->heap.v[0].t;
	if (!q->n_in_cal)
		return m;
	/* a bucket holds the times of its own span: the first non-empty one before m's has the earliest */
	uint64_t last = q->base + q->n_cal - 1, mb = m >> BUCKET_SHIFT;
	if (mb < last)
		last = mb;
	for (uint64_t b = q->base; b <= last; b++) {
		uint32_t l = q->cal[b & (q->n_cal - 1)];
		if (!l)
			continue;
		for (; l; l = q->link.v[l - 1].next)
			if (q->link.v[l - 1].t < m)
				m = q->link.v[l - 1].t;
		break;
	}
	return m;
}

const gs_ev *gs_queue_peek(const gs_queue *q, size_t ahead)
{
	size_t i = q->next_batch + ahead;
	return i < q->batch.n ? &q->pool.v[q->batch.v[i].idx] : NULL;
}
