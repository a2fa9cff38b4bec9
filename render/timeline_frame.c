/* timeline_frame.c — what a timeline draws around its rows: the shading behind them (sampler
 * behind, context switches not recorded), the time axis with its grid, and the legend of what
 * the trace holds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "counter_sum.h"
#include "flame.h"
#include "gtt.h"
#include "swcover.h"
#include "timeline_priv.h"

/* drawn before the rows (y1 patched afterwards), so that spans stay on top */
void ren_tl_draw_lag(ren_tl *t, double y0, double y1)
{
	const ana_model *m = t->m;
	for (size_t i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		if (h->kind != GTT_HEALTH_LAG_WINDOW || h->end_ns < t->t0 || h->time_ns > t->t1)
			continue;
		char d[32], late[32];
		ren_tl_fmt_dur(d, sizeof(d), (double)(h->end_ns - h->time_ns));
		ren_tl_fmt_dur(late, sizeof(late), (double)h->value[0]);
		static const char *const src[] = {"?", "perf sampler", "Python stack reader",
		                                  "GIL poller", "/proc reader", "CUDA agent", "writer"};
		const char *who = h->source < 7 ? src[h->source] : "sampler";
		ren_item *it = ren_tl_span(t, h->time_ns, h->end_ns, y0, y1 - y0, C_LAG,
		                    NULL, ren_tl_tipf(t, "%s behind for %s (up to %s late)\n%.3f - %.3f s%s%s", who,
		                               d, late, ren_tl_rel_s(t, h->time_ns), ren_tl_rel_s(t, h->end_ns),
		                               h->text && h->text[0] ? "\n" : "", h->text ? h->text : ""));
		if (it)
			it->alpha = 40;
	}
}

/* The stretches without switch records (gt-record's switch gate), faint behind the rows: the
 * off-CPU gaps drawn are only the recorded ones. Drawn with draw_lag (heights patched alike). */
void ren_tl_draw_noswitch(ren_tl *t, double y0, double y1)
{
	const ana_model *m = t->m;
	/* the longest-closed recording's stretches (a merged trace's inputs each have their own) */
	const ana_swgroup *g = NULL;
	for (size_t i = 0; i < m->swgroups.n; i++)
		if (!g || m->swgroups.v[i].closed_ns > g->closed_ns)
			g = &m->swgroups.v[i];
	for (size_t i = 0; g && i < g->closed.n; i++) {
		const ana_interval *iv = &g->closed.v[i];
		if (iv->end_ns < t->t0 || iv->start_ns > t->t1)
			continue;
		ren_item *it = ren_tl_span(t, iv->start_ns, iv->end_ns, y0, y1 - y0, C_NOSW, NULL,
		                           ren_tl_tipf(t, "context switches not recorded (the processes switched faster than "
		                                       "gt-record's limit): off-CPU gaps unknown\n%.3f - %.3f s",
		                                       ren_tl_rel_s(t, iv->start_ns), ren_tl_rel_s(t, iv->end_ns)));
		if (it)
			it->alpha = 22;
	}
}

/* drawn before the rows; the grid lines' length is patched when the rows are done */
void ren_tl_draw_axis(ren_tl *t, double y_axis, double y_end)
{
	double span_ns = (double)(t->t1 - t->t0);
	int max_ticks = (int)((t->x1 - t->x0) / 90);
	double step = ren_nice_step(span_ns > 0 ? span_ns : 1, max_ticks);
	double rel0 = ana_rel_ns(t->t0, ana_model_origin(t->m));
	double first = ceil(rel0 / step) * step;
	ren_item *it = ren_line(t->sc, t->x0, y_axis, t->x1, y_axis, 0x555555, 1);
	if (it)
		it->flags |= REN_F_AXIS;
	/* counted, not stepped: far from zero a double may not change when a small step is added */
	for (int i = 0; i <= max_ticks + 2; i++) {
		double v = first + i * step;
		if (v > rel0 + span_ns + step * 1e-6)
			break;
		double x = t->x0 + (v - rel0) * t->px_per_ns;
		char buf[48];
		ren_fmt_time(buf, sizeof(buf), v, step, fabs(rel0 + span_ns) > fabs(rel0) ? fabs(rel0 + span_ns) : fabs(rel0));
		/* an item pointer lives until the next add (the scene's array may move): flag each at once */
		ren_item *g = ren_line(t->sc, x, y_axis, x, y_end, C_GRID, 1);
		if (g)
			g->flags |= REN_F_AXIS;
		ren_item *k = g ? ren_line(t->sc, x, y_axis - 4, x, y_axis, 0x555555, 1) : NULL;
		if (k)
			k->flags |= REN_F_AXIS;
		char *s = k ? ren_scene_strdup(t->sc, buf) : NULL;
		/* labels at the edges stay inside the image */
		double half = ren_text_width(strlen(buf), FS - 1) / 2;
		int anchor = x + half > ren_scene_width(t->sc) - 2 ? REN_ANCHOR_END : REN_ANCHOR_MIDDLE;
		ren_item *l = s ? ren_text(t->sc, anchor == REN_ANCHOR_END ? x + 3 : x, y_axis - 7, s, FS - 1,
		                           anchor, 0x333333) : NULL;
		if (!l) {
			t->oom = 1;
			return;
		}
		l->flags |= REN_F_AXIS;
	}
}


