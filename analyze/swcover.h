/* swcover.h — which stretches of a trace have its context switches (gt-record's switch gate,
 * --switch-events=auto; docs/FORMAT.md "The switch gate"): where the gate was closed no switch
 * was written, so a thread's state is unknown there and its on-CPU time comes from /proc.
 * Return rule (analyze/): 0 or a negative GTT_E* code. */
#ifndef ANA_SWCOVER_H
#define ANA_SWCOVER_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* After pass 1 (the gate records and the model's span are known; a window's span final): the
 * sorted, disjoint stretches of [start_ns, end_ns] with the gate closed, the captured time they
 * cover, and the highest rate and last limit the records give. 0 or GTT_ENOMEM. */
int ana_swcover_build(ana_model *m);
/* 1 when some captured time of the model had no switch records: on-CPU time from switches would
 * be wrong there, so the threads' figures come from /proc (ana_swcover_apply). */
int ana_swcover_partial(const ana_model *m);
/* With switches partial: every thread's on-CPU time from switches is marked unknown (the report
 * and the health section then use /proc readings). */
void ana_swcover_apply(ana_model *m);
/* 1 when a closed stretch overlaps (a, b): a thread's switch out at a and in at b say nothing of
 * what it did in between. */
int ana_swcover_gap(const ana_model *m, uint64_t a, uint64_t b);
/* Captured time with switches recorded (captured.h). */
uint64_t ana_swcover_open_ns(const ana_model *m);
/* With switches partial, one sentence for the report: how much of the time has them, why the
 * rest has none (the rate, gt-record's limit), and where on-CPU time comes from instead. */
void ana_swcover_describe(const ana_model *m, char *buf, size_t len);

#endif
