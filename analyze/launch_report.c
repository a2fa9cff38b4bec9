/* launch_report.c — the report's "Kernel launch sites": per kernel (and copy, memset), the
 * launch stacks the CUDA agent took, what share of the sampled launches each stands for, and
 * the launches and GPU time the sampling estimator gives each site (launch.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "demangle.h"
#include "gt_util.h"
#include "launch.h"
#include "gpu_sum.h"
#include "launch_report.h"
#include "model_priv.h"

/* One row of the report: work of one kind and shown name over every thread and API. */
typedef struct lrow {
	uint32_t kind;
	const char *name;          /* display name */
	uint64_t n, ns, n_sampled;
	double none_n, none_ns;
} lrow;

/* One site of a row: a stack, summed over the groups of the row. */
typedef struct lsite {
	uint32_t stack_id;
	uint64_t n_sampled;
	double est_n, est_ns;
} lsite;

static const char *work_name(const ana_model *m, const ana_launch_group *g)
{
	static const char *const copies[] = { "[memcpy]", "[memcpy HtoD]", "[memcpy DtoH]", "[memcpy DtoD]",
	                                      "[memcpy HtoH]", "[memcpy PtoP]" };
	switch (g->kind) {
	case ANA_WORK_KERNEL: return ana_kernel_name(m, g->pid, g->name_id);
	case ANA_WORK_COPY: return copies[g->name_id <= 5 ? g->name_id : 0];
	case ANA_WORK_MEMSET: return "[memset]";
	}
	return "[sync]";
}

