/* health.c — the sampler-health section: did the samples we got represent the CPU time that
 * was really spent? Intended vs received per thread, lost/throttled records, loop lateness
 * distributions (from the recorder's TICKS summaries) and the windows the sampler lagged. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "captured.h"
#include "health.h"
#include "swcover.h"
#include "report.h"
#include "sample_sum.h"

static const char *source_name(uint32_t src)
{
	switch (src) {
	case GTT_SRC_PERF: return "perf sampler";
	case GTT_SRC_PYSTACK: return "Python stacks";
	case GTT_SRC_GIL: return "GIL poll";
	case GTT_SRC_PROCSTAT: return "/proc stats";
	case GTT_SRC_CUPTI: return "CUDA agent";
	case GTT_SRC_WRITER: return "trace writer";
	}
	return "unknown source";
}

/* On-CPU time of a thread: from switch records, else from /proc. 0 and -1 when unknown. */
static int thread_oncpu(const ana_thread *t, uint64_t *ns)
{
	if (t->oncpu_known) {
		*ns = t->oncpu_ns;
		return 0;
	}
	if (t->cpu_known) {
		*ns = t->cpu_ns;
		return 0;
	}
	*ns = 0;
	return -1;
}

/* The intended samples of all threads together. With --scope system the sampling clock is one
 * per CPU, whatever task runs there, so short threads share its periods: 500 children of 2 ms
 * each are owed 1 s x rate between them, not 0 each (the sum of per-thread floors said 4
 * intended for 84 received, "2100 %"). With per-thread events (--scope process) each thread's
 * clock starts afresh and keeps its remainder, so the per-thread floors add up. */
static uint64_t intended_total(const ana_model *m, uint64_t sum_floor, uint64_t sum_on_ns, uint64_t period)
{
	const char *scope = ana_meta_get(m, "scope");
	if (scope && strcmp(scope, "system") == 0)
		return sum_on_ns / period;
	return sum_floor;
}

int ana_health_coverage(const ana_model *m, uint64_t *intended, uint64_t *received)
{
	uint64_t period = ana_sample_period_ns(m), on, sum_on = 0;
	int any = 0;
	*intended = *received = 0;
	if (!period)
		return -1;
	for (size_t i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		if (thread_oncpu(t, &on) < 0)
			continue;
		any = 1;
		*intended = ana_sat_add(*intended, on / period);
		sum_on = ana_sat_add(sum_on, on);
		*received = ana_sat_add(*received, t->n_samples);
	}
	*intended = intended_total(m, *intended, sum_on, period);
	return any ? 0 : -1;
}

static void fmt_ns(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= GT_NS_PER_SEC)
		snprintf(buf, cap, "%.3f s", gt_ns_to_s(ns));
	else if (ns >= GT_NS_PER_MS)
		snprintf(buf, cap, "%.3f ms", (double)ns / (double)GT_NS_PER_MS);
	else
		snprintf(buf, cap, "%.1f us", (double)ns / (double)GT_NS_PER_US);
}

static void print_config(FILE *out, const ana_model *m, uint64_t period)
{
	const gtt_health *cfg = NULL;
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].kind == GTT_HEALTH_CONFIG && m->health.v[i].source == GTT_SRC_PERF)
			cfg = &m->health.v[i];
	char p[32];
	fmt_ns(p, sizeof(p), period);
	fprintf(out, "  perf sampler: %s", period ? "" : "rate unknown");
	if (period)
		fprintf(out, "%.1f Hz (period %s)", (double)GT_NS_PER_SEC / (double)period, p);
	if (cfg && cfg->value[0])
		fprintf(out, ", ring buffer %" PRIu64 " KiB", cfg->value[0] / 1024);
	if (cfg && cfg->value[2])
		fprintf(out, ", stack copy %" PRIu64 " bytes", cfg->value[2]);
	fputc('\n', out);
}

/* Samples short of the on-CPU time with nothing lost, throttled or late: say what the sampling
 * clock cannot see, with the switch rate the /proc readings give. */
