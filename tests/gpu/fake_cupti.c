/* fake_cupti.c — a stand-in libcupti.so.13 for testing and benchmarking the CUDA agent on a
 * machine without a GPU. It implements the CUPTI calls libgtcupti.so makes (subscription,
 * callback and activity enabling, buffer callbacks, flushing), and test entry points that play
 * CUDA API calls on the calling thread the way CUPTI does: the subscriber's ENTER callback, the
 * call's work, the EXIT callback, then the API activity record (and a kernel record for a
 * launch) in the current activity buffer, full buffers handed back on a worker thread like
 * CUPTI's own. Record layout and callback names come from the real libcupti (loaded privately
 * from FAKE_CUPTI_REAL, default $CUDA_HOME/lib64/libcupti.so.13), so the agent's encoder walks
 * buffers exactly as on a GPU. It also stands in for CUPTI's NVTX layer: InitializeInjectionNvtx2
 * (the agent forwards NVTX's injection to it) fills NVTX's function table with functions that
 * dispatch CUPTI_CB_DOMAIN_NVTX callbacks to the subscriber (only for the callback ids it enabled)
 * and write MARKER records, as CUPTI does.
 * Build: gcc -shared -fPIC -o DIR/libcupti.so.13 fake_cupti.c -Wl,--version-script=fake_cupti.map
 *        -Wl,-soname,libcupti.so.13 -I$CUDA_HOME/include -ldl -pthread */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cupti.h>
#define NVTX_NO_IMPL
#include <generated_nvtx_meta.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_CBID 1024
#define MAX_KIND 128
#define MAX_QUEUE 64

static struct {
	pthread_mutex_t lock;          /* buffer, queue, counters */
	pthread_cond_t cv;
	void *real;
	CUptiResult (*real_name)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*real_next)(uint8_t *, size_t, CUpti_Activity **);
	CUpti_CallbackFunc sub_cb;
	void *sub_ud;
	int subscribed;
	uint8_t cb_on[3][MAX_CBID];    /* [driver, runtime, nvtx] */
	uint64_t n_cb_delivered, n_cb_refused;    /* API callbacks given to the subscriber / not enabled */
	uint64_t kernel_delay_ns;      /* a kernel starts this long after its launch returns */
	uint8_t api_off[2][MAX_CBID];  /* activity records switched off per cbid */
	uint8_t kind_on[MAX_KIND];
	CUpti_BuffersCallbackRequestFunc req;
	CUpti_BuffersCallbackCompleteFunc comp;
	CUpti_TimestampCallbackFunc ts;
	uint8_t *buf;
	size_t buf_size, used;
	struct { uint8_t *buf; size_t size, used; } queue[MAX_QUEUE];
	int n_queue, worker_started, stop;
	pthread_t worker;
	uint32_t corr;
	uint64_t n_records, n_dropped, n_dropped_total, n_calls;
	int zeroed;                    /* CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER */
	uint64_t n_dirty;              /* buffers handed to us not zeroed although promised */
	pthread_mutex_t hold_lock;     /* fake_cupti_hold: threads parked inside a call */
	pthread_cond_t hold_cv;
	int hold_gen;
} F = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
        .hold_lock = PTHREAD_MUTEX_INITIALIZER, .hold_cv = PTHREAD_COND_INITIALIZER };

static void load_real(void)
{
	if (F.real)
		return;
	const char *p = getenv("FAKE_CUPTI_REAL");
	char def[512];
	if (!p || !*p) {
		const char *home = getenv("CUDA_HOME");
		snprintf(def, sizeof(def), "%s/lib64/libcupti.so.13", home && *home ? home : "/usr/local/cuda");
		p = def;
	}
	/* a path, so the real library loads beside us even though it has our soname */
	F.real = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	if (!F.real) {
		fprintf(stderr, "fake_cupti: cannot load the real libcupti (%s): %s\n", p, dlerror());
		return;
	}
	F.real_name = (CUptiResult(*)(CUpti_CallbackDomain, uint32_t, const char **))dlsym(F.real, "cuptiGetCallbackName");
	F.real_next = (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))dlsym(F.real, "cuptiActivityGetNextRecord");
}

