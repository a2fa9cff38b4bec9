/* cupti_bufq.h — the CUDA agent's activity buffers: a stock of ready (allocated and touched)
 * empty buffers that CUPTI takes on application threads, and the queue of full buffers that
 * CUPTI hands back and the flush thread translates. Application threads and CUPTI's thread only
 * ever pop or push a pointer; allocation, page faults and translation belong to the flush
 * thread. Return rule: 0/1 or a pointer; NULL when none. */
#ifndef REC_CUPTI_BUFQ_H
#define REC_CUPTI_BUFQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct ag_bufq ag_bufq;

/* Buffers of buf_bytes; at most max_bufs exist at once (beyond that CUPTI gets none, drops
 * records and counts them: memory stays bounded); ag_bufq_refill keeps `stock` ready. NULL on
 * ENOMEM. */
ag_bufq *ag_bufq_create(size_t buf_bytes, unsigned max_bufs, unsigned stock);
/* Free every buffer the queue holds (not those CUPTI still has). NULL ok. */
void ag_bufq_destroy(ag_bufq *q);
size_t ag_bufq_buf_bytes(const ag_bufq *q);

/* CUPTI asks for an empty (all zero) buffer (an application thread): one from the stock;
 * allocated here only when the stock is empty; NULL when max_bufs are out. */
uint8_t *ag_bufq_request(ag_bufq *q);
/* CUPTI returns a buffer with valid bytes of records (CUPTI's or the flush thread): queued, and
 * the flush thread woken. */
void ag_bufq_complete(ag_bufq *q, uint8_t *buf, size_t valid);
/* The oldest full buffer: 1 with its address and valid bytes, or 0 when none is queued. */
int ag_bufq_take(ag_bufq *q, uint8_t **buf, size_t *valid);
/* A buffer whose records are translated goes back to the stock, its first valid bytes (what
 * CUPTI wrote) zeroed again: every buffer handed out is all zeros. */
void ag_bufq_release(ag_bufq *q, uint8_t *buf, size_t valid);
/* Allocate and touch buffers until `stock` are ready (the flush thread, off the hot path). */
void ag_bufq_refill(ag_bufq *q);
/* Sleep until a buffer completes, ag_bufq_wake, or timeout_ns. */
void ag_bufq_wait(ag_bufq *q, uint64_t timeout_ns);
void ag_bufq_wake(ag_bufq *q);
/* fork(): 0 before (locks), 1 in the parent after, 2 in the child after (the queued buffers are
 * the parent's records: they go back to the stock unread). */
void ag_bufq_atfork(ag_bufq *q, int phase);

typedef struct ag_bufq_stats {
	uint64_t n_requests;     /* buffers handed to CUPTI */
	uint64_t n_alloc_app;    /* ... allocated on the asking (application) thread: stock empty */
	uint64_t n_refused;      /* requests refused: max_bufs out */
	uint64_t n_complete;     /* buffers returned by CUPTI */
	unsigned n_exist, peak_queued;
} ag_bufq_stats;
void ag_bufq_stats_get(ag_bufq *q, ag_bufq_stats *st);

#endif
