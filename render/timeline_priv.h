/* timeline_priv.h — what timeline.c (threads, layout), timeline_frame.c (shading, axis, legend)
 * and timeline_gpu.c (GPU streams, counters) share: the layout state and the span/label helpers. Not for other files.
 * Return rule: render/'s (layout.h): 0 or a negative REN_E* code, NULL + *err for objects. */
#ifndef REN_TIMELINE_PRIV_H
#define REN_TIMELINE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "model.h"

#define LABEL_W 230.0
#define PAD_R 20.0
#define FS 12.0
#define ROW_THREAD 28.0
#define ROW_STREAM 22.0
#define ROW_NVTX 13.0
#define ROW_COUNTER 46.0
#define ROW_HEADER 20.0
#define REN_TL_MAX_ROWS 24 /* thread rows shown without --threads (CUDA/NVTX threads always) */

/* colours of what is not a GIL class */
#define C_OFFCPU 0xc4c4c4
#define C_GIL 0x1d3c8c
#define C_API 0x9467bd
#define C_HTOD 0x2ca02c
#define C_DTOH 0xd62728
#define C_DTOD 0xff7f0e
#define C_COPY 0x8c564b
#define C_MEMSET 0x7f7f7f
#define C_SYNC 0xbcbd22
#define C_COUNTER 0x1f77b4
#define C_WATERMARK 0x8b0000
#define C_LAG 0xff3030
#define C_NOSW 0x8a8a8a  /* context switches not recorded (the switch gate) */
#define C_GRID 0xdddddd

typedef struct ren_tl_merger ren_tl_merger;

/* the layout in progress */
typedef struct ren_tl {
	const ana_model *m;
	ren_scene *sc;
	uint64_t t0, t1;      /* window, absolute ns */
	double x0, x1;        /* plot, px */
	double px_per_ns;
	double y;             /* next row's top */
	int oom;
	int grouped;          /* rows grouped by process (a job): only only_pid's rows, no section headers */
	uint32_t only_pid;
	int merge;            /* over the span budget: spans under a pixel merged (timeline_merge.c) */
	ren_tl_merger *mg;
	uint64_t n_merged_spans, n_merged_rects;
} ren_tl;

/* x in px of an absolute time */
double ren_tl_x(const ren_tl *t, uint64_t ns);
/* "12.3 ms" */
void ren_tl_fmt_dur(char *buf, size_t len, double ns);
/* seconds from the trace start */
double ren_tl_rel_s(const ren_tl *t, uint64_t ns);
/* A data span [a, b) clipped to the window, with a label inside when it fits; tip must be
 * scene-owned. NULL when outside the window (or on ENOMEM, which sets t->oom). */
ren_item *ren_tl_span(ren_tl *t, uint64_t a, uint64_t b, double y, double h, uint32_t fill,
                      const char *label, const char *tip);
/* printf into the scene (a tooltip); sets t->oom on failure */
char *ren_tl_tipf(ren_tl *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a row's label in the left column, with a hoverable tooltip when tip is not NULL */
void ren_tl_row_label(ren_tl *t, double y, double h, const char *text, const char *tip, int bold,
                      uint32_t color);
/* a light band behind every other row */
void ren_tl_stripe(ren_tl *t, double y, double h, int odd);
/* a section header row ("GPU streams") at t->y */
void ren_tl_header(ren_tl *t, const char *text);
/* ---- merging spans under a pixel (timeline_merge.c) ---- */
/* With t->merge on: a span [a, b) of the lane (y, h) narrower than a pixel joins the lane's run
 * of such spans in its pixel column, drawn later as one rectangle, and 1 is returned (also for a
 * span outside the window): the caller draws nothing and makes no tooltip. 0: the caller draws
 * it itself (merging off, or a span a pixel wide or more; the lane's run is drawn first). noun:
 * what it is, singular ("kernel"); name: its name, model-owned (compared by pointer), or NULL. */
int ren_tl_merge(ren_tl *t, uint64_t a, uint64_t b, double y, double h, uint32_t fill, const char *noun,
                 const char *name);
/* Every lane's run drawn (after the rows), and the merger freed. */
void ren_tl_merge_flush(ren_tl *t);
void ren_tl_merge_free(ren_tl *t);

/* ---- around the rows (timeline_frame.c) ---- */
/* Shading spans over [y0, y1) (their heights are patched once the rows are drawn): the stretches
 * a sampler was behind, and those without context switches (gt-record's switch gate). */
void ren_tl_draw_lag(ren_tl *t, double y0, double y1);
void ren_tl_draw_noswitch(ren_tl *t, double y0, double y1);
/* The time axis at y_axis with grid lines down to y_end (patched when the rows are done). */
void ren_tl_draw_axis(ren_tl *t, double y_axis, double y_end);
/* One legend entry, the legend of what m holds (at most REN_TL_LEGEND_MAX entries into le;
 * their number), and the legend drawn from y (the y under it). */
typedef struct ren_tl_legend { const char *label; uint32_t color; double h; } ren_tl_legend;
#define REN_TL_LEGEND_MAX 24
size_t ren_tl_legend_of(const ana_model *m, ren_tl_legend *le);
double ren_tl_draw_legend(ren_tl *t, double y, const ren_tl_legend *e, size_t n);

/* the GPU stream rows and the counter rows at t->y (grouped: only_pid's); 0 or -1 on ENOMEM */
int ren_tl_streams(ren_tl *t);
int ren_tl_counters(ren_tl *t);

#endif
