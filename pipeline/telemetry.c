/* telemetry.c — series statistics and the ground-truth JSON file of a pipeline run. */
#include "telemetry.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t pl_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The whole process's CPU since it started (start-up, CUDA initialisation and every thread,
 * also those outside the workers): what a profiler's per-process CPU is compared with. */
static int64_t process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int pl_series_add(pl_series *s, int64_t v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		int64_t *nv = realloc(s->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

void pl_series_free(pl_series *s)
{
	free(s->v);
	*s = (pl_series){ 0 };
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t rank(const int64_t *sorted, size_t n, double pct)
{
	size_t r = (size_t)ceil(pct / 100.0 * (double)n);
	return sorted[r ? r - 1 : 0];
}

void pl_series_stats(const pl_series *const *series, size_t n_series, pl_stats *out)
{
	size_t n = 0, at = 0;
	int64_t *all = NULL;

	*out = (pl_stats){ 0 };
	for (size_t i = 0; i < n_series; i++)
		n += series[i]->n;
	if (n == 0)
		return;
	all = malloc(n * sizeof *all);
	for (size_t i = 0; i < n_series; i++)
		for (size_t j = 0; j < series[i]->n; j++) {
			int64_t v = series[i]->v[j];
			out->total_ns += v;
			if (v > out->max_ns)
				out->max_ns = v;
			if (all)
				all[at++] = v;
		}
	out->count = (int64_t)n;
	out->mean_ns = out->total_ns / (int64_t)n;
	if (all) {
		qsort(all, n, sizeof *all, cmp_i64);
		out->p50_ns = rank(all, n, 50);
		out->p99_ns = rank(all, n, 99);
	} else { /* out of memory: say so with impossible values rather than invent them */
		out->p50_ns = out->p99_ns = -1;
	}
	free(all);
}

/* ---- a small JSON writer: keys and commas, nothing more ---- */
typedef struct jw {
	FILE *f;
	int depth;
	int first[16];
} jw;

static void jw_sep(jw *j, const char *key)
{
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->f);
		j->first[j->depth] = 0;
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	}
	if (key)
		fprintf(j->f, "\"%s\": ", key); /* keys are our own identifiers: no escaping needed */
}

static void jw_open(jw *j, const char *key, char c)
{
	jw_sep(j, key);
	fputc(c, j->f);
	if (j->depth < 15)
		j->depth++;
	j->first[j->depth] = 1;
}

static void jw_close(jw *j, char c)
{
	int empty = j->first[j->depth];
	j->depth--;
	if (!empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(c, j->f);
}

static void jw_int(jw *j, const char *key, int64_t v)
{
	jw_sep(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

static void jw_num(jw *j, const char *key, double v)
{
	jw_sep(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.9g", v);
	else
		fputs("null", j->f);
}

static void jw_str(jw *j, const char *key, const char *s)
{
	jw_sep(j, key);
	fputc('"', j->f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

static void write_stats(jw *j, const char *key, const pl_stats *s)
{
	jw_open(j, key, '{');
	jw_int(j, "count", s->count);
	jw_int(j, "total_ns", s->total_ns);
	jw_int(j, "mean_ns", s->mean_ns);
	jw_int(j, "p50_ns", s->p50_ns);
	jw_int(j, "p99_ns", s->p99_ns);
	jw_int(j, "max_ns", s->max_ns);
	jw_close(j, '}');
}

static void write_config(jw *j, const pl_config *c)
{
	jw_open(j, "config", '{');
	jw_str(j, "backend", c->backend);
	jw_int(j, "targets", c->targets);
	jw_int(j, "drafters", c->drafters);
	jw_int(j, "queue_depth", c->queue_depth);
	jw_int(j, "min_ready", c->min_ready);
	jw_int(j, "sync_every", c->sync_every);
	jw_str(j, "alloc", c->alloc_cached ? "cached" : "churn");
	jw_int(j, "steps", c->steps);
	jw_num(j, "seconds", c->seconds);
	jw_int(j, "hidden", c->hidden);
	jw_int(j, "layers", c->layers);
	jw_int(j, "seq_min", c->seq_min);
	jw_int(j, "seq_max", c->seq_max);
	jw_int(j, "batch", c->batch);
	jw_int(j, "chunk", c->chunk);
	jw_int(j, "seed", c->seed);
	jw_num(j, "python_work_ms", c->python_work_ms);
	jw_int(j, "sample_ms", c->sample_ms);
	jw_open(j, "gpus", '[');
	for (int i = 0; i < c->n_gpus; i++)
		jw_int(j, NULL, c->gpus[i]);
	jw_close(j, ']');
	jw_close(j, '}');
}

static void write_launches(jw *j, const char *key, const int64_t *counts)
{
	jw_open(j, key, '{');
	for (int k = 0; k < KN_COUNT; k++)
		jw_int(j, kn_kernel_name(k), counts[k]);
	jw_close(j, '}');
}

static void write_thread(jw *j, const pl_telemetry *t, const pl_thread_rec *r)
{
	int is_python = t->driver && strcmp(t->driver, "python") == 0;
	int64_t outside = r->cpu_ns - r->cpu_native_ns;
	pl_stats st;

	jw_open(j, NULL, '{');
	jw_str(j, "name", r->name);
	jw_int(j, "tid", r->tid);
	jw_str(j, "role", r->role);
	jw_int(j, "index", r->index);
	jw_int(j, "device", r->device);
	jw_int(j, "start_ns", r->start_ns);
	jw_int(j, "end_ns", r->end_ns);
	jw_int(j, "wall_ns", r->end_ns - r->start_ns);
	jw_int(j, "cpu_ns", r->cpu_ns);
	jw_int(j, "cpu_native_ns", r->cpu_native_ns);
	jw_int(j, "cpu_python_ns", is_python ? (outside > 0 ? outside : 0) : 0);
	jw_int(j, "cpu_outside_ns", outside > 0 ? outside : 0);
	jw_int(j, "cpu_python_work_ns", r->cpu_python_work_ns);
	jw_int(j, "python_wall_ns", r->python_wall_ns);
	jw_int(j, "steps", r->steps);
	jw_int(j, "tokens", r->tokens);
	if (r->loss_reads > 0)
		jw_num(j, "last_loss", r->last_loss);
	jw_int(j, "loss_reads", r->loss_reads);
	write_launches(j, "launches", r->launches);
	jw_open(j, "alloc", '{');
	jw_int(j, "requests", r->alloc.requests);
	jw_int(j, "raw_allocs", r->alloc.raw_allocs);
	jw_int(j, "raw_frees", r->alloc.raw_frees);
	jw_int(j, "cache_hits", r->alloc.cache_hits);
	jw_int(j, "peak_reserved_bytes", r->alloc.peak_reserved_bytes);
	jw_close(j, '}');
	jw_open(j, "phases", '{');
	for (int p = 0; p < r->n_phases; p++) {
		const pl_series *s = &r->phase_ns[p];
		pl_series_stats(&s, 1, &st);
		write_stats(j, r->phase_names[p], &st);
	}
	jw_close(j, '}');
	const pl_series *s = &r->step_ns;
	pl_series_stats(&s, 1, &st);
	write_stats(j, "step", &st);
	jw_close(j, '}');
}

/* Phase statistics over every thread of one role. */
static void write_role_phases(jw *j, const pl_telemetry *t, const char *role)
{
	const pl_series *list[256];
	const pl_thread_rec *first = NULL;
	pl_stats st;
	size_t n;

	for (int i = 0; i < t->n_threads && !first; i++)
		if (strcmp(t->threads[i]->role, role) == 0)
			first = t->threads[i];
	if (!first)
		return;
	jw_open(j, role, '{');
	for (int p = 0; p <= first->n_phases; p++) {
		n = 0;
		for (int i = 0; i < t->n_threads && n < 256; i++)
			if (strcmp(t->threads[i]->role, role) == 0)
				list[n++] = p < first->n_phases ? &t->threads[i]->phase_ns[p] : &t->threads[i]->step_ns;
		pl_series_stats(list, n, &st);
		write_stats(j, p < first->n_phases ? first->phase_names[p] : "step", &st);
	}
	jw_close(j, '}');
}

int pl_telemetry_write(const char *path, const pl_telemetry *t, char *err, size_t errlen)
{
	int rc = 0;
	int64_t total[KN_COUNT] = { 0 }, all = 0;
	const pl_queue_stats *q = &t->queue;
	FILE *f = fopen(path, "w");
	jw j = { .f = f };

	if (!f) {
		snprintf(err, errlen, "cannot write telemetry %s: %s", path, strerror(errno));
		return PL_EIO;
	}
	jw_open(&j, NULL, '{');
	jw_str(&j, "format", "gt-pipeline-telemetry");
	jw_int(&j, "format_version", 1);
#ifdef GT_VERSION
	jw_str(&j, "tool_version", GT_VERSION);
#endif
	jw_str(&j, "driver", t->driver);
	jw_str(&j, "driver_detail", t->driver_detail);
	jw_str(&j, "backend", t->cfg->backend);
	jw_int(&j, "pid", t->pid);
	jw_str(&j, "clock", "CLOCK_MONOTONIC");
	jw_int(&j, "start_ns", t->start_ns);
	jw_int(&j, "end_ns", t->end_ns);
	jw_int(&j, "wall_ns", t->end_ns - t->start_ns);
	jw_int(&j, "process_cpu_ns", process_cpu_ns());
	jw_str(&j, "error", t->error);
	write_config(&j, t->cfg);

	jw_open(&j, "tokens", '{');
	jw_int(&j, "produced", t->tokens_produced);
	jw_int(&j, "consumed", t->tokens_consumed);
	jw_num(&j, "per_s", t->tokens_per_s);
	jw_close(&j, '}');

	jw_open(&j, "queue", '{');
	jw_int(&j, "depth", q->depth);
	jw_int(&j, "min_ready", q->min_ready);
	jw_int(&j, "puts", q->puts);
	jw_int(&j, "gets", q->gets);
	jw_num(&j, "mean", q->mean);
	jw_int(&j, "min", q->min_seen);
	jw_int(&j, "max", q->max_seen);
	jw_int(&j, "observed_ns", q->observed_ns);
	jw_int(&j, "at_or_below_min_ready_ns", q->at_or_below_ns);
	jw_num(&j, "pct_time_at_or_below_min_ready",
	       q->observed_ns > 0 ? 100.0 * (double)q->at_or_below_ns / (double)q->observed_ns : 0.0);
	jw_int(&j, "producer_wait_ns", q->producer_wait_ns);
	jw_int(&j, "consumer_wait_ns", q->consumer_wait_ns);
	jw_int(&j, "sample_interval_ns", q->sample_interval_ns);
	jw_open(&j, "samples", '[');
	for (size_t i = 0; i < q->n_samples; i++) {
		jw_sep(&j, NULL);
		fprintf(f, "[%lld, %d]", (long long)q->sample_t_ns[i], q->sample_depth[i]);
	}
	jw_close(&j, ']');
	jw_close(&j, '}');

	for (int i = 0; i < t->n_threads; i++)
		for (int k = 0; k < KN_COUNT; k++)
			total[k] += t->threads[i]->launches[k];
	for (int k = 0; k < KN_COUNT; k++)
		all += total[k];
	jw_open(&j, "kernels", '{');
	jw_str(&j, "kind", t->launch_kind);
	jw_int(&j, "total", all);
	write_launches(&j, "launches", total);
	jw_close(&j, '}');

	jw_open(&j, "phases", '{');
	write_role_phases(&j, t, "target");
	write_role_phases(&j, t, "drafter");
	jw_close(&j, '}');

	jw_open(&j, "threads", '[');
	for (int i = 0; i < t->n_threads; i++)
		write_thread(&j, t, t->threads[i]);
	jw_close(&j, ']');
	jw_close(&j, '}');
	fputc('\n', f);
	if (ferror(f))
		rc = PL_EIO;
	if (fclose(f) != 0)
		rc = PL_EIO;
	if (rc)
		snprintf(err, errlen, "cannot write telemetry %s: %s", path, strerror(errno));
	return rc;
}
