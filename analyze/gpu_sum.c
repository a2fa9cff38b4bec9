/* gpu_sum.c — the GPU aggregates as a stream (gpu_sum.h): the time-ordered sweep that merges the
 * reorder queue (gpu_queue.c) with the model's samples and launch stacks, per-name tables, copies
 * and syncs, physical devices, busy time per device, per bucket and per process. Idle gaps and
 * their blame are gpu_blame.c's. Output equals what sorting every record would give: every tie
 * has the order the sorted arrays had (file order within a kind). */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "demangle.h"
#include "gpu_sum_priv.h"

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* ---- per-name rows ---- */

typedef struct row_key { const char *name; uint32_t domain; } row_key;

static int row_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_gpu_row *r = &((const ana_gpu_row *)ctx)[id];
	const row_key *k = key;
	return r->domain == k->domain && strcmp(r->name, k->name) == 0;
}

static int row_of(ana_idtable *t, void *vec, const char *name, uint32_t domain, uint64_t seq, uint32_t *row)
{
	ANA_VEC(ana_gpu_row) *rows = vec;
	row_key k = { name, domain };
	uint32_t *slot = ana_idtable_slot(t, ana_hash_bytes(name, strlen(name), domain), row_eq, &k, rows->v);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		ana_gpu_row *r = ana_vec_push(*rows);
		if (!r)
			return GTT_ENOMEM;
		r->name = name;
		r->domain = domain;
		r->first_seq = seq;
		*slot = (uint32_t)rows->n;
		t->n++;
	}
	*row = *slot - 1;
	return 0;
}

static void row_count(ana_gpu_row *r, uint64_t d, int err, uint64_t seq)
{
	if (seq < r->first_seq) /* the sweep is in time order, not file order */
		r->first_seq = seq;
	r->count++;
	r->total_ns = ana_sat_add(r->total_ns, d);
	if (d > r->max_ns)
		r->max_ns = d;
	r->n_err += err != 0;
}

static int name_eq(uint32_t id, const void *key, void *ctx)
{
	const gs_name *n = &((const gs_name *)ctx)[id];
	const uint32_t *k = key;
	return n->kind == k[0] && n->pid == k[1] && n->name_id == k[2] && n->domain == k[3];
}

/* The row (and kind of call) of a kernel (kind 0) or API call (kind 1) name. NULL on ENOMEM. */
static const gs_name *name_of(ana_gpu_acc *a, uint32_t kind, uint32_t pid, uint32_t name_id, uint32_t domain,
                             uint64_t seq)
{
	uint32_t key[4] = { kind, pid, name_id, domain };
	uint32_t *slot = ana_idtable_slot(&a->name_table, ana_hash_words(key, 4, 0x9a3e), name_eq, key, a->names.v);
	if (!slot)
		return NULL;
	if (!*slot) {
		const char *name = ana_string_get(a->m, pid, name_id);
		uint32_t row;
		if ((kind ? row_of(&a->arow_table, &a->arows, name, domain, seq, &row)
		          : row_of(&a->krow_table, &a->krows, name, 0, seq, &row)) < 0)
			return NULL;
		gs_name *n = ana_vec_push(a->names);
		if (!n)
			return NULL;
		*n = (gs_name){ kind, pid, name_id, domain, row, kind ? gs_api_state(name) : 0, name };
		*slot = (uint32_t)a->names.n;
		a->name_table.n++;
	}
	return &a->names.v[*slot - 1];
}

static int cmp_row_kernel(const void *x, const void *y, void *ctx)
{
	const ana_gpu_row *a = x, *b = y;
	const ana_model *m = ctx;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	int c = strcmp(ana_display_name(m, a->name), ana_display_name(m, b->name));
	return c ? c : strcmp(a->name, b->name);
}

static int cmp_row_api(const void *x, const void *y)
{
	const ana_gpu_row *a = x, *b = y;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	int c = strcmp(a->name, b->name);
	return c ? c : cmp_u64(a->domain, b->domain);
}

/* ---- devices ---- */

static int cmp_info(const void *x, const void *y, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_cuda_device *a = &m->cuda_devices.v[*(const size_t *)x], *b = &m->cuda_devices.v[*(const size_t *)y];
	int c = cmp_u64(a->pid, b->pid);
	if (!c)
		c = cmp_u64(a->device, b->device);
	return c ? c : cmp_u64(*(const size_t *)x, *(const size_t *)y);
}

