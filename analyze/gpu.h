/* gpu.h — the GPU side of the report: kernels, API calls, copies, allocations, busy %, and
 * GPU-idle blame (what every host thread did while the GPU was idle).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_GPU_H
#define ANA_GPU_H

#include <stdio.h>
#include "model.h"

/* Report section. Prints nothing when the trace has no CUDA data. top_n bounds the tables. */
void ana_gpu_report(const ana_model *m, FILE *out, int top_n);

#endif
