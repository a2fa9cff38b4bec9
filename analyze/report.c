/* report.c — `gt-analyze report`: recording summary, per-thread table, top self/total
 * functions; then the sampler-health, Python and GPU sections. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bounds.h"
#include "captured.h"
#include "cli.h"
#include "counter_sum.h"
#include "gpu.h"
#include "gpu_sum.h"
#include "health.h"
#include "model_priv.h"
#include "python.h"
#include "report.h"
#include "sample_sum.h"
#include "procs.h"
#include "swcover.h"
#include "gt_termsafe.h"

void ana_report_opts_init(ana_report_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->top_n = 20;
}

uint64_t ana_duration_ns(const ana_model *m)
{
	/* under capture control, rates and CPU % are over the captured time (captured.h) */
	uint64_t d = ana_captured_ns(m, NULL);
	return d ? d : 1;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t ana_sample_period_ns(const ana_model *m)
{
	uint64_t period = ana_config_period_ns(m);
	if (period)
		return period;
	/* the median weight of every (n / k)-th sample, k = min(n, ANA_SSUM_PICKS) */
	const ana_sample_sum *ss = ana_sample_sum_of(m);
	if (!ss || !ss->picks.n)
		return 0;
	size_t n = ss->picks.n;
	uint64_t *w = malloc(n * sizeof(*w));
	if (!w)
		return 0;
	memcpy(w, ss->picks.v, n * sizeof(*w));
	qsort(w, n, sizeof(*w), u64_cmp);
	period = w[n / 2];
	free(w);
	return period;
}

/* ---- functions: frames grouped by (name, module) ---- */

typedef struct func {
	const char *name, *module;
	uint8_t kind;
	uint64_t self, total;
	uint64_t stamp;
} func;

typedef struct funcs {
	ANA_VEC(func) v;
	ana_idtable table;
	uint32_t *of_frame;   /* frame id -> func id */
} funcs;

static int func_eq(uint32_t id, const void *key, void *ctx)
{
	const func *a = &((funcs *)ctx)->v.v[id];
	const ana_frame *f = key;
	return a->name == f->name && a->module == f->module;
}

static int funcs_build(const ana_model *m, funcs *F)
{
	memset(F, 0, sizeof(*F));
	F->of_frame = malloc((m->frames.n ? m->frames.n : 1) * sizeof(uint32_t));
	if (!F->of_frame)
		return -1;
	for (size_t i = 0; i < m->frames.n; i++) {
		const ana_frame *f = &m->frames.v[i];
		uint64_t h = ana_hash_u64((uint64_t)(uintptr_t)f->name * 31 + (uint64_t)(uintptr_t)f->module);
		uint32_t *slot = ana_idtable_slot(&F->table, h, func_eq, f, F);
		if (!slot)
			return -1;
		if (!*slot) {
			func *e = ana_vec_push(F->v);
			if (!e)
				return -1;
			e->name = f->name;
			e->module = f->module;
			e->kind = f->kind;
			e->stamp = UINT64_MAX;
			*slot = (uint32_t)F->v.n;
			F->table.n++;
		}
		F->of_frame[i] = *slot - 1;
	}
	return 0;
}

static void funcs_free(funcs *F)
{
	free(F->v.v);
	free(F->of_frame);
	ana_idtable_free(&F->table);
}

typedef struct func_rank { const func *f; uint64_t n; } func_rank;

static int rank_cmp(const void *a, const void *b)
{
	const func_rank *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	int c = strcmp(x->f->name, y->f->name);
	if (c)
		return c;
	return strcmp(x->f->module ? x->f->module : "", y->f->module ? y->f->module : "");
}

