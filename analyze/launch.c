/* launch.c — launch stacks: cuda_callstack records made into model stacks, joined to the GPU
 * work of their call by correlation id, and the sampling estimator (launch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "gt_util.h"
#include "launch.h"
#include "model_priv.h"
#include "python.h"

/* ---- loading ---- */

#define MAX_LAUNCH_FRAMES 1024

typedef struct kept_stack {
	ana_callstack cs;         /* stack_id unset */
	size_t ips, n_ips;        /* in ll->ips */
	size_t py, n_py;          /* in ll->py */
} kept_stack;

struct ana_launch_loader {
	ANA_VEC(kept_stack) kept;
	ANA_VEC(uint64_t) ips;
	ANA_VEC(gtt_py_frame) py;
	uint32_t frames[MAX_LAUNCH_FRAMES];
	uint32_t merged[2 * MAX_LAUNCH_FRAMES + 4];
};

ana_launch_loader *ana_launch_loader_new(void)
{
	return calloc(1, sizeof(ana_launch_loader));
}

void ana_launch_loader_free(ana_launch_loader *ll)
{
	if (!ll)
		return;
	free(ll->kept.v);
	free(ll->ips.v);
	free(ll->py.v);
	free(ll);
}

int ana_launch_loader_add(ana_launch_loader *ll, const gtt_cuda_callstack *cs)
{
	kept_stack *k = ana_vec_push(ll->kept);
	if (!k)
		return GTT_ENOMEM;
	k->cs = (ana_callstack){ .time_ns = cs->time_ns, .call_ns = cs->call_ns, .function = cs->function,
	                         .pid = cs->pid, .tid = cs->tid, .correlation = cs->correlation,
	                         .name_id = cs->name_id, .flags = cs->flags, .stack_id = ANA_NO_ID };
	k->ips = ll->ips.n;
	k->n_ips = cs->n_native;
	k->py = ll->py.n;
	k->n_py = cs->n_py;
	if (GT_GROW(ll->ips.v, ll->ips.cap, ll->ips.n + cs->n_native + 1) < 0 ||
	    GT_GROW(ll->py.v, ll->py.cap, ll->py.n + cs->n_py + 1) < 0)
		return GTT_ENOMEM;
	if (cs->n_native)
		memcpy(ll->ips.v + ll->ips.n, cs->ips, cs->n_native * sizeof(uint64_t));
	if (cs->n_py)
		memcpy(ll->py.v + ll->py.n, cs->py, cs->n_py * sizeof(gtt_py_frame));
	ll->ips.n += cs->n_native;
	ll->py.n += cs->n_py;
	return 0;
}

static uint32_t marker(ana_model *m, const char *name)
{
	ana_frame f = { .name = name, .kind = ANA_FRAME_NATIVE };
	return ana_frame_intern(m, &f);
}

/* The native stack of a kept record (k->n_ips > 0) as a callchain for the symbolizer. Every
 * address is a return address: the symbolizer takes all but a callchain's first entry as one
 * (it looks up ip - 1), so the first goes in already moved back, until the caller puts *leaf
 * back. */
static gtt_sample native_sample(ana_launch_loader *ll, const kept_stack *k, uint64_t *leaf)
{
	uint64_t *ips = ll->ips.v + k->ips;
	*leaf = ips[0];
	ips[0] = *leaf ? *leaf - 1 : 0;
	return (gtt_sample){ .time_ns = k->cs.time_ns, .pid = k->cs.pid, .tid = k->cs.tid, .n_user = (uint32_t)k->n_ips,
	                     .ips = ips };
}

/* The merged stack of one kept record, root first, into ll->merged: Python frames (the root
 * side: the agent's native walk stops where the interpreter begins), then the native frames
 * from the outermost to the caller of the CUDA API. Returns the length or -1 on ENOMEM. */
