/* timeline_merge.c — a timeline of a long recording has millions of CUDA, API, NVTX and GIL spans
 * (a launch-bound torch process makes ~57 000 CUDA records a second: 10 M in three minutes), far
 * more than pixels; one SVG rectangle with a tooltip each made a 2 GB file of a 200 MB trace,
 * which no browser opens. Past a budget of spans (ren_timeline_opts.max_spans), spans narrower
 * than a pixel are merged per lane and pixel column into one rectangle saying how many they
 * were, over which time, how busy, and which name came most often. Wider spans, and every span
 * of a timeline under the budget, are drawn one by one as before (their true widths survive the
 * SVG's zoom; merged ones zoom as one block: --from/--to draws a window in detail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "timeline.h"
#include "timeline_priv.h"

/* The spans a lane's pixel column holds, merged */
typedef struct tl_run {
	double y, h;           /* the lane */
	double x0, x1;         /* px covered */
	uint64_t a, b, busy;   /* first start, last end, summed lengths (ns) */
	uint64_t n;
	const char *noun;      /* what they are (singular), NULL when mixed */
	const char *cand[4];   /* names seen most (a majority vote that keeps 4 candidates) */
	uint64_t ccount[4];
	uint32_t fills[4];     /* colours with the most time (space-saving: the least one replaced) */
	uint64_t fns[4];
	unsigned age;
} tl_run;

#define N_RUNS 16

struct ren_tl_merger {
	tl_run runs[N_RUNS];
	unsigned clock;
};

static ren_tl_merger *merger(ren_tl *t)
{
	if (!t->mg && !(t->mg = calloc(1, sizeof(*t->mg))))
		t->oom = 1;
	return t->mg;
}

/* "kernel" -> "kernels", "copy" -> "copies" */
static void plural(char *buf, size_t len, const char *noun, uint64_t n)
{
	size_t l = strlen(noun);
	if (n == 1)
		snprintf(buf, len, "%s", noun);
	else if (l > 1 && noun[l - 1] == 'y' && !strchr("aeiou", noun[l - 2]))
		snprintf(buf, len, "%.*sies", (int)(l - 1), noun);
	else
		snprintf(buf, len, "%ss", noun);
}

static void draw_run(ren_tl *t, tl_run *r)
{
	if (!r->n)
		return;
	int best = 0;
	for (int k = 1; k < 4; k++)
		if (r->ccount[k] > r->ccount[best])
			best = k;
	char what[64], d_busy[32], d_span[32], top[300] = "";
	plural(what, sizeof(what), r->noun ? r->noun : "span", r->n);
	ren_tl_fmt_dur(d_busy, sizeof(d_busy), (double)r->busy);
	ren_tl_fmt_dur(d_span, sizeof(d_span), (double)ana_span(r->a, r->b));
	double pct = r->b > r->a ? 100.0 * (double)r->busy / (double)(r->b - r->a) : 100.0;
	if (r->cand[best])
		snprintf(top, sizeof(top), "\n%s %.200s%s", r->n == 1 ? "" : "most:", r->cand[best],
		         r->n == 1 ? "" : " ...");
	char *tip = ren_tl_tipf(t, "%llu %s under a pixel, merged: %s busy in %s (%.0f%%)\n%.6f - %.6f s%s\n"
	                        "(--from/--to draws a window span by span)",
	                        (unsigned long long)r->n, what, d_busy, d_span, pct > 100 ? 100 : pct,
	                        ren_tl_rel_s(t, r->a), ren_tl_rel_s(t, r->b), top);
	int fb = 0;
	for (int k = 1; k < 4; k++)
		if (r->fns[k] > r->fns[fb])
			fb = k;
	if (tip && ren_tl_span(t, r->a, r->b, r->y, r->h, r->fills[fb], NULL, tip))
		t->n_merged_rects++;
	t->n_merged_spans += r->n;
	/* empty, for the lane's next column: only the lane and its age stay */
	double y = r->y, h = r->h;
	unsigned age = r->age;
	memset(r, 0, sizeof(*r));
	r->y = y;
	r->h = h;
	r->age = age;
}