static void print_unseen(FILE *out, const ana_model *m)
{
	uint64_t csw = 0, secs_ns = ana_captured_ns(m, NULL);
	for (size_t i = 0; i < m->health.n; i++) {
		uint32_t k = m->health.v[i].kind;
		if (k == GTT_HEALTH_LOST || k == GTT_HEALTH_THROTTLE || k == GTT_HEALTH_LAG_WINDOW)
			return;
	}
	for (size_t i = 0; i < m->threads.n; i++)
		csw = ana_sat_add(csw, m->threads.v[i].n_csw);
	fprintf(out, "  nothing was lost, throttled or late: cpu-clock samples come from a timer interrupt, which "
	        "the kernel holds off while it runs with interrupts off (switching tasks, entering idle), and one "
	        "that comes when the CPU has gone idle is not taken");
	if (csw && secs_ns)
		fprintf(out, "; the threads switched %.0f times a second", (double)csw / gt_ns_to_s(secs_ns));
	fprintf(out, " (docs/RECORD.md, \"Samples received vs intended\")\n");
}

static void print_coverage(FILE *out, const ana_model *m, uint64_t period, int top_n)
{
	uint64_t sum_i = 0, sum_r = 0, sum_on = 0, unknown_samples = 0, on;
	size_t n_unknown = 0, shown = 0, limit = (size_t)(top_n > 0 ? top_n : 20) * 2;
	int any = 0;
	for (size_t i = 0; i < m->threads.n; i++)
		any |= thread_oncpu(&m->threads.v[i], &on) == 0;
	if (!period || !any) {
		fprintf(out, "  intended vs received: unknown (the trace has no %s)\n",
		        period ? "context-switch or /proc CPU records" : "sampling rate");
		return;
	}
	fprintf(out, "  intended samples = on-CPU time (from context switches, else /proc) x rate;"
	        " received = samples in the trace\n");
	if (ana_swcover_partial(m)) {
		char why[512];
		ana_swcover_describe(m, why, sizeof(why));
		fprintf(out, "  %s\n", why);
	}
	fprintf(out, "  %7s  %-16s %9s %9s %9s %7s\n", "TID", "NAME", "ONCPU_S", "INTENDED", "RECEIVED", "RATIO");
	/* threads in (pid, tid) order; a long list is cut after the first rows */
	for (size_t i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		if (thread_oncpu(t, &on) < 0) {
			n_unknown += t->n_samples > 0;
			unknown_samples += t->n_samples;
			continue;
		}
		uint64_t want = on / period;
		sum_i = ana_sat_add(sum_i, want);
		sum_on = ana_sat_add(sum_on, on);
		sum_r = ana_sat_add(sum_r, t->n_samples);
		if (!want && !t->n_samples)
			continue;
		if (shown++ >= limit)
			continue;
		char ratio[16] = "-";
		if (want)
			snprintf(ratio, sizeof(ratio), "%.1f%%", 100.0 * (double)t->n_samples / (double)want);
		fprintf(out, "  %7u  %-16s %9.3f %9" PRIu64 " %9" PRIu64 " %7s%s\n", t->tid, t->name ? t->name : "?",
		        gt_ns_to_s(on), want, t->n_samples, ratio,
		        want >= 10 && ana_sat_mul(t->n_samples, 10) < ana_sat_mul(want, 9) ? "  < 90%" : "");
	}
	if (shown > limit)
		fprintf(out, "  (%zu more threads)\n", shown - limit);
	sum_i = intended_total(m, sum_i, sum_on, period);
	fprintf(out, "  total: %" PRIu64 " intended, %" PRIu64 " received", sum_i, sum_r);
	if (sum_i)
		fprintf(out, " (%.1f%%)", 100.0 * (double)sum_r / (double)sum_i);
	fputc('\n', out);
	if (n_unknown)
		fprintf(out, "  (%" PRIu64 " samples of %zu thread%s without on-CPU records not counted)\n", unknown_samples,
		        n_unknown, n_unknown == 1 ? "" : "s");
	size_t stalls = 0; /* gt-record's stall watch re-armed a CPU's event (record/perf_watch.c) */
	for (size_t i = 0; i < m->health.n; i++)
		stalls += m->health.v[i].kind == GTT_HEALTH_NOTE && m->health.v[i].source == GTT_SRC_PERF &&
		          m->health.v[i].text && strstr(m->health.v[i].text, GTT_NOTE_SAMPLING_STOPPED);
	if (sum_i && ana_sat_mul(sum_r, 10) < ana_sat_mul(sum_i, 9)) {
		fprintf(out, "  WARNING: only %.1f%% of the intended samples arrived: the profile under-represents "
		        "where CPU time went (see lost, throttled and lag below%s)\n",
		        100.0 * (double)sum_r / (double)sum_i, stalls ? ", and the notes of CPUs whose sampling stopped" : "");
		print_unseen(out, m);
	} else if (stalls) {
		fprintf(out, "  WARNING: a CPU's sampling stopped on its own and was re-armed (%zu time%s, notes below): "
		        "samples on it are missing for those stretches\n", stalls, stalls == 1 ? "" : "s");
	}
}

