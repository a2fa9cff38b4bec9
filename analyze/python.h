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
/* Python frames (code id, line) of pid as frame ids, named exactly as the merge names them:
 * for stacks taken elsewhere (the CUDA agent's launch stacks). Create after every py_code
 * record is in the model; NULL on ENOMEM. ana_pyframes_id returns ANA_NO_ID on ENOMEM. */
typedef struct ana_pyframes ana_pyframes;
ana_pyframes *ana_pyframes_create(ana_model *m);
uint32_t ana_pyframes_id(ana_pyframes *p, uint32_t pid, const gtt_py_frame *pf);
void ana_pyframes_destroy(ana_pyframes *p); /* NULL ok */
/* Report section: per-thread GIL-held %, GIL utilization and hand-offs/s, top functions per
 * class. Prints nothing when the trace has no Python data. */
void ana_python_report(const ana_model *m, FILE *out);

#endif
