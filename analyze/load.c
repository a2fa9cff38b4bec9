/* load.c — ana_model_load(): read a trace into the model in two passes (everything but
 * samples first, so that every mapping and archived binary is known; then samples, which are
 * symbolized and unwound on the fly), then derive per-thread figures. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dwfl.h"
#include "gpu_sum.h"
#include "gt_util.h"
#include "load_priv.h"
#include "model.h"
#include "model_priv.h"
#include "captured.h"
#include "swcover.h"
#include "python.h"
#include "sample_sum.h"
#include "source.h"
#include "window.h"
#include "bounds.h"

static char *dupstr(const char *s)
{
	return strdup(s ? s : "");
}

/* A record's string field kept in the model's interned strings ("" for NULL). */
static const char *keep(ana_model *m, const char *s)
{
	return ana_intern_str(m, s ? s : "");
}

void ana_load_see_time(ana_model *m, uint64_t t)
{
	/* in a window, definitions outside it (a thread started before it) do not stretch it */
	if (!t || (m->window.on && (t < m->window.from_ns || t >= m->window.to_ns)))
		return;
	if (!m->start_ns || t < m->start_ns)
		m->start_ns = t;
	if (t > m->end_ns)
		m->end_ns = t;
}

void ana_load_progress(loader *L, const char *phase, uint64_t done, uint64_t total)
{
	if (!L->o->progress)
		return;
	uint64_t now = gtt_now_ns();
	/* only for work that takes more than a couple of seconds, and at most 4 times a second */
	if (now - L->t0_ns < 2000000000ull || now - L->last_progress_ns < 250000000ull)
		return;
	L->last_progress_ns = now;
	L->progress_shown = 1;
	fprintf(stderr, "\rgt-analyze: %s %3d%%", phase, total ? (int)(done * 100 / total) : 0);
	fflush(stderr);
}

static int add_archive_piece(loader *L, const gtt_archive *a)
{
	if (a->kind != GTT_ARCHIVE_ELF)
		return 0;
	pending_archive *p = NULL;
	for (size_t i = 0; i < L->archives.n; i++) {
		pending_archive *q = &L->archives.v[i];
		if (q->build_id_len == a->build_id_len && memcmp(q->build_id, a->build_id, a->build_id_len) == 0 &&
		    (a->build_id_len || strcmp(q->path, a->path ? a->path : "") == 0)) {
			p = q;
			break;
		}
	}
	if (!p) {
		p = ana_vec_push(L->archives);
		if (!p)
			return GTT_ENOMEM;
		p->build_id_len = a->build_id_len;
		memcpy(p->build_id, a->build_id, a->build_id_len);
		p->path = dupstr(a->path);
		p->total = a->total_bytes;
		/* sizes are checked against the file: a corrupt total never becomes an allocation */
		if (!p->path || a->total_bytes > gtt_reader_size(L->r) * 64 + (1u << 20))
			p->bad = 1;
		else
			p->data = calloc(1, a->total_bytes ? a->total_bytes : 1);
		if (!p->data)
			p->bad = 1;
	}
	if (p->bad || a->offset > p->total || a->len > p->total - a->offset || a->total_bytes != p->total) {
		p->bad = 1;
		return 0;
	}
	memcpy(p->data + a->offset, a->data, a->len);
	p->got += a->len;
	L->m->n_archive_bytes += a->len;
	return 0;
}

static int chain_eq(uint32_t id, const void *key, void *ctx)
{
	const loader *L = ctx;
	const chain *c = &L->chains.v[id];
	const gtt_sample *s = key;
	if (c->pid != s->pid || c->n_kernel != s->n_kernel || c->n_user != s->n_user)
		return 0;
	size_t nw = (size_t)s->n_kernel + s->n_user;
	if (!nw)
		return 1; /* (no addresses stored yet: chain_ips.v may be NULL) */
	/* short arrays: a loop beats a call to memcmp */
	const uint64_t *a = L->chain_ips.v + c->off;
	for (size_t i = 0; i < nw; i++)
		if (a[i] != s->ips[i])
			return 0;
	return 1;
}

static uint64_t chain_hash(const gtt_sample *s, size_t nw)
{
	/* two independent multiply lanes (odd factors: each step is a bijection), mixed at the
	 * end: half the latency of one chain of steps */
	uint64_t h1 = (uint64_t)s->pid << 32 | s->n_kernel, h2 = (uint64_t)s->n_user;
	size_t i = 0;
	for (; i + 1 < nw; i += 2) {
		h1 = (h1 ^ s->ips[i]) * 0x9e3779b97f4a7c15ull;
		h2 = (h2 ^ s->ips[i + 1]) * 0xc2b2ae3d27d4eb4full;
	}
	if (i < nw)
		h1 = (h1 ^ s->ips[i]) * 0x9e3779b97f4a7c15ull;
	return ana_hash_u64(h1 ^ ana_hash_u64(h2));
}