static void print_losses(FILE *out, const ana_model *m)
{
	uint64_t lost[8] = { 0 }, dropped[8] = { 0 }, failed[8] = { 0 }, torn[8] = { 0 };
	uint64_t n_throttle = 0, throttle_ns = 0;
	for (size_t i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		uint32_t src = h->source < 8 ? h->source : 0;
		switch (h->kind) {
		case GTT_HEALTH_LOST: lost[src] = ana_sat_add(lost[src], h->count); break;
		case GTT_HEALTH_DROPPED: dropped[src] = ana_sat_add(dropped[src], h->count); break;
		case GTT_HEALTH_READ_ERRORS:
			failed[src] = ana_sat_add(failed[src], h->value[0]);
			torn[src] = ana_sat_add(torn[src], h->value[1]);
			break;
		case GTT_HEALTH_THROTTLE:
			n_throttle++;
			throttle_ns = ana_sat_add(throttle_ns, ana_span(h->time_ns, h->end_ns));
			break;
		}
	}
	uint64_t total_lost = 0;
	for (int s = 0; s < 8; s++)
		total_lost = ana_sat_add(total_lost, lost[s]);
	char d[32];
	fmt_ns(d, sizeof(d), throttle_ns);
	fprintf(out, "  lost records: %" PRIu64 "; throttled: %" PRIu64 " window%s, %s\n", total_lost, n_throttle,
	        n_throttle == 1 ? "" : "s", d);
	for (int s = 0; s < 8; s++) {
		if (lost[s])
			fprintf(out, "    %s lost %" PRIu64 "\n", source_name((uint32_t)s), lost[s]);
		if (dropped[s])
			fprintf(out, "    %s dropped %" PRIu64 " records\n", source_name((uint32_t)s), dropped[s]);
		if (failed[s] || torn[s])
			fprintf(out, "    %s: %" PRIu64 " failed and %" PRIu64 " torn reads\n", source_name((uint32_t)s),
			        failed[s], torn[s]);
	}
}

static void print_ticks(FILE *out, const ana_model *m)
{
	/* one line per source: its whole-recording summary, else the intervals combined */
	int any = 0;
	for (uint32_t src = 1; src < 8; src++) {
		const gtt_ticks *whole = NULL;
		uint64_t intended = 0, done = 0, late_max = 0, period = 0;
		int seen = 0;
		for (size_t i = 0; i < m->ticks.n; i++) {
			const gtt_ticks *t = &m->ticks.v[i];
			if (t->source != src)
				continue;
			seen = 1;
			if (t->flags & GTT_TICKS_WHOLE) {
				whole = t;
				continue;
			}
			intended = ana_sat_add(intended, t->intended);
			done = ana_sat_add(done, t->done);
			period = t->period_ns;
			if (t->late_max_ns > late_max)
				late_max = t->late_max_ns;
		}
		if (!seen)
			continue;
		if (!any)
			fprintf(out, "  sampling loops: lateness = actual - intended tick time\n"
			        "  %-14s %10s %9s %9s %11s %11s %11s\n", "LOOP", "PERIOD", "INTENDED", "DONE", "LATE p50",
			        "p99", "max");
		any = 1;
		char p[32], a[32], b[32], c[32];
		if (whole) {
			fmt_ns(p, sizeof(p), whole->period_ns);
			fmt_ns(a, sizeof(a), whole->late_p50_ns);
			fmt_ns(b, sizeof(b), whole->late_p99_ns);
			fmt_ns(c, sizeof(c), whole->late_max_ns);
			fprintf(out, "  %-14s %10s %9" PRIu64 " %9" PRIu64 " %11s %11s %11s\n", source_name(src), p,
			        whole->intended, whole->done, a, b, c);
		} else {
			fmt_ns(p, sizeof(p), period);
			fmt_ns(c, sizeof(c), late_max);
			fprintf(out, "  %-14s %10s %9" PRIu64 " %9" PRIu64 " %11s %11s %11s  (no whole-recording summary)\n",
			        source_name(src), p, intended, done, "?", "?", c);
		}
	}
}

