/* health.h — the report's "Sampler health — is my profile lying?" section: intended vs received
 * samples, lost and throttled records, each loop's lateness distribution and lag windows.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_HEALTH_H
#define ANA_HEALTH_H

#include <stdio.h>
#include "model.h"

/* Intended samples (on-CPU time × rate) vs received, over all threads with a known on-CPU
 * time. Returns 0 and fills the counts, or -1 when the rate or on-CPU times are unknown. */
int ana_health_coverage(const ana_model *m, uint64_t *intended, uint64_t *received);

/* Write the section. top_n bounds the lag-window list. */
void ana_health_report(const ana_model *m, FILE *out, int top_n);

#endif
