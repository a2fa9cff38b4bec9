/* window.c — a time window of a trace: the origin --from/--to count from, and which records of
 * the chunks read (lib's index picks them) fall in the window, interval records cut at its edges. */
#include <stdlib.h>
#include <string.h>

#include "window.h"

/* The earliest time of rec as the loader counts it (a record without one: 0). */
static uint64_t rec_first_time(const gtt_record *rec)
{
	switch (rec->tag) {
	case GTT_REC_PROCESS: return rec->u.process.time_ns;
	case GTT_REC_THREAD: return rec->u.thread.time_ns;
	case GTT_REC_MAPPING: return rec->u.mapping.time_ns;
	case GTT_REC_SAMPLE: return rec->u.sample.time_ns;
	case GTT_REC_SWITCH: return rec->u.sw.time_ns;
	case GTT_REC_THREAD_CPU: return rec->u.thread_cpu.time_ns;
	case GTT_REC_PY_STACK: return rec->u.py_stack.time_ns;
	case GTT_REC_GIL: return rec->u.gil.time_ns;
	case GTT_REC_CUDA_KERNEL: return rec->u.kernel.start_ns;
	case GTT_REC_CUDA_MEMCPY: return rec->u.memcpy.start_ns;
	case GTT_REC_CUDA_MEMSET: return rec->u.memset.start_ns;
	case GTT_REC_CUDA_SYNC: return rec->u.sync.start_ns;
	case GTT_REC_CUDA_API: return rec->u.api.start_ns;
	case GTT_REC_CUDA_ALLOC: return rec->u.alloc.time_ns;
	case GTT_REC_NVTX: return rec->u.nvtx.start_ns;
	case GTT_REC_COUNTER: return rec->u.counter.time_ns;
	case GTT_REC_CAPTURE: return rec->u.capture.time_ns;
	case GTT_REC_END: return rec->u.end.time_ns;
	default: return 0;
	}
}

/* The start_ns meta among the meta records the trace begins with (0 when none): the recorder
 * writes it first, so only the leading definitions are read. */
static int leading_start_meta(gtt_reader *r, uint64_t *start_ns)
{
	gtt_record rec;
	int rc;
	*start_ns = 0;
	/* an empty window: only definitions chunks and chunks without time ranges are read */
	if ((rc = gtt_reader_set_window(r, UINT64_MAX, UINT64_MAX)) < 0)
		return rc;
	for (int n = 0; n < 256 && (rc = gtt_reader_next(r, &rec)) > 0 && rec.tag == GTT_REC_META; n++)
		if (rec.u.meta.key && strcmp(rec.u.meta.key, "start_ns") == 0 && rec.u.meta.value)
			*start_ns = strtoull(rec.u.meta.value, NULL, 10);
	/* a damaged first chunk is the full read's business: it says so in its own words */
	return 0;
}

