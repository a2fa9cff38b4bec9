/* cupti_nvtx.c — the CUDA agent's NVTX side (cupti_nvtx.h): capture ranges and NVTX counters.
 *
 * CUPTI calls us inside the program's NVTX calls (the agent forwards NVTX_INJECTION64_PATH to
 * CUPTI's NVTX layer, which dispatches CUPTI_CB_DOMAIN_NVTX callbacks). A push, pop, start or end
 * of a range whose name matches the capture rule opens or closes a capture range — the union over
 * threads: open while at least one matching range is open. Each transition is queued as a capture
 * record and recorded in a window table that the flush thread consults for every activity record
 * (ag_cap_keep). A marker with a numeric payload is queued as a counter record. Only matching
 * ranges take a lock; other NVTX calls cost a thread-local lookup. */
#include "cupti_nvtx.h"

#define NVTX_NO_IMPL    /* the types of NVTX, not its client implementation */
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/syscall.h>
#include "cupti_ring.h"
#include "gt_util.h"

#define RING_BYTES (256u << 10)
#define NAME_MAX_LEN 255
#define STACKS 8                /* NVTX domains whose push/pop nesting a thread tracks */
#define DEPTH_BITS 256          /* nesting levels whose match is remembered */
#define WIN_CHUNK 1024          /* capture ranges per chunk of the window table */
#define WIN_CHUNKS 4096         /* chunks: 4 M capture ranges */
#define DOMAINS 256
#define STRINGS 8192            /* registered strings remembered (open addressing) */
#define LAUNCH_LAG_NS (60ull * 1000000000ull)   /* a kernel runs at most this long after its range */
#define LAUNCH_SCAN 64          /* capture ranges looked at for one device record */

enum { EV_CAPTURE = 1, EV_COUNTER = 2 };

typedef struct ev_ent {
	uint32_t type, tid;
	uint64_t time_ns;
	double value;
	uint32_t event, name_len;
} ev_ent;                       /* followed by the name, NUL-terminated */

/* One capture range: [start_ns, end_ns), and the correlation ids of the calls made inside it,
 * [lo, hi) (UINT64_MAX: none seen yet). end, lo and hi change after the range is published. */
typedef struct win {
	uint64_t start_ns, end_ns;
	uint64_t lo, hi;
} win;

typedef struct name_ent {
	uintptr_t key;              /* handle; 0 = free */
	char *text;
} name_ent;

typedef struct nstack {
	uintptr_t domain;           /* domain handle, 0 = the default domain */
	uint32_t depth;
	uint64_t bits[DEPTH_BITS / 64];
} nstack;

typedef struct nthr {
	uint32_t spec_gen, tid;
	int n;
	nstack s[STACKS];
} nthr;

struct ag_cap_hot ag_cap_hot;

static struct {
	pthread_mutex_t lock;       /* rule, open count, ids, window table growth, name inserts */
	uint32_t pid;
	ag_ring *ring;
	void (*wake)(void);
	char spec[2 * NAME_MAX_LEN + 2];
	char name[NAME_MAX_LEN + 1], domain[NAME_MAX_LEN + 1];
	int any_domain;             /* NAME@* */
	uint32_t spec_gen;          /* rule changes: threads forget their nesting */
	int open_count;             /* matching ranges open now */
	uint64_t *ids;              /* ids of matching start/end ranges still open */
	size_t n_ids, cap_ids;
	win *chunk[WIN_CHUNKS];
	uint32_t n_win;             /* published capture ranges (release) */
	int bounds;                 /* launch correlation bounds are tracked */
	int ever;                   /* a rule was set at some point */
	uint64_t from_ns, until_ns; /* records outside [from, until) were never subject to a rule */
	name_ent domains[DOMAINS];
	name_ent strings[STRINGS];
	ag_nvtx_stats st;
	uint64_t reported_dropped;
} N = { .lock = PTHREAD_MUTEX_INITIALIZER, .until_ns = UINT64_MAX };

static __thread nthr NT;

