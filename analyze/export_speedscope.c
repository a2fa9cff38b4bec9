/* export_speedscope.c — the model as a speedscope file: shared frames in order of first use,
 * one "sampled" profile per thread with weights in ns, on the recording's time axis (idle time
 * included, so that speedscope's time-ordered view is true). */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "export.h"
#include "gtt.h"
#include "json.h"

static void write_frame(ana_json *j, const ana_frame *f)
{
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "name", f->name ? f->name : "?");
	if (f->file && f->file[0])
		ana_json_kv_str(j, "file", f->file);
	else if (f->module && f->module[0])
		ana_json_kv_str(j, "file", f->module);
	if (f->line > 0)
		ana_json_kv_i64(j, "line", f->line);
	ana_json_obj_end(j);
}

/* A thread's samples as speedscope's sample list (weights == 0) or weight list (weights == 1),
 * on the recording's time axis from its start: consecutive samples of one stack become one
 * weighted sample; time in which the thread was not sampled (its samples more than half a
 * period apart, and before its first one) becomes an empty sample, so that the time-ordered
 * view puts every sample at its time (without it a thread's samples were packed into the
 * first part of the axis). A sample stands for the period before its timestamp; samples closer
 * than their periods keep their weights (the cursor runs ahead and meets the clock again at the
 * next idle time). Returns where the cursor ends. */
static uint64_t thread_runs(ana_json *j, const ana_model *m, uint64_t origin, size_t first, const size_t *next,
                            const uint32_t *frame_idx, int weights)
{
	uint64_t cursor = origin, run = 0;
	uint32_t prev = UINT32_MAX;
	for (size_t i = first;; i = next[i]) {
		const ana_sample *s = i == SIZE_MAX ? NULL : &m->samples.v[i];
		uint64_t w = s ? s->weight_ns : 0, from = s ? (s->time_ns > w ? s->time_ns - w : 0) : 0;
		uint64_t idle = s && from > cursor && from - cursor > w / 2 ? from - cursor : 0;
		if (!s || idle || s->stack_id != prev) {
			if (prev != UINT32_MAX) {   /* the run so far */
				if (weights) {
					ana_json_u64(j, run);
				} else {
					const ana_stack *st = &m->stacks.v[prev];
					ana_json_newline(j);
					ana_json_arr_begin(j);
					for (uint32_t k = 0; k < st->n; k++)
						if (st->frames[k] < m->frames.n)
							ana_json_u64(j, frame_idx[st->frames[k]] - 1);
					ana_json_arr_end(j);
				}
			}
			if (!s)
				break;
			if (idle) {                 /* an empty stack: the thread was not sampled */
				if (weights) {
					ana_json_u64(j, idle);
				} else {
					ana_json_newline(j);
					ana_json_arr_begin(j);
					ana_json_arr_end(j);
				}
				cursor = from;
			}
			prev = s->stack_id;
			run = 0;
		}
		run = ana_sat_add(run, w);
		cursor = ana_sat_add(cursor, w);
	}
	return cursor;
}

int ana_export_speedscope(const ana_model *m, const ana_export_opts *o, FILE *out)
{
	int rc = GTT_ENOMEM;
	uint32_t *frame_idx = NULL;     /* model frame id -> speedscope index + 1 */
	uint32_t *order = NULL;         /* speedscope index -> model frame id */
	size_t *first = NULL, *next = NULL;   /* per-thread sample lists (indices into samples) */
	ana_json *j = NULL;
	size_t n_used = 0;

	frame_idx = calloc(m->frames.n + 1, sizeof(*frame_idx));
	order = malloc((m->frames.n + 1) * sizeof(*order));
	if (!frame_idx || !order || ana_thread_sample_lists(m, o ? o->gil : -1, &first, &next) < 0)
		goto out;
	for (size_t t = 0; t < m->threads.n; t++) {
		for (size_t i = first[t]; i != SIZE_MAX; i = next[i]) {
			const ana_stack *st = &m->stacks.v[m->samples.v[i].stack_id];
			for (uint32_t k = 0; k < st->n; k++) {
				uint32_t f = st->frames[k];
				if (f < m->frames.n && !frame_idx[f]) {
					order[n_used] = f;
					frame_idx[f] = (uint32_t)++n_used;
				}
			}
		}
	}

	if (!(j = ana_json_create(out)))
		goto out;
	const char *cmd = ana_meta_get(m, "command");
	char title[256];
	snprintf(title, sizeof(title), "%s", cmd ? cmd : (m->path ? m->path : "trace"));
	/* The busiest thread opens first. */
	size_t active = 0, n_prof = 0;
	uint64_t best = 0;
	for (size_t t = 0; t < m->threads.n; t++) {
		if (first[t] == SIZE_MAX)
			continue;
		if (n_prof == 0 || m->threads.v[t].sampled_ns > best) {
			active = n_prof;
			best = m->threads.v[t].sampled_ns;
		}
		n_prof++;
	}

	/* every profile on one axis: from the recording's start, or the first sample's period */
	uint64_t origin = m->start_ns;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		uint64_t from = s->time_ns > s->weight_ns ? s->time_ns - s->weight_ns : 0;
		if (from < origin)
			origin = from;
	}
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "$schema", "https://www.speedscope.app/file-format-schema.json");
	ana_json_kv_str(j, "exporter", "groundtruth gt-analyze " GT_VERSION);
	ana_json_kv_str(j, "name", title);
	ana_json_kv_u64(j, "activeProfileIndex", active);
	ana_json_newline(j);
	ana_json_key(j, "shared");
	ana_json_obj_begin(j);
	ana_json_key(j, "frames");
	ana_json_arr_begin(j);
	for (size_t k = 0; k < n_used; k++) {
		ana_json_newline(j);
		write_frame(j, &m->frames.v[order[k]]);
	}
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	ana_json_newline(j);
	ana_json_key(j, "profiles");
	ana_json_arr_begin(j);
	for (size_t t = 0; t < m->threads.n; t++) {
		if (first[t] == SIZE_MAX)
			continue;
		const ana_thread *th = &m->threads.v[t];
		char name[300], tn[256];
		snprintf(name, sizeof(name), "%s (pid %u, tid %u)", ana_export_thread_name(m, th, tn, sizeof(tn)),
		         th->pid, th->tid);
		ana_json_newline(j);
		ana_json_obj_begin(j);
		ana_json_kv_str(j, "type", "sampled");
		ana_json_kv_str(j, "name", name);
		ana_json_kv_str(j, "unit", "nanoseconds");
		ana_json_kv_u64(j, "startValue", origin);
		ana_json_key(j, "samples");
		ana_json_arr_begin(j);
		uint64_t end = thread_runs(j, m, origin, first[t], next, frame_idx, 0);
		ana_json_arr_end(j);
		ana_json_key(j, "weights");
		ana_json_arr_begin(j);
		thread_runs(j, m, origin, first[t], next, frame_idx, 1);
		ana_json_arr_end(j);
		ana_json_kv_u64(j, "endValue", end > m->end_ns ? end : m->end_ns);
		ana_json_obj_end(j);
	}
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	ana_json_newline(j);
	rc = ana_json_error(j) < 0 ? GTT_EIO : 0;
out:
	ana_json_destroy(j);
	free(frame_idx);
	free(order);
	free(first);
	free(next);
	return rc;
}
