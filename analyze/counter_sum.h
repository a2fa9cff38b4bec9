/* counter_sum.h — the program's own counters (counter records, docs/COUNTERS.md) summarized: per
 * counter its samples, min, time-weighted mean and max over the span it was observed, and, when
 * it has a watermark (the counter X@watermark belongs to X), the time it spent at or below it.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_COUNTER_SUM_H
#define ANA_COUNTER_SUM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "model.h"

#define ANA_WATERMARK_SUFFIX "@watermark"

/* For a name "X@watermark" the length of X (> 0), else 0: the counter is X's watermark. */
size_t ana_counter_watermark_of(const char *name);

typedef struct ana_counter_sum {
	uint32_t pid;
	uint32_t name_id;         /* string of pid; ANA_NO_ID for a watermark without its counter */
	uint32_t wm_name_id;      /* X@watermark's string, ANA_NO_ID when none */
	const char *name;         /* X: its first name_len bytes (the string of X, or of X@watermark when
	                           * only the watermark was recorded) */
	size_t name_len;
	uint64_t n;               /* samples (finite values) */
	uint64_t first_ns, last_ns; /* the observed span: first to last sample */
	uint64_t valued_ns;       /* of it, time with a finite value (a non-finite one ends a step) */
	double min, max, mean;    /* mean: time-weighted over valued_ns (the last value when 0) */
	uint64_t n_wm;            /* watermark records */
	double wm_min, wm_max;    /* the watermark's values */
	uint64_t wm_known_ns;     /* valued time after the first watermark record */
	uint64_t below_ns;        /* of that, time with the value at or below the watermark */
} ana_counter_sum;

/* The accumulator: feed counter records in time order (their names resolved by the caller). */
typedef struct ana_counters_acc ana_counters_acc;
ana_counters_acc *ana_counters_acc_new(void);
/* One record: pid, its name (string of pid: kept, it must outlive the summaries) and name id,
 * time and value. 0 or GTT_ENOMEM. */
int ana_counters_acc_add(ana_counters_acc *a, uint32_t pid, const char *name, uint32_t name_id, uint64_t time_ns,
                         double value);
/* The summaries (malloc'd), sorted by (pid, name). Frees the accumulator, also on failure. 0 or
 * GTT_ENOMEM. */
int ana_counters_acc_finish(ana_counters_acc *a, ana_counter_sum **out, size_t *n);
void ana_counters_acc_free(ana_counters_acc *a); /* NULL ok */

/* All counters of a model (records sorted by time first). *out is malloc'd. 0 or GTT_ENOMEM. */
int ana_counters_summarize(const ana_model *m, ana_counter_sum **out, size_t *n);
/* Report section "Counters"; prints nothing when the trace has none. */
void ana_counters_report(const ana_model *m, FILE *out);

#endif
