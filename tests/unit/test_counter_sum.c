/* test_counter_sum.c — analyze/counter_sum.c on hand-made counter records: the step function's
 * min, time-weighted mean and max over the observed span, time at or below a watermark that
 * changes, a watermark set late, a non-finite value ending a step, a watermark without its
 * counter, and names sorted per process. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "counter_sum.h"
#include "testhelp.h"

#define S 1000000000ull

static int near(double a, double b)
{
	return fabs(a - b) < 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

static const ana_counter_sum *find(const ana_counter_sum *v, size_t n, uint32_t pid, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid && v[i].name_len == strlen(name) && memcmp(v[i].name, name, v[i].name_len) == 0)
			return &v[i];
	return NULL;
}

int main(void)
{
	th_check(ana_counter_watermark_of("q@watermark") == 1 && ana_counter_watermark_of("q") == 0 &&
	         ana_counter_watermark_of("@watermark") == 0, "X@watermark belongs to X");
	ana_counters_acc *a = ana_counters_acc_new();
	int rc = 0;
	/* q: 0 for 1 s, 10 for 2 s, 4 for 1 s, 12 at the end (t = 4 s); watermark 5 from t = 0,
	 * 3 from t = 3.5 s: at or below = [0,1) + [3,3.5) = 1.5 s */
	rc |= ana_counters_acc_add(a, 1, "q@watermark", 2, 0, 5);
	rc |= ana_counters_acc_add(a, 1, "q", 1, 0, 0);
	rc |= ana_counters_acc_add(a, 1, "q", 1, 1 * S, 10);
	rc |= ana_counters_acc_add(a, 1, "q", 1, 3 * S, 4);
	rc |= ana_counters_acc_add(a, 1, "q@watermark", 2, 3 * S + S / 2, 3);
	rc |= ana_counters_acc_add(a, 1, "q", 1, 4 * S, 12);
	/* r: watermark only from t = 2 s; value 1 throughout [0, 4): known 2 s, below 2 s */
	rc |= ana_counters_acc_add(a, 2, "r", 7, 0, 1);
	rc |= ana_counters_acc_add(a, 2, "r@watermark", 8, 2 * S, 1);
	rc |= ana_counters_acc_add(a, 2, "r", 7, 4 * S, 1);
	/* s: a non-finite value ends a step: 2 for 1 s, unknown for 1 s, 4 for 1 s */
	rc |= ana_counters_acc_add(a, 2, "s", 9, 0, 2);
	rc |= ana_counters_acc_add(a, 2, "s", 9, 1 * S, NAN);
	rc |= ana_counters_acc_add(a, 2, "s", 9, 2 * S, 4);
	rc |= ana_counters_acc_add(a, 2, "s", 9, 3 * S, 4);
	/* a watermark whose counter never came */
	rc |= ana_counters_acc_add(a, 2, "lonely@watermark", 10, 0, 3);
	th_check(rc == 0, "records taken");
	ana_counter_sum *v;
	size_t n;
	th_check(ana_counters_acc_finish(a, &v, &n) == 0 && n == 4, "four counters (a watermark is not one of its own)");
	const ana_counter_sum *q = find(v, n, 1, "q"), *r = find(v, n, 2, "r"), *s = find(v, n, 2, "s"),
	                      *l = find(v, n, 2, "lonely");
	th_check(q && q->n == 4 && q->min == 0 && q->max == 12 && q->first_ns == 0 && q->last_ns == 4 * S,
	         "q: samples, min, max, span");
	th_check(q && near(q->mean, (0 * 1 + 10 * 2 + 4 * 1) / 4.0), "q: time-weighted mean over the span (%g)",
	         q ? q->mean : -1);
	th_check(q && q->n_wm == 2 && q->wm_min == 3 && q->wm_max == 5 && q->below_ns == S + S / 2,
	         "q: at or below a changing watermark 1.5 s (%llu)", q ? (unsigned long long)q->below_ns : 0ull);
	th_check(r && r->wm_known_ns == 2 * S && r->below_ns == 2 * S && r->valued_ns == 4 * S,
	         "r: before its watermark's first record the time is not counted as below");
	th_check(s && s->valued_ns == 2 * S && near(s->mean, 3.0) && s->n == 3, "s: a non-finite value ends the step");
	th_check(l && l->n == 0 && l->n_wm == 1 && l->name_id == ANA_NO_ID, "a watermark without its counter");
	th_check(n == 4 && v[0].pid == 1 && v[1].pid == 2 && v[1].name_len == 6 && v[2].name[0] == 'r',
	         "sorted by (pid, name)");
	free(v);
	return th_report();
}