int ana_window_origin(gtt_reader *r, uint64_t *origin_ns)
{
	const gtt_index_entry *e;
	size_t n;
	uint64_t meta = 0, first = UINT64_MAX;
	int rc, ranged = 0;
	*origin_ns = 0;
	if ((rc = gtt_reader_index(r, &e, &n)) < 0 || (rc = leading_start_meta(r, &meta)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (e[i].flags & GTT_INDEX_PLAIN)
			ranged = -1; /* chunks of unknown time: only reading them tells */
		else if (e[i].first_ns <= e[i].last_ns && e[i].first_ns && e[i].first_ns < first)
			first = e[i].first_ns;
		if (!ranged && !(e[i].flags & GTT_INDEX_PLAIN))
			ranged = 1;
	}
	if (ranged < 0 && !meta) {
		gtt_record rec;
		gtt_reader_set_window(r, 0, UINT64_MAX);
		while ((rc = gtt_reader_next(r, &rec)) != 0) {
			uint64_t t = rc > 0 ? rec_first_time(&rec) : 0;
			if (t && t < first)
				first = t;
			/* corrupt chunks are skipped here; the full read decides what they mean */
		}
	}
	*origin_ns = meta && meta < first ? meta : first != UINT64_MAX ? first : meta;
	rc = gtt_reader_set_window(r, 0, UINT64_MAX);
out:
	return rc < 0 ? rc : 0;
}

uint64_t ana_window_index_end(gtt_reader *r)
{
	const gtt_index_entry *e;
	size_t n;
	uint64_t last = 0;
	if (gtt_reader_index(r, &e, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].first_ns <= e[i].last_ns && e[i].last_ns > last)
			last = e[i].last_ns;
	return last;
}

static int point_in(const ana_window *w, uint64_t t)
{
	return t >= w->from_ns && t < w->to_ns;
}

/* An interval [*a, *b] (either order: a record may run backwards) that overlaps the window is cut
 * at its edges; 0 when it lies outside. An empty interval counts as a point. */
static int cut(const ana_window *w, uint64_t *a, uint64_t *b)
{
	uint64_t *lo = *a <= *b ? a : b, *hi = *a <= *b ? b : a;
	if (*lo == *hi)
		return point_in(w, *lo);
	if (*hi <= w->from_ns || *lo >= w->to_ns)
		return 0;
	if (w->whole)
		return 1;
	if (*lo < w->from_ns)
		*lo = w->from_ns;
	if (*hi > w->to_ns)
		*hi = w->to_ns;
	return 1;
}

int ana_window_keep(const ana_window *w, gtt_record *rec)
{
	if (!w->on)
		return 1;
	switch (rec->tag) {
	case GTT_REC_SAMPLE: return point_in(w, rec->u.sample.time_ns);
	case GTT_REC_SWITCH: return point_in(w, rec->u.sw.time_ns);
	case GTT_REC_THREAD_CPU: return point_in(w, rec->u.thread_cpu.time_ns);
	case GTT_REC_PY_STACK: return point_in(w, rec->u.py_stack.time_ns);
	case GTT_REC_GIL: return point_in(w, rec->u.gil.time_ns);
	case GTT_REC_CUDA_ALLOC: return point_in(w, rec->u.alloc.time_ns);
	case GTT_REC_COUNTER: return point_in(w, rec->u.counter.time_ns);
	case GTT_REC_CUDA_CALLSTACK: return point_in(w, rec->u.callstack.time_ns);
	case GTT_REC_CUDA_KERNEL: return cut(w, &rec->u.kernel.start_ns, &rec->u.kernel.end_ns);
	case GTT_REC_CUDA_MEMCPY: return cut(w, &rec->u.memcpy.start_ns, &rec->u.memcpy.end_ns);
	case GTT_REC_CUDA_MEMSET: return cut(w, &rec->u.memset.start_ns, &rec->u.memset.end_ns);
	case GTT_REC_CUDA_SYNC: return cut(w, &rec->u.sync.start_ns, &rec->u.sync.end_ns);
	case GTT_REC_CUDA_API: return cut(w, &rec->u.api.start_ns, &rec->u.api.end_ns);
	case GTT_REC_NVTX: return cut(w, &rec->u.nvtx.start_ns, &rec->u.nvtx.end_ns);
	case GTT_REC_TICKS: {
		uint64_t a = rec->u.ticks.start_ns, b = rec->u.ticks.end_ns;
		/* the whole recording's summary speaks for the window only when it lies inside it */
		if (rec->u.ticks.flags & GTT_TICKS_WHOLE)
			return a >= w->from_ns && b <= w->to_ns;
		return cut(w, &a, &b); /* a copy: the summary stays whole */
	}
	case GTT_REC_HEALTH:
		switch (rec->u.health.kind) {
		case GTT_HEALTH_THROTTLE:
		case GTT_HEALTH_LAG_WINDOW:
		case GTT_HEALTH_OVERHEAD:
			if (rec->u.health.end_ns < rec->u.health.time_ns)
				return point_in(w, rec->u.health.time_ns);
			return cut(w, &rec->u.health.time_ns, &rec->u.health.end_ns);
		case GTT_HEALTH_LOST:
		case GTT_HEALTH_READ_ERRORS:
		case GTT_HEALTH_DROPPED:
			/* counts at a time (0: the recording's whole, kept) */
			return !rec->u.health.time_ns || point_in(w, rec->u.health.time_ns);
		default:
			return 1;
		}
	default:
		return 1; /* definitions, and kinds this reader does not know */
	}
}
