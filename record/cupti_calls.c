/* cupti_calls.c — what the CUDA agent does inside CUDA API calls, on the application's threads:
 * keeps the thread's slot of the in-flight table (gtcupti_inflight.h) and, for a bounded sample
 * of calls, takes the native and Python stack and queues it for the flush thread, which writes
 * the cuda_callstack and py_code records (docs/CUDA.md, "Launch stacks").
 *
 * The common call (not sampled) costs a thread-local pointer, a coarse clock read (and the trace
 * clock at entry and exit, for its API record and its length), a few stores
 * into the thread's own cache line and one probe of a thread-local table; no lock, no shared
 * write. Everything else (encoding, interning, writing) happens on the flush thread. */
#include "cupti_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "cupti_apiq.h"
#include "cupti_py.h"
#include "gt_util.h"
#include "cupti_ring.h"
#include "cupti_unwind.h"
#include "cupti_nvtx.h"

#define PAIRS 1024              /* (API, function) pairs tracked per thread */
#define PAIRS_FILL 768          /* beyond this, new pairs share one 1-in-N countdown */
#define TIME_EVERY 256          /* one callback in this many is timed, for the summary */
#define MAX_NATIVE 256

enum { MODE_INFLIGHT = 1, MODE_STACKS = 2, MODE_API = 4 };
enum { ENT_STACK = 1, ENT_CODE = 2, ENT_API = 3 };

/* Ring entries (native layout: the ring never leaves the process). */
typedef struct stack_ent {
	uint32_t type, flags;
	uint64_t time_ns, call_ns;
	uint32_t tid, correlation, domain, cbid;
	uint64_t function;
	uint32_t n_native, n_py;
} stack_ent;                 /* followed by n_native u64 ips, then n_py gtt_py_frame */

typedef struct code_ent {
	uint32_t type;
	int32_t first_line;
	uint64_t code_id;
	uint32_t name_len, qual_len, file_len, pad;
} code_ent;                  /* followed by name, qualname, filename, each NUL-terminated */

typedef struct api_ent {
	uint32_t type, pad;
	ag_api_call c;
} api_ent;                   /* a call whose thread's queue was full (cupti_apiq.c), in the ring */

typedef struct pair {
	uint64_t fn;
	uint32_t key;            /* domain << 24 | cbid; 0 = empty */
	uint32_t count;          /* calls seen, saturating */
	uint32_t countdown;      /* calls until the next 1-in-N sample */
	uint32_t pad;
} pair;

typedef struct thr {
	/* touched by every callback: one cache line */
	struct gtcupti_inflight_slot *slot;
	uint32_t depth, epoch;
	uint32_t n_local;        /* outermost calls not yet added to the shared counter */
	uint32_t n_nest;         /* nested calls, likewise */
	uint64_t enter_ns;       /* coarse clock at the outermost call's entry */
	uint64_t enter_prec;     /* the trace clock at that entry, for its length (0: not taken) */
	uint64_t api_start;      /* MODE_API: the same clock, for its API record (0: not taken) */
	uint32_t api_corr;       /* ... and its correlation id */
	ag_apiq *apiq;           /* MODE_API: this thread's queue of calls for the flush thread */
	int64_t call_credit;     /* stack-taking time earned by calls (GT_CUPTI_STACK_BUDGET_NS) */
	uint32_t cap_gen;        /* capture range transitions seen by this thread */
	int timing;              /* this call's callbacks are timed */
	uint64_t t0;             /* its cycle count at entry */
	int ignore;
	int pending;             /* a stack taken at entry waits for the call's exit */
	/* sampling and stacks */
	uint32_t tid;
	pair *pairs;
	uint32_t n_pairs, rng, overflow_cd;
	int64_t credit_ns;       /* stack-taking time left in the time budget */
	uint64_t credit_at;
	uint64_t pending_at;
	stack_ent *ent;          /* scratch: the entry, then ips, then Python frames */
	uint64_t *ips;
	gtt_py_frame *py;
	ag_pythr *pyt;
} thr;

struct gtcupti_inflight gtcupti_inflight __attribute__((aligned(64), visibility("default"))) = {
	.magic = GTCUPTI_INFLIGHT_MAGIC,
	.version = GTCUPTI_INFLIGHT_VERSION,
	.n_slots = GTCUPTI_INFLIGHT_SLOTS,
	.slot_size = sizeof(struct gtcupti_inflight_slot),
	.header_size = offsetof(struct gtcupti_inflight, slot),
};

static struct {
	/* read by every callback, written only when switching: their own cache lines */
	int mode, epoch;
	ag_calls_cfg cfg;
	uint64_t tick_ns;        /* resolution of CLOCK_MONOTONIC_COARSE */
	uint64_t timer_cyc;      /* cost of one cycle-counter read, taken off timed callbacks */
	uint64_t clip_cyc;       /* a timed callback longer than this was preempted: not counted */
	/* the rest */
	uint32_t pid;
	int ready, unwind_ok, py_state;
	char py_why[200];
	pthread_key_t key;
	ag_ring *ring;
	void (*wake)(void);      /* the flush thread's early wake-up (an API queue half full) */
	uint64_t cyc0, ns0;      /* cycle counter and clock at init: converts cycles to ns */
	uint64_t reported_ring, reported_budget, reported_api_lost;
	ag_calls_stats st __attribute__((aligned(64)));   /* updated with atomics */
} G __attribute__((aligned(64)));

