/* timeline.c — lays out the per-thread timeline of a trace (see timeline.h): rows of CPU
 * threads, NVTX ranges, GPU streams and counters under one time axis, with a legend. */
#include "timeline.h"

#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "counter_sum.h"
#include "launch.h"
#include "launch_report.h"
#include "flame.h"
#include "gtt.h"
#include "procs.h"
#include "swcover.h"

#include "timeline_priv.h"

double ren_tl_x(const ren_tl *t, uint64_t ns)
{
	/* signed in a double: a window can span more than 2^63 ns of a hostile trace */
	return t->x0 + ana_rel_ns(ns, t->t0) * t->px_per_ns;
}

/* format a duration for tooltips: "12.3 ms" */
void ren_tl_fmt_dur(char *buf, size_t len, double ns)
{
	if (ns >= (double)GT_NS_PER_SEC)
		snprintf(buf, len, "%.3g s", ns / (double)GT_NS_PER_SEC);
	else if (ns >= (double)GT_NS_PER_MS)
		snprintf(buf, len, "%.3g ms", ns / (double)GT_NS_PER_MS);
	else if (ns >= (double)GT_NS_PER_US)
		snprintf(buf, len, "%.3g us", ns / (double)GT_NS_PER_US);
	else
		snprintf(buf, len, "%.0f ns", ns);
}

/* seconds from the trace start, for tooltips */
double ren_tl_rel_s(const ren_tl *t, uint64_t ns)
{
	return ana_rel_s(ns, ana_model_origin(t->m));
}

/* A data span clipped to the window; a text label inside when it fits. Spans narrower than
 * half a pixel are drawn half a pixel wide so they stay visible. */
ren_item *ren_tl_span(ren_tl *t, uint64_t a, uint64_t b, double y, double h, uint32_t fill,
                      const char *label, const char *tip)
{
	if (b < t->t0 || a > t->t1)
		return NULL;
	if (a < t->t0)
		a = t->t0;
	if (b > t->t1)
		b = t->t1;
	double x = ren_tl_x(t, a), w = ren_tl_x(t, b) - x;
	if (w < 0.5)
		w = 0.5;
	size_t idx = ren_scene_count(t->sc);
	ren_item *it = ren_rect(t->sc, x, y, w, h, fill, tip);
	if (!it) {
		t->oom = 1;
		return NULL;
	}
	it->flags |= REN_F_DATA;
	if (label && h >= FS - 2) {
		const char *l = ren_fit_label(t->sc, label, strlen(label), w - 4, h >= FS + 2 ? FS : h - 1);
		if (l) {
			ren_item *tt = ren_text(t->sc, x + 2, y + h / 2 + (h >= FS + 2 ? FS : h - 1) * 0.36, l,
			                        h >= FS + 2 ? FS : h - 1, REN_ANCHOR_START, 0x111111);
			if (!tt)
				t->oom = 1;
			else
				tt->flags |= REN_F_DATA;
		}
	}
	return ren_scene_at(t->sc, idx); /* the label may have moved the items */
}

char *ren_tl_tipf(ren_tl *t, const char *fmt, ...)
{
	char buf[4096]; /* a templated kernel name can take 1-2 KB: the figures after it must fit */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char *s = ren_scene_strdup(t->sc, buf);
	if (!s)
		t->oom = 1;
	return s;
}

void ren_tl_row_label(ren_tl *t, double y, double h, const char *text, const char *tip, int bold,
                      uint32_t color)
{
	const char *l = ren_fit_label(t->sc, text, strlen(text), LABEL_W - 14, FS);
	if (!l)
		return;
	ren_item *it = ren_text(t->sc, 8, y + h / 2 + FS * 0.36, l, FS, REN_ANCHOR_START, color);
	if (!it) {
		t->oom = 1;
		return;
	}
	if (bold)
		it->flags |= REN_F_BOLD;
	if (tip) {
		/* invisible but hoverable: SVG needs a fill for pointer events */
		ren_item *r = ren_rect(t->sc, 4, y, LABEL_W - 8, h, 0xffffff, tip);
		if (!r)
			t->oom = 1;
		else
			r->alpha = 0;
	}
}

void ren_tl_stripe(ren_tl *t, double y, double h, int odd)
{
	if (!odd)
		return;
	/* translucent, so that the grid drawn before the rows shows through */
	ren_item *it = ren_rect(t->sc, 0, y, ren_scene_width(t->sc), h, 0x505020, NULL);
	if (!it)
		t->oom = 1;
	else
		it->alpha = 14;
}

void ren_tl_header(ren_tl *t, const char *text)
{
	double y = t->y;
	ren_line(t->sc, 0, y + 0.5, ren_scene_width(t->sc), y + 0.5, 0x999999, 0.8);
	ren_tl_row_label(t, y, ROW_HEADER, text, NULL, 1, 0x333333);
	t->y += ROW_HEADER;
}

/* ---- CPU threads ---- */

