/* cupti_encode.c — translates CUPTI activity buffers into .gtt records: kernels, copies, memsets,
 * syncs, API calls (with the nested-driver filter), allocations, NVTX ranges, CUPTI overhead;
 * interns kernel/API/NVTX names as STRING records. Runs on CUPTI's thread, so it must stay cheap:
 * names are found by pointer or callback id, never by hashing a string twice. */
#include "cupti_agent.h"
#include "cupti_nvtx.h"
#include "gt_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cupti.h>

#define PTR_CACHE 4096          /* direct-mapped cache: name pointer -> string id */
#define NESTED_RING 8           /* recent runtime calls checked for nesting */
#define PENDING_MAX 64          /* driver records waiting for their enclosing runtime record */

typedef struct str_ent { uint64_t hash; uint32_t id; char *text; } str_ent;
typedef struct ptr_ent { const char *ptr; const char *text; uint32_t id; } ptr_ent;
typedef struct nvtx_open {
	uint32_t marker_id, pid, tid, name_id, domain_id, color, depth;
	uint64_t start_ns;
} nvtx_open;
typedef struct api_span { uint32_t tid; uint64_t start_ns, end_ns; } api_span;

struct ag_enc {
	gtt_writer *w;
	uint32_t pid, gen, next_id;
	int api_mode;
	str_ent *tab;                 /* open addressing by content hash */
	size_t tab_cap, tab_n;
	ptr_ent cache[PTR_CACHE];
	uint32_t *rt_ids, *drv_ids;   /* callback id -> string id (0 = not yet) */
	nvtx_open *open;              /* NVTX ranges started, not yet ended */
	size_t n_open, cap_open;
	api_span ring[NESTED_RING];   /* recent runtime calls (this buffer) */
	unsigned ring_n;
	const CUpti_ActivityAPI *pend[PENDING_MAX];
	unsigned n_pend;
	uint64_t n_outside;           /* records outside the capture ranges, not yet in the stats (this
	                               * buffer's, and the callbacks' API records since the last one) */
};

/* Inside a capture range (cupti_nvtx.c), or no capture rule: the record is written. */
static int keep(ag_enc *e, int how, uint64_t t0, uint64_t t1, uint32_t corr)
{
	if (ag_cap_keep(how, t0, t1, corr))
		return 1;
	e->n_outside++;
	return 0;
}

uint64_t ag_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

ag_enc *ag_enc_create(gtt_writer *w, uint32_t pid, uint32_t gen, int api_mode)
{
	ag_enc *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->w = w;
	e->pid = pid;
	e->gen = gen & 0xff;
	e->api_mode = api_mode;
	e->tab_cap = 1024;
	e->tab = calloc(e->tab_cap, sizeof(*e->tab));
	e->rt_ids = calloc(CUPTI_RUNTIME_TRACE_CBID_SIZE, sizeof(uint32_t));
	e->drv_ids = calloc(CUPTI_DRIVER_TRACE_CBID_SIZE, sizeof(uint32_t));
	if (!e->tab || !e->rt_ids || !e->drv_ids) {
		ag_enc_destroy(e);
		return NULL;
	}
	return e;
}

void ag_enc_destroy(ag_enc *e)
{
	if (!e)
		return;
	for (size_t i = 0; e->tab && i < e->tab_cap; i++)
		free(e->tab[i].text);
	free(e->tab);
	free(e->rt_ids);
	free(e->drv_ids);
	free(e->open);
	free(e);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h ? h : 1;
}

static int tab_grow(ag_enc *e)
{
	size_t cap = e->tab_cap * 2;
	str_ent *nt = calloc(cap, sizeof(*nt));
	if (!nt)
		return -1;
	for (size_t i = 0; i < e->tab_cap; i++) {
		if (!e->tab[i].hash)
			continue;
		size_t j = e->tab[i].hash & (cap - 1);
		while (nt[j].hash)
			j = (j + 1) & (cap - 1);
		nt[j] = e->tab[i];
	}
	free(e->tab);
	e->tab = nt;
	e->tab_cap = cap;
	/* cached text pointers stay valid: entries moved, their strings did not */
	return 0;
}