/* The last CUDA_DEVICE record of (pid, device), NULL when none. */
static const gtt_cuda_device *device_info(const ana_gpu_acc *a, uint32_t pid, uint32_t device)
{
	const ana_model *m = a->m;
	size_t lo = 0, hi = m->cuda_devices.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const gtt_cuda_device *d = &m->cuda_devices.v[a->info[mid]];
		if (d->pid < pid || (d->pid == pid && d->device <= device))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const gtt_cuda_device *d = &m->cuda_devices.v[a->info[lo - 1]];
	return d->pid == pid && d->device == device ? d : NULL;
}

static int pair_eq(uint32_t id, const void *key, void *ctx)
{
	const gs_pair *p = &((const gs_pair *)ctx)[id];
	const uint32_t *k = key;
	return p->pid == k[0] && p->device == k[1];
}

static int uuid_eq(uint32_t id, const void *key, void *ctx)
{
	const gs_pair *p = &((const gs_pair *)ctx)[id];
	return p->uuid && strcmp(p->uuid, key) == 0;
}

static int new_dev(ana_gpu_acc *a)
{
	gs_dev *d = ana_vec_push(a->devs);
	if (!d)
		return -1;
	d->first[0] = d->first[1] = d->first[2] = UINT64_MAX;
	d->pending = -1;
	d->busy.first_ns = UINT64_MAX;
	if (!(d->busy.bins = calloc(a->sum->bins.n, sizeof(uint64_t))))
		return -1;
	return (int)a->devs.n - 1;
}

/* The provisional physical device of (pid, device), first seen as work of kind k (0 kernel,
 * 1 copy, 2 memset) at seq: its UUID when the agent wrote one, else the pair itself. -1 ENOMEM. */
static int device_of(ana_gpu_acc *a, uint32_t pid, uint32_t device, int k, uint64_t seq)
{
	if (a->last_pair) {
		/* work comes in runs of one (pid, device): no lookup for them */
		gs_pair *p = &a->pairs.v[a->last_pair - 1];
		if (p->pid == pid && p->device == device) {
			gs_dev *d = &a->devs.v[p->phys];
			if (seq < p->first[k])
				p->first[k] = seq;
			if (seq < d->first[k])
				d->first[k] = seq;
			return p->phys;
		}
	}
	uint32_t key[2] = { pid, device };
	uint32_t *slot = ana_idtable_slot(&a->pair_table, ana_hash_u64((uint64_t)pid << 32 | device), pair_eq, key,
	                                  a->pairs.v);
	if (!slot)
		return -1;
	gs_pair *p;
	if (*slot) {
		p = &a->pairs.v[*slot - 1];
	} else {
		const gtt_cuda_device *info = device_info(a, pid, device);
		const char *uuid = info && info->uuid && *info->uuid ? info->uuid : NULL;
		uint32_t *uslot = NULL;
		int phys = -1;
		if (uuid) {
			if (!(uslot = ana_idtable_slot(&a->uuid_table, ana_hash_bytes(uuid, strlen(uuid), 5), uuid_eq, uuid,
			                               a->pairs.v)))
				return -1;
			if (*uslot)
				phys = a->pairs.v[*uslot - 1].phys;
		}
		if (phys < 0 && (phys = new_dev(a)) < 0)
			return -1;
		if (!(p = ana_vec_push(a->pairs)))
			return -1;
		p->pid = pid;
		p->device = device;
		p->uuid = uuid;
		p->name = info ? info->name : NULL;
		p->phys = phys;
		p->first[0] = p->first[1] = p->first[2] = UINT64_MAX;
		*slot = (uint32_t)a->pairs.n;
		a->pair_table.n++;
		if (uslot && !*uslot) {
			*uslot = (uint32_t)a->pairs.n;
			a->uuid_table.n++;
		}
	}
	gs_dev *d = &a->devs.v[p->phys];
	if (seq < p->first[k])
		p->first[k] = seq;
	if (seq < d->first[k])
		d->first[k] = seq;
	a->last_pair = (long)(p - a->pairs.v) + 1;
	return p->phys;
}

/* ---- processes ---- */

static int proc_eq(uint32_t id, const void *key, void *ctx)
{
	return ((const gs_proc *)ctx)[id].pid == *(const uint32_t *)key;
}

static gs_proc *proc_of(ana_gpu_acc *a, uint32_t pid)
{
	if (a->last_proc && a->procs.v[a->last_proc - 1].pid == pid)
		return &a->procs.v[a->last_proc - 1];
	uint32_t *slot = ana_idtable_slot(&a->proc_table, ana_hash_u64(pid), proc_eq, &pid, a->procs.v);
	if (!slot)
		return NULL;
	if (!*slot) {
		gs_proc *p = ana_vec_push(a->procs);
		if (!p)
			return NULL;
		p->pid = p->p.pid = pid;
		*slot = (uint32_t)a->procs.n;
		a->proc_table.n++;
	}
	a->last_proc = (long)*slot;
	return &a->procs.v[*slot - 1];
}