typedef struct thr_row {
	uint32_t idx;              /* into m->threads */
	uint64_t busy;             /* sampled ns in the window */
} thr_row;

static int cmp_busy(const void *pa, const void *pb)
{
	const thr_row *a = pa, *b = pb;
	if (a->busy != b->busy)
		return a->busy > b->busy ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static const char *leaf_name(const ana_model *m, uint32_t stack_id)
{
	if (stack_id >= m->stacks.n || m->stacks.v[stack_id].n == 0)
		return NULL;
	const ana_stack *s = &m->stacks.v[stack_id];
	uint32_t f = s->frames[s->n - 1];
	return f < m->frames.n ? m->frames.v[f].name : NULL;
}

/* on-CPU samples of one thread, merged into spans of one class */
static void draw_samples(ren_tl *t, const ana_sample *const *v, size_t n, double y)
{
	const ana_model *m = t->m;
	double min_gap_ns = 1.0 / t->px_per_ns; /* one pixel */
	for (size_t i = 0; i < n;) {
		const ana_sample *s = v[i];
		uint64_t w = s->weight_ns ? s->weight_ns : 10000000;
		uint64_t a = s->time_ns > w ? s->time_ns - w : 0, b = s->time_ns;
		size_t j = i + 1, cnt = 1;
		uint64_t weight = w;
		/* the most frequent leaf, kept approximately with a few counters */
		const char *cand[4] = {leaf_name(m, s->stack_id)};
		size_t ccount[4] = {1};
		while (j < n && v[j]->cls == s->cls) {
			uint64_t wj = v[j]->weight_ns ? v[j]->weight_ns : w;
			uint64_t aj = v[j]->time_ns > wj ? v[j]->time_ns - wj : 0;
			double gap = (double)aj - (double)b;
			if (gap > 0.5 * (double)wj && gap > min_gap_ns)
				break;
			b = v[j]->time_ns;
			weight += wj;
			cnt++;
			const char *ln = leaf_name(m, v[j]->stack_id);
			int k, placed = 0;
			for (k = 0; k < 4; k++)
				if (cand[k] == ln) {
					ccount[k]++;
					placed = 1;
					break;
				}
			for (k = 0; !placed && k < 4; k++)
				if (!ccount[k]) {
					cand[k] = ln;
					ccount[k] = 1;
					placed = 1;
				}
			for (k = 0; !placed && k < 4; k++)
				ccount[k]--;
			j++;
		}
		int best = 0;
		for (int k = 1; k < 4; k++)
			if (ccount[k] > ccount[best])
				best = k;
		char d1[32];
		ren_tl_fmt_dur(d1, sizeof(d1), (double)weight);
		char *tip = ren_tl_tipf(t, "%s: %zu sample%s (%s)\n%.3f - %.3f s%s%s", ana_class_name(s->cls), cnt,
		                 cnt == 1 ? "" : "s", d1, ren_tl_rel_s(t, a), ren_tl_rel_s(t, b),
		                 cand[best] ? "\ntop: " : "", cand[best] ? cand[best] : "");
		ren_tl_span(t, a, b, y + 4, 13, ren_class_color(s->cls), NULL, tip);
		i = j;
	}
}

static int cmp_switch_time(const void *pa, const void *pb)
{
	const gtt_switch *a = *(const gtt_switch *const *)pa, *b = *(const gtt_switch *const *)pb;
	return a->time_ns < b->time_ns ? -1 : a->time_ns > b->time_ns;
}

/* off-CPU gaps from switch records: OUT .. next IN; gaps shorter than a pixel apart merge */
static void draw_offcpu(ren_tl *t, const gtt_switch *const *v, size_t n, double y)
{
	uint64_t out_t = 0, gs = 0, ge = 0, total = 0;
	int out = 0;
	size_t merged = 0;
	double px_ns = 1.0 / t->px_per_ns;
	for (size_t i = 0; i <= n; i++) {
		int flush = i == n;
		if (!flush) {
			const gtt_switch *s = v[i];
			if (s->kind != GTT_SWITCH_IN) {
				out = 1;
				out_t = s->time_ns;
				continue;
			}
			if (!out)
				continue;
			out = 0;
			if (ana_swcover_gap(t->m, s->pid, out_t, s->time_ns))
				continue; /* switches were not recorded in between: what it did there is unknown */
			if (merged && (double)out_t - (double)ge < px_ns) {
				ge = s->time_ns;
				total += s->time_ns - out_t;
				merged++;
				continue;
			}
			flush = 1;
		}
		if (merged && (double)(ge - gs) * t->px_per_ns >= 1) {
			char d[32], d2[32];
			ren_tl_fmt_dur(d, sizeof(d), (double)total);
			ren_tl_fmt_dur(d2, sizeof(d2), (double)(ge - gs));
			char *tip = merged == 1
				? ren_tl_tipf(t, "off-CPU %s\n%.3f - %.3f s", d, ren_tl_rel_s(t, gs), ren_tl_rel_s(t, ge))
				: ren_tl_tipf(t, "off-CPU %s in %zu gaps over %s\n%.3f - %.3f s", d, merged, d2,
				       ren_tl_rel_s(t, gs), ren_tl_rel_s(t, ge));
			ren_tl_span(t, gs, ge, y + 9.5, 3, C_OFFCPU, NULL, tip);
		}
		merged = 0;
		if (i < n) {
			gs = out_t;
			ge = v[i]->time_ns;
			total = ge - gs;
			merged = 1;
		}
	}
}

/* What each thread row draws, grouped once so that a row costs its own records only (a trace
 * can hold 100 000 threads): samples (time order) and switches per thread index, CUDA API
 * calls and NVTX ranges per thread index (model order), GIL records per process. */
typedef struct tl_lists {
	size_t *first, *wfirst, *afirst, *nfirst;  /* per thread: start in sv, wv, av, nv; nt + 1 each */
	const ana_sample **sv;
	const gtt_switch **wv;
	size_t *av, *nv;      /* indices into m->apis, m->nvtx */
	size_t *gv;           /* indices into m->gil by (pid, time) */
	uint64_t *busy;       /* sampled ns in the window, per thread */
} tl_lists;

static void lists_free(tl_lists *L)
{
	free(L->first);
	free(L->wfirst);
	free(L->afirst);
	free(L->nfirst);
	free(L->sv);
	free(L->wv);
	free(L->av);
	free(L->nv);
	free(L->gv);
	free(L->busy);
}

/* Counting sort of n records into per-thread lists: idx[i] is record i's thread (SIZE_MAX for
 * none); first gets the list starts, out the record numbers, in record order. */
static int group_by_thread(const size_t *idx, size_t n, size_t nt, size_t **first, size_t **out)
{
	*first = calloc(nt + 1, sizeof(**first));
	*out = malloc((n ? n : 1) * sizeof(**out));
	size_t *fill = calloc(nt ? nt : 1, sizeof(*fill));
	if (!*first || !*out || !fill) {
		free(fill);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (idx[i] != SIZE_MAX)
			(*first)[idx[i] + 1]++;
	for (size_t i = 0; i < nt; i++)
		(*first)[i + 1] += (*first)[i];
	for (size_t i = 0; i < n; i++)
		if (idx[i] != SIZE_MAX)
			(*out)[(*first)[idx[i]] + fill[idx[i]]++] = i;
	free(fill);
	return 0;
}

static size_t thread_index(const ana_model *m, uint32_t pid, uint32_t tid)
{
	const ana_thread *th = ana_thread_find(m, pid, tid);
	return th ? (size_t)(th - m->threads.v) : SIZE_MAX;
}

static const ana_model *g_gil_model; /* for cmp_gil_pid (qsort has no context argument) */

static int cmp_gil_pid(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const gtt_gil *x = &g_gil_model->gil.v[a], *y = &g_gil_model->gil.v[b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return a < b ? -1 : a > b; /* the model keeps GIL records in time order */
}

static int lists_build(ren_tl *t, tl_lists *L)
{
	const ana_model *m = t->m;
	size_t nt = m->threads.n, nmax = m->samples.n;
	size_t *idx = NULL, *tmp = NULL;
	int rc = -1;
	memset(L, 0, sizeof(*L));
	if (m->switches.n > nmax)
		nmax = m->switches.n;
	if (m->apis.n > nmax)
		nmax = m->apis.n;
	if (m->nvtx.n > nmax)
		nmax = m->nvtx.n;
	idx = malloc((nmax ? nmax : 1) * sizeof(*idx));
	L->busy = calloc(nt ? nt : 1, sizeof(*L->busy));
	L->sv = malloc((m->samples.n ? m->samples.n : 1) * sizeof(*L->sv));
	L->wv = malloc((m->switches.n ? m->switches.n : 1) * sizeof(*L->wv));
	L->gv = malloc((m->gil.n ? m->gil.n : 1) * sizeof(*L->gv));
	if (!idx || !L->busy || !L->sv || !L->wv || !L->gv)
		goto out;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		int in = s->thread_idx < nt && s->time_ns >= t->t0 && s->time_ns <= t->t1;
		idx[i] = in ? s->thread_idx : SIZE_MAX;
		if (in)
			L->busy[s->thread_idx] = ana_sat_add(L->busy[s->thread_idx], s->weight_ns ? s->weight_ns : 1);
	}
	if (group_by_thread(idx, m->samples.n, nt, &L->first, &tmp) < 0)
		goto out;
	for (size_t i = 0; i < L->first[nt]; i++)
		L->sv[i] = &m->samples.v[tmp[i]];
	free(tmp);
	tmp = NULL;
	for (size_t i = 0; i < m->switches.n; i++)
		idx[i] = thread_index(m, m->switches.v[i].pid, m->switches.v[i].tid);
	if (group_by_thread(idx, m->switches.n, nt, &L->wfirst, &tmp) < 0)
		goto out;
	for (size_t i = 0; i < L->wfirst[nt]; i++)
		L->wv[i] = &m->switches.v[tmp[i]];
	for (size_t i = 0; i < m->apis.n; i++)
		idx[i] = thread_index(m, m->apis.v[i].pid, m->apis.v[i].tid);
	if (group_by_thread(idx, m->apis.n, nt, &L->afirst, &L->av) < 0)
		goto out;
	for (size_t i = 0; i < m->nvtx.n; i++)
		idx[i] = thread_index(m, m->nvtx.v[i].pid, m->nvtx.v[i].tid);
	if (group_by_thread(idx, m->nvtx.n, nt, &L->nfirst, &L->nv) < 0)
		goto out;
	for (size_t i = 0; i < m->gil.n; i++)
		L->gv[i] = i;
	g_gil_model = m;
	if (m->gil.n > 1)
		qsort(L->gv, m->gil.n, sizeof(*L->gv), cmp_gil_pid);
	rc = 0;
out:
	free(idx);
	free(tmp);
	return rc;
}

/* GIL held by tid: a dark bar under the samples (the records of its process only) */
static void draw_gil(ren_tl *t, const tl_lists *L, uint32_t pid, uint32_t tid, double y)
{
	const ana_model *m = t->m;
	size_t lo = 0, hi = m->gil.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->gil.v[L->gv[mid]].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t hs = 0;
	int holding = 0;
	for (size_t i = lo;; i++) {
		const gtt_gil *g = i < m->gil.n && m->gil.v[L->gv[i]].pid == pid ? &m->gil.v[L->gv[i]] : NULL;
		int now = g && g->holder_tid == tid && g->locked;
		uint64_t ts = g ? g->time_ns : t->t1 > hs ? t->t1 : hs;
		if (holding && !now && !ren_tl_merge(t, hs, ts, y + 18, 3, C_GIL, "GIL hold", NULL)) {
			char d[32];
			ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(hs, ts));
			ren_tl_span(t, hs, ts, y + 18, 3, C_GIL, NULL,
			     ren_tl_tipf(t, "holds the GIL %s\n%.3f - %.3f s", d, ren_tl_rel_s(t, hs), ren_tl_rel_s(t, ts)));
		}
		if (!g)
			break;
		if (now && !holding)
			hs = ts;
		holding = now;
	}
}

static void draw_apis(ren_tl *t, const size_t *v, size_t n, double y)
{
	const ana_model *m = t->m;
	for (size_t i = 0; i < n; i++) {
		const gtt_cuda_api *a = &m->apis.v[v[i]];
		if (a->end_ns < t->t0 || a->start_ns > t->t1)
			continue;
		const char *name = ana_string_get(m, a->pid, a->name_id);
		if (ren_tl_merge(t, a->start_ns, a->end_ns, y + 22, 4, C_API, "API call", name))
			continue;
		char d[32];
		ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(a->start_ns, a->end_ns));
		/* the call's own launch stack, when the agent took one; never a nearby sample's */
		char stack[2048] = "";
		const ana_callstack *cs = m->callstacks.n ? ana_callstack_find(m, a->pid, a->correlation) : NULL;
		if (cs) {
			stack[0] = '\n';
			ana_launch_stack_text(m, cs, 12, stack + 1, sizeof(stack) - 1);
		} else if (m->callstacks.n) {
			snprintf(stack, sizeof(stack), "\nno launch stack captured for this call");
		}
		ren_tl_span(t, a->start_ns, a->end_ns, y + 22, 4, C_API, NULL,
		     ren_tl_tipf(t, "%s %s\nCUDA %s API, status %d, at %.6f s%s", name, d,
		          a->domain == GTT_API_DRIVER ? "driver" : "runtime", a->status,
		          ren_tl_rel_s(t, a->start_ns), stack));
	}
}

