/* alloc.c — per-worker device memory: raw churn or a fence-aware caching allocator. */
#include "alloc.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct block {
	void *p;
	size_t bytes;       /* as allocated from the backend */
	int in_use;
	pl_fence *fence;    /* for a cached free block: reuse only after this point */
} block;

struct pl_alloc {
	const pl_backend *be;
	pl_dev *dev;
	int cached;
	pthread_mutex_t mu;
	block *blocks;
	size_t n_blocks, cap_blocks;
	size_t reserved_bytes;
	pl_alloc_stats stats;
};

pl_alloc *pl_alloc_create(const pl_backend *be, pl_dev *dev, int cached)
{
	pl_alloc *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->be = be;
	a->dev = dev;
	a->cached = cached;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void pl_alloc_destroy(pl_alloc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_blocks; i++) {
		a->be->fence_sync(a->blocks[i].fence);
		a->be->fence_destroy(a->blocks[i].fence);
		a->be->raw_free(a->dev, a->blocks[i].p, a->blocks[i].bytes);
	}
	free(a->blocks);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static size_t round_size(size_t bytes)
{
	const size_t small = 512, large = 2u << 20;
	if (bytes < (1u << 20))
		return (bytes + small - 1) / small * small;
	return (bytes + large - 1) / large * large;
}

static int add_block(pl_alloc *a, void *p, size_t bytes)
{
	if (a->n_blocks == a->cap_blocks) {
		size_t cap = a->cap_blocks ? a->cap_blocks * 2 : 64;
		block *nb = realloc(a->blocks, cap * sizeof *nb);
		if (!nb)
			return -1;
		a->blocks = nb;
		a->cap_blocks = cap;
	}
	a->blocks[a->n_blocks++] = (block){ .p = p, .bytes = bytes, .in_use = 1 };
	a->reserved_bytes += bytes;
	if ((int64_t)a->reserved_bytes > a->stats.peak_reserved_bytes)
		a->stats.peak_reserved_bytes = (int64_t)a->reserved_bytes;
	return 0;
}

void *pl_alloc_get(pl_alloc *a, size_t bytes)
{
	void *p = NULL;
	size_t want = a->cached ? round_size(bytes) : bytes;

	pthread_mutex_lock(&a->mu);
	a->stats.requests++;
	if (a->cached) {
		/* best fit among free blocks whose last user is done, at most twice the size */
		size_t best = (size_t)-1;
		for (size_t i = 0; i < a->n_blocks; i++) {
			block *b = &a->blocks[i];
			if (b->in_use || b->bytes < want || b->bytes > 2 * want)
				continue;
			if (best != (size_t)-1 && a->blocks[best].bytes <= b->bytes)
				continue;
			if (!a->be->fence_done(b->fence))
				continue;
			best = i;
		}
		if (best != (size_t)-1) {
			block *b = &a->blocks[best];
			a->be->fence_destroy(b->fence);
			b->fence = NULL;
			b->in_use = 1;
			a->stats.cache_hits++;
			p = b->p;
			goto out;
		}
	}
	p = a->be->raw_alloc(a->dev, want);
	if (!p)
		goto out;
	a->stats.raw_allocs++;
	if (add_block(a, p, want) < 0) {
		a->be->raw_free(a->dev, p, want);
		p = NULL;
	}
out:
	pthread_mutex_unlock(&a->mu);
	return p;
}

int pl_alloc_put(pl_alloc *a, void *p, pl_fence *fence)
{
	int rc = 0;
	void *raw = NULL;
	size_t raw_bytes = 0;

	if (!p) {
		a->be->fence_destroy(fence);
		return 0;
	}
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n_blocks; i++) {
		block *b = &a->blocks[i];
		if (b->p != p)
			continue;
		if (a->cached) {
			b->in_use = 0;
			b->fence = fence;
			fence = NULL;
		} else {
			raw = b->p;
			raw_bytes = b->bytes;
			a->reserved_bytes -= b->bytes;
			a->blocks[i] = a->blocks[--a->n_blocks];
			a->stats.raw_frees++;
		}
		break;
	}
	pthread_mutex_unlock(&a->mu);
	if (raw) {
		/* outside the lock: waiting for the stream and freeing may take a while */
		rc = a->be->fence_sync(fence);
		a->be->raw_free(a->dev, raw, raw_bytes);
	}
	a->be->fence_destroy(fence);
	return rc;
}

void pl_alloc_get_stats(pl_alloc *a, pl_alloc_stats *out)
{
	pthread_mutex_lock(&a->mu);
	*out = a->stats;
	pthread_mutex_unlock(&a->mu);
}