static int merge_one(ana_launch_loader *ll, ana_model *m, ana_sym *sym, ana_pynamer *pf, const ana_opts *o,
                     const kept_stack *k)
{
	const ana_callstack *cs = &k->cs;
	uint32_t n = 0;
	int n_nat = 0;
	if (k->n_ips) {
		uint64_t leaf;
		gtt_sample smp = native_sample(ll, k, &leaf);
		ana_unwind_info ui;
		n_nat = ana_sym_sample(sym, &smp, ll->frames, MAX_LAUNCH_FRAMES, &ui);
		ll->ips.v[k->ips] = leaf;
		if (n_nat < 0)
			return -1;
	}
	int trunc = (cs->flags & GTT_CALLSTACK_PY_TRUNC) ||
	            ((cs->flags & GTT_CALLSTACK_NATIVE_TRUNC) && (!k->n_py || (o && o->python_only)));
	if (trunc && (ll->merged[n++] = marker(m, "[truncated]")) == ANA_NO_ID)
		return -1;
	if ((cs->flags & GTT_CALLSTACK_PY_FAIL) && (ll->merged[n++] = marker(m, ANA_LAUNCH_PY_UNREADABLE)) == ANA_NO_ID)
		return -1;
	for (size_t i = k->n_py; i > 0 && n < MAX_LAUNCH_FRAMES; i--) {
		uint32_t id = ana_pynamer_id(pf, cs->pid, &ll->py.v[k->py + i - 1]);
		if (id == ANA_NO_ID)
			return -1;
		ll->merged[n++] = id;
	}
	if (!(o && o->python_only)) {
		/* a native walk cut at its depth cap misses the frames between the interpreter and
		 * the outermost native frame kept */
		if (k->n_py && (cs->flags & GTT_CALLSTACK_NATIVE_TRUNC) &&
		    (ll->merged[n++] = marker(m, "[truncated]")) == ANA_NO_ID)
			return -1;
		for (int i = 0; i < n_nat && n < 2 * MAX_LAUNCH_FRAMES; i++)
			ll->merged[n++] = ll->frames[i];
	}
	if (n == 0 && (ll->merged[n++] = marker(m, o && o->python_only ? "[no python frames]" : ANA_LAUNCH_EMPTY)) ==
	                      ANA_NO_ID)
		return -1;
	return (int)n;
}

static int cmp_callstack(const void *a, const void *b)
{
	const ana_callstack *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->correlation != y->correlation)
		return x->correlation < y->correlation ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int ana_launch_loader_finish(ana_launch_loader *ll, ana_model *m, ana_sym *sym, const ana_opts *o)
{
	int rc = GTT_ENOMEM;
	ana_pynamer *pf = NULL;
	if (!ll->kept.n)
		return 0;
	if (!(pf = ana_pynamer_create(m)))
		goto out;
	/* every native stack shown to the symbolizer first: it then reads one binary's DWARF at
	 * a time (ana_sym_prepare) */
	for (size_t i = 0; i < ll->kept.n; i++) {
		const kept_stack *k = &ll->kept.v[i];
		if (!k->n_ips)
			continue;
		uint64_t leaf;
		gtt_sample smp = native_sample(ll, k, &leaf);
		int c = ana_sym_collect(sym, &smp, NULL);
		ll->ips.v[k->ips] = leaf;
		if (c < 0)
			goto out;
	}
	if (ana_sym_prepare(sym) < 0)
		goto out;
	for (size_t i = 0; i < ll->kept.n; i++) {
		int n = merge_one(ll, m, sym, pf, o, &ll->kept.v[i]);
		if (n < 0)
			goto out;
		ana_callstack *e = ana_vec_push(m->callstacks);
		if (!e)
			goto out;
		*e = ll->kept.v[i].cs;
		if ((e->stack_id = ana_stack_intern(m, ll->merged, (uint32_t)n)) == ANA_NO_ID)
			goto out;
	}
	qsort(m->callstacks.v, m->callstacks.n, sizeof(ana_callstack), cmp_callstack);
	rc = 0;
out:
	ana_pynamer_destroy(pf);
	return rc;
}

const ana_callstack *ana_callstack_find(const ana_model *m, uint32_t pid, uint32_t correlation)
{
	size_t lo = 0, hi = m->callstacks.n;
	if (!correlation)
		return NULL; /* CUPTI numbers calls from 1: 0 names no call */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const ana_callstack *c = &m->callstacks.v[mid];
		if (c->pid < pid || (c->pid == pid && c->correlation < correlation))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->callstacks.n && m->callstacks.v[lo].pid == pid && m->callstacks.v[lo].correlation == correlation)
		return &m->callstacks.v[lo];
	return NULL;
}