static uint32_t nvtx_color(const gtt_nvtx *n, const char *name)
{
	if (n->color & 0xffffff)
		return ren_mix(n->color & 0xffffff, 0xffffff, 0.35);
	uint32_t h = ren_hash(name, strlen(name));
	static const uint32_t pastel[] = {0xa6cee3, 0xb2df8a, 0xfdbf6f, 0xcab2d6, 0xfb9a99, 0xffff99};
	return pastel[h % 6];
}

/* NVTX ranges of one thread (v[0..n) into m->nvtx): a lane per nesting depth, under its row */
static void draw_nvtx(ren_tl *t, const size_t *v, size_t n, const char *tname)
{
	const ana_model *m = t->m;
	uint32_t maxd = 0;
	size_t in = 0;
	for (size_t i = 0; i < n; i++) {
		const gtt_nvtx *r = &m->nvtx.v[v[i]];
		if (r->end_ns >= t->t0 && r->start_ns <= t->t1) {
			in++;
			if (r->depth > maxd)
				maxd = r->depth;
		}
	}
	if (!in)
		return;
	if (maxd > 7)
		maxd = 7;
	double h = ROW_NVTX * (maxd + 1) + 2;
	ren_tl_stripe(t, t->y, h, 0);
	char lbl[64];
	snprintf(lbl, sizeof(lbl), "  NVTX %s", tname);
	ren_tl_row_label(t, t->y, h, lbl, NULL, 0, 0x555555);
	for (size_t i = 0; i < n; i++) {
		const gtt_nvtx *r = &m->nvtx.v[v[i]];
		if (r->depth > maxd)
			continue;
		const char *name = ana_string_get(m, r->pid, r->name_id);
		if (ren_tl_merge(t, r->start_ns, r->end_ns, t->y + 1 + r->depth * ROW_NVTX, ROW_NVTX - 1,
		                 nvtx_color(r, name), r->kind == GTT_NVTX_MARKER ? "NVTX marker" : "NVTX range", name))
			continue;
		char d[32];
		ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(r->start_ns, r->end_ns));
		char *tip = r->kind == GTT_NVTX_MARKER
			? ren_tl_tipf(t, "%s\nNVTX marker at %.6f s", name, ren_tl_rel_s(t, r->start_ns))
			: ren_tl_tipf(t, "%s\nNVTX range %s, %.6f - %.6f s", name, d, ren_tl_rel_s(t, r->start_ns),
			       ren_tl_rel_s(t, r->end_ns));
		ren_tl_span(t, r->start_ns, r->end_ns, t->y + 1 + r->depth * ROW_NVTX, ROW_NVTX - 1,
		     nvtx_color(r, name), name, tip);
	}
	t->y += h;
}