static __thread thr *T;

static inline uint64_t coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define ADD(field, v) __atomic_fetch_add(&G.st.field, (v), __ATOMIC_RELAXED)

/* ---- configuration ---- */

/* The settings, by environment name: range, and whether a running agent may change it (the
 * depths and the ring size fix allocations made at start). */
enum { K_INFLIGHT, K_STACKS, K_PYTHON, K_FIRST, K_EVERY, K_LONG, K_DEPTH, K_PY_DEPTH, K_BUDGET, K_BUDGET_NS, K_BURST,
       K_RING };
static const struct setting {
	const char *name;
	double lo, hi;
	int live;
} settings[] = {
	[K_INFLIGHT] = { "GT_CUPTI_INFLIGHT", 0, 1, 0 },
	[K_STACKS] = { "GT_CUPTI_STACKS", 0, 1, 1 },
	[K_PYTHON] = { "GT_CUPTI_STACK_PYTHON", 0, 1, 1 },
	[K_FIRST] = { "GT_CUPTI_STACK_FIRST", 0, UINT32_MAX, 1 },
	[K_EVERY] = { "GT_CUPTI_STACK_EVERY", 0, 1u << 30, 1 },
	[K_LONG] = { "GT_CUPTI_STACK_LONG_US", 0, 3.6e9, 1 },
	[K_DEPTH] = { "GT_CUPTI_STACK_DEPTH", 1, MAX_NATIVE, 0 },
	[K_PY_DEPTH] = { "GT_CUPTI_STACK_PY_DEPTH", 1, AG_PY_MAX_DEPTH, 0 },
	[K_BUDGET] = { "GT_CUPTI_STACK_BUDGET", 0, 100, 1 },
	[K_BUDGET_NS] = { "GT_CUPTI_STACK_BUDGET_NS", 0, 1e9, 1 },
	[K_BURST] = { "GT_CUPTI_STACK_BURST_MS", 0, 60000, 1 },
	[K_RING] = { "GT_CUPTI_STACK_RING_KB", 64, 1 << 20, 0 },
};

static void store(ag_calls_cfg *c, int k, double v)
{
	switch (k) {
	case K_INFLIGHT: c->inflight = v != 0; break;
	case K_STACKS: c->stacks = v != 0; break;
	case K_PYTHON: c->python = v != 0; break;
	case K_FIRST: c->first_k = (uint32_t)v; break;
	case K_EVERY: c->every_n = (uint32_t)v; break;
	case K_LONG: c->long_ns = (uint64_t)(v * 1000); break;
	case K_DEPTH: c->max_native = (uint32_t)v; break;
	case K_PY_DEPTH: c->max_py = (uint32_t)v; break;
	case K_BUDGET: c->budget_ppm = (uint32_t)(v * 10000 + 0.5); break;
	case K_BUDGET_NS: c->budget_call_ns = (uint32_t)v; break;
	case K_BURST: c->burst_ns = (uint64_t)(v * 1e6); break;
	case K_RING: c->ring_bytes = (size_t)v << 10; break;
	}
}

/* One setting from text: 0, or -1 (unknown, out of range, or not changeable when live). */
static int set_one(ag_calls_cfg *c, const char *name, const char *s, int live, void (*warn)(const char *, const char *))
{
	for (int k = 0; k < (int)(sizeof(settings) / sizeof(settings[0])); k++) {
		if (strcmp(name, settings[k].name) != 0)
			continue;
		char *end;
		double v = strtod(s, &end);
		if (!*s || *end || !(v >= settings[k].lo && v <= settings[k].hi) || (live && !settings[k].live)) {
			if (warn)
				warn(live && !settings[k].live ? "ignoring %s (fixed at start)" : "ignoring %s (out of range)", name);
			return -1;
		}
		store(c, k, v);
		return 0;
	}
	if (warn)
		warn("ignoring unknown setting %s", name);
	return -1;
}

void ag_calls_config(ag_calls_cfg *c, void (*warn)(const char *fmt, const char *arg))
{
	*c = (ag_calls_cfg){ .inflight = 1, .stacks = 1, .python = 1, .first_k = 4, .every_n = 256,
	                     .long_ns = 1000000, .max_native = 64, .max_py = 128, .budget_ppm = 10000,
	                     .budget_call_ns = 10, .burst_ns = 10000000, .ring_bytes = 4096u << 10 };
	for (size_t k = 0; k < sizeof(settings) / sizeof(settings[0]); k++) {
		const char *s = getenv(settings[k].name);
		if (s && *s)
			set_one(c, settings[k].name, s, 0, warn);
	}
}

int ag_calls_config_set(ag_calls_cfg *c, const char *name, const char *value, void (*warn)(const char *, const char *))
{
	return set_one(c, name, value, 1, warn);
}

