/* export_speedscope.c — the model as a speedscope file: shared frames in order of first use,
 * one "sampled" profile per thread with weights in ns, on the recording's time axis (idle time
 * included, so that speedscope's time-ordered view is true). The samples come one by one in time
 * order (from the loader as it merges them, ana_opts.sample_sink, or from a model's array) and
 * wait in a spill (spill.h) by thread; what stays in memory is per thread and per distinct
 * (thread, stack), never per sample. */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "export.h"
#include "gt_util.h"
#include "gtt.h"
#include "json.h"
#include "spill.h"

/* A kept sample as it waits in the spill (this process's scratch: written and read as is). */
typedef struct ss_ent {
	uint64_t time_ns, weight_ns;
	uint32_t stack_id, pad;
} ss_ent;

typedef struct ss_thread {
	uint64_t last_ns;      /* its last kept sample's time */
	uint32_t prev_stack;   /* and stack */
	int kept;              /* it has kept samples: it gets a profile */
} ss_thread;

struct ana_sscope {
	int gil;               /* the classes kept (mask), -1 all */
	ana_spill *spill;      /* each thread's kept samples (ss_ent), in the order they came */
	ss_thread *th;
	size_t n_th;
	ana_keymap *seen;      /* (thread, stack) pairs kept, */
	ANA_VEC(uint32_t) pairs; /* and the same in order of first use, two words each */
	uint64_t min_from;     /* the earliest start of a sample's period, of every sample */
	int unordered;         /* a thread's sample came before its previous one */
	int rc;                /* the first error: GTT_ENOMEM, GTT_EIO (the spill's words) */
};

ana_sscope *ana_sscope_new(int gil, size_t buf_bytes)
{
	ana_sscope *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->gil = gil;
	c->min_from = UINT64_MAX;
	c->spill = ana_spill_new(sizeof(ss_ent), buf_bytes);
	c->seen = ana_keymap_create();
	if (!c->spill || !c->seen) {
		ana_sscope_free(c);
		return NULL;
	}
	return c;
}

void ana_sscope_free(ana_sscope *c)
{
	if (!c)
		return;
	ana_spill_free(c->spill);
	ana_keymap_destroy(c->seen);
	free(c->th);
	free(c->pairs.v);
	free(c);
}

int ana_sscope_unordered(const ana_sscope *c)
{
	return c->unordered;
}

uint64_t ana_sscope_spilled_bytes(const ana_sscope *c)
{
	return ana_spill_file_bytes(c->spill);
}

const char *ana_sscope_error(const ana_sscope *c)
{
	if (c->rc == GTT_EIO)
		return ana_spill_error(c->spill);
	return c->rc < 0 ? gtt_strerror(c->rc) : "";
}

/* What a thread list of the model's samples (ana_thread_sample_lists) keeps: a known thread and
 * stack, a class of gil. */
