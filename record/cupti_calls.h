/* cupti_calls.h — the CUDA agent's API callbacks on application threads: the in-flight table
 * (record/gtcupti_inflight.h) and launch stacks (cuda_callstack records), taken for a bounded
 * sample of calls and handed to the flush thread through a ring. Only the agent and its tests
 * use it. Return rule: 0 or a count, -1 on failure. */
#ifndef REC_CUPTI_CALLS_H
#define REC_CUPTI_CALLS_H

#include <stddef.h>
#include <stdint.h>
#include <cupti.h>
#include "cupti_agent.h"
#include "gtcupti_inflight.h"

/* Sampling and limits (docs/CUDA.md, "Launch stacks"); ag_calls_config fills the defaults and
 * the GT_CUPTI_* environment. */
typedef struct ag_calls_cfg {
	int inflight;           /* GT_CUPTI_INFLIGHT: keep the in-flight table (1) */
	int stacks;             /* GT_CUPTI_STACKS: take launch stacks while tracing (1) */
	int python;             /* GT_CUPTI_STACK_PYTHON: with Python frames (1) */
	uint32_t first_k;       /* GT_CUPTI_STACK_FIRST: first calls per (API, function) per thread (4) */
	uint32_t every_n;       /* GT_CUPTI_STACK_EVERY: then 1 in N on average (256; 0 = none) */
	uint64_t long_ns;       /* GT_CUPTI_STACK_LONG_US: calls at least this long (1000 us; 0 = off) */
	uint32_t max_native;    /* GT_CUPTI_STACK_DEPTH: native frames (64, at most 256) */
	uint32_t max_py;        /* GT_CUPTI_STACK_PY_DEPTH: Python frames (128, at most 256) */
	uint32_t budget_ppm;    /* GT_CUPTI_STACK_BUDGET: percent of each thread's time that stack
	                         * taking may use (1 %; 0 = no limit), in parts per million */
	uint32_t budget_call_ns;/* GT_CUPTI_STACK_BUDGET_NS: stack time each outermost call earns
	                         * (10 ns; 0 = no limit): what stacks add per call, on average */
	uint64_t burst_ns;      /* GT_CUPTI_STACK_BURST_MS: stack time a thread may spend ahead of
	                         * its budget (10 ms: the first calls of every kernel at start-up;
	                         * 10 ms is 0.1 % of a 10 s run, 0.5 % of a 2 s one) */
	size_t ring_bytes;      /* GT_CUPTI_STACK_RING_KB (4096) */
} ag_calls_cfg;

/* Defaults, then the environment; each bad value is named through warn and ignored. */
void ag_calls_config(ag_calls_cfg *c, void (*warn)(const char *fmt, const char *arg));
/* Change one setting of a running agent (GT_CUPTI_STACKS, _PYTHON, _FIRST, _EVERY, _LONG_US,
 * _BUDGET, _BUDGET_NS, _BURST_MS; the depths, the ring and INFLIGHT are fixed at start) in c, from text;
 * then ag_calls_reconfigure(c) makes it effective. 0, or -1 (named through warn). */
int ag_calls_config_set(ag_calls_cfg *c, const char *name, const char *value, void (*warn)(const char *, const char *));
void ag_calls_reconfigure(const ag_calls_cfg *c);
/* One line describing c ("first=4 every=64 long_us=1000 ..."), for notes. */
void ag_calls_describe(const ag_calls_cfg *c, char *buf, size_t len);

/* Set up (once per process): the ring, the thread key, the in-flight table's header, and the
 * Python reader when c->python. pid is the process's. 0 or -1 (ENOMEM). */
int ag_calls_init(const ag_calls_cfg *c, uint32_t pid);
/* What the callback does from now on; the table's ACTIVE flag follows `inflight`; `api`: each
 * outermost call's cuda_api record is written from its callbacks (GT_CUPTI_API=callbacks). Called
 * by the agent when tracing switches on or off. */
void ag_calls_set(int inflight, int stacks, int api);
/* The CUPTI callback for CUPTI_CB_DOMAIN_RUNTIME_API / DRIVER_API (the hot path). */
void ag_calls_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d);
/* The calling thread is the agent's own: its CUDA calls are neither shown nor sampled. */
void ag_calls_ignore_thread(void);
/* Flush thread: write what the ring holds as py_code, cuda_callstack and (callbacks mode)
 * cuda_api records (pid from ag_calls_init; API names interned through e), plus a dropped health
 * record when stacks or API records were lost. e and w NULL: discard. Returns records written. */
int ag_calls_drain(ag_enc *e, gtt_writer *w);
/* Write the configuration record (HEALTH CONFIG, text "cuda_callstack ...") and a note on the
 * Python reader, at the start of a side file. */
void ag_calls_write_config(gtt_writer *w);
/* In a fork()ed child: new pid, empty table and ring (the parent's entries are its own). */
void ag_calls_fork_child(uint32_t pid);
/* The table (exported under GTCUPTI_INFLIGHT_SYMBOL). */
extern struct gtcupti_inflight gtcupti_inflight;

typedef struct ag_calls_stats {
	uint64_t n_calls;          /* outermost API calls seen by the callbacks */
	uint64_t n_first, n_nth, n_long;   /* calls chosen for a stack, by reason (a long call
	                                    * may also be first or nth) */
	uint64_t n_long_exit;      /* ... long ones without a stack from their entry: taken at exit */
	uint64_t n_taken;          /* stacks queued */
	uint64_t n_skip_budget;    /* chosen but not taken: the thread's budget was spent */
	uint64_t n_skip_ring;      /* taken but lost: the ring was full */
	uint64_t n_py_frames, n_native_frames;
	uint64_t n_py_none, n_py_fail, n_native_trunc;
	uint64_t capture_ns;       /* time spent taking stacks, on application threads */
	uint64_t n_nested;         /* API calls made inside another one on the same thread */
	uint64_t n_timed, timed_cyc;/* callbacks timed (1 in 256, without a stack), their cycles */
	uint64_t n_timed_clipped;  /* ... timed but longer than 100 us (preempted): not counted */
	uint64_t timed_ns;         /* timed_cyc in ns (ag_calls_stats_get converts) */
	uint64_t n_written;        /* cuda_callstack records written */
	uint64_t n_api_written;    /* cuda_api records written from the callbacks */
	uint64_t n_api_lost;       /* ... lost: the ring was full */
} ag_calls_stats;
void ag_calls_stats_get(ag_calls_stats *st);

#endif
