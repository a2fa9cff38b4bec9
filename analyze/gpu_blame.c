/* gpu_blame.c — the idle side of the GPU sweep (gpu_sum.h): each host thread's outermost CUDA API
 * spans as they form, each device's idle stretch as it is lived through (what every thread did
 * in it: API time by kind, exact; CPU samples by GIL class), made a gap when more work comes
 * (and dropped when none does), summed over all gaps, and kept whole for the longest ones with
 * the work that ended them and the call that submitted it. State: per device and thread, the
 * open stretch; per thread, its open span; the API calls of the last ANA_LAUNCH_WINDOW_NS. */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "gpu_sum_priv.h"

/* Devices (in the order the sweep meets them) whose idle time is broken down per thread: each
 * costs an array of threads; a host has a few GPUs. */
#define GS_MAX_BLAME_DEVS 256

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

int gs_api_state(const char *n)
{
	if (strstr(n, "Synchronize") || strstr(n, "EventQuery") || strstr(n, "StreamQuery"))
		return ANA_ST_SYNC;
	if (strstr(n, "Malloc") || strstr(n, "Free") || strstr(n, "MemAlloc") || strstr(n, "MemCreate") ||
	    strstr(n, "MemRelease") || strstr(n, "MemMap") || strstr(n, "MemUnmap") || strstr(n, "MemSetAccess") ||
	    strstr(n, "MemAddress") || strstr(n, "HostAlloc") || strstr(n, "HostRegister") ||
	    strstr(n, "MemPool") || strstr(n, "HostUnregister"))
		return ANA_ST_ALLOC;
	if (strstr(n, "Launch"))
		return ANA_ST_LAUNCH;
	if (strstr(n, "Memcpy") || strstr(n, "Memset"))
		return ANA_ST_COPY;
	return ANA_ST_API_OTHER;
}

static int class_state(int cls)
{
	switch (cls) {
	case ANA_CLASS_PY_GIL: return ANA_ST_PY_GIL;
	case ANA_CLASS_NATIVE_GIL: return ANA_ST_NATIVE_GIL;
	case ANA_CLASS_NATIVE_NOGIL: return ANA_ST_NATIVE_NOGIL;
	case ANA_CLASS_WAIT_GIL: return ANA_ST_WAIT_GIL;
	default: return ANA_ST_NONPY;
	}
}

/* ---- threads ---- */

static int thread_eq(uint32_t id, const void *key, void *ctx)
{
	const gs_thread *t = &((const gs_thread *)ctx)[id];
	const uint32_t *k = key;
	return t->pid == k[0] && t->tid == k[1];
}

/* The per-thread slot arrays of a blamed device, at the accumulator's thread capacity. */
static int dev_arrays(ana_gpu_acc *a, gs_dev *d)
{
	if (d->oslot)
		return 0;
	if (!a->cap_dev_threads)
		a->cap_dev_threads = 16;
	d->oslot = calloc(a->cap_dev_threads, sizeof(*d->oslot));
	d->bslot = calloc(a->cap_dev_threads, sizeof(*d->bslot));
	return d->oslot && d->bslot ? 0 : GTT_ENOMEM;
}

static int grow_slots(uint32_t **v, size_t old, size_t cap)
{
	uint32_t *n = realloc(*v, cap * sizeof(*n));
	if (!n)
		return GTT_ENOMEM;
	memset(n + old, 0, (cap - old) * sizeof(*n));
	*v = n;
	return 0;
}

static int grow_dev_arrays(ana_gpu_acc *a, size_t want)
{
	size_t old = a->cap_dev_threads, cap = old ? old : 16;
	while (cap < want)
		cap *= 2;
	if (cap == old)
		return 0;
	for (size_t i = 0; i < a->devs.n; i++) {
		gs_dev *d = &a->devs.v[i];
		if (d->oslot && (grow_slots(&d->oslot, old, cap) < 0 || grow_slots(&d->bslot, old, cap) < 0))
			return GTT_ENOMEM;
	}
	a->cap_dev_threads = cap;
	return 0;
}