void ana_sscope_sample(void *ctx, const ana_model *m, const ana_sample *s)
{
	ana_sscope *c = ctx;
	uint64_t from = s->time_ns > s->weight_ns ? s->time_ns - s->weight_ns : 0;
	if (from < c->min_from)
		c->min_from = from;
	if (c->rc < 0 || s->thread_idx >= m->threads.n || s->stack_id >= m->stacks.n ||
	    (c->gil >= 0 && !(c->gil & 1 << s->cls)))
		return;
	if (s->thread_idx >= c->n_th) {
		size_t n = m->threads.n;
		ss_thread *th = realloc(c->th, n * sizeof(*th));
		if (!th) {
			c->rc = GTT_ENOMEM;
			return;
		}
		memset(th + c->n_th, 0, (n - c->n_th) * sizeof(*th));
		c->th = th;
		c->n_th = n;
	}
	ss_thread *t = &c->th[s->thread_idx];
	if (t->kept && s->time_ns < t->last_ns)
		c->unordered = 1;
	if (!t->kept || s->stack_id != t->prev_stack) {
		uint32_t key[2] = { s->thread_idx, s->stack_id };
		int is_new = 0;
		if (ana_keymap_get(c->seen, key, 2, &is_new) < 0 ||
		    (is_new && GT_GROW(c->pairs.v, c->pairs.cap, c->pairs.n + 2) < 0)) {
			c->rc = GTT_ENOMEM;
			return;
		}
		if (is_new) {
			c->pairs.v[c->pairs.n++] = s->thread_idx;
			c->pairs.v[c->pairs.n++] = s->stack_id;
		}
	}
	t->kept = 1;
	t->last_ns = s->time_ns;
	t->prev_stack = s->stack_id;
	ss_ent e = { s->time_ns, s->weight_ns, s->stack_id, 0 };
	int rc = ana_spill_add(c->spill, s->thread_idx, &e);
	if (rc < 0)
		c->rc = rc;
}

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
 * next idle time). *end: where the cursor ends. 0 or GTT_EIO/GTT_ENOMEM (the spill's). */
static int thread_runs(ana_json *j, const ana_model *m, ana_sscope *c, uint32_t t, uint64_t origin,
                       const uint32_t *frame_idx, int weights, uint64_t *end)
{
	uint64_t cursor = origin, run = 0;
	uint32_t prev = UINT32_MAX;
	ana_spill_iter it;
	int rc = ana_spill_iter_begin(c->spill, t, &it);
	while (rc == 0) {
		const void *p = NULL;
		int k = ana_spill_iter_next(&it, &p);
		if (k < 0) {
			rc = k;
			break;
		}
		const ss_ent *s = k ? p : NULL;
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
					for (uint32_t f = 0; f < st->n; f++)
						if (st->frames[f] < m->frames.n)
							ana_json_u64(j, frame_idx[st->frames[f]] - 1);
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
	ana_spill_iter_end(&it);
	if (rc < 0)
		c->rc = rc;
	*end = cursor;
	return rc;
}

/* The frames of the kept stacks, numbered in order of first use: thread by thread (the model's
 * order), each thread's stacks in the order it first used them. frame_idx: model frame id ->
 * speedscope index + 1; order: the reverse. The number used, or GTT_ENOMEM. */
static int64_t number_frames(const ana_model *m, const ana_sscope *c, uint32_t *frame_idx, uint32_t *order)
{
	size_t n_pairs = c->pairs.n / 2;
	size_t *at = calloc(c->n_th + 1, sizeof(*at));
	uint32_t *by_thread = malloc((n_pairs + 1) * sizeof(*by_thread));
	int64_t n_used = GTT_ENOMEM;
	if (!at || !by_thread)
		goto out;
	/* the pairs grouped by thread, each group in order of first use (a counting sort) */
	for (size_t i = 0; i < n_pairs; i++)
		at[c->pairs.v[2 * i] + 1]++;
	for (size_t t = 0; t < c->n_th; t++)
		at[t + 1] += at[t];
	for (size_t i = 0; i < n_pairs; i++)
		by_thread[at[c->pairs.v[2 * i]]++] = c->pairs.v[2 * i + 1];
	n_used = 0;
	for (size_t i = 0; i < n_pairs; i++) {
		const ana_stack *st = &m->stacks.v[by_thread[i]];
		for (uint32_t k = 0; k < st->n; k++) {
			uint32_t f = st->frames[k];
			if (f < m->frames.n && !frame_idx[f]) {
				order[n_used] = f;
				frame_idx[f] = (uint32_t)++n_used;
			}
		}
	}
out:
	free(at);
	free(by_thread);
	return n_used;
}

int ana_sscope_write(ana_sscope *c, const ana_model *m, FILE *out)
{
	int rc = c->rc < 0 ? c->rc : GTT_ENOMEM;
	uint32_t *frame_idx = NULL;     /* model frame id -> speedscope index + 1 */
	uint32_t *order = NULL;         /* speedscope index -> model frame id */
	ana_json *j = NULL;
	int64_t n_used = 0;

	if (c->rc < 0)
		goto out;
	frame_idx = calloc(m->frames.n + 1, sizeof(*frame_idx));
	order = malloc((m->frames.n + 1) * sizeof(*order));
	if (!frame_idx || !order || (n_used = number_frames(m, c, frame_idx, order)) < 0)
		goto out;
	if (!(j = ana_json_create(out)))
		goto out;
	const char *cmd = ana_meta_get(m, "command");
	char title[256];
	snprintf(title, sizeof(title), "%s", cmd ? cmd : (m->path ? m->path : "trace"));
	/* The busiest thread opens first. */
	size_t active = 0, n_prof = 0;
	uint64_t best = 0;
	for (size_t t = 0; t < c->n_th && t < m->threads.n; t++) {
		if (!c->th[t].kept)
			continue;
		if (n_prof == 0 || m->threads.v[t].sampled_ns > best) {
			active = n_prof;
			best = m->threads.v[t].sampled_ns;
		}
		n_prof++;
	}

	/* every profile on one axis: from the recording's start, or the first sample's period */
	uint64_t origin = c->min_from < m->start_ns ? c->min_from : m->start_ns;
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
	for (int64_t k = 0; k < n_used; k++) {
		ana_json_newline(j);
		write_frame(j, &m->frames.v[order[k]]);
	}
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	ana_json_newline(j);
	ana_json_key(j, "profiles");
	ana_json_arr_begin(j);
	for (size_t t = 0; t < c->n_th && t < m->threads.n; t++) {
		if (!c->th[t].kept)
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
		uint64_t end = 0;
		if ((rc = thread_runs(j, m, c, (uint32_t)t, origin, frame_idx, 0, &end)) < 0)
			goto out;
		ana_json_arr_end(j);
		ana_json_key(j, "weights");
		ana_json_arr_begin(j);
		if ((rc = thread_runs(j, m, c, (uint32_t)t, origin, frame_idx, 1, &end)) < 0)
			goto out;
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
	return rc;
}

int ana_export_speedscope(const ana_model *m, const ana_export_opts *o, FILE *out)
{
	ana_sscope *c = ana_sscope_new(o ? o->gil : -1, 0);
	if (!c)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->samples.n; i++)
		ana_sscope_sample(c, m, &m->samples.v[i]);
	int rc = ana_sscope_write(c, m, out);
	ana_sscope_free(c);
	return rc;
}