/* Find or add text; *stored gets the interned copy. 0 on ENOMEM. */
static uint32_t intern(ag_enc *e, const char *text, const char **stored)
{
	uint64_t h = fnv1a(text);
	size_t j = h & (e->tab_cap - 1);
	while (e->tab[j].hash) {
		if (e->tab[j].hash == h && strcmp(e->tab[j].text, text) == 0) {
			*stored = e->tab[j].text;
			return e->tab[j].id;
		}
		j = (j + 1) & (e->tab_cap - 1);
	}
	if ((e->tab_n + 1) * 2 > e->tab_cap) {
		if (tab_grow(e) < 0)
			return 0;
		return intern(e, text, stored);
	}
	char *copy = strdup(text);
	if (!copy)
		return 0;
	uint32_t id = (e->gen << 24) | (++e->next_id & 0xffffff);
	e->tab[j].hash = h;
	e->tab[j].id = id;
	e->tab[j].text = copy;
	e->tab_n++;
	*stored = copy;
	gtt_record r = { .tag = GTT_REC_STRING };
	r.u.string.pid = e->pid;
	r.u.string.id = id;
	r.u.string.text = copy;
	gtt_write(e->w, &r);
	return id;
}

uint32_t ag_enc_string(ag_enc *e, const char *text)
{
	const char *stored;
	return text ? intern(e, text, &stored) : 0;
}

/* Names CUPTI hands out (kernel names) live as long as their module: cache by pointer, confirm
 * the text so a reused address never gets a stale name. */