long gs_thread_of(ana_gpu_acc *a, uint32_t pid, uint32_t tid, const char *name)
{
	uint32_t key[2] = { pid, tid };
	uint32_t *slot = ana_idtable_slot(&a->thread_table, ana_hash_u64((uint64_t)pid << 32 | tid), thread_eq, key,
	                                  a->threads.v);
	if (!slot)
		return -1;
	if (*slot)
		return (long)*slot - 1;
	if (!name)
		return -2;
	gs_thread *t = ana_vec_push(a->threads);
	if (!t)
		return -1;
	t->pid = pid;
	t->tid = tid;
	t->name = name;
	*slot = (uint32_t)a->threads.n;
	a->thread_table.n++;
	if (grow_dev_arrays(a, a->threads.n) < 0)
		return -1;
	return (long)a->threads.n - 1;
}

/* ---- open stretches ---- */

/* Thread th's entry in d's open stretch, made when new. NULL on ENOMEM. */
static gs_open *open_of(gs_dev *d, uint32_t th)
{
	if (d->oslot[th])
		return &d->openv.v[d->oslot[th] - 1];
	gs_open *o = ana_vec_push(d->openv);
	if (!o)
		return NULL;
	o->th = th;
	o->b.top_frame = ANA_NO_ID;
	d->oslot[th] = (uint32_t)d->openv.n;
	return o;
}

/* An API piece [s, e) of thread th's span in device d's open stretch. 0 or GTT_ENOMEM. */
static int api_piece(gs_dev *d, uint32_t th, const gs_span *sp, uint64_t s, uint64_t e)
{
	if (e <= s)
		return 0;
	gs_open *o = open_of(d, th);
	if (!o)
		return GTT_ENOMEM;
	o->b.ns[sp->state] += e - s;
	o->api_ns += e - s;
	if (e - s > o->b.api_max_ns[sp->state]) {
		o->b.api_max_ns[sp->state] = e - s;
		o->b.api_top[sp->state] = sp->name;
	}
	return 0;
}

/* Blamed devices get their per-thread arrays with their first work. */
static int blamed(const gs_dev *d)
{
	return d->oslot != NULL;
}

static int close_push(ana_gpu_acc *a, uint64_t end, uint32_t th)
{
	if (!ana_vec_push(a->closes))
		return GTT_ENOMEM;
	size_t i = a->closes.n - 1;
	while (i > 0 && a->closes.v[(i - 1) / 2].end > end) {
		a->closes.v[i] = a->closes.v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	a->closes.v[i].end = end;
	a->closes.v[i].th = th;
	return 0;
}

static struct gs_close close_pop(ana_gpu_acc *a)
{
	struct gs_close top = a->closes.v[0], last = a->closes.v[--a->closes.n];
	size_t i = 0, n = a->closes.n;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && a->closes.v[c + 1].end < a->closes.v[c].end)
			c++;
		if (a->closes.v[c].end >= last.end)
			break;
		a->closes.v[i] = a->closes.v[c];
		i = c;
	}
	if (n)
		a->closes.v[i] = last;
	return top;
}

static int close_span(ana_gpu_acc *a, uint32_t th)
{
	gs_thread *t = &a->threads.v[th];
	const gs_span *sp = &t->cur;
	for (size_t i = 0; i < a->devs.n; i++) {
		gs_dev *d = &a->devs.v[i];
		if (blamed(d) && d->ce < sp->end_ns &&
		    api_piece(d, th, sp, sp->start_ns > d->ce ? sp->start_ns : d->ce, sp->end_ns) < 0)
			return GTT_ENOMEM;
	}
	t->open = 0;
	t->prev = t->cur;
	t->has_prev = 1;
	for (size_t i = 0; i < a->n_open_threads; i++)
		if (a->open_threads[i] == th) {
			a->open_threads[i] = a->open_threads[--a->n_open_threads];
			break;
		}
	return 0;
}

int gs_blame_advance(ana_gpu_acc *a, uint64_t t)
{
	while (a->closes.n && a->closes.v[0].end <= t) {
		struct gs_close c = close_pop(a);
		gs_thread *th = &a->threads.v[c.th];
		if (!th->open)
			continue;
		if (th->cur.end_ns > c.end) { /* grown since: close it later */
			if (close_push(a, th->cur.end_ns, c.th) < 0)
				return GTT_ENOMEM;
			continue;
		}
		if (close_span(a, c.th) < 0)
			return GTT_ENOMEM;
	}
	return 0;
}