/* legend lines from y; returns the y under them */
double ren_tl_draw_legend(ren_tl *t, double y, const ren_tl_legend *e, size_t n)
{
	double x = 10, W = ren_scene_width(t->sc);
	for (size_t i = 0; i < n; i++) {
		double w = 14 + 4 + ren_text_width(strlen(e[i].label), FS) + 16;
		if (x + w > W - 10) {
			x = 10;
			y += FS + 8;
		}
		ren_item *r = ren_rect(t->sc, x, y - FS / 2 - e[i].h / 2 + 1, 14, e[i].h, e[i].color, NULL);
		if (r && e[i].color == C_LAG)
			r->alpha = 70;
		if (r && e[i].color == C_NOSW)
			r->alpha = 50;
		if (!r || !ren_text(t->sc, x + 18, y + 2, e[i].label, FS, REN_ANCHOR_START, 0x222222)) {
			t->oom = 1;
			return y;
		}
		x += w;
	}
	return y + FS + 8;
}

/* The legend names what this trace has: le gets at most LEGEND_MAX entries; their number. */
size_t ren_tl_legend_of(const ana_model *m, ren_tl_legend *le)
{
	size_t nl = 0;
	int cls_seen[ANA_CLASS_COUNT] = {0};
	for (size_t i = 0; i < m->samples.n; i++)
		if (m->samples.v[i].cls < ANA_CLASS_COUNT)
			cls_seen[m->samples.v[i].cls] = 1;
	for (int c = 1; c < ANA_CLASS_COUNT; c++)
		if (cls_seen[c])
			le[nl++] = (ren_tl_legend){ana_class_name(c), ren_class_color(c), 12};
	if (cls_seen[0]) {
		const char *label = nl ? "on-CPU, not Python" : "on-CPU (sampled)";
		le[nl++] = (ren_tl_legend){label, ren_class_color(0), 12};
	}
	if (m->switches.n)
		le[nl++] = (ren_tl_legend){"off-CPU", C_OFFCPU, 3};
	if (m->gil.n)
		le[nl++] = (ren_tl_legend){"holds the GIL", C_GIL, 3};
	if (m->apis.n)
		le[nl++] = (ren_tl_legend){"CUDA API call", C_API, 4};
	if (m->kernels.n)
		le[nl++] = (ren_tl_legend){"kernel", 0x5fbcd3, 12};
	int ck[6] = {0};
	for (size_t i = 0; i < m->memcpys.n; i++)
		ck[m->memcpys.v[i].kind < 6 ? m->memcpys.v[i].kind : 0] = 1;
	if (ck[GTT_MEMCPY_HTOD])
		le[nl++] = (ren_tl_legend){"copy HtoD", C_HTOD, 12};
	if (ck[GTT_MEMCPY_DTOH])
		le[nl++] = (ren_tl_legend){"copy DtoH", C_DTOH, 12};
	if (ck[GTT_MEMCPY_DTOD])
		le[nl++] = (ren_tl_legend){"copy DtoD", C_DTOD, 12};
	if (ck[0] || ck[GTT_MEMCPY_HTOH] || ck[GTT_MEMCPY_PTOP])
		le[nl++] = (ren_tl_legend){"other copy", C_COPY, 12};
	if (m->memsets.n)
		le[nl++] = (ren_tl_legend){"memset", C_MEMSET, 12};
	if (m->syncs.n)
		le[nl++] = (ren_tl_legend){"synchronize", C_SYNC, 3};
	if (m->nvtx.n)
		le[nl++] = (ren_tl_legend){"NVTX range", 0xa6cee3, 12};
	if (m->counters.n)
		le[nl++] = (ren_tl_legend){"counter value", C_COUNTER, 12};
	int has_wm = 0;
	for (size_t i = 0; i < m->counters.n && !has_wm; i++)
		has_wm = ana_counter_watermark_of(ana_string_get(m, m->counters.v[i].pid, m->counters.v[i].name_id)) > 0;
	if (has_wm)
		le[nl++] = (ren_tl_legend){"counter watermark", C_WATERMARK, 2};
	int has_lag = 0;
	for (size_t i = 0; i < m->health.n; i++)
		has_lag |= m->health.v[i].kind == GTT_HEALTH_LAG_WINDOW;
	if (has_lag)
		le[nl++] = (ren_tl_legend){"sampler behind", C_LAG, 12};
	if (ana_swcover_partial(m))
		le[nl++] = (ren_tl_legend){"context switches not recorded", C_NOSW, 12};
	return nl;
}

