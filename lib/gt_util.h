/* gt_util.h — small machinery every groundtruth module shares: time units, growing arrays,
 * the exit codes of the four tools, and health/note records. Return rule: 0 or a negative
 * GTT_E* code (gtt.h), like the rest of lib/; nothing here prints or exits. */
#ifndef GT_UTIL_H
#define GT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gtt.h"

/* ---- time units (the trace clock counts nanoseconds) ---- */
#define GT_NS_PER_SEC 1000000000ull
#define GT_NS_PER_MS 1000000ull
#define GT_NS_PER_US 1000ull
/* Seconds as a double, for printing and rates. */
static inline double gt_ns_to_s(uint64_t ns) { return (double)ns / (double)GT_NS_PER_SEC; }
/* Seconds (a parsed option, >= 0) as ns, saturating at UINT64_MAX. */
uint64_t gt_s_to_ns(double s);
/* The period of a rate in ns (hz > 0), at least 1. */
uint64_t gt_hz_to_period_ns(double hz);

/* ---- exit codes, shared by gt-record, gt-analyze, gt-render and gt-pipeline ----
 * 1 has two names: `check`/`diff` found a regression, or a command produced a partial
 * result (a cut-off trace analyzed up to its cut, a launched command that failed). */
enum {
	GT_EXIT_OK = 0,
	GT_EXIT_REGRESSION = 1,
	GT_EXIT_PARTIAL = 1,
	GT_EXIT_BROKEN = 2, /* broken input, or a fatal error */
	GT_EXIT_USAGE = 64,
};

/* ---- growing arrays ----
 * Make room for at least `need` elements of `elem` bytes in *v, whose capacity is *cap
 * elements: grows by doubling (at least 16), checks the size for overflow. 0, or GTT_ENOMEM
 * with *v and *cap untouched. New room is not zeroed. */
int gt_grow(void **v, size_t *cap, size_t need, size_t elem);
/* Type-checked form: GT_GROW(ptr, cap, need). */
#define GT_GROW(p, cap, need) gt_grow((void **)&(p), &(cap), (need), sizeof(*(p)))

/* ---- health records ----
 * Write one HEALTH record (docs/FORMAT.md, "Sampler health"); h->text may be NULL. */
int gtt_write_health(gtt_writer *w, const gtt_health *h);
/* Write a NOTE health record at time_ns: a plain-text remark of a source (GTT_SRC_*). */
int gtt_write_note(gtt_writer *w, uint32_t source, uint64_t time_ns, uint32_t pid, uint32_t tid,
                   const char *text);

#endif
