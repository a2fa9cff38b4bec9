/* oncpu.c — on-CPU time per thread from context switches, one switch at a time: a small heap
 * puts them back in time order (they arrive out of order across CPUs), then each thread's
 * in -> out intervals are summed as they complete. */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "captured.h"
#include "heap.h"
#include "model_priv.h"
#include "oncpu.h"

/* A switch waiting in the heap, ordered by (time, arrival). */
typedef struct pend {
	uint64_t time_ns, seq;
	uint32_t thr;   /* index into ana_oncpu.thr */
	uint32_t kind;
} pend;

/* One thread's state. The start of its on-CPU time when its first switch is "out" depends on
 * the thread's and process's start and the model's span: while reading (not final) that time is
 * kept in first_out and counted at the end. */
typedef struct thr {
	uint32_t pid, tid;
	int on;                /* -1 unknown, 0 off, 1 on */
	int started, has_first_out;
	uint64_t first_ns, from_ns, first_out_ns, in_since_ns, total_ns, last_ns;
	size_t iv;             /* captured interval of the last switch (final mode), SIZE_MAX none */
} thr;

/* (pid, time) of process starts, execs and forks, sorted: where a process's threads can begin. */
typedef struct began { uint32_t pid; uint64_t time_ns; size_t idx; } began;

struct ana_oncpu {
	int final;
	uint64_t horizon_ns;
	ANA_VEC(thr) thr;
	ana_idtable table;     /* (pid, tid) -> thr index */
	ANA_VEC(pend) heap;    /* switches that came out of order */
	ANA_VEC(pend) fifo;    /* switches that came in order (most): a queue, fifo_head its first */
	size_t fifo_head;
	uint64_t seq, max_seen_ns, n_late;
	began *beg;
	size_t n_beg;
	int beg_built;
};

ana_oncpu *ana_oncpu_new(int final, uint64_t horizon_ns)
{
	ana_oncpu *o = calloc(1, sizeof(*o));
	if (o) {
		o->final = final;
		o->horizon_ns = horizon_ns;
	}
	return o;
}

void ana_oncpu_free(ana_oncpu *o)
{
	if (!o)
		return;
	free(o->thr.v);
	free(o->heap.v);
	free(o->fifo.v);
	free(o->beg);
	ana_idtable_free(&o->table);
	free(o);
}

static int began_cmp(const void *a, const void *b)
{
	const began *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int build_began(ana_oncpu *o, const ana_model *m)
{
	o->beg_built = 1;
	o->beg = malloc((m->processes.n + 1) * sizeof(*o->beg));
	if (!o->beg)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->processes.n; i++) {
		const gtt_process *pr = &m->processes.v[i];
		if (pr->event == GTT_PROC_START || pr->event == GTT_PROC_EXEC || pr->event == GTT_PROC_FORK)
			o->beg[o->n_beg++] = (began){ pr->pid, pr->time_ns, i };
	}
	qsort(o->beg, o->n_beg, sizeof(*o->beg), began_cmp);
	return 0;
}

