/* timeline_gpu.c — the timeline's GPU stream rows (kernels, copies, memsets, syncs) and
 * counter rows (a step function binned per pixel column). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "counter_sum.h"
#include "gt_util.h"
#include "demangle.h"
#include "gtt.h"
#include "timeline_priv.h"

/* ---- GPU streams ---- */

/* The work on GPU streams grouped by stream once (a trace can hold many streams and millions of
 * kernels): one entry per kernel, copy or memset, sorted by (pid, device, stream), then kind and
 * model order, which is the order a row draws them in. */
typedef struct work_ref { uint32_t pid, device, stream, type; size_t idx; } work_ref;
enum { W_KERNEL = 0, W_COPY = 1, W_MEMSET = 2 };

static int cmp_work(const void *pa, const void *pb)
{
	const work_ref *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Syncs name a stream but no device: sorted by (pid, stream, model order), found per row. */
static int cmp_sync(const void *pa, const void *pb)
{
	const work_ref *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* a kernel's display name (demangled C++, or plain C) up to its parameter list */
static const char *short_kernel(ren_tl *t, const char *name)
{
	size_t len = ana_name_without_params(name);
	if (name[len] == 0)
		return name;
	char *s = ren_scene_strndup(t->sc, name, len);
	if (!s)
		t->oom = 1;
	return s ? s : name;
}

static const char *copy_kind(uint32_t k)
{
	switch (k) {
	case GTT_MEMCPY_HTOD: return "HtoD";
	case GTT_MEMCPY_DTOH: return "DtoH";
	case GTT_MEMCPY_DTOD: return "DtoD";
	case GTT_MEMCPY_HTOH: return "HtoH";
	case GTT_MEMCPY_PTOP: return "PtoP";
	}
	return "copy";
}

static uint32_t copy_color(uint32_t k)
{
	return k == GTT_MEMCPY_HTOD ? C_HTOD : k == GTT_MEMCPY_DTOH ? C_DTOH
	       : k == GTT_MEMCPY_DTOD ? C_DTOD : C_COPY;
}

static void fmt_bytes(char *buf, size_t len, double b)
{
	if (b >= 1 << 30)
		snprintf(buf, len, "%.2f GiB", b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, len, "%.2f MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, len, "%.1f KiB", b / (1 << 10));
	else
		snprintf(buf, len, "%.0f B", b);
}

static void draw_kernel(ren_tl *t, const gtt_cuda_kernel *kr, double y)
{
	const char *name = ana_kernel_name(t->m, kr->pid, kr->name_id);
	/* coloured by the name without its parameters (the label's) */
	uint32_t h = ren_hash(name, ana_name_without_params(name));
	uint32_t c = ren_mix(ren_mix(0x17becf, 0x1f77b4, (h & 0xff) / 255.0), 0xffffff, 0.25);
	/* merged, in the legend's kernel colour: one colour per name would split the vote for the
	 * column's colour among the kernels (timeline_merge.c) */
	if (ren_tl_merge(t, kr->start_ns, kr->end_ns, y + 3, ROW_STREAM - 6, 0x5fbcd3, "kernel", name))
		return;
	const char *sn = short_kernel(t, name);
	char d[32];
	ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(kr->start_ns, kr->end_ns));
	ren_tl_span(t, kr->start_ns, kr->end_ns, y + 3, ROW_STREAM - 6, c, sn,
	     ren_tl_tipf(t, "%.2500s\nkernel %s, grid %ux%ux%u block %ux%ux%u, %u regs, %u B shared\n"
	             "%.6f - %.6f s", name, d, kr->grid[0], kr->grid[1], kr->grid[2],
	          kr->block[0], kr->block[1], kr->block[2], kr->registers, kr->shared_bytes,
	          ren_tl_rel_s(t, kr->start_ns), ren_tl_rel_s(t, kr->end_ns)));
}

static void draw_copy(ren_tl *t, const gtt_cuda_memcpy *c, double y)
{
	if (ren_tl_merge(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, copy_color(c->kind), "copy",
	                 copy_kind(c->kind)))
		return;
	char d[32], b[32];
	double dur = (double)ana_span(c->start_ns, c->end_ns);
	ren_tl_fmt_dur(d, sizeof(d), dur);
	fmt_bytes(b, sizeof(b), (double)c->bytes);
	ren_tl_span(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, copy_color(c->kind),
	     copy_kind(c->kind),
	     ren_tl_tipf(t, "%s\nmemcpy %s %s, %.2f GB/s%s, at %.6f s", copy_kind(c->kind), b, d,
	          dur > 0 ? (double)c->bytes / dur : 0, c->flags & 1 ? ", async" : "",
	          ren_tl_rel_s(t, c->start_ns)));
}

static void draw_memset(ren_tl *t, const gtt_cuda_memset *c, double y)
{
	if (ren_tl_merge(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, C_MEMSET, "memset", NULL))
		return;
	char d[32], b[32];
	ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(c->start_ns, c->end_ns));
	fmt_bytes(b, sizeof(b), (double)c->bytes);
	ren_tl_span(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, C_MEMSET, "memset",
	     ren_tl_tipf(t, "memset\n%s %s, at %.6f s", b, d, ren_tl_rel_s(t, c->start_ns)));
}

/* The syncs of (pid, stream): sv[0..n) sorted by cmp_sync. */
static void draw_syncs(ren_tl *t, const work_ref *sv, size_t n, uint32_t pid, uint32_t stream, double y)
{
	size_t lo = 0, hi = n;
	work_ref key = {.pid = pid, .stream = stream};
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_sync(&sv[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && sv[i].pid == pid && sv[i].stream == stream; i++) {
		const gtt_cuda_sync *c = &t->m->syncs.v[sv[i].idx];
		if (ren_tl_merge(t, c->start_ns, c->end_ns, y + ROW_STREAM - 3, 3, C_SYNC, "synchronize", NULL))
			continue;
		char d[32];
		ren_tl_fmt_dur(d, sizeof(d), (double)ana_span(c->start_ns, c->end_ns));
		ren_tl_span(t, c->start_ns, c->end_ns, y + ROW_STREAM - 3, 3, C_SYNC, NULL,
		     ren_tl_tipf(t, "synchronize %s\n%.6f s", d, ren_tl_rel_s(t, c->start_ns)));
	}
}

/* A record of pid belongs on the rows being drawn (all of them, or the process's when grouped). */
static int mine(const ren_tl *t, uint32_t pid)
{
	return !t->grouped || pid == t->only_pid;
}

int ren_tl_streams(ren_tl *t)
{
	const ana_model *m = t->m;
	size_t nw = m->kernels.n + m->memcpys.n + m->memsets.n, k = 0;
	if (!nw)
		return 0;
	work_ref *wv = malloc(nw * sizeof(*wv)), *sv = malloc((m->syncs.n ? m->syncs.n : 1) * sizeof(*sv));
	if (!wv || !sv)
		goto oom;
	for (size_t i = 0; i < m->kernels.n; i++)
		if (mine(t, m->kernels.v[i].pid))
			wv[k++] = (work_ref){m->kernels.v[i].pid, m->kernels.v[i].device, m->kernels.v[i].stream, W_KERNEL, i};
	for (size_t i = 0; i < m->memcpys.n; i++)
		if (mine(t, m->memcpys.v[i].pid))
			wv[k++] = (work_ref){m->memcpys.v[i].pid, m->memcpys.v[i].device, m->memcpys.v[i].stream, W_COPY, i};
	for (size_t i = 0; i < m->memsets.n; i++)
		if (mine(t, m->memsets.v[i].pid))
			wv[k++] = (work_ref){m->memsets.v[i].pid, m->memsets.v[i].device, m->memsets.v[i].stream, W_MEMSET, i};
	nw = k;
	qsort(wv, nw, sizeof(*wv), cmp_work);
	for (size_t i = 0; i < m->syncs.n; i++)
		sv[i] = (work_ref){.pid = m->syncs.v[i].pid, .stream = m->syncs.v[i].stream, .idx = i};
	if (m->syncs.n > 1)
		qsort(sv, m->syncs.n, sizeof(*sv), cmp_sync);
	if (!t->grouped)
		ren_tl_header(t, "GPU streams");
	for (size_t a = 0, b, row = 0; a < nw; a = b, row++) {
		const work_ref *key = &wv[a];
		double y = t->y;
		uint64_t busy = 0;
		size_t nk = 0;
		ren_tl_stripe(t, y, ROW_STREAM, (int)(row % 2));
		for (b = a; b < nw && wv[b].pid == key->pid && wv[b].device == key->device && wv[b].stream == key->stream;
		     b++) {
			if (wv[b].type == W_KERNEL) {
				const gtt_cuda_kernel *kr = &m->kernels.v[wv[b].idx];
				if (kr->end_ns >= t->t0 && kr->start_ns <= t->t1) {
					busy = ana_sat_add(busy, ana_span(kr->start_ns, kr->end_ns));
					nk++;
				}
				draw_kernel(t, kr, y);
			} else if (wv[b].type == W_COPY) {
				draw_copy(t, &m->memcpys.v[wv[b].idx], y);
			} else {
				draw_memset(t, &m->memsets.v[wv[b].idx], y);
			}
		}
		draw_syncs(t, sv, m->syncs.n, key->pid, key->stream, y);
		char name[96], busy_s[32];
		snprintf(name, sizeof(name), "GPU %u stream %u", key->device, key->stream);
		ren_tl_fmt_dur(busy_s, sizeof(busy_s), (double)busy);
		double win = (double)(t->t1 - t->t0);
		ren_tl_row_label(t, y, ROW_STREAM, name,
		          ren_tl_tipf(t, "%s (pid %u)\n%zu kernels, busy %s = %.1f%% of the window", name, key->pid,
		               nk, busy_s, win > 0 ? 100.0 * (double)busy / win : 0),
		          0, 0);
		t->y += ROW_STREAM;
		if (t->oom)
			goto oom;
	}
	free(wv);
	free(sv);
	return 0;
oom:
	free(wv);
	free(sv);
	return -1;
}

/* ---- counters ---- */

typedef struct counter_ref { uint32_t pid, name_id; size_t idx; } counter_ref;

static int cmp_counter(const void *pa, const void *pb)
{
	const counter_ref *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->name_id != b->name_id)
		return a->name_id < b->name_id ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The time at dns ns into the window, kept inside it (a double past 2^64 has no integer). */
static uint64_t window_at(const ren_tl *t, double dns)
{
	if (!(dns > 0))
		return t->t0;
	if (dns >= (double)(t->t1 - t->t0))
		return t->t1;
	return t->t0 + (uint64_t)dns;
}

/* One counter's step function (records v[0..n) in model order; each value holds until the next
 * one, a value that is not a finite number ends it) as its maximum per pixel column. */
static void counter_columns(ren_tl *t, const counter_ref *v, size_t n, double *vmax, int ncols, double *lo,
                            double *hi)
{
	const ana_model *m = t->m;
	double last = NAN;
	uint64_t last_t = 0;
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int k = 0; k < ncols; k++)
		vmax[k] = NAN;
	for (size_t i = 0; i <= n; i++) {
		const gtt_counter *c = i < n ? &m->counters.v[v[i].idx] : NULL;
		uint64_t now = c ? c->time_ns : t->t1;
		if (!isnan(last) && now >= t->t0 && last_t <= t->t1) {
			uint64_t a = last_t < t->t0 ? t->t0 : last_t, b = now > t->t1 ? t->t1 : now;
			int ka = (int)floor(ren_tl_x(t, a) - t->x0), kb = (int)floor(ren_tl_x(t, b) - t->x0);
			if (kb >= ncols)
				kb = ncols - 1;
			for (int k = ka < 0 ? 0 : ka; k <= kb; k++)
				if (isnan(vmax[k]) || last > vmax[k])
					vmax[k] = last;
			if (last < *lo)
				*lo = last;
			if (last > *hi)
				*hi = last;
		}
		if (!c)
			break;
		last = isfinite(c->value) ? c->value : NAN;
		last_t = c->time_ns;
	}
	if (isinf(*lo)) {
		*lo = 0;
		*hi = 0;
	}
}

/* A counter's summary over the whole trace (analyze/counter_sum.c), NULL when not found. */
static const ana_counter_sum *find_sum(const ana_counter_sum *v, size_t n, uint32_t pid, uint32_t name_id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid && v[i].name_id == name_id)
			return &v[i];
	return NULL;
}