/* ---- the accumulator ---- */

/* How long after a call returned its stack may still come (taken at the exit of a long call,
 * written at the exit's time on the coarse clock). */
#define STACK_SLACK_NS (50ull * GT_NS_PER_MS)

typedef struct call_ent {
	uint64_t key;             /* pid << 32 | correlation */
	uint64_t api_end_ns;      /* 0 until the API record came */
	uint64_t last_ns;         /* latest time of anything of this call */
	uint32_t tid, api_name_id;
	uint32_t stack_id, flags; /* stack_id ANA_NO_ID: none (yet) */
	uint32_t has_api, has_stack, started_work;
	size_t pending;           /* work waiting for the stack: index + 1 into acc->pend, 0 none */
} call_ent;

typedef struct pend_work {
	uint32_t kind, name_id;
	uint64_t ns;
	size_t next;              /* index + 1, 0 end */
} pend_work;

typedef struct group_key { uint32_t pid, tid, api_name_id, kind, name_id; } group_key;

typedef struct acc_site {
	uint32_t group, stack_id;
	uint64_t n_exact, ns_exact, n_nth, ns_nth;
} acc_site;

struct ana_launch_acc {
	ANA_VEC(call_ent) calls;
	ana_idtable call_table;
	ANA_VEC(pend_work) pend;
	size_t pend_free;         /* free list of pend, index + 1 */
	ANA_VEC(ana_launch_group) groups;
	ana_idtable group_table;
	ANA_VEC(acc_site) sites;
	ana_idtable site_table;
	uint64_t now_ns;
	size_t fed_since_sweep;
	uint64_t n_work_no_api, n_stacks, n_stacks_joined;
};

ana_launch_acc *ana_launch_acc_new(void)
{
	return calloc(1, sizeof(ana_launch_acc));
}

void ana_launch_acc_free(ana_launch_acc *a)
{
	if (!a)
		return;
	free(a->calls.v);
	ana_idtable_free(&a->call_table);
	free(a->pend.v);
	free(a->groups.v);
	ana_idtable_free(&a->group_table);
	free(a->sites.v);
	ana_idtable_free(&a->site_table);
	free(a);
}

static int call_eq(uint32_t id, const void *key, void *ctx)
{
	return ((ana_launch_acc *)ctx)->calls.v[id].key == *(const uint64_t *)key;
}

/* The call (pid, correlation); made when create is set. NULL when absent or on ENOMEM (*oom). */
static call_ent *call_get(ana_launch_acc *a, uint32_t pid, uint32_t corr, int create, int *oom)
{
	uint64_t key = (uint64_t)pid << 32 | corr;
	uint32_t *slot = ana_idtable_slot(&a->call_table, ana_hash_corr(pid, corr), call_eq, &key, a);
	if (!slot) {
		*oom = 1;
		return NULL;
	}
	if (*slot)
		return &a->calls.v[*slot - 1];
	if (!create)
		return NULL;
	call_ent *e = ana_vec_push(a->calls);
	if (!e) {
		*oom = 1;
		return NULL;
	}
	e->key = key;
	e->stack_id = ANA_NO_ID;
	*slot = (uint32_t)a->calls.n;
	a->call_table.n++;
	return e;
}

static int group_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_launch_group *g = &((ana_launch_acc *)ctx)->groups.v[id];
	const group_key *k = key;
	return g->pid == k->pid && g->tid == k->tid && g->api_name_id == k->api_name_id && g->kind == k->kind &&
	       g->name_id == k->name_id;
}

static int site_eq(uint32_t id, const void *key, void *ctx)
{
	const acc_site *s = &((ana_launch_acc *)ctx)->sites.v[id];
	const uint32_t *k = key;
	return s->group == k[0] && s->stack_id == k[1];
}