static uint64_t now_ns(void)
{
	if (F.ts)
		return F.ts();
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int dom_index(CUpti_CallbackDomain d)
{
	return d == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : d == CUPTI_CB_DOMAIN_NVTX ? 2 : 0;
}

/* ---- the CUPTI calls libgtcupti.so makes ---- */

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
	(void)r;
	*s = "fake CUPTI error";
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
	const char *busy = getenv("FAKE_CUPTI_BUSY");
	if ((busy && *busy && strcmp(busy, "0") != 0) || F.subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	load_real();
	F.sub_cb = cb;
	F.sub_ud = ud;
	F.subscribed = 1;
	*sub = (CUpti_SubscriberHandle)&F;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d,
                                       CUpti_CallbackId cbid)
{
	(void)sub;
	if (cbid >= MAX_CBID || (d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API &&
	                         d != CUPTI_CB_DOMAIN_NVTX) || (d == CUPTI_CB_DOMAIN_NVTX && cbid >= CUPTI_CBID_NVTX_SIZE))
		return CUPTI_ERROR_INVALID_PARAMETER;
	F.cb_on[dom_index(d)][cbid] = enable != 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	load_real();
	return F.real_name ? F.real_name(d, cbid, name) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	load_real();
	return F.real_next ? F.real_next(buf, valid, rec) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	if ((unsigned)k < MAX_KIND)
		F.kind_on[k] = 1;
	memset(F.api_off, 0, sizeof(F.api_off));    /* like CUPTI: enabling a kind resets per-call settings */
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	if ((unsigned)k < MAX_KIND)
		F.kind_on[k] = 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid < MAX_CBID)
		F.api_off[1][cbid] = !enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	if (cbid < MAX_CBID)
		F.api_off[0][cbid] = !enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType t)
{
	(void)t;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	F.ts = fn;
	return CUPTI_SUCCESS;
}

static void *worker_main(void *arg);

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc comp)
{
	if (!req || !comp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	F.req = req;
	F.comp = comp;
	pthread_mutex_lock(&F.lock);
	if (!F.worker_started && pthread_create(&F.worker, NULL, worker_main, NULL) == 0) {
		pthread_detach(F.worker);
		F.worker_started = 1;
	}
	pthread_mutex_unlock(&F.lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value)
{
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && size && *size >= 1 && value) {
		F.zeroed = *(uint8_t *)value != 0;
		return CUPTI_SUCCESS;
	}
	return CUPTI_ERROR_NOT_SUPPORTED;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx;
	(void)stream;
	pthread_mutex_lock(&F.lock);
	*dropped = (size_t)F.n_dropped;
	F.n_dropped = 0;
	pthread_mutex_unlock(&F.lock);
	return CUPTI_SUCCESS;
}

/* Full buffers go back on this thread, as CUPTI's worker does. */
static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&F.lock);
	for (;;) {
		while (!F.n_queue && !F.stop)
			pthread_cond_wait(&F.cv, &F.lock);
		if (!F.n_queue && F.stop)
			break;
		uint8_t *b = F.queue[0].buf;
		size_t size = F.queue[0].size, used = F.queue[0].used;
		memmove(F.queue, F.queue + 1, (size_t)(F.n_queue - 1) * sizeof(F.queue[0]));
		F.n_queue--;
		pthread_mutex_unlock(&F.lock);
		F.comp(NULL, 0, b, size, used);
		pthread_mutex_lock(&F.lock);
		pthread_cond_broadcast(&F.cv);
	}
	pthread_mutex_unlock(&F.lock);
	return NULL;
}

/* Everything queued and the current buffer go back on the calling thread (like CUPTI). */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (!F.comp)
		return CUPTI_ERROR_INVALID_OPERATION;
	pthread_mutex_lock(&F.lock);
	while (F.n_queue)
		pthread_cond_wait(&F.cv, &F.lock);    /* the worker hands those back first, in order */
	uint8_t *b = F.buf;
	size_t size = F.buf_size, used = F.used;
	F.buf = NULL;
	F.used = 0;
	pthread_mutex_unlock(&F.lock);
	if (b)
		F.comp(NULL, 0, b, size, used);
	return CUPTI_SUCCESS;
}

