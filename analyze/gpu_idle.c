/* gpu_idle.c — the time-based part of the GPU report, printed from the streamed aggregates
 * (gpu_sum.h, gpu_blame.c): busy % over time, idle gaps and GPU-idle blame (per host thread: CUDA
 * API time by kind, exact; CPU samples by GIL class, estimated; the rest off-CPU), with the call
 * that ended each long gap and its launch stack. */
#include "gpu_idle.h"

#include "bounds.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "launch.h"
#include "launch_report.h"

static const char *const st_names[ANA_ST_COUNT] = {
	"synchronizing", "launching", "in the allocator", "copying", "other CUDA calls",
	"python+GIL", "native+GIL", "native, no GIL", "waiting for GIL", "native",
	"off-CPU/unsampled",
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static uint64_t active_ns(const ana_gpu_blame *b)
{
	uint64_t s = 0;
	for (int st = 0; st < ANA_ST_OFF; st++)
		s += b->ns[st];
	return s;
}

static void print_blame(const ana_model *m, FILE *out, const ana_gpu_thread *t, const ana_gpu_blame *b, const char *indent)
{
	/* in a job (threads of several processes; m->threads is sorted by pid) the tid alone does
	 * not say whose thread it is */
	if (m->threads.n && m->threads.v[0].pid != m->threads.v[m->threads.n - 1].pid)
		fprintf(out, "%sthread %u %s (pid %u):", indent, t->tid, t->name, t->pid);
	else
		fprintf(out, "%sthread %u %s:", indent, t->tid, t->name);
	const char *sep = " ";
	for (int st = 0; st < ANA_ST_COUNT; st++) {
		if (!b->ns[st] && !b->n_samples[st])
			continue;
		fprintf(out, "%s%s %s%.3f ms", sep, st_names[st], st >= ANA_ST_PY_GIL && st < ANA_ST_OFF ? "~" : "",
		        (double)b->ns[st] / (double)GT_NS_PER_MS);
		if (st < ANA_ST_PY_GIL && b->api_top[st])
			fprintf(out, " (%s)", b->api_top[st]);
		else if (st >= ANA_ST_PY_GIL && st < ANA_ST_OFF)
			fprintf(out, " (%" PRIu64 " sample%s)", b->n_samples[st], b->n_samples[st] == 1 ? "" : "s");
		sep = ", ";
	}
	if (b->top_frame != ANA_NO_ID && b->top_frame < m->frames.n)
		fprintf(out, "; top frame %s", m->frames.v[b->top_frame].name);
	fputc('\n', out);
}

/* ---- busy % ---- */

void ana_gpu_report_busy(const ana_model *m, const ana_gpu_sum *S, FILE *out)
{
	(void)m;
	const ana_bins *bins = &S->bins;
	int any = 0;
	for (int d = 0; d < S->n_phys; d++)
		any |= S->busy[d].has;
	if (!any)
		return;
	uint64_t t0 = bins->t0, t1 = bins->t1;
	fprintf(out, "\nGPU busy (union of kernels, copies and memsets on the device):\n");
	for (int d = 0; d < S->n_phys; d++) {
		const ana_gpu_busy *b = &S->busy[d];
		if (!b->has)
			continue;
		uint64_t active = ana_span(b->first_ns, b->last_ns);
		fprintf(out, "  GPU %d: busy %.1f%% of the recording (%.3f of %.3f s); %.1f%% between its first and last "
		        "work (%.3f s)\n", d, 100.0 * (double)b->total_ns / (double)(t1 - t0), gt_ns_to_s(b->total_ns),
		        gt_ns_to_s(t1 - t0), active ? 100.0 * (double)b->total_ns / (double)active : 100.0,
		        gt_ns_to_s(active));
		fprintf(out, "  GPU %d busy %% per %.1f s from the start of the recording:\n", d, gt_ns_to_s(bins->width_ns));
		for (size_t i = 0; i < bins->n; i++) {
			uint64_t len = ana_bins_end(bins, i) - ana_bins_start(bins, i);
			if (i % 10 == 0)
				fprintf(out, "    %8.1f s:", gt_ns_to_s(ana_bins_start(bins, i) - t0));
			fprintf(out, " %3.0f", len ? 100.0 * (double)b->bins[i] / (double)len : 0.0);
			if (i % 10 == 9 || i + 1 == bins->n)
				fputc('\n', out);
		}
	}
}

/* ---- idle gaps ---- */

/* Devices whose idle time is broken down per host thread (each costs a walk over every thread). */
#define BLAME_MAX_DEVICES 64

static int cmp_thread_key(const void *k, const void *e)
{
	const uint32_t *key = k;
	const ana_gpu_thread *t = e;
	int c = cmp_u64(key[0], t->pid);
	return c ? c : cmp_u64(key[1], t->tid);
}

static const ana_gpu_thread *find_thread(const ana_gpu_sum *S, uint32_t pid, uint32_t tid)
{
	uint32_t key[2] = { pid, tid };
	return bsearch(key, S->threads, S->n_threads, sizeof(*S->threads), cmp_thread_key);
}

static int cmp_active(const void *a, const void *b)
{
	const ana_gpu_tblame *x = a, *y = b;
	int c = -cmp_u64(active_ns(&x->b), active_ns(&y->b));
	return c ? c : cmp_u64(x->thread, y->thread);
}

/* The launch stack of a call in one line, or that the agent took none for it (never another's). */
static void print_call_stack(const ana_model *m, FILE *out, const char *what, uint32_t pid, uint32_t corr)
{
	const ana_callstack *cs = ana_callstack_find(m, pid, corr);
	if (!cs) {
		if (m->callstacks.n)
			fprintf(out, "       %s: no launch stack captured for this call\n", what);
		return;
	}
	fprintf(out, "       %s: ", what);
	ana_launch_print_stack(m, out, cs->stack_id, 3, 2);
	fputc('\n', out);
}

static void print_gap(const ana_model *m, const ana_gpu_sum *S, FILE *out, const ana_gpu_gap *gp, int rank)
{
	uint64_t len = gp->end_ns - gp->start_ns;
	fprintf(out, "  #%d GPU %d idle %.3f ms from %.6f s\n", rank, gp->dev, (double)len / (double)GT_NS_PER_MS,
	        gt_ns_to_s(gp->start_ns - m->start_ns));
	if (gp->has_next) {
		const char *name = gp->next_type == ANA_WORK_KERNEL ? ana_kernel_name(m, gp->next_pid, gp->next_name_id)
		                   : gp->next_type == ANA_WORK_COPY ? "memcpy" : "memset";
		size_t nl = strlen(name);
		fprintf(out, "     ended by %.*s%s", nl > 60 ? 57 : (int)nl, name, nl > 60 ? "..." : "");
		const ana_gpu_thread *t = gp->has_api ? find_thread(S, gp->next_pid, gp->api_tid) : NULL;
		if (gp->has_api) {
			fprintf(out, ", submitted by thread %u %s through %s at %+.3f ms from the gap's start", gp->api_tid,
			        t ? t->name : "?", ana_string_get(m, gp->next_pid, gp->api_name_id),
			        ((double)gp->api_start_ns - (double)gp->start_ns) / (double)GT_NS_PER_MS);
		}
		fputc('\n', out);
		if (gp->has_api)
			print_call_stack(m, out, "launched from", gp->next_pid, gp->next_corr);
		/* the submitting thread came out of a synchronization inside the gap just before it
		 * submitted: that call (the host waited, then launched) with its stack */
		if (gp->has_api && t && gp->has_sync && gp->sync_end_ns >= gp->start_ns && gp->sync_end_ns <= gp->api_start_ns) {
			fprintf(out, "       after %s, %.3f ms long, returned at %+.3f ms\n", gp->sync_name,
			        (double)(gp->sync_end_ns - gp->sync_start_ns) / (double)GT_NS_PER_MS,
			        ((double)gp->sync_end_ns - (double)gp->start_ns) / (double)GT_NS_PER_MS);
			print_call_stack(m, out, "synchronized from", gp->sync_pid, gp->sync_corr);
		}
	}
	ana_gpu_tblame *order = malloc((gp->n_threads ? gp->n_threads : 1) * sizeof(*order));
	if (!order)
		return;
	memcpy(order, gp->threads, gp->n_threads * sizeof(*order));
	/* most active threads first; ties by (pid, tid) order */
	qsort(order, gp->n_threads, sizeof(*order), cmp_active);
	size_t shown = gp->n_threads, idle = S->n_threads - gp->n_threads;
	for (size_t i = 0; i < gp->n_threads && i < 8; i++)
		print_blame(m, out, &S->threads[order[i].thread], &order[i].b, "     ");
	if (shown > 8)
		fprintf(out, "     (%zu more active threads)\n", shown - 8);
	if (idle)
		fprintf(out, "     (%zu thread%s off-CPU or unsampled throughout)\n", idle, idle == 1 ? "" : "s");
	free(order);
}

void ana_gpu_report_idle(const ana_model *m, const ana_gpu_sum *S, FILE *out, int top_n)
{
	static const char *const edge_names[] = { "< 10 us", "10-100 us", "0.1-1 ms", "1-10 ms", ">= 10 ms" };
	size_t n_busy_devs = 0;
	uint64_t n_spans = 0;
	for (int d = 0; d < S->n_phys; d++) {
		n_busy_devs += S->busy[d].has;
		n_spans += S->busy[d].has ? S->busy[d].n_gaps + 1 : 0;
	}
	if (n_spans < 2)
		return;
	fprintf(out, "\nGPU idle between work (gaps from the end of one piece of work to the start of the next):\n");
	size_t n_blamed = 0, n_unblamed = 0;
	for (int d = 0; d < S->n_phys; d++) {
		const ana_gpu_busy *b = &S->busy[d];
		if (!b->n_gaps)
			continue;
		fprintf(out, "  GPU %d: %.3f ms idle in %" PRIu64 " gaps:", d, (double)b->gap_total / (double)GT_NS_PER_MS,
		        b->n_gaps);
		for (int k = 0; k < 5; k++)
			if (b->gap_cnt[k])
				fprintf(out, " %s %" PRIu64 " (%.3f ms)%s", edge_names[k], b->gap_cnt[k],
				        (double)b->gap_ns[k] / (double)GT_NS_PER_MS, k < 4 ? ";" : "");
		fputc('\n', out);
		/* the blame is kept for the first devices (a host has a few GPUs; a trace naming thousands
		 * is not a host's) */
		if (n_blamed == BLAME_MAX_DEVICES || !b->blame) {
			n_unblamed++;
			continue;
		}
		n_blamed++;
		fprintf(out, "  GPU-idle blame, GPU %d (per host thread, during all %" PRIu64 " gaps; API time exact, "
		        "~ estimated from samples):\n", d, b->n_gaps);
		size_t idle_threads = S->n_threads - b->n_blame; /* threads without a part in any gap */
		for (size_t k = 0; k < b->n_blame; k++) {
			size_t t = b->blame[k].thread;
			ana_gpu_blame sum = b->blame[k].b;
			/* samples over all gaps: an unbiased estimate, capped by what API time leaves */
			uint64_t api = 0, sampled = 0;
			for (int st = 0; st < ANA_ST_PY_GIL; st++)
				api = ana_sat_add(api, sum.ns[st]);
			for (int st = ANA_ST_PY_GIL; st < ANA_ST_OFF; st++)
				sampled = ana_sat_add(sampled, sum.ns[st]);
			uint64_t room = b->gap_total > api ? b->gap_total - api : 0;
			if (sampled > room) {
				for (int st = ANA_ST_PY_GIL; st < ANA_ST_OFF; st++)
					sum.ns[st] = ana_d2u64((double)sum.ns[st] * (double)room / (double)sampled);
				sampled = room;
			}
			sum.ns[ANA_ST_OFF] = room - sampled;
			sum.top_frame = ANA_NO_ID;
			if (!active_ns(&sum)) {
				idle_threads++;
				continue;
			}
			print_blame(m, out, &S->threads[t], &sum, "    ");
		}
		if (idle_threads)
			fprintf(out, "    (%zu thread%s off-CPU or unsampled during every gap)\n", idle_threads,
			        idle_threads == 1 ? "" : "s");
	}
	if (n_unblamed)
		fprintf(out, "  (GPU-idle blame left out for %zu more devices)\n", n_unblamed);
	fprintf(out, "\nLongest GPU idle gaps (top %d) and what every host thread did meanwhile:\n", top_n);
	for (size_t i = 0; i < S->n_top_gaps && (int)i < top_n; i++)
		print_gap(m, S, out, &S->gaps[i], (int)i + 1);
	(void)n_busy_devs;
}
