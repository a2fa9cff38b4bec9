/* clockfit.c — a trace's monotonic -> realtime line from its clock pairs, and maps between traces. */
#include "clockfit.h"

#include <math.h>
#include <stdlib.h>

#include "gtt.h"

static int pair_cmp(const void *a, const void *b)
{
	const ana_clock_pair *x = a, *y = b;
	return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

/* Sums wrap (unsigned) rather than overflow: hostile traces carry any numbers. */
static int64_t line_at(const ana_clockfit *f, uint64_t t)
{
	double dt = (double)(int64_t)(t - f->a_ns);
	return (int64_t)((uint64_t)f->off_ns + (uint64_t)(int64_t)llround(f->drift * dt));
}

int ana_clockfit_make(ana_clock_pair *p, size_t n, ana_clockfit *f)
{
	size_t i;
	const ana_clock_pair *a, *b;

	if (n == 0)
		return GTT_EINVAL;
	qsort(p, n, sizeof(*p), pair_cmp);
	a = &p[0];
	b = &p[n - 1];
	f->n_pairs = n;
	f->a_ns = a->mono_ns;
	f->b_ns = b->mono_ns;
	f->off_ns = (int64_t)(a->realtime_ns - a->mono_ns);
	f->drift = 0;
	f->resid_ns = 0;
	if (b->mono_ns > a->mono_ns) {
		int64_t off_b = (int64_t)(b->realtime_ns - b->mono_ns);
		f->drift = ((double)off_b - (double)f->off_ns) / (double)(b->mono_ns - a->mono_ns);
		/* no clock drifts by 0.1 %: the pairs are wrong (a realtime step), not the rate */
		if (!(fabs(f->drift) <= ANA_CLOCK_MAX_DRIFT)) {
			double gap = fabs((double)off_b - (double)f->off_ns);
			f->drift = 0;
			f->resid_ns = gap < 9e18 ? (uint64_t)gap : UINT64_MAX / 2;
		}
	}
	f->unc_ns = a->uncertainty_ns > b->uncertainty_ns ? a->uncertainty_ns : b->uncertainty_ns;
	f->unstated = !a->stated || !b->stated;
	for (i = 1; i + 1 < n; i++) {
		int64_t d = (int64_t)(p[i].realtime_ns - p[i].mono_ns) - line_at(f, p[i].mono_ns);
		uint64_t ad = (uint64_t)(d < 0 ? -d : d), slack = p[i].uncertainty_ns + f->unc_ns;
		if (ad > slack && ad - slack > f->resid_ns)
			f->resid_ns = ad - slack;
		f->unstated |= !p[i].stated;
	}
	return 0;
}

int64_t ana_clockfit_delta(const ana_clockfit *from, const ana_clockfit *to, uint64_t t)
{
	/* realtime of t, then the time of `to` whose realtime it is:
	 * u + off_to + d_to (u - a_to) = rt  =>  u = a_to + (rt - off_to - a_to) / (1 + d_to) */
	uint64_t x = t + (uint64_t)line_at(from, t) - (uint64_t)to->off_ns; /* rt - off_to, a monotonic time */
	double dx = (double)(int64_t)(x - to->a_ns);
	int64_t corr = (int64_t)llround(-dx * to->drift / (1.0 + to->drift));
	return (int64_t)(x + (uint64_t)corr - t);
}

uint64_t ana_clockfit_error(const ana_clockfit *a, const ana_clockfit *b)
{
	uint64_t e = a->unc_ns, parts[3] = { b->unc_ns, a->resid_ns, b->resid_ns };
	for (int i = 0; i < 3; i++)
		e = e + parts[i] < e ? UINT64_MAX : e + parts[i];
	return e;
}