static void print_top(FILE *out, const char *title, const funcs *F, int self, uint64_t total, int top_n)
{
	func_rank *r = malloc((F->v.n ? F->v.n : 1) * sizeof(*r));
	if (!r)
		return;
	size_t n = 0;
	for (size_t i = 0; i < F->v.n; i++) {
		uint64_t c = self ? F->v.v[i].self : F->v.v[i].total;
		if (c)
			r[n++] = (func_rank){ &F->v.v[i], c };
	}
	qsort(r, n, sizeof(*r), rank_cmp);
	fprintf(out, "\n%s\n", title);
	fprintf(out, "  %8s  %6s  %s\n", "SAMPLES", "%", "FUNCTION (MODULE)");
	for (size_t i = 0; i < n && i < (size_t)top_n; i++) {
		fprintf(out, "  %8" PRIu64 "  %5.1f%%  %s", r[i].n, 100.0 * (double)r[i].n / (double)(total ? total : 1),
		        r[i].f->name);
		if (r[i].f->module)
			fprintf(out, " (%s)", r[i].f->module);
		fputc('\n', out);
	}
	if (n == 0)
		fprintf(out, "  (no samples)\n");
	free(r);
}

/* ---- threads ---- */

typedef struct pair { uint32_t thread, fn; uint64_t n; } pair;