static uint32_t name_id(ag_enc *e, const char *name)
{
	if (!name)
		name = "?";
	ptr_ent *c = &e->cache[((uintptr_t)name >> 3) & (PTR_CACHE - 1)];
	if (c->ptr == name && strcmp(c->text, name) == 0)
		return c->id;
	const char *stored = NULL;
	uint32_t id = intern(e, name, &stored);
	if (id) {
		c->ptr = name;
		c->text = stored;
		c->id = id;
	}
	return id;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": the runtime's version tags are noise. */
static uint32_t api_name_id(ag_enc *e, CUpti_CallbackDomain dom, uint32_t cbid)
{
	uint32_t *ids = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? e->rt_ids : e->drv_ids;
	uint32_t n = dom == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_RUNTIME_TRACE_CBID_SIZE : CUPTI_DRIVER_TRACE_CBID_SIZE;
	if (cbid < n && ids[cbid])
		return ids[cbid];
	const char *name = NULL;
	char buf[160];
	if (cuptiGetCallbackName(dom, cbid, &name) != CUPTI_SUCCESS || !name) {
		snprintf(buf, sizeof(buf), "%s#%u", dom == CUPTI_CB_DOMAIN_RUNTIME_API ? "cudart" : "cu", cbid);
	} else {
		snprintf(buf, sizeof(buf), "%s", name);
		char *v = strrchr(buf, '_');
		if (v && v[1] == 'v' && strlen(v + 2) >= 4 && strspn(v + 2, "0123456789") == strlen(v + 2))
			*v = 0;
	}
	const char *stored;
	uint32_t id = intern(e, buf, &stored);
	if (cbid < n)
		ids[cbid] = id;
	return id;
}

uint32_t ag_enc_api_name(ag_enc *e, uint32_t domain, uint32_t cbid)
{
	return api_name_id(e, domain == GTT_API_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

/* name without its version and per-thread-stream suffixes (_v7000, _v2, _ptsz, _ptds) */
static void api_base(const char *name, char *base, size_t len)
{
	snprintf(base, len, "%s", name);
	for (;;) {
		char *u = strrchr(base, '_');
		if (!u)
			break;
		if ((u[1] == 'v' && u[2] && strspn(u + 2, "0123456789") == strlen(u + 2)) || strcmp(u, "_ptsz") == 0 ||
		    strcmp(u, "_ptds") == 0)
			*u = 0;
		else
			break;
	}
}

int ag_api_trivial(const char *name)
{
	static const char *const trivial[] = {
		/* runtime */
		"cudaGetDevice", "cudaGetLastError", "cudaPeekAtLastError", "cudaStreamIsCapturing",
		"cudaStreamGetCaptureInfo", "cudaGetDeviceCount", "cudaDeviceGetAttribute", "cudaGetDeviceProperties",
		"cudaPointerGetAttributes", "cudaFuncGetAttributes", "cudaDriverGetVersion", "cudaRuntimeGetVersion",
		"cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaStreamGetPriority",
		"cudaStreamGetFlags", "cudaStreamGetId", "cudaGetErrorString", "cudaGetErrorName",
		/* driver */
		"cuDevicePrimaryCtxGetState", "cuCtxGetCurrent", "cuCtxGetDevice", "cuCtxGetLimit", "cuCtxGetFlags",
		"cuCtxGetStreamPriorityRange", "cuCtxGetApiVersion", "cuKernelGetName", "cuKernelGetAttribute",
		"cuFuncGetAttribute", "cuFuncGetName", "cuGetProcAddress", "cuStreamGetCaptureInfo",
		"cuStreamIsCapturing", "cuDeviceGetAttribute", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName",
		"cuPointerGetAttribute", "cuPointerGetAttributes", "cuDriverGetVersion", "cuGetErrorString",
		"cuGetErrorName", "cuStreamGetPriority", "cuStreamGetFlags", "cuStreamGetCtx", "cuStreamGetId",
	};
	char base[128];
	api_base(name, base, sizeof(base));
	for (size_t i = 0; i < sizeof(trivial) / sizeof(trivial[0]); i++)
		if (strcmp(base, trivial[i]) == 0)
			return 1;
	return 0;
}

int ag_api_tracked(const char *name)
{
	/* work on the GPU or its memory, waits, and the calls that can block for long (context
	 * creation, module loading, graph instantiation); graph node editing is not among them */
	static const char *const parts[] = {
		"Launch", "Memcpy", "Memset", "MemPrefetch", "Synchronize", "WaitEvent", "WaitValue", "BatchMemOp",
		"Malloc", "Free", "MemAlloc", "MemCreate", "MemRelease", "MemMap", "MemUnmap", "SetAccess",
		"AddressReserve", "HostAlloc", "HostRegister", "HostUnregister", "ModuleLoad", "LibraryLoad",
		"LinkComplete", "CtxCreate", "PrimaryCtxRetain", "DeviceReset",
	};
	static const char *const graph[] = { "GraphLaunch", "GraphInstantiate", "GraphUpload" };
	char base[128];
	api_base(name, base, sizeof(base));
	if (strstr(base, "Graph")) {
		for (size_t i = 0; i < sizeof(graph) / sizeof(graph[0]); i++)
			if (strstr(base, graph[i]))
				return 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(base, parts[i]))
			return 1;
	return 0;
}

static uint32_t memcpy_kind(uint32_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return GTT_MEMCPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return GTT_MEMCPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return GTT_MEMCPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return GTT_MEMCPY_HTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return GTT_MEMCPY_PTOP;
	default: return GTT_MEMCPY_UNKNOWN;
	}
}

static void put_kernel(ag_enc *e, const CUpti_ActivityKernel10 *k)
{
	if (!keep(e, AG_CAP_BY_LAUNCH, k->start, k->end, k->correlationId))
		return;
	gtt_record r = { .tag = GTT_REC_CUDA_KERNEL };
	gtt_cuda_kernel *o = &r.u.kernel;
	o->start_ns = k->start;
	o->end_ns = k->end;
	o->pid = e->pid;
	o->device = k->deviceId;
	o->context = k->contextId;
	o->stream = k->streamId;
	o->correlation = k->correlationId;
	o->grid[0] = (uint32_t)k->gridX; o->grid[1] = (uint32_t)k->gridY; o->grid[2] = (uint32_t)k->gridZ;
	o->block[0] = (uint32_t)k->blockX; o->block[1] = (uint32_t)k->blockY; o->block[2] = (uint32_t)k->blockZ;
	o->shared_bytes = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
	o->registers = k->registersPerThread;
	o->name_id = name_id(e, k->name);
	gtt_write(e->w, &r);
}

/* A copy record: device-to-device and peer copies come as different CUPTI kinds with the same
 * fields. */
#define PUT_COPY(e, m, copy_kind)                                                           \
	do {                                                                                \
		if (!keep((e), AG_CAP_BY_LAUNCH, (m)->start, (m)->end, (m)->correlationId)) \
			return;                                                             \
		gtt_record r = { .tag = GTT_REC_CUDA_MEMCPY };                              \
		r.u.memcpy = (gtt_cuda_memcpy){                                             \
			.start_ns = (m)->start, .end_ns = (m)->end, .pid = (e)->pid,        \
			.device = (m)->deviceId, .context = (m)->contextId,                 \
			.stream = (m)->streamId, .correlation = (m)->correlationId,         \
			.kind = (copy_kind),                                                \
			.flags = ((m)->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0,   \
			.bytes = (m)->bytes };                                              \
		gtt_write((e)->w, &r);                                                      \
	} while (0)

static void put_memcpy(ag_enc *e, const CUpti_ActivityMemcpy6 *m)
{
	PUT_COPY(e, m, memcpy_kind(m->copyKind));
}

static void put_p2p(ag_enc *e, const CUpti_ActivityMemcpyPtoP4 *m)
{
	PUT_COPY(e, m, GTT_MEMCPY_PTOP);
}

static void put_memset(ag_enc *e, const CUpti_ActivityMemset4 *m)
{
	if (!keep(e, AG_CAP_BY_LAUNCH, m->start, m->end, m->correlationId))
		return;
	gtt_record r = { .tag = GTT_REC_CUDA_MEMSET };
	gtt_cuda_memset *o = &r.u.memset;
	o->start_ns = m->start;
	o->end_ns = m->end;
	o->pid = e->pid;
	o->device = m->deviceId;
	o->context = m->contextId;
	o->stream = m->streamId;
	o->correlation = m->correlationId;
	o->value = m->value;
	o->bytes = m->bytes;
	gtt_write(e->w, &r);
}

static void put_sync(ag_enc *e, const CUpti_ActivitySynchronization2 *s)
{
	if (!keep(e, AG_CAP_BY_START, s->start, s->end, s->correlationId))
		return;
	gtt_record r = { .tag = GTT_REC_CUDA_SYNC };
	gtt_cuda_sync *o = &r.u.sync;
	o->start_ns = s->start;
	o->end_ns = s->end;
	o->pid = e->pid;
	o->context = s->contextId;
	o->stream = s->streamId;
	o->correlation = s->correlationId;
	o->kind = s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? (uint32_t)s->type : 0;
	gtt_write(e->w, &r);
}

int ag_enc_put_api(ag_enc *e, gtt_cuda_api *a)
{
	if (!keep(e, AG_CAP_BY_START, a->start_ns, a->end_ns, a->correlation))
		return 0;
	a->pid = e->pid;
	a->name_id = ag_enc_api_name(e, a->domain, a->cbid);
	gtt_record r = { .tag = GTT_REC_CUDA_API };
	r.u.api = *a;
	return gtt_write(e->w, &r) == 0;
}

/* A CUPTI API activity record, through the same writer as the callbacks' (ag_enc_put_api). */
static void put_api(ag_enc *e, const CUpti_ActivityAPI *a)
{
	gtt_cuda_api o = { .start_ns = a->start, .end_ns = a->end, .tid = a->threadId, .correlation = a->correlationId,
	                   .domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? GTT_API_RUNTIME : GTT_API_DRIVER,
	                   .cbid = a->cbid, .status = (int32_t)a->returnValue };
	ag_enc_put_api(e, &o);
}

static int nested(const CUpti_ActivityAPI *d, const api_span *r)
{
	return d->threadId == r->tid && d->start >= r->start_ns && d->end <= r->end_ns;
}

static void flush_pending(ag_enc *e, ag_stats *st)
{
	for (unsigned i = 0; i < e->n_pend; i++) {
		put_api(e, e->pend[i]);
		st->n_driver++;
	}
	e->n_pend = 0;
}

/* Driver calls made inside a runtime call on the same thread repeat it: in AG_API_DEFAULT mode they
 * are dropped (CUDA 13 reports none: kept for older drivers). A driver record may come before its runtime record (it ends first) or after. */
static void api_record(ag_enc *e, const CUpti_ActivityAPI *a, ag_stats *st)
{
	if (a->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
		put_api(e, a);
		st->n_runtime++;
		if (e->api_mode != AG_API_DEFAULT)
			return;
		api_span s = { a->threadId, a->start, a->end };
		e->ring[e->ring_n++ % NESTED_RING] = s;
		unsigned k = 0;
		for (unsigned i = 0; i < e->n_pend; i++) {
			const CUpti_ActivityAPI *d = e->pend[i];
			if (nested(d, &s)) {
				st->n_driver_nested++;
			} else if (d->threadId == s.tid && d->end <= s.start_ns) {
				put_api(e, d);    /* before this call on its thread: not nested in a later one */
				st->n_driver++;
			} else {
				e->pend[k++] = d;
			}
		}
		e->n_pend = k;
		return;
	}
	if (e->api_mode == AG_API_ALL) {
		put_api(e, a);
		st->n_driver++;
		return;
	}
	unsigned n = e->ring_n < NESTED_RING ? e->ring_n : NESTED_RING;
	for (unsigned i = 0; i < n; i++)
		if (nested(a, &e->ring[i])) {
			st->n_driver_nested++;
			return;
		}
	if (e->n_pend == PENDING_MAX) {
		put_api(e, e->pend[0]);
		st->n_driver++;
		memmove(e->pend, e->pend + 1, (PENDING_MAX - 1) * sizeof(e->pend[0]));
		e->n_pend--;
	}
	e->pend[e->n_pend++] = a;
}

static void put_alloc(ag_enc *e, const CUpti_ActivityMemory4 *m)
{
	if (!keep(e, AG_CAP_BY_START, m->timestamp, m->timestamp, m->correlationId))
		return;
	gtt_record r = { .tag = GTT_REC_CUDA_ALLOC };
	gtt_cuda_alloc *o = &r.u.alloc;
	o->time_ns = m->timestamp;
	o->pid = e->pid;
	o->device = m->deviceId;
	o->context = m->contextId;
	o->stream = m->streamId;
	o->correlation = m->correlationId;
	o->op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? GTT_ALLOC_FREE : GTT_ALLOC_ALLOC;
	o->mem_kind = (uint32_t)m->memoryKind;
	o->address = m->address;
	o->bytes = m->bytes;
	gtt_write(e->w, &r);
}

static void put_nvtx(ag_enc *e, const nvtx_open *n, uint64_t end_ns, uint32_t kind)
{
	if (!keep(e, AG_CAP_BY_OVERLAP, n->start_ns, end_ns, 0))
		return;
	gtt_record r = { .tag = GTT_REC_NVTX };
	gtt_nvtx *o = &r.u.nvtx;
	o->start_ns = n->start_ns;
	o->end_ns = end_ns;
	o->pid = n->pid ? n->pid : e->pid;
	o->tid = n->tid;
	o->kind = kind;
	o->domain_id = n->domain_id;
	o->name_id = n->name_id;
	o->color = n->color;
	o->depth = n->depth;
	gtt_write(e->w, &r);
}

static void marker(ag_enc *e, const CUpti_ActivityMarker2 *m, ag_stats *st)
{
	nvtx_open n = { .marker_id = m->id, .start_ns = m->timestamp };
	if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
		n.pid = m->objectId.pt.processId;
		n.tid = m->objectId.pt.threadId;
	}
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		for (size_t i = 0; i < e->n_open; i++)
			if (e->open[i].marker_id == m->id) {
				put_nvtx(e, &e->open[i], m->timestamp, GTT_NVTX_RANGE);
				e->open[i] = e->open[--e->n_open];
				st->n_nvtx++;
				break;
			}
		return;
	}
	n.name_id = ag_enc_string(e, m->name ? m->name : "");
	n.domain_id = m->domain && *m->domain ? ag_enc_string(e, m->domain) : 0;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		put_nvtx(e, &n, m->timestamp, GTT_NVTX_MARKER);
		st->n_nvtx++;
		return;
	}
	if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START))
		return;
	for (size_t i = 0; i < e->n_open; i++)
		if (e->open[i].tid == n.tid && e->open[i].pid == n.pid)
			n.depth++;
	if (GT_GROW(e->open, e->cap_open, e->n_open + 1) < 0)
		return;
	e->open[e->n_open++] = n;
}

