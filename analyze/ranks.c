/* ranks.c — across a job's ranks: stragglers per step (NVTX ranges, step counters), GPU busy spread. */
#include "ranks.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "gpu_sum.h"
#include "gt_util.h"
#include "report.h"

#define MIN_STEPS 3       /* a series is step-like with this many steps in each of two processes */
#define MAX_SERIES 16     /* series shown (longest first) */

/* One step of one process: a range (or the interval between two counter changes). */
typedef struct step {
	const char *name;
	int is_counter;
	uint32_t pid, tid;       /* tid: the range's thread (0 for a counter) */
	uint64_t start_ns, end_ns;
} step;

static int step_cmp(const void *a, const void *b)
{
	const step *x = a, *y = b;
	int c = x->is_counter - y->is_counter;
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = x->pid < y->pid ? -1 : x->pid > y->pid;
	if (!c)
		c = x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
	return c;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The processes compared: ranked ones (not a rank's children) when there are two, else all. */
static int member(const ana_procs *P, uint32_t pid, int ranked_only)
{
	const ana_proc *p = ana_procs_find(P, pid);
	if (!p)
		return 0;
	return !ranked_only || ((p->rank || p->role) && !p->inherited);
}

static int collect_ranges(const ana_model *m, const ana_procs *P, int ranked, step **v, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < m->nvtx.n; i++) {
		const gtt_nvtx *r = &m->nvtx.v[i];
		if (r->kind != GTT_NVTX_RANGE || !member(P, r->pid, ranked))
			continue;
		if (GT_GROW(*v, *cap, *n + 1) < 0)
			return GTT_ENOMEM;
		(*v)[(*n)++] = (step){ ana_string_get(m, r->pid, r->name_id), 0, r->pid, r->tid, r->start_ns, r->end_ns };
	}
	return 0;
}

typedef struct cref { const char *name; uint32_t pid; size_t idx; } cref;
static int cref_cmp(const void *a, const void *b)
{
	const cref *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (!c)
		c = x->pid < y->pid ? -1 : x->pid > y->pid;
	return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

/* A counter that only grows in a process (a step count, tokens trained) makes a step of each
 * interval between two of its changes. */
static int collect_counters(const ana_model *m, const ana_procs *P, int ranked, step **v, size_t *n, size_t *cap)
{
	size_t k = 0;
	cref *c = malloc((m->counters.n ? m->counters.n : 1) * sizeof(*c));
	if (!c)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->counters.n; i++)
		if (member(P, m->counters.v[i].pid, ranked))
			c[k++] = (cref){ ana_string_get(m, m->counters.v[i].pid, m->counters.v[i].name_id), m->counters.v[i].pid, i };
	if (k > 1)
		qsort(c, k, sizeof(*c), cref_cmp);
	for (size_t a = 0, b; a < k; a = b) {
		int grows = 1;
		size_t changes = 0;
		for (b = a; b < k && c[b].pid == c[a].pid && !strcmp(c[b].name, c[a].name); b++)
			if (b > a) {
				double d = m->counters.v[c[b].idx].value - m->counters.v[c[b - 1].idx].value;
				grows &= !(d < 0);
				changes += d > 0;
			}
		if (!grows || changes < MIN_STEPS)
			continue;
		size_t prev = a;
		for (size_t j = a + 1; j < b; j++) {
			const gtt_counter *x = &m->counters.v[c[j].idx], *p0 = &m->counters.v[c[prev].idx];
			if (!(x->value > p0->value))
				continue;
			if (GT_GROW(*v, *cap, *n + 1) < 0) {
				free(c);
				return GTT_ENOMEM;
			}
			(*v)[(*n)++] = (step){ c[j].name, 1, c[j].pid, 0, p0->time_ns, x->time_ns };
			prev = j;
		}
	}
	free(c);
	return 0;
}

/* One series: steps v[0..n) of several processes, each process's in time order. */
static int analyze_series(const step *v, size_t n, ana_straggle *s)
{
	size_t np = 0, max_k = 0;
	size_t *first = NULL, *times = NULL;
	uint64_t *excess = NULL, *d = NULL;
	int rc = GTT_ENOMEM;

	memset(s, 0, sizeof(*s));
	s->name = v[0].name;
	s->is_counter = v[0].is_counter;
	if (!(first = malloc((n + 1) * sizeof(*first))))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (!i || v[i].pid != v[i - 1].pid)
			first[np++] = i;
	first[np] = n;
	s->n_procs = np;
	size_t enough = 0;
	for (size_t p = 0; p < np; p++) {
		size_t len = first[p + 1] - first[p];
		enough += len >= MIN_STEPS;
		if (len > max_k)
			max_k = len;
	}
	rc = 0;
	if (enough < 2)
		goto out;
	rc = GTT_ENOMEM;
	if (!(times = calloc(np, sizeof(*times))) || !(excess = malloc(max_k * sizeof(*excess))) ||
	    !(d = malloc(np * sizeof(*d))))
		goto out;
	for (size_t k = 0; k < max_k; k++) {
		size_t nd = 0, slow = 0;
		uint64_t slow_d = 0;
		for (size_t p = 0; p < np; p++) {
			if (first[p] + k >= first[p + 1])
				continue;
			const step *st = &v[first[p] + k];
			d[nd++] = ana_span(st->start_ns, st->end_ns);
			if (nd == 1 || d[nd - 1] > slow_d) {
				slow_d = d[nd - 1];
				slow = p;
			}
		}
		if (nd < 2)
			continue;
		qsort(d, nd, sizeof(*d), u64_cmp);
		uint64_t med = nd % 2 ? d[nd / 2] : (d[nd / 2 - 1] + d[nd / 2]) / 2;
		excess[s->n_steps++] = slow_d - med;
		times[slow]++;
		if (slow_d - med > s->max_excess_ns || s->n_steps == 1) {
			s->max_excess_ns = slow_d - med;
			s->max_step = k;
			s->max_pid = v[first[slow]].pid;
			s->max_median_ns = med;
		}
	}
	if (s->n_steps) {
		qsort(excess, s->n_steps, sizeof(*excess), u64_cmp);
		s->median_excess_ns = excess[s->n_steps / 2];
		for (size_t p = 0; p < np; p++)
			if (times[p] > s->worst_times) {
				s->worst_times = times[p];
				s->worst_pid = v[first[p]].pid;
			}
	}
	rc = 0;
out:
	free(first);
	free(times);
	free(excess);
	free(d);
	return rc;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* A range name used on several threads of a process (each worker's "step") would interleave
 * their steps: the process's series is its busiest thread's (the most ranges of that name; the
 * lowest tid on a tie). v is sorted by (kind, name, pid, start); returns the new length, or
 * GTT_ENOMEM. */
static long keep_main_thread(step *v, size_t n)
{
	uint32_t *t = malloc((n ? n : 1) * sizeof(*t));
	size_t k = 0;
	if (!t)
		return GTT_ENOMEM;
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].is_counter == v[a].is_counter && v[b].pid == v[a].pid && !strcmp(v[b].name, v[a].name);
		     b++)
			;
		for (size_t i = a; i < b; i++)
			t[i - a] = v[i].tid;
		qsort(t, b - a, sizeof(*t), u32_cmp);
		uint32_t best = t[0];
		size_t best_n = 0;
		for (size_t i = 0, j; i < b - a; i = j) {
			for (j = i; j < b - a && t[j] == t[i]; j++)
				;
			if (j - i > best_n) {
				best_n = j - i;
				best = t[i];
			}
		}
		for (size_t i = a; i < b; i++)
			if (v[i].tid == best)
				v[k++] = v[i];
	}
	free(t);
	return (long)k;
}