/* One thread's row: label with its figures, off-CPU gaps, samples, GIL, CUDA API calls, then
 * its NVTX lanes. */
static void draw_thread_row(ren_tl *t, const tl_lists *L, size_t i, const char *name, int odd)
{
	const ana_model *m = t->m;
	const ana_thread *th = &m->threads.v[i];
	ren_tl_stripe(t, t->y, ROW_THREAD, odd);
	/* the label's tooltip carries the thread's numbers */
	double win_ns = (double)(t->t1 - t->t0);
	uint64_t cls[ANA_CLASS_COUNT] = {0}, busy = L->busy[i];
	for (size_t k = L->first[i]; k < L->first[i + 1]; k++)
		cls[L->sv[k]->cls] = ana_sat_add(cls[L->sv[k]->cls], L->sv[k]->weight_ns);
	char cbuf[400];
	size_t o = 0;
	for (int c = 0; c < ANA_CLASS_COUNT; c++)
		if (cls[c] && busy)
			o += (size_t)snprintf(cbuf + o, sizeof(cbuf) - o, "\n%s %.1f%%", ana_class_name(c),
			                      100.0 * (double)cls[c] / (double)busy);
	cbuf[o] = 0;
	char busy_s[32];
	ren_tl_fmt_dur(busy_s, sizeof(busy_s), (double)busy);
	ren_tl_row_label(t, t->y, ROW_THREAD, name,
	          ren_tl_tipf(t, "%s (pid %u)\nsampled on-CPU %s = %.1f%% of the window, %zu samples%s", name,
	               th->pid, busy_s, win_ns > 0 ? 100.0 * (double)busy / win_ns : 0,
	               L->first[i + 1] - L->first[i], cbuf),
	          0, 0);
	size_t nw = L->wfirst[i + 1] - L->wfirst[i];
	if (nw > 1)
		qsort(L->wv + L->wfirst[i], nw, sizeof(*L->wv), cmp_switch_time);
	draw_offcpu(t, L->wv + L->wfirst[i], nw, t->y);
	draw_samples(t, L->sv + L->first[i], L->first[i + 1] - L->first[i], t->y);
	draw_gil(t, L, th->pid, th->tid, t->y);
	draw_apis(t, L->av + L->afirst[i], L->afirst[i + 1] - L->afirst[i], t->y);
	t->y += ROW_THREAD;
	draw_nvtx(t, L->nv + L->nfirst[i], L->nfirst[i + 1] - L->nfirst[i], th->name ? th->name : "?");
}