/* ---- API calls by correlation, for the top gaps ---- */

/* Index slots: ring position + 1 in the low 40 bits, the key's hash tag in the high 24 (a probe
 * looks at the ring only when the tags agree). */
#define CIDX_POS_MASK ((1ull << 40) - 1)

static uint64_t call_hash(uint32_t pid, uint32_t corr)
{
	return ana_hash_corr(pid, corr);
}

static gs_call *call_find(const ana_gpu_acc *a, uint32_t pid, uint32_t corr)
{
	if (!a->cidx_cap)
		return NULL;
	uint64_t h = call_hash(pid, corr), tag = h >> 40;
	for (size_t j = (size_t)h & (a->cidx_cap - 1);; j = (j + 1) & (a->cidx_cap - 1)) {
		uint64_t v = a->cidx[j];
		if (!v)
			return NULL;
		uint64_t pos = (v & CIDX_POS_MASK) - 1;
		if ((v >> 40) != tag || pos < a->head)
			continue; /* another key, or a call that left the window */
		gs_call *c = &a->ring[pos & (a->ring_cap - 1)];
		if (c->pid == pid && c->corr == corr)
			return c;
	}
}

void gs_blame_prefetch(const ana_gpu_acc *a, uint64_t h)
{
	if (a->cidx_cap)
		__builtin_prefetch(&a->cidx[h & (a->cidx_cap - 1)]);
}

static void cidx_put(ana_gpu_acc *a, size_t pos)
{
	const gs_call *c = &a->ring[pos & (a->ring_cap - 1)];
	uint64_t h = call_hash(c->pid, c->corr);
	size_t j = (size_t)h & (a->cidx_cap - 1);
	while (a->cidx[j])
		j = (j + 1) & (a->cidx_cap - 1);
	a->cidx[j] = (h >> 40) << 40 | (((uint64_t)pos + 1) & CIDX_POS_MASK);
	a->cidx_used++;
}

/* Room for one more call: calls older than the window leave; ring and index grow (the index is
 * made again from the ring when its stale slots fill it). 0 or GTT_ENOMEM. */
static int calls_room(ana_gpu_acc *a)
{
	while (a->head < a->tail && a->ring[a->head & (a->ring_cap - 1)].start_ns + ANA_LAUNCH_WINDOW_NS < a->now)
		a->head++;
	size_t live = a->tail - a->head;
	if (live + 1 > a->ring_cap) {
		size_t cap = a->ring_cap ? a->ring_cap * 2 : 1024;
		gs_call *v = malloc(cap * sizeof(*v));
		if (!v)
			return GTT_ENOMEM;
		for (size_t i = a->head; i < a->tail; i++)
			v[i & (cap - 1)] = a->ring[i & (a->ring_cap - 1)];
		free(a->ring);
		a->ring = v;
		a->ring_cap = cap;
		a->cidx_used = a->cidx_cap; /* positions map to new slots: make the index again */
	}
	if ((a->cidx_used + 1) * 2 > a->cidx_cap) {
		size_t cap = 1024;
		while (cap < (live + 1) * 3)
			cap *= 2;
		if (cap == a->cidx_cap) {
			/* the same size again (the usual case: stale slots filled it): cleared in place, not
			 * freed and allocated anew, which faults every page of it in again */
			memset(a->cidx, 0, cap * sizeof(*a->cidx));
		} else {
			uint64_t *x = calloc(cap, sizeof(*x));
			if (!x)
				return GTT_ENOMEM;
			free(a->cidx);
			a->cidx = x;
			a->cidx_cap = cap;
		}
		a->cidx_used = 0;
		for (size_t i = a->head; i < a->tail; i++)
			cidx_put(a, i);
	}
	return 0;
}

static void gap_set_api(ana_gpu_gap *g, const gs_call *c)
{
	g->has_api = 1;
	g->api_domain = c->domain;
	g->api_tid = c->tid;
	g->api_name_id = c->name_id;
	g->api_start_ns = c->start_ns;
	g->api_seq = c->seq;
	g->has_sync = (int)c->has_sync;
	g->sync_name = c->sync_name;
	g->sync_pid = c->pid;
	g->sync_corr = c->sync_corr;
	g->sync_start_ns = c->sync_start_ns;
	g->sync_end_ns = c->sync_end_ns;
}