/* A counter's row: its step function as bars, and its watermark (the records wm[0..n_wm) of
 * X@watermark, NULL when none) as a line on the same scale. */
static void draw_counter(ren_tl *t, const counter_ref *v, size_t n, const counter_ref *wm, size_t n_wm,
                         const ana_counter_sum *sum, double *vmax, double *wmax, int ncols, size_t row)
{
	const char *name = ana_string_get(t->m, v[0].pid, v[0].name_id);
	double lo, hi, wlo = 0, whi = 0;
	if (wm)
		counter_columns(t, wm, n_wm, wmax, ncols, &wlo, &whi);
	counter_columns(t, v, n, vmax, ncols, &lo, &hi);
	if (wm && whi > hi)
		hi = whi;
	if (wm && wlo < lo)
		lo = wlo;
	double y = t->y, h = ROW_COUNTER;
	ren_tl_stripe(t, y, h, (int)(row % 2));
	/* halves: hi - base can pass DBL_MAX for values near it */
	double base = lo > 0 ? 0 : lo, half_span = hi / 2 - base / 2 > 0 ? hi / 2 - base / 2 : 0.5;
	char lbl[200], below[200] = "";
	snprintf(lbl, sizeof(lbl), "%s", name);
	if (sum && sum->n_wm && sum->n && sum->last_ns > sum->first_ns)
		snprintf(below, sizeof(below), "\nat or below its watermark %.3f s, %.1f %% of its span (whole trace)",
		         gt_ns_to_s(sum->below_ns), 100.0 * (double)sum->below_ns / (double)(sum->last_ns - sum->first_ns));
	ren_tl_row_label(t, y, h - 14, lbl,
	          ren_tl_tipf(t, "counter %s (pid %u)\nmin %g, max %g in the window%s", name, v[0].pid, lo, hi, below),
	          0, 0);
	char *range = ren_tl_tipf(t, "0 .. %g", hi);
	if (range && !ren_text(t->sc, 8, y + h - 6, range, FS - 2, REN_ANCHOR_START, 0x777777))
		t->oom = 1;
	/* one bar per run of pixel columns with the same value */
	for (int k = 0; k < ncols;) {
		if (isnan(vmax[k])) {
			k++;
			continue;
		}
		int e = k + 1;
		while (e < ncols && vmax[e] == vmax[k])
			e++;
		double bh = (vmax[k] / 2 - base / 2) / half_span * (h - 8);
		if (!(bh >= 1))
			bh = 1;
		uint64_t a = window_at(t, (double)k / t->px_per_ns), b = window_at(t, (double)e / t->px_per_ns);
		ren_item *it = ren_tl_span(t, a, b, y + h - 4 - bh, bh, C_COUNTER, NULL,
		                           ren_tl_tipf(t, "%s = %g\n%.3f - %.3f s", name, vmax[k], ren_tl_rel_s(t, a),
		                                       ren_tl_rel_s(t, b)));
		if (it)
			it->alpha = 170;
		k = e;
	}
	/* the watermark: a line at its level, one segment per run of columns with the same value */
	for (int k = 0; wm && k < ncols;) {
		if (isnan(wmax[k])) {
			k++;
			continue;
		}
		int e = k + 1;
		while (e < ncols && wmax[e] == wmax[k])
			e++;
		double wy = (wmax[k] / 2 - base / 2) / half_span * (h - 8);
		uint64_t a = window_at(t, (double)k / t->px_per_ns), b = window_at(t, (double)e / t->px_per_ns);
		ren_tl_span(t, a, b, y + h - 4 - wy - 1, 2, C_WATERMARK, NULL,
		            ren_tl_tipf(t, "%s" ANA_WATERMARK_SUFFIX " = %g (the watermark of %s)\n%.3f - %.3f s%s", name,
		                        wmax[k], name, ren_tl_rel_s(t, a), ren_tl_rel_s(t, b), below));
		k = e;
	}
	t->y += h;
}