/* Append one record (len bytes) to the current buffer, taking a new one as CUPTI does: on the
 * calling (application) thread, through the client's request callback. */
static void append(const void *rec, size_t len)
{
	size_t need = (len + 7) & ~(size_t)7;
	pthread_mutex_lock(&F.lock);
	if (F.buf && F.used + need > F.buf_size) {
		while (F.n_queue == MAX_QUEUE)
			pthread_cond_wait(&F.cv, &F.lock);
		F.queue[F.n_queue].buf = F.buf;
		F.queue[F.n_queue].size = F.buf_size;
		F.queue[F.n_queue].used = F.used;
		F.n_queue++;
		pthread_cond_broadcast(&F.cv);
		F.buf = NULL;
	}
	if (!F.buf && F.req) {
		uint8_t *b = NULL;
		size_t size = 0, max = 0;
		F.req(&b, &size, &max);
		if (b && size && !F.zeroed) {
			memset(b, 0, size);    /* what CUPTI does on this thread unless told not to */
		} else if (b && size) {
			for (size_t i = 0; i < size; i += 64)
				if (b[i]) {
					F.n_dirty++;
					break;
				}
		}
		F.buf = size >= need ? b : NULL;
		F.buf_size = size;
		F.used = 0;
	}
	if (F.buf) {
		memcpy(F.buf + F.used, rec, len);
		F.used += need;
		F.n_records++;
	} else {
		F.n_dropped++;
		F.n_dropped_total++;
	}
	pthread_mutex_unlock(&F.lock);
}

/* ---- test entry points ---- */

static const char *intern_name(const char *name)
{
	static struct { char *s; } tab[256];
	static pthread_mutex_t l = PTHREAD_MUTEX_INITIALIZER;
	const char *out = "fake_kernel";
	pthread_mutex_lock(&l);
	for (int i = 0; i < 256; i++) {
		if (!tab[i].s) {
			tab[i].s = strdup(name);
			out = tab[i].s;
			break;
		}
		if (strcmp(tab[i].s, name) == 0) {
			out = tab[i].s;
			break;
		}
	}
	pthread_mutex_unlock(&l);
	return out;
}

static void spin(int64_t ns)
{
	if (ns > 0) {
		struct timespec t = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
		nanosleep(&t, NULL);
	} else if (ns < 0) {
		/* park until fake_cupti_release(): a call that stays in flight */
		pthread_mutex_lock(&F.hold_lock);
		int gen = F.hold_gen;
		while (gen == F.hold_gen)
			pthread_cond_wait(&F.hold_cv, &F.hold_lock);
		pthread_mutex_unlock(&F.hold_lock);
	}
}

/* One CUDA API call on this thread: callbacks (if enabled), the call's work (ns > 0 sleeps,
 * ns < 0 waits for fake_cupti_release), then its activity records. func: the launched kernel's
 * host function (first parameter of cudaLaunchKernel / cuLaunchKernel), 0 for other calls;
 * kernel: the kernel's name when the call launches one, else NULL. nested_cbid: a driver call
 * made inside this one (0: none). Returns the correlation id. */