static int call_better(const ana_gpu_gap *g, const gs_call *c)
{
	return !g->has_api || c->domain < g->api_domain || (c->domain == g->api_domain && c->seq < g->api_seq);
}

int gs_blame_api(ana_gpu_acc *a, const gs_ev *ev, const char *name, int state)
{
	const gtt_cuda_api *x = &ev->u.a;
	long th = gs_thread_of(a, x->pid, x->tid, "?");
	if (th < 0)
		return GTT_ENOMEM;
	gs_thread *t = &a->threads.v[th];
	uint64_t e = x->end_ns > x->start_ns ? x->end_ns : x->start_ns;
	if (t->open && x->start_ns < t->cur.end_ns) {
		if (e > t->cur.end_ns)
			t->cur.end_ns = e;
		/* the span is named after its outer call: at one start, the longest, runtime first */
		if (x->start_ns == t->cur.start_ns &&
		    (x->end_ns > t->cur.rep_end || (x->end_ns == t->cur.rep_end && x->domain < t->cur.rep_domain))) {
			t->cur.name = name;
			t->cur.state = state;
			t->cur.pid = x->pid;
			t->cur.corr = x->correlation;
			t->cur.rep_end = x->end_ns;
			t->cur.rep_domain = x->domain;
		}
	} else {
		t->open = 1;
		t->cur = (gs_span){ .start_ns = x->start_ns, .end_ns = e, .state = state, .name = name,
		                    .pid = x->pid, .corr = x->correlation, .rep_end = x->end_ns, .rep_domain = x->domain };
		if (GT_GROW(a->open_threads, a->cap_open_threads, a->n_open_threads + 1) < 0 ||
		    close_push(a, e, (uint32_t)th) < 0)
			return GTT_ENOMEM;
		a->open_threads[a->n_open_threads++] = (uint32_t)th;
	}
	/* the call as "submitted by" of a top gap: the thread's previous span tells what it waited on */
	gs_call c = { .pid = x->pid, .corr = x->correlation, .tid = x->tid, .name_id = x->name_id, .domain = x->domain,
	              .start_ns = x->start_ns, .seq = ev->seq };
	if (t->has_prev && t->prev.state == ANA_ST_SYNC) {
		c.has_sync = 1;
		c.sync_name = t->prev.name;
		c.sync_corr = t->prev.corr;
		c.sync_start_ns = t->prev.start_ns;
		c.sync_end_ns = t->prev.end_ns;
	}
	for (size_t i = 0; i < a->n_top; i++) {
		ana_gpu_gap *g = &a->top[i];
		if (g->has_next && g->next_pid == c.pid && g->next_corr == c.corr && call_better(g, &c))
			gap_set_api(g, &c);
	}
	gs_call *old = call_find(a, c.pid, c.corr);
	if (old) {
		/* the first record of a correlation in file order, runtime before driver */
		if (c.domain < old->domain || (c.domain == old->domain && c.seq < old->seq))
			*old = c;
		return 0;
	}
	if (calls_room(a) < 0)
		return GTT_ENOMEM;
	a->ring[a->tail & (a->ring_cap - 1)] = c;
	cidx_put(a, a->tail++);
	return 0;
}

/* ---- gaps ---- */