/* The thread rows (grouped: only_pid's), busiest first, under a "CPU threads" header (not when
 * grouped). The number of rows drawn, or REN_ENOMEM. */
static int draw_threads(ren_tl *t, const tl_lists *L, const regex_t *re, char *why, size_t whylen)
{
	const ana_model *m = t->m;
	size_t nt = m->threads.n;
	thr_row *rows = calloc(nt ? nt : 1, sizeof(*rows));
	size_t n = 0;
	if (!rows) {
		snprintf(why, whylen, "out of memory");
		return REN_ENOMEM;
	}
	for (size_t i = 0; i < nt; i++)
		if (!t->grouped || m->threads.v[i].pid == t->only_pid)
			rows[n++] = (thr_row){(uint32_t)i, L->busy[i]};
	qsort(rows, n, sizeof(*rows), cmp_busy);
	size_t shown = 0, hidden = 0;
	uint64_t hidden_busy = 0, all_busy = 0;
	for (size_t r = 0; r < n; r++)
		all_busy = ana_sat_add(all_busy, rows[r].busy);
	for (size_t r = 0; r < n; r++) {
		const ana_thread *th = &m->threads.v[rows[r].idx];
		size_t i = rows[r].idx;
		char name[300];
		snprintf(name, sizeof(name), "%s %u", th->name ? th->name : "?", th->tid);
		if (re && regexec(re, name, 0, NULL, 0) != 0)
			continue;
		int has_api = L->afirst[i + 1] > L->afirst[i], has_nvtx = L->nfirst[i + 1] > L->nfirst[i];
		if (!rows[r].busy && !has_api && !has_nvtx && L->wfirst[i + 1] == L->wfirst[i])
			continue;
		/* past the busiest, short-lived helpers (shell wrappers, ...) would bury the picture:
		 * without --threads, threads beyond REN_TL_MAX_ROWS, and threads never sampled when
		 * there are many, are summed up in one line */
		if (!re && !has_api && !has_nvtx &&
		    (shown >= REN_TL_MAX_ROWS || (!rows[r].busy && n > 8))) {
			hidden++;
			hidden_busy = ana_sat_add(hidden_busy, rows[r].busy);
			continue;
		}
		if (shown == 0 && !t->grouped)
			ren_tl_header(t, "CPU threads");
		shown++;
		draw_thread_row(t, L, i, name, shown % 2);
		if (t->oom) {
			snprintf(why, whylen, "out of memory");
			free(rows);
			return REN_ENOMEM;
		}
	}
	if (hidden) {
		char *note = ren_tl_tipf(t, "+ %zu more threads with %.1f%% of the sampled time (--threads "
		                            "REGEX picks them)", hidden,
		                         all_busy ? 100.0 * (double)hidden_busy / (double)all_busy : 0);
		if (note && !ren_text(t->sc, 8, t->y + 14, note, FS - 1, REN_ANCHOR_START, 0x666666))
			t->oom = 1;
		t->y += ROW_HEADER;
	}
	free(rows);
	return (int)shown;
}

