/* test_gpu_queue.c — the GPU sweep's reorder queue (analyze/gpu_queue.c) against the plainest
 * reference: at each release, every pending event before the watermark, sorted by (time, kind,
 * file order). Events arrive nearly in time order with jitter (CUPTI's buffers), some far later
 * than the horizon (late), some far ahead of the calendar, at equal times and kinds, around
 * gaps in the recording longer than the calendar, and with everything held to the end. */
#include <stdlib.h>
#include <string.h>

#include "gpu_sum_priv.h"
#include "testhelp.h"

static uint64_t rng = 99;
static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rng >> 33) % n);
}

typedef struct ref_ev { uint64_t t, seq; uint32_t type; } ref_ev;

static int ref_cmp(const void *x, const void *y)
{
	const ref_ev *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* n events with times from time_of(i), released every `every` events at max time - horizon
 * (never, with horizon UINT64_MAX), then everything; returns the number of mismatches. */
static int run(const char *what, size_t n, uint64_t horizon, size_t every, uint64_t (*time_of)(size_t))
{
	gs_queue q;
	memset(&q, 0, sizeof(q));
	ref_ev *pend = malloc(n * sizeof(*pend)), *out = malloc(n * sizeof(*out));
	size_t n_pend = 0, n_out = 0, got = 0, bad = 0, peak_ref = 0;
	uint64_t max_t = 0, peak = 0;
	int rc = gs_queue_init(&q, horizon);
	for (size_t i = 0; rc == 0 && i <= n; i++) {
		if (i < n) {
			gs_ev e;
			memset(&e, 0, sizeof(e));
			e.t = time_of(i);
			e.seq = i;
			e.type = rnd(6);
			e.u.k.correlation = (uint32_t)i;
			pend[n_pend++] = (ref_ev){ e.t, e.seq, e.type };
			if (n_pend > peak_ref)
				peak_ref = n_pend;
			if (e.t > max_t)
				max_t = e.t;
			if ((rc = gs_queue_push(&q, &e, &peak)) < 0)
				break;
		}
		int last = i == n;
		if (!last && (horizon == UINT64_MAX || max_t <= horizon || i % every))
			continue;
		uint64_t w = last ? UINT64_MAX : max_t - horizon;
		/* the reference: what is before w, sorted */
		size_t k = 0, m = n_out;
		for (size_t j = 0; j < n_pend; j++) {
			if (pend[j].t < w)
				out[n_out++] = pend[j];
			else
				pend[k++] = pend[j];
		}
		n_pend = k;
		qsort(out + m, n_out - m, sizeof(*out), ref_cmp);
		if ((rc = gs_queue_release(&q, w)) < 0)
			break;
		gs_ev e;
		while ((rc = gs_queue_next(&q, w, &e)) > 0) {
			if (got >= n_out || e.t != out[got].t || e.seq != out[got].seq || e.type != out[got].type ||
			    e.u.k.correlation != (uint32_t)e.seq)
				bad++;
			got++;
		}
	}
	th_check(rc == 0 && got == n && n_out == n && bad == 0,
	         "%s: every event out once, in the reference's order (%zu of %zu, %zu misplaced)", what, got, n, bad);
	th_check(peak == peak_ref, "%s: the peak of queued events is the reference's (%llu, %zu)", what,
	         (unsigned long long)peak, peak_ref);
	gs_queue_free(&q);
	free(pend);
	free(out);
	return (int)bad;
}

/* 57 000 records/s delivered in 100 ms batches: within a batch, random order */
static uint64_t t_cupti(size_t i)
{
	return 1000000000ull + (i / 5700) * 100000000ull + rnd(100000000);
}
/* the same, and 1 in 500 comes 3 s late or 40 s early */
static uint64_t t_stray(size_t i)
{
	uint64_t t = t_cupti(i);
	uint32_t r = rnd(1000);
	return r == 0 ? t - 3000000000ull : r == 1 ? t + 40000000000ull : t;
}
/* few distinct times (ties of time and kind are broken by file order) */
static uint64_t t_ties(size_t i)
{
	return 5000000000ull + (i / 50) * 65536 + rnd(3) * 65536;
}
/* bursts separated by gaps of 30 s (longer than the calendar) */
static uint64_t t_gaps(size_t i)
{
	return 2000000000ull + (i / 2000) * 30000000000ull + rnd(50000000);
}
/* times near the top of the clock */
static uint64_t t_high(size_t i)
{
	return UINT64_MAX - 20000000000ull + i * 1000 + rnd(5000000);
}

int main(void)
{
	run("CUPTI batches, horizon 0.27 s", 200000, 270000000ull, 64, t_cupti);
	run("CUPTI batches, released after every event", 20000, 270000000ull, 1, t_cupti);
	run("late and far-ahead strays", 200000, 270000000ull, 64, t_stray);
	run("ties of time and kind", 50000, 200000ull, 16, t_ties);
	run("gaps longer than the calendar", 20000, 100000000ull, 64, t_gaps);
	run("near the end of the clock", 20000, 10000000ull, 64, t_high);
	run("everything held to the end (format 1.0)", 100000, UINT64_MAX, 64, t_stray);
	run("a tiny horizon (most events late)", 50000, 1000ull, 8, t_cupti);
	return th_report();
}
