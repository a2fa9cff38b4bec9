/* gpu_idle.c — the time-based part of the GPU report: busy % over time, idle gaps and GPU-idle
 * blame (per host thread: CUDA API time by kind, exact; CPU samples by GIL class, estimated;
 * the rest off-CPU), and kernel launch sites through the correlation id. */
#include "gpu_idle.h"

#include "bounds.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* What a host thread can be doing, in report order. */
enum {
	ST_SYNC, ST_LAUNCH, ST_ALLOC, ST_COPY, ST_API_OTHER,            /* inside a CUDA API call */
	ST_PY_GIL, ST_NATIVE_GIL, ST_NATIVE_NOGIL, ST_WAIT_GIL, ST_NONPY, /* sampled on CPU */
	ST_OFF,                                                          /* neither */
	ST_COUNT
};
static const char *const st_names[ST_COUNT] = {
	"synchronizing", "launching", "in the allocator", "copying", "other CUDA calls",
	"python+GIL", "native+GIL", "native, no GIL", "waiting for GIL", "native",
	"off-CPU/unsampled",
};

static int class_state(int cls)
{
	switch (cls) {
	case ANA_CLASS_PY_GIL: return ST_PY_GIL;
	case ANA_CLASS_NATIVE_GIL: return ST_NATIVE_GIL;
	case ANA_CLASS_NATIVE_NOGIL: return ST_NATIVE_NOGIL;
	case ANA_CLASS_WAIT_GIL: return ST_WAIT_GIL;
	default: return ST_NONPY;
	}
}

/* The kind of a CUDA API call, from its name (runtime or driver). */
static int api_state(const char *n)
{
	if (strstr(n, "Synchronize") || strstr(n, "EventQuery") || strstr(n, "StreamQuery"))
		return ST_SYNC;
	if (strstr(n, "Malloc") || strstr(n, "Free") || strstr(n, "MemAlloc") || strstr(n, "MemCreate") ||
	    strstr(n, "MemRelease") || strstr(n, "MemMap") || strstr(n, "MemUnmap") || strstr(n, "MemSetAccess") ||
	    strstr(n, "MemAddress") || strstr(n, "HostAlloc") || strstr(n, "HostRegister") ||
	    strstr(n, "MemPool") || strstr(n, "HostUnregister"))
		return ST_ALLOC;
	if (strstr(n, "Launch"))
		return ST_LAUNCH;
	if (strstr(n, "Memcpy") || strstr(n, "Memset"))
		return ST_COPY;
	return ST_API_OTHER;
}

/* A thread's CUDA API time as disjoint outermost spans (a driver call inside a runtime call
 * belongs to the runtime call). */
typedef struct tspan {
	uint64_t start_ns, end_ns;
	int state;
	const char *name;
} tspan;

typedef struct hthread {
	uint32_t pid, tid;
	const char *name;
	size_t *samples;       /* indices into m->samples, time order */
	size_t n_samples;
	tspan *spans;
	size_t n_spans;
} hthread;

typedef struct hctx {
	const ana_model *m;
	hthread *th;
	size_t n_th;
} hctx;

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_thread(const void *a, const void *b)
{
	const hthread *x = a, *y = b;
	int c = cmp_u64(x->pid, y->pid);
	return c ? c : cmp_u64(x->tid, y->tid);
}

static hthread *find_thread(const hctx *h, uint32_t pid, uint32_t tid)
{
	hthread key = { .pid = pid, .tid = tid };
	return bsearch(&key, h->th, h->n_th, sizeof(*h->th), cmp_thread);
}

