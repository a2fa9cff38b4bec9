/* alloc.h — per-worker device memory: raw allocation per request (churn) or a simple caching allocator. */
#ifndef PL_ALLOC_H
#define PL_ALLOC_H
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

typedef struct pl_alloc pl_alloc;

typedef struct pl_alloc_stats {
	int64_t requests;       /* pl_alloc_get calls */
	int64_t raw_allocs;     /* backend raw_alloc calls (cudaMalloc / mmap) */
	int64_t raw_frees;      /* backend raw_free calls (cudaFree / munmap) */
	int64_t cache_hits;     /* requests served from the cache */
	int64_t peak_reserved_bytes; /* most bytes held from the backend at once */
} pl_alloc_stats;

/* An allocator on one device context. cached = 0: every get is a raw_alloc and every put a
 * raw_free (after waiting for the put's fence). cached = 1: sizes round up (512 B under 1 MiB,
 * else 2 MiB), freed blocks are kept and reused once their fence is reached. NULL on ENOMEM. */
pl_alloc *pl_alloc_create(const pl_backend *be, pl_dev *dev, int cached);

/* Returns every block to the backend (accepts NULL). The device context must still exist. */
void pl_alloc_destroy(pl_alloc *a);

/* A buffer of at least bytes (bytes > 0), or NULL when the backend is out of memory. */
void *pl_alloc_get(pl_alloc *a, size_t bytes);

/* Gives p back; fence (may be NULL, ownership passes to the allocator) marks the point in some
 * stream after which p is no longer used. Thread-safe: any worker may return any allocator's
 * blocks. Returns 0, or a negative backend code when waiting for the fence failed. */
int pl_alloc_put(pl_alloc *a, void *p, pl_fence *fence);

/* A snapshot of the counters. */
void pl_alloc_get_stats(pl_alloc *a, pl_alloc_stats *out);

#endif
