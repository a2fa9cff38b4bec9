/* python.h — merges Python frames into native stacks and classifies samples by GIL state.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_PYTHON_H
#define ANA_PYTHON_H

#include <stdio.h>
#include "model.h"

/* After native stacks are built: for each sample of a Python thread, splice the Python
 * frames read nearest in time into its stack at the eval-loop frames (or keep only Python
 * frames with o->python_only), and set sample->cls. Threads never seen in a Python read stay
 * ANA_CLASS_NONPY. 0 or <0. */
int ana_python_merge(ana_model *m, const ana_opts *o);
/* Report section: per-thread GIL-held %, GIL utilization and hand-offs/s, top functions per
 * class. Prints nothing when the trace has no Python data. */
void ana_python_report(const ana_model *m, FILE *out);

#endif
