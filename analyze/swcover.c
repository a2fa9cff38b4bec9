/* swcover.c — the stretches without switch records, from switch_gate records, and what they mean
 * for on-CPU time and for drawing a thread's off-CPU gaps. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "captured.h"
#include "model_priv.h"
#include "swcover.h"

static int gate_cmp(const void *a, const void *b)
{
	const gtt_switch_gate *x = a, *y = b;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int ana_swcover_build(ana_model *m)
{
	uint64_t lo = m->start_ns, hi = m->end_ns > m->start_ns ? m->end_ns : m->start_ns;
	m->sw_closed.n = 0;
	m->sw_closed_ns = 0;
	if (!m->gates.n)
		return 0;
	qsort(m->gates.v, m->gates.n, sizeof(*m->gates.v), gate_cmp);
	int closed = 0; /* open before the first record */
	uint64_t since = lo;
	for (size_t i = 0; i <= m->gates.n; i++) {
		int last = i == m->gates.n;
		const gtt_switch_gate *g = last ? NULL : &m->gates.v[i];
		if (g && g->rate_per_s > m->sw_rate_max)
			m->sw_rate_max = g->rate_per_s;
		if (g && g->limit_per_s)
			m->sw_limit = g->limit_per_s;
		int now_closed = last ? 0 : g->event == GTT_GATE_CLOSED;
		uint64_t t = last ? hi : g->time_ns;
		if (now_closed == closed && !last)
			continue;
		if (closed) {
			uint64_t s = since > lo ? since : lo, e = t < hi ? t : hi;
			if (e > s) {
				ana_interval *iv = ana_vec_push(m->sw_closed);
				if (!iv)
					return GTT_ENOMEM;
				*iv = (ana_interval){ s, e };
				m->sw_closed_ns += ana_captured_within(m, s, e);
			}
		}
		closed = now_closed;
		since = t;
	}
	return 0;
}

int ana_swcover_partial(const ana_model *m)
{
	return m->sw_closed_ns > 0;
}

void ana_swcover_apply(ana_model *m)
{
	if (!ana_swcover_partial(m))
		return;
	for (size_t i = 0; i < m->threads.n; i++) {
		m->threads.v[i].oncpu_known = 0;
		m->threads.v[i].oncpu_ns = 0;
	}
}

int ana_swcover_gap(const ana_model *m, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = m->sw_closed.n;
	while (lo < hi) { /* the first stretch ending after a */
		size_t mid = lo + (hi - lo) / 2;
		if (m->sw_closed.v[mid].end_ns <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->sw_closed.n && m->sw_closed.v[lo].start_ns < b;
}

uint64_t ana_swcover_open_ns(const ana_model *m)
{
	uint64_t all = ana_captured_ns(m, NULL);
	return all > m->sw_closed_ns ? all - m->sw_closed_ns : 0;
}

/* "112 345" */
static void fmt_count(uint64_t v, char *buf, size_t len)
{
	if (v >= 1000000)
		snprintf(buf, len, "%" PRIu64 " %03" PRIu64 " %03" PRIu64, v / 1000000, v / 1000 % 1000, v % 1000);
	else if (v >= 1000)
		snprintf(buf, len, "%" PRIu64 " %03" PRIu64, v / 1000, v % 1000);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

void ana_swcover_describe(const ana_model *m, char *buf, size_t len)
{
	uint64_t all = ana_captured_ns(m, NULL), open = ana_swcover_open_ns(m);
	char rate[32], limit[32], why[320] = "";
	fmt_count(m->sw_rate_max, rate, sizeof(rate));
	fmt_count(m->sw_limit, limit, sizeof(limit));
	if (m->sw_rate_max)
		snprintf(why, sizeof(why), " (the recorded processes switched up to %s times a second, over gt-record's "
		         "limit of %s for the CPUs they kept busy; --switch-events=on records every switch)", rate, limit);
	snprintf(buf, len, "context switches recorded over %.1f%% of the time%s: on-CPU time is from /proc readings",
	         all ? 100.0 * (double)open / (double)all : 0.0, why);
}
