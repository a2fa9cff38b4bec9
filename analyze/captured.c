/* captured.c — captured intervals from capture records, the time arithmetic over them, and the
 * checks that a trace's times agree with its own bounds. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "captured.h"
#include "gt_util.h"
#include "model_priv.h"
#include "sample_sum.h"

typedef struct edge { uint64_t t; uint32_t event; } edge;

static int edge_cmp(const void *a, const void *b)
{
	const edge *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->event < y->event ? -1 : x->event > y->event; /* a start before a stop at one time */
}

int ana_capture_outside(const ana_model *m, uint64_t t, uint64_t weight_ns)
{
	uint64_t slack = weight_ns < GT_NS_PER_MS ? GT_NS_PER_MS : weight_ns;
	size_t k = ana_capture_index(m, t);
	if (k < m->captured.n && m->captured.v[k].start_ns <= t)
		return 0;
	if (k < m->captured.n && m->captured.v[k].start_ns - t <= slack)
		return 0;
	if (k > 0 && t - m->captured.v[k - 1].end_ns <= slack)
		return 0;
	return 1;
}

/* Samples are only taken while sampling is on, so each lies in a captured interval (give or take
 * one sample period at the edges, where the switch and its record are not one instant). When
 * some do not, the capture records are wrong (out of order, nested, lost, or hostile), and rates
 * and CPU % over the captured time would be inflated without bound: say so and count the whole
 * run instead. A model that keeps no samples had them counted as they were read (pass 2). */
static void check_samples(ana_model *m)
{
	uint64_t outside = 0;
	if (m->samples_streamed)
		outside = ana_priv_get(m) ? ana_priv_get(m)->n_outside_captured : 0;
	for (size_t i = 0; i < m->samples.n; i++)
		outside += (uint64_t)ana_capture_outside(m, m->samples.v[i].time_ns, m->samples.v[i].weight_ns);
	if (!outside)
		return;
	ana_warn(m, "%s: %" PRIu64 " of %" PRIu64 " samples lie outside the captured intervals that the trace's capture "
	            "records describe (records out of order, nested or lost): rates, CPU %% and intended samples are "
	            "counted over the whole run instead", m->path, outside, ana_model_n_samples(m));
	m->capture_controlled = 0;
	m->captured.n = 0;
}

/* The span of a trace is its first to last record time. A record timed far outside the
 * recording (after its END record, or before the start_ns it declares: a hostile or damaged
 * trace, times near 0 or 2^64) stretches it, and every rate and CPU % over it with it (a 0.5 s
 * recording read as 18 446 744 072 s, 0.0 samples/s, without a word). Say so; the numbers are
 * over the span as it is. One second of slack: CUDA and agent records are timed by other
 * clocks converted to the trace's. */
static void check_span(ana_model *m)
{
	const char *meta_start = ana_meta_get(m, "start_ns");
	uint64_t declared = meta_start ? strtoull(meta_start, NULL, 10) : 0;
	if (m->has_end && m->end.time_ns && m->end_ns > m->end.time_ns &&
	    m->end_ns - m->end.time_ns > GT_NS_PER_SEC)
		ana_warn(m, "%s: records are timed up to %.3f s after the END record: the trace's times disagree "
		            "(damaged or hostile?); durations and rates below run to the last record",
		         m->path, gt_ns_to_s(m->end_ns - m->end.time_ns));
	/* (a declared start after every record is the meta's own damage, not the records') */
	if (declared && declared <= m->end_ns && m->start_ns && m->start_ns < declared &&
	    declared - m->start_ns > GT_NS_PER_SEC)
		ana_warn(m, "%s: records are timed up to %.3f s before the recording's start (meta start_ns): the "
		            "trace's times disagree (damaged or hostile?); durations and rates below start at "
		            "the first record", m->path, gt_ns_to_s(declared - m->start_ns));
}

int ana_capture_build(ana_model *m)
{
	check_span(m);
	int rc = ana_capture_intervals(m);
	if (rc == 0 && m->capture_controlled)
		check_samples(m);
	return rc;
}

int ana_capture_intervals(ana_model *m)
{
	size_t n = 0;
	edge *e;
	m->captured.n = 0;
	for (size_t i = 0; i < m->captures.n; i++)
		n += m->captures.v[i].pid == 0;
	if (!n)
		return 0;
	if (!(e = malloc(n * sizeof(*e))))
		return GTT_ENOMEM;
	n = 0;
	for (size_t i = 0; i < m->captures.n; i++)
		if (m->captures.v[i].pid == 0)
			e[n++] = (edge){ m->captures.v[i].time_ns, m->captures.v[i].event };
	qsort(e, n, sizeof(*e), edge_cmp);
	/* before the first record, sampling was in the state opposite to its event */
	int on = e[0].event == GTT_CAPTURE_STOP;
	uint64_t since = m->start_ns < e[0].t ? m->start_ns : e[0].t;
	int rc = 0;
	for (size_t i = 0; i <= n && rc == 0; i++) {
		int last = i == n;
		uint32_t ev = last ? GTT_CAPTURE_STOP : e[i].event;
		uint64_t t = last ? (m->end_ns > since ? m->end_ns : since) : e[i].t;
		if (ev == GTT_CAPTURE_START && !on) {
			on = 1;
			since = t;
		} else if (ev == GTT_CAPTURE_STOP && on) {
			on = 0;
			if (t <= since)
				continue; /* nothing captured (a stop at the very start) */
			ana_interval *s = ana_vec_push(m->captured);
			if (!s)
				rc = GTT_ENOMEM;
			else
				*s = (ana_interval){ since, t };
		}
	}
	m->capture_controlled = 1;
	free(e);
	return rc;
}

int ana_capture_controlled(const ana_model *m)
{
	return m->capture_controlled;
}

size_t ana_capture_index(const ana_model *m, uint64_t t)
{
	size_t lo = 0, hi = m->captured.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->captured.v[mid].end_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t ana_captured_within(const ana_model *m, uint64_t a, uint64_t b)
{
	if (b <= a)
		return 0;
	if (!m->capture_controlled)
		return b - a;
	uint64_t total = 0;
	for (size_t i = ana_capture_index(m, a); i < m->captured.n && m->captured.v[i].start_ns < b; i++) {
		uint64_t s = m->captured.v[i].start_ns > a ? m->captured.v[i].start_ns : a;
		uint64_t t = m->captured.v[i].end_ns < b ? m->captured.v[i].end_ns : b;
		if (t > s)
			total += t - s;
	}
	return total;
}

uint64_t ana_captured_ns(const ana_model *m, size_t *n_intervals)
{
	if (n_intervals)
		*n_intervals = m->capture_controlled ? m->captured.n : 1;
	return ana_captured_within(m, m->start_ns, m->end_ns > m->start_ns ? m->end_ns : m->start_ns);
}

uint64_t ana_run_ns(const ana_model *m)
{
	const char *rs = ana_meta_get(m, "run_start_ns");
	uint64_t start = m->start_ns;
	if (rs && strtoull(rs, NULL, 10) && strtoull(rs, NULL, 10) < start)
		start = strtoull(rs, NULL, 10);
	return m->end_ns > start ? m->end_ns - start : 0;
}