/* ---- the sweep ---- */

static void busy_span(ana_gpu_acc *a, gs_dev *d, uint64_t s, uint64_t e)
{
	const ana_bins *bins = &a->sum->bins;
	ana_gpu_busy *b = &d->busy;
	b->has = 1;
	b->all_ns = ana_sat_add(b->all_ns, ana_span(s, e));
	if (s < b->first_ns)
		b->first_ns = s;
	if (e > b->last_ns)
		b->last_ns = e;
	uint64_t x = s < bins->t0 ? bins->t0 : s, end = e > bins->t1 ? bins->t1 : e;
	if (end <= x)
		return;
	b->total_ns += end - x; /* a device's busy spans are disjoint */
	while (x < end) {
		size_t bi = ana_bins_index(bins, x);
		uint64_t be = ana_bins_end(bins, bi), ce = be < end ? be : end;
		b->bins[bi] += ce - x;
		x = ce;
	}
}

/* Work [s, e) on a device, in start order: the busy union grows or a span closes (and the idle
 * gap after it, gpu_blame.c); the process's own busy union likewise. */
static int sweep_work(ana_gpu_acc *a, const gs_ev *ev, uint32_t pid, uint32_t device, int k, uint64_t s, uint64_t e)
{
	gs_proc *p = proc_of(a, pid);
	if (!p)
		return GTT_ENOMEM;
	/* the process's union: as procs.c sorted it, ends not clamped */
	if (!p->has) {
		p->has = 1;
		p->s = s;
		p->e = e;
	} else if (s > p->e) {
		p->p.busy_ns += ana_span(p->s, p->e);
		p->s = s;
		p->e = e;
	} else if (e > p->e) {
		p->e = e;
	}
	if (k == 0) {
		p->p.n_kernels++;
		p->p.kernel_ns += ana_span(s, e);
	}
	int di = device_of(a, pid, device, k, ev->seq);
	if (di < 0)
		return GTT_ENOMEM;
	if (e < s)
		e = s;
	int rc = gs_blame_work(a, di, ev, s, e);
	if (rc < 0)
		return rc;
	gs_dev *d = &a->devs.v[di];
	if (d->has && s <= d->ce) {
		if (e > d->ce)
			d->ce = e;
		return 0;
	}
	if (d->has)
		busy_span(a, d, d->cs, d->ce);
	d->has = 1;
	d->cs = s;
	d->ce = e;
	return 0;
}

static int sweep_event(ana_gpu_acc *a, const gs_ev *ev)
{
	ana_gpu_sum *S = a->sum;
	int rc = gs_blame_advance(a, ev->t);
	if (rc < 0)
		return rc;
	switch (ev->type) {
	case GS_API: {
		const gtt_cuda_api *x = &ev->u.a;
		const gs_name *n = name_of(a, 1, x->pid, x->name_id, x->domain, ev->seq);
		if (!n)
			return GTT_ENOMEM;
		row_count(&a->arows.v[n->row], ana_span(x->start_ns, x->end_ns), x->status != 0, ev->seq);
		if ((rc = gs_launch_api(a, x)) < 0)
			return rc;
		return gs_blame_api(a, ev, n->name, n->state);
	}
	case GS_KERNEL: {
		const gtt_cuda_kernel *x = &ev->u.k;
		uint64_t d = ana_span(x->start_ns, x->end_ns);
		S->kernel_ns = ana_sat_add(S->kernel_ns, d);
		const gs_name *n = name_of(a, 0, x->pid, x->name_id, 0, ev->seq);
		if (!n)
			return GTT_ENOMEM;
		row_count(&a->krows.v[n->row], d, 0, ev->seq);
		if ((rc = gs_launch_work(a, ANA_WORK_KERNEL, x->pid, x->correlation, x->name_id, x->start_ns,
		                              x->end_ns)) < 0)
			return rc;
		return sweep_work(a, ev, x->pid, x->device, 0, x->start_ns, x->end_ns);
	}
	case GS_COPY: {
		const gtt_cuda_memcpy *x = &ev->u.c;
		uint32_t k = x->kind < 6 ? x->kind : 0;
		S->copy_count[k]++;
		S->copy_bytes[k] = ana_sat_add(S->copy_bytes[k], x->bytes);
		S->copy_ns[k] = ana_sat_add(S->copy_ns[k], ana_span(x->start_ns, x->end_ns));
		S->copy_async[k] += x->flags & 1;
		if ((rc = gs_launch_work(a, ANA_WORK_COPY, x->pid, x->correlation, x->kind <= 5 ? x->kind : 0,
		                              x->start_ns, x->end_ns)) < 0)
			return rc;
		return sweep_work(a, ev, x->pid, x->device, 1, x->start_ns, x->end_ns);
	}
	case GS_MEMSET: {
		const gtt_cuda_memset *x = &ev->u.s;
		S->memset_bytes = ana_sat_add(S->memset_bytes, x->bytes);
		S->memset_ns = ana_sat_add(S->memset_ns, ana_span(x->start_ns, x->end_ns));
		if ((rc = gs_launch_work(a, ANA_WORK_MEMSET, x->pid, x->correlation, 0, x->start_ns,
		                              x->end_ns)) < 0)
			return rc;
		return sweep_work(a, ev, x->pid, x->device, 2, x->start_ns, x->end_ns);
	}
	default: {
		const gtt_cuda_sync *x = &ev->u.y;
		uint32_t k = x->kind < 5 ? x->kind : 0;
		uint64_t d = ana_span(x->start_ns, x->end_ns);
		S->sync_count[k]++;
		S->sync_ns[k] = ana_sat_add(S->sync_ns[k], d);
		if (d > S->sync_max[k])
			S->sync_max[k] = d;
		return gs_launch_work(a, ANA_WORK_SYNC, x->pid, x->correlation, 0, x->start_ns, x->end_ns);
	}
	}
}