typedef struct win { uint64_t start, end, late; uint32_t src; } win;

static int win_cmp(const void *a, const void *b)
{
	const win *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->src < y->src ? -1 : x->src > y->src;
}

static void print_lag_windows(FILE *out, const ana_model *m, int top_n)
{
	size_t n = 0;
	for (size_t i = 0; i < m->health.n; i++)
		n += m->health.v[i].kind == GTT_HEALTH_LAG_WINDOW;
	if (!n) {
		fprintf(out, "  lag windows (behind by more than one period): none\n");
		return;
	}
	win *w = malloc(n * sizeof(*w));
	if (!w)
		return;
	size_t k = 0;
	for (size_t i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		if (h->kind != GTT_HEALTH_LAG_WINDOW)
			continue;
		w[k++] = (win){ h->time_ns, h->end_ns > h->time_ns ? h->end_ns : h->time_ns, h->value[0], h->source };
	}
	qsort(w, k, sizeof(*w), win_cmp);
	/* loops lag together when the whole recorder stalls: count the time any loop was behind once */
	uint64_t behind = 0, cur_s = 0, cur_e = 0;
	for (size_t i = 0; i < k; i++) {
		if (i == 0 || w[i].start > cur_e) {
			behind += cur_e - cur_s;
			cur_s = w[i].start;
			cur_e = w[i].end;
		} else if (w[i].end > cur_e) {
			cur_e = w[i].end;
		}
	}
	behind += cur_e - cur_s;
	char d[32];
	fmt_ns(d, sizeof(d), behind);
	fprintf(out, "  lag windows (a loop behind by more than one period): %zu; some loop was behind for %s\n", k, d);
	size_t limit = (size_t)(top_n > 0 ? top_n : 20);
	for (size_t i = 0; i < k && i < limit; i++) {
		char len[32], late[32];
		fmt_ns(len, sizeof(len), w[i].end - w[i].start);
		fmt_ns(late, sizeof(late), w[i].late);
		fprintf(out, "    %+.3f s .. %+.3f s  %-10s %-14s max late %s\n", ana_rel_s(w[i].start, m->start_ns),
		        ana_rel_s(w[i].end, m->start_ns), len, source_name(w[i].src), late);
	}
	if (k > limit)
		fprintf(out, "    (%zu more)\n", k - limit);
	free(w);
}

/* What to do about stacks truncated for a reason (stack_bytes: the copy's size, 0 unknown). */
static void print_remedy(FILE *out, int why, uint64_t stack_bytes)
{
	switch (why) {
	case ANA_UNWIND_STACK_END:
		if (stack_bytes)
			fprintf(out, "    stack copy too short: the %" PRIu64 "-byte copy of the stack ended before the next "
			        "caller;", stack_bytes);
		else
			fprintf(out, "    stack copy too short: the copy of the stack ended before the next caller;");
		fprintf(out, " record with --call-graph dwarf,65528 (perf's limit). Callers above a single stack frame "
		        "larger than that are found through frame pointers: build that code with "
		        "-fno-omit-frame-pointer (gt-record records the frame-pointer chain with the copy)\n");
		break;
	case ANA_UNWIND_NO_CFI:
		fprintf(out, "    no unwind info: code without CFI or outside every known binary (JIT code, hand-written "
		        "assembly, a binary missing from the trace: see the warnings, --symfs DIR)\n");
		break;
	case ANA_UNWIND_BAD_READ:
		fprintf(out, "    register or memory not in sample: the unwind info needed a value the sample did not "
		        "carry (a corrupted stack, or CFI that describes the code wrongly)\n");
		break;
	case ANA_UNWIND_DEPTH:
		fprintf(out, "    too deep: more frames than the unwinder follows (deep recursion)\n");
		break;
	case ANA_UNWIND_FP_END:
		fprintf(out, "    frame-pointer chain broken: code built without frame pointers ends the chain; record with "
		        "--call-graph dwarf (the default)\n");
		break;
	case ANA_UNWIND_IP_ONLY:
		fprintf(out, "    no stack recorded: the sample carries neither a callchain nor a stack copy\n");
		break;
	}
}

static int trunc_cmp(const void *a, const void *b)
{
	const ana_trunc *x = a, *y = b;
	if (x->n_samples != y->n_samples)
		return x->n_samples > y->n_samples ? -1 : 1;
	if (x->thread_idx != y->thread_idx)
		return x->thread_idx < y->thread_idx ? -1 : 1;
	return x->unwind < y->unwind ? -1 : x->unwind > y->unwind;
}

