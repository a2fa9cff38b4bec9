/* input.h — the folded forms of a trace that the flame views draw. The input itself (trace or
 * folded stacks, a file or stdin) is opened by analyze/source.h. Return rule: 0 or REN_ENOMEM. */
#ifndef REN_INPUT_H
#define REN_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "fold.h"
#include "layout.h"
#include "model.h"

/* Folded stacks of a trace with per-class lines: each line's cls_mask has one bit, so the
 * renderer can colour by GIL class. sel->gil filters classes as in ana_fold.
 * 0 or <0 (REN_ENOMEM). */
int ren_input_fold_classes(const ana_model *m, const ana_fold_opts *sel, ana_folded *out);

/* Folded lines for a flame chart: per thread (busiest first, a root frame "name tid"), the
 * samples in time order, adjacent equal stacks merged; lines stay in that order. tid_filter
 * (comma list), gil (class mask, -1 all) and [from_ns, to_ns) (relative to the trace start,
 * 0 = open) select samples. 0 or <0 (REN_ENOMEM). */
int ren_flamechart_fold(const ana_model *m, const char *tid_filter, int gil, uint64_t from_ns,
                        uint64_t to_ns, ana_folded *out);

#endif