/* A process group's header: the whole width (the label column would cut the command line). */
static void group_header(ren_tl *t, const char *text)
{
	double y = t->y;
	char *s = ren_tl_tipf(t, "%s", text);
	ren_item *it;
	ren_line(t->sc, 0, y + 0.5, ren_scene_width(t->sc), y + 0.5, 0x666666, 1.2);
	if (!s || !(it = ren_text(t->sc, 8, y + 14, s, FS, REN_ANCHOR_START, 0x222222)))
		t->oom = 1;
	else
		it->flags |= REN_F_BOLD;
	t->y += ROW_HEADER;
}

/* A job (several processes with rows): one group per process — its threads, then its GPU
 * streams and counters — ranked processes first by rank (docs/JOBS.md). 0 when the trace is
 * one process (the plain sections are drawn instead), else the thread rows drawn, or REN_E*. */
static int draw_grouped(ren_tl *t, const tl_lists *L, const regex_t *re, char *why, size_t whylen)
{
	const ana_model *m = t->m;
	ana_procs P;
	int shown = 0, n_with = 0, rc;
	size_t *order = NULL, n = 0;

	if (ana_procs_build(m, &P) < 0 || !(order = malloc((P.n ? P.n : 1) * sizeof(*order)))) {
		rc = REN_ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < P.n; i++) {
		const ana_proc *p = &P.v[i];
		if (p->n_samples || p->gpu_busy_ns || p->n_kernels || ((p->rank || p->role) && !p->inherited))
			order[n++] = i;
	}
	n_with = (int)n;
	if (n_with < 2) {
		rc = 0;
		goto out;
	}
	ana_procs_sort(&P, order, n);
	t->grouped = 1;
	for (size_t k = 0; k < n && !t->oom; k++) {
		const ana_proc *p = &P.v[order[k]];
		char label[96], head[300];
		ana_proc_label(p, label, sizeof(label));
		snprintf(head, sizeof(head), "pid %u%s%s%s%s  %.120s", p->pid, label[0] != '-' ? "  " : "",
		         label[0] != '-' ? label : "", p->host ? "  on " : "", p->host ? p->host : "", p->comm);
		t->only_pid = p->pid;
		group_header(t, head);
		if ((rc = draw_threads(t, L, re, why, whylen)) < 0)
			goto out;
		shown += rc;
		if (ren_tl_streams(t) < 0 || ren_tl_counters(t) < 0) {
			rc = REN_ENOMEM;
			snprintf(why, whylen, "out of memory");
			goto out;
		}
	}
	rc = shown ? shown : 1;
out:
	t->grouped = 0;
	free(order);
	ana_procs_free(&P);
	return rc;
}

