/* cupti_agent.h — internal interface between the two halves of libgtcupti.so: the agent
 * (cupti_agent.c: injection, control, flush thread, side files) and the encoder (cupti_encode.c:
 * CUPTI activity records -> .gtt records). Not used outside record/cupti_*.c. */
#ifndef REC_CUPTI_AGENT_H
#define REC_CUPTI_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include "gtt.h"

/* Which CUDA API records are kept (GT_CUPTI_API). */
enum ag_api_mode {
	AG_API_DEFAULT = 0,  /* runtime and driver calls except trivial state queries (ag_api_trivial)
	                      * and driver calls made inside a runtime call */
	AG_API_ALL = 1,      /* every runtime and driver call */
	AG_API_RUNTIME = 2,  /* runtime calls only, except trivial state queries */
	AG_API_NONE = 3,     /* no API records (kernels then lose their launching thread) */
	AG_API_CALLBACKS = 4,/* as DEFAULT, but the calls the callbacks follow (ag_api_tracked) are
	                      * recorded from the callbacks (entry and exit on the trace clock) with
	                      * CUPTI's API activity off for them; a call made inside another followed
	                      * call is not recorded (cupti_calls.c) */
};

/* 1 when a CUDA API call (runtime or driver name, with or without a _vN/_ptsz suffix) is a
 * state query that neither blocks nor touches the GPU (cudaGetDevice, cuKernelGetName, ...): not
 * recorded by default, since on CUDA 13 + PyTorch they are ~80% of all API records. */
int ag_api_trivial(const char *name);
/* 1 when the agent's API callbacks (in-flight table, launch stacks) follow a call by default
 * (GT_CUPTI_CALLBACKS=tracked): kernel and graph launches, copies, memsets, prefetches,
 * synchronizations and stream/event waits, allocations and frees (device, host, managed, async,
 * virtual memory map/unmap), module and library loading, context creation, graph
 * instantiation. Not: queries (cudaEventQuery, cudaStreamQuery), event records, attribute and
 * state calls — frequent in PyTorch, never blocking, and of no use for a launch stack. */
int ag_api_tracked(const char *name);

/* Counters over the agent's life; read at the end for the summary note. */
typedef struct ag_stats {
	uint64_t n_records;        /* activity records seen */
	uint64_t n_kernel, n_memcpy, n_memset, n_sync, n_runtime, n_driver, n_alloc, n_nvtx, n_overhead;
	uint64_t n_driver_nested;  /* driver records dropped as nested in a runtime call */
	uint64_t n_other;          /* kinds we do not translate */
	uint64_t n_discarded;      /* records that arrived while tracing was off */
	uint64_t n_outside;        /* records outside the capture ranges, not written */
	uint64_t n_dropped;        /* records CUPTI dropped (buffers full) */
	uint64_t n_buffers;
	uint64_t process_ns;       /* time spent translating buffers */
} ag_stats;

typedef struct ag_enc ag_enc;

/* Encoder writing to w for process pid; string ids are (gen << 24 | n) so ids of different side
 * files of one pid (exec, re-attach) never collide. NULL on ENOMEM. */
ag_enc *ag_enc_create(gtt_writer *w, uint32_t pid, uint32_t gen, int api_mode);
/* Translate one completed CUPTI buffer; not thread-safe (the agent serializes calls). */
void ag_enc_buffer(ag_enc *e, uint8_t *buf, size_t valid_bytes, ag_stats *st);
/* Only count the records of a buffer by kind (bare mode: CUPTI collection without our work). */
void ag_enc_count(uint8_t *buf, size_t valid_bytes, ag_stats *st);
/* The string id of an API's name (domain GTT_API_RUNTIME or GTT_API_DRIVER, CUPTI callback id),
 * interned once per side file, version tag removed: the name_id of cuda_api records. */
uint32_t ag_enc_api_name(ag_enc *e, uint32_t domain, uint32_t cbid);
/* Write one cuda_api record made by the agent's callbacks (AG_API_CALLBACKS): name id filled in,
 * kept only inside the capture ranges as CUPTI's are. 1 written, 0 not. */
int ag_enc_put_api(ag_enc *e, gtt_cuda_api *a);
/* Intern text as a string record (written once); returns its id. */
uint32_t ag_enc_string(ag_enc *e, const char *text);
/* Free; writes nothing more. NULL ok. */
void ag_enc_destroy(ag_enc *e);

/* The exported entry points: CUDA_INJECTION64_PATH (called by the driver in cuInit; returns 1)
 * and NVTX_INJECTION64_PATH (forwarded to libcupti's NVTX layer). */
int InitializeInjection(void);
int InitializeInjectionNvtx2(const void *get_export_table);

/* CLOCK_MONOTONIC ns: the trace clock, also CUPTI's timestamp callback. */
uint64_t ag_now_ns(void);

#endif
