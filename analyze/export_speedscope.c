/* export_speedscope.c — the model as a speedscope file: shared frames in order of first use,
 * one "sampled" profile per thread with weights in ns on the trace clock. */
#include <stdlib.h>
#include <string.h>

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

int ana_export_speedscope(const ana_model *m, FILE *out)
{
	int rc = GTT_ENOMEM;
	uint32_t *frame_idx = NULL;     /* model frame id -> speedscope index + 1 */
	uint32_t *order = NULL;         /* speedscope index -> model frame id */
	size_t *first = NULL, *next = NULL;   /* per-thread sample lists (indices into samples) */
	ana_json *j = NULL;
	size_t n_used = 0;

	frame_idx = calloc(m->frames.n + 1, sizeof(*frame_idx));
	order = malloc((m->frames.n + 1) * sizeof(*order));
	if (!frame_idx || !order || ana_thread_sample_lists(m, &first, &next) < 0)
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
		const ana_sample *s0 = &m->samples.v[first[t]];
		uint64_t start = s0->time_ns, end = start;
		ana_json_newline(j);
		ana_json_obj_begin(j);
		ana_json_kv_str(j, "type", "sampled");
		ana_json_kv_str(j, "name", name);
		ana_json_kv_str(j, "unit", "nanoseconds");
		ana_json_kv_u64(j, "startValue", start);
		/* Consecutive samples of one stack become one weighted sample: same picture, less text. */
		ana_json_key(j, "samples");
		ana_json_arr_begin(j);
		uint32_t prev = UINT32_MAX;
		for (size_t i = first[t]; i != SIZE_MAX; i = next[i]) {
			const ana_sample *s = &m->samples.v[i];
			if (s->time_ns + s->weight_ns > end)
				end = s->time_ns + s->weight_ns;
			if (s->stack_id == prev)
				continue;
			prev = s->stack_id;
			const ana_stack *st = &m->stacks.v[s->stack_id];
			ana_json_newline(j);
			ana_json_arr_begin(j);
			for (uint32_t k = 0; k < st->n; k++)
				if (st->frames[k] < m->frames.n)
					ana_json_u64(j, frame_idx[st->frames[k]] - 1);
			ana_json_arr_end(j);
		}
		ana_json_arr_end(j);
		ana_json_key(j, "weights");
		ana_json_arr_begin(j);
		prev = UINT32_MAX;
		uint64_t w = 0, sum = 0;
		for (size_t i = first[t]; i != SIZE_MAX; i = next[i]) {
			const ana_sample *s = &m->samples.v[i];
			if (s->stack_id != prev && prev != UINT32_MAX) {
				ana_json_u64(j, w);
				w = 0;
			}
			prev = s->stack_id;
			w += s->weight_ns;
			sum += s->weight_ns;
		}
		ana_json_u64(j, w);
		ana_json_arr_end(j);
		/* speedscope wants end - start >= the sum of weights */
		if (end - start < sum)
			end = start + sum;
		ana_json_kv_u64(j, "endValue", end);
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
