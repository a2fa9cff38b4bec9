/* report.h — `gt-analyze report`: the text summary of a trace (recording, threads, top
 * functions, sampler health, then the Python and GPU sections).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_REPORT_H
#define ANA_REPORT_H

#include <stdio.h>
#include "model.h"

typedef struct ana_report_opts {
	int top_n;              /* rows in the function tables (default 20) */
} ana_report_opts;
void ana_report_opts_init(ana_report_opts *o);

/* Write the whole report. Deterministic: equal models give byte-equal text. 0 or GTT_EIO. */
int ana_report(const ana_model *m, const ana_report_opts *o, FILE *out);

/* Figures shared by the report sections and other tools. */
/* The perf sampler's period in ns: the CONFIG health record, else meta frequency_hz, else the
 * most common sample period; 0 when unknown. */
uint64_t ana_sample_period_ns(const ana_model *m);
/* Recording length in ns (end_ns - start_ns, at least 1). */
uint64_t ana_duration_ns(const ana_model *m);

/* `gt-analyze report [--top N] TRACE`: the command (parses its options, prints, returns the exit
 * status). */
int ana_cmd_report(int argc, char **argv);

#endif