static int pair_cmp(const void *a, const void *b)
{
	const pair *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static int thread_rank_cmp(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const ana_thread *x = &m->threads.v[*(const uint32_t *)a], *y = &m->threads.v[*(const uint32_t *)b];
	if (x->n_samples != y->n_samples)
		return x->n_samples > y->n_samples ? -1 : 1;
	if (x->cpu_ns != y->cpu_ns)
		return x->cpu_ns > y->cpu_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* For each thread, the function with the most self samples (ties: first by name). */
static int hottest_per_thread(const ana_model *m, const funcs *F, uint32_t *hot)
{
	const ana_sample_sum *ss = ana_sample_sum_of(m);
	if (!ss)
		return -1;
	size_t n = ss->rows.n;
	pair *p = malloc((n ? n : 1) * sizeof(*p));
	if (!p)
		return -1;
	for (size_t i = 0; i < m->threads.n; i++)
		hot[i] = UINT32_MAX;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const ana_ssum_row *r = &ss->rows.v[i];
		const ana_stack *st = &m->stacks.v[r->stack_id];
		if (st->n)
			p[k++] = (pair){ r->thread_idx, F->of_frame[st->frames[st->n - 1]], r->n };
	}
	qsort(p, k, sizeof(*p), pair_cmp);
	uint64_t best_n = 0;
	for (size_t i = 0; i < k;) {
		size_t j = i;
		uint64_t c = 0;
		while (j < k && p[j].thread == p[i].thread && p[j].fn == p[i].fn)
			c += p[j++].n;
		uint32_t t = p[i].thread;
		if (i == 0 || p[i - 1].thread != t)
			best_n = 0;
		if (c > best_n || (c == best_n && hot[t] != UINT32_MAX &&
		                   strcmp(F->v.v[p[i].fn].name, F->v.v[hot[t]].name) < 0)) {
			best_n = c;
			hot[t] = p[i].fn;
		}
		i = j;
	}
	free(p);
	return 0;
}

static void print_threads(FILE *out, const ana_model *m, const funcs *F, int top_n)
{
	uint64_t dur = ana_duration_ns(m), total = ana_model_n_samples(m);
	uint32_t *order = malloc((m->threads.n ? m->threads.n : 1) * sizeof(*order));
	uint32_t *hot = malloc((m->threads.n ? m->threads.n : 1) * sizeof(*hot));
	if (!order || !hot || hottest_per_thread(m, F, hot) < 0) {
		free(order);
		free(hot);
		return;
	}
	size_t n = 0, idle = 0;
	for (size_t i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		/* threads that were sampled or used at least 0.5% of a CPU (short-lived helpers of a
		 * launcher script would bury the ones that matter) */
		uint64_t cpu = t->cpu_ns > t->oncpu_ns ? t->cpu_ns : t->oncpu_ns;
		if (t->n_samples || ana_sat_mul(cpu, 200) >= dur)
			order[n++] = (uint32_t)i;
		else
			idle++;
	}
	qsort_r(order, n, sizeof(*order), thread_rank_cmp, (void *)m);
	fprintf(out, "\nThreads (CPU%% = %% of one CPU over the recording; \"-\" = not recorded)\n");
	fprintf(out, "  %7s %7s  %-16s %8s %7s %8s %8s %8s  %s\n", "PID", "TID", "NAME", "SAMPLES", "%TOTAL",
	        "CPU%smp", "CPU%proc", "ONCPU_S", "HOTTEST SELF");
	size_t shown = 0, limit = (size_t)(top_n > 0 ? top_n : 20) * 2;
	for (size_t i = 0; i < n; i++) {
		const ana_thread *t = &m->threads.v[order[i]];
		if (shown == limit)
			break;
		shown++;
		char proc[16] = "-", on[16] = "-";
		if (t->cpu_known)
			snprintf(proc, sizeof(proc), "%.1f", 100.0 * (double)t->cpu_ns / (double)dur);
		if (t->oncpu_known)
			snprintf(on, sizeof(on), "%.3f", gt_ns_to_s(t->oncpu_ns));
		fprintf(out, "  %7u %7u  %-16s %8" PRIu64 " %6.1f%% %8.1f %8s %8s  %s\n", t->pid, t->tid,
		        t->name ? t->name : "?", t->n_samples,
		        100.0 * (double)t->n_samples / (double)(total ? total : 1),
		        100.0 * (double)t->sampled_ns / (double)dur, proc, on,
		        hot[order[i]] == UINT32_MAX ? "-" : F->v.v[hot[order[i]]].name);
	}
	if (n > shown)
		fprintf(out, "  (%zu more threads with less activity)\n", n - shown);
	if (ana_swcover_partial(m))
		fprintf(out, "  (ONCPU_S \"-\": context switches recorded over only part of the time; see Sampler health)\n");
	if (idle)
		fprintf(out, "  (%zu thread%s without samples and below 0.5%% CPU not shown)\n", idle, idle == 1 ? "" : "s");
	free(order);
	free(hot);
}

/* ---- header ---- */

static const char *end_reason(const ana_model *m, char *buf, size_t cap)
{
	if (!m->has_end)
		return "no end record (the recording was interrupted)";
	switch (m->end.reason) {
	case GTT_END_TARGET_EXIT: {
		int st = m->end.status;
		if ((st & 0x7f) == 0)
			snprintf(buf, cap, "target exited with status %d", (st >> 8) & 0xff);
		else
			snprintf(buf, cap, "target killed by signal %d", st & 0x7f);
		return buf;
	}
	case GTT_END_DURATION: return "duration elapsed";
	case GTT_END_SIGNAL: return "recorder stopped by a signal";
	case GTT_END_DETACH: return "detached";
	case GTT_END_ERROR: return "recorder error";
	case GTT_END_MAX_SIZE: return "--max-size reached";
	case GTT_END_SNAPSHOT: return "window written on SIGUSR2; the recording went on";
	}
	return "unknown";
}

static void print_header(FILE *out, const ana_model *m)
{
	char buf[128];
	const char *cmd = ana_meta_get(m, "command");
	if (!cmd && m->processes.n)
		cmd = m->processes.v[0].comm;
	const char *p = strrchr(m->path, '/');
	fprintf(out, "gt-analyze report: %s\n", p ? p + 1 : m->path);
	fprintf(out, "command:   %s\n", cmd ? cmd : "?");
	const char *mode = ana_meta_get(m, "mode"), *cg = ana_meta_get(m, "call_graph");
	const char *hz = ana_meta_get(m, "frequency_hz"), *host = ana_meta_get(m, "hostname");
	fprintf(out, "recording: %s, %s Hz, call graph %s%s%s\n", mode ? mode : "?", hz ? hz : "?", cg ? cg : "?",
	        host ? ", host " : "", host ? host : "");
	uint64_t dur = ana_duration_ns(m);
	if (ana_capture_controlled(m)) {
		/* what was captured, with the run's whole length and the rule beside it */
		size_t n_iv = 0;
		const char *rule = ana_meta_get(m, "capture");
		ana_captured_ns(m, &n_iv);
		fprintf(out, "duration:  %.3f s captured (%zu interval%s) of a %.3f s run; capture: %s (%s)\n",
		        gt_ns_to_s(dur), n_iv, n_iv == 1 ? "" : "s", gt_ns_to_s(ana_run_ns(m)),
		        rule && rule[0] ? rule : "?", end_reason(m, buf, sizeof(buf)));
	} else {
		fprintf(out, "duration:  %.3f s (%s)\n", gt_ns_to_s(dur), end_reason(m, buf, sizeof(buf)));
	}
	if (m->window.on) {
		/* --from/--to: every figure below is the window's */
		const ana_window *w = &m->window;
		fprintf(out, "window:    %.3f s .. %.3f s of the recording (--from/--to: only its records; CPU%%proc "
		        "counts from the /proc reading before it, within one reading period)\n",
		        gt_ns_to_s(w->from_ns - w->origin_ns), gt_ns_to_s(m->end_ns - w->origin_ns));
	}
	/* times below are relative to this start on the recording host's CLOCK_MONOTONIC */
	fprintf(out, "start:     %" PRIu64 ".%09" PRIu64 " s CLOCK_MONOTONIC\n", (uint64_t)(m->start_ns / GT_NS_PER_SEC),
	        (uint64_t)(m->start_ns % GT_NS_PER_SEC));
	uint64_t period = ana_sample_period_ns(m), n_samples = ana_model_n_samples(m);
	fprintf(out, "samples:   %" PRIu64 " (%.1f/s", n_samples, (double)n_samples * (double)GT_NS_PER_SEC / (double)dur);
	if (period)
		fprintf(out, "; sampling rate %.1f Hz per thread", (double)GT_NS_PER_SEC / (double)period);
	fprintf(out, ")\n");
	size_t n_proc = 0;
	for (size_t i = 0; i < m->threads.n; i++)
		if (i == 0 || m->threads.v[i].pid != m->threads.v[i - 1].pid)
			n_proc++;
	fprintf(out, "threads:   %zu in %zu process%s\n", m->threads.n, n_proc, n_proc == 1 ? "" : "es");
	fprintf(out, "format:    %u.%u", m->version_major, m->version_minor);
	if (m->n_archive_bytes)
		fprintf(out, ", embedded symbols %.1f MiB", (double)m->n_archive_bytes / (1024.0 * 1024.0));
	fputc('\n', out);
	if (m->truncated)
		fprintf(out, "NOTE: the trace is cut off; everything below covers the recording up to the cut.\n");
}

static void print_symbols(FILE *out, const ana_model *m)
{
	const ana_priv *p = m->priv;
	if (!p || !p->sym_stats.n_files)
		return;
	const ana_sym_stats *st = &p->sym_stats;
	fprintf(out, "\nSymbols: %" PRIu64 " binaries hit by samples: %" PRIu64 " from the embedded archive, %" PRIu64
	        " from --symfs, %" PRIu64 " from /usr/lib/debug, %" PRIu64 " from their original path, %" PRIu64
	        " not found\n",
	        st->n_files, st->n_from_archive, st->n_from_symfs, st->n_from_debugdir, st->n_from_path, st->n_missing);
	if (st->n_mismatch)
		fprintf(out, "  %" PRIu64 " file(s) on disk had a different build-id and were not used\n", st->n_mismatch);
	for (size_t i = 0; i < p->missing.n; i++)
		fprintf(out, "  %s\n", p->missing.v[i]);
}

int ana_report(const ana_model *m, const ana_report_opts *o, FILE *out)
{
	ana_report_opts def;
	if (!o) {
		ana_report_opts_init(&def);
		o = &def;
	}
	funcs F;
	ana_gpu_sum_forget(m);    /* made again from the arrays as they are now (unless streamed) */
	ana_sample_sum_forget(m);
	const ana_sample_sum *ss = ana_sample_sum_of(m);
	uint64_t *per_stack = calloc(m->stacks.n ? m->stacks.n : 1, sizeof(uint64_t));
	if (!ss || !per_stack || funcs_build(m, &F) < 0) {
		free(per_stack);
		return GTT_ENOMEM;
	}
	for (size_t i = 0; i < ss->rows.n; i++)
		per_stack[ss->rows.v[i].stack_id] += ss->rows.v[i].n;
	for (size_t s = 0; s < m->stacks.n; s++) {
		const ana_stack *st = &m->stacks.v[s];
		if (!per_stack[s] || !st->n)
			continue;
		F.v.v[F.of_frame[st->frames[st->n - 1]]].self += per_stack[s];
		for (uint32_t i = 0; i < st->n; i++) {
			func *f = &F.v.v[F.of_frame[st->frames[i]]];
			if (f->stamp == s)
				continue; /* recursion: count a function once per stack */
			f->stamp = s;
			f->total += per_stack[s];
		}
	}
	print_header(out, m);
	ana_procs_report(m, out, o->top_n);
	print_threads(out, m, &F, o->top_n);
	print_top(out, "Top functions by self samples", &F, 1, ss->n_samples, o->top_n);
	print_top(out, "Top functions by total samples (self + callees)", &F, 0, ss->n_samples, o->top_n);
	print_symbols(out, m);
	ana_health_report(m, out, o->top_n);
	ana_python_report(m, out);
	ana_gpu_report(m, out, o->top_n);
	ana_counters_report(m, out);
	funcs_free(&F);
	free(per_stack);
	return ferror(out) ? GTT_EIO : 0;
}

/* ---- the command ---- */

static void report_usage(FILE *out)
{
	fprintf(out, "usage: gt-analyze report [OPTIONS] TRACE\n\n"
	             "Recording summary, per-thread CPU (from samples, /proc and context switches), top\n"
	             "self and total functions, sampler health (intended vs received samples, lost,\n"
	             "throttled, lateness, lag windows), then Python/GIL and GPU sections.\n\n"
	             "  --top N          rows in the function tables (default 20)\n" ANA_CLI_OPTS_HELP
	             "  -h, --help       this help\n");
}

int ana_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		ANA_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	ana_opts o;
	ana_report_opts ro;
	ana_opts_init(&o);
	ana_report_opts_init(&ro);
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hn:", longopts, NULL)) != -1) {
		if ((rc = ana_cli_opt("report", c, optarg, &o)) != 0) {
			if (rc < 0)
				return GT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v <= 0 || v > 100000)
				return ana_cli_usage_error("report", "--top wants a positive number, not '%s'", optarg);
			ro.top_n = (int)v;
			break;
		}
		case 'h':
			report_usage(stdout);
			return GT_EXIT_OK;
		default:
			return ana_cli_usage_error("report", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ana_cli_usage_error("report", optind == argc ? "missing TRACE" : "one TRACE only");
	/* the report keeps no CUDA record, sample, Python read or GIL record: its sections are
	 * aggregates made as they are read */
	o.stream_cuda = ANA_STREAM_CUDA_REPORT;
	o.stream_samples = 1;
	ana_model *m = ana_cli_load(argv[optind], &o, &rc);
	if (!m)
		return rc;
	/* names in the report come from the target: no control character reaches the terminal */
	FILE *out = gt_termsafe_open(stdout);
	int wrc = ana_report(m, &ro, out ? out : stdout);
	if (gt_termsafe_close(out) < 0 || wrc < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "gt-analyze: writing the report failed: %s\n", strerror(errno));
		rc = GT_EXIT_BROKEN;
	}
	ana_model_free(m);
	return rc;
}
