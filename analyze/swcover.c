/* swcover.c — the stretches without switch records, from switch_gate records (per recorded tree),
 * and what they mean for on-CPU time and for drawing a thread's off-CPU gaps. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "captured.h"
#include "gt_util.h"
#include "model_priv.h"
#include "swcover.h"

#define MAX_TREES 256 /* recordings' gates in one trace (a merge of that many) */

/* How many recordings gt-analyze merge put into m; 0 for a recording of its own. An input
 * without gate records (every switch, --switch-events=on or per task; an older recorder) has
 * no group, so the number of groups says nothing of how many recordings there are. */
static unsigned long merged_traces(const ana_model *m)
{
	const char *v = ana_meta_get(m, "merge.traces");
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;
	return n ? n : v != NULL;
}

static int gate_cmp(const void *a, const void *b)
{
	const gtt_switch_gate *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* When the tree of root pid ended: its root's last exit record (a merged trace holds recordings
 * that ended at different times); UINT64_MAX when it has none. */
static uint64_t tree_end(const ana_model *m, uint32_t pid)
{
	uint64_t end = UINT64_MAX;
	for (size_t i = 0; pid && i < m->processes.n; i++)
		if (m->processes.v[i].pid == pid && m->processes.v[i].event == GTT_PROC_EXIT)
			end = m->processes.v[i].time_ns;
	return end;
}

/* The closed stretches of one recorded tree from its gate records g[0..n), time-sorted. */
static int build_group(ana_model *m, const gtt_switch_gate *g, size_t n, ana_swgroup *grp)
{
	uint64_t lo = m->start_ns, hi = m->end_ns > m->start_ns ? m->end_ns : m->start_ns;
	uint64_t ended = m->swgroups.n > 1 || n < m->gates.n || merged_traces(m) ? tree_end(m, grp->pid) : UINT64_MAX;
	if (ended < hi && ended > lo)
		hi = ended; /* nothing of the tree after its end: no stretch is without its switches */
	int closed = 0; /* open before the first record */
	uint64_t since = lo;
	for (size_t i = 0; i <= n; i++) {
		int last = i == n;
		int now_closed = last ? 0 : g[i].event == GTT_GATE_CLOSED;
		uint64_t t = last ? hi : g[i].time_ns;
		if (!last && g[i].rate_per_s > m->sw_rate_max)
			m->sw_rate_max = g[i].rate_per_s;
		if (!last && g[i].limit_per_s)
			m->sw_limit = g[i].limit_per_s;
		if (now_closed == closed && !last)
			continue;
		if (closed) {
			uint64_t s = since > lo ? since : lo, e = t < hi ? t : hi;
			if (e > s) {
				ana_interval *iv = ana_vec_push(grp->closed);
				if (!iv)
					return GTT_ENOMEM;
				*iv = (ana_interval){ s, e };
				grp->closed_ns += ana_captured_within(m, s, e);
			}
		}
		closed = now_closed;
		since = t;
	}
	return 0;
}

int ana_swcover_build(ana_model *m)
{
	for (size_t i = 0; i < m->swgroups.n; i++)
		free(m->swgroups.v[i].closed.v);
	m->swgroups.n = 0;
	m->sw_closed_ns = 0;
	if (!m->gates.n)
		return 0;
	/* stable: a close and an opening at the same time (a ring segment's start state) keep the
	 * order they were written in */
	if (ana_sort_stable(m->gates.v, m->gates.n, sizeof(*m->gates.v), gate_cmp) < 0)
		return GTT_ENOMEM;
	size_t n_trees = 1;
	for (size_t i = 1; i < m->gates.n; i++)
		n_trees += m->gates.v[i].pid != m->gates.v[i - 1].pid;
	if (n_trees > MAX_TREES) {
		/* no merge of recordings has that many: a damaged or hostile trace. One gate for all,
		 * in time order (approximate: one tree's closing counts for every thread, and so does
		 * another's opening; bounded either way) */
		ana_warn(m, "%s: switch gate records of %zu recorded trees (at most %d expected): they are taken as one",
		         m->path, n_trees, MAX_TREES);
		for (size_t i = 0; i < m->gates.n; i++)
			m->gates.v[i].pid = 0;
		if (ana_sort_stable(m->gates.v, m->gates.n, sizeof(*m->gates.v), gate_cmp) < 0)
			return GTT_ENOMEM;
	}
	for (size_t i = 0; i < m->gates.n;) {
		size_t j = i;
		while (j < m->gates.n && m->gates.v[j].pid == m->gates.v[i].pid)
			j++;
		ana_swgroup *grp = ana_vec_push(m->swgroups);
		if (!grp)
			return GTT_ENOMEM;
		*grp = (ana_swgroup){ .pid = m->gates.v[i].pid };
		if (build_group(m, &m->gates.v[i], j - i, grp) < 0)
			return GTT_ENOMEM;
		if (grp->closed_ns > m->sw_closed_ns)
			m->sw_closed_ns = grp->closed_ns;
		i = j;
	}
	return 0;
}