/* The next sample to sweep (the caller's fed ones, else the model's array), NULL when none;
 * *leaf its leaf frame. */
static const ana_sample *next_sample(const ana_gpu_acc *a, uint32_t *leaf)
{
	if (a->fed) {
		if (a->sfifo_head >= a->sfifo.n)
			return NULL;
		*leaf = a->sfifo.v[a->sfifo_head].leaf;
		return &a->sfifo.v[a->sfifo_head].s;
	}
	if (a->next_sample >= a->m->samples.n)
		return NULL;
	*leaf = gs_leaf_frame(a->m, a->m->samples.v[a->next_sample].stack_id);
	return &a->m->samples.v[a->next_sample];
}

/* Samples before t_smp (all of them at UINT64_MAX), in time order. */
static int sweep_samples(ana_gpu_acc *a, uint64_t t_smp)
{
	const ana_sample *s;
	uint32_t leaf;
	int rc;
	while ((s = next_sample(a, &leaf)) != NULL) {
		if (s->time_ns >= t_smp && t_smp != UINT64_MAX)
			break;
		if ((rc = gs_blame_advance(a, s->time_ns)) < 0 || (rc = gs_blame_sample(a, s, leaf)) < 0)
			return rc;
		if (a->fed)
			a->sfifo_head++;
		else
			a->next_sample++;
	}
	if (a->fed && a->sfifo_head > 64 && a->sfifo_head * 2 > a->sfifo.n) {
		memmove(a->sfifo.v, a->sfifo.v + a->sfifo_head, (a->sfifo.n - a->sfifo_head) * sizeof(*a->sfifo.v));
		a->sfifo.n -= a->sfifo_head;
		a->sfifo_head = 0;
	}
	return 0;
}

/* The model's launch stacks up to t (inclusive or not) and samples before t_smp, in time order:
 * at equal times launch stacks come after API calls and before work, samples after both. (Launch
 * stacks and samples feed different figures: only their order against the records matters.) */
static int sweep_memory(ana_gpu_acc *a, uint64_t t, int inclusive, uint64_t t_smp)
{
	const ana_model *m = a->m;
	int rc;
	while (a->next_stack < m->callstacks.n) {
		const ana_callstack *cs = &m->callstacks.v[a->stack_order[a->next_stack]];
		if (cs->time_ns > t || (!inclusive && cs->time_ns == t))
			break;
		if ((rc = gs_launch_stack(a, cs)) < 0)
			return rc;
		a->next_stack++;
	}
	return sweep_samples(a, t_smp);
}

/* How far ahead of the sweep the tables' slots of a call are fetched: the calls' tables span the
 * last 10 s of calls (tens of MiB), so nearly every new call's slot is a cache miss; fetched this
 * many events early, the misses overlap instead of stalling the sweep one by one. */
#define PREFETCH_AHEAD 12

static void prefetch(ana_gpu_acc *a, const gs_ev *e)
{
	uint32_t pid, corr;
	switch (e->type) {
	case GS_API: pid = e->u.a.pid; corr = e->u.a.correlation; break;
	case GS_KERNEL: pid = e->u.k.pid; corr = e->u.k.correlation; break;
	case GS_COPY: pid = e->u.c.pid; corr = e->u.c.correlation; break;
	case GS_MEMSET: pid = e->u.s.pid; corr = e->u.s.correlation; break;
	default: pid = e->u.y.pid; corr = e->u.y.correlation; break;
	}
	uint64_t h = ana_hash_corr(pid, corr);
	if (!a->lpipe) /* (else its thread does the lookups) */
		ana_launch_acc_prefetch(a->launch, h);
	if (e->type == GS_API)
		gs_blame_prefetch(a, h);
}