/* The group of rows [a, b) of v for one (pid, name id), with the name and its watermark group. */
typedef struct cgroup { size_t a, b; const char *name; size_t wm; int is_wm_of; } cgroup;
#define NO_GROUP ((size_t)-1)

int ren_tl_counters(ren_tl *t)
{
	const ana_model *m = t->m;
	size_t n = m->counters.n, ng = 0, n_sum = 0;
	if (!n)
		return 0;
	/* the layout keeps x1 - x0 >= 150 */
	int ncols = t->x1 - t->x0 >= 1 ? (int)ceil(t->x1 - t->x0) : 1;
	counter_ref *v = malloc(n * sizeof(*v));
	double *vmax = malloc((size_t)ncols * sizeof(*vmax)), *wmax = malloc((size_t)ncols * sizeof(*wmax));
	cgroup *g = malloc(n * sizeof(*g));
	ana_counter_sum *sums = NULL;
	if (!v || !vmax || !wmax || !g || ana_counters_summarize(m, &sums, &n_sum) < 0) {
		t->oom = 1;
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (mine(t, m->counters.v[i].pid))
			v[k++] = (counter_ref){m->counters.v[i].pid, m->counters.v[i].name_id, i};
	n = k;
	qsort(v, n, sizeof(*v), cmp_counter);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && v[b].pid == v[a].pid && v[b].name_id == v[a].name_id; b++)
			;
		g[ng++] = (cgroup){a, b, ana_string_get(m, v[a].pid, v[a].name_id), NO_GROUP, 0};
	}
	/* X@watermark is drawn on X's row when X has records, as a row of its own otherwise */
	for (size_t i = 0; i < ng; i++) {
		size_t len = ana_counter_watermark_of(g[i].name);
		if (!len)
			continue;
		for (size_t j = 0; j < ng; j++)
			if (v[g[j].a].pid == v[g[i].a].pid && strlen(g[j].name) == len &&
			    strncmp(g[j].name, g[i].name, len) == 0 && g[j].wm == NO_GROUP) {
				g[j].wm = i;
				g[i].is_wm_of = 1;
				break;
			}
	}
	if (!t->grouped)
		ren_tl_header(t, "Counters");
	for (size_t i = 0, row = 0; i < ng && !t->oom; i++) {
		if (g[i].is_wm_of)
			continue;
		const cgroup *w = g[i].wm == NO_GROUP ? NULL : &g[g[i].wm];
		draw_counter(t, v + g[i].a, g[i].b - g[i].a, w ? v + w->a : NULL, w ? w->b - w->a : 0,
		             find_sum(sums, n_sum, v[g[i].a].pid, v[g[i].a].name_id), vmax, wmax, ncols, row++);
	}
out:
	free(sums);
	free(g);
	free(wmax);
	free(vmax);
	free(v);
	return t->oom ? -1 : 0;
}