int ana_swcover_partial(const ana_model *m)
{
	return m->sw_closed_ns > 0;
}

/* The group whose root is pid, NULL when none (a binary search). */
static const ana_swgroup *find_group(const ana_model *m, uint32_t pid)
{
	size_t lo = 0, hi = m->swgroups.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->swgroups.v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->swgroups.n && m->swgroups.v[lo].pid == pid ? &m->swgroups.v[lo] : NULL;
}

/* The gate of pid's tree: pid's own or its nearest ancestor's; the only one of a recording's
 * own trace (every process in it is of the tree); NULL when none. A merged trace's only group is
 * not every thread's: the other inputs may have had every switch (no gate records). */
static const ana_swgroup *group_of(const ana_model *m, uint32_t pid)
{
	if (m->swgroups.n == 1 && !merged_traces(m))
		return &m->swgroups.v[0];
	/* groups are in pid order (built from the sorted gates); at most 64 ancestors (a hostile
	 * trace's parents may loop) */
	for (int depth = 0; depth < 64 && pid; depth++) {
		const ana_swgroup *g = find_group(m, pid);
		if (g)
			return g;
		const gtt_process *parent = ana_process_parent(m, pid);
		if (!parent || parent->ppid == pid)
			break;
		pid = parent->ppid;
	}
	return find_group(m, 0); /* a gate of the whole trace */
}

void ana_swcover_apply(ana_model *m)
{
	if (!ana_swcover_partial(m))
		return;
	for (size_t i = 0; i < m->threads.n; i++) {
		const ana_swgroup *g = group_of(m, m->threads.v[i].pid);
		if (g && g->closed_ns) {
			m->threads.v[i].oncpu_known = 0;
			m->threads.v[i].oncpu_ns = 0;
		}
	}
}

const ana_interval *ana_swcover_closed(const ana_model *m, uint32_t pid, size_t *n)
{
	const ana_swgroup *g = group_of(m, pid);
	*n = g ? g->closed.n : 0;
	return g && g->closed.n ? g->closed.v : NULL;
}

int ana_swcover_gap(const ana_model *m, uint32_t pid, uint64_t a, uint64_t b)
{
	size_t n;
	const ana_interval *v = ana_swcover_closed(m, pid, &n);
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first stretch ending after a */
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].end_ns <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].start_ns < b;
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
	uint64_t all = ana_captured_ns(m, NULL), open = all > m->sw_closed_ns ? all - m->sw_closed_ns : 0;
	size_t n_partial = 0;
	char rate[32], limit[32], why[320] = "";
	for (size_t i = 0; i < m->swgroups.n; i++)
		n_partial += m->swgroups.v[i].closed_ns > 0;
	fmt_count(m->sw_rate_max, rate, sizeof(rate));
	fmt_count(m->sw_limit, limit, sizeof(limit));
	if (m->sw_rate_max)
		snprintf(why, sizeof(why), " (the recorded processes switched up to %s times a second, over gt-record's "
		         "limit of %s for the CPUs they kept busy; --switch-events=on records every switch)", rate, limit);
	size_t n_traces = merged_traces(m) > m->swgroups.n ? (size_t)merged_traces(m) : m->swgroups.n;
	if (m->swgroups.n > 1 || merged_traces(m)) /* a merged trace: each input's gate is its own */
		snprintf(buf, len, "context switches not recorded over %.3f s in %zu of the %zu recordings merged here%s: "
		         "their threads' on-CPU time is from /proc readings", gt_ns_to_s(m->sw_closed_ns), n_partial,
		         n_traces, why);
	else
		snprintf(buf, len, "context switches recorded over %.1f%% of the time%s: on-CPU time is from /proc readings",
		         all ? 100.0 * (double)open / (double)all : 0.0, why);
}