/* The latest start or exec of process pid at or before t (0 when none). */
static uint64_t process_began(const ana_oncpu *o, uint32_t pid, uint64_t t)
{
	size_t lo = 0, hi = o->n_beg;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->beg[mid].pid < pid || (o->beg[mid].pid == pid && o->beg[mid].time_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && o->beg[lo - 1].pid == pid ? o->beg[lo - 1].time_ns : 0;
}

/* Where a thread's on-CPU time can begin, given its first switch at first_ns: the model's start,
 * the thread's start, or its process's start or exec before that switch, whichever is latest. */
static int thread_from(ana_oncpu *o, const ana_model *m, const thr *t, uint64_t *from)
{
	if (!o->beg_built && build_began(o, m) < 0)
		return GTT_ENOMEM;
	const ana_thread *th = ana_thread_find(m, t->pid, t->tid);
	*from = th && th->start_ns > m->start_ns ? th->start_ns : m->start_ns;
	uint64_t b = process_began(o, t->pid, t->first_ns);
	if (b > *from)
		*from = b;
	return 0;
}

/* One switch of thread t, in time order. Final mode follows the captured intervals: the state
 * is unknown again at the start of each one, and only captured time counts (captured.h). */
static int step(ana_oncpu *o, const ana_model *m, thr *t, uint64_t ts, uint32_t kind)
{
	if (t->started && ts < t->last_ns)
		o->n_late++; /* came later than the horizon: taken where it arrived */
	if (!t->started) {
		t->started = 1;
		t->first_ns = ts;
		t->iv = SIZE_MAX;
		if (o->final && thread_from(o, m, t, &t->from_ns) < 0)
			return GTT_ENOMEM;
	}
	t->last_ns = ts;
	if (o->final) {
		size_t now_iv = ana_capture_controlled(m) ? ana_capture_index(m, ts) : 0;
		if (now_iv != t->iv && now_iv < m->captured.n) {
			if (t->iv != SIZE_MAX && t->iv < m->captured.n && t->on == 1)
				t->total_ns = ana_sat_add(t->total_ns, ana_captured_within(m, t->in_since_ns, m->captured.v[t->iv].end_ns));
			if (t->iv != SIZE_MAX)
				t->on = -1;
			if (m->captured.v[now_iv].start_ns > t->from_ns)
				t->from_ns = m->captured.v[now_iv].start_ns;
		}
		t->iv = now_iv;
	}
	if (kind == GTT_SWITCH_IN) {
		if (t->on != 1)
			t->in_since_ns = ts;
		t->on = 1;
		return 0;
	}
	if (t->on == 1 && ts > t->in_since_ns) {
		t->total_ns = ana_sat_add(t->total_ns, o->final ? ana_captured_within(m, t->in_since_ns, ts) : ts - t->in_since_ns);
	} else if (t->on == -1) {
		if (o->final) {
			if (ts > t->from_ns)
				t->total_ns = ana_sat_add(t->total_ns, ana_captured_within(m, t->from_ns, ts));
		} else {
			t->has_first_out = 1; /* on CPU since a start not known yet */
			t->first_out_ns = ts;
		}
	}
	t->on = 0;
	return 0;
}

static int pend_less(const pend *a, const pend *b)
{
	return a->time_ns != b->time_ns ? a->time_ns < b->time_ns : a->seq < b->seq;
}

ANA_HEAP_DEFINE(pend_heap, pend, pend_less)

/* A switch waits in the queue when it is not earlier than the queue's last (the common case:
 * no heap work), else in the heap. */
static int enqueue(ana_oncpu *o, const pend *p)
{
	if (o->fifo.n == o->fifo_head || !pend_less(p, &o->fifo.v[o->fifo.n - 1])) {
		if (o->fifo_head && o->fifo_head == o->fifo.n)
			o->fifo.n = o->fifo_head = 0; /* drained: start over at the front */
		if (o->fifo_head > 4096 && o->fifo_head * 2 > o->fifo.n) {
			/* mostly consumed: move the rest to the front */
			memmove(o->fifo.v, o->fifo.v + o->fifo_head, (o->fifo.n - o->fifo_head) * sizeof(pend));
			o->fifo.n -= o->fifo_head;
			o->fifo_head = 0;
		}
		pend *e = ana_vec_push(o->fifo);
		if (!e)
			return GTT_ENOMEM;
		*e = *p;
		return 0;
	}
	return ana_heap_push(pend_heap, o->heap, p);
}

/* Step every switch older than the horizon allows to wait (all with drain), the earliest of the
 * queue's head and the heap's top first. */
static int release(ana_oncpu *o, const ana_model *m, int drain)
{
	uint64_t edge = o->max_seen_ns > o->horizon_ns ? o->max_seen_ns - o->horizon_ns : 0;
	for (;;) {
		const pend *q = o->fifo_head < o->fifo.n ? &o->fifo.v[o->fifo_head] : NULL;
		const pend *h = o->heap.n ? &o->heap.v[0] : NULL;
		pend p;
		if (h && (!q || pend_less(h, q))) {
			if (!drain && h->time_ns >= edge)
				break;
			p = ana_heap_pop(pend_heap, o->heap);
		} else if (q) {
			if (!drain && q->time_ns >= edge)
				break;
			p = *q;
			o->fifo_head++;
		} else {
			break;
		}
		if (step(o, m, &o->thr.v[p.thr], p.time_ns, p.kind) < 0)
			return GTT_ENOMEM;
	}
	return 0;
}

static int thr_eq(uint32_t id, const void *key, void *ctx)
{
	const thr *t = &((const ana_oncpu *)ctx)->thr.v[id];
	const uint32_t *k = key;
	return t->pid == k[0] && t->tid == k[1];
}

int ana_oncpu_add(ana_oncpu *o, const ana_model *m, const gtt_switch *s)
{
	uint32_t key[2] = { s->pid, s->tid };
	uint32_t *slot = ana_idtable_slot(&o->table, ana_hash_u64((uint64_t)s->pid << 32 | s->tid), thr_eq, key, o);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		thr *t = ana_vec_push(o->thr);
		if (!t)
			return GTT_ENOMEM;
		t->pid = s->pid;
		t->tid = s->tid;
		t->on = -1;
		*slot = (uint32_t)o->thr.n;
		o->table.n++;
	}
	pend p = { s->time_ns, o->seq++, *slot - 1, s->kind };
	if (enqueue(o, &p) < 0)
		return GTT_ENOMEM;
	if (s->time_ns > o->max_seen_ns)
		o->max_seen_ns = s->time_ns;
	return release(o, m, 0);
}

int ana_oncpu_each_thread(const ana_oncpu *o, int (*fn)(void *ctx, uint32_t pid, uint32_t tid), void *ctx)
{
	for (size_t i = 0; o && i < o->thr.n; i++) {
		int rc = fn(ctx, o->thr.v[i].pid, o->thr.v[i].tid);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int ana_oncpu_finish(ana_oncpu *o, ana_model *m)
{
	if (release(o, m, 1) < 0)
		return GTT_ENOMEM;
	for (size_t i = 0; i < o->thr.n; i++) {
		thr *t = &o->thr.v[i];
		ana_thread *th = ana_thread_find(m, t->pid, t->tid);
		if (!t->started)
			continue;
		if (!o->final) {
			if (thread_from(o, m, t, &t->from_ns) < 0)
				return GTT_ENOMEM;
			if (t->has_first_out && t->first_out_ns > t->from_ns)
				t->total_ns = ana_sat_add(t->total_ns, t->first_out_ns - t->from_ns);
		}
		/* a thread still on CPU at its last switch runs until it ends, or the trace does */
		uint64_t to = th && th->end_ns && th->end_ns < m->end_ns ? th->end_ns : m->end_ns;
		if (t->on == 1 && to > t->in_since_ns)
			t->total_ns = ana_sat_add(t->total_ns, ana_captured_within(m, t->in_since_ns, to));
		if (th) {
			th->oncpu_ns = t->total_ns;
			th->oncpu_known = 1;
		}
	}
	if (o->n_late)
		ana_warn(m, "%llu context switch(es) arrived more than %.1f s after later ones: the on-CPU time of "
		         "their threads takes them in arrival order, and may be off",
		         (unsigned long long)o->n_late, gt_ns_to_s(o->horizon_ns));
	return 0;
}
