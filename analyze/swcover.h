/* swcover.h — which stretches of a trace have its context switches (gt-record's switch gate,
 * --switch-events=auto; docs/FORMAT.md "The switch gate"): where the gate was closed no switch
 * was written, so a thread's state is unknown there and its on-CPU time comes from /proc. A
 * merged trace holds one gate per input (the records' pid: the root of its recorded tree).
 * Return rule (analyze/): 0 or a negative GTT_E* code. */
#ifndef ANA_SWCOVER_H
#define ANA_SWCOVER_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* After pass 1 (the gate records and the model's span are known; a window's span final): for
 * each recorded tree, the sorted, disjoint stretches of [start_ns, end_ns] with the gate closed and
 * the captured time they cover; the highest rate and last limit the records give. 0 or
 * GTT_ENOMEM. */
int ana_swcover_build(ana_model *m);
/* 1 when some captured time had no switch records (of some recorded tree). */
int ana_swcover_partial(const ana_model *m);
/* Every thread whose recorded tree lacks switches over some captured time gets its on-CPU time from
 * switches marked unknown (the report and the health section then use /proc readings). */
void ana_swcover_apply(ana_model *m);
/* 1 when a stretch without switches of pid's tree overlaps (a, b): a thread's switch out at a
 * and in at b say nothing of what it did in between. */
int ana_swcover_gap(const ana_model *m, uint32_t pid, uint64_t a, uint64_t b);
/* The stretches without switches of pid's tree (NULL when it has none), their count in *n. The
 * tree: the gate whose pid is pid or an ancestor of it (process records' parents); the only one
 * when there is one (a recording). */
const ana_interval *ana_swcover_closed(const ana_model *m, uint32_t pid, size_t *n);
/* With switches partial, one sentence for the report: how much of the time has them, why the
 * rest has none (the rate, gt-record's limit), and where on-CPU time comes from instead. */
void ana_swcover_describe(const ana_model *m, char *buf, size_t len);

#endif