EXPORT uint32_t fake_cupti_call(int domain, uint32_t cbid, const char *name, uintptr_t func, const char *kernel,
                                int64_t ns, uint32_t nested_cbid)
{
	CUpti_CallbackDomain d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_CB_DOMAIN_RUNTIME_API
	                                                               : CUPTI_CB_DOMAIN_DRIVER_API;
	int di = dom_index(d);
	uint64_t corr_data = 0;
	void *params[8] = { (void *)func, 0, 0, 0, 0, 0, 0, 0 };
	CUpti_CallbackData cd;
	memset(&cd, 0, sizeof(cd));
	cd.functionName = name;
	cd.functionParams = params;
	cd.correlationData = &corr_data;
	cd.correlationId = __atomic_add_fetch(&F.corr, 1, __ATOMIC_RELAXED);
	cd.symbolName = kernel;
	int ret = 0;    /* cudaSuccess / CUDA_SUCCESS, as the exit callback sees it */
	cd.functionReturnValue = &ret;
	__atomic_add_fetch(&F.n_calls, 1, __ATOMIC_RELAXED);
	int cb = cbid < MAX_CBID && F.cb_on[di][cbid] && F.sub_cb;
	__atomic_add_fetch(cb ? &F.n_cb_delivered : &F.n_cb_refused, 1, __ATOMIC_RELAXED);
	uint64_t t0 = now_ns();
	if (cb) {
		cd.callbackSite = CUPTI_API_ENTER;
		F.sub_cb(F.sub_ud, d, cbid, &cd);
	}
	if (nested_cbid)
		fake_cupti_call(CUPTI_CB_DOMAIN_DRIVER_API, nested_cbid, "cuNestedCall", 0, NULL, 0, 0);
	spin(ns);
	if (cb) {
		cd.callbackSite = CUPTI_API_EXIT;
		F.sub_cb(F.sub_ud, d, cbid, &cd);
	}
	uint64_t t1 = now_ns();
	CUpti_ActivityKind k = d == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
	if (F.kind_on[k] && !(cbid < MAX_CBID && F.api_off[di][cbid])) {
		CUpti_ActivityAPI a;
		memset(&a, 0, sizeof(a));
		a.kind = k;
		a.cbid = cbid;
		a.start = t0;
		a.end = t1;
		a.processId = (uint32_t)getpid();
		a.threadId = (uint32_t)syscall(SYS_gettid);
		a.correlationId = cd.correlationId;
		append(&a, sizeof(a));
	}
	if (kernel && F.kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
		CUpti_ActivityKernel10 kr;
		memset(&kr, 0, sizeof(kr));
		kr.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		kr.start = t1 + 1000 + F.kernel_delay_ns;
		kr.end = kr.start + 1000;
		kr.streamId = 7;
		kr.correlationId = cd.correlationId;
		kr.gridX = kr.gridY = kr.gridZ = 1;
		kr.blockX = 128;
		kr.blockY = kr.blockZ = 1;
		kr.name = intern_name(kernel);
		append(&kr, sizeof(kr));
	}
	return cd.correlationId;
}

/* Kernels of later launches start ns after their launch returns (a queue in front of them). */
EXPORT void fake_cupti_set_kernel_delay(uint64_t ns)
{
	F.kernel_delay_ns = ns;
}

/* The callback ids enabled in a domain (1 driver, 2 runtime, 5 NVTX), up to cap of them into
 * out; returns how many are enabled. Callbacks given and refused so far in delivered/refused. */
EXPORT int fake_cupti_callbacks_enabled(int domain, uint32_t *out, int cap, uint64_t *delivered, uint64_t *refused)
{
	int di = dom_index((CUpti_CallbackDomain)domain), n = 0;
	for (uint32_t c = 0; c < MAX_CBID; c++)
		if (F.cb_on[di][c]) {
			if (n < cap)
				out[n] = c;
			n++;
		}
	*delivered = F.n_cb_delivered;
	*refused = F.n_cb_refused;
	return n;
}

/* Wake every call parked with ns < 0. */
EXPORT void fake_cupti_release(void)
{
	pthread_mutex_lock(&F.hold_lock);
	F.hold_gen++;
	pthread_cond_broadcast(&F.hold_cv);
	pthread_mutex_unlock(&F.hold_lock);
}

/* Whether the subscriber's callbacks are on for a call (1) or not (0). */
EXPORT int fake_cupti_callback_on(int domain, uint32_t cbid)
{
	return cbid < MAX_CBID && F.cb_on[dom_index(domain == CUPTI_CB_DOMAIN_RUNTIME_API ?
	                                            CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API)][cbid];
}

/* Calls played, activity records written, records dropped for want of a buffer, buffers that
 * came back not zeroed although the client promised zeroed ones. */
EXPORT void fake_cupti_counts(uint64_t *calls, uint64_t *records, uint64_t *dropped, uint64_t *dirty)
{
	pthread_mutex_lock(&F.lock);
	*calls = F.n_calls;
	*records = F.n_records;
	*dropped = F.n_dropped_total;
	*dirty = F.n_dirty;
	pthread_mutex_unlock(&F.lock);
}

/* ---- the NVTX layer: NVTX calls -> CUPTI_CB_DOMAIN_NVTX callbacks and MARKER records ---- */

