/* cupti_apiq.h — the CUDA agent's per-thread queues of API call records (GT_CUPTI_API=callbacks):
 * each application thread appends to its own single-producer queue with one release store, no
 * lock and no shared write; the flush thread drains them all. A thread's queue outlives the
 * thread until drained. Return rule: 0, or -1 (full, or no memory). */
#ifndef REC_CUPTI_APIQ_H
#define REC_CUPTI_APIQ_H

#include <stdint.h>

/* One call, as the callbacks saw it (the cuda_api record's fields). */
typedef struct ag_api_call {
	uint32_t tid;
	uint32_t domain, cbid;   /* GTT_API_*, CUPTI callback id */
	uint32_t correlation;
	int32_t status;          /* the call's return value (cudaError_t / CUresult) */
	uint32_t pad;
	uint64_t start_ns, end_ns;
} ag_api_call;

typedef struct ag_apiq ag_apiq;

/* The calling thread's queue, made and registered on first use (NULL: no memory). wake is called
 * (rarely) when the queue is half full, to have the flush thread drain it early. */
ag_apiq *ag_apiq_new(void (*wake)(void));
/* Append; the owning thread only. -1 when the queue is full (nothing written). */
int ag_apiq_put(ag_apiq *q, const ag_api_call *c);
/* The owning thread is gone: the flush thread frees the queue once it has drained it. */
void ag_apiq_release(ag_apiq *q);
/* Flush thread: hand every queued call of every queue to fn, oldest first per queue; frees the
 * queues of threads that are gone. Returns the calls handed over. */
typedef void (*ag_apiq_fn)(void *ctx, const ag_api_call *c);
uint64_t ag_apiq_drain(ag_apiq_fn fn, void *ctx);
/* In a fork()ed child: forget every queue but keep (emptied) the calling thread's, `keep`. */
void ag_apiq_fork_child(ag_apiq *keep);

#endif
