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
#include "launch_report.h"
#include "model_priv.h"

/* ---- small helpers shared with gpu_idle.c ---- */

void ana_gpu_ms(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%.3f", (double)ns / (double)GT_NS_PER_MS);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_info(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_cuda_device *x = &m->cuda_devices.v[*(const size_t *)a], *y = &m->cuda_devices.v[*(const size_t *)b];
	int c = cmp_u64(x->pid, y->pid);
	if (!c)
		c = cmp_u64(x->device, y->device);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

/* The last CUDA_DEVICE record of (pid, device), NULL when none. */
static const gtt_cuda_device *device_info(const ana_gpu_ctx *g, uint32_t pid, uint32_t device)
{
	const ana_model *m = g->m;
	size_t lo = 0, hi = m->cuda_devices.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const gtt_cuda_device *d = &m->cuda_devices.v[g->info[mid]];
		if (d->pid < pid || (d->pid == pid && d->device <= device))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const gtt_cuda_device *d = &m->cuda_devices.v[g->info[lo - 1]];
	return d->pid == pid && d->device == device ? d : NULL;
}

static int dev_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_gpu_dev *d = &((const ana_gpu_ctx *)ctx)->devs[id];
	const uint32_t *k = key;
	return d->pid == k[0] && d->device == k[1];
}

static int uuid_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_gpu_dev *d = &((const ana_gpu_ctx *)ctx)->devs[id];
	return d->uuid && strcmp(d->uuid, key) == 0;
}

/* Physical device of (pid, device): its UUID when the agent wrote one, else "pidP/devD". Found
 * through hash tables (a trace can name many (pid, device) pairs), -1 on ENOMEM. */
static int device_index(ana_gpu_ctx *g, uint32_t pid, uint32_t device)
{
	ana_idtable *dt = g->dev_table, *ut = g->uuid_table;
	uint32_t key[2] = { pid, device };
	uint32_t *slot = ana_idtable_slot(dt, ana_hash_u64((uint64_t)pid << 32 | device), dev_eq, key, g);
	if (!slot)
		return -1;
	if (*slot)
		return g->devs[*slot - 1].index;
	const gtt_cuda_device *info = device_info(g, pid, device);
	const char *uuid = info && info->uuid && *info->uuid ? info->uuid : NULL;
	uint32_t *uslot = NULL;
	int index = -1;
	if (uuid) {
		if (!(uslot = ana_idtable_slot(ut, ana_hash_bytes(uuid, strlen(uuid), 5), uuid_eq, uuid, g)))
			return -1;
		if (*uslot)
			index = g->devs[*uslot - 1].index;
	}
	if (index < 0)
		index = g->n_phys++;
	if (GT_GROW(g->devs, g->cap_devs, g->n_devs + 1) < 0)
		return -1;
	ana_gpu_dev *d = &g->devs[g->n_devs++];
	memset(d, 0, sizeof(*d));
	d->pid = pid;
	d->device = device;
	d->uuid = uuid;
	d->name = info ? info->name : NULL;
	d->index = index;
	*slot = (uint32_t)g->n_devs;
	dt->n++;
	if (uslot && !*uslot) {
		*uslot = (uint32_t)g->n_devs;
		ut->n++;
	}
	return index;
}

static int cmp_act(const void *a, const void *b)
{
	const ana_gpu_act *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	int c = cmp_u64(x->start_ns, y->start_ns);
	if (!c)
		c = cmp_u64(x->end_ns, y->end_ns);
	if (!c)
		c = x->type - y->type;
	return c ? c : cmp_u64(x->idx, y->idx);
}

static int push_act(ana_gpu_ctx *g, uint32_t pid, uint32_t device, uint64_t s, uint64_t e, int type, size_t idx)
{
	int dev = device_index(g, pid, device);
	if (dev < 0)
		return -1;
	if (e < s)
		e = s;
	ana_gpu_act *a = &g->acts[g->n_acts++];
	a->start_ns = s;
	a->end_ns = e;
	a->dev = dev;
	a->type = type;
	a->idx = idx;
	return 0;
}