/* One piece of work into its group (and its site when its call has a stack). 0 or ENOMEM. */
static int account(ana_launch_acc *a, uint32_t pid, const call_ent *c, uint32_t kind, uint32_t name_id, uint64_t ns)
{
	group_key k = { pid, c && c->has_api ? c->tid : 0, c && c->has_api ? c->api_name_id : 0, kind, name_id };
	if (c && !c->has_api && c->has_stack) {
		k.tid = c->tid; /* the stack names the thread and API even when the API record is missing */
		k.api_name_id = c->api_name_id;
	}
	uint64_t h = ana_hash_words(&k, sizeof(k) / 4, 0x1a2b3c); /* five words: per piece of work, not bytewise */
	uint32_t *slot = ana_idtable_slot(&a->group_table, h, group_eq, &k, a);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		ana_launch_group *g = ana_vec_push(a->groups);
		if (!g)
			return GTT_ENOMEM;
		g->pid = k.pid;
		g->tid = k.tid;
		g->api_name_id = k.api_name_id;
		g->kind = kind;
		g->name_id = name_id;
		*slot = (uint32_t)a->groups.n;
		a->group_table.n++;
	}
	uint32_t gi = *slot - 1;
	ana_launch_group *g = &a->groups.v[gi];
	g->n++;
	g->ns = ana_sat_add(g->ns, ns);
	if (!c || !c->has_stack)
		return 0;
	/* a stack of the first K calls, or of a long call not otherwise sampled, stands for its own
	 * call only; a 1-in-N one for its share of the pair's other calls */
	int nth = (c->flags & GTT_CALLSTACK_NTH) && !(c->flags & GTT_CALLSTACK_FIRST);
	if (nth) {
		g->n_nth++;
		g->ns_nth = ana_sat_add(g->ns_nth, ns);
	} else {
		g->n_exact++;
		g->ns_exact = ana_sat_add(g->ns_exact, ns);
	}
	uint32_t sk[2] = { gi, c->stack_id };
	slot = ana_idtable_slot(&a->site_table, ana_hash_u64((uint64_t)gi << 32 | c->stack_id), site_eq, sk, a);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		acc_site *s = ana_vec_push(a->sites);
		if (!s)
			return GTT_ENOMEM;
		s->group = gi;
		s->stack_id = c->stack_id;
		*slot = (uint32_t)a->sites.n;
		a->site_table.n++;
	}
	acc_site *s = &a->sites.v[*slot - 1];
	if (nth) {
		s->n_nth++;
		s->ns_nth = ana_sat_add(s->ns_nth, ns);
	} else {
		s->n_exact++;
		s->ns_exact = ana_sat_add(s->ns_exact, ns);
	}
	return 0;
}

/* Work of call c held back for its stack, accounted now. 0 or ENOMEM. */
static int flush_pending(ana_launch_acc *a, call_ent *c)
{
	uint32_t pid = (uint32_t)(c->key >> 32);
	while (c->pending) {
		size_t i = c->pending - 1;
		pend_work w = a->pend.v[i];
		c->pending = w.next;
		a->pend.v[i].next = a->pend_free;
		a->pend_free = i + 1;
		if (account(a, pid, c, w.kind, w.name_id, w.ns) < 0)
			return GTT_ENOMEM;
	}
	return 0;
}

/* Close the calls nobody will add to any more (nothing of theirs for ANA_LAUNCH_WINDOW_NS;
 * all of them with all set), and rebuild the table over the rest. 0 or ENOMEM. */
static int sweep(ana_launch_acc *a, int all)
{
	size_t k = 0;
	for (size_t i = 0; i < a->calls.n; i++) {
		call_ent *c = &a->calls.v[i];
		if (all || c->last_ns + ANA_LAUNCH_WINDOW_NS < a->now_ns) {
			if (flush_pending(a, c) < 0)
				return GTT_ENOMEM;
			if (c->has_stack && c->started_work)
				a->n_stacks_joined++;
			continue;
		}
		a->calls.v[k++] = *c;
	}
	a->calls.n = k;
	ana_idtable_clear(&a->call_table, 2 * k); /* room for as many again before the next sweep */
	for (size_t i = 0; i < k; i++) {
		uint32_t *slot = ana_idtable_slot(&a->call_table,
		                                  ana_hash_corr((uint32_t)(a->calls.v[i].key >> 32), (uint32_t)a->calls.v[i].key), call_eq,
		                                  &a->calls.v[i].key, a);
		if (!slot)
			return GTT_ENOMEM;
		*slot = (uint32_t)i + 1;
		a->call_table.n++;
	}
	a->fed_since_sweep = 0;
	return 0;
}