#define ADD(field, v) __atomic_fetch_add(&N.st.field, (v), __ATOMIC_RELAXED)

static void close_locked(uint32_t tid, uint64_t now);

int ag_nvtx_init(uint32_t pid, void (*wake)(void))
{
	N.pid = pid;
	N.wake = wake;
	if (!N.ring && !(N.ring = ag_ring_create(RING_BYTES)))
		return -1;
	return 0;
}

/* ---- names: domains and registered strings, by handle ---- */

static size_t slot_of(uintptr_t key, size_t cap)
{
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 40) & (cap - 1);
}

static void name_put(name_ent *tab, size_t cap, const void *handle, const char *text)
{
	uintptr_t key = (uintptr_t)handle;
	if (!key || !text)
		return;
	pthread_mutex_lock(&N.lock);
	for (size_t i = slot_of(key, cap), k = 0; k < cap; i = (i + 1) & (cap - 1), k++) {
		if (tab[i].key == key)
			break;    /* a handle is registered once: keep the first text */
		if (!tab[i].key) {
			char *t = strdup(text);
			if (t) {
				tab[i].text = t;
				__atomic_store_n(&tab[i].key, key, __ATOMIC_RELEASE);
			}
			break;
		}
	}
	pthread_mutex_unlock(&N.lock);
}

/* Lock-free: entries are published key last and never removed. */
static const char *name_get(const name_ent *tab, size_t cap, const void *handle)
{
	uintptr_t key = (uintptr_t)handle;
	if (!key)
		return NULL;
	for (size_t i = slot_of(key, cap), k = 0; k < cap; i = (i + 1) & (cap - 1), k++) {
		uintptr_t have = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
		if (have == key)
			return tab[i].text;
		if (!have)
			return NULL;
	}
	return NULL;
}

/* A wide string as UTF-8 (wchar_t is UTF-32 on Linux), cut to len-1 bytes. */
static const char *utf8_of(const wchar_t *w, char *out, size_t len)
{
	size_t n = 0;
	for (; w && *w; w++) {
		uint32_t c = (uint32_t)*w;
		char b[4];
		size_t k;
		if (c < 0x80) {
			b[0] = (char)c;
			k = 1;
		} else if (c < 0x800) {
			b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f)), b[2] = (char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
			b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k >= len)
			break;
		memcpy(out + n, b, k);
		n += k;
	}
	out[n] = 0;
	return out;
}

/* The message of event attributes as text (buf for conversions); NULL when it has none. */
static const char *attr_message(const nvtxEventAttributes_t *a, char *buf, size_t len)
{
	if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
		return NULL;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii;
	case NVTX_MESSAGE_TYPE_UNICODE: return utf8_of(a->message.unicode, buf, len);
	case NVTX_MESSAGE_TYPE_REGISTERED: return name_get(N.strings, STRINGS, a->message.registered);
	default: return NULL;
	}
}

/* ---- the capture rule ---- */