/* Sweep every queued event before the watermark w whose samples before it are in (s_mark), with
 * what memory holds before them; then the samples that no event still to come precedes. */
static int sweep_until(ana_gpu_acc *a, uint64_t w)
{
	int rc;
	gs_ev ev;
	/* events before w whose samples before them are in (t <= s_mark) */
	uint64_t lim = a->s_mark == UINT64_MAX || a->s_mark >= w ? w : a->s_mark + 1;
	if ((rc = gs_queue_release(&a->q, lim)) < 0)
		return rc;
	while ((rc = gs_queue_next(&a->q, lim, &ev)) != 0) {
		if (rc < 0)
			return rc;
		const gs_ev *ahead = gs_queue_peek(&a->q, PREFETCH_AHEAD);
		if (ahead)
			prefetch(a, ahead);
		if ((rc = sweep_memory(a, ev.t, ev.type > GS_STACK, ev.t)) < 0)
			return rc;
		if (ev.t < a->now)
			a->sum->n_late++;
		else
			a->now = ev.t;
		if ((rc = sweep_event(a, &ev)) < 0)
			return rc;
	}
	if (w == UINT64_MAX && a->s_mark == UINT64_MAX)
		return sweep_memory(a, UINT64_MAX, 1, UINT64_MAX);
	/* every event before w is in: samples before it and before the next queued event are final */
	return sweep_samples(a, gs_queue_min_before(&a->q, w));
}

/* ---- tables only ---- */

typedef struct id_row { uint32_t kind, pid, name_id, domain; ana_gpu_row r; } id_row;
struct ana_gpu_tables {
	ana_idtable table;
	ANA_VEC(id_row) rows;
	uint64_t seq;
	ana_gpu_sum counts;
};

ana_gpu_tables *ana_gpu_tables_new(void)
{
	return calloc(1, sizeof(ana_gpu_tables));
}

void ana_gpu_tables_free(ana_gpu_tables *t)
{
	if (!t)
		return;
	ana_idtable_free(&t->table);
	free(t->rows.v);
	free(t);
}

static int id_row_eq(uint32_t id, const void *key, void *ctx)
{
	const id_row *r = &((const id_row *)ctx)[id];
	const uint32_t *k = key;
	return r->kind == k[0] && r->pid == k[1] && r->name_id == k[2] && r->domain == k[3];
}

int ana_gpu_tables_add(ana_gpu_tables *t, const gtt_record *rec)
{
	ana_gpu_sum *S = &t->counts;
	uint32_t key[4] = { 0, 0, 0, 0 };
	uint64_t d = 0;
	int err = 0;
	switch (rec->tag) {
	case GTT_REC_CUDA_KERNEL:
		S->n_kernels++;
		d = ana_span(rec->u.kernel.start_ns, rec->u.kernel.end_ns);
		S->kernel_ns = ana_sat_add(S->kernel_ns, d);
		key[1] = rec->u.kernel.pid;
		key[2] = rec->u.kernel.name_id;
		break;
	case GTT_REC_CUDA_API:
		S->n_apis++;
		if (rec->u.api.domain == GTT_API_RUNTIME)
			S->n_api_runtime++;
		else
			S->n_api_driver++;
		d = ana_span(rec->u.api.start_ns, rec->u.api.end_ns);
		err = rec->u.api.status != 0;
		key[0] = 1;
		key[1] = rec->u.api.pid;
		key[2] = rec->u.api.name_id;
		key[3] = rec->u.api.domain;
		break;
	case GTT_REC_CUDA_MEMCPY: S->n_copies++; S->n_fed++; return 0;
	case GTT_REC_CUDA_MEMSET: S->n_memsets++; S->n_fed++; return 0;
	case GTT_REC_CUDA_SYNC: S->n_syncs++; S->n_fed++; return 0;
	default: return 0;
	}
	S->n_fed++;
	uint64_t seq = t->seq++;
	uint32_t *slot = ana_idtable_slot(&t->table, ana_hash_words(key, 4, 0x7ab1), id_row_eq, key, t->rows.v);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		id_row *r = ana_vec_push(t->rows);
		if (!r)
			return GTT_ENOMEM;
		*r = (id_row){ key[0], key[1], key[2], key[3], { .domain = key[3], .first_seq = seq } };
		*slot = (uint32_t)t->rows.n;
		t->table.n++;
	}
	row_count(&t->rows.v[*slot - 1].r, d, err, seq);
	return 0;
}