int ana_gpu_ctx_build(ana_gpu_ctx *g, const ana_model *m)
{
	memset(g, 0, sizeof(*g));
	g->m = m;
	g->dev_table = calloc(1, sizeof(ana_idtable));
	g->uuid_table = calloc(1, sizeof(ana_idtable));
	g->info = malloc((m->cuda_devices.n ? m->cuda_devices.n : 1) * sizeof(*g->info));
	if (!g->dev_table || !g->uuid_table || !g->info)
		return -1;
	for (size_t i = 0; i < m->cuda_devices.n; i++)
		g->info[i] = i;
	qsort_r(g->info, m->cuda_devices.n, sizeof(*g->info), cmp_info, (void *)m);
	size_t n = m->kernels.n + m->memcpys.n + m->memsets.n;
	g->acts = calloc(n ? n : 1, sizeof(*g->acts));
	if (!g->acts)
		return -1;
	for (size_t i = 0; i < m->kernels.n; i++) {
		const gtt_cuda_kernel *k = &m->kernels.v[i];
		if (push_act(g, k->pid, k->device, k->start_ns, k->end_ns, ANA_GPU_KERNEL, i) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->memcpys.n; i++) {
		const gtt_cuda_memcpy *c = &m->memcpys.v[i];
		if (push_act(g, c->pid, c->device, c->start_ns, c->end_ns, ANA_GPU_COPY, i) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->memsets.n; i++) {
		const gtt_cuda_memset *s = &m->memsets.v[i];
		if (push_act(g, s->pid, s->device, s->start_ns, s->end_ns, ANA_GPU_MEMSET, i) < 0)
			return -1;
	}
	qsort(g->acts, g->n_acts, sizeof(*g->acts), cmp_act);
	/* union of busy intervals per device, in time order */
	g->busy = calloc(g->n_acts ? g->n_acts : 1, sizeof(*g->busy));
	if (!g->busy)
		return -1;
	for (size_t i = 0; i < g->n_acts; i++) {
		const ana_gpu_act *a = &g->acts[i];
		ana_gpu_span *last = g->n_busy ? &g->busy[g->n_busy - 1] : NULL;
		if (last && last->dev == a->dev && a->start_ns <= last->end_ns) {
			if (a->end_ns > last->end_ns)
				last->end_ns = a->end_ns;
			continue;
		}
		ana_gpu_span *s = &g->busy[g->n_busy++];
		s->start_ns = a->start_ns;
		s->end_ns = a->end_ns;
		s->dev = a->dev;
	}
	return 0;
}

void ana_gpu_ctx_free(ana_gpu_ctx *g)
{
	free(g->acts);
	free(g->busy);
	free(g->devs);
	free(g->info);
	if (g->dev_table)
		ana_idtable_free(g->dev_table);
	if (g->uuid_table)
		ana_idtable_free(g->uuid_table);
	free(g->dev_table);
	free(g->uuid_table);
}

/* ---- kernels ---- */

typedef struct name_row {
	const char *name;      /* model string (mangled) */
	const char *shown;     /* as shown (demangled), model-owned */
	uint64_t count, total_ns, max_ns;
	uint64_t first_idx;    /* an element of the group, for launch-site lookup */
} name_row;

/* Sorting by name: each element's name looked up once (names[i]), not in every comparison. */
typedef struct by_name { const ana_model *m; const char **names; } by_name;

static int cmp_kernel_name(const void *a, const void *b, void *ctx)
{
	const by_name *bn = ctx;
	int c = strcmp(bn->names[*(const size_t *)a], bn->names[*(const size_t *)b]);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static int cmp_row_total(const void *a, const void *b)
{
	const name_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->shown, y->shown);
	return c ? c : strcmp(x->name, y->name);
}

static void print_name(FILE *out, const name_row *r)
{
	const char *n = r->shown;
	size_t len = strlen(n);
	if (len > 110)
		fprintf(out, "%.107s...\n", n);
	else
		fprintf(out, "%s\n", n);
}

/* Kernels grouped by (mangled) name; sorted by total time. */
static name_row *kernel_rows(const ana_model *m, size_t *n_rows, size_t **order_out)
{
	size_t n = m->kernels.n, nr = 0;
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	name_row *rows = calloc(n ? n : 1, sizeof(*rows));
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	if (!order || !rows || !names) {
		free(order);
		free(rows);
		free(names);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		names[i] = ana_string_get(m, m->kernels.v[i].pid, m->kernels.v[i].name_id);
	}
	by_name bn = { m, names };
	qsort_r(order, n, sizeof(*order), cmp_kernel_name, &bn);
	free(names);
	for (size_t i = 0; i < n; i++) {
		const gtt_cuda_kernel *k = &m->kernels.v[order[i]];
		const char *name = ana_string_get(m, k->pid, k->name_id);
		if (!nr || strcmp(rows[nr - 1].name, name) != 0) {
			rows[nr].name = name;
			rows[nr].first_idx = order[i];
			nr++;
		}
		name_row *r = &rows[nr - 1];
		uint64_t d = ana_span(k->start_ns, k->end_ns);
		r->count++;
		r->total_ns = ana_sat_add(r->total_ns, d);
		if (d > r->max_ns)
			r->max_ns = d;
	}
	for (size_t i = 0; i < nr; i++)
		rows[i].shown = ana_display_name(m, rows[i].name);
	qsort(rows, nr, sizeof(*rows), cmp_row_total);
	*n_rows = nr;
	*order_out = order;
	return rows;
}

static void report_kernels(const ana_model *m, FILE *out, int top_n, const name_row *rows, size_t nr,
                           uint64_t kernel_total_ns)
{
	fprintf(out, "\nKernels (%zu launches of %zu kernels, %.3f ms GPU time; top %d by total time):\n",
	        m->kernels.n, nr, (double)kernel_total_ns / (double)GT_NS_PER_MS, top_n);
	fprintf(out, "  %9s %12s %11s %11s %6s  %s\n", "count", "total ms", "mean us", "max us", "%time", "kernel");
	for (size_t i = 0; i < nr && (int)i < top_n; i++) {
		const name_row *r = &rows[i];
		fprintf(out, "  %9" PRIu64 " %12.3f %11.3f %11.3f %6.1f  ", r->count, (double)r->total_ns / (double)GT_NS_PER_MS,
		        (double)r->total_ns / (double)r->count / (double)GT_NS_PER_US, (double)r->max_ns / (double)GT_NS_PER_US,
		        kernel_total_ns ? 100.0 * (double)r->total_ns / (double)kernel_total_ns : 0.0);
		print_name(out, r);
	}
}

/* ---- API calls ---- */

typedef struct api_row {
	const char *name;
	uint32_t domain;
	uint64_t count, total_ns, max_ns, n_err;
} api_row;

static int cmp_api_name(const void *a, const void *b, void *ctx)
{
	const by_name *bn = ctx;
	const ana_model *m = bn->m;
	const gtt_cuda_api *x = &m->apis.v[*(const size_t *)a], *y = &m->apis.v[*(const size_t *)b];
	int c = strcmp(bn->names[*(const size_t *)a], bn->names[*(const size_t *)b]);
	if (!c)
		c = cmp_u64(x->domain, y->domain);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static int cmp_api_total(const void *a, const void *b)
{
	const api_row *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : cmp_u64(x->domain, y->domain);
}

static void report_apis(const ana_model *m, FILE *out, int top_n)
{
	size_t n = m->apis.n, nr = 0;
	if (!n)
		return;
	size_t *order = malloc(n * sizeof(*order));
	api_row *rows = calloc(n, sizeof(*rows));
	const char **names = malloc(n * sizeof(*names));
	if (!order || !rows || !names) {
		free(names);
		goto out;
	}
	uint64_t n_rt = 0, n_drv = 0;
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		names[i] = ana_string_get(m, m->apis.v[i].pid, m->apis.v[i].name_id);
		if (m->apis.v[i].domain == GTT_API_RUNTIME)
			n_rt++;
		else
			n_drv++;
	}
	by_name bn = { m, names };
	qsort_r(order, n, sizeof(*order), cmp_api_name, &bn);
	free(names);
	for (size_t i = 0; i < n; i++) {
		const gtt_cuda_api *a = &m->apis.v[order[i]];
		const char *name = ana_string_get(m, a->pid, a->name_id);
		if (!nr || strcmp(rows[nr - 1].name, name) != 0 || rows[nr - 1].domain != a->domain) {
			rows[nr].name = name;
			rows[nr].domain = a->domain;
			nr++;
		}
		api_row *r = &rows[nr - 1];
		uint64_t d = ana_span(a->start_ns, a->end_ns);
		r->count++;
		r->total_ns = ana_sat_add(r->total_ns, d);
		if (d > r->max_ns)
			r->max_ns = d;
		if (a->status != 0)
			r->n_err++;
	}
	qsort(rows, nr, sizeof(*rows), cmp_api_total);
	fprintf(out, "\nCUDA API calls (%" PRIu64 " runtime, %" PRIu64 " driver; top %d by total time):\n", n_rt, n_drv,
	        top_n);
	fprintf(out, "  %9s %12s %11s %11s %7s  %s\n", "count", "total ms", "mean us", "max us", "errors", "call");
	for (size_t i = 0; i < nr && (int)i < top_n; i++) {
		const api_row *r = &rows[i];
		fprintf(out, "  %9" PRIu64 " %12.3f %11.3f %11.3f %7" PRIu64 "  %s%s\n", r->count, (double)r->total_ns / (double)GT_NS_PER_MS,
		        (double)r->total_ns / (double)r->count / (double)GT_NS_PER_US, (double)r->max_ns / (double)GT_NS_PER_US, r->n_err, r->name,
		        r->domain == GTT_API_DRIVER ? " (driver)" : "");
	}
out:
	free(order);
	free(rows);
}

/* ---- copies, memsets, syncs ---- */

static void report_copies(const ana_model *m, FILE *out)
{
	static const char *const dir_names[] = { "unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	uint64_t count[6] = { 0 }, bytes[6] = { 0 }, ns[6] = { 0 }, async[6] = { 0 };
	if (!m->memcpys.n && !m->memsets.n)
		return;
	for (size_t i = 0; i < m->memcpys.n; i++) {
		const gtt_cuda_memcpy *c = &m->memcpys.v[i];
		uint32_t k = c->kind < 6 ? c->kind : 0;
		count[k]++;
		bytes[k] = ana_sat_add(bytes[k], c->bytes);
		ns[k] = ana_sat_add(ns[k], ana_span(c->start_ns, c->end_ns));
		async[k] += c->flags & 1;
	}
	fprintf(out, "\nMemory copies by direction:\n");
	fprintf(out, "  %-9s %9s %9s %14s %12s %10s\n", "direction", "count", "async", "bytes", "total ms", "GB/s");
	for (int k = 1; k <= 6; k++) {
		int d = k % 6;    /* unknown last */
		if (!count[d])
			continue;
		fprintf(out, "  %-9s %9" PRIu64 " %9" PRIu64 " %14" PRIu64 " %12.3f %10.2f\n", dir_names[d], count[d], async[d],
		        bytes[d], (double)ns[d] / (double)GT_NS_PER_MS, ns[d] ? (double)bytes[d] / (double)ns[d] : 0.0);
	}
	if (m->memsets.n) {
		uint64_t b = 0, t = 0;
		for (size_t i = 0; i < m->memsets.n; i++) {
			b = ana_sat_add(b, m->memsets.v[i].bytes);
			t = ana_sat_add(t, ana_span(m->memsets.v[i].start_ns, m->memsets.v[i].end_ns));
		}
		fprintf(out, "  memsets: %zu, %" PRIu64 " bytes, %.3f ms\n", m->memsets.n, b, (double)t / (double)GT_NS_PER_MS);
	}
}

static void report_syncs(const ana_model *m, FILE *out)
{
	static const char *const names[] = { "unknown", "event synchronize", "stream wait event",
	                                     "stream synchronize", "context synchronize" };
	uint64_t count[5] = { 0 }, ns[5] = { 0 }, max[5] = { 0 };
	if (!m->syncs.n)
		return;
	for (size_t i = 0; i < m->syncs.n; i++) {
		const gtt_cuda_sync *s = &m->syncs.v[i];
		uint32_t k = s->kind < 5 ? s->kind : 0;
		uint64_t d = ana_span(s->start_ns, s->end_ns);
		count[k]++;
		ns[k] = ana_sat_add(ns[k], d);
		if (d > max[k])
			max[k] = d;
	}
	fprintf(out, "\nSynchronization (host waiting for the GPU):\n");
	fprintf(out, "  %9s %12s %11s  %s\n", "count", "total ms", "max us", "kind");
	for (int k = 1; k <= 5; k++) {
		int d = k % 5;
		if (count[d])
			fprintf(out, "  %9" PRIu64 " %12.3f %11.3f  %s\n", count[d], (double)ns[d] / (double)GT_NS_PER_MS, (double)max[d] / (double)GT_NS_PER_US,
			        names[d]);
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
	api_row *rows = calloc(n, sizeof(*rows));
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
		api_row *r = &rows[nr - 1];
		uint64_t d = ana_span(v->start_ns, v->end_ns);
		r->count++;
		r->total_ns = ana_sat_add(r->total_ns, d);
		if (d > r->max_ns)
			r->max_ns = d;
	}
	qsort(rows, nr, sizeof(*rows), cmp_api_total);
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

static void report_header(const ana_gpu_ctx *g, FILE *out)
{
	const ana_model *m = g->m;
	fprintf(out, "\n== GPU ==\n");
	/* the first (pid, device) of each physical device: devs are made in that order */
	const ana_gpu_dev **first = calloc(g->n_phys ? (size_t)g->n_phys : 1, sizeof(*first));
	if (!first)
		return;
	for (size_t i = 0; i < g->n_devs; i++)
		if (!first[g->devs[i].index])
			first[g->devs[i].index] = &g->devs[i];
	for (int p = 0; p < g->n_phys; p++) {
		const ana_gpu_dev *d = first[p];
		const gtt_cuda_device *info = device_info(g, d->pid, d->device);
		fprintf(out, "GPU %d: pid %u device %u", p, d->pid, d->device);
		if (info)
			fprintf(out, ", %s (cc %u.%u, %u SMs, %.1f GiB)", info->name, info->cc_major, info->cc_minor,
			        info->sm_count, (double)info->global_mem_bytes / 1073741824.0);
		fputc('\n', out);
	}
	free(first);
	fprintf(out, "CUDA records: %zu kernels, %zu copies, %zu memsets, %zu syncs, %zu API calls, %zu allocations, "
	        "%zu NVTX\n", m->kernels.n, m->memcpys.n, m->memsets.n, m->syncs.n, m->apis.n, m->allocs.n, m->nvtx.n);
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
	if (m->kernels.n && !m->apis.n)
		fprintf(out, "note: no CUDA API records (GT_CUPTI_API=none?): kernels cannot be linked to threads\n");
}

static int has_cuda(const ana_model *m)
{
	if (m->kernels.n || m->memcpys.n || m->memsets.n || m->syncs.n || m->apis.n || m->allocs.n || m->nvtx.n ||
	    m->cuda_devices.n)
		return 1;
	for (size_t i = 0; i < m->health.n; i++)
		if (m->health.v[i].source == GTT_SRC_CUPTI)
			return 1;
	return 0;
}

void ana_gpu_report(const ana_model *m, FILE *out, int top_n)
{
	ana_gpu_ctx g;
	name_row *rows = NULL;
	size_t nr = 0, *order = NULL;
	if (!m || !out || !has_cuda(m))
		return;
	if (top_n <= 0)
		top_n = 20;
	if (ana_gpu_ctx_build(&g, m) < 0) {
		fprintf(out, "\n== GPU ==\n(out of memory)\n");
		goto out;
	}
	report_header(&g, out);
	ana_gpu_report_busy(&g, out);
	uint64_t kernel_total = 0;
	for (size_t i = 0; i < m->kernels.n; i++)
		kernel_total = ana_sat_add(kernel_total, ana_span(m->kernels.v[i].start_ns, m->kernels.v[i].end_ns));
	if (m->kernels.n) {
		rows = kernel_rows(m, &nr, &order);
		if (rows)
			report_kernels(m, out, top_n, rows, nr, kernel_total);
	}
	report_apis(m, out, top_n);
	report_copies(m, out);
	report_syncs(m, out);
	report_allocs(m, out, m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0);
	report_nvtx(m, out, top_n);
	ana_gpu_report_idle(&g, out, top_n < 10 ? top_n : 10);
	ana_launch_report(m, out, top_n < 5 ? top_n : 5);
out:
	free(rows);
	free(order);
	ana_gpu_ctx_free(&g);
}
