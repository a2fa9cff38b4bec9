/* dump_cuda.h — the in-flight CUDA API call of each thread, for gt-record --dump: read from the
 * table the CUDA agent exports (record/gtcupti_inflight.h) with process_vm_readv, never
 * stopping the target. Return rule: counts, or a negative REC_DCUDA_* saying why none. */
#ifndef REC_DUMP_CUDA_H
#define REC_DUMP_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "addrspace.h"
#include "procmem.h"

typedef struct rec_dcuda_call {
	uint32_t tid;
	uint32_t cbid, domain, correlation, depth;
	uint64_t start_ns;       /* CLOCK_MONOTONIC (coarse: resolution in the table's header) */
	uint64_t n_calls;
	char name[96];           /* "cudaStreamSynchronize" (CUPTI's version suffix removed) */
} rec_dcuda_call;

enum {
	REC_DCUDA_NO_CUDA = -1,  /* no CUDA library mapped: nothing to say */
	REC_DCUDA_NO_AGENT = -2, /* CUDA in use, but the agent is not loaded */
	REC_DCUDA_INACTIVE = -3, /* the agent is loaded but not subscribed (no API callbacks) */
	REC_DCUDA_BAD = -4,      /* the table is unreadable or of an unknown layout */
};

/* The calls in flight in pid now (malloc'ed into *out, free() it). Returns their number (0:
 * the agent is active and no thread is inside a call), or a REC_DCUDA_* code. *res_ns gets
 * the start times' resolution. */
int rec_dcuda_read(pid_t pid, rec_as *as, rec_procmem *mem, rec_dcuda_call **out, uint64_t *res_ns);

#endif