int ana_ranks_stragglers(const ana_model *m, const ana_procs *P, ana_straggle **out, size_t *n_out)
{
	step *v = NULL;
	size_t n = 0, cap = 0, n_ranked = 0, ns = 0, cap_s = 0;
	ana_straggle *S = NULL;
	int rc;

	*out = NULL;
	*n_out = 0;
	for (size_t i = 0; i < P->n; i++)
		n_ranked += (P->v[i].rank || P->v[i].role) && !P->v[i].inherited;
	if ((rc = collect_ranges(m, P, n_ranked >= 2, &v, &n, &cap)) < 0 ||
	    (rc = collect_counters(m, P, n_ranked >= 2, &v, &n, &cap)) < 0)
		goto out;
	if (n > 1)
		qsort(v, n, sizeof(*v), step_cmp);
	long kept = keep_main_thread(v, n);
	if (kept < 0) {
		rc = (int)kept;
		goto out;
	}
	n = (size_t)kept;
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].is_counter == v[a].is_counter && !strcmp(v[b].name, v[a].name); b++)
			;
		ana_straggle s;
		if ((rc = analyze_series(v + a, b - a, &s)) < 0)
			goto out;
		if (!s.n_steps)
			continue;
		if (GT_GROW(S, cap_s, ns + 1) < 0) {
			rc = GTT_ENOMEM;
			goto out;
		}
		S[ns++] = s;
	}
	*out = S;
	*n_out = ns;
	S = NULL;
	rc = 0;
out:
	free(S);
	free(v);
	return rc;
}

static void who(const ana_procs *P, uint32_t pid, char *buf, size_t len)
{
	const ana_proc *p = ana_procs_find(P, pid);
	char label[96] = "-";
	if (p)
		ana_proc_label(p, label, sizeof(label));
	if (label[0] == '-')
		snprintf(buf, len, "pid %u", pid);
	else
		snprintf(buf, len, "%s (pid %u)", label, pid);
}

