/* ranks.h — views across a job's ranks: for each step-like NVTX range and each counter that
 * counts steps, the slowest rank per step and its excess over the median (the straggler view);
 * the spread of GPU busy across devices and across the processes sharing one (docs/JOBS.md).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code. */
#ifndef ANA_RANKS_H
#define ANA_RANKS_H

#include <stdio.h>
#include "model.h"
#include "procs.h"

/* Straggler statistics of one step-like series (an NVTX range name, or a counter). */
typedef struct ana_straggle {
	const char *name;        /* model-owned */
	int is_counter;          /* 1: a counter's steps (the time between its changes) */
	size_t n_procs;          /* processes with this series */
	size_t n_steps;          /* step indices that at least two processes share */
	uint32_t worst_pid;      /* the process slowest most often */
	size_t worst_times;      /* ... that many steps */
	uint64_t median_excess_ns; /* the median over steps of (slowest - median of the ranks) */
	uint64_t max_excess_ns;  /* the largest excess, at step max_step, by max_pid */
	size_t max_step;
	uint32_t max_pid;
	uint64_t max_median_ns;  /* the ranks' median duration at that step */
} ana_straggle;

/* The straggler series of m's processes in P (ranked ones when there are two or more, else all);
 * *out is malloc'ed (free it), *n its length. 0 or GTT_ENOMEM. */
int ana_ranks_stragglers(const ana_model *m, const ana_procs *P, ana_straggle **out, size_t *n);
/* The report's "Across ranks" section: printed when two or more processes have step-like series
 * or GPU work. */
void ana_ranks_report(const ana_model *m, const ana_procs *P, FILE *out, int top_n);

#endif