static int thread_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_thread *t = &((const ana_model *)ctx)->threads.v[id];
	const uint32_t *k = key;
	return t->pid == k[0] && t->tid == k[1];
}

/* The model's thread (pid, tid), made when new. Threads are appended in the order they are
 * first seen and found through a hash table while the trace is read (a trace can name 100 000
 * threads: keeping the array sorted on every insert cost threads^2); sort_threads() puts them
 * in (pid, tid) order before anything else looks them up. NULL on ENOMEM. */
static ana_thread *loader_thread(loader *L, uint32_t pid, uint32_t tid)
{
	ana_model *m = L->m;
	uint32_t key[2] = { pid, tid };
	uint32_t *slot = ana_idtable_slot(&L->thread_table, ana_hash_u64((uint64_t)pid << 32 | tid), thread_eq, key, m);
	if (!slot)
		return NULL;
	if (*slot)
		return &m->threads.v[*slot - 1];
	ana_thread *th = ana_vec_push(m->threads);
	if (!th)
		return NULL;
	th->pid = pid;
	th->tid = tid;
	*slot = (uint32_t)m->threads.n;
	L->thread_table.n++;
	return th;
}

static int thread_cmp(const void *a, const void *b)
{
	const ana_thread *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Threads in (pid, tid) order, as ana_thread_find() wants them; the loader's table is dropped. */
static void sort_threads(loader *L)
{
	if (L->m->threads.n > 1)
		qsort(L->m->threads.v, L->m->threads.n, sizeof(ana_thread), thread_cmp);
	ana_idtable_free(&L->thread_table);
}

int ana_load_intern_chain(loader *L, const gtt_sample *s, uint32_t *chain_id)
{
	size_t nw = (size_t)s->n_kernel + s->n_user;
	if ((s->flags & GTT_SAMPLE_REGS) || L->chain_ips.n + nw > MAX_CHAIN_WORDS)
		return 0;
	/* symbolization reads only pid, time and the callchain of such a sample */
	uint32_t *slot = ana_idtable_slot(&L->chain_table, chain_hash(s, nw), chain_eq, s, L);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		chain *c = ana_vec_push(L->chains);
		if (!c)
			return GTT_ENOMEM;
		c->pid = s->pid;
		c->n_kernel = s->n_kernel;
		c->n_user = s->n_user;
		c->off = L->chain_ips.n;
		if (GT_GROW(L->chain_ips.v, L->chain_ips.cap, L->chain_ips.n + nw) < 0)
			return GTT_ENOMEM;
		if (nw)
			memcpy(L->chain_ips.v + L->chain_ips.n, s->ips, nw * sizeof(uint64_t));
		L->chain_ips.n += nw;
		*slot = (uint32_t)L->chains.n;
		L->chain_table.n++;
	}
	*chain_id = *slot - 1;
	return 1;
}

/* A sample of pass 1: its figures go to the model now; its stack is made in pass 2, from its
 * interned callchain (stack_id holds the chain's id meanwhile) or from its payload decoded
 * again (stack_id ANA_NO_ID, the payload in L->raws in file order). 0 or GTT_ENOMEM. */
static int take_sample(loader *L, const gtt_record *rec)
{
	const gtt_sample *s = &rec->u.sample;
	ana_sample *e = ana_vec_push(L->m->samples);
	if (!e)
		return GTT_ENOMEM;
	e->time_ns = s->time_ns;
	e->weight_ns = s->period_ns;
	e->pid = s->pid;
	e->tid = s->tid;
	e->cpu = s->cpu;
	e->stack_id = ANA_NO_ID;
	e->cls = ANA_CLASS_NONPY;
	int rc = ana_load_intern_chain(L, s, &e->stack_id);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	raw_sample *r = ana_vec_push(L->raws);
	if (!r)
		return GTT_ENOMEM;
	gtt_reader_tell(L->r, &r->pos);
	return 0;
}

/* ana_opts.stream_samples: a sample, Python read or GIL record in pass 1 is only counted, and
 * its thread made (pass 2 and 3 read them again). 0 or GTT_ENOMEM. */