int ana_gpu_tables_finish(ana_gpu_tables *t, const ana_model *m, ana_gpu_sum **out)
{
	ana_gpu_sum *S = calloc(1, sizeof(*S));
	ana_idtable kt = { 0 }, at = { 0 };
	ANA_VEC(ana_gpu_row) krows = { 0 }, arows = { 0 };
	int rc = S ? 0 : GTT_ENOMEM;
	*out = NULL;
	/* (pid, name id) rows merged by name text, as the kept records' tables group them */
	for (size_t i = 0; rc == 0 && i < t->rows.n; i++) {
		const id_row *ir = &t->rows.v[i];
		const char *name = ana_string_get(m, ir->pid, ir->name_id);
		uint32_t row;
		if ((rc = ir->kind ? row_of(&at, &arows, name, ir->domain, ir->r.first_seq, &row)
		                   : row_of(&kt, &krows, name, 0, ir->r.first_seq, &row)) < 0)
			break;
		ana_gpu_row *r = ir->kind ? &arows.v[row] : &krows.v[row];
		r->count += ir->r.count;
		r->total_ns = ana_sat_add(r->total_ns, ir->r.total_ns);
		if (ir->r.max_ns > r->max_ns)
			r->max_ns = ir->r.max_ns;
		r->n_err += ir->r.n_err;
		if (ir->r.first_seq < r->first_seq)
			r->first_seq = ir->r.first_seq;
	}
	if (rc == 0) {
		*S = t->counts;
		if (krows.n)
			qsort_r(krows.v, krows.n, sizeof(ana_gpu_row), cmp_row_kernel, (void *)m);
		if (arows.n)
			qsort(arows.v, arows.n, sizeof(ana_gpu_row), cmp_row_api);
		S->kernels = krows.v;
		S->n_kernel_rows = krows.n;
		S->apis = arows.v;
		S->n_api_rows = arows.n;
		krows.v = arows.v = NULL;
		*out = S;
		S = NULL;
	}
	free(S);
	free(krows.v);
	free(arows.v);
	ana_idtable_free(&kt);
	ana_idtable_free(&at);
	ana_gpu_tables_free(t);
	return rc;
}

/* ---- the accumulator ---- */

static int cmp_stack_time(const void *x, const void *y, void *ctx)
{
	const ana_model *m = ctx;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int c = cmp_u64(m->callstacks.v[i].time_ns, m->callstacks.v[j].time_ns);
	return c ? c : cmp_u64(i, j);
}

static uint64_t bucket_ns_for(uint64_t span_ns)
{
	static const uint64_t steps_ms[] = { 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 300000, 600000 };
	for (size_t i = 0; i < sizeof(steps_ms) / sizeof(steps_ms[0]); i++)
		if (span_ns / (steps_ms[i] * GT_NS_PER_MS) < ANA_GPU_BUSY_MAX_BUCKETS)
			return steps_ms[i] * GT_NS_PER_MS;
	return 600000 * GT_NS_PER_MS; /* longer recordings: ana_bins widens the buckets */
}

ana_gpu_acc *ana_gpu_acc_new(const ana_model *m, uint64_t horizon_ns)
{
	ana_gpu_acc *a = calloc(1, sizeof(*a));
	if (!a || !(a->sum = calloc(1, sizeof(*a->sum))) || !(a->launch = ana_launch_acc_new()))
		goto fail;
	if (gs_queue_init(&a->q, horizon_ns) < 0)
		goto fail;
	a->m = m;
	a->horizon_ns = horizon_ns;
	a->s_mark = UINT64_MAX; /* the model's samples: all in */
	a->sum->horizon_ns = horizon_ns;
	ana_bins_init(&a->sum->bins, m->start_ns, m->end_ns, bucket_ns_for(ana_span(m->start_ns, m->end_ns)),
	              ANA_GPU_BUSY_MAX_BUCKETS);
	size_t n = m->cuda_devices.n, ns = m->callstacks.n;
	if (!(a->info = malloc((n ? n : 1) * sizeof(*a->info))) ||
	    !(a->stack_order = malloc((ns ? ns : 1) * sizeof(*a->stack_order))))
		goto fail;
	for (size_t i = 0; i < n; i++)
		a->info[i] = i;
	qsort_r(a->info, n, sizeof(*a->info), cmp_info, (void *)m);
	for (size_t i = 0; i < ns; i++)
		a->stack_order[i] = i;
	qsort_r(a->stack_order, ns, sizeof(*a->stack_order), cmp_stack_time, (void *)m);
	/* host threads: every recorded one (in (pid, tid) order), then any seen only in API calls */
	for (size_t i = 0; i < m->threads.n; i++)
		if (gs_thread_of(a, m->threads.v[i].pid, m->threads.v[i].tid, m->threads.v[i].name ? m->threads.v[i].name : "?") < 0)
			goto fail;
	return a;
fail:
	ana_gpu_acc_free(a);
	return NULL;
}

