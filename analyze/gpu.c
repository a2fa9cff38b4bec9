/* gpu.c — the GPU section of the report: devices, busy % over time, kernels, API calls, copies,
 * syncs, allocations, NVTX, and GPU-idle blame (what every host thread did while a device was
 * idle), with each kernel linked to its launching thread and CPU stack by correlation id.
 * Output is deterministic: every sort has a total order. */
#include "gpu.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "demangle.h"
#include "gpu_idle.h"
#include "gpu_sum.h"
#include "launch_report.h"
#include "model_priv.h"

void ana_gpu_ms(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%.3f", (double)ns / (double)GT_NS_PER_MS);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* by_name: each element's name looked up once (names[i]), not in every comparison */
typedef struct by_name { const ana_model *m; const char **names; } by_name;

/* ---- kernels, API calls ---- */

static void print_name(FILE *out, const char *n)
{
	size_t len = strlen(n);
	if (len > 110)
		fprintf(out, "%.107s...\n", n);
	else
		fprintf(out, "%s\n", n);
}

static void report_kernels(const ana_model *m, const ana_gpu_sum *S, FILE *out, int top_n)
{
	fprintf(out, "\nKernels (%" PRIu64 " launches of %zu kernels, %.3f ms GPU time; top %d by total time):\n",
	        S->n_kernels, S->n_kernel_rows, (double)S->kernel_ns / (double)GT_NS_PER_MS, top_n);
	fprintf(out, "  %9s %12s %11s %11s %6s  %s\n", "count", "total ms", "mean us", "max us", "%time", "kernel");
	for (size_t i = 0; i < S->n_kernel_rows && (int)i < top_n; i++) {
		const ana_gpu_row *r = &S->kernels[i];
		fprintf(out, "  %9" PRIu64 " %12.3f %11.3f %11.3f %6.1f  ", r->count, (double)r->total_ns / (double)GT_NS_PER_MS,
		        (double)r->total_ns / (double)r->count / (double)GT_NS_PER_US, (double)r->max_ns / (double)GT_NS_PER_US,
		        S->kernel_ns ? 100.0 * (double)r->total_ns / (double)S->kernel_ns : 0.0);
		print_name(out, ana_display_name(m, r->name));
	}
}

static void report_apis(const ana_gpu_sum *S, FILE *out, int top_n)
{
	if (!S->n_apis)
		return;
	fprintf(out, "\nCUDA API calls (%" PRIu64 " runtime, %" PRIu64 " driver; top %d by total time):\n",
	        S->n_api_runtime, S->n_api_driver, top_n);
	fprintf(out, "  %9s %12s %11s %11s %7s  %s\n", "count", "total ms", "mean us", "max us", "errors", "call");
	for (size_t i = 0; i < S->n_api_rows && (int)i < top_n; i++) {
		const ana_gpu_row *r = &S->apis[i];
		fprintf(out, "  %9" PRIu64 " %12.3f %11.3f %11.3f %7" PRIu64 "  %s%s\n", r->count, (double)r->total_ns / (double)GT_NS_PER_MS,
		        (double)r->total_ns / (double)r->count / (double)GT_NS_PER_US, (double)r->max_ns / (double)GT_NS_PER_US, r->n_err, r->name,
		        r->domain == GTT_API_DRIVER ? " (driver)" : "");
	}
}

/* ---- copies, memsets, syncs ---- */

static void report_copies(const ana_gpu_sum *S, FILE *out)
{
	static const char *const dir_names[] = { "unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	if (!S->n_copies && !S->n_memsets)
		return;
	fprintf(out, "\nMemory copies by direction:\n");
	fprintf(out, "  %-9s %9s %9s %14s %12s %10s\n", "direction", "count", "async", "bytes", "total ms", "GB/s");
	for (int k = 1; k <= 6; k++) {
		int d = k % 6;    /* unknown last */
		if (!S->copy_count[d])
			continue;
		fprintf(out, "  %-9s %9" PRIu64 " %9" PRIu64 " %14" PRIu64 " %12.3f %10.2f\n", dir_names[d], S->copy_count[d],
		        S->copy_async[d], S->copy_bytes[d], (double)S->copy_ns[d] / (double)GT_NS_PER_MS,
		        S->copy_ns[d] ? (double)S->copy_bytes[d] / (double)S->copy_ns[d] : 0.0);
	}
	if (S->n_memsets)
		fprintf(out, "  memsets: %" PRIu64 ", %" PRIu64 " bytes, %.3f ms\n", S->n_memsets, S->memset_bytes,
		        (double)S->memset_ns / (double)GT_NS_PER_MS);
}

static void report_syncs(const ana_gpu_sum *S, FILE *out)
{
	static const char *const names[] = { "unknown", "event synchronize", "stream wait event",
	                                     "stream synchronize", "context synchronize" };
	if (!S->n_syncs)
		return;
	fprintf(out, "\nSynchronization (host waiting for the GPU):\n");
	fprintf(out, "  %9s %12s %11s  %s\n", "count", "total ms", "max us", "kind");
	for (int k = 1; k <= 5; k++) {
		int d = k % 5;
		if (S->sync_count[d])
			fprintf(out, "  %9" PRIu64 " %12.3f %11.3f  %s\n", S->sync_count[d], (double)S->sync_ns[d] / (double)GT_NS_PER_MS,
			        (double)S->sync_max[d] / (double)GT_NS_PER_US, names[d]);
	}
}

/* ---- allocations ---- */

typedef struct live_ent { uint64_t key; uint64_t bytes; } live_ent;

static int cmp_alloc_time(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_cuda_alloc *x = &m->allocs.v[*(const size_t *)a], *y = &m->allocs.v[*(const size_t *)b];
	int c = cmp_u64(x->time_ns, y->time_ns);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static void report_allocs(const ana_model *m, FILE *out, uint64_t span_ns)
{
	size_t n = m->allocs.n;
	if (!n)
		return;
	size_t *order = malloc(n * sizeof(*order));
	size_t cap = 16;
	while (cap < n * 2)
		cap *= 2;
	live_ent *live = calloc(cap, sizeof(*live));
	if (!order || !live)
		goto out;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), cmp_alloc_time, (void *)m);
	uint64_t n_alloc = 0, n_free = 0, b_alloc = 0, b_free = 0, cur = 0, peak = 0, peak_t = 0, unknown_free = 0;
	for (size_t i = 0; i < n; i++) {
		const gtt_cuda_alloc *a = &m->allocs.v[order[i]];
		/* live set keyed by (pid, device, address) so a free matches its allocation */
		uint64_t key = (a->address ^ ((uint64_t)a->pid << 40) ^ ((uint64_t)a->device << 56)) | 1;
		size_t j = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
		while (live[j].key && live[j].key != key)
			j = (j + 1) & (cap - 1);
		if (a->op == GTT_ALLOC_ALLOC) {
			n_alloc++;
			b_alloc = ana_sat_add(b_alloc, a->bytes);
			if (live[j].key == key)      /* re-used address without a free seen */
				cur -= live[j].bytes < cur ? live[j].bytes : cur;
			live[j].key = key;
			live[j].bytes = a->bytes;
			cur = ana_sat_add(cur, a->bytes);
			if (cur > peak) {
				peak = cur;
				peak_t = a->time_ns;
			}
		} else {
			n_free++;
			b_free = ana_sat_add(b_free, a->bytes);
			if (live[j].key == key && live[j].bytes) {
				cur -= live[j].bytes < cur ? live[j].bytes : cur;
				live[j].bytes = 0;    /* keep the key: probing chains stay intact */
			} else {
				unknown_free++;
			}
		}
	}
	double secs = span_ns ? gt_ns_to_s(span_ns) : 0;
	fprintf(out, "\nGPU memory allocations (CUDA allocator; a caching allocator above it reuses memory "
	        "without calls):\n");
	fprintf(out, "  allocations %" PRIu64 " (%.1f MiB), frees %" PRIu64 " (%.1f MiB), churn %.1f ops/s\n", n_alloc,
	        (double)b_alloc / 1048576.0, n_free, (double)b_free / 1048576.0,
	        secs > 0 ? (double)(n_alloc + n_free) / secs : 0.0);
	fprintf(out, "  peak live %.1f MiB at %.3f s (allocations made while recording)", (double)peak / 1048576.0,
	        peak_t >= m->start_ns ? gt_ns_to_s(peak_t - m->start_ns) : 0.0);
	if (unknown_free)
		fprintf(out, "; %" PRIu64 " frees of memory allocated before recording", unknown_free);
	fputc('\n', out);
out:
	free(order);
	free(live);
}

/* ---- NVTX ---- */

static int cmp_row_total(const void *a, const void *b)
{
	const ana_gpu_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : cmp_u64(x->domain, y->domain);
}

static int cmp_nvtx_name(const void *a, const void *b, void *ctx)
{
	const by_name *bn = ctx;
	const ana_model *m = bn->m;
	const gtt_nvtx *x = &m->nvtx.v[*(const size_t *)a], *y = &m->nvtx.v[*(const size_t *)b];
	int c = strcmp(bn->names[*(const size_t *)a], bn->names[*(const size_t *)b]);
	if (!c)
		c = cmp_u64(x->kind, y->kind);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static void report_nvtx(const ana_model *m, FILE *out, int top_n)
{
	size_t n = m->nvtx.n, nr = 0;
	if (!n)
		return;
	size_t *order = malloc(n * sizeof(*order));
	ana_gpu_row *rows = calloc(n, sizeof(*rows));
	if (!order || !rows)
		goto out;
	/* grouped by (name text, range or marker) through one sort; the API row shape is reused */
	const char **names = malloc(n * sizeof(*names));
	if (!names)
		goto out;
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		names[i] = ana_string_get(m, m->nvtx.v[i].pid, m->nvtx.v[i].name_id);
	}
	by_name bn = { m, names };
	qsort_r(order, n, sizeof(*order), cmp_nvtx_name, &bn);
	free(names);
	for (size_t i = 0; i < n; i++) {
		const gtt_nvtx *v = &m->nvtx.v[order[i]];
		const char *name = ana_string_get(m, v->pid, v->name_id);
		if (!nr || strcmp(rows[nr - 1].name, name) != 0 || rows[nr - 1].domain != v->kind) {
			rows[nr].name = name;
			rows[nr].domain = v->kind;
			nr++;
		}
		ana_gpu_row *r = &rows[nr - 1];
		uint64_t d = ana_span(v->start_ns, v->end_ns);
		r->count++;
		r->total_ns = ana_sat_add(r->total_ns, d);
		if (d > r->max_ns)
			r->max_ns = d;
	}
	qsort(rows, nr, sizeof(*rows), cmp_row_total);
	fprintf(out, "\nNVTX ranges and markers (top %d by total time):\n", top_n);
	fprintf(out, "  %9s %12s %11s  %s\n", "count", "total ms", "max us", "name");
	for (size_t i = 0; i < nr && (int)i < top_n; i++)
		fprintf(out, "  %9" PRIu64 " %12.3f %11.3f  %s%s\n", rows[i].count, (double)rows[i].total_ns / (double)GT_NS_PER_MS,
		        (double)rows[i].max_ns / (double)GT_NS_PER_US, rows[i].name, rows[i].domain == GTT_NVTX_MARKER ? " (marker)" : "");
out:
	free(order);
	free(rows);
}

/* ---- header: devices, counts, health ---- */

/* The last CUDA_DEVICE record of (pid, device), NULL when none. */
static const gtt_cuda_device *device_info(const ana_model *m, uint32_t pid, uint32_t device)
{
	const gtt_cuda_device *found = NULL;
	for (size_t i = 0; i < m->cuda_devices.n; i++)
		if (m->cuda_devices.v[i].pid == pid && m->cuda_devices.v[i].device == device)
			found = &m->cuda_devices.v[i];
	return found;
}

static void report_header(const ana_model *m, const ana_gpu_sum *S, FILE *out)
{
	fprintf(out, "\n== GPU ==\n");
	/* the first (pid, device) of each physical device: devs are listed in that order */
	const ana_gpu_dev **first = calloc(S->n_phys ? (size_t)S->n_phys : 1, sizeof(*first));
	if (!first)
		return;
	for (size_t i = 0; i < S->n_devs; i++)
		if (!first[S->devs[i].index])
			first[S->devs[i].index] = &S->devs[i];
	for (int p = 0; p < S->n_phys; p++) {
		const ana_gpu_dev *d = first[p];
		if (!d)
			continue;
		const gtt_cuda_device *info = device_info(m, d->pid, d->device);
		fprintf(out, "GPU %d: pid %u device %u", p, d->pid, d->device);
		if (info)
			fprintf(out, ", %s (cc %u.%u, %u SMs, %.1f GiB)", info->name, info->cc_major, info->cc_minor,
			        info->sm_count, (double)info->global_mem_bytes / 1073741824.0);
		fputc('\n', out);
	}
	free(first);
	fprintf(out, "CUDA records: %" PRIu64 " kernels, %" PRIu64 " copies, %" PRIu64 " memsets, %" PRIu64 " syncs, %" PRIu64
	        " API calls, %zu allocations, %zu NVTX\n", S->n_kernels, S->n_copies, S->n_memsets, S->n_syncs, S->n_apis,
	        m->allocs.n, m->nvtx.n);
	uint64_t dropped = 0;
	for (size_t i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		if (h->source != GTT_SRC_CUPTI)
			continue;
		if (h->kind == GTT_HEALTH_DROPPED)
			dropped = ana_sat_add(dropped, h->count); /* hostile counts saturate, as in health.c */
		else if (h->kind == GTT_HEALTH_NOTE && strncmp(h->text, "cupti agent", 11) != 0)
			fprintf(out, "note (pid %u): %s\n", h->pid, h->text);
	}
	if (dropped)
		fprintf(out, "WARNING: CUPTI dropped %" PRIu64 " activity records (buffers full): GPU numbers are low\n",
		        dropped);
	if (S->n_kernels && !S->n_apis)
		fprintf(out, "note: no CUDA API records (GT_CUPTI_API=none?): kernels cannot be linked to threads\n");
	if (S->n_late)
		fprintf(out, "note: %" PRIu64 " CUDA records came more than %.3f s after later ones in the file (more than "
		        "the chunk index promised): busy time, idle gaps and their blame took them late and are "
		        "approximate\n", S->n_late, gt_ns_to_s(S->horizon_ns));
}

static int has_cuda(const ana_model *m)
{
	if (ana_gpu_n_records(m) || m->allocs.n || m->nvtx.n || m->cuda_devices.n)
		return 1;
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].source == GTT_SRC_CUPTI)
			return 1;
	return 0;
}

void ana_gpu_report(const ana_model *m, FILE *out, int top_n)
{
	if (!m || !out || !has_cuda(m))
		return;
	if (top_n <= 0)
		top_n = 20;
	if (!m->cuda_streamed)
		ana_gpu_sum_forget(m); /* the arrays as they are now: a caller may have changed them */
	const ana_gpu_sum *S = ana_gpu_sum_of(m);
	if (!S) {
		fprintf(out, "\n== GPU ==\n(out of memory)\n");
		return;
	}
	report_header(m, S, out);
	ana_gpu_report_busy(m, S, out);
	if (S->n_kernels)
		report_kernels(m, S, out, top_n);
	report_apis(S, out, top_n);
	report_copies(S, out);
	report_syncs(S, out);
	report_allocs(m, out, m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0);
	report_nvtx(m, out, top_n);
	ana_gpu_report_idle(m, S, out, top_n < 10 ? top_n : 10);
	ana_launch_report(m, out, top_n < 5 ? top_n : 5);
}