int ag_nvtx_capture_set(const char *spec, void (*warn)(const char *fmt, const char *arg))
{
	char name[NAME_MAX_LEN + 1] = "", domain[NAME_MAX_LEN + 1] = "";
	int any = 0;
	if (spec && *spec) {
		const char *at = strrchr(spec, '@');
		size_t nl = at ? (size_t)(at - spec) : strlen(spec);
		if (nl == 0 || nl > NAME_MAX_LEN || (at && (!at[1] || strlen(at + 1) > NAME_MAX_LEN))) {
			if (warn)
				warn("ignoring capture rule '%s' (expected NAME, NAME@DOMAIN or NAME@*)", spec);
			return -1;
		}
		memcpy(name, spec, nl);
		name[nl] = 0;
		if (at && strcmp(at + 1, "*") == 0)
			any = 1;
		else if (at)
			snprintf(domain, sizeof(domain), "%s", at + 1);
	}
	uint64_t now = ag_now_ns();
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	pthread_mutex_lock(&N.lock);
	if (N.open_count > 0) {
		/* the range open under the old rule ends here */
		N.open_count = 1;
		N.n_ids = 0;
		close_locked(tid, now);
	}
	snprintf(N.name, sizeof(N.name), "%s", name);
	snprintf(N.domain, sizeof(N.domain), "%s", domain);
	N.any_domain = any;
	snprintf(N.spec, sizeof(N.spec), "%s%s%s", name, any || domain[0] ? "@" : "", any ? "*" : domain);
	__atomic_fetch_add(&N.spec_gen, 1, __ATOMIC_RELEASE);
	if (name[0]) {
		if (!N.ever) {
			N.from_ns = now;
			__atomic_store_n(&N.ever, 1, __ATOMIC_RELEASE);    /* after from_ns: ag_cap_keep reads both */
		}
		__atomic_store_n(&N.until_ns, UINT64_MAX, __ATOMIC_RELAXED);
	} else if (N.ever && N.until_ns == UINT64_MAX) {
		__atomic_store_n(&N.until_ns, now, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&ag_cap_hot.active, name[0] != 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&N.lock);
	return 0;
}

const char *ag_nvtx_capture_spec(void)
{
	return N.spec;
}

int ag_nvtx_wanted(uint32_t cbid)
{
	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxMarkEx:
	case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
	case CUPTI_CBID_NVTX_nvtxDomainCreateA:
	case CUPTI_CBID_NVTX_nvtxDomainCreateW:
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
		return 1;
	case CUPTI_CBID_NVTX_nvtxRangePushA:
	case CUPTI_CBID_NVTX_nvtxRangePushW:
	case CUPTI_CBID_NVTX_nvtxRangePushEx:
	case CUPTI_CBID_NVTX_nvtxRangePop:
	case CUPTI_CBID_NVTX_nvtxRangeStartA:
	case CUPTI_CBID_NVTX_nvtxRangeStartW:
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
	case CUPTI_CBID_NVTX_nvtxRangeEnd:
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
	case CUPTI_CBID_NVTX_nvtxDomainRangePop:
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
	case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
		return ag_cap_active();
	default:
		return 0;
	}
}

/* Does a range named text in domain (0 = default) fall under the rule? */
static int matches(const char *text, uintptr_t domain)
{
	if (!text || strcmp(text, N.name) != 0)
		return 0;
	if (N.any_domain)
		return 1;
	if (!N.domain[0])
		return domain == 0;
	const char *d = name_get(N.domains, DOMAINS, (const void *)domain);
	return d && strcmp(d, N.domain) == 0;
}

static void queue(uint32_t type, uint32_t tid, uint64_t t, uint32_t event, double value, const char *name)
{
	ev_ent h = { .type = type, .tid = tid, .time_ns = t, .value = value, .event = event };
	h.name_len = (uint32_t)strlen(name);
	if (!N.ring || ag_ring_put(N.ring, &h, sizeof(h), name, (size_t)h.name_len + 1) < 0)
		ADD(n_dropped, 1);
	else if (type == EV_CAPTURE && N.wake)
		N.wake();    /* takes only the flush thread's queue lock, never ours */
}

static win *win_at(uint32_t i)
{
	return &N.chunk[i / WIN_CHUNK][i % WIN_CHUNK];
}

/* A matching range opened (caller holds N.lock). */
static void open_locked(uint32_t tid, uint64_t now)
{
	if (N.open_count++ > 0)
		return;
	uint32_t i = N.n_win;
	if (i / WIN_CHUNK >= WIN_CHUNKS || (!N.chunk[i / WIN_CHUNK] && !(N.chunk[i / WIN_CHUNK] = calloc(WIN_CHUNK, sizeof(win))))) {
		N.open_count = 0;    /* no room to remember it: not a capture range */
		ADD(n_dropped, 1);
		return;
	}
	*win_at(i) = (win){ .start_ns = now, .end_ns = UINT64_MAX, .lo = UINT64_MAX, .hi = UINT64_MAX };
	__atomic_store_n(&N.n_win, i + 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&ag_cap_hot.gen, 1, __ATOMIC_RELEASE);    /* odd: open */
	N.st.n_ranges++;
	queue(EV_CAPTURE, tid, now, GTT_CAPTURE_START, 0, N.spec);
}

