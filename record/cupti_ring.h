/* cupti_ring.h — the CUDA agent's hand-over queue from application threads to its flush thread:
 * a bounded byte ring of variable-length entries, many producers, one consumer at a time.
 * Return rule: 0 or a count, -1 when full (the entry is dropped and counted). */
#ifndef REC_CUPTI_RING_H
#define REC_CUPTI_RING_H

#include <stddef.h>
#include <stdint.h>

typedef struct ag_ring ag_ring;

/* A ring of about `bytes` bytes (at least 64 KiB). NULL on ENOMEM. */
ag_ring *ag_ring_create(size_t bytes);
/* Free. NULL ok. */
void ag_ring_destroy(ag_ring *r);
/* Copy one entry made of a[0..alen) followed by b[0..blen) in; any thread. The entry's bytes
 * start 8-byte aligned. 0, or -1 when there is no room (counted in ag_ring_dropped). */
int ag_ring_put(ag_ring *r, const void *a, size_t alen, const void *b, size_t blen);
/* Hand every entry queued so far to fn, oldest first; producers go on meanwhile. Consumers are
 * serialized. Returns the number of entries handed over. */
typedef void (*ag_ring_fn)(void *ctx, const uint8_t *entry, size_t len);
size_t ag_ring_drain(ag_ring *r, ag_ring_fn fn, void *ctx);
/* Entries refused because the ring was full, since creation. */
uint64_t ag_ring_dropped(ag_ring *r);
/* Forget every queued entry (a fork()ed child: they are the parent's). Not while draining. */
void ag_ring_reset(ag_ring *r);

#endif