/* Advance the clock; sweep when as many records came as calls are open (amortized O(1)). */
static int tick(ana_launch_acc *a, uint64_t t)
{
	if (t > a->now_ns)
		a->now_ns = t;
	if (++a->fed_since_sweep < 4096 || a->fed_since_sweep < a->calls.n)
		return 0;
	return sweep(a, 0);
}

int ana_launch_acc_api(ana_launch_acc *a, const gtt_cuda_api *api)
{
	int oom = 0;
	if (tick(a, api->start_ns) < 0)
		return GTT_ENOMEM;
	if (!api->correlation)
		return 0; /* CUPTI numbers calls from 1: 0 links nothing */
	call_ent *c = call_get(a, api->pid, api->correlation, 1, &oom);
	if (!c)
		return GTT_ENOMEM;
	/* a runtime call and the driver call inside it share the correlation: the first (the
	 * outer, earlier one) names the call */
	if (c->has_api)
		return 0;
	c->has_api = 1;
	c->tid = api->tid;
	c->api_name_id = api->name_id;
	c->api_end_ns = api->end_ns > api->start_ns ? api->end_ns : api->start_ns;
	if (c->api_end_ns > c->last_ns)
		c->last_ns = c->api_end_ns;
	return 0;
}

int ana_launch_acc_stack(ana_launch_acc *a, const ana_callstack *cs)
{
	int oom = 0;
	if (tick(a, cs->time_ns) < 0)
		return GTT_ENOMEM;
	a->n_stacks++;
	if (!cs->correlation)
		return 0;
	call_ent *c = call_get(a, cs->pid, cs->correlation, 1, &oom);
	if (!c)
		return GTT_ENOMEM;
	if (c->has_stack)
		return 0; /* one stack per call: a second one (a duplicate record) changes nothing */
	c->has_stack = 1;
	c->stack_id = cs->stack_id;
	c->flags = cs->flags;
	if (!c->has_api) {
		c->tid = cs->tid;
		c->api_name_id = cs->name_id;
	}
	if (cs->time_ns > c->last_ns)
		c->last_ns = cs->time_ns;
	return flush_pending(a, c);
}

void ana_launch_acc_prefetch(const ana_launch_acc *a, uint64_t h)
{
	if (a->call_table.cap)
		__builtin_prefetch(&a->call_table.slots[h & (a->call_table.cap - 1)]);
}

void ana_launch_acc_prefetch_call(const ana_launch_acc *a, uint64_t h)
{
	if (!a->call_table.cap)
		return;
	/* the home slot only: a probe further is rare, and a wrong guess costs one fetch */
	const ana_idslot *s = &a->call_table.slots[h & (a->call_table.cap - 1)];
	if (s->id && s->hash == h && s->id <= a->calls.n)
		__builtin_prefetch(&a->calls.v[s->id - 1]);
}

int ana_launch_acc_work(ana_launch_acc *a, uint32_t kind, uint32_t pid, uint32_t correlation, uint32_t name_id,
                        uint64_t start_ns, uint64_t end_ns)
{
	int oom = 0;
	if (tick(a, start_ns) < 0)
		return GTT_ENOMEM;
	uint64_t ns = ana_span(start_ns, end_ns);
	call_ent *c = correlation ? call_get(a, pid, correlation, 0, &oom) : NULL;
	if (oom)
		return GTT_ENOMEM;
	if (!c) {
		a->n_work_no_api++;
		return account(a, pid, NULL, kind, name_id, ns);
	}
	c->started_work = 1;
	if (end_ns > c->last_ns)
		c->last_ns = end_ns;
	/* the stack of a long call is taken when it returns: until then, work of a call without a
	 * stack waits for it */
	if (c->has_stack || (c->has_api && a->now_ns > c->api_end_ns + STACK_SLACK_NS))
		return account(a, pid, c, kind, name_id, ns);
	size_t i;
	if (a->pend_free) {
		i = a->pend_free - 1;
		a->pend_free = a->pend.v[i].next;
	} else {
		if (!ana_vec_push(a->pend))
			return GTT_ENOMEM;
		i = a->pend.n - 1;
	}
	a->pend.v[i] = (pend_work){ kind, name_id, ns, c->pending };
	c->pending = i + 1;
	return 0;
}