static int cmp_api_start(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_cuda_api *x = &m->apis.v[*(const size_t *)a], *y = &m->apis.v[*(const size_t *)b];
	int c = cmp_u64(x->pid, y->pid);
	if (!c)
		c = cmp_u64(x->tid, y->tid);
	if (!c)
		c = cmp_u64(x->start_ns, y->start_ns);
	if (!c)
		c = -cmp_u64(x->end_ns, y->end_ns);    /* the outer call first */
	if (!c)
		c = cmp_u64(x->domain, y->domain);   /* runtime before driver */
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static int cmp_sample(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const ana_sample *x = &m->samples.v[*(const size_t *)a], *y = &m->samples.v[*(const size_t *)b];
	int c = cmp_u64(x->pid, y->pid);
	if (!c)
		c = cmp_u64(x->tid, y->tid);
	if (!c)
		c = cmp_u64(x->time_ns, y->time_ns);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static void hctx_free(hctx *h)
{
	for (size_t i = 0; h->th && i < h->n_th; i++) {
		free(h->th[i].samples);
		free(h->th[i].spans);
	}
	free(h->th);
}

/* Threads: every recorded thread plus any that only made CUDA calls. */
static int hctx_build(hctx *h, const ana_model *m)
{
	memset(h, 0, sizeof(*h));
	h->m = m;
	size_t cap = m->threads.n + m->apis.n + 1, *api_order = NULL, *smp_order = NULL;
	int rc = -1;
	h->th = calloc(cap, sizeof(*h->th));
	api_order = malloc((m->apis.n + 1) * sizeof(*api_order));
	smp_order = malloc((m->samples.n + 1) * sizeof(*smp_order));
	if (!h->th || !api_order || !smp_order)
		goto out;
	for (size_t i = 0; i < m->threads.n; i++) {
		h->th[h->n_th].pid = m->threads.v[i].pid;
		h->th[h->n_th].tid = m->threads.v[i].tid;
		h->th[h->n_th].name = m->threads.v[i].name ? m->threads.v[i].name : "?";
		h->n_th++;
	}
	for (size_t i = 0; i < m->apis.n; i++)
		api_order[i] = i;
	qsort_r(api_order, m->apis.n, sizeof(*api_order), cmp_api_start, (void *)m);
	for (size_t i = 0; i < m->apis.n; i++) {
		const gtt_cuda_api *a = &m->apis.v[api_order[i]];
		if (i && a->pid == m->apis.v[api_order[i - 1]].pid && a->tid == m->apis.v[api_order[i - 1]].tid)
			continue;
		if (!ana_thread_find(m, a->pid, a->tid)) {
			h->th[h->n_th].pid = a->pid;
			h->th[h->n_th].tid = a->tid;
			h->th[h->n_th].name = "?";
			h->n_th++;
		}
	}
	qsort(h->th, h->n_th, sizeof(*h->th), cmp_thread);
	/* outermost API spans per thread */
	for (size_t i = 0; i < m->apis.n;) {
		const gtt_cuda_api *a0 = &m->apis.v[api_order[i]];
		size_t j = i;
		while (j < m->apis.n && m->apis.v[api_order[j]].pid == a0->pid && m->apis.v[api_order[j]].tid == a0->tid)
			j++;
		hthread *t = find_thread(h, a0->pid, a0->tid);
		if (!(t->spans = malloc((j - i) * sizeof(*t->spans))))
			goto out;
		for (size_t k = i; k < j; k++) {
			const gtt_cuda_api *a = &m->apis.v[api_order[k]];
			uint64_t e = a->end_ns > a->start_ns ? a->end_ns : a->start_ns;
			tspan *last = t->n_spans ? &t->spans[t->n_spans - 1] : NULL;
			if (last && a->start_ns < last->end_ns) {
				if (e > last->end_ns)
					last->end_ns = e;
				continue;
			}
			tspan *s = &t->spans[t->n_spans++];
			s->start_ns = a->start_ns;
			s->end_ns = e;
			s->name = ana_string_get(m, a->pid, a->name_id);
			s->state = api_state(s->name);
		}
		i = j;
	}
	/* samples per thread */
	for (size_t i = 0; i < m->samples.n; i++)
		smp_order[i] = i;
	qsort_r(smp_order, m->samples.n, sizeof(*smp_order), cmp_sample, (void *)m);
	for (size_t i = 0; i < m->samples.n;) {
		const ana_sample *s0 = &m->samples.v[smp_order[i]];
		size_t j = i;
		while (j < m->samples.n && m->samples.v[smp_order[j]].pid == s0->pid &&
		       m->samples.v[smp_order[j]].tid == s0->tid)
			j++;
		hthread *t = find_thread(h, s0->pid, s0->tid);
		if (t) {
			if (!(t->samples = malloc((j - i) * sizeof(*t->samples))))
				goto out;
			memcpy(t->samples, smp_order + i, (j - i) * sizeof(*t->samples));
			t->n_samples = j - i;
		}
		i = j;
	}
	rc = 0;
out:
	free(api_order);
	free(smp_order);
	return rc;
}

/* First span of t with end > t0. */
static size_t span_after(const hthread *t, uint64_t t0)
{
	size_t lo = 0, hi = t->n_spans;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->spans[mid].end_ns <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First sample of t at or after t0. */
static size_t sample_at(const ana_model *m, const hthread *t, uint64_t t0)
{
	size_t lo = 0, hi = t->n_samples;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->samples.v[t->samples[mid]].time_ns < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int in_spans(const hthread *t, uint64_t ts)
{
	size_t i = span_after(t, ts);
	return i < t->n_spans && t->spans[i].start_ns <= ts;
}

/* One thread during [g0, g1): ns per state (samples: count x period, capped by what API time leaves),
 * samples per state, the longest API call name, and the most frequent leaf frame of the samples. */
typedef struct tblame {
	uint64_t ns[ST_COUNT];
	uint64_t n_samples[ST_COUNT];
	uint64_t api_max_ns[ST_COUNT];
	const char *api_top[ST_COUNT];
	uint32_t top_stack;
	uint64_t top_stack_n;
} tblame;

static uint32_t leaf_frame(const ana_model *m, uint32_t stack_id)
{
	if (stack_id >= m->stacks.n || !m->stacks.v[stack_id].n)
		return UINT32_MAX;
	return m->stacks.v[stack_id].frames[m->stacks.v[stack_id].n - 1];
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* clamp: samples stand for at most the gap time that API calls leave (one gap shown on its own);
 * without it the sampled estimate stays unbiased for summing over many gaps shorter than a
 * sampling period, and ns[ST_OFF] is left 0 for the caller to compute from the totals. */
static void blame_thread(const ana_model *m, const hthread *t, uint64_t g0, uint64_t g1, tblame *b, int want_leaf,
                         int clamp)
{
	memset(b, 0, sizeof(*b));
	b->top_stack = UINT32_MAX;
	uint64_t api_ns = 0;
	for (size_t i = span_after(t, g0); i < t->n_spans && t->spans[i].start_ns < g1; i++) {
		const tspan *s = &t->spans[i];
		uint64_t a = s->start_ns > g0 ? s->start_ns : g0, e = s->end_ns < g1 ? s->end_ns : g1;
		if (e <= a)
			continue;
		b->ns[s->state] += e - a;
		api_ns += e - a;
		if (e - a > b->api_max_ns[s->state]) {
			b->api_max_ns[s->state] = e - a;
			b->api_top[s->state] = s->name;
		}
	}
	uint64_t sampled = 0;
	size_t first = sample_at(m, t, g0), n_leaf = 0;
	uint32_t leaves[256];
	for (size_t i = first; i < t->n_samples; i++) {
		const ana_sample *s = &m->samples.v[t->samples[i]];
		if (s->time_ns >= g1)
			break;
		if (in_spans(t, s->time_ns))
			continue;
		int st = class_state(s->cls);
		b->n_samples[st]++;
		b->ns[st] = ana_sat_add(b->ns[st], s->weight_ns);
		sampled = ana_sat_add(sampled, s->weight_ns);
		if (want_leaf && n_leaf < 256)
			leaves[n_leaf++] = leaf_frame(m, s->stack_id);
	}
	uint64_t gap = g1 - g0, room = gap - (api_ns < gap ? api_ns : gap);
	if (!clamp)
		goto leaf;
	if (sampled > room) {
		/* samples stand for more time than is left: scale their estimate down to fit */
		for (int st = ST_PY_GIL; st <= ST_NONPY; st++)
			b->ns[st] = sampled ? ana_d2u64((double)b->ns[st] * (double)room / (double)sampled) : 0;
		sampled = room;
	}
	b->ns[ST_OFF] = room - sampled;
leaf:
	if (n_leaf) {
		qsort(leaves, n_leaf, sizeof(*leaves), cmp_u32);
		for (size_t i = 0, j; i < n_leaf; i = j) {
			for (j = i; j < n_leaf && leaves[j] == leaves[i]; j++)
				;
			if (j - i > b->top_stack_n && leaves[i] != UINT32_MAX) {
				b->top_stack_n = j - i;
				b->top_stack = leaves[i];
			}
		}
	}
}

typedef struct gap {
	uint64_t start_ns, end_ns;
	int dev;
	size_t before, after;    /* busy-span indices around the gap */
} gap;

/* First of the gaps g[0..n) (disjoint, in time order) that ends after t0. */
static size_t gap_after(const gap *g, size_t n, uint64_t t0)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g[mid].end_ns <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* What t did during all the gaps g[0..n) (disjoint, in time order): the sum over the gaps of
 * blame_thread(..., want_leaf 0, clamp 0), in one walk over the thread's own API spans and
 * samples (a walk over the gaps per thread costs threads x gaps). */
static void blame_gaps(const ana_model *m, const hthread *t, const gap *g, size_t n, tblame *b)
{
	memset(b, 0, sizeof(*b));
	b->top_stack = UINT32_MAX;
	for (size_t i = 0; i < t->n_spans; i++) {
		const tspan *s = &t->spans[i];
		for (size_t k = gap_after(g, n, s->start_ns); k < n && g[k].start_ns < s->end_ns; k++) {
			uint64_t a = s->start_ns > g[k].start_ns ? s->start_ns : g[k].start_ns;
			uint64_t e = s->end_ns < g[k].end_ns ? s->end_ns : g[k].end_ns;
			if (e <= a)
				continue;
			b->ns[s->state] = ana_sat_add(b->ns[s->state], e - a);
			if (e - a > b->api_max_ns[s->state]) {
				b->api_max_ns[s->state] = e - a;
				b->api_top[s->state] = s->name;
			}
		}
	}
	for (size_t i = 0; i < t->n_samples; i++) {
		const ana_sample *s = &m->samples.v[t->samples[i]];
		size_t k = gap_after(g, n, s->time_ns);
		if (k == n || g[k].start_ns > s->time_ns || in_spans(t, s->time_ns))
			continue;
		int st = class_state(s->cls);
		b->n_samples[st]++;
		b->ns[st] = ana_sat_add(b->ns[st], s->weight_ns);
	}
}

static uint64_t active_ns(const tblame *b)
{
	uint64_t s = 0;
	for (int st = 0; st < ST_OFF; st++)
		s += b->ns[st];
	return s;
}

static void print_blame(const ana_model *m, FILE *out, const hthread *t, const tblame *b, const char *indent)
{
	fprintf(out, "%sthread %u %s:", indent, t->tid, t->name);
	const char *sep = " ";
	for (int st = 0; st < ST_COUNT; st++) {
		if (!b->ns[st] && !b->n_samples[st])
			continue;
		fprintf(out, "%s%s %s%.3f ms", sep, st_names[st], st >= ST_PY_GIL && st < ST_OFF ? "~" : "",
		        (double)b->ns[st] / (double)GT_NS_PER_MS);
		if (st < ST_PY_GIL && b->api_top[st])
			fprintf(out, " (%s)", b->api_top[st]);
		else if (st >= ST_PY_GIL && st < ST_OFF)
			fprintf(out, " (%" PRIu64 " sample%s)", b->n_samples[st], b->n_samples[st] == 1 ? "" : "s");
		sep = ", ";
	}
	if (b->top_stack != UINT32_MAX && b->top_stack < m->frames.n)
		fprintf(out, "; top frame %s", m->frames.v[b->top_stack].name);
	fputc('\n', out);
}

/* ---- busy % ---- */

/* At most this many buckets per device: a hostile trace can span 2^64 ns. */
#define BUSY_MAX_BUCKETS 200

static uint64_t bucket_ns_for(uint64_t span_ns)
{
	static const uint64_t steps_ms[] = { 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 300000, 600000 };
	for (size_t i = 0; i < sizeof(steps_ms) / sizeof(steps_ms[0]); i++)
		if (span_ns / (steps_ms[i] * GT_NS_PER_MS) < BUSY_MAX_BUCKETS)
			return steps_ms[i] * GT_NS_PER_MS;
	return 600000 * GT_NS_PER_MS; /* longer recordings: ana_bins widens the buckets */
}

void ana_gpu_report_busy(const ana_gpu_ctx *g, FILE *out)
{
	const ana_model *m = g->m;
	if (!g->n_busy)
		return;
	ana_bins bins;
	ana_bins_init(&bins, m->start_ns, m->end_ns, bucket_ns_for(ana_span(m->start_ns, m->end_ns)),
	              BUSY_MAX_BUCKETS);
	uint64_t t0 = bins.t0, t1 = bins.t1, bucket = bins.width_ns;
	size_t nb = bins.n;
	uint64_t *busy = calloc(nb, sizeof(*busy));
	if (!busy)
		return;
	fprintf(out, "\nGPU busy (union of kernels, copies and memsets on the device):\n");
	/* busy spans are sorted by (device, start): each device's are one run */
	for (size_t r0 = 0, r1; r0 < g->n_busy; r0 = r1) {
		int d = g->busy[r0].dev;
		for (r1 = r0; r1 < g->n_busy && g->busy[r1].dev == d; r1++)
			;
		uint64_t total = 0, first = UINT64_MAX, last = 0;
		memset(busy, 0, nb * sizeof(*busy));
		for (size_t i = r0; i < r1; i++) {
			const ana_gpu_span *s = &g->busy[i];
			uint64_t a = s->start_ns < t0 ? t0 : s->start_ns, e = s->end_ns > t1 ? t1 : s->end_ns;
			if (s->start_ns < first)
				first = s->start_ns;
			if (s->end_ns > last)
				last = s->end_ns;
			if (e <= a)
				continue;
			total += e - a; /* busy spans of a device are disjoint and inside [t0, t1) */
			for (uint64_t x = a; x < e;) {
				size_t bi = ana_bins_index(&bins, x);
				uint64_t be = ana_bins_end(&bins, bi), ce = be < e ? be : e;
				busy[bi] += ce - x;
				x = ce;
			}
		}
		if (first == UINT64_MAX)
			continue;
		uint64_t active = ana_span(first, last);
		fprintf(out, "  GPU %d: busy %.1f%% of the recording (%.3f of %.3f s); %.1f%% between its first and last "
		        "work (%.3f s)\n", d, 100.0 * (double)total / (double)(t1 - t0), gt_ns_to_s(total),
		        gt_ns_to_s(t1 - t0), active ? 100.0 * (double)total / (double)active : 100.0,
		        gt_ns_to_s(active));
		fprintf(out, "  GPU %d busy %% per %.1f s from the start of the recording:\n", d, gt_ns_to_s(bucket));
		for (size_t i = 0; i < nb; i++) {
			uint64_t len = ana_bins_end(&bins, i) - ana_bins_start(&bins, i);
			if (i % 10 == 0)
				fprintf(out, "    %8.1f s:", gt_ns_to_s(ana_bins_start(&bins, i) - t0));
			fprintf(out, " %3.0f", len ? 100.0 * (double)busy[i] / (double)len : 0.0);
			if (i % 10 == 9 || i + 1 == nb)
				fputc('\n', out);
		}
	}
	free(busy);
}

/* ---- idle gaps ---- */

/* Devices whose idle time is broken down per host thread (each costs a walk over every thread). */
#define BLAME_MAX_DEVICES 64


static int cmp_gap_len(const void *a, const void *b)
{
	const gap *x = a, *y = b;
	uint64_t lx = x->end_ns - x->start_ns, ly = y->end_ns - y->start_ns;
	if (lx != ly)
		return lx > ly ? -1 : 1;
	int c = cmp_u64(x->start_ns, y->start_ns);
	return c ? c : x->dev - y->dev;
}

/* The work that ended a gap: the first act of dev starting at t. */
static const ana_gpu_act *act_at(const ana_gpu_ctx *g, int dev, uint64_t t)
{
	size_t lo = 0, hi = g->n_acts;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const ana_gpu_act *a = &g->acts[mid];
		if (a->dev < dev || (a->dev == dev && a->start_ns < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->n_acts && g->acts[lo].dev == dev ? &g->acts[lo] : NULL;
}

static const gtt_cuda_api *api_for(const ana_model *m, uint32_t pid, uint32_t corr, const size_t *by_corr)
{
	size_t lo = 0, hi = m->apis.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const gtt_cuda_api *a = &m->apis.v[by_corr[mid]];
		if (a->pid < pid || (a->pid == pid && a->correlation < corr))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* runtime records sort first among equal ids */
	if (lo < m->apis.n && m->apis.v[by_corr[lo]].pid == pid && m->apis.v[by_corr[lo]].correlation == corr)
		return &m->apis.v[by_corr[lo]];
	return NULL;
}

static int cmp_api_corr(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_cuda_api *x = &m->apis.v[*(const size_t *)a], *y = &m->apis.v[*(const size_t *)b];
	int c = cmp_u64(x->pid, y->pid);
	if (!c)
		c = cmp_u64(x->correlation, y->correlation);
	if (!c)
		c = cmp_u64(x->domain, y->domain);
	return c ? c : cmp_u64(*(const size_t *)a, *(const size_t *)b);
}

static size_t *corr_index(const ana_model *m)
{
	size_t *idx = malloc((m->apis.n + 1) * sizeof(*idx));
	if (!idx)
		return NULL;
	for (size_t i = 0; i < m->apis.n; i++)
		idx[i] = i;
	qsort_r(idx, m->apis.n, sizeof(*idx), cmp_api_corr, (void *)m);
	return idx;
}

static void act_pid_corr(const ana_model *m, const ana_gpu_act *a, uint32_t *pid, uint32_t *corr, const char **name)
{
	switch (a->type) {
	case ANA_GPU_KERNEL:
		*pid = m->kernels.v[a->idx].pid;
		*corr = m->kernels.v[a->idx].correlation;
		*name = ana_kernel_name(m, *pid, m->kernels.v[a->idx].name_id);
		break;
	case ANA_GPU_COPY:
		*pid = m->memcpys.v[a->idx].pid;
		*corr = m->memcpys.v[a->idx].correlation;
		*name = "memcpy";
		break;
	default:
		*pid = m->memsets.v[a->idx].pid;
		*corr = m->memsets.v[a->idx].correlation;
		*name = "memset";
		break;
	}
}

static int cmp_active(const void *a, const void *b, void *ctx)
{
	const tblame *bl = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = -cmp_u64(active_ns(&bl[x]), active_ns(&bl[y]));
	return c ? c : cmp_u64(x, y);
}

static void print_gap(const ana_gpu_ctx *g, const hctx *h, FILE *out, const gap *gp, int rank, const size_t *by_corr)
{
	const ana_model *m = g->m;
	uint64_t len = gp->end_ns - gp->start_ns;
	fprintf(out, "  #%d GPU %d idle %.3f ms from %.6f s\n", rank, gp->dev, (double)len / (double)GT_NS_PER_MS,
	        gt_ns_to_s(gp->start_ns - m->start_ns));
	const ana_gpu_act *next = act_at(g, gp->dev, gp->end_ns);
	if (next) {
		uint32_t pid, corr;
		const char *name;
		act_pid_corr(m, next, &pid, &corr, &name);
		const gtt_cuda_api *a = by_corr ? api_for(m, pid, corr, by_corr) : NULL;
		size_t nl = strlen(name);
		fprintf(out, "     ended by %.*s%s", nl > 60 ? 57 : (int)nl, name, nl > 60 ? "..." : "");
		if (a) {
			const hthread *t = find_thread(h, a->pid, a->tid);
			fprintf(out, ", submitted by thread %u %s through %s at %+.3f ms from the gap's start", a->tid,
			        t ? t->name : "?", ana_string_get(m, a->pid, a->name_id),
			        ((double)a->start_ns - (double)gp->start_ns) / (double)GT_NS_PER_MS);
		}
		fputc('\n', out);
	}
	size_t shown = 0, idle = 0;
	tblame *bl = calloc(h->n_th ? h->n_th : 1, sizeof(*bl));
	size_t *order = calloc(h->n_th ? h->n_th : 1, sizeof(*order));
	if (!bl || !order)
		goto out;
	for (size_t i = 0; i < h->n_th; i++) {
		blame_thread(m, &h->th[i], gp->start_ns, gp->end_ns, &bl[i], 1, 1);
		order[i] = i;
	}
	/* most active threads first; ties by (pid, tid) order */
	qsort_r(order, h->n_th, sizeof(*order), cmp_active, bl);
	for (size_t i = 0; i < h->n_th; i++) {
		const tblame *b = &bl[order[i]];
		if (!active_ns(b)) {
			idle++;
			continue;
		}
		if (shown++ < 8)
			print_blame(m, out, &h->th[order[i]], b, "     ");
	}
	if (shown > 8)
		fprintf(out, "     (%zu more active threads)\n", shown - 8);
	if (idle)
		fprintf(out, "     (%zu thread%s off-CPU or unsampled throughout)\n", idle, idle == 1 ? "" : "s");
out:
	free(bl);
	free(order);
}

void ana_gpu_report_idle(const ana_gpu_ctx *g, FILE *out, int top_n)
{
	const ana_model *m = g->m;
	hctx h;
	gap *gaps = NULL;
	size_t ng = 0, *by_corr = NULL;
	if (g->n_busy < 2)
		return;
	if (hctx_build(&h, m) < 0)
		goto out;
	gaps = calloc(g->n_busy, sizeof(*gaps));
	by_corr = corr_index(m);
	if (!gaps || !by_corr)
		goto out;
	for (size_t i = 1; i < g->n_busy; i++)
		if (g->busy[i].dev == g->busy[i - 1].dev && g->busy[i].start_ns > g->busy[i - 1].end_ns) {
			gap *gp = &gaps[ng++];
			gp->start_ns = g->busy[i - 1].end_ns;
			gp->end_ns = g->busy[i].start_ns;
			gp->dev = g->busy[i].dev;
			gp->before = i - 1;
			gp->after = i;
		}
	fprintf(out, "\nGPU idle between work (gaps from the end of one piece of work to the start of the next):\n");
	static const uint64_t edges[] = { 10000, 100000, 1000000, 10000000, UINT64_MAX };
	static const char *const edge_names[] = { "< 10 us", "10-100 us", "0.1-1 ms", "1-10 ms", ">= 10 ms" };
	/* gaps are in (device, time) order: each device's are one run [g0, g1) */
	size_t n_blamed = 0, n_unblamed = 0;
	for (size_t g0 = 0, g1; g0 < ng; g0 = g1) {
		int d = gaps[g0].dev;
		for (g1 = g0; g1 < ng && gaps[g1].dev == d; g1++)
			;
		uint64_t cnt[5] = { 0 }, ns[5] = { 0 }, total = 0, n = 0;
		for (size_t i = g0; i < g1; i++) {
			uint64_t len = gaps[i].end_ns - gaps[i].start_ns;
			int k = 0;
			while (len >= edges[k])
				k++;
			cnt[k]++;
			ns[k] += len;
			total += len;
			n++;
		}
		if (!n)
			continue;
		fprintf(out, "  GPU %d: %.3f ms idle in %" PRIu64 " gaps:", d, (double)total / (double)GT_NS_PER_MS, n);
		for (int k = 0; k < 5; k++)
			if (cnt[k])
				fprintf(out, " %s %" PRIu64 " (%.3f ms)%s", edge_names[k], cnt[k], (double)ns[k] / (double)GT_NS_PER_MS, k < 4 ? ";" : "");
		fputc('\n', out);
		/* the blame walks every thread's samples once per device: bounded to the first devices
		 * (a host has a few GPUs; a trace naming thousands is not a host's) */
		if (n_blamed == BLAME_MAX_DEVICES) {
			n_unblamed++;
			continue;
		}
		n_blamed++;
		/* GPU-idle blame over all gaps: per thread, sum over gaps */
		fprintf(out, "  GPU-idle blame, GPU %d (per host thread, during all %" PRIu64 " gaps; API time exact, "
		        "~ estimated from samples):\n", d, n);
		size_t idle_threads = 0, shown = 0;
		for (size_t t = 0; t < h.n_th; t++) {
			tblame sum;
			blame_gaps(m, &h.th[t], gaps + g0, g1 - g0, &sum);
			/* samples over all gaps: an unbiased estimate, capped by what API time leaves */
			uint64_t api = 0, sampled = 0;
			for (int st = 0; st < ST_PY_GIL; st++)
				api = ana_sat_add(api, sum.ns[st]);
			for (int st = ST_PY_GIL; st < ST_OFF; st++)
				sampled = ana_sat_add(sampled, sum.ns[st]);
			uint64_t room = total > api ? total - api : 0;
			if (sampled > room) {
				for (int st = ST_PY_GIL; st < ST_OFF; st++)
					sum.ns[st] = ana_d2u64((double)sum.ns[st] * (double)room / (double)sampled);
				sampled = room;
			}
			sum.ns[ST_OFF] = room - sampled;
			if (!active_ns(&sum)) {
				idle_threads++;
				continue;
			}
			shown++;
			print_blame(m, out, &h.th[t], &sum, "    ");
		}
		if (idle_threads)
			fprintf(out, "    (%zu thread%s off-CPU or unsampled during every gap)\n", idle_threads,
			        idle_threads == 1 ? "" : "s");
	}
	if (n_unblamed)
		fprintf(out, "  (GPU-idle blame left out for %zu more devices)\n", n_unblamed);
	qsort(gaps, ng, sizeof(*gaps), cmp_gap_len);
	fprintf(out, "\nLongest GPU idle gaps (top %d) and what every host thread did meanwhile:\n", top_n);
	for (size_t i = 0; i < ng && (int)i < top_n; i++)
		print_gap(g, &h, out, &gaps[i], (int)i + 1, by_corr);
out:
	free(gaps);
	free(by_corr);
	hctx_free(&h);
}

/* ---- launch sites ---- */

typedef struct site { size_t thread; uint32_t stack; const char *api; } site;

static int cmp_site(const void *a, const void *b)
{
	const site *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return strcmp(x->api, y->api);
}

/* The sample of t nearest ts, when it is within two sampling periods. */
static uint32_t stack_near(const ana_model *m, const hthread *t, uint64_t ts)
{
	size_t i = sample_at(m, t, ts);
	const ana_sample *best = NULL;
	uint64_t best_d = UINT64_MAX;
	for (size_t k = i ? i - 1 : 0; k < t->n_samples && k <= i; k++) {
		const ana_sample *s = &m->samples.v[t->samples[k]];
		uint64_t d = s->time_ns > ts ? s->time_ns - ts : ts - s->time_ns;
		if (d < best_d) {
			best_d = d;
			best = s;
		}
	}
	uint64_t window = best && best->weight_ns ? 2 * best->weight_ns : 20000000;
	return best && best_d <= window ? best->stack_id : UINT32_MAX;
}

/* Frames inside the CUDA libraries, the kernel or the vDSO say how a launch is done, not who
 * asked for it: a launch stack is cut at the first of them, leaving the caller. */
static int cuda_internal(const ana_frame *f)
{
	if (f->kind == ANA_FRAME_KERNEL)
		return 1;
	const char *mod = f->module ? f->module : "";
	if (strncmp(mod, "libcuda.", 8) == 0 || strncmp(mod, "libcudart", 9) == 0 ||
	    strncmp(mod, "libcublas", 9) == 0 || strncmp(mod, "libcupti", 8) == 0 || strstr(mod, "vdso"))
		return 1;
	return f->name && (strncmp(f->name, "[libcuda.", 9) == 0 || strncmp(f->name, "[vdso", 5) == 0 ||
	                   strcmp(f->name, "[kernel]") == 0 || strcmp(f->name, "ioctl") == 0);
}

static void print_stack(const ana_model *m, FILE *out, uint32_t stack_id)
{
	if (stack_id >= m->stacks.n) {
		fprintf(out, "(no CPU sample near the launch)");
		return;
	}
	const ana_stack *s = &m->stacks.v[stack_id];
	/* the caller: frames from the root up to the first one inside CUDA (frame-pointer walks
	 * through libcuda produce junk beyond it anyway) */
	uint32_t n = 0;
	while (n < s->n && !cuda_internal(&m->frames.v[s->frames[n]]))
		n++;
	if (!n) {
		fprintf(out, "(only CUDA-internal frames)");
		return;
	}
	uint32_t from = n > 6 ? n - 6 : 0;
	if (from)
		fprintf(out, "...;");
	for (uint32_t i = from; i < n; i++)
		fprintf(out, "%s%s", m->frames.v[s->frames[i]].name, i + 1 < n ? ";" : "");
	if (n < s->n)
		fprintf(out, " (+%u frames in CUDA)", s->n - n);
}

void ana_gpu_report_launches(const ana_gpu_ctx *g, FILE *out, const char *const *names, const char *const *shown,
                             size_t n)
{
	const ana_model *m = g->m;
	hctx h;
	size_t *by_corr = NULL;
	site *sites = NULL;
	if (!n || !m->apis.n)
		return;
	if (hctx_build(&h, m) < 0)
		goto out;
	by_corr = corr_index(m);
	sites = malloc((m->kernels.n + 1) * sizeof(*sites));
	if (!by_corr || !sites)
		goto out;
	fprintf(out, "\nKernel launch sites (launching thread, API call and CPU stack nearest the launch, through "
	        "the correlation id):\n");
	for (size_t r = 0; r < n; r++) {
		size_t ns = 0, unlinked = 0, total = 0;
		for (size_t i = 0; i < m->kernels.n; i++) {
			const gtt_cuda_kernel *k = &m->kernels.v[i];
			if (strcmp(ana_string_get(m, k->pid, k->name_id), names[r]) != 0)
				continue;
			total++;
			const gtt_cuda_api *a = api_for(m, k->pid, k->correlation, by_corr);
			const hthread *t = a ? find_thread(&h, a->pid, a->tid) : NULL;
			if (!t) {
				unlinked++;
				continue;
			}
			sites[ns].thread = (size_t)(t - h.th);
			sites[ns].stack = stack_near(m, t, a->start_ns);
			sites[ns].api = ana_string_get(m, a->pid, a->name_id);
			ns++;
		}
		size_t nl = strlen(shown[r]);
		fprintf(out, "  %.*s%s (%zu launches)\n", nl > 100 ? 97 : (int)nl, shown[r], nl > 100 ? "..." : "", total);
		qsort(sites, ns, sizeof(*sites), cmp_site);
		/* runs of equal (thread, stack, API); the three longest, earlier runs first on ties */
		size_t run_start[3] = { 0 }, run_n[3] = { 0 };
		for (size_t i = 0, j; i < ns; i = j) {
			for (j = i; j < ns && cmp_site(&sites[j], &sites[i]) == 0; j++)
				;
			for (int k = 0; k < 3; k++)
				if (j - i > run_n[k]) {
					for (int l = 2; l > k; l--) {
						run_n[l] = run_n[l - 1];
						run_start[l] = run_start[l - 1];
					}
					run_n[k] = j - i;
					run_start[k] = i;
					break;
				}
		}
		for (int k = 0; k < 3 && run_n[k]; k++) {
			const site *st = &sites[run_start[k]];
			const hthread *t = &h.th[st->thread];
			fprintf(out, "    %zux thread %u %s via %s; stack: ", run_n[k], t->tid, t->name, st->api);
			print_stack(m, out, st->stack);
			fputc('\n', out);
		}
		if (ns > run_n[0] + run_n[1] + run_n[2])
			fprintf(out, "    %zux from other threads or stacks\n", ns - run_n[0] - run_n[1] - run_n[2]);
		if (unlinked)
			fprintf(out, "    %zux not linked (no API record with the same correlation id)\n", unlinked);
	}
out:
	free(by_corr);
	free(sites);
	hctx_free(&h);
}