/* The last open matching range closed (caller holds N.lock). */
static void close_locked(uint32_t tid, uint64_t now)
{
	if (N.open_count == 0 || --N.open_count > 0)
		return;
	__atomic_store_n(&win_at(N.n_win - 1)->end_ns, now, __ATOMIC_RELEASE);
	__atomic_fetch_add(&ag_cap_hot.gen, 1, __ATOMIC_RELEASE);    /* even: closed */
	queue(EV_CAPTURE, tid, now, GTT_CAPTURE_STOP, 0, N.spec);
}

/* ---- push/pop nesting and start/end ids ---- */

static nthr *thr_self(void)
{
	nthr *t = &NT;
	uint32_t g = __atomic_load_n(&N.spec_gen, __ATOMIC_ACQUIRE);
	if (t->spec_gen != g) {
		t->n = 0;    /* a new rule: what was open was judged by the old one */
		t->spec_gen = g;
	}
	if (!t->tid)
		t->tid = (uint32_t)syscall(SYS_gettid);
	return t;
}

static nstack *stack_of(nthr *t, uintptr_t domain)
{
	for (int i = 0; i < t->n; i++)
		if (t->s[i].domain == domain)
			return &t->s[i];
	if (t->n == STACKS)
		return NULL;    /* more domains than we follow: their ranges never match */
	nstack *s = &t->s[t->n++];
	memset(s, 0, sizeof(*s));
	s->domain = domain;
	return s;
}

static void on_push(uintptr_t domain, const char *text)
{
	nthr *t = thr_self();
	nstack *s = stack_of(t, domain);
	if (!s)
		return;
	int m = matches(text, domain);
	if (s->depth < DEPTH_BITS) {
		uint64_t bit = 1ull << (s->depth % 64);
		if (m)
			s->bits[s->depth / 64] |= bit;
		else
			s->bits[s->depth / 64] &= ~bit;
	} else {
		m = 0;    /* deeper than we remember: its pop could not be matched */
	}
	s->depth++;
	if (m) {
		pthread_mutex_lock(&N.lock);
		open_locked(t->tid, ag_now_ns());
		pthread_mutex_unlock(&N.lock);
	}
}

static void on_pop(uintptr_t domain)
{
	nthr *t = thr_self();
	nstack *s = stack_of(t, domain);
	if (!s || s->depth == 0)
		return;    /* pushed before we were watching */
	s->depth--;
	if (s->depth >= DEPTH_BITS || !(s->bits[s->depth / 64] & 1ull << (s->depth % 64)))
		return;
	pthread_mutex_lock(&N.lock);
	close_locked(t->tid, ag_now_ns());
	pthread_mutex_unlock(&N.lock);
}

static void on_start(uintptr_t domain, const char *text, const void *ret)
{
	if (!ret || !matches(text, domain))
		return;
	nthr *t = thr_self();
	uint64_t id = *(const nvtxRangeId_t *)ret;
	pthread_mutex_lock(&N.lock);
	if (GT_GROW(N.ids, N.cap_ids, N.n_ids + 1) < 0) {
		pthread_mutex_unlock(&N.lock);
		ADD(n_dropped, 1);
		return;
	}
	N.ids[N.n_ids++] = id;
	open_locked(t->tid, ag_now_ns());
	pthread_mutex_unlock(&N.lock);
}

static void on_end(uint64_t id)
{
	if (!__atomic_load_n(&N.n_ids, __ATOMIC_RELAXED))
		return;
	nthr *t = thr_self();
	pthread_mutex_lock(&N.lock);
	for (size_t i = 0; i < N.n_ids; i++)
		if (N.ids[i] == id) {
			N.ids[i] = N.ids[--N.n_ids];
			close_locked(t->tid, ag_now_ns());
			break;
		}
	pthread_mutex_unlock(&N.lock);
}