static void print_unwinding(FILE *out, const ana_model *m, int top_n)
{
	uint64_t n_trunc = 0, n_stitched, n_why[ANA_UNWIND_COUNT] = { 0 }, stack_bytes = 0;
	const ana_sample_sum *ss = ana_sample_sum_of(m);
	if (!ss || !ss->n_samples)
		return;
	for (int u = 0; u < ANA_UNWIND_COUNT; u++)
		n_trunc += ANA_UNWIND_TRUNCATED(u) ? ss->n_unwind[u] : 0;
	n_stitched = ss->n_unwind[ANA_UNWIND_STITCHED];
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].kind == GTT_HEALTH_CONFIG && m->health.v[i].source == GTT_SRC_PERF)
			stack_bytes = m->health.v[i].value[2];
	uint64_t ok = ss->n_samples - n_trunc;
	fprintf(out, "  stacks reaching their root (_start, thread start): %" PRIu64 " of %" PRIu64 " (%.1f%%)", ok,
	        ss->n_samples, 100.0 * (double)ok / (double)ss->n_samples);
	if (n_stitched)
		fprintf(out, "; %" PRIu64 " of them completed from the frame-pointer callchain where the stack copy "
		        "ran out", n_stitched);
	fputc('\n', out);
	if (!n_trunc)
		return;
	fprintf(out, "  truncated stacks: %" PRIu64 " (%.1f%%), under a [truncated] root in folded stacks and flame "
	        "graphs\n", n_trunc, 100.0 * (double)n_trunc / (double)ss->n_samples);
	ana_trunc *rows = malloc(m->truncs.n * sizeof(*rows));
	if (!rows)
		return;
	memcpy(rows, m->truncs.v, m->truncs.n * sizeof(*rows));
	qsort(rows, m->truncs.n, sizeof(*rows), trunc_cmp);
	size_t limit = (size_t)(top_n > 0 ? top_n : 20);
	fprintf(out, "  %7s  %-16s %9s %6s  %-34s %s\n", "TID", "NAME", "TRUNCATED", "OF_THR", "STOPPED AT", "WHY");
	for (size_t i = 0; i < m->truncs.n; i++) {
		const ana_trunc *r = &rows[i];
		n_why[r->unwind < ANA_UNWIND_COUNT ? r->unwind : 0] += r->n_samples;
		if (i >= limit)
			continue;
		const ana_thread *t = &m->threads.v[r->thread_idx];
		char at[300] = "-";
		if (r->frame != ANA_NO_ID) {
			const ana_frame *f = &m->frames.v[r->frame];
			if (f->module && f->module[0] && f->name[0] != '[') /* "[lib.so+0x10]" names it already */
				snprintf(at, sizeof(at), "%s (%s)", f->name, f->module);
			else
				snprintf(at, sizeof(at), "%s", f->name);
		}
		fprintf(out, "  %7u  %-16s %9" PRIu64 " %5.1f%%  %-34s %s\n", t->tid, t->name ? t->name : "?", r->n_samples,
		        t->n_samples ? 100.0 * (double)r->n_samples / (double)t->n_samples : 0.0, at,
		        ana_unwind_name((int)r->unwind));
	}
	if (m->truncs.n > limit)
		fprintf(out, "  (%zu more)\n", m->truncs.n - limit);
	fprintf(out, "  remedies:\n");
	for (int why = ANA_UNWIND_STACK_END; why < ANA_UNWIND_COUNT; why++)
		if (n_why[why])
			print_remedy(out, why, stack_bytes);
	free(rows);
}

void ana_health_report(const ana_model *m, FILE *out, int top_n)
{
	uint64_t period = ana_sample_period_ns(m);
	fprintf(out, "\nSampler health - is my profile lying?\n");
	print_config(out, m, period);
	print_coverage(out, m, period, top_n);
	print_losses(out, m);
	print_ticks(out, m);
	print_lag_windows(out, m, top_n);
	print_unwinding(out, m, top_n);
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].kind == GTT_HEALTH_NOTE && m->health.v[i].text && m->health.v[i].text[0])
			fprintf(out, "  note (%s): %s\n", source_name(m->health.v[i].source), m->health.v[i].text);
}
