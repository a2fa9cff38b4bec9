/* captured.h — the captured time of a trace (gt-record's --delay, --capture-range, --ring,
 * --max-size; docs/FORMAT.md "Capture control"): the intervals in which sampling was on, from
 * the pid-0 capture records, so that rates, CPU % and intended samples count only that time.
 * Return rule (analyze/): 0 or a negative GTT_E* code. */
#ifndef ANA_CAPTURE_H
#define ANA_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* After pass 1 (the capture records and the trace's span are known): build the sorted,
 * disjoint captured intervals. 0 or GTT_ENOMEM. */
int ana_capture_build(ana_model *m);
/* The intervals alone (ana_capture_build without its checks): for the loader's streaming pass 2,
 * which counts the samples outside them. 0 or GTT_ENOMEM. */
int ana_capture_intervals(ana_model *m);
/* 1 when a sample at t (of weight_ns) lies outside every captured interval, give or take one
 * sample period (at least 1 ms) at the edges; m->captured built. */
int ana_capture_outside(const ana_model *m, uint64_t t, uint64_t weight_ns);
/* 1 when the trace was recorded under capture control (it has pid-0 capture records). */
int ana_capture_controlled(const ana_model *m);
/* Captured time within [a, b): b - a for a trace without capture control. */
uint64_t ana_captured_within(const ana_model *m, uint64_t a, uint64_t b);
/* The captured interval holding t, or the first after it (m->captured.n when none): a thread's
 * state is unknown again at the start of each interval (nothing was recorded in between). */
size_t ana_capture_index(const ana_model *m, uint64_t t);
/* Captured time of the whole trace (its span without capture control), and the intervals. */
uint64_t ana_captured_ns(const ana_model *m, size_t *n_intervals);
/* The length of the run the trace comes from: from the recording's start (meta run_start_ns
 * of a ring window, else the trace's first time) to its last time. */
uint64_t ana_run_ns(const ana_model *m);

#endif