/* ---- counters ---- */

static void on_mark(uintptr_t domain, const nvtxEventAttributes_t *a)
{
	if (!a || a->size < offsetof(nvtxEventAttributes_t, payload) + sizeof(a->payload))
		return;
	double v;
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: v = (double)a->payload.ullValue; break;
	case NVTX_PAYLOAD_TYPE_INT64: v = (double)a->payload.llValue; break;
	case NVTX_PAYLOAD_TYPE_DOUBLE: v = a->payload.dValue; break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: v = (double)a->payload.uiValue; break;
	case NVTX_PAYLOAD_TYPE_INT32: v = (double)a->payload.iValue; break;
	case NVTX_PAYLOAD_TYPE_FLOAT: v = (double)a->payload.fValue; break;
	default:
		ADD(n_no_payload, 1);
		return;
	}
	uint64_t now = ag_now_ns();
	char buf[NAME_MAX_LEN + 1], name[2 * NAME_MAX_LEN + 2];
	const char *msg = attr_message(a, buf, sizeof(buf));
	const char *dom = domain ? name_get(N.domains, DOMAINS, (const void *)domain) : NULL;
	if (!msg || !*msg)
		msg = "(unnamed)";
	if (domain)
		snprintf(name, sizeof(name), "%s/%s", dom ? dom : "(domain)", msg);
	else
		snprintf(name, sizeof(name), "%s", msg);
	nthr *t = thr_self();
	ADD(n_counters, 1);
	queue(EV_COUNTER, t->tid, now, 0, v, name);
}

/* ---- the callback ---- */

#define P(type) ((const type *)d->functionParams)

/* CUPTI's generated_nvtx_meta.h has no parameter struct for nvtxDomainCreateW */
typedef struct { const wchar_t *name; } domain_create_w_params;

void ag_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
	char buf[NAME_MAX_LEN + 1];
	if (!d)
		return;
	if (cbid == CUPTI_CBID_NVTX_nvtxRangePop) {    /* the one call without parameters */
		if (ag_cap_active())
			on_pop(0);
		return;
	}
	if (!d->functionParams)
		return;
	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxMarkEx:
		on_mark(0, P(nvtxMarkEx_params)->eventAttrib);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
		on_mark((uintptr_t)P(nvtxDomainMarkEx_params)->domain, P(nvtxDomainMarkEx_params)->core.eventAttrib);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainCreateA:
		if (d->functionReturnValue)
			name_put(N.domains, DOMAINS, *(const nvtxDomainHandle_t *)d->functionReturnValue,
			         P(nvtxDomainCreateA_params)->name);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainCreateW:
		if (d->functionReturnValue)
			name_put(N.domains, DOMAINS, *(const nvtxDomainHandle_t *)d->functionReturnValue,
			         utf8_of(P(domain_create_w_params)->name, buf, sizeof(buf)));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
		if (d->functionReturnValue)
			name_put(N.strings, STRINGS, *(const nvtxStringHandle_t *)d->functionReturnValue,
			         P(nvtxDomainRegisterStringA_params)->string);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
		if (d->functionReturnValue)
			name_put(N.strings, STRINGS, *(const nvtxStringHandle_t *)d->functionReturnValue,
			         utf8_of((const wchar_t *)P(nvtxDomainRegisterStringW_params)->string, buf, sizeof(buf)));
		break;
	default:
		break;
	}
	if (!ag_cap_active())
		return;
	switch (cbid) {
	case CUPTI_CBID_NVTX_nvtxRangePushA:
		on_push(0, P(nvtxRangePushA_params)->message);
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushW:
		on_push(0, utf8_of(P(nvtxRangePushW_params)->message, buf, sizeof(buf)));
		break;
	case CUPTI_CBID_NVTX_nvtxRangePushEx:
		on_push(0, attr_message(P(nvtxRangePushEx_params)->eventAttrib, buf, sizeof(buf)));
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
		uintptr_t dom = (uintptr_t)P(nvtxDomainRangePushEx_params)->domain;
		on_push(dom, attr_message(P(nvtxDomainRangePushEx_params)->core.eventAttrib, buf, sizeof(buf)));
		break;
	}
	case CUPTI_CBID_NVTX_nvtxDomainRangePop:
		on_pop((uintptr_t)P(nvtxDomainRangePop_params)->domain);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartA:
		on_start(0, P(nvtxRangeStartA_params)->message, d->functionReturnValue);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartW:
		on_start(0, utf8_of(P(nvtxRangeStartW_params)->message, buf, sizeof(buf)), d->functionReturnValue);
		break;
	case CUPTI_CBID_NVTX_nvtxRangeStartEx:
		on_start(0, attr_message(P(nvtxRangeStartEx_params)->eventAttrib, buf, sizeof(buf)), d->functionReturnValue);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
		uintptr_t dom = (uintptr_t)P(nvtxDomainRangeStartEx_params)->domain;
		on_start(dom, attr_message(P(nvtxDomainRangeStartEx_params)->core.eventAttrib, buf, sizeof(buf)),
		         d->functionReturnValue);
		break;
	}
	case CUPTI_CBID_NVTX_nvtxRangeEnd:
		on_end(P(nvtxRangeEnd_params)->id);
		break;
	case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
		on_end(P(nvtxDomainRangeEnd_params)->core.id);
		break;
	default:
		break;
	}
}