typedef struct fk_domain { char *name; } fk_domain;
typedef struct fk_string { char *text; } fk_string;

static __thread uint32_t fk_stack[64];
static __thread int fk_depth;
static uint32_t fk_next_id;

/* The subscriber's NVTX callback (when enabled), after the call's work: like CUPTI's, it sees
 * the return value. */
static void nvtx_cb(uint32_t cbid, const char *fn, const void *params, const void *ret)
{
	if (!F.sub_cb || cbid >= CUPTI_CBID_NVTX_SIZE || !F.cb_on[2][cbid])
		return;
	CUpti_NvtxData d = { .functionName = fn, .functionParams = params, .functionReturnValue = ret };
	F.sub_cb(F.sub_ud, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
}

static const char *attr_text(const nvtxEventAttributes_t *a)
{
	if (!a)
		return "";
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return a->message.ascii;
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)
		return ((const fk_string *)a->message.registered)->text;
	return "";    /* CUPTI names wide messages too; the agent reads them from the callback */
}

static void marker_rec(uint32_t flags, uint32_t id, const char *name, const fk_domain *dom)
{
	if (!F.kind_on[CUPTI_ACTIVITY_KIND_MARKER])
		return;
	CUpti_ActivityMarker2 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = (CUpti_ActivityFlag)flags;
	m.timestamp = now_ns();
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = (uint32_t)syscall(SYS_gettid);
	m.name = name ? intern_name(name) : NULL;
	m.domain = dom ? dom->name : NULL;
	append(&m, sizeof(m));
}

static uint32_t push_id(void)
{
	uint32_t id = __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED);
	if (fk_depth < 64)
		fk_stack[fk_depth] = id;
	fk_depth++;
	return id;
}

static uint32_t pop_id(void)
{
	if (fk_depth == 0)
		return 0;
	fk_depth--;
	return fk_depth < 64 ? fk_stack[fk_depth] : 0;
}

static void NVTX_API fk_MarkEx(const nvtxEventAttributes_t *a)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED),
	           attr_text(a), NULL);
	nvtxMarkEx_params p = { a };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxMarkEx, "nvtxMarkEx", &p, NULL);
}

static void NVTX_API fk_MarkA(const char *msg)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED), msg, NULL);
	nvtxMarkA_params p = { msg };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxMarkA, "nvtxMarkA", &p, NULL);
}

static int NVTX_API fk_RangePushA(const char *msg)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, push_id(), msg, NULL);
	int depth = fk_depth - 1;
	nvtxRangePushA_params p = { msg };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &p, &depth);
	return depth;
}

static int NVTX_API fk_RangePushW(const wchar_t *msg)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, push_id(), "", NULL);
	int depth = fk_depth - 1;
	nvtxRangePushW_params p = { msg };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangePushW, "nvtxRangePushW", &p, &depth);
	return depth;
}

static int NVTX_API fk_RangePushEx(const nvtxEventAttributes_t *a)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, push_id(), attr_text(a), NULL);
	int depth = fk_depth - 1;
	nvtxRangePushEx_params p = { a };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangePushEx, "nvtxRangePushEx", &p, &depth);
	return depth;
}

static int NVTX_API fk_RangePop(void)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, pop_id(), NULL, NULL);
	int depth = fk_depth;
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", NULL, &depth);
	return depth;
}

static nvtxRangeId_t NVTX_API fk_RangeStartA(const char *msg)
{
	nvtxRangeId_t id = __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED);
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, (uint32_t)id, msg, NULL);
	nvtxRangeStartA_params p = { msg };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangeStartA, "nvtxRangeStartA", &p, &id);
	return id;
}

static nvtxRangeId_t NVTX_API fk_RangeStartEx(const nvtxEventAttributes_t *a)
{
	nvtxRangeId_t id = __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED);
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, (uint32_t)id, attr_text(a), NULL);
	nvtxRangeStartEx_params p = { a };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangeStartEx, "nvtxRangeStartEx", &p, &id);
	return id;
}

