/* clockfit.h — putting traces of several hosts on one clock: each trace's CLOCK_MONOTONIC ->
 * CLOCK_REALTIME line from its clock pairs (offset and drift), the map from one trace's clock to
 * another's through realtime, and what is known of the error (docs/JOBS.md).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code. */
#ifndef ANA_CLOCKFIT_H
#define ANA_CLOCKFIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ana_clock_pair {
	uint64_t mono_ns, realtime_ns;
	uint64_t uncertainty_ns; /* realtime read within mono +- this */
	int stated;              /* 0: a 1.0 trace's meta pair, whose uncertainty was not recorded */
} ana_clock_pair;

#define ANA_CLOCK_MAX_DRIFT 1e-3 /* a fitted drift beyond 0.1 % is a realtime step: drift 0, and
                                  * the step counts as a residual (error) */

/* realtime(t) = t + off_ns + drift * (t - a_ns), from the first and last pair. */
typedef struct ana_clockfit {
	size_t n_pairs;
	uint64_t a_ns, b_ns;     /* mono of the first and last pair used */
	int64_t off_ns;          /* realtime - mono at a_ns */
	double drift;            /* d(realtime - mono)/d(mono); 0 with one pair (unknown) */
	uint64_t unc_ns;         /* the larger uncertainty of the two pairs */
	uint64_t resid_ns;       /* the largest distance of another pair from the line beyond its own
	                          * uncertainty: a realtime step (NTP) or a wandering clock */
	int unstated;            /* a pair's uncertainty was not recorded */
} ana_clockfit;

/* Fit pairs (any order; sorted in place by mono). GTT_EINVAL when n == 0. */
int ana_clockfit_make(ana_clock_pair *pairs, size_t n, ana_clockfit *fit);
/* What to add to a time t of the trace of fit `from` to put it on the clock of the trace of
 * fit `to` (both through CLOCK_REALTIME). */
int64_t ana_clockfit_delta(const ana_clockfit *from, const ana_clockfit *to, uint64_t t);
/* The alignment error the pairs can vouch for between two traces (uncertainties plus
 * residuals); the realtime clocks' own disagreement between hosts is not in it: it cannot be
 * known from the traces. */
uint64_t ana_clockfit_error(const ana_clockfit *a, const ana_clockfit *b);

#endif