void ag_calls_reconfigure(const ag_calls_cfg *c)
{
	/* field by field: a callback reads each one whole, old or new */
	__atomic_store_n(&G.cfg.python, c->python, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.first_k, c->first_k, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.every_n, c->every_n, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.long_ns, c->long_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.budget_ppm, c->budget_ppm, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.budget_call_ns, c->budget_call_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.burst_ns, c->burst_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&G.cfg.stacks, c->stacks, __ATOMIC_RELAXED);
}

void ag_calls_describe(const ag_calls_cfg *c, char *buf, size_t len)
{
	snprintf(buf, len, "first=%u every=%u long_us=%llu depth=%u py_depth=%u budget=%g%% budget_ns=%u burst_ms=%g "
	         "python=%s", c->first_k, c->every_n, (unsigned long long)(c->long_ns / 1000), c->max_native, c->max_py,
	         c->budget_ppm / 10000.0, c->budget_call_ns, (double)c->burst_ns / 1e6, c->python ? "on" : "off");
}

/* ---- threads and their slots ---- */

static void slot_write_begin(struct gtcupti_inflight_slot *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void slot_write_end(struct gtcupti_inflight_slot *s)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
}

static struct gtcupti_inflight_slot *slot_claim(uint32_t tid)
{
	for (int i = 0; i < GTCUPTI_INFLIGHT_SLOTS; i++) {
		struct gtcupti_inflight_slot *s = &gtcupti_inflight.slot[i];
		uint32_t free_tid = 0;
		if (__atomic_load_n(&s->tid, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&s->tid, &free_tid, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			slot_write_begin(s);
			s->cbid = s->domain = s->correlation = s->depth = 0;
			s->start_ns = s->name_addr = s->n_calls = 0;
			slot_write_end(s);
			return s;
		}
	}
	__atomic_fetch_add(&gtcupti_inflight.n_unslotted, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void slot_release(struct gtcupti_inflight_slot *s)
{
	slot_write_begin(s);
	s->cbid = s->domain = s->correlation = s->depth = 0;
	s->start_ns = s->name_addr = s->n_calls = 0;
	slot_write_end(s);
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

static uint32_t draw(thr *t)
{
	uint32_t n = G.cfg.every_n, x = t->rng;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	t->rng = x;
	/* uniform in [1, 2N-1]: mean N, and no fixed period for a call pattern to alias with */
	return n <= 1 ? 1 : 1 + x % (2 * n - 1);
}

static void thr_free(void *p)
{
	thr *t = p;
	if (t->slot)
		slot_release(t->slot);
	ADD(n_calls, t->n_local);
	ADD(n_nested, t->n_nest);
	ag_pythr_free(t->pyt);
	ag_apiq_release(t->apiq);    /* freed by the flush thread once drained */
	free(t->pairs);
	free(t->ent);
	free(t);
	T = NULL;
}

static thr *thr_new(int claim)
{
	thr *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->rng = t->tid * 2654435761u | 1;
	t->overflow_cd = draw(t);
	t->credit_ns = t->call_credit = (int64_t)G.cfg.burst_ns;
	t->credit_at = coarse_ns();
	t->epoch = (uint32_t)__atomic_load_n(&G.epoch, __ATOMIC_RELAXED);
	t->slot = claim ? slot_claim(t->tid) : NULL;
	T = t;
	if (G.ready)
		pthread_setspecific(G.key, t);    /* thr_free at thread exit */
	return t;
}

void ag_calls_ignore_thread(void)
{
	thr *t = T ? T : thr_new(0);
	if (!t)
		return;
	t->ignore = 1;
	if (t->slot) {
		slot_release(t->slot);
		t->slot = NULL;
	}
}

/* ---- sampling ---- */

/* The kernel a launch starts (host stub or CUfunction) or the graph it replays: with the API,
 * the key of "the first K calls of each (API, kernel) pair". 0 for other calls. */
static uint64_t launch_function(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *params)
{
	const void *const *p = params;
	if (!p)
		return 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
		switch (cbid) {
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
			return (uint64_t)(uintptr_t)p[0];    /* func / graphExec */
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
		case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
			return (uint64_t)(uintptr_t)p[1];    /* after the config pointer */
		default:
			return 0;
		}
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
	case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
		return (uint64_t)(uintptr_t)p[0];        /* f / hGraph */
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
		return (uint64_t)(uintptr_t)p[1];
	default:
		return 0;
	}
}

static pair *pair_get(thr *t, uint32_t key, uint64_t fn)
{
	if (!t->pairs && !(t->pairs = calloc(PAIRS, sizeof(pair))))
		return NULL;
	size_t i = (size_t)(((fn ^ ((uint64_t)key << 32)) * 0x9e3779b97f4a7c15ull) >> 54) & (PAIRS - 1);
	for (;;) {
		pair *p = &t->pairs[i];
		if (p->key == key && p->fn == fn)
			return p;
		if (!p->key) {
			if (t->n_pairs >= PAIRS_FILL)
				return NULL;
			t->n_pairs++;
			p->key = key;
			p->fn = fn;
			p->countdown = draw(t);
			return p;
		}
		i = (i + 1) & (PAIRS - 1);
	}
}

/* Why this call gets a stack at its entry: GTT_CALLSTACK_FIRST or _NTH, or 0. */
static uint32_t choose(thr *t, uint32_t gdom, CUpti_CallbackId cbid, uint64_t fn)
{
	pair *p = pair_get(t, gdom << 24 | (uint32_t)cbid, fn);
	if (p) {
		if (p->count < G.cfg.first_k) {
			p->count++;
			return GTT_CALLSTACK_FIRST;
		}
		if (p->count != UINT32_MAX)
			p->count++;
		if (G.cfg.every_n && --p->countdown == 0) {
			p->countdown = draw(t);
			return GTT_CALLSTACK_NTH;
		}
		return 0;
	}
	if (G.cfg.every_n && --t->overflow_cd == 0) {
		t->overflow_cd = draw(t);
		return GTT_CALLSTACK_NTH;
	}
	return 0;
}

/* Two budgets: each outermost call earns budget_call_ns of stack time (this bounds what sampled
 * stacks add per call, hence per activity record, however busy the thread), and the thread may
 * spend budget_ppm of its wall time (this bounds them on threads whose calls are long and few).
 * A sampled stack (first K, 1 in N) needs both; a long call's stack at its exit only the time
 * budget — it costs a fraction of a percent of the call it describes, and a thread making few
 * long calls earns little per call. Each lets a thread run burst_ns ahead: the first calls of
 * every kernel at start-up. A stack's time is charged to the budgets it needed. */
static int budget_ok(thr *t, uint64_t now, int sampled)
{
	int64_t burst = (int64_t)G.cfg.burst_ns;
	int ok = 1;
	if (G.cfg.budget_call_ns && sampled) {
		if (t->call_credit > burst)
			t->call_credit = burst;
		ok = t->call_credit > 0;
	}
	if (G.cfg.budget_ppm) {
		uint64_t dt = now > t->credit_at ? now - t->credit_at : 0;
		if (dt > 1000000000000ull)
			dt = 1000000000000ull;
		t->credit_ns += (int64_t)(dt * G.cfg.budget_ppm / 1000000);
		if (t->credit_ns > burst)
			t->credit_ns = burst;
		t->credit_at = now;
		ok &= t->credit_ns > 0;
	}
	return ok;
}

/* ---- taking a stack ---- */

static int scratch(thr *t)
{
	if (t->ent)
		return 0;
	size_t bytes = sizeof(stack_ent) + G.cfg.max_native * 8 + (size_t)G.cfg.max_py * sizeof(gtt_py_frame) * 2;
	t->ent = malloc(bytes);
	if (!t->ent)
		return -1;
	t->ips = (uint64_t *)(t->ent + 1);
	t->py = (gtt_py_frame *)(t->ips + G.cfg.max_native);
	return 0;
}

/* A code object seen for the first time: queue its description ahead of any stack using it. */
static int code_sink(void *ctx, uint64_t code_id, const rec_pycode *c)
{
	(void)ctx;
	code_ent h = { .type = ENT_CODE, .first_line = c->firstlineno, .code_id = code_id };
	const char *q = c->qualname ? c->qualname : c->name;
	h.name_len = (uint32_t)strlen(c->name);
	h.qual_len = (uint32_t)strlen(q);
	h.file_len = (uint32_t)strlen(c->filename);
	size_t n = (size_t)h.name_len + h.qual_len + h.file_len + 3;
	char *s = malloc(n);
	if (!s)
		return -1;
	memcpy(s, c->name, h.name_len + 1);
	memcpy(s + h.name_len + 1, q, h.qual_len + 1);
	memcpy(s + h.name_len + h.qual_len + 2, c->filename, h.file_len + 1);
	int rc = ag_ring_put(G.ring, &h, sizeof(h), s, n);
	free(s);
	return rc;
}

/* Take the stack into t's scratch entry; 0, or -1 when it cannot be kept. */
static int capture(thr *t, uint32_t gdom, CUpti_CallbackId cbid, const CUpti_CallbackData *d, uint64_t fn,
                   uint32_t why)
{
	if (scratch(t) < 0)
		return -1;
	uint64_t t0 = ag_now_ns();
	stack_ent *e = t->ent;
	*e = (stack_ent){ .type = ENT_STACK, .flags = why, .time_ns = t0, .tid = t->tid,
	                  .correlation = d->correlationId, .domain = gdom, .cbid = (uint32_t)cbid, .function = fn };
	int trunc = 0, at_py = 0, n = G.unwind_ok ? ag_unwind(t->ips, (int)G.cfg.max_native, &trunc, &at_py) : -1;
	if (n < 0) {
		n = 0;
		e->flags |= GTT_CALLSTACK_NATIVE_NONE;
	} else if (trunc) {
		e->flags |= GTT_CALLSTACK_NATIVE_TRUNC;
		ADD(n_native_trunc, 1);
	} else if (at_py) {
		e->flags |= GTT_CALLSTACK_NATIVE_AT_PY;
	}
	e->n_native = (uint32_t)n;
	int np = 0;
	if (G.cfg.python)
		np = ag_py_stack(&t->pyt, t->py, (int)G.cfg.max_py, &e->flags, code_sink, NULL);
	else
		e->flags |= GTT_CALLSTACK_PY_OFF;
	uint64_t t1 = ag_now_ns();
	t->credit_ns -= (int64_t)(t1 - t0);
	if (!(why & GTT_CALLSTACK_AT_EXIT))
		t->call_credit -= (int64_t)(t1 - t0);
	ADD(capture_ns, t1 - t0);
	if (np < 0) {
		ADD(n_skip_ring, 1);    /* a code object's description did not fit */
		return -1;
	}
	e->n_py = (uint32_t)np;
	ADD(n_native_frames, (uint64_t)n);
	ADD(n_py_frames, (uint64_t)np);
	if (e->flags & GTT_CALLSTACK_PY_NONE)
		ADD(n_py_none, 1);
	if (e->flags & GTT_CALLSTACK_PY_FAIL)
		ADD(n_py_fail, 1);
	t->pending_at = t1;
	return 0;
}

static void push(thr *t)
{
	stack_ent *e = t->ent;
	/* Python frames right after the native ones: the entry is one contiguous copy */
	memmove(t->ips + e->n_native, t->py, e->n_py * sizeof(gtt_py_frame));
	if (ag_ring_put(G.ring, e, sizeof(*e), t->ips, e->n_native * 8 + e->n_py * sizeof(gtt_py_frame)) < 0)
		ADD(n_skip_ring, 1);
	else
		ADD(n_taken, 1);
}

/* ---- the callbacks ---- */

/* A cycle counter for timing 1 callback in TIME_EVERY: the TSC where there is one (a few ns,
 * never a system call, also on VMs whose clock source makes clock_gettime slow), else the clock. */
static inline uint64_t cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return ag_now_ns();
#endif
}

static void timed_end(thr *t)
{
	uint64_t d = cycles() - t->t0;
	d = d > G.timer_cyc ? d - G.timer_cyc : 0;
	if (d > G.clip_cyc) {
		ADD(n_timed_clipped, 1);    /* preempted or interrupted in between: not the callback's cost */
		return;
	}
	ADD(n_timed, 1);
	ADD(timed_cyc, d);
}

static void api_enter(thr *t, int mode, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d,
                      int cap_closed)
{
	uint32_t epoch = (uint32_t)__atomic_load_n(&G.epoch, __ATOMIC_RELAXED);
	if (t->epoch != epoch) {
		/* callbacks were switched off and on: an exit we never saw must not count as open */
		t->depth = 0;
		t->pending = 0;
		t->epoch = epoch;
	}
	struct gtcupti_inflight_slot *s = (mode & MODE_INFLIGHT) ? t->slot : NULL;
	if (t->depth++) {
		t->n_nest++;
		if (s) {
			slot_write_begin(s);
			s->depth = t->depth - 1;
			slot_write_end(s);
		}
		return;
	}
	t->timing = 0;
	if (++t->n_local == TIME_EVERY) {
		ADD(n_calls, TIME_EVERY);
		ADD(n_nested, t->n_nest);
		t->n_local = t->n_nest = 0;
		t->timing = 1;
		t->t0 = cycles();
	}
	t->call_credit += (int64_t)G.cfg.budget_call_ns;
	uint64_t now = coarse_ns();
	uint32_t gdom = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? GTT_API_RUNTIME : GTT_API_DRIVER;
	t->enter_ns = now;
	t->api_start = 0;
	/* A call's length comes from the trace clock at entry and exit, read anyway for its API
	 * record; the coarse clock can run late after the CPU idled (a VM, a thread blocked in the
	 * call), and measured a 30 ms call at 24 ms — a long call missed or shortened */
	t->enter_prec = (mode & MODE_API) || ((mode & MODE_STACKS) && G.cfg.long_ns) ? ag_now_ns() : 0;
	if (mode & MODE_API) {
		t->api_start = t->enter_prec;
		t->api_corr = d->correlationId;
	}
	if (s) {
		slot_write_begin(s);
		s->cbid = (uint32_t)cbid;
		s->domain = gdom;
		s->correlation = d->correlationId;
		s->depth = 0;
		s->start_ns = now;
		s->name_addr = (uint64_t)(uintptr_t)d->functionName;
		s->n_calls++;
		slot_write_end(s);
	}
	if ((mode & MODE_STACKS) && !cap_closed) {
		uint64_t fn = launch_function(domain, cbid, d->functionParams);
		uint32_t why = choose(t, gdom, cbid, fn);
		if (why) {
			ADD(n_first, why == GTT_CALLSTACK_FIRST);
			ADD(n_nth, why == GTT_CALLSTACK_NTH);
			if (!budget_ok(t, now, 1))
				ADD(n_skip_budget, 1);
			else if (capture(t, gdom, cbid, d, fn, why) == 0)
				t->pending = 1;
			t->timing = 0;
		}
	}
	if (t->timing)
		timed_end(t);
}

/* The cuda_api record of the outermost call ending now, for the flush thread to write
 * (GT_CUPTI_API=callbacks): what CUPTI's API activity record would say, from the entry and exit
 * callbacks; calls made inside it are not recorded (they are part of it). Into the thread's own
 * queue: no lock, no shared write. */
static void put_api(thr *t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d,
                    uint64_t end_ns)
{
	ag_api_call a = { .tid = t->tid, .cbid = (uint32_t)cbid, .correlation = t->api_corr,
	                  .start_ns = t->api_start, .end_ns = end_ns };
	a.domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? GTT_API_RUNTIME : GTT_API_DRIVER;
	if (d->functionReturnValue)
		memcpy(&a.status, d->functionReturnValue, sizeof(a.status)); /* cudaError_t, CUresult: enums */
	t->api_start = 0;
	if ((t->apiq || (t->apiq = ag_apiq_new(G.wake))) && ag_apiq_put(t->apiq, &a) == 0)
		return;
	/* the queue is full (a thread calling faster than the flush thread drains): the shared ring
	 * takes the overflow, with its mutex, until the flush thread catches up */
	api_ent e = { .type = ENT_API, .c = a };
	if (ag_ring_put(G.ring, &e, sizeof(e), NULL, 0) < 0)
		ADD(n_api_lost, 1);
}

static void api_exit(thr *t, int mode, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d,
                     int cap_closed)
{
	struct gtcupti_inflight_slot *s = (mode & MODE_INFLIGHT) ? t->slot : NULL;
	if (!t->depth)
		return;    /* its entry came before callbacks were on */
	if (--t->depth) {
		if (s) {
			slot_write_begin(s);
			s->depth = t->depth - 1;
			slot_write_end(s);
		}
		return;
	}
	if (t->timing)
		t->t0 = cycles();
	if (s) {
		slot_write_begin(s);
		s->cbid = 0;
		s->depth = 0;
		slot_write_end(s);
	}
	uint64_t end = t->enter_prec ? ag_now_ns() : 0, enter = t->enter_prec;
	t->enter_prec = 0;
	if ((mode & MODE_API) && t->api_start)
		put_api(t, domain, cbid, d, end ? end : ag_now_ns());
	if (!(mode & MODE_STACKS) && !t->pending)
		goto timed;
	uint64_t long_ns = G.cfg.long_ns;
	if (t->pending) {
		/* a stack taken at entry: its precise clock says how long the call was */
		t->pending = 0;
		t->ent->call_ns = (end ? end : ag_now_ns()) - t->pending_at;
		if (long_ns && t->ent->call_ns >= long_ns) {
			t->ent->flags |= GTT_CALLSTACK_LONG;
			ADD(n_long, 1);
		}
		push(t);
		return;
	}
	/* Otherwise the call's length from the trace clock at its entry and now (none when stacks
	 * were switched on during the call) */
	if (long_ns && enter && end - enter >= long_ns && (mode & MODE_STACKS) && !cap_closed) {
		uint64_t now = coarse_ns();
		uint32_t gdom = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? GTT_API_RUNTIME : GTT_API_DRIVER;
		ADD(n_long, 1);
		ADD(n_long_exit, 1);
		if (!budget_ok(t, now, 0)) {
			ADD(n_skip_budget, 1);
		} else if (capture(t, gdom, cbid, d, launch_function(domain, cbid, d->functionParams),
		                   GTT_CALLSTACK_LONG | GTT_CALLSTACK_AT_EXIT) == 0) {
			t->ent->call_ns = end - enter;
			push(t);
		}
		return;
	}
timed:
	if (t->timing)
		timed_end(t);
}

void ag_calls_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *d)
{
	thr *t = T;
	if (__builtin_expect(!t, 0) && !(t = thr_new(1)))
		return;
	if (t->ignore || !d)
		return;
	int cap_closed = 0;
	if (__builtin_expect(ag_cap_active(), 0)) {
		/* capture ranges: the first call after a range opened or closed marks its bounds in
		 * correlation ids; outside a range no stack is taken */
		uint32_t g = ag_cap_gen();
		if (g != t->cap_gen && d->callbackSite == CUPTI_API_ENTER) {
			t->cap_gen = g;
			ag_cap_note_corr(g, d->correlationId);
		}
		cap_closed = !(g & 1);
	}
	int mode = __atomic_load_n(&G.mode, __ATOMIC_RELAXED);
	if (!mode)
		return;
	if (d->callbackSite == CUPTI_API_ENTER)
		api_enter(t, mode, domain, cbid, d, cap_closed);
	else
		api_exit(t, mode, domain, cbid, d, cap_closed);
}

/* ---- set-up and switching ---- */

int ag_calls_init(const ag_calls_cfg *c, uint32_t pid)
{
	if (G.ready)
		return 0;
	G.cfg = *c;
	G.pid = pid;
	G.ring = ag_ring_create(c->ring_bytes);
	if (!G.ring || pthread_key_create(&G.key, thr_free) != 0) {
		ag_ring_destroy(G.ring);
		G.ring = NULL;
		return -1;
	}
	struct timespec res;
	gtcupti_inflight.pid = pid;
	G.tick_ns = clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 ?
	            (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec : 4000000;
	gtcupti_inflight.clock_res_ns = G.tick_ns;
	/* the cost of the cycle-counter read that times 1 in TIME_EVERY callbacks, taken off the
	 * result; cycles per ns from a 2 ms measurement now, refined at the end (ag_calls_stats_get) */
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 64; i++) {
		uint64_t a = cycles(), b = cycles();
		if (b - a < best)
			best = b - a;
	}
	G.timer_cyc = best;
	G.cyc0 = cycles();
	G.ns0 = ag_now_ns();
	uint64_t c1, n1;
	do {
		c1 = cycles();
		n1 = ag_now_ns();
	} while (n1 - G.ns0 < 2000000);
	double cyc_per_ns = c1 > G.cyc0 ? (double)(c1 - G.cyc0) / (double)(n1 - G.ns0) : 1;
	G.clip_cyc = (uint64_t)(100000 * (cyc_per_ns > 0.1 ? cyc_per_ns : 1));    /* 100 us */
	/* also when stacks start off: `gt-record -p` may switch them on */
	G.unwind_ok = ag_unwind_init() == 0;
	ag_unwind_skip_object((const void *)ag_calls_callback);    /* ourselves */
	ag_unwind_skip_object((const void *)cuptiSubscribe);       /* CUPTI's dispatch */
	/* and the CUDA libraries between it and the caller: the driver, the runtime(s) loaded now */
	ag_unwind_skip_named("libcuda.so");
	ag_unwind_skip_named("libcudart");
	ag_py_set_pid((pid_t)pid);
	G.py_state = ag_py_init(G.py_why, sizeof(G.py_why));
	/* the native stack above the interpreter is the Python stack's, read better there */
	if (G.py_state == 1)
		ag_unwind_stop_object(ag_py_interpreter());
	__atomic_store_n(&G.ready, 1, __ATOMIC_RELEASE);
	if (T)
		pthread_setspecific(G.key, T);
	return 0;
}

void ag_calls_wake_with(void (*wake)(void))
{
	G.wake = wake;
}

void ag_calls_set(int inflight, int stacks, int api)
{
	int mode = (inflight ? MODE_INFLIGHT : 0) | (stacks && G.cfg.stacks ? MODE_STACKS : 0) | (api && G.ring ? MODE_API : 0);
	int old = __atomic_exchange_n(&G.mode, mode, __ATOMIC_ACQ_REL);
	if (!old && mode)
		__atomic_fetch_add(&G.epoch, 1, __ATOMIC_RELAXED);
	if (inflight)
		__atomic_fetch_or(&gtcupti_inflight.flags, GTCUPTI_INFLIGHT_ACTIVE, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&gtcupti_inflight.flags, ~GTCUPTI_INFLIGHT_ACTIVE, __ATOMIC_RELEASE);
}

void ag_calls_fork_child(uint32_t pid)
{
	G.pid = pid;
	gtcupti_inflight.pid = pid;
	ag_py_set_pid((pid_t)pid);
	for (int i = 0; i < GTCUPTI_INFLIGHT_SLOTS; i++)
		memset(&gtcupti_inflight.slot[i], 0, sizeof(gtcupti_inflight.slot[i]));
	gtcupti_inflight.n_unslotted = 0;
	memset(&G.st, 0, sizeof(G.st));
	G.reported_ring = G.reported_budget = G.reported_api_lost = 0;
	if (G.ring)
		ag_ring_reset(G.ring);
	ag_apiq_fork_child(T ? T->apiq : NULL);
	if (T) {
		/* the one thread that survives fork(): a slot of its own, under its own tid */
		T->tid = (uint32_t)syscall(SYS_gettid);
		T->slot = slot_claim(T->tid);
		T->depth = 0;
		T->pending = 0;
	}
}

void ag_calls_stats_get(ag_calls_stats *st)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*st = G.st;
	st->n_calls += T ? T->n_local : 0;
	st->n_nested += T ? T->n_nest : 0;
	uint64_t c = cycles(), n = ag_now_ns();
	st->timed_ns = c > G.cyc0 && n > G.ns0 ? (uint64_t)((double)st->timed_cyc * (double)(n - G.ns0) / (double)(c - G.cyc0))
	                                       : st->timed_cyc;
}

