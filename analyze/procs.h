/* procs.h — a job's processes: who each one is (rank, role, host from meta process.PID.* and a
 * merge's pid spaces), what it used (threads, CPU, GIL split, samples) and its work on the GPUs;
 * the report's per-process table and per-process counters (docs/JOBS.md).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_PROCS_H
#define ANA_PROCS_H

#include <stdio.h>
#include "model.h"

#define ANA_PROC_MAX_DEVS 8

typedef struct ana_proc {
	uint32_t pid, ppid;
	const char *comm;          /* the command line last recorded for it ("?" when none) */
	const char *host;          /* a merged trace's host of the pid's space, else NULL */
	const char *rank, *world_size, *local_rank, *role; /* from its environment, NULL when unset */
	int inherited;             /* its parent has the same rank and role: a worker of that rank
	                            * (DataLoader, compile workers), not the rank itself */
	uint32_t n_threads;
	uint64_t n_samples, sampled_ns;
	uint64_t cpu_ns;           /* its threads' on-CPU time from context switches, else their /proc
	                            * CPU, else their sampled time */
	int cpu_from_samples;      /* some of cpu_ns is sampled time (no /proc readings) */
	uint64_t n_class[ANA_CLASS_COUNT];
	int is_python;
	int devs[ANA_PROC_MAX_DEVS]; /* physical GPU indices (as in the GPU section) it had work on */
	int n_devs;
	uint64_t gpu_busy_ns;      /* union of its kernels, copies and memsets */
	uint64_t n_kernels, kernel_ns;
} ana_proc;

typedef struct ana_procs {
	ana_proc *v;               /* by pid */
	size_t n;
	int any_identity;          /* some process has a rank or a role */
	int merged;                /* the trace is a gt-analyze merge */
} ana_procs;

/* Build the table of m's processes. 0 or GTT_ENOMEM (free it anyway). */
int ana_procs_build(const ana_model *m, ana_procs *P);
void ana_procs_free(ana_procs *P);
/* The process of pid, NULL when unknown. */
const ana_proc *ana_procs_find(const ana_procs *P, uint32_t pid);
/* Sort idx[0..n) (indices into P->v) in the job's order: ranks by rank (a rank's children after
 * it), then the rest by pid. */
void ana_procs_sort(const ana_procs *P, size_t *idx, size_t n);
/* "rank 1/4 L1 drafter" (what is known of it), "-" when nothing is. */
void ana_proc_label(const ana_proc *p, char *buf, size_t len);
/* The report's per-process section (before the per-thread table): printed when the trace holds
 * more than one active process, a process identity, or a merge. */
void ana_procs_report(const ana_model *m, FILE *out, int top_n);

#endif