static void marker_data(ag_enc *e, const CUpti_ActivityMarkerData2 *d)
{
	if (!(d->flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB))
		return;
	for (size_t i = 0; i < e->n_open; i++)
		if (e->open[i].marker_id == d->id) {
			e->open[i].color = d->color;
			return;
		}
}

static const char *overhead_name(uint32_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "cupti buffer flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "cupti instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "cupti resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "module loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy function loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command buffer full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity buffer request";
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "uvm activity init";
	default: return "cupti overhead";
	}
}

static void put_overhead(ag_enc *e, const CUpti_ActivityOverhead3 *o)
{
	gtt_health hh = { 0 }, *h = &hh;
	h->time_ns = o->start;
	h->end_ns = o->end;
	h->source = GTT_SRC_CUPTI;
	h->kind = GTT_HEALTH_OVERHEAD;
	h->pid = e->pid;
	if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
		h->tid = o->objectId.pt.threadId;
	h->count = 1;
	h->value[0] = (uint64_t)o->overheadKind;
	h->text = overhead_name((uint32_t)o->overheadKind);
	gtt_write_health(e->w, h);
}

void ag_enc_buffer(ag_enc *e, uint8_t *buf, size_t valid_bytes, ag_stats *st)
{
	CUpti_Activity *rec = NULL;
	e->ring_n = 0;
	e->n_pend = 0;
	while (cuptiActivityGetNextRecord(buf, valid_bytes, &rec) == CUPTI_SUCCESS) {
		st->n_records++;
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		case CUPTI_ACTIVITY_KIND_KERNEL:
			put_kernel(e, (const CUpti_ActivityKernel10 *)rec);
			st->n_kernel++;
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			put_memcpy(e, (const CUpti_ActivityMemcpy6 *)rec);
			st->n_memcpy++;
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY2:
			put_p2p(e, (const CUpti_ActivityMemcpyPtoP4 *)rec);
			st->n_memcpy++;
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			put_memset(e, (const CUpti_ActivityMemset4 *)rec);
			st->n_memset++;
			break;
		case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
			put_sync(e, (const CUpti_ActivitySynchronization2 *)rec);
			st->n_sync++;
			break;
		case CUPTI_ACTIVITY_KIND_RUNTIME:
		case CUPTI_ACTIVITY_KIND_DRIVER:
			api_record(e, (const CUpti_ActivityAPI *)rec, st);
			break;
		case CUPTI_ACTIVITY_KIND_MEMORY2:
			put_alloc(e, (const CUpti_ActivityMemory4 *)rec);
			st->n_alloc++;
			break;
		case CUPTI_ACTIVITY_KIND_MARKER:
			marker(e, (const CUpti_ActivityMarker2 *)rec, st);
			break;
		case CUPTI_ACTIVITY_KIND_MARKER_DATA:
			marker_data(e, (const CUpti_ActivityMarkerData2 *)rec);
			break;
		case CUPTI_ACTIVITY_KIND_OVERHEAD:
			put_overhead(e, (const CUpti_ActivityOverhead3 *)rec);
			st->n_overhead++;
			break;
		default:
			st->n_other++;
			break;
		}
	}
	flush_pending(e, st);
	st->n_outside += e->n_outside;
	e->n_outside = 0;
}

void ag_enc_count(uint8_t *buf, size_t valid_bytes, ag_stats *st)
{
	CUpti_Activity *rec = NULL;
	while (cuptiActivityGetNextRecord(buf, valid_bytes, &rec) == CUPTI_SUCCESS) {
		st->n_records++;
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: st->n_kernel++; break;
		case CUPTI_ACTIVITY_KIND_MEMCPY: case CUPTI_ACTIVITY_KIND_MEMCPY2: st->n_memcpy++; break;
		case CUPTI_ACTIVITY_KIND_MEMSET: st->n_memset++; break;
		case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: st->n_sync++; break;
		case CUPTI_ACTIVITY_KIND_RUNTIME: st->n_runtime++; break;
		case CUPTI_ACTIVITY_KIND_DRIVER: st->n_driver++; break;
		case CUPTI_ACTIVITY_KIND_MEMORY2: st->n_alloc++; break;
		case CUPTI_ACTIVITY_KIND_MARKER: st->n_nvtx++; break;
		case CUPTI_ACTIVITY_KIND_OVERHEAD: st->n_overhead++; break;
		default: st->n_other++; break;
		}
	}
}