uint32_t gs_leaf_frame(const ana_model *m, uint32_t stack_id)
{
	if (stack_id >= m->stacks.n || !m->stacks.v[stack_id].n)
		return ANA_NO_ID;
	return m->stacks.v[stack_id].frames[m->stacks.v[stack_id].n - 1];
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

static uint64_t active_ns(const ana_gpu_blame *b)
{
	uint64_t s = 0;
	for (int st = 0; st < ANA_ST_OFF; st++)
		s += b->ns[st];
	return s;
}

/* One thread during one gap of len ns: samples stand for at most the time API calls leave;
 * the most frequent leaf frame of its first samples. */
static void gap_blame(gs_open *o, uint64_t len, ana_gpu_blame *out)
{
	*out = o->b;
	uint64_t sampled = 0;
	for (int st = ANA_ST_PY_GIL; st < ANA_ST_OFF; st++)
		sampled = ana_sat_add(sampled, out->ns[st]);
	uint64_t room = len - (o->api_ns < len ? o->api_ns : len);
	if (sampled > room) {
		for (int st = ANA_ST_PY_GIL; st < ANA_ST_OFF; st++)
			out->ns[st] = sampled ? ana_d2u64((double)out->ns[st] * (double)room / (double)sampled) : 0;
		sampled = room;
	}
	out->ns[ANA_ST_OFF] = room - sampled;
	out->top_frame = ANA_NO_ID;
	out->top_frame_n = 0;
	if (o->n_leaf) {
		qsort(o->leaves, o->n_leaf, sizeof(*o->leaves), cmp_u32);
		for (size_t i = 0, j; i < o->n_leaf; i = j) {
			for (j = i; j < o->n_leaf && o->leaves[j] == o->leaves[i]; j++)
				;
			if (j - i > out->top_frame_n && o->leaves[i] != ANA_NO_ID) {
				out->top_frame_n = j - i;
				out->top_frame = o->leaves[i];
			}
		}
	}
}

/* Longer first, then earlier, then the lower device. */
static int gap_before(const ana_gpu_gap *x, const ana_gpu_gap *y)
{
	uint64_t lx = x->end_ns - x->start_ns, ly = y->end_ns - y->start_ns;
	if (lx != ly)
		return lx > ly;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns;
	return x->dev < y->dev;
}

void ana_gpu_gap_free(ana_gpu_gap *g)
{
	free(g->threads);
	g->threads = NULL;
	g->n_threads = 0;
}

static void gap_set_next(ana_gpu_acc *a, ana_gpu_gap *g, const gs_ev *ev, uint64_t end)
{
	g->has_next = 1;
	g->next_end_ns = end;
	g->next_seq = ev->seq;
	g->has_api = 0;
	g->has_sync = 0;
	switch (ev->type) {
	case GS_KERNEL:
		g->next_type = ANA_WORK_KERNEL;
		g->next_pid = ev->u.k.pid;
		g->next_corr = ev->u.k.correlation;
		g->next_name_id = ev->u.k.name_id;
		break;
	case GS_COPY:
		g->next_type = ANA_WORK_COPY;
		g->next_pid = ev->u.c.pid;
		g->next_corr = ev->u.c.correlation;
		break;
	default:
		g->next_type = ANA_WORK_MEMSET;
		g->next_pid = ev->u.s.pid;
		g->next_corr = ev->u.s.correlation;
		break;
	}
	const gs_call *c = call_find(a, g->next_pid, g->next_corr);
	if (c)
		gap_set_api(g, c);
}

/* Keep gap [g0, g1) of device di among the longest, with what every thread did in it. */
static int top_keep(ana_gpu_acc *a, int di, uint64_t g0, uint64_t g1, const gs_ev *ev, uint64_t end)
{
	gs_dev *d = &a->devs.v[di];
	ana_gpu_gap g = { .start_ns = g0, .end_ns = g1, .dev = di };
	size_t slot = a->n_top, cap = sizeof(a->top) / sizeof(a->top[0]);
	if (a->n_top == cap) {
		slot = 0;
		for (size_t i = 1; i < cap; i++)
			if (gap_before(&a->top[slot], &a->top[i]))
				slot = i;
		if (!gap_before(&g, &a->top[slot]))
			return 0;
	}
	g.threads = calloc(d->openv.n ? d->openv.n : 1, sizeof(*g.threads));
	if (!g.threads)
		return GTT_ENOMEM;
	for (size_t i = 0; i < d->openv.n; i++) {
		gs_open *o = &d->openv.v[i];
		ana_gpu_tblame *tb = &g.threads[g.n_threads];
		gap_blame(o, g1 - g0, &tb->b);
		tb->thread = o->th;
		if (active_ns(&tb->b))
			g.n_threads++;
	}
	gap_set_next(a, &g, ev, end);
	if (slot < a->n_top)
		ana_gpu_gap_free(&a->top[slot]);
	else
		a->n_top++;
	a->top[slot] = g;
	d->pending = (int)slot;
	d->pending_start = g0;
	d->pending_end = g1;
	return 0;
}

/* The gap [ce, s) of d closes: every open span's piece, the histogram, the sums, the top list. */
static int gap_close(ana_gpu_acc *a, int di, const gs_ev *ev, uint64_t s, uint64_t end)
{
	static const uint64_t edges[] = { 10000, 100000, 1000000, 10000000, UINT64_MAX };
	gs_dev *d = &a->devs.v[di];
	uint64_t g0 = d->ce, len = s - g0;
	int k = 0;
	while (len >= edges[k])
		k++;
	d->busy.gap_cnt[k]++;
	d->busy.gap_ns[k] += len;
	d->busy.gap_total += len;
	d->busy.n_gaps++;
	if (!blamed(d))
		return 0;
	for (size_t i = 0; i < a->n_open_threads; i++) {
		uint32_t th = a->open_threads[i];
		const gs_span *sp = &a->threads.v[th].cur;
		if (api_piece(d, th, sp, sp->start_ns > g0 ? sp->start_ns : g0, s) < 0)
			return GTT_ENOMEM;
	}
	int rc = top_keep(a, di, g0, s, ev, end);
	for (size_t i = 0; rc == 0 && i < d->openv.n; i++) {
		gs_open *o = &d->openv.v[i];
		if (!d->bslot[o->th]) {
			ana_gpu_tblame *nb = ana_vec_push(d->sums);
			if (!nb) {
				rc = GTT_ENOMEM;
				break;
			}
			nb->thread = o->th;
			nb->b.top_frame = ANA_NO_ID;
			d->bslot[o->th] = (uint32_t)d->sums.n;
		}
		ana_gpu_blame *b = &d->sums.v[d->bslot[o->th] - 1].b;
		for (int st = 0; st < ANA_ST_COUNT; st++) {
			b->ns[st] = ana_sat_add(b->ns[st], o->b.ns[st]);
			b->n_samples[st] += o->b.n_samples[st];
			if (o->b.api_max_ns[st] > b->api_max_ns[st]) {
				b->api_max_ns[st] = o->b.api_max_ns[st];
				b->api_top[st] = o->b.api_top[st];
			}
		}
	}
	for (size_t i = 0; i < d->openv.n; i++)
		d->oslot[d->openv.v[i].th] = 0;
	d->openv.n = 0;
	return rc;
}

int gs_blame_work(ana_gpu_acc *a, int di, const gs_ev *ev, uint64_t s, uint64_t end)
{
	gs_dev *d = &a->devs.v[di];
	if (d->pending >= 0) {
		ana_gpu_gap *g = &a->top[d->pending];
		if (s != d->pending_end || g->dev != di || g->start_ns != d->pending_start || g->end_ns != d->pending_end) {
			d->pending = -1;
		} else {
			/* work starting with the one that ended the gap: the first by (end, kind, file order) */
			int type = ev->type - GS_KERNEL;
			if (end < g->next_end_ns || (end == g->next_end_ns && (type < g->next_type ||
			                                                       (type == g->next_type && ev->seq < g->next_seq))))
				gap_set_next(a, g, ev, end);
		}
	}
	if (!d->has)
		return di < GS_MAX_BLAME_DEVS ? dev_arrays(a, d) : 0;
	if (s <= d->ce)
		return 0;
	return gap_close(a, di, ev, s, end);
}

int gs_blame_sample(ana_gpu_acc *a, const ana_sample *s, uint32_t leaf)
{
	long th = gs_thread_of(a, s->pid, s->tid, NULL);
	if (th < 0)
		return th == -2 ? 0 : GTT_ENOMEM;
	const gs_thread *t = &a->threads.v[th];
	if (t->open && t->cur.start_ns <= s->time_ns && s->time_ns < t->cur.end_ns)
		return 0; /* inside its own CUDA call: the call's time counts */
	int st = class_state(s->cls);
	for (size_t i = 0; i < a->devs.n; i++) {
		gs_dev *d = &a->devs.v[i];
		if (!blamed(d) || d->ce > s->time_ns)
			continue;
		gs_open *o = open_of(d, (uint32_t)th);
		if (!o)
			return GTT_ENOMEM;
		o->b.n_samples[st]++;
		o->b.ns[st] = ana_sat_add(o->b.ns[st], s->weight_ns);
		if (o->n_leaf < GS_LEAVES)
			o->leaves[o->n_leaf++] = leaf;
	}
	return 0;
}

/* ---- the end ---- */

static int cmp_thread_idx(const void *x, const void *y, void *ctx)
{
	const gs_thread *t = ctx;
	const gs_thread *a = &t[*(const uint32_t *)x], *b = &t[*(const uint32_t *)y];
	int c = cmp_u64(a->pid, b->pid);
	return c ? c : cmp_u64(a->tid, b->tid);
}

static int cmp_tblame(const void *x, const void *y)
{
	return cmp_u64(((const ana_gpu_tblame *)x)->thread, ((const ana_gpu_tblame *)y)->thread);
}

static int cmp_gap(const void *x, const void *y)
{
	const ana_gpu_gap *a = x, *b = y;
	return gap_before(a, b) ? -1 : gap_before(b, a) ? 1 : 0;
}

int gs_blame_finish(ana_gpu_acc *a, const int *map)
{
	ana_gpu_sum *S = a->sum;
	size_t nt = a->threads.n;
	uint32_t *order = malloc((nt ? nt : 1) * sizeof(*order)), *rank = malloc((nt ? nt : 1) * sizeof(*rank));
	int rc = GTT_ENOMEM;
	if (!order || !rank || !(S->threads = calloc(nt ? nt : 1, sizeof(*S->threads))))
		goto out;
	for (size_t i = 0; i < nt; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nt, sizeof(*order), cmp_thread_idx, a->threads.v);
	for (size_t i = 0; i < nt; i++) {
		rank[order[i]] = (uint32_t)i;
		const gs_thread *t = &a->threads.v[order[i]];
		S->threads[i] = (ana_gpu_thread){ t->pid, t->tid, t->name };
	}
	S->n_threads = nt;
	/* the sums over all gaps, in thread order; a blamed device without any gets an empty list */
	for (size_t i = 0; i < a->devs.n; i++) {
		gs_dev *d = &a->devs.v[i];
		ana_gpu_busy *b = &S->busy[map[i]];
		if (!blamed(d))
			continue;
		size_t n = d->sums.n;
		if (!(b->blame = malloc((n ? n : 1) * sizeof(*b->blame))))
			goto out;
		for (size_t k = 0; k < n; k++) {
			b->blame[k] = d->sums.v[k];
			b->blame[k].thread = rank[d->sums.v[k].thread];
		}
		qsort(b->blame, n, sizeof(*b->blame), cmp_tblame);
		b->n_blame = n;
	}
	S->blame_devices = a->devs.n < GS_MAX_BLAME_DEVS ? a->devs.n : GS_MAX_BLAME_DEVS;
	for (size_t i = 0; i < a->n_top; i++) {
		ana_gpu_gap *g = &a->top[i];
		g->dev = map[g->dev];
		for (size_t k = 0; k < g->n_threads; k++)
			g->threads[k].thread = rank[g->threads[k].thread];
	}
	qsort(a->top, a->n_top, sizeof(a->top[0]), cmp_gap);
	for (size_t i = 0; i < a->n_top; i++) {
		if (i < ANA_GPU_TOP_GAPS)
			S->gaps[S->n_top_gaps++] = a->top[i];
		else
			ana_gpu_gap_free(&a->top[i]);
	}
	a->n_top = 0;
	rc = 0;
out:
	free(order);
	free(rank);
	return rc;
}

void gs_blame_free(ana_gpu_acc *a)
{
	for (size_t i = 0; i < a->devs.n; i++) {
		free(a->devs.v[i].oslot);
		free(a->devs.v[i].bslot);
		free(a->devs.v[i].openv.v);
		free(a->devs.v[i].sums.v);
	}
	for (size_t i = 0; i < a->n_top; i++)
		ana_gpu_gap_free(&a->top[i]);
	free(a->threads.v);
	free(a->closes.v);
	free(a->open_threads);
	free(a->ring);
	free(a->cidx);
	ana_idtable_free(&a->thread_table);
}