/* ---- the flush thread's side ---- */

typedef struct drain_ctx {
	ag_enc *e;
	gtt_writer *w;
	int n;
} drain_ctx;

static void write_api(void *ctx, const ag_api_call *c)
{
	drain_ctx *dc = ctx;
	gtt_cuda_api a = { .start_ns = c->start_ns, .end_ns = c->end_ns, .tid = c->tid, .correlation = c->correlation,
	                   .domain = c->domain, .cbid = c->cbid, .status = c->status };
	if (dc->w && dc->e && ag_enc_put_api(dc->e, &a)) {
		ADD(n_api_written, 1);
		dc->n++;
	}
}

static void write_entry(void *ctx, const uint8_t *p, size_t len)
{
	drain_ctx *dc = ctx;
	uint32_t type;
	if (!dc->w || len < 4)
		return;
	memcpy(&type, p, 4);
	gtt_record r = { .tag = 0 };
	if (type == ENT_CODE && len >= sizeof(code_ent)) {
		const code_ent *h = (const code_ent *)p;
		const char *s = (const char *)(h + 1);
		if (sizeof(*h) + h->name_len + h->qual_len + h->file_len + 3 > len)
			return;
		r.tag = GTT_REC_PY_CODE;
		r.u.py_code.pid = G.pid;
		r.u.py_code.code_id = h->code_id;
		r.u.py_code.first_line = h->first_line;
		r.u.py_code.name = s;
		r.u.py_code.qualname = s + h->name_len + 1;
		r.u.py_code.filename = s + h->name_len + h->qual_len + 2;
	} else if (type == ENT_STACK && len >= sizeof(stack_ent)) {
		const stack_ent *h = (const stack_ent *)p;
		if (sizeof(*h) + h->n_native * 8 + (size_t)h->n_py * sizeof(gtt_py_frame) > len)
			return;
		gtt_cuda_callstack *o = &r.u.callstack;
		r.tag = GTT_REC_CUDA_CALLSTACK;
		o->time_ns = h->time_ns;
		o->call_ns = h->call_ns;
		o->pid = G.pid;
		o->tid = h->tid;
		o->correlation = h->correlation;
		o->domain = h->domain;
		o->cbid = h->cbid;
		o->name_id = dc->e ? ag_enc_api_name(dc->e, h->domain, h->cbid) : 0;
		o->flags = h->flags;
		o->function = h->function;
		o->n_native = h->n_native;
		o->ips = (const uint64_t *)(h + 1);
		o->n_py = h->n_py;
		o->py = (const gtt_py_frame *)(o->ips + h->n_native);
		ADD(n_written, 1);
	} else if (type == ENT_API && len >= sizeof(api_ent)) {
		write_api(dc, &((const api_ent *)p)->c);
		return;
	} else {
		return;
	}
	if (gtt_write(dc->w, &r) == 0)
		dc->n++;
}