void ren_tl_merge_flush(ren_tl *t)
{
	if (!t->mg)
		return;
	for (int i = 0; i < N_RUNS; i++)
		draw_run(t, &t->mg->runs[i]);
}

void ren_tl_merge_free(ren_tl *t)
{
	free(t->mg);
	t->mg = NULL;
}

/* The lane's run, or a free one (the longest unused drawn first to make room). */
static tl_run *lane(ren_tl *t, double y, double h)
{
	ren_tl_merger *g = merger(t);
	if (!g)
		return NULL;
	tl_run *free_r = NULL, *old = &g->runs[0];
	for (int i = 0; i < N_RUNS; i++) {
		tl_run *r = &g->runs[i];
		if (r->n && r->y == y && r->h == h) {
			r->age = ++g->clock;
			return r;
		}
		if (!r->n && !free_r)
			free_r = r;
		if (r->age < old->age)
			old = r;
	}
	if (!free_r) {
		draw_run(t, old);
		free_r = old;
	}
	memset(free_r, 0, sizeof(*free_r));
	free_r->y = y;
	free_r->h = h;
	free_r->age = ++g->clock;
	return free_r;
}

int ren_tl_merge(ren_tl *t, uint64_t a, uint64_t b, double y, double h, uint32_t fill, const char *noun,
                 const char *name)
{
	if (!t->merge)
		return 0;
	if (b < t->t0 || a > t->t1)
		return 1; /* outside the window: nothing to draw */
	if (a < t->t0)
		a = t->t0;
	if (b > t->t1)
		b = t->t1;
	double x = ren_tl_x(t, a), w = ren_tl_x(t, b) - x;
	tl_run *r = lane(t, y, h);
	if (!r)
		return 0;
	if (w >= 1.0 || (r->n && (x < r->x0 || x >= r->x0 + 1.0))) {
		draw_run(t, r); /* the lane's column is done */
		if (w >= 1.0)
			return 0;
	}
	if (!r->n) {
		r->x0 = r->x1 = x;
		r->a = a;
		r->b = b;
		r->noun = noun;
	} else if (r->noun && (!noun || strcmp(r->noun, noun) != 0)) {
		r->noun = NULL;
	}
	if (x + w > r->x1)
		r->x1 = x + w;
	if (b > r->b)
		r->b = b;
	r->busy = ana_sat_add(r->busy, b - a);
	r->n++;
	/* the colour: the one with the most time (at least 1 ns each, so zero-length spans count) */
	uint64_t d = b - a ? b - a : 1;
	int f, least = 0;
	for (f = 0; f < 4; f++)
		if (r->fns[f] && r->fills[f] == fill)
			break;
	if (f == 4) {
		for (f = 0; f < 4 && r->fns[f]; f++)
			;
		if (f == 4) {
			for (int k = 1; k < 4; k++)
				if (r->fns[k] < r->fns[least])
					least = k;
			f = least;
		}
		r->fills[f] = fill;
	}
	r->fns[f] = ana_sat_add(r->fns[f], d);
	if (name) {
		int k, placed = 0;
		for (k = 0; k < 4 && !placed; k++)
			if (r->ccount[k] && r->cand[k] == name) {
				r->ccount[k]++;
				placed = 1;
			}
		for (k = 0; k < 4 && !placed; k++)
			if (!r->ccount[k]) {
				r->cand[k] = name;
				r->ccount[k] = 1;
				placed = 1;
			}
		for (k = 0; k < 4 && !placed; k++)
			r->ccount[k]--;
	}
	return 1;
}

uint64_t ren_timeline_spans(const ana_model *m)
{
	return (uint64_t)m->kernels.n + m->memcpys.n + m->memsets.n + m->syncs.n + m->apis.n + m->nvtx.n + m->gil.n;
}