static int count_streamed(loader *L, const gtt_record *rec)
{
	ana_thread *th;
	switch (rec->tag) {
	case GTT_REC_SAMPLE: {
		const gtt_sample *s = &rec->u.sample;
		size_t h = TCACHE_SLOT(s->pid, s->tid);
		L->n_samples_seen++;
		/* samples of a few threads interleave: the cache saves a lookup per sample */
		if (L->tc[h].used && L->tc[h].pid == s->pid && L->tc[h].tid == s->tid)
			return 0;
		if (!loader_thread(L, s->pid, s->tid))
			return GTT_ENOMEM;
		L->tc[h].used = 1;
		L->tc[h].pid = s->pid;
		L->tc[h].tid = s->tid;
		return 0;
	}
	case GTT_REC_PY_STACK:
		L->n_pyreads++;
		/* a thread seen in a Python read is a Python thread (as threads.c marks them from the
		 * reads a model keeps) */
		if (!(th = loader_thread(L, rec->u.py_stack.pid, rec->u.py_stack.tid)))
			return GTT_ENOMEM;
		th->is_python = 1;
		return 0;
	default:
		L->n_gil++;
		return 0;
	}
}

/* Store one record of pass 1. 0 or GTT_ENOMEM. */
/* The Python reader's records: code objects and stacks, copied into the model. */
static int take_python(ana_model *m, const gtt_record *rec)
{
	if (rec->tag == GTT_REC_PY_CODE) {
		ana_pycode *e = ana_vec_push(m->pycodes);
		if (!e)
			return GTT_ENOMEM;
		const gtt_py_code *c = &rec->u.py_code;
		e->pid = c->pid;
		e->code_id = c->code_id;
		e->first_line = c->first_line;
		e->name = dupstr(c->name);
		e->qualname = dupstr(c->qualname);
		e->filename = dupstr(c->filename);
		return e->name && e->qualname && e->filename ? 0 : GTT_ENOMEM;
	}
	ana_pystack *e = ana_vec_push(m->pystacks);
	if (!e)
		return GTT_ENOMEM;
	const gtt_py_stack *p = &rec->u.py_stack;
	e->time_ns = p->time_ns;
	e->pid = p->pid;
	e->tid = p->tid;
	e->flags = p->flags;
	e->n_frames = p->n_frames;
	ana_load_see_time(m, p->time_ns);
	/* a thread's Python stack changes little between reads: one copy per distinct stack */
	if (p->n_frames && !(e->frames = ana_pyframes_intern(m, p->frames, p->n_frames)))
		return GTT_ENOMEM;
	return 0;
}

/* Definitions and the recording's own records: metadata, processes, threads, mappings, strings,
 * devices, health, the archive, the end. 0, <0, or 1 when rec is none of these. */
