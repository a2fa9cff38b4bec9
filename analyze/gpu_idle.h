/* gpu_idle.h — analyze/-internal: the time-based parts of the GPU report, printed from the
 * streamed aggregates (gpu_sum.h): busy % over time, idle gaps with GPU-idle blame.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_GPU_IDLE_H
#define ANA_GPU_IDLE_H

#include <stdio.h>
#include "gpu_sum.h"
#include "model.h"

/* "12.345" (ms with 3 decimals) into buf. */
void ana_gpu_ms(char *buf, size_t len, uint64_t ns);
/* Busy % per device: whole recording, between first and last work, and per time bucket. */
void ana_gpu_report_busy(const ana_model *m, const ana_gpu_sum *S, FILE *out);
/* Idle time between device work: gap-length histogram, what every host thread did during it
 * (all gaps together), and the top_n (at most ANA_GPU_TOP_GAPS) longest gaps one by one. */
void ana_gpu_report_idle(const ana_model *m, const ana_gpu_sum *S, FILE *out, int top_n);
#endif
