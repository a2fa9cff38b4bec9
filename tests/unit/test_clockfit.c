/* test_clockfit.c — analyze/clockfit.c: a trace's monotonic -> realtime line from its pairs (offset,
 * drift, residuals), the shift from one trace's clock to another's through realtime, and the error
 * the pairs vouch for; on synthetic hosts whose clocks are known exactly. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "clockfit.h"
#include "testhelp.h"

#define S 1000000000ull

/* Host h's realtime at its monotonic time t: rt = t + off + drift_ppm * 1e-6 * (t - t0). */
static ana_clock_pair pair(uint64_t t, uint64_t t0, int64_t off, double drift_ppm, uint64_t unc)
{
	ana_clock_pair p = { t, (uint64_t)((int64_t)t + off + (int64_t)llround(drift_ppm * 1e-6 * (double)(t - t0))), unc, 1 };
	return p;
}

int main(void)
{
	/* host A: monotonic 1000 s at realtime 1.8e18; host B: booted 3000 s later (its monotonic is
	 * 3000 s behind), its realtime clock runs 20 ppm fast against A's monotonic rate */
	const uint64_t rt0 = 1800000000000000000ull;
	int64_t offA = (int64_t)(rt0 - 1000 * S), offB = (int64_t)(rt0 - 1000 * S) + 3000 * (int64_t)S;
	ana_clock_pair a[3] = { pair(1000 * S, 1000 * S, offA, 0, 40), pair(1600 * S, 1000 * S, offA, 0, 30),
		                pair(1300 * S, 1000 * S, offA, 0, 20) };
	ana_clock_pair b[2] = { pair(10 * S, 10 * S, offB, 20, 50),
		                pair(610 * S, 10 * S, offB, 20, 10) };
	ana_clockfit fa, fb;
	th_check(ana_clockfit_make(a, 3, &fa) == 0 && fa.n_pairs == 3 && fa.a_ns == 1000 * S && fa.b_ns == 1600 * S,
	         "pairs sorted by mono, first and last used (%llu..%llu)", (unsigned long long)fa.a_ns,
	         (unsigned long long)fa.b_ns);
	th_check(fabs(fa.drift) < 1e-12 && fa.unc_ns == 40 && fa.resid_ns == 0, "A: no drift, uncertainty 40, no residual");
	th_check(ana_clockfit_make(b, 2, &fb) == 0 && fabs(fb.drift * 1e6 - 20) < 0.001, "B: drift 20 ppm (%.4f)",
	         fb.drift * 1e6);
	/* an event at B's monotonic 310 s happened at realtime rtB(310 s); A's time of it: */
	uint64_t tb = 310 * S;
	int64_t rt = (int64_t)tb + b[0].realtime_ns - (int64_t)b[0].mono_ns + (int64_t)llround(20e-6 * (double)(tb - 10 * S));
	uint64_t want_a = (uint64_t)(rt - offA);
	int64_t d = ana_clockfit_delta(&fb, &fa, tb);
	int64_t err = (int64_t)(tb + (uint64_t)d) - (int64_t)want_a;
	th_check(llabs(err) <= 2, "B's 310 s onto A's clock within 2 ns, drift included (off by %lld ns)", (long long)err);
	d = ana_clockfit_delta(&fa, &fb, want_a);
	err = (int64_t)(want_a + (uint64_t)d) - (int64_t)tb;
	th_check(llabs(err) <= 2, "and back: A onto B within 2 ns (off by %lld ns)", (long long)err);
	th_check(ana_clockfit_error(&fa, &fb) == 90, "error = the two fits' uncertainties (40 + 50)");

	/* a realtime step of 3 ms between the pairs (NTP stepped the clock): the middle pair strays */
	ana_clock_pair c[3] = { pair(0 * S + 1, 1, 0, 0, 5), pair(100 * S, 1, 3000000, 0, 5), pair(200 * S, 1, 0, 0, 5) };
	ana_clockfit fc;
	ana_clockfit_make(c, 3, &fc);
	th_check(fc.resid_ns >= 2999000 && fc.resid_ns <= 3000000, "a 3 ms step shows as a residual of %llu ns",
	         (unsigned long long)fc.resid_ns);
	th_check(ana_clockfit_error(&fc, &fa) >= 3000000, "... and enters the stated error");

	/* a realtime step of 1 s between the only two pairs (100 s apart): no clock drifts by 1 %, so
	 * no drift is fitted and the step is the error */
	ana_clock_pair w[2] = { pair(10 * S, 10 * S, 0, 0, 5), pair(110 * S, 10 * S, (int64_t)S, 0, 5) };
	ana_clockfit fw;
	ana_clockfit_make(w, 2, &fw);
	th_check(fw.drift == 0 && fw.resid_ns == S, "a 1 s step over 100 s is no drift (%.6f) but 1 s of error (%llu)",
	         fw.drift, (unsigned long long)fw.resid_ns);
	/* hostile numbers: nothing overflows (UBSan would say) */
	ana_clock_pair h[2] = { { 1, UINT64_MAX, UINT64_MAX, 1 }, { UINT64_MAX, 0, 0, 1 } };
	ana_clockfit fh;
	th_check(ana_clockfit_make(h, 2, &fh) == 0 && ana_clockfit_error(&fh, &fa) == UINT64_MAX,
	         "pairs at the ends of the u64 range: a fit, and an error that saturates");
	(void)ana_clockfit_delta(&fh, &fa, UINT64_MAX);
	(void)ana_clockfit_delta(&fa, &fh, 0);

	/* one pair: drift unknown (0), the offset alone */
	ana_clock_pair one = { 5 * S, 5 * S + 777, 0, 0 };
	ana_clockfit f1;
	th_check(ana_clockfit_make(&one, 1, &f1) == 0 && f1.drift == 0 && f1.unstated && f1.off_ns == 777,
	         "one pair of unrecorded uncertainty: offset 777, drift 0, flagged unstated");
	th_check(ana_clockfit_make(&one, 0, &f1) != 0, "no pair: refused");
	return th_report();
}