/* Every row: a job's process groups, or the plain sections (threads, GPU streams, counters).
 * 0, or REN_E* with why said. */
static int draw_rows(ren_tl *t, const char *threads_re, char *why, size_t whylen)
{
	regex_t re;
	int have_re = 0, rc = REN_ENOMEM, shown, grouped;
	tl_lists L = {0};

	if (threads_re) {
		if (regcomp(&re, threads_re, REG_EXTENDED | REG_NOSUB) != 0) {
			snprintf(why, whylen, "bad --threads regular expression");
			return REN_EINVAL;
		}
		have_re = 1;
	}
	if (lists_build(t, &L) < 0)
		goto oom;
	shown = draw_grouped(t, &L, have_re ? &re : NULL, why, whylen);
	grouped = shown != 0;
	if (!grouped)
		shown = draw_threads(t, &L, have_re ? &re : NULL, why, whylen);
	if (shown < 0) {
		rc = shown;
		goto out;
	}
	if (threads_re && shown == 0 && t->m->threads.n) {
		snprintf(why, whylen, "no thread matches --threads '%s'", threads_re);
		rc = REN_EEMPTY;
		goto out;
	}
	if (!grouped && (ren_tl_streams(t) < 0 || ren_tl_counters(t) < 0))
		goto oom;
	rc = 0;
	goto out;
oom:
	snprintf(why, whylen, "out of memory");
	rc = REN_ENOMEM;
out:
	lists_free(&L);
	if (have_re)
		regfree(&re);
	return rc;
}

void ren_timeline_opts_init(ren_timeline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->width_px = 1400;
	o->max_spans = REN_TL_DEFAULT_MAX_SPANS;
}