int gs_ev_of(const gtt_record *rec, gs_ev *ev)
{
	switch (rec->tag) {
	case GTT_REC_CUDA_KERNEL: ev->type = GS_KERNEL; ev->t = rec->u.kernel.start_ns; ev->u.k = rec->u.kernel; return 1;
	case GTT_REC_CUDA_MEMCPY: ev->type = GS_COPY; ev->t = rec->u.memcpy.start_ns; ev->u.c = rec->u.memcpy; return 1;
	case GTT_REC_CUDA_MEMSET: ev->type = GS_MEMSET; ev->t = rec->u.memset.start_ns; ev->u.s = rec->u.memset; return 1;
	case GTT_REC_CUDA_SYNC: ev->type = GS_SYNC; ev->t = rec->u.sync.start_ns; ev->u.y = rec->u.sync; return 1;
	case GTT_REC_CUDA_API: ev->type = GS_API; ev->t = rec->u.api.start_ns; ev->u.a = rec->u.api; return 1;
	default: return 0;
	}
}

int gs_add(ana_gpu_acc *a, gs_ev *ev)
{
	switch (ev->type) {
	case GS_KERNEL: a->sum->n_kernels++; break;
	case GS_COPY: a->sum->n_copies++; break;
	case GS_MEMSET: a->sum->n_memsets++; break;
	case GS_SYNC: a->sum->n_syncs++; break;
	default:
		a->sum->n_apis++;
		if (ev->u.a.domain == GTT_API_RUNTIME)
			a->sum->n_api_runtime++;
		else
			a->sum->n_api_driver++;
		break;
	}
	ev->seq = a->seq++;
	a->sum->n_fed++;
	int rc = gs_queue_push(&a->q, ev, &a->sum->peak_queued);
	if (rc < 0)
		return rc;
	if (ev->t > a->max_t)
		a->max_t = ev->t;
	if (a->horizon_ns != UINT64_MAX && a->max_t > a->horizon_ns && (a->sum->n_fed & 63) == 0)
		return sweep_until(a, a->max_t - a->horizon_ns);
	return 0;
}

int gs_sample(ana_gpu_acc *a, const ana_sample *s, uint32_t leaf)
{
	gs_smp *e = ana_vec_push(a->sfifo);
	if (!e)
		return GTT_ENOMEM;
	e->s = *s;
	e->leaf = leaf;
	if (a->sfifo.n - a->sfifo_head > a->sum->peak_samples)
		a->sum->peak_samples = a->sfifo.n - a->sfifo_head;
	return 0;
}

int gs_advance(ana_gpu_acc *a, uint64_t w_records, uint64_t w_samples)
{
	a->s_mark = w_samples;
	return sweep_until(a, w_records);
}

/* Final device numbers: by first kernel, then (devices without kernels) first copy, then
 * first memset, as the records' arrays were walked. */
static int cmp_dev_first(const void *x, const void *y, void *ctx)
{
	const gs_dev *d = ctx;
	const gs_dev *a = &d[*(const int *)x], *b = &d[*(const int *)y];
	for (int k = 0; k < 3; k++)
		if (a->first[k] != b->first[k])
			return a->first[k] < b->first[k] ? -1 : 1;
	return 0;
}

static int finish_devices(ana_gpu_acc *a, int **map_out)
{
	ana_gpu_sum *S = a->sum;
	size_t nd = a->devs.n, np = a->pairs.n;
	int *order = malloc((nd ? nd : 1) * sizeof(int)), *map = malloc((nd ? nd : 1) * sizeof(int));
	size_t *porder = malloc((np ? np : 1) * sizeof(size_t));
	if (!order || !map || !porder)
		goto fail;
	for (size_t i = 0; i < nd; i++)
		order[i] = (int)i;
	qsort_r(order, nd, sizeof(int), cmp_dev_first, a->devs.v);
	for (size_t i = 0; i < nd; i++)
		map[order[i]] = (int)i;
	S->n_phys = (int)nd;
	if (!(S->busy = calloc(nd ? nd : 1, sizeof(*S->busy))) || !(S->devs = calloc(np ? np : 1, sizeof(*S->devs))))
		goto fail;
	for (size_t i = 0; i < nd; i++) {
		gs_dev *d = &a->devs.v[i];
		if (d->has)
			busy_span(a, d, d->cs, d->ce);
		S->busy[map[i]] = d->busy;
		d->busy.bins = NULL;
	}
	/* pairs in the order they were given indices: by their first kernel, copy, memset */
	for (size_t i = 0; i < np; i++)
		porder[i] = i;
	for (size_t i = 1; i < np; i++) { /* insertion sort: a trace names few pairs */
		size_t v = porder[i], j = i;
		while (j > 0) {
			const gs_pair *p = &a->pairs.v[porder[j - 1]], *q = &a->pairs.v[v];
			int c = 0;
			for (int k = 0; k < 3 && !c; k++)
				c = cmp_u64(p->first[k], q->first[k]);
			if (c <= 0)
				break;
			porder[j] = porder[j - 1];
			j--;
		}
		porder[j] = v;
	}
	for (size_t i = 0; i < np; i++) {
		const gs_pair *p = &a->pairs.v[porder[i]];
		S->devs[i] = (ana_gpu_dev){ p->pid, p->device, p->uuid, p->name, map[p->phys] };
	}
	S->n_devs = np;
	free(order);
	free(porder);
	*map_out = map;
	return 0;
fail:
	free(order);
	free(map);
	free(porder);
	return GTT_ENOMEM;
}