static int take_definition(loader *L, const gtt_record *rec)
{
	ana_model *m = L->m;
	switch (rec->tag) {
	case GTT_REC_META: {
		ana_kv *e = ana_vec_push(m->meta);
		if (!e)
			return GTT_ENOMEM;
		e->key = dupstr(rec->u.meta.key);
		e->value = dupstr(rec->u.meta.value);
		return e->key && e->value ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_PY_THREAD: {
		ana_pythread *e = ana_vec_push(m->pythreads);
		if (!e)
			return GTT_ENOMEM;
		e->time_ns = rec->u.py_thread.time_ns;
		e->pid = rec->u.py_thread.pid;
		e->tid = rec->u.py_thread.tid;
		e->name = dupstr(rec->u.py_thread.name);
		return e->name ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_PROCESS: {
		gtt_process *e = ana_vec_push(m->processes);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.process;
		e->comm = keep(m, rec->u.process.comm);
		ana_load_see_time(m, e->time_ns);
		return e->comm ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_THREAD: {
		const gtt_thread *t = &rec->u.thread;
		ana_load_see_time(m, t->time_ns);
		ana_thread *th = loader_thread(L, t->pid, t->tid);
		if (!th)
			return GTT_ENOMEM;
		if (t->name && t->name[0]) {
			char *n = strdup(t->name);
			if (!n)
				return GTT_ENOMEM;
			free(th->name);
			th->name = n;
		}
		if (t->event == GTT_THREAD_START && (!th->start_ns || t->time_ns < th->start_ns))
			th->start_ns = t->time_ns;
		if (t->event == GTT_THREAD_EXIT)
			th->end_ns = t->time_ns;
		return 0;
	}
	case GTT_REC_MAPPING: {
		ana_mapping *e = ana_vec_push(m->mappings);
		if (!e)
			return GTT_ENOMEM;
		e->m = rec->u.mapping;
		e->m.path = keep(m, rec->u.mapping.path);
		ana_load_see_time(m, e->m.time_ns);
		return e->m.path ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_HEALTH: {
		gtt_health *e = ana_vec_push(m->health);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.health;
		e->text = keep(m, rec->u.health.text);
		return e->text ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_STRING: {
		ana_string *e = ana_vec_push(m->strings);
		if (!e)
			return GTT_ENOMEM;
		e->pid = rec->u.string.pid;
		e->id = rec->u.string.id;
		e->text = dupstr(rec->u.string.text);
		return e->text ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_CUDA_DEVICE: {
		gtt_cuda_device *e = ana_vec_push(m->cuda_devices);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.cuda_device;
		e->name = keep(m, rec->u.cuda_device.name);
		e->uuid = keep(m, rec->u.cuda_device.uuid);
		return e->name && e->uuid ? 0 : GTT_ENOMEM;
	}
	case GTT_REC_ARCHIVE:
		return add_archive_piece(L, &rec->u.archive);
	case GTT_REC_END:
		m->has_end = 1;
		m->end = rec->u.end;
		ana_load_see_time(m, rec->u.end.time_ns);
		return 0;
	default:
		return 1;
	}
}

/* (load_priv.h) */
int ana_load_count_cuda(loader *L, const gtt_record *rec)
{
	if (L->o->stream_cuda != ANA_STREAM_CUDA_TABLES && L->o->stream_cuda != ANA_STREAM_CUDA_LAUNCHES)
		return 0;
	if (!L->gpu_tables && !(L->gpu_tables = ana_gpu_tables_new()))
		return GTT_ENOMEM;
	return ana_gpu_tables_add(L->gpu_tables, rec);
}

/* A CUDA record not kept: ANA_STREAM_CUDA_TABLES (and _LAUNCHES) counts it by name as it is read (the report's
 * mode reads them again later instead, when there are any). 0 or GTT_ENOMEM. */
static int take_streamed(loader *L, const gtt_record *rec)
{
	L->n_streamed++;
	return ana_load_count_cuda(L, rec);
}

/* One record into the model (or into the loader's accumulators). 0 or <0. */
int ana_load_take_record(loader *L, const gtt_record *rec)
{
	ana_model *m = L->m;
	switch (rec->tag) {
	case GTT_REC_SAMPLE:
		ana_load_see_time(m, rec->u.sample.time_ns);
		if (L->stream)
			return count_streamed(L, rec);
		L->n_samples_seen++;
		return take_sample(L, rec);
	case GTT_REC_SWITCH: {
		ana_load_see_time(m, rec->u.sw.time_ns);
		if (L->o->keep_switches) {
			gtt_switch *e = ana_vec_push(m->switches);
			if (!e)
				return GTT_ENOMEM;
			*e = rec->u.sw;
		}
		return ana_oncpu_add(L->oncpu, m, &rec->u.sw);
	}
	case GTT_REC_THREAD_CPU: {
		gtt_thread_cpu *e = ana_vec_push(m->thread_cpu);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.thread_cpu;
		ana_load_see_time(m, e->time_ns);
		return 0;
	}
	case GTT_REC_TICKS: {
		gtt_ticks *e = ana_vec_push(m->ticks);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.ticks;
		return 0;
	}
	case GTT_REC_CAPTURE: {
		gtt_capture *e = ana_vec_push(m->captures);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.capture;
		e->name = NULL;
		ana_load_see_time(m, e->time_ns);
		return 0;
	}
	case GTT_REC_SWITCH_GATE: {
		gtt_switch_gate *e = ana_vec_push(m->gates);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.gate;
		ana_load_see_time(m, e->time_ns);
		return 0;
	}
	case GTT_REC_PY_STACK:
		if (L->stream) {
			ana_load_see_time(m, rec->u.py_stack.time_ns);
			return count_streamed(L, rec);
		}
		return take_python(m, rec);
	case GTT_REC_PY_CODE:
		return take_python(m, rec);
	case GTT_REC_GIL: {
		if (L->stream) {
			ana_load_see_time(m, rec->u.gil.time_ns);
			return count_streamed(L, rec);
		}
		gtt_gil *e = ana_vec_push(m->gil);
		if (!e)
			return GTT_ENOMEM;
		*e = rec->u.gil;
		ana_load_see_time(m, e->time_ns);
		return 0;
	}
#define SIMPLE(TAG, VEC, FIELD, T0, T1)                   \
	case TAG: {                                       \
		if (L->o->stream_cuda && ana_load_streamed(TAG)) { \
			ana_load_see_time(m, rec->u.FIELD.T0);     \
			ana_load_see_time(m, rec->u.FIELD.T1);     \
			return take_streamed(L, rec); \
		}                                         \
		void *e = ana_vec_push(m->VEC);           \
		if (!e)                                   \
			return GTT_ENOMEM;                \
		memcpy(e, &rec->u.FIELD, sizeof(rec->u.FIELD)); \
		ana_load_see_time(m, rec->u.FIELD.T0);             \
		ana_load_see_time(m, rec->u.FIELD.T1);             \
		return 0;                                 \
	}
	SIMPLE(GTT_REC_CUDA_KERNEL, kernels, kernel, start_ns, end_ns)
	SIMPLE(GTT_REC_CUDA_MEMCPY, memcpys, memcpy, start_ns, end_ns)
	SIMPLE(GTT_REC_CUDA_MEMSET, memsets, memset, start_ns, end_ns)
	SIMPLE(GTT_REC_CUDA_SYNC, syncs, sync, start_ns, end_ns)
	SIMPLE(GTT_REC_CUDA_API, apis, api, start_ns, end_ns)
	SIMPLE(GTT_REC_CUDA_ALLOC, allocs, alloc, time_ns, time_ns)
	SIMPLE(GTT_REC_NVTX, nvtx, nvtx, start_ns, end_ns)
	SIMPLE(GTT_REC_COUNTER, counters, counter, time_ns, time_ns)
#undef SIMPLE
	case GTT_REC_CUDA_CALLSTACK:
		ana_load_see_time(m, rec->u.callstack.time_ns);
		if (!L->launch && !(L->launch = ana_launch_loader_new()))
			return GTT_ENOMEM;
		return ana_launch_loader_add(L->launch, &rec->u.callstack);
	default: {
		int rc = take_definition(L, rec);
		return rc > 0 ? 0 : rc; /* a newer record kind: skipped, as the format promises */
	}
	}
}

/* ---- derived figures ---- */

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

static int sample_cmp(const void *a, const void *b)
{
	const ana_sample *x = a, *y = b;
	int c = cmp_u64(x->time_ns, y->time_ns);
	if (c)
		return c;
	/* equal times keep the file's order (the sort is stable) */
	return 0;
}

static int pystack_cmp(const void *a, const void *b)
{
	const ana_pystack *x = a, *y = b;
	int c = cmp_u64(x->time_ns, y->time_ns);
	return c ? c : (x->tid < y->tid ? -1 : x->tid > y->tid);
}

static int gil_cmp(const void *a, const void *b)
{
	const gtt_gil *x = a, *y = b;
	int c = cmp_u64(x->time_ns, y->time_ns);
	return c ? c : (x->pid < y->pid ? -1 : x->pid > y->pid);
}

static int string_cmp(const void *a, const void *b)
{
	const ana_string *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Stable merge sort of n elements of sz bytes through tmp (n * sz bytes). */
static void merge_sort(char *v, char *tmp, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n < 2)
		return;
	size_t h = n / 2;
	merge_sort(v, tmp, h, sz, cmp);
	merge_sort(v + h * sz, tmp, n - h, sz, cmp);
	if (cmp(v + (h - 1) * sz, v + h * sz) <= 0)
		return;
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n) {
		if (cmp(v + j * sz, v + i * sz) < 0)
			memcpy(tmp + k++ * sz, v + j++ * sz, sz);
		else
			memcpy(tmp + k++ * sz, v + i++ * sz, sz);
	}
	while (i < h)
		memcpy(tmp + k++ * sz, v + i++ * sz, sz);
	while (j < n)
		memcpy(tmp + k++ * sz, v + j++ * sz, sz);
	memcpy(v, tmp, n * sz);
}

int ana_sort_stable(void *v, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	for (size_t i = 1; i < n; i++) {
		if (cmp((char *)v + (i - 1) * sz, (char *)v + i * sz) > 0) {
			char *tmp = malloc(n * sz);
			if (!tmp)
				return GTT_ENOMEM;
			merge_sort(v, tmp, n, sz, cmp);
			free(tmp);
			return 0;
		}
	}
	return 0;
}

static int ensure_thread(loader *L, uint32_t pid, uint32_t tid)
{
	return loader_thread(L, pid, tid) ? 0 : GTT_ENOMEM;
}

static int ensure_thread_cb(void *ctx, uint32_t pid, uint32_t tid)
{
	return ensure_thread(ctx, pid, tid);
}

/* Every thread that samples, /proc readings, switches and Python stacks name exists (before
 * pass 2, which gives each sample its thread's index: those do not move afterwards). */
static int ensure_threads(loader *L)
{
	ana_model *m = L->m;
	/* samples of a few threads interleave: a small direct-mapped cache of the (pid, tid) seen
	 * saves a search per sample */
	struct { uint32_t pid, tid, used; } tc[TCACHE];
	memset(tc, 0, sizeof(tc));
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		size_t h = TCACHE_SLOT(s->pid, s->tid);
		if (tc[h].used && tc[h].pid == s->pid && tc[h].tid == s->tid)
			continue;
		if (ensure_thread(L, s->pid, s->tid) < 0)
			return GTT_ENOMEM;
		tc[h].used = 1;
		tc[h].pid = s->pid;
		tc[h].tid = s->tid;
	}
	for (size_t i = 0; i < m->thread_cpu.n; i++)
		if (ensure_thread(L, m->thread_cpu.v[i].pid, m->thread_cpu.v[i].tid) < 0)
			return GTT_ENOMEM;
	if (ana_oncpu_each_thread(L->oncpu, ensure_thread_cb, L) < 0)
		return GTT_ENOMEM;
	for (size_t i = 0; i < m->pystacks.n; i++)
		if (ensure_thread(L, m->pystacks.v[i].pid, m->pystacks.v[i].tid) < 0)
			return GTT_ENOMEM;
	return 0;
}

static void add_warnings(loader *L)
{
	ana_model *m = L->m;
	uint64_t n_samples = ana_model_n_samples(m);
	if (m->truncated)
		ana_warn(m, "%s: trace is cut off at byte %" PRIu64 " (recording interrupted?); analyzed up to the last whole record",
		         m->path, L->cut_off);
	else if (!m->has_end)
		/* whole chunks and no END: the recorder stopped between two writes (killed, machine
		 * down); what is there is complete, but the recording did not finish */
		ana_warn(m, "%s: no END record (recording interrupted?); analyzed the %" PRIu64 " samples written",
		         m->path, n_samples);
	if (m->n_corrupt)
		ana_warn(m, "%s: skipped %" PRIu64 " corrupt chunk(s)", m->path, m->n_corrupt);
	/* a window holds some of the samples the END record counts */
	if (m->has_end && !m->window.on && m->end.n_samples != n_samples) {
		/* the recorder counts the samples it wrote: a different number read means chunks were
		 * lost or skipped, or written twice (a copy appended, a sample chunk duplicated) */
		m->end_mismatch = 1;
		ana_warn(m, "%s: the recorder wrote %" PRIu64 " samples (END record) but %" PRIu64 " are in the trace%s",
		         m->path, m->end.n_samples, n_samples,
		         n_samples > m->end.n_samples ? ": chunks duplicated or another recording appended; every "
		                                           "sample read is counted, so the numbers may be inflated"
		                                         : ": the analysis is partial");
	}
	for (size_t i = 0; i < L->archives.n; i++) {
		const pending_archive *p = &L->archives.v[i];
		if (p->bad || p->got < p->total)
			ana_warn(m, "%s: embedded copy of %s is incomplete (%" PRIu64 " of %" PRIu64 " bytes); not used",
			         m->path, p->path, p->got, p->total);
	}
	if (L->sym) {
		ana_priv *p = ana_priv_get(m);
		ana_sym_get_stats(L->sym, &p->sym_stats);
		const char *const *lines;
		size_t n = ana_sym_missing(L->sym, &lines);
		/* one warning line for all of them (a big process can miss many); the report lists each */
		char names[400] = "";
		for (size_t i = 0; i < n; i++) {
			char *copy = strdup(lines[i]);
			char **e = copy ? ana_vec_push(p->missing) : NULL;
			if (!e)
				free(copy);
			else
				*e = copy;
			const char *path = lines[i] + strlen("no symbols for ");
			const char *end = strstr(path, " (build-id");
			const char *base = memrchr(path, '/', end ? (size_t)(end - path) : strlen(path));
			base = base ? base + 1 : path;
			size_t used = strlen(names);
			if (i < 4)
				snprintf(names + used, sizeof(names) - used, "%s%.*s", i ? ", " : "",
				         (int)(end ? (size_t)(end - base) : strlen(base)), base);
			else if (i == 4)
				snprintf(names + used, sizeof(names) - used, ", ...");
		}
		if (p->sym_stats.n_overlaps)
			ana_warn(m, "%" PRIu64 " mapping(s) lay over earlier ones of another file in the same process "
			         "(dlclose + dlopen?); addresses there are named after the earlier file",
			         p->sym_stats.n_overlaps);
		if (n)
			ana_warn(m, "no symbols for %zu binar%s (%s): not in the trace's archive, --symfs or on disk "
			         "with a matching build-id; their frames show as [binary+0xOFFSET]",
			         n, n == 1 ? "y" : "ies", names);
	}
}

static void loader_cleanup(loader *L)
{
	for (size_t i = 0; i < L->archives.n; i++) {
		free(L->archives.v[i].path);
		free(L->archives.v[i].data);
	}
	free(L->archives.v);
	free(L->chains.v);
	free(L->chain_ips.v);
	ana_idtable_free(&L->chain_table);
	ana_idtable_free(&L->thread_table);
	free(L->raws.v);
	free(L->sstack.v);
	free(L->deferred.v);
	free(L->gil_carry.v);
	free(L->cpu_carry.v);
	ana_idtable_free(&L->trunc_table);
	ana_launch_loader_free(L->launch);
	ana_gpu_tables_free(L->gpu_tables);
	ana_sym_destroy(L->sym);
	ana_oncpu_free(L->oncpu);
	gtt_reader_close(L->r);
	if (L->progress_shown)
		fprintf(stderr, "\r%40s\r", "");
}

static void describe_open_error(const char *path, int err, int errno_, char *errbuf, size_t errlen)
{
	switch (err) {
	case GTT_EEMPTY:
		snprintf(errbuf, errlen, "%s: empty file, not a trace", path);
		break;
	case GTT_EFORMAT:
		snprintf(errbuf, errlen, "%s: not a groundtruth trace (no .gtt header)", path);
		break;
	case GTT_EVERSION:
		snprintf(errbuf, errlen, "%s: written by a newer trace format than this gt-analyze reads (%d.x)", path,
		         GTT_VERSION_MAJOR);
		break;
	case GTT_EIO:
		snprintf(errbuf, errlen, "%s: %s", path, errno_ ? strerror(errno_) : "cannot read");
		break;
	default:
		snprintf(errbuf, errlen, "%s: %s", path, gtt_strerror(err));
	}
}

/* The model that keeps its records: Python merged into its samples, classes counted, and for the
 * report its CUDA records read into their aggregates. 0 or <0 with words in errbuf. */
static int finish_arrays(loader *L, char *errbuf, size_t errlen)
{
	ana_model *m = L->m;
	const ana_opts *opts = L->o;
	/* analyze/python.c splices Python frames into the native stacks and sets each sample's
	 * class (samples of threads never seen in a Python read stay ANA_CLASS_NONPY) */
	if (!opts->no_python_merge && m->pystacks.n && ana_python_merge(m, opts) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory while merging Python stacks", m->path);
		return GTT_ENOMEM;
	}
	ana_python_unread_warn(m); /* a Python-looking process with samples and no Python reads */
	for (size_t i = 0; i < m->samples.n; i++)
		ana_count_class(m, &m->samples.v[i]);
	/* the CUDA records: for the report, read again now that samples are classified and the
	 * bounds known; for the tables, their counts by name (names looked up now) */
	if (opts->stream_cuda) {
		m->cuda_streamed = 1;
		ana_gpu_tables *t = L->gpu_tables;
		int rc = 0;
		L->gpu_tables = NULL;
		if (opts->stream_cuda != ANA_STREAM_CUDA_REPORT && !t && !(t = ana_gpu_tables_new()))
			rc = GTT_ENOMEM;
		else
			rc = t ? ana_gpu_tables_finish(t, m, &m->gpu) : ana_load_gpu(L);
		if (rc < 0) {
			snprintf(errbuf, errlen, "%s: out of memory while reading CUDA records", m->path);
			return rc;
		}
	}
	return 0;
}

ana_model *ana_model_load(const char *path, const ana_opts *opts, char *errbuf, size_t errlen)
{
	/* stdin, a pipe or a device: the header checked first and the trace copied to a file (the
	 * reader would read it whole into memory, /dev/zero without end) */
	int fd = -1;
	if (ana_source_spool_trace(path, &fd, errbuf, errlen) < 0)
		return NULL;
	if (fd < 0)
		return ana_model_load_named(path, path, opts, errbuf, errlen);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ana_model *m = ana_model_load_named(proc, strcmp(path, "-") == 0 ? "stdin" : path, opts, errbuf, errlen);
	close(fd);
	return m;
}

ana_model *ana_model_load_named(const char *path, const char *name, const ana_opts *opts, char *errbuf,
                                size_t errlen)
{
	ana_opts defaults;
	if (!opts) {
		ana_opts_init(&defaults);
		opts = &defaults;
	}
	if (opts->python_frames < ANA_PYFRAMES_AUTO || opts->python_frames > ANA_PYFRAMES_LINE) {
		snprintf(errbuf, errlen, "--python-frames: expected function or line");
		return NULL;
	}
	loader *L = calloc(1, sizeof(*L));
	ana_model *m = calloc(1, sizeof(*m));
	int err = 0;
	if (!L || !m || !(m->path = strdup(name)) || !ana_priv_get(m)) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	L->m = m;
	L->o = opts;
	L->stream = opts->stream_samples && opts->stream_cuda != ANA_STREAM_CUDA_KEEP;
	if (!(L->oncpu = ana_oncpu_new(0, ANA_ONCPU_HORIZON_NS))) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	L->t0_ns = gtt_now_ns();
	errno = 0;
	L->r = gtt_reader_open(path, &err);
	if (!L->r) {
		describe_open_error(name, err, errno, errbuf, errlen);
		goto fail;
	}
	gtt_reader_version(L->r, &m->version_major, &m->version_minor);
	gtt_reader_prefetch(L->r); /* zstd on a second core while the passes decode */
	if ((opts->has_from || opts->has_to) && ana_load_window_open(L, errbuf, errlen) < 0)
		goto fail;
	if (ana_load_pass1(L, errbuf, errlen) < 0)
		goto fail;
	m->truncated = gtt_reader_truncated(L->r);
	L->cut_off = gtt_reader_offset(L->r); /* (a later pass may stop before the cut) */
	/* every process record is read: the symbolizer (pass 2) and the thread names look them up */
	if (ana_index_processes(m) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	/* the recording's own bounds, when it says them, frame the timestamps seen */
	const char *start = ana_meta_get(m, "start_ns");
	if (m->window.on) {
		if (ana_load_window_finish(L, errbuf, errlen) < 0)
			goto fail;
	} else if (start) {
		uint64_t t = strtoull(start, NULL, 10);
		if (t && (!m->start_ns || t < m->start_ns))
			m->start_ns = t;
	}

	ana_sym_opts so = { .symfs = opts->symfs, .no_archive = opts->no_archive, .kernel = opts->kernel };
	L->sym = ana_sym_create(m, &so);
	if (!L->sym) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	for (size_t i = 0; i < L->archives.n; i++) {
		pending_archive *p = &L->archives.v[i];
		if (p->bad || p->got < p->total)
			continue;
		if (ana_sym_add_archive(L->sym, p->build_id, p->build_id_len, p->path, p->data, p->total) < 0) {
			p->data = NULL;
			snprintf(errbuf, errlen, "%s: out of memory", name);
			goto fail;
		}
		p->data = NULL; /* owned by the symbolizer now */
	}
	/* weights and threads before pass 2, which counts each sample for its thread */
	ana_fill_weights(m);
	if (ensure_threads(L) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	sort_threads(L);
	if ((L->stream ? ana_load_stream_pass2(L, errbuf, errlen) : ana_load_pass2(L, errbuf, errlen)) < 0)
		goto fail;
	/* launch stacks: symbolized like samples, their Python frames named as the merge names them */
	if (L->launch && ana_launch_loader_finish(L->launch, m, L->sym, opts) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory while reading launch stacks", name);
		goto fail;
	}

	if (ana_sort_stable(m->samples.v, m->samples.n, sizeof(ana_sample), sample_cmp) < 0 ||
	    ana_sort_stable(m->pystacks.v, m->pystacks.n, sizeof(ana_pystack), pystack_cmp) < 0 ||
	    ana_sort_stable(m->gil.v, m->gil.n, sizeof(gtt_gil), gil_cmp) < 0 ||
	    ana_sort_stable(m->strings.v, m->strings.n, sizeof(ana_string), string_cmp) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	if (ana_threads_finish(m) < 0 || ana_capture_build(m) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	if (m->window.on)
		ana_load_window_captured(m);
	if (ana_swcover_build(m) < 0 || ana_threads_cpu(m) < 0 || ana_load_finish_oncpu(L) < 0) {
		snprintf(errbuf, errlen, "%s: out of memory", name);
		goto fail;
	}
	ana_swcover_apply(m); /* switches missing somewhere: on-CPU time from /proc */
	if (L->stream) {
		/* samples, Python reads, GIL and CUDA records read once more, in time order: merged,
		 * classified and summed (load_stream.c) */
		if (ana_load_stream_pass3(L, errbuf, errlen) < 0)
			goto fail;
		ana_python_unread_warn(m);
	} else if (finish_arrays(L, errbuf, errlen) < 0) {
		goto fail;
	}
	/* fold's GPU time: the CUDA records joined to the launch stacks (load_launch.c) */
	if (opts->stream_cuda == ANA_STREAM_CUDA_LAUNCHES && ana_load_launches(L, errbuf, errlen) < 0)
		goto fail;
	add_warnings(L);
	loader_cleanup(L);
	free(L);
	return m;
fail:
	if (L)
		loader_cleanup(L);
	free(L);
	ana_model_free(m);
	return NULL;
}
