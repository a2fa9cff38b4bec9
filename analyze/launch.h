/* launch.h — launch stacks (the CUDA agent's cuda_callstack records): made into model stacks
 * when a trace is loaded, joined to the GPU work each call started through the correlation id,
 * and the sampling estimator that turns sampled launches into per-site launch counts and GPU
 * time (docs/ANALYZE.md, "Launch sites"). A launch without a stack is counted as such, never
 * given a stack from elsewhere.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_LAUNCH_H
#define ANA_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include "dwfl.h"
#include "model.h"

/* ---- loading (load.c) ---- */
typedef struct ana_launch_loader ana_launch_loader;
ana_launch_loader *ana_launch_loader_new(void);
/* Keep a copy of one cuda_callstack record until the symbolizer exists. 0 or GTT_ENOMEM. */
int ana_launch_loader_add(ana_launch_loader *ll, const gtt_cuda_callstack *cs);
/* Symbolize the native return addresses of every kept record (the pid's address space at the
 * record's time), put its Python frames on the root side, intern the stack and fill
 * m->callstacks, sorted by (pid, correlation, time). Call after every py_code record is in m.
 * 0 or GTT_ENOMEM. */
int ana_launch_loader_finish(ana_launch_loader *ll, ana_model *m, ana_sym *sym, const ana_opts *o);
void ana_launch_loader_free(ana_launch_loader *ll); /* NULL ok */

/* The launch stack of the call (pid, correlation); NULL when the agent took none (and for
 * correlation 0, which names no call). */
const ana_callstack *ana_callstack_find(const ana_model *m, uint32_t pid, uint32_t correlation);
/* Frames that stand in for what a launch stack lacks (fold and report print them as is). */
#define ANA_LAUNCH_NO_STACK "[no launch stack]"
#define ANA_LAUNCH_PY_UNREADABLE "[python stack unreadable]"
#define ANA_LAUNCH_EMPTY "[empty launch stack]"

/* ---- the join and the estimator ---- */
enum { ANA_WORK_KERNEL = 0, ANA_WORK_COPY = 1, ANA_WORK_MEMSET = 2, ANA_WORK_SYNC = 3, ANA_WORK_COUNT = 4 };

/* Work of one kind and name launched by one thread through one API: the unit the agent samples
 * (its (API, function) pair on a thread). */
typedef struct ana_launch_group {
	uint32_t pid, tid;        /* the launching thread; tid 0 when no API record had the correlation */
	uint32_t api_name_id;     /* the API's name (string of pid), 0 when unknown */
	uint32_t kind;            /* ANA_WORK_* */
	uint32_t name_id;         /* kernels: the kernel name (string of pid); copies: the direction
	                           * (GTT_MEMCPY_*); 0 otherwise */
	uint64_t n, ns;           /* work records and their device (syncs: waiting) ns */
	uint64_t n_exact, ns_exact; /* of those, launched by a call whose stack stands only for itself
	                             * (first K of the pair, or a long call) */
	uint64_t n_nth, ns_nth;   /* launched by a call with a 1-in-N stack */
	double none_n, none_ns;   /* launches and ns that no stack stands for: "no stack captured" */
	size_t first_site, n_sites; /* its sites: ana_launches.sites[first_site, first_site + n_sites) */
} ana_launch_group;

typedef struct ana_launch_site {
	uint32_t stack_id;        /* model->stacks */
	uint64_t n_exact, ns_exact, n_nth, ns_nth; /* sampled launches with this stack, as in the group */
	double est_n, est_ns;     /* launches and ns this site stands for (the estimator) */
} ana_launch_site;

typedef struct ana_launches {
	ana_launch_group *groups; /* sorted by (pid, kind, name_id, tid, api_name_id) */
	size_t n_groups;
	ana_launch_site *sites;   /* per group, by est_ns descending (ties: stack id) */
	size_t n_sites;
	uint64_t n_work_no_api;   /* work records with no API record of their correlation in reach */
	uint64_t n_stacks;        /* launch stacks fed */
	uint64_t n_stacks_joined; /* of those, of a call that started work */
} ana_launches;

/* The accumulator: feed API records, launch stacks and work records in time order (API calls
 * by their start, stacks by their time, work by its start). State is one entry per call of the
 * last ANA_LAUNCH_WINDOW_NS of calls, plus the groups and sites: not the length of the trace. */
#define ANA_LAUNCH_WINDOW_NS (10ull * 1000000000ull)
typedef struct ana_launch_acc ana_launch_acc;
ana_launch_acc *ana_launch_acc_new(void);
int ana_launch_acc_api(ana_launch_acc *a, const gtt_cuda_api *api);
int ana_launch_acc_stack(ana_launch_acc *a, const ana_callstack *cs);
/* A call (pid, correlation) will be looked up soon: its table slot is fetched into the cache now
 * (h: ana_hash_corr(pid, correlation)). Changes nothing else. */
void ana_launch_acc_prefetch(const ana_launch_acc *a, uint64_t h);
/* The same, a few lookups later: the call's own entry is fetched when the slot (fetched by
 * ana_launch_acc_prefetch earlier, so no stall) names it. Changes nothing else. */
void ana_launch_acc_prefetch_call(const ana_launch_acc *a, uint64_t h);
int ana_launch_acc_work(ana_launch_acc *a, uint32_t kind, uint32_t pid, uint32_t correlation, uint32_t name_id,
                        uint64_t start_ns, uint64_t end_ns);
/* Close every call, apply the estimator, fill *out (free with ana_launches_free). The
 * accumulator is freed, also on failure. 0 or GTT_ENOMEM. */
int ana_launch_acc_finish(ana_launch_acc *a, ana_launches *out);
void ana_launch_acc_free(ana_launch_acc *a); /* NULL ok */

/* How work of a group is named in reports and folded stacks: "[memcpy HtoD]", "[memset]",
 * "[sync]", and for kernels the caller's job (ana_kernel_name); buf for the copy names. */
const char *ana_launch_work_label(const ana_launch_group *g, char *buf, size_t len);

/* The accumulator fed with the model's records: every API call and stack, and the work that
 * starts in [from_ns, to_ns) (to_ns 0: no end). 0 or GTT_ENOMEM. */
int ana_launches_build(const ana_model *m, uint64_t from_ns, uint64_t to_ns, ana_launches *out);
void ana_launches_free(ana_launches *l);

#endif