static int cmp_group(const void *x, const void *y)
{
	const ana_launch_group *a = x, *b = y;
	const uint32_t ka[5] = { a->pid, a->kind, a->name_id, a->tid, a->api_name_id };
	const uint32_t kb[5] = { b->pid, b->kind, b->name_id, b->tid, b->api_name_id };
	for (int i = 0; i < 5; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

static int cmp_site(const void *x, const void *y)
{
	const ana_launch_site *a = x, *b = y;
	if (a->est_ns != b->est_ns)
		return a->est_ns > b->est_ns ? -1 : 1;
	if (a->est_n != b->est_n)
		return a->est_n > b->est_n ? -1 : 1;
	return a->stack_id < b->stack_id ? -1 : a->stack_id > b->stack_id;
}

/* The estimator (docs/ANALYZE.md, "Launch sites"): the work of exact stacks is its own; the rest
 * of the group (n - n_exact launches, ns - ns_exact ns) is shared among the 1-in-N stacks in
 * proportion to their count and device time - each 1-in-N stack then stands for about N
 * launches, and the shares add up to the group exactly. With no 1-in-N stack the rest is "no
 * stack captured". */
static void estimate(ana_launch_group *g, ana_launch_site *s, size_t n)
{
	double rest_n = (double)(g->n - g->n_exact), rest_ns = (double)(g->ns - g->ns_exact);
	g->none_n = g->n_nth ? 0 : rest_n;
	g->none_ns = g->n_nth ? 0 : rest_ns;
	for (size_t i = 0; i < n; i++) {
		s[i].est_n = (double)s[i].n_exact;
		s[i].est_ns = (double)s[i].ns_exact;
		if (!g->n_nth)
			continue;
		s[i].est_n += rest_n * (double)s[i].n_nth / (double)g->n_nth;
		/* device time by time share; by count share when the sampled work took no time */
		s[i].est_ns += g->ns_nth ? rest_ns * (double)s[i].ns_nth / (double)g->ns_nth
		                         : rest_ns * (double)s[i].n_nth / (double)g->n_nth;
	}
}

int ana_launch_acc_finish(ana_launch_acc *a, ana_launches *out)
{
	int rc = GTT_ENOMEM;
	size_t *order = NULL, *start = NULL;
	memset(out, 0, sizeof(*out));
	if (sweep(a, 1) < 0)
		goto out;
	size_t ng = a->groups.n, ns = a->sites.n;
	out->groups = calloc(ng ? ng : 1, sizeof(*out->groups));
	out->sites = calloc(ns ? ns : 1, sizeof(*out->sites));
	order = calloc(ng ? ng : 1, sizeof(*order));
	start = calloc(ng + 1, sizeof(*start));
	if (!out->groups || !out->sites || !order || !start)
		goto out;
	/* sites grouped by their (unsorted) group: counting sort */
	for (size_t i = 0; i < ns; i++)
		start[a->sites.v[i].group + 1]++;
	for (size_t i = 0; i < ng; i++)
		start[i + 1] += start[i];
	for (size_t i = 0; i < ng; i++) {
		a->groups.v[i].first_site = start[i];
		a->groups.v[i].n_sites = 0;
	}
	for (size_t i = 0; i < ns; i++) {
		const acc_site *s = &a->sites.v[i];
		ana_launch_group *g = &a->groups.v[s->group];
		out->sites[g->first_site + g->n_sites++] = (ana_launch_site){ s->stack_id, s->n_exact, s->ns_exact,
		                                                               s->n_nth, s->ns_nth, 0, 0 };
	}
	for (size_t i = 0; i < ng; i++) {
		ana_launch_group *g = &a->groups.v[i];
		estimate(g, out->sites + g->first_site, g->n_sites);
		if (g->n_sites > 1)
			qsort(out->sites + g->first_site, g->n_sites, sizeof(ana_launch_site), cmp_site);
	}
	if (ng)
		memcpy(out->groups, a->groups.v, ng * sizeof(*out->groups));
	if (ng > 1)
		qsort(out->groups, ng, sizeof(*out->groups), cmp_group);
	out->n_groups = ng;
	out->n_sites = ns;
	out->n_work_no_api = a->n_work_no_api;
	out->n_stacks = a->n_stacks;
	out->n_stacks_joined = a->n_stacks_joined;
	rc = 0;
out:
	free(order);
	free(start);
	ana_launch_acc_free(a);
	if (rc < 0)
		ana_launches_free(out);
	return rc;
}

void ana_launches_free(ana_launches *l)
{
	free(l->groups);
	free(l->sites);
	memset(l, 0, sizeof(*l));
}

const char *ana_launch_work_label(const ana_launch_group *g, char *buf, size_t len)
{
	static const char *const dir[] = { "", " HtoD", " DtoH", " DtoD", " HtoH", " PtoP" };
	switch (g->kind) {
	case ANA_WORK_COPY:
		snprintf(buf, len, "[memcpy%s]", g->name_id <= 5 ? dir[g->name_id] : "");
		return buf;
	case ANA_WORK_MEMSET: return "[memset]";
	case ANA_WORK_SYNC: return "[sync]";
	}
	return "[kernel]";
}

/* ---- feeding it from the model ---- */

typedef struct ev { uint64_t t; uint32_t type; uint32_t idx; } ev;
enum { EV_API = 0, EV_STACK = 1, EV_KERNEL, EV_COPY, EV_MEMSET, EV_SYNC };

static int cmp_ev(const void *x, const void *y)
{
	const ev *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int ana_launches_build(const ana_model *m, uint64_t from_ns, uint64_t to_ns, ana_launches *out)
{
	size_t n = m->apis.n + m->callstacks.n + m->kernels.n + m->memcpys.n + m->memsets.n + m->syncs.n, k = 0;
	ana_launch_acc *a = ana_launch_acc_new();
	ev *v = malloc((n ? n : 1) * sizeof(*v));
	memset(out, 0, sizeof(*out));
	if (!a || !v) {
		free(v);
		ana_launch_acc_free(a);
		return GTT_ENOMEM;
	}
#define EVS(VEC, TYPE, T, WORK)                                                          \
	for (size_t i = 0; i < m->VEC.n; i++)                                            \
		if (!WORK || (m->VEC.v[i].T >= from_ns && (!to_ns || m->VEC.v[i].T < to_ns))) \
			v[k++] = (ev){ m->VEC.v[i].T, TYPE, (uint32_t)i };
	EVS(apis, EV_API, start_ns, 0)
	EVS(callstacks, EV_STACK, time_ns, 0)
	EVS(kernels, EV_KERNEL, start_ns, 1)
	EVS(memcpys, EV_COPY, start_ns, 1)
	EVS(memsets, EV_MEMSET, start_ns, 1)
	EVS(syncs, EV_SYNC, start_ns, 1)
#undef EVS
	n = k;
	qsort(v, n, sizeof(*v), cmp_ev);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint32_t j = v[i].idx;
		switch (v[i].type) {
		case EV_API: rc = ana_launch_acc_api(a, &m->apis.v[j]); break;
		case EV_STACK: rc = ana_launch_acc_stack(a, &m->callstacks.v[j]); break;
		case EV_KERNEL: {
			const gtt_cuda_kernel *w = &m->kernels.v[j];
			rc = ana_launch_acc_work(a, ANA_WORK_KERNEL, w->pid, w->correlation, w->name_id, w->start_ns, w->end_ns);
			break;
		}
		case EV_COPY: {
			const gtt_cuda_memcpy *w = &m->memcpys.v[j];
			rc = ana_launch_acc_work(a, ANA_WORK_COPY, w->pid, w->correlation, w->kind <= 5 ? w->kind : 0,
			                         w->start_ns, w->end_ns);
			break;
		}
		case EV_MEMSET: {
			const gtt_cuda_memset *w = &m->memsets.v[j];
			rc = ana_launch_acc_work(a, ANA_WORK_MEMSET, w->pid, w->correlation, 0, w->start_ns, w->end_ns);
			break;
		}
		default: {
			const gtt_cuda_sync *w = &m->syncs.v[j];
			rc = ana_launch_acc_work(a, ANA_WORK_SYNC, w->pid, w->correlation, 0, w->start_ns, w->end_ns);
			break;
		}
		}
	}
	free(v);
	if (rc < 0) {
		ana_launch_acc_free(a);
		return rc;
	}
	return ana_launch_acc_finish(a, out);
}