int ag_calls_drain(ag_enc *e, gtt_writer *w)
{
	drain_ctx dc = { e, w, 0 };
	if (!G.ring)
		return 0;
	ag_ring_drain(G.ring, write_entry, &dc);
	ag_apiq_drain(write_api, &dc);
	uint64_t ring = __atomic_load_n(&G.st.n_skip_ring, __ATOMIC_RELAXED);
	uint64_t budget = __atomic_load_n(&G.st.n_skip_budget, __ATOMIC_RELAXED);
	if (w && (ring != G.reported_ring || budget != G.reported_budget)) {
		gtt_health h = { .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_DROPPED, .pid = G.pid };
		h.time_ns = h.end_ns = ag_now_ns();
		h.value[0] = ring - G.reported_ring;
		h.value[1] = budget - G.reported_budget;
		h.count = h.value[0] + h.value[1];
		h.text = "cuda_callstack: calls chosen for a stack that have none (value[0]: the ring was full, "
		         "value[1]: over the thread's stack budget)";
		if (gtt_write_health(w, &h) == 0)
			dc.n++;
		G.reported_ring = ring;
		G.reported_budget = budget;
	}
	uint64_t api_lost = __atomic_load_n(&G.st.n_api_lost, __ATOMIC_RELAXED);
	if (w && api_lost != G.reported_api_lost) {
		gtt_health h = { .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_DROPPED, .pid = G.pid };
		h.time_ns = h.end_ns = ag_now_ns();
		h.count = h.value[0] = api_lost - G.reported_api_lost;
		h.text = "cuda_api: calls whose record (written from the agent's callbacks) was lost: the thread's queue and the "
		         "agent's ring were full";
		if (gtt_write_health(w, &h) == 0)
			dc.n++;
		G.reported_api_lost = api_lost;
	}
	return dc.n;
}