/* ---- the gate ---- */

void ag_cap_note_corr(uint32_t gen, uint32_t corr)
{
	if (!gen)
		return;
	uint32_t i = (gen - 1) / 2;
	if (i >= __atomic_load_n(&N.n_win, __ATOMIC_ACQUIRE))
		return;
	uint64_t *b = (gen & 1) ? &win_at(i)->lo : &win_at(i)->hi;
	uint64_t c = corr, old = __atomic_load_n(b, __ATOMIC_RELAXED);
	while (c < old && !__atomic_compare_exchange_n(b, &old, c, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void ag_cap_launch_bounds(int on)
{
	__atomic_store_n(&N.bounds, on, __ATOMIC_RELAXED);
}

/* The last capture range that started at or before t, or -1. */
static int64_t last_started(uint32_t n, uint64_t t)
{
	int64_t lo = 0, hi = (int64_t)n - 1, found = -1;
	while (lo <= hi) {
		int64_t mid = (lo + hi) / 2;
		if (win_at((uint32_t)mid)->start_ns <= t) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

int ag_cap_keep(int how, uint64_t t0, uint64_t t1, uint32_t corr)
{
	if (!__atomic_load_n(&N.ever, __ATOMIC_ACQUIRE) || t0 < N.from_ns || t0 >= __atomic_load_n(&N.until_ns, __ATOMIC_RELAXED))
		return 1;
	uint32_t n = __atomic_load_n(&N.n_win, __ATOMIC_ACQUIRE);
	if (how == AG_CAP_BY_LAUNCH && !__atomic_load_n(&N.bounds, __ATOMIC_RELAXED))
		how = AG_CAP_BY_START;
	int64_t i = last_started(n, how == AG_CAP_BY_OVERLAP ? t1 : t0);
	if (i < 0)
		return 0;
	if (how == AG_CAP_BY_START)
		return t0 < __atomic_load_n(&win_at((uint32_t)i)->end_ns, __ATOMIC_ACQUIRE);
	if (how == AG_CAP_BY_OVERLAP)
		return t0 <= __atomic_load_n(&win_at((uint32_t)i)->end_ns, __ATOMIC_ACQUIRE);
	/* by launch: the ranges just before the record's start, newest first */
	for (int k = 0; i >= 0 && k < LAUNCH_SCAN; i--, k++) {
		const win *w = win_at((uint32_t)i);
		uint64_t end = __atomic_load_n(&w->end_ns, __ATOMIC_ACQUIRE);
		if (end != UINT64_MAX && t0 > end + LAUNCH_LAG_NS)
			break;
		uint64_t lo = __atomic_load_n(&w->lo, __ATOMIC_RELAXED), hi = __atomic_load_n(&w->hi, __ATOMIC_RELAXED);
		if (corr >= lo && corr < hi)
			return 1;
	}
	return 0;
}

/* ---- the flush thread's side ---- */

typedef struct drain_ctx {
	ag_enc *e;
	gtt_writer *w;
	int n;
} drain_ctx;

static void write_ev(void *ctx, const uint8_t *p, size_t len)
{
	drain_ctx *dc = ctx;
	const ev_ent *h = (const ev_ent *)p;
	if (!dc->w || len < sizeof(*h) || sizeof(*h) + h->name_len + 1 > len)
		return;
	const char *name = (const char *)(h + 1);
	gtt_record r = { .tag = 0 };
	if (h->type == EV_CAPTURE) {
		r.tag = GTT_REC_CAPTURE;
		r.u.capture = (gtt_capture){ .time_ns = h->time_ns, .pid = N.pid, .tid = h->tid, .event = h->event,
		                             .source = GTT_CAPTURE_NVTX, .name = name };
	} else if (h->type == EV_COUNTER && dc->e) {
		r.tag = GTT_REC_COUNTER;
		r.u.counter = (gtt_counter){ .time_ns = h->time_ns, .pid = N.pid, .name_id = ag_enc_string(dc->e, name),
		                             .value = h->value };
	} else {
		return;
	}
	if (gtt_write(dc->w, &r) == 0)
		dc->n++;
}

int ag_nvtx_drain(ag_enc *e, gtt_writer *w)
{
	drain_ctx dc = { e, w, 0 };
	if (!N.ring)
		return 0;
	ag_ring_drain(N.ring, write_ev, &dc);
	uint64_t lost = __atomic_load_n(&N.st.n_dropped, __ATOMIC_RELAXED) + ag_ring_dropped(N.ring);
	if (w && lost != N.reported_dropped) {
		gtt_health h = { .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_DROPPED, .pid = N.pid };
		h.time_ns = h.end_ns = ag_now_ns();
		h.count = lost - N.reported_dropped;
		h.text = "NVTX capture or counter records lost (the agent's queue was full)";
		if (gtt_write_health(w, &h) == 0)
			dc.n++;
		N.reported_dropped = lost;
	}
	return dc.n;
}

void ag_nvtx_capture_summary(char *buf, size_t len, uint64_t n_outside)
{
	buf[0] = 0;
	if (!N.ever)
		return;
	if (!N.st.n_ranges)
		snprintf(buf, len, "capture nvtx:%s: no NVTX range of that name was opened; every CUDA record was "
		         "discarded (%llu)", N.spec[0] ? N.spec : "(off)", (unsigned long long)n_outside);
	else
		snprintf(buf, len, "capture nvtx:%s: %llu capture range(s), %llu CUDA record(s) outside them discarded",
		         N.spec[0] ? N.spec : "(off)", (unsigned long long)N.st.n_ranges, (unsigned long long)n_outside);
}

void ag_nvtx_fork_child(uint32_t pid)
{
	N.pid = pid;
	pthread_mutex_init(&N.lock, NULL);
	if (N.ring)
		ag_ring_reset(N.ring);
	N.open_count = 0;
	N.n_ids = 0;
	memset(&N.st, 0, sizeof(N.st));
	N.reported_dropped = 0;
	if (N.n_win && __atomic_load_n(&win_at(N.n_win - 1)->end_ns, __ATOMIC_RELAXED) == UINT64_MAX) {
		win_at(N.n_win - 1)->end_ns = ag_now_ns();    /* the parent's range, not ours */
		ag_cap_hot.gen++;
	}
}

void ag_nvtx_stats_get(ag_nvtx_stats *st)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*st = N.st;
}