static int straggle_cmp(const void *a, const void *b)
{
	const ana_straggle *x = a, *y = b;
	if (x->n_steps != y->n_steps)
		return x->n_steps > y->n_steps ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void heading(FILE *out, int *done)
{
	if (!*done)
		fprintf(out, "\nAcross ranks\n");
	*done = 1;
}

static void report_stragglers(const ana_model *m, const ana_procs *P, FILE *out, int *head)
{
	ana_straggle *S;
	size_t n;
	if (ana_ranks_stragglers(m, P, &S, &n) < 0 || !n) {
		free(S);
		return;
	}
	qsort(S, n, sizeof(*S), straggle_cmp);
	heading(out, head);
	fprintf(out, "  Stragglers (step k of each process against step k of the others: the slowest, and by how much"
	             " it exceeds the median of the processes):\n");
	for (size_t i = 0; i < n && i < MAX_SERIES; i++) {
		const ana_straggle *s = &S[i];
		char w[128], mx[128];
		who(P, s->worst_pid, w, sizeof(w));
		who(P, s->max_pid, mx, sizeof(mx));
		fprintf(out, "    %s %s: %zu processes, %zu steps compared; slowest most often %s, %zu of %zu steps;"
		        " median excess %.3f ms; worst step %zu: %s, %.3f ms over the median %.3f ms\n",
		        s->is_counter ? "counter" : "NVTX", s->name, s->n_procs, s->n_steps, w, s->worst_times, s->n_steps,
		        (double)s->median_excess_ns / (double)GT_NS_PER_MS, s->max_step, mx,
		        (double)s->max_excess_ns / (double)GT_NS_PER_MS, (double)s->max_median_ns / (double)GT_NS_PER_MS);
	}
	if (n > MAX_SERIES)
		fprintf(out, "    (%zu more series)\n", n - MAX_SERIES);
	free(S);
}

/* Busy % of each device, and their spread; the processes sharing each device and their part. */
static void report_gpu_spread(const ana_model *m, const ana_procs *P, FILE *out, int *head)
{
	uint64_t dur = ana_duration_ns(m);
	const ana_gpu_sum *g = ana_gpu_n_records(m) ? ana_gpu_sum_of(m) : NULL;
	if (!g || !g->n_phys)
		return;
	uint64_t *busy = calloc((size_t)g->n_phys, sizeof(*busy)), *sorted = calloc((size_t)g->n_phys, sizeof(*sorted));
	if (!busy || !sorted)
		goto out;
	for (int d = 0; d < g->n_phys; d++)
		busy[d] = g->busy[d].all_ns;
	memcpy(sorted, busy, (size_t)g->n_phys * sizeof(*busy));
	qsort(sorted, (size_t)g->n_phys, sizeof(*sorted), u64_cmp);
	heading(out, head);
	fprintf(out, "  GPU busy across devices (union of each device's work, %% of the recording):");
	if (g->n_phys > 1)
		fprintf(out, " min %.1f%%, median %.1f%%, max %.1f%%; spread %.1f points\n", 100.0 * (double)sorted[0] / (double)dur,
		        100.0 * (double)sorted[g->n_phys / 2] / (double)dur, 100.0 * (double)sorted[g->n_phys - 1] / (double)dur,
		        100.0 * (double)(sorted[g->n_phys - 1] - sorted[0]) / (double)dur);
	else
		fprintf(out, " one device: no spread across devices\n");
	for (int d = 0; d < g->n_phys; d++) {
		fprintf(out, "    GPU %d: busy %.1f%%; its processes' own work:", d, 100.0 * (double)busy[d] / (double)dur);
		int any = 0;
		for (size_t i = 0; i < P->n; i++) {
			const ana_proc *p = &P->v[i];
			int on = 0;
			for (int k = 0; k < p->n_devs; k++)
				on |= p->devs[k] == d;
			if (!on)
				continue;
			char w[128];
			who(P, p->pid, w, sizeof(w));
			/* a process on several devices: its busy union covers them all */
			fprintf(out, "%s %s %.1f%%%s", any ? ";" : "", w, 100.0 * (double)p->gpu_busy_ns / (double)dur,
			        p->n_devs > 1 ? " (all its devices)" : "");
			any = 1;
		}
		fprintf(out, "%s\n", any ? "" : " -");
	}
out:
	free(busy);
	free(sorted);
}

void ana_ranks_report(const ana_model *m, const ana_procs *P, FILE *out, int top_n)
{
	int head = 0;
	(void)top_n;
	report_stragglers(m, P, out, &head);
	report_gpu_spread(m, P, out, &head);
}