static void NVTX_API fk_RangeEnd(nvtxRangeId_t id)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, (uint32_t)id, NULL, NULL);
	nvtxRangeEnd_params p = { id };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxRangeEnd, "nvtxRangeEnd", &p, NULL);
}

static nvtxDomainHandle_t NVTX_API fk_DomainCreateA(const char *name)
{
	fk_domain *d = calloc(1, sizeof(*d));
	d->name = strdup(name ? name : "");
	nvtxDomainHandle_t h = (nvtxDomainHandle_t)d;
	nvtxDomainCreateA_params p = { name };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxDomainCreateA, "nvtxDomainCreateA", &p, &h);
	return h;
}

static nvtxStringHandle_t NVTX_API fk_DomainRegisterStringA(nvtxDomainHandle_t dom, const char *text)
{
	fk_string *s = calloc(1, sizeof(*s));
	s->text = strdup(text ? text : "");
	nvtxStringHandle_t h = (nvtxStringHandle_t)s;
	nvtxDomainRegisterStringA_params p = { dom, text };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &p, &h);
	return h;
}

static void NVTX_API fk_DomainMarkEx(nvtxDomainHandle_t dom, const nvtxEventAttributes_t *a)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, __atomic_add_fetch(&fk_next_id, 1, __ATOMIC_RELAXED),
	           attr_text(a), (const fk_domain *)dom);
	nvtxDomainMarkEx_params p = { dom, { a } };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxDomainMarkEx, "nvtxDomainMarkEx", &p, NULL);
}

static int NVTX_API fk_DomainRangePushEx(nvtxDomainHandle_t dom, const nvtxEventAttributes_t *a)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_START, push_id(), attr_text(a), (const fk_domain *)dom);
	int depth = fk_depth - 1;
	nvtxDomainRangePushEx_params p = { dom, { a } };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, &depth);
	return depth;
}

static int NVTX_API fk_DomainRangePop(nvtxDomainHandle_t dom)
{
	marker_rec(CUPTI_ACTIVITY_FLAG_MARKER_END, pop_id(), NULL, (const fk_domain *)dom);
	int depth = fk_depth;
	nvtxDomainRangePop_params p = { dom };
	nvtx_cb(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &p, &depth);
	return depth;
}

static void slot(NvtxFunctionTable t, unsigned n, unsigned i, void *fn)
{
	if (i < n && t[i])
		*t[i] = (NvtxFunctionPointer)fn;
}

/* NVTX's entry point (the agent forwards its own to it): fill the core tables. */
EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t))
{
	const NvtxExportTableCallbacks *cb = get_export_table ? get_export_table(NVTX_ETID_CALLBACKS) : NULL;
	NvtxFunctionTable t = NULL;
	unsigned n = 0;
	if (!cb || !cb->GetModuleFunctionTable || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
		return 0;
	slot(t, n, NVTX_CBID_CORE_MarkEx, (void *)fk_MarkEx);
	slot(t, n, NVTX_CBID_CORE_MarkA, (void *)fk_MarkA);
	slot(t, n, NVTX_CBID_CORE_RangeStartEx, (void *)fk_RangeStartEx);
	slot(t, n, NVTX_CBID_CORE_RangeStartA, (void *)fk_RangeStartA);
	slot(t, n, NVTX_CBID_CORE_RangeEnd, (void *)fk_RangeEnd);
	slot(t, n, NVTX_CBID_CORE_RangePushEx, (void *)fk_RangePushEx);
	slot(t, n, NVTX_CBID_CORE_RangePushA, (void *)fk_RangePushA);
	slot(t, n, NVTX_CBID_CORE_RangePushW, (void *)fk_RangePushW);
	slot(t, n, NVTX_CBID_CORE_RangePop, (void *)fk_RangePop);
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
		slot(t, n, NVTX_CBID_CORE2_DomainMarkEx, (void *)fk_DomainMarkEx);
		slot(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (void *)fk_DomainRangePushEx);
		slot(t, n, NVTX_CBID_CORE2_DomainRangePop, (void *)fk_DomainRangePop);
		slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, (void *)fk_DomainRegisterStringA);
		slot(t, n, NVTX_CBID_CORE2_DomainCreateA, (void *)fk_DomainCreateA);
	}
	return 1;
}