void ag_calls_write_config(gtt_writer *w)
{
	char text[400], desc[200];
	if (!w)
		return;
	ag_calls_describe(&G.cfg, desc, sizeof(desc));
	gtt_health hh = { 0 }, *h = &hh;
	h->time_ns = h->end_ns = ag_now_ns();
	h->source = GTT_SRC_CUPTI;
	h->kind = GTT_HEALTH_CONFIG;
	h->pid = G.pid;
	h->count = (uint64_t)G.cfg.stacks;
	h->value[0] = G.cfg.first_k;
	h->value[1] = G.cfg.every_n;
	h->value[2] = G.cfg.long_ns;
	h->value[3] = G.cfg.budget_ppm;
	snprintf(text, sizeof(text), "cuda_callstack %s %s", G.cfg.stacks ? "on" : "off", desc);
	h->text = text;
	gtt_write_health(w, h);
	if (!G.cfg.stacks)
		return;
	const char *pyv = G.cfg.python ? ag_py_version() : "";
	if (!G.cfg.python)
		snprintf(text, sizeof(text), "launch stacks: Python frames off (GT_CUPTI_STACK_PYTHON=0)");
	else if (G.py_state == 1)
		snprintf(text, sizeof(text), "launch stacks: Python %s frames read in-process", pyv);
	else
		snprintf(text, sizeof(text), "launch stacks: no Python frames (%s)", G.py_why);
	gtt_write_note(w, GTT_SRC_CUPTI, ag_now_ns(), G.pid, 0, text);
	if (!G.unwind_ok)
		gtt_write_note(w, GTT_SRC_CUPTI, ag_now_ns(), G.pid, 0,
		               "launch stacks: no native frames (libgcc_s's _Unwind_Backtrace not found)");
}