ren_scene *ren_timeline_layout(const ana_model *m, const ren_timeline_opts *o, int *err, char *why,
                               size_t whylen)
{
	ren_tl t = {.m = m};
	why[0] = 0;
	*err = REN_ENOMEM;
	/* a model loaded as a window (--from/--to) covers [start_ns, end_ns] of it; o's window, if
	 * any, counts from the recording's start (ana_model_origin) like the loader's */
	uint64_t start = m->start_ns, end = m->end_ns > m->start_ns ? m->end_ns : ana_sat_add(m->start_ns, 1);
	uint64_t origin = ana_model_origin(m);
	t.t0 = o->has_from && o->from_ns > 0 ? ana_sat_add(origin, (uint64_t)o->from_ns) : start;
	t.t1 = o->has_to && o->to_ns > 0 ? ana_sat_add(origin, (uint64_t)o->to_ns) : end;
	if (t.t0 < start)
		t.t0 = start;
	if (t.t1 > end && !o->has_to)
		t.t1 = end;
	if (t.t0 >= t.t1 || (o->has_from && t.t0 > end)) {
		snprintf(why, whylen, "the window %.3f-%.3f s is outside the trace (%.3f-%.3f s)",
		         ana_rel_s(t.t0, origin), ana_rel_s(t.t1, origin), ana_rel_s(start, origin), ana_rel_s(end, origin));
		*err = REN_EEMPTY;
		return NULL;
	}
	/* the label column and a plot of at least 150 px (a narrower width is widened) */
	double W = o->width_px >= REN_TL_MIN_WIDTH && isfinite(o->width_px) ? o->width_px : REN_TL_MIN_WIDTH;
	t.x0 = LABEL_W;
	t.x1 = W - PAD_R;
	t.px_per_ns = (t.x1 - t.x0) / (double)(t.t1 - t.t0);
	uint64_t n_spans = ren_timeline_spans(m);
	t.merge = o->max_spans && n_spans > o->max_spans;
	t.sc = ren_scene_create(W, 100, REN_DOC_TIMELINE);
	if (!t.sc) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	/* background first: the height is known at the end */
	ren_item *bg = ren_rect(t.sc, 0, 0, W, 100, 0xfbfbf8, NULL);
	const char *cmd = ana_meta_get(m, "command");
	if (!cmd && m->processes.n)
		cmd = m->processes.v[0].comm;
	char *title = o->title ? ren_scene_strdup(t.sc, o->title)
	                       : ren_scene_printf(t.sc, "Timeline%s%s", cmd ? ": " : "", cmd ? cmd : "");
	char d_all[32], d_win[32];
	uint64_t rec_end = m->window.on && m->window.last_ns > end ? m->window.last_ns : end;
	ren_tl_fmt_dur(d_all, sizeof(d_all), (double)ana_span(origin, rec_end));
	ren_tl_fmt_dur(d_win, sizeof(d_win), (double)(t.t1 - t.t0));
	char *sub = ren_scene_printf(t.sc, "%s recorded, showing %.3f - %.3f s (%s); %zu samples, "
	                                   "%zu threads, %zu kernels%s",
	                             d_all, ren_tl_rel_s(&t, t.t0), ren_tl_rel_s(&t, t.t1), d_win, m->samples.n,
	                             m->threads.n, m->kernels.n,
	                             m->truncated ? "; trace cut off (analyzed up to the cut)" : "");
	if (!bg || !title || !sub)
		goto oom;
	ren_item *it = ren_text(t.sc, W / 2, 22, title, FS + 4, REN_ANCHOR_MIDDLE, 0);
	if (!it)
		goto oom;
	it->flags |= REN_F_BOLD;
	size_t sub_idx = ren_scene_count(t.sc);
	if (!ren_text(t.sc, W / 2, 40, sub, FS, REN_ANCHOR_MIDDLE, 0x555555))
		goto oom;
	if (!(it = ren_text(t.sc, 10, 22, "Reset Zoom", FS, REN_ANCHOR_START, 0)))
		goto oom;
	it->id = "unzoom";
	it->flags |= REN_F_SVGONLY;
	if (!(it = ren_text(t.sc, W - 10, 22, "drag to zoom, click a span to zoom to it",
	                    FS - 1, REN_ANCHOR_END, 0x777777)))
		goto oom;
	it->flags |= REN_F_SVGONLY;

	ren_tl_legend le[REN_TL_LEGEND_MAX];
	size_t nl = ren_tl_legend_of(m, le);
	double y = ren_tl_draw_legend(&t, 62, le, nl);
	if (t.oom)
		goto oom;
	double y_axis = y + 16;
	t.y = y_axis + 4;
	double rows_top = t.y;
	size_t g0 = ren_scene_count(t.sc);
	ren_tl_draw_axis(&t, y_axis, rows_top);
	size_t g1 = ren_scene_count(t.sc);
	ren_tl_draw_lag(&t, rows_top, rows_top + 1);
	ren_tl_draw_noswitch(&t, rows_top, rows_top + 1);
	size_t l1 = ren_scene_count(t.sc);
	if (t.oom)
		goto oom;

	if ((*err = draw_rows(&t, o->threads_re, why, whylen)) < 0)
		goto fail;
	ren_tl_merge_flush(&t);
	if (t.oom)
		goto oom;
	if (t.merge) {
		/* say so where the reader looks first: the line under the title */
		char *s2 = ren_scene_printf(t.sc, "%s; %" PRIu64 " spans under a pixel merged into %" PRIu64, sub,
		                            t.n_merged_spans, t.n_merged_rects);
		if (!s2)
			goto oom;
		ren_scene_at(t.sc, sub_idx)->text = s2;
		char num[32];
		snprintf(num, sizeof(num), "%" PRIu64, t.n_merged_spans);
		if (ren_scene_set(t.sc, "merged_spans", num) < 0)
			goto oom;
	}
	if (t.y == rows_top) {
		snprintf(why, whylen, "nothing to draw in %.3f-%.3f s", ren_tl_rel_s(&t, t.t0), ren_tl_rel_s(&t, t.t1));
		*err = REN_EEMPTY;
		goto fail;
	}
	double rows_end = t.y;
	for (size_t i = g0; i < g1; i++) {
		ren_item *gi = ren_scene_at(t.sc, i);
		if (gi->kind == REN_LINE && gi->stroke == C_GRID)
			gi->h = rows_end - gi->y;
	}
	for (size_t i = g1; i < l1; i++) {
		ren_item *li = ren_scene_at(t.sc, i);
		if (li->kind == REN_RECT)
			li->h = rows_end - rows_top;
	}
	double H = rows_end + 30;
	/* the details line (SVG only) */
	if (!(it = ren_text(t.sc, 10, H - 10, " ", FS, REN_ANCHOR_START, 0)))
		goto oom;
	it->id = "details";
	it->flags |= REN_F_SVGONLY;
	ren_scene_set_height(t.sc, H);
	ren_scene_at(t.sc, 0)->h = H; /* the background */

	char num[64];
	snprintf(num, sizeof(num), "%g %g %g %g", t.x0, rows_top, t.x1 - t.x0, rows_end - rows_top);
	if (ren_scene_set(t.sc, "plot", num) < 0)
		goto oom;
	static const char *const keys[] = {"plotx0", "plotx1", "ploty0", "ploty1", "axisy", "t0",
	                                   "t1", "fontpx"};
	double vals[] = {t.x0, t.x1, rows_top, rows_end, y_axis, ana_rel_ns(t.t0, start),
	                 ana_rel_ns(t.t1, start), FS};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(num, sizeof(num), "%.17g", vals[i]);
		if (ren_scene_set(t.sc, keys[i], num) < 0)
			goto oom;
	}
	if (ren_scene_set(t.sc, "title", title) < 0)
		goto oom;
	ren_tl_merge_free(&t);
	*err = 0;
	return t.sc;
oom:
	snprintf(why, whylen, "out of memory");
	*err = REN_ENOMEM;
fail:
	ren_tl_merge_free(&t);
	ren_scene_destroy(t.sc);
	return NULL;
}