static int cmp_proc(const void *x, const void *y)
{
	return cmp_u64(((const ana_gpu_proc *)x)->pid, ((const ana_gpu_proc *)y)->pid);
}

int ana_gpu_acc_finish(ana_gpu_acc *a, ana_gpu_sum **out)
{
	ana_gpu_sum *S = a->sum;
	int *map = NULL, rc;
	*out = NULL;
	if ((rc = gs_pipe_end(a)) < 0)
		goto out;
	a->s_mark = UINT64_MAX;
	if ((rc = sweep_until(a, UINT64_MAX)) < 0 || (rc = finish_devices(a, &map)) < 0 ||
	    (rc = gs_blame_finish(a, map)) < 0)
		goto out;
	rc = GTT_ENOMEM;
	if (!(S->procs = calloc(a->procs.n ? a->procs.n : 1, sizeof(*S->procs))))
		goto out;
	for (size_t i = 0; i < a->procs.n; i++) {
		gs_proc *p = &a->procs.v[i];
		p->p.busy_ns += ana_span(p->s, p->e);
		S->procs[i] = p->p;
	}
	S->n_procs = a->procs.n;
	qsort(S->procs, S->n_procs, sizeof(*S->procs), cmp_proc);
	if (a->krows.n) /* (no rows: no array, and qsort wants one) */
		qsort_r(a->krows.v, a->krows.n, sizeof(ana_gpu_row), cmp_row_kernel, (void *)a->m);
	if (a->arows.n)
		qsort(a->arows.v, a->arows.n, sizeof(ana_gpu_row), cmp_row_api);
	S->kernels = a->krows.v;
	S->n_kernel_rows = a->krows.n;
	S->apis = a->arows.v;
	S->n_api_rows = a->arows.n;
	a->krows.v = a->arows.v = NULL;
	rc = ana_launch_acc_finish(a->launch, &S->launches);
	a->launch = NULL;
	if (rc < 0)
		goto out;
	*out = S;
	a->sum = NULL;
out:
	free(map);
	ana_gpu_acc_free(a);
	return rc;
}

void ana_gpu_acc_free(ana_gpu_acc *a)
{
	if (!a)
		return;
	gs_pipe_stop(a);
	gs_blame_free(a);
	for (size_t i = 0; i < a->devs.n; i++) {
		free(a->devs.v[i].busy.bins);
	}
	free(a->devs.v);
	gs_queue_free(&a->q);
	free(a->stack_order);
	free(a->sfifo.v);
	free(a->info);
	free(a->krows.v);
	free(a->arows.v);
	free(a->pairs.v);
	free(a->procs.v);
	ana_idtable_free(&a->krow_table);
	ana_idtable_free(&a->arow_table);
	ana_idtable_free(&a->name_table);
	free(a->names.v);
	ana_idtable_free(&a->pair_table);
	ana_idtable_free(&a->uuid_table);
	ana_idtable_free(&a->proc_table);
	ana_launch_acc_free(a->launch);
	ana_gpu_sum_free(a->sum);
	free(a);
}

void ana_gpu_sum_free(ana_gpu_sum *s)
{
	if (!s)
		return;
	free(s->kernels);
	free(s->apis);
	free(s->devs);
	for (int i = 0; s->busy && i < s->n_phys; i++) {
		free(s->busy[i].bins);
		free(s->busy[i].blame);
	}
	free(s->busy);
	free(s->threads);
	free(s->procs);
	for (size_t i = 0; i < s->n_top_gaps; i++)
		ana_gpu_gap_free(&s->gaps[i]);
	ana_launches_free(&s->launches);
	free(s);
}