static int cmp_row(const void *x, const void *y)
{
	const lrow *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_lsite(const void *x, const void *y)
{
	const lsite *a = x, *b = y;
	if (a->est_ns != b->est_ns)
		return a->est_ns > b->est_ns ? -1 : 1;
	if (a->n_sampled != b->n_sampled)
		return a->n_sampled > b->n_sampled ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

static const char *base_name(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p ? p : "?";
}

void ana_launch_print_frame(const ana_model *m, FILE *out, uint32_t id)
{
	const ana_frame *f = &m->frames.v[id];
	const char *name = f->name ? f->name : "?";
	size_t nl = strlen(name);
	if (nl > 80) /* C++ names run long: the function, not every template argument */
		nl = ana_name_without_params(name) < 80 ? ana_name_without_params(name) : 77;
	fprintf(out, "%.*s%s", (int)nl, name, nl < strlen(name) && nl == 77 ? "..." : "");
	if (f->kind == ANA_FRAME_PYTHON)
		fprintf(out, " (%s:%d)", base_name(f->file), f->line);
}

void ana_launch_print_stack(const ana_model *m, FILE *out, uint32_t stack_id, int n_py, int n_native)
{
	const ana_stack *st = &m->stacks.v[stack_id];
	uint32_t py_leaf = st->n;
	for (uint32_t i = 0; i < st->n; i++)
		if (m->frames.v[st->frames[i]].kind == ANA_FRAME_PYTHON)
			py_leaf = i;
	int printed = 0;
	if (py_leaf < st->n) {
		/* the innermost Python frames, leaf first: the line that launched */
		for (uint32_t i = py_leaf + 1, k = 0; i-- > 0 && (int)k < n_py; k++) {
			fprintf(out, "%s", k ? " < " : "");
			ana_launch_print_frame(m, out, st->frames[i]);
			printed = 1;
		}
	}
	uint32_t nat0 = py_leaf < st->n ? py_leaf + 1 : 0;
	if (nat0 < st->n && n_native > 0) {
		fprintf(out, "%s", printed ? "; native: " : "native: ");
		int k = 0;
		for (uint32_t i = st->n; i-- > nat0 && k < n_native; k++) {
			fprintf(out, "%s", k ? " < " : "");
			ana_launch_print_frame(m, out, st->frames[i]);
		}
		if (st->n - nat0 > (uint32_t)k)
			fprintf(out, " (+%u frames)", st->n - nat0 - (uint32_t)k);
	}
}

void ana_launch_stack_text(const ana_model *m, const ana_callstack *cs, int max_frames, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	FILE *f = fmemopen(buf, len, "w");
	if (!f)
		return;
	const ana_stack *st = &m->stacks.v[cs->stack_id];
	const char *why = (cs->flags & GTT_CALLSTACK_FIRST) ? "one of the first calls"
	                  : (cs->flags & GTT_CALLSTACK_NTH) ? "sampled 1 in N"
	                  : (cs->flags & GTT_CALLSTACK_AT_EXIT) ? "a long call, taken at its exit"
	                  : (cs->flags & GTT_CALLSTACK_LONG) ? "a long call" : "taken";
	fprintf(f, "launch stack (%s):", why);
	/* the Python side first (the line that launched), then the native side from the caller of
	 * CUDA: a deep native stack must not push the Python line out of the budget */
	uint32_t py_leaf = st->n;
	for (uint32_t i = 0; i < st->n; i++)
		if (m->frames.v[st->frames[i]].kind == ANA_FRAME_PYTHON)
			py_leaf = i;
	uint32_t nat0 = py_leaf < st->n ? py_leaf + 1 : 0, n_py = py_leaf < st->n ? py_leaf + 1 : 0;
	int py_budget = n_py ? (max_frames + 1) / 2 : 0, k = 0;
	for (uint32_t i = n_py; i-- > 0 && k < py_budget; k++) {
		fputs(k ? "\n    < " : "\n  Python: ", f);
		ana_launch_print_frame(m, f, st->frames[i]);
	}
	if (n_py > (uint32_t)k)
		fprintf(f, "\n    (+%u Python frames)", n_py - (uint32_t)k);
	int kn = 0;
	for (uint32_t i = st->n; i-- > nat0 && kn < max_frames - k; kn++) {
		fputs(kn ? "\n    < " : "\n  native, from the caller of CUDA: ", f);
		ana_launch_print_frame(m, f, st->frames[i]);
	}
	if (st->n - nat0 > (uint32_t)kn)
		fprintf(f, "\n    (+%u native frames)", st->n - nat0 - (uint32_t)kn);
	fclose(f);
	buf[len - 1] = 0; /* fmemopen leaves a full buffer unterminated */
}

/* The agent's stack configuration (its health config record), or zeros when none. */
static void stack_config(const ana_model *m, uint64_t *first, uint64_t *every, uint64_t *long_ns, int *on,
                         uint64_t *dropped)
{
	*first = *every = *long_ns = *dropped = 0;
	*on = -1;
	for (size_t i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		if (h->source != GTT_SRC_CUPTI || !h->text || strncmp(h->text, "cuda_callstack", 14) != 0)
			continue;
		if (h->kind == GTT_HEALTH_CONFIG) {
			*on = h->count ? 1 : (*on == 1 ? 1 : 0);
			if (h->count) {
				*first = h->value[0];
				*every = h->value[1];
				*long_ns = h->value[2];
			}
		} else if (h->kind == GTT_HEALTH_DROPPED) {
			*dropped = ana_sat_add(*dropped, h->count);
		}
	}
}

/* The name a group's row goes by: the kernel, [memcpy DIR], [memset], or the sync call's API. */
static const char *row_name(const ana_model *m, const ana_launch_group *g)
{
	if (g->kind != ANA_WORK_SYNC)
		return work_name(m, g);
	return g->api_name_id || g->tid ? ana_string_get(m, g->pid, g->api_name_id) : "[no API record]";
}

/* Rows of work of the kinds in mask (1 << ANA_WORK_*), largest time first. Returns the count. */
static size_t build_rows(const ana_model *m, const ana_launches *L, unsigned mask, lrow *rows)
{
	size_t nr = 0;
	for (size_t i = 0; i < L->n_groups; i++) {
		const ana_launch_group *g = &L->groups[i];
		if (!(mask & (1u << g->kind)))
			continue;
		const char *name = row_name(m, g);
		size_t r = 0;
		while (r < nr && !(rows[r].kind == g->kind && strcmp(rows[r].name, name) == 0))
			r++;
		if (r == nr)
			rows[nr++] = (lrow){ .kind = g->kind, .name = name };
		rows[r].n += g->n;
		rows[r].ns = ana_sat_add(rows[r].ns, g->ns);
		rows[r].n_sampled += g->n_exact + g->n_nth;
		rows[r].none_n += g->none_n;
		rows[r].none_ns += g->none_ns;
	}
	if (nr > 1)
		qsort(rows, nr, sizeof(*rows), cmp_row);
	return nr;
}

/* One row: its totals, then its sites (a stack over every group of the row), 5 shown. */
static void print_row(const ana_model *m, FILE *out, const ana_launches *L, const lrow *row, lsite *sites)
{
	const char *what = row->kind == ANA_WORK_SYNC ? "ms waited" : "ms GPU time";
	const char *col = row->kind == ANA_WORK_SYNC ? "~wait ms" : "~GPU ms", *pct = row->kind == ANA_WORK_SYNC ? "~wait%" : "~GPU%";
	const char *unit = row->kind == ANA_WORK_SYNC ? "call" : "launch";
	const char *units = row->kind == ANA_WORK_SYNC ? "calls" : "launches";
	size_t ns = 0;
	for (size_t i = 0; i < L->n_groups; i++) {
		const ana_launch_group *g = &L->groups[i];
		if (g->kind != row->kind || strcmp(row_name(m, g), row->name) != 0)
			continue;
		for (size_t k = 0; k < g->n_sites; k++) {
			const ana_launch_site *s = &L->sites[g->first_site + k];
			size_t j = 0;
			while (j < ns && sites[j].stack_id != s->stack_id)
				j++;
			if (j == ns)
				sites[ns++] = (lsite){ .stack_id = s->stack_id };
			sites[j].n_sampled += s->n_exact + s->n_nth;
			sites[j].est_n += s->est_n;
			sites[j].est_ns += s->est_ns;
		}
	}
	if (ns > 1)
		qsort(sites, ns, sizeof(*sites), cmp_lsite);
	size_t nl = strlen(row->name);
	fprintf(out, "  %.*s%s\n    %" PRIu64 " %s, %.3f %s; %" PRIu64 " of %" PRIu64 " %s sampled (%.1f %%)\n",
	        nl > 100 ? 97 : (int)nl, row->name, nl > 100 ? "..." : "", row->n, row->n == 1 ? unit : units,
	        (double)row->ns / (double)GT_NS_PER_MS, what, row->n_sampled, row->n, units,
	        row->n ? 100.0 * (double)row->n_sampled / (double)row->n : 0.0);
	if (ns)
		fprintf(out, "    %9s %7s %11s %11s %6s  site (Python leaf first; native: the caller of CUDA first)\n",
		        "sampled", "share", row->kind == ANA_WORK_SYNC ? "~calls" : "~launches", col, pct);
	size_t shown = 0;
	uint64_t rest_sampled = 0;
	double rest_n = 0, rest_ns = 0;
	for (size_t j = 0; j < ns; j++) {
		const lsite *s = &sites[j];
		if (shown >= 5) {
			rest_sampled += s->n_sampled;
			rest_n += s->est_n;
			rest_ns += s->est_ns;
			continue;
		}
		shown++;
		fprintf(out, "    %9" PRIu64 " %6.1f%% %11.1f %11.3f %5.1f%%  ", s->n_sampled,
		        row->n_sampled ? 100.0 * (double)s->n_sampled / (double)row->n_sampled : 0.0, s->est_n,
		        s->est_ns / (double)GT_NS_PER_MS, row->ns ? 100.0 * s->est_ns / (double)row->ns : 0.0);
		ana_launch_print_stack(m, out, s->stack_id, 3, 2);
		fputc('\n', out);
	}
	if (ns > shown)
		fprintf(out, "    %9" PRIu64 " %6.1f%% %11.1f %11.3f %5.1f%%  (%zu more sites)\n", rest_sampled,
		        row->n_sampled ? 100.0 * (double)rest_sampled / (double)row->n_sampled : 0.0, rest_n,
		        rest_ns / (double)GT_NS_PER_MS, row->ns ? 100.0 * rest_ns / (double)row->ns : 0.0, ns - shown);
	if (row->none_n > 0.5 || !ns)
		fprintf(out, "    %9d %7s %11.1f %11.3f %5.1f%%  no stack captured\n", 0, "-", row->none_n,
		        row->none_ns / (double)GT_NS_PER_MS, row->ns ? 100.0 * row->none_ns / (double)row->ns : 0.0);
}

void ana_launch_report(const ana_model *m, FILE *out, int top_n)
{
	ana_launches L;
	lrow *rows = NULL;
	lsite *sites = NULL;
	const ana_gpu_sum *S = ana_gpu_sum_of(m);
	if (S && !S->n_kernels && !S->n_copies && !S->n_memsets)
		return;
	if (!S) {
		fprintf(out, "\nKernel launch sites: (out of memory)\n");
		return;
	}
	L = S->launches; /* the sum owns it */
	rows = calloc(L.n_groups ? L.n_groups : 1, sizeof(*rows));
	sites = calloc(L.n_sites ? L.n_sites : 1, sizeof(*sites));
	if (!rows || !sites)
		goto out;
	uint64_t first, every, long_ns, dropped;
	int on;
	stack_config(m, &first, &every, &long_ns, &on, &dropped);
	fprintf(out, "\nKernel launch sites (the CUDA agent's launch stacks, joined to the work of their call by "
	        "correlation id):\n");
	if (on == 1)
		fprintf(out, "  stacks taken for the first %" PRIu64 " calls of each (API, kernel) pair per thread, then "
		        "1 in %" PRIu64 ", and calls of %.3f ms or more; %" PRIu64 " stacks in the trace, %" PRIu64
		        " chosen calls got none (budget or ring full)\n",
		        first, every, (double)long_ns / (double)GT_NS_PER_MS, L.n_stacks, dropped);
	else if (on == 0)
		fprintf(out, "  launch stacks were switched off for this recording (--cuda-stacks=off)\n");
	else if (L.n_stacks)
		fprintf(out, "  %" PRIu64 " launch stacks in the trace (no stack configuration record)\n", L.n_stacks);
	if (!L.n_stacks) {
		/* every launch would read "no stack captured": one line says it */
		fprintf(out, "  none: this trace has no launch stacks%s, so no kernel's launch site is known; it is not "
		        "guessed from CPU samples\n",
		        on == 1 ? "" : " (recorded before the CUDA agent took them, or with them off)");
		goto out;
	}
	fprintf(out, "  sampled: launches with a stack; ~launches and ~GPU time: what the stacks stand for (a stack "
	        "of the first calls or of a long call stands for itself, a 1-in-N stack for its share of the "
	        "other launches of its thread, API and kernel); launches no stack stands for are \"no stack "
	        "captured\", never given another's stack\n");
	if (L.n_work_no_api)
		fprintf(out, "  %" PRIu64 " piece(s) of work had no API record of their correlation id: no stack\n",
		        L.n_work_no_api);
	size_t nr = build_rows(m, &L, 1u << ANA_WORK_KERNEL | 1u << ANA_WORK_COPY | 1u << ANA_WORK_MEMSET, rows);
	for (size_t r = 0; r < nr && (int)r < top_n; r++)
		print_row(m, out, &L, &rows[r], sites);
	if ((int)nr > top_n)
		fprintf(out, "  (%zu more kernels, copies or memsets: gt-analyze fold --weight gpu-time has them all)\n",
		        nr - (size_t)top_n);
	nr = build_rows(m, &L, 1u << ANA_WORK_SYNC, rows);
	if (nr)
		fprintf(out, "\nSynchronization sites (the launch stacks of the calls the GPU's sync records belong to, "
		        "by the time they waited; the same estimator):\n");
	for (size_t r = 0; r < nr && r < 3; r++)
		print_row(m, out, &L, &rows[r], sites);
out:
	free(rows);
	free(sites);
}
