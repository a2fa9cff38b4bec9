/* cupti_ring.c — bounded many-producer byte ring (see cupti_ring.h). Producers copy under a
 * short mutex (entries are rare: sampled stacks and new code objects, ~1-3 KiB each); the
 * consumer reads [tail, head) without the lock, since producers never write there. */
#include "cupti_ring.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WRAP 0xffffffffu    /* header of the unused bytes at the end: continue at offset 0 */
#define HDR 8u              /* u32 length + u32 padding, keeps payloads 8-aligned */

struct ag_ring {
	pthread_mutex_t lock;        /* head, tail, dropped */
	pthread_mutex_t drain_lock;  /* one consumer at a time */
	uint8_t *buf;
	size_t cap;                  /* multiple of 8 */
	uint64_t head, tail;         /* byte counts since creation; head - tail <= cap */
	uint64_t dropped;
};

ag_ring *ag_ring_create(size_t bytes)
{
	ag_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (bytes < (64u << 10))
		bytes = 64u << 10;
	r->cap = bytes & ~(size_t)7;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->drain_lock, NULL);
	return r;
}

void ag_ring_destroy(ag_ring *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->drain_lock);
	free(r->buf);
	free(r);
}

static size_t entry_bytes(size_t len)
{
	return HDR + ((len + 7) & ~(size_t)7);
}

int ag_ring_put(ag_ring *r, const void *a, size_t alen, const void *b, size_t blen)
{
	size_t len = alen + blen, need = entry_bytes(len);
	int rc = -1;
	if (len >= WRAP || need > r->cap / 2) {
		pthread_mutex_lock(&r->lock);
		r->dropped++;
		pthread_mutex_unlock(&r->lock);
		return -1;
	}
	pthread_mutex_lock(&r->lock);
	size_t pos = (size_t)(r->head % r->cap), waste = r->cap - pos < need ? r->cap - pos : 0;
	if (r->head - r->tail + waste + need > r->cap) {
		r->dropped++;
		goto out;
	}
	if (waste) {
		uint32_t w = WRAP;
		memcpy(r->buf + pos, &w, 4);
		r->head += waste;
		pos = 0;
	}
	uint32_t l = (uint32_t)len;
	memcpy(r->buf + pos, &l, 4);
	if (alen)
		memcpy(r->buf + pos + HDR, a, alen);
	if (blen)
		memcpy(r->buf + pos + HDR + alen, b, blen);
	r->head += need;
	rc = 0;
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

size_t ag_ring_drain(ag_ring *r, ag_ring_fn fn, void *ctx)
{
	size_t n = 0;
	pthread_mutex_lock(&r->drain_lock);
	pthread_mutex_lock(&r->lock);
	uint64_t t = r->tail, h = r->head;
	pthread_mutex_unlock(&r->lock);
	while (t < h) {
		size_t pos = (size_t)(t % r->cap);
		uint32_t len;
		memcpy(&len, r->buf + pos, 4);
		if (len == WRAP) {
			t += r->cap - pos;
			continue;
		}
		fn(ctx, r->buf + pos + HDR, len);
		t += entry_bytes(len);
		n++;
	}
	pthread_mutex_lock(&r->lock);
	r->tail = t;
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&r->drain_lock);
	return n;
}

uint64_t ag_ring_dropped(ag_ring *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t d = r->dropped;
	pthread_mutex_unlock(&r->lock);
	return d;
}

void ag_ring_reset(ag_ring *r)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->drain_lock, NULL);
	r->head = r->tail = 0;
}
