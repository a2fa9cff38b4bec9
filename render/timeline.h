/* timeline.h — the per-thread timeline of a trace: one row per thread (busiest first) with
 * on-CPU samples coloured by GIL class, off-CPU gaps, GIL ownership and CUDA API spans; one row
 * per GPU stream with kernels and copies; NVTX ranges, counters, and the windows in which the
 * sampler was behind, shaded. Laid out into a scene for svg.c or cairo_out.c.
 * Return rule: render/'s (layout.h): 0 or a negative REN_E* code, NULL + *err for objects. */
#ifndef REN_TIMELINE_H
#define REN_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "model.h"

/* The narrowest timeline: the label column plus a plot of 150 px. */
#define REN_TL_MIN_WIDTH 400.0

typedef struct ren_timeline_opts {
	double width_px;        /* image width (1400; less than REN_TL_MIN_WIDTH is widened to it) */
	const char *title;      /* NULL: "Timeline: <command>" */
	const char *threads_re; /* only threads whose "name tid" matches (POSIX ERE), NULL all */
	int64_t from_ns, to_ns; /* window relative to the trace start, used when has_from/has_to */
	int has_from, has_to;
	/* over this many CUDA, API, NVTX and GIL spans in the trace (ren_timeline_spans), spans
	 * narrower than a pixel are merged per lane and pixel column (default
	 * REN_TL_DEFAULT_MAX_SPANS; 0: never) */
	uint64_t max_spans;
} ren_timeline_opts;
#define REN_TL_DEFAULT_MAX_SPANS 200000
/* A whole-trace timeline of a trace over this size wants --from/--to (gt-render main.c): the
 * loaded model keeps every record it draws, ~15x the trace's bytes for a GPU trace */
#define REN_TL_MAX_BYTES (256ull << 20)
void ren_timeline_opts_init(ren_timeline_opts *o);
/* The spans a timeline of m would draw one by one: CUDA work, syncs, API calls, NVTX, GIL
 * records (samples and off-CPU gaps are merged under a pixel always). */
uint64_t ren_timeline_spans(const ana_model *m);

/* Lay out the timeline of model m. NULL with *err = REN_EEMPTY (nothing in the window, no
 * thread matches), REN_EINVAL (a bad --threads expression) or REN_ENOMEM, and one line in why
 * that says which. */
ren_scene *ren_timeline_layout(const ana_model *m, const ren_timeline_opts *o, int *err, char *why,
                               size_t whylen);

#endif
