/* export_chrome.c — the model as Chrome Trace Event JSON (what Perfetto and chrome://tracing
 * load): nested X slices rebuilt from runs of samples per thread, GIL-class runs, CUDA API
 * calls, kernels/copies per stream, NVTX ranges, counters; metadata names every track. */
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "demangle.h"
#include "export.h"
#include "gtt.h"
#include "json.h"

/* Track kinds: sampled threads use their OS tid; the others get ids from EXTRA_TID up, above
 * any Linux tid (pid_max is at most 2^22), so they never meet a real thread. */
enum { TRACK_GIL = 1, TRACK_API = 2, TRACK_NVTX = 3, TRACK_STREAM = 4, TRACK_SYNC = 5 };
#define EXTRA_TID 0x40000000u

typedef struct chrome_ctx {
	const ana_model *m;
	ana_json *j;
	ana_keymap *tracks;
	ANA_VEC(struct track { uint32_t pid; char *name; }) extra;
	int oom;
} chrome_ctx;

static void ts_field(ana_json *j, const char *key, uint64_t ns)
{
	ana_json_key(j, key);
	/* microseconds with ns precision; a hostile time past 2^63 ns is written as 2^63 - 1 */
	ana_json_decimal(j, ns > INT64_MAX ? INT64_MAX : (int64_t)ns, 3);
}

static const char *thread_label(const ana_model *m, uint32_t pid, uint32_t tid, char *buf, size_t cap)
{
	const ana_thread *t = ana_thread_find(m, pid, tid);
	if (t && t->name && t->name[0])
		snprintf(buf, cap, "%s", t->name);
	else
		snprintf(buf, cap, "tid %u", tid);
	return buf;
}

/* The tid of an extra track, named on first use. */
static uint32_t track(chrome_ctx *c, uint32_t kind, uint32_t pid, uint32_t a, uint32_t b)
{
	uint32_t key[4] = {kind, pid, a, b};
	int is_new = 0;
	int64_t id = ana_keymap_get(c->tracks, key, 4, &is_new);
	if (id < 0) {
		c->oom = 1;
		return 0;
	}
	if (is_new) {
		char name[300], tn[256];
		switch (kind) {
		case TRACK_GIL: snprintf(name, sizeof(name), "%s (tid %u): GIL", thread_label(c->m, pid, a, tn, sizeof(tn)), a); break;
		case TRACK_API: snprintf(name, sizeof(name), "%s (tid %u): CUDA API", thread_label(c->m, pid, a, tn, sizeof(tn)), a); break;
		case TRACK_NVTX: snprintf(name, sizeof(name), "%s (tid %u): NVTX", thread_label(c->m, pid, a, tn, sizeof(tn)), a); break;
		case TRACK_STREAM: snprintf(name, sizeof(name), "GPU %u stream %u", a, b); break;
		default: snprintf(name, sizeof(name), "GPU context %u: synchronization", a); break;
		}
		struct track *t = ana_vec_push(c->extra);
		if (!t || !(t->name = strdup(name))) {
			c->oom = 1;
			return 0;
		}
		t->pid = pid;
	}
	return EXTRA_TID + (uint32_t)id;
}

static void x_event(chrome_ctx *c, const char *name, const char *cat, uint32_t pid, uint32_t tid,
                    uint64_t start_ns, uint64_t end_ns)
{
	ana_json *j = c->j;
	ana_json_newline(j);
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "name", name);
	ana_json_kv_str(j, "cat", cat);
	ana_json_kv_str(j, "ph", "X");
	ts_field(j, "ts", start_ns);
	ts_field(j, "dur", end_ns > start_ns ? end_ns - start_ns : 0);
	ana_json_kv_u64(j, "pid", pid);
	ana_json_kv_u64(j, "tid", tid);
}

static void meta_event(ana_json *j, const char *what, uint32_t pid, uint32_t tid, const char *key, const char *sval,
                       int64_t ival)
{
	ana_json_newline(j);
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "name", what);
	ana_json_kv_str(j, "ph", "M");
	ana_json_kv_u64(j, "pid", pid);
	ana_json_kv_u64(j, "tid", tid);
	ana_json_key(j, "args");
	ana_json_obj_begin(j);
	if (sval)
		ana_json_kv_str(j, key, sval);
	else
		ana_json_kv_i64(j, key, ival);
	ana_json_obj_end(j);
	ana_json_obj_end(j);
}

/* The same function: frames of one function at different lines (and so maybe files) are one
 * slice. Names and modules are interned: equal strings are equal pointers. */
static int same_function(const ana_frame *a, const ana_frame *b)
{
	return a->name == b->name && a->module == b->module && a->kind == b->kind && a->inlined == b->inlined;
}

static const char *frame_cat(const ana_frame *f)
{
	switch (f->kind) {
	case ANA_FRAME_PYTHON: return "python";
	case ANA_FRAME_KERNEL: return "linux_kernel";   /* not "kernel": CUDA kernels are cuda_kernel */
	}
	return "native";
}

/* A B (begin) or E (end) event of a frame's slice. */
static void be_event(chrome_ctx *c, const ana_frame *f, const char *ph, uint32_t pid, uint32_t tid, uint64_t ns)
{
	ana_json *j = c->j;
	ana_json_newline(j);
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "name", f->name ? f->name : "?");
	ana_json_kv_str(j, "cat", frame_cat(f));
	ana_json_kv_str(j, "ph", ph);
	ts_field(j, "ts", ns);
	ana_json_kv_u64(j, "pid", pid);
	ana_json_kv_u64(j, "tid", tid);
	ana_json_obj_end(j);
}

/* One thread's samples as a flame chart: a function's slice lasts while consecutive samples share
 * the stack prefix up to it; a gap of more than 1.5 periods closes everything. Written as B/E
 * pairs in the order they happen: parents begin before their children and end after them, at
 * the same time too, and an end carries its own time. (X events leave the end to ts + dur, which
 * readers add in floating point: a child and its parent ending together then end in either
 * order, and speedscope, replaying them, nested the stacks upside down.) */
static int thread_slices(chrome_ctx *c, size_t t, const size_t *first, const size_t *next)
{
	const ana_model *m = c->m;
	const ana_thread *th = &m->threads.v[t];
	uint32_t *open_f = NULL;
	size_t depth = 0, cap_f = 0;
	uint64_t prev_end = 0, prev_w = 0;
	int prev_cls = -1;
	uint64_t cls_start = 0;
	uint32_t gil_tid = 0;
	if (th->is_python)
		gil_tid = track(c, TRACK_GIL, th->pid, th->tid, 0);
	for (size_t i = first[t];; i = next[i]) {
		const ana_sample *s = i == SIZE_MAX ? NULL : &m->samples.v[i];
		int gap = !s || (prev_w && s->time_ns > ana_sat_add(prev_end, prev_w / 2));
		const ana_stack *st = s ? &m->stacks.v[s->stack_id] : NULL;
		size_t keep = 0;
		if (!gap)
			while (keep < depth && keep < st->n &&
			       same_function(&m->frames.v[open_f[keep]], &m->frames.v[st->frames[keep]]))
				keep++;
		uint64_t close_at = gap ? prev_end : s->time_ns, open_at = s ? s->time_ns : 0;
		/* speedscope takes a B and an E of one name at one time for a slice of no length, and
		 * begins it first: when the first new frame has the name of one that ends, it begins
		 * 1 ns later */
		if (s && !gap && keep < st->n)
			for (size_t k = keep; k < depth && open_at == close_at; k++)
				if (m->frames.v[open_f[k]].name == m->frames.v[st->frames[keep]].name)
					open_at = close_at + 1;
		while (depth > keep)
			be_event(c, &m->frames.v[open_f[--depth]], "E", th->pid, th->tid, close_at);
		if (gil_tid && prev_cls >= 0 && (gap || s->cls != prev_cls)) {
			x_event(c, ana_class_name(prev_cls), "gil", th->pid, gil_tid, cls_start, close_at);
			ana_json_obj_end(c->j);
			prev_cls = -1;
		}
		if (!s)
			break;
		if (GT_GROW(open_f, cap_f, st->n) < 0) {
			free(open_f);
			return GTT_ENOMEM;
		}
		for (; depth < st->n; depth++) {
			open_f[depth] = st->frames[depth];
			be_event(c, &m->frames.v[open_f[depth]], "B", th->pid, th->tid, open_at);
		}
		if (gil_tid && prev_cls < 0) {
			prev_cls = s->cls;
			cls_start = s->time_ns;
		}
		prev_end = ana_sat_add(s->time_ns, s->weight_ns);
		prev_w = s->weight_ns;
	}
	free(open_f);
	return 0;
}

static const char *memcpy_name(uint32_t kind)
{
	switch (kind) {
	case GTT_MEMCPY_HTOD: return "memcpy HtoD";
	case GTT_MEMCPY_DTOH: return "memcpy DtoH";
	case GTT_MEMCPY_DTOD: return "memcpy DtoD";
	case GTT_MEMCPY_HTOH: return "memcpy HtoH";
	case GTT_MEMCPY_PTOP: return "memcpy PtoP";
	}
	return "memcpy";
}

static const char *sync_name(uint32_t kind)
{
	switch (kind) {
	case GTT_SYNC_EVENT: return "event synchronize";
	case GTT_SYNC_STREAM_WAIT_EVENT: return "stream wait event";
	case GTT_SYNC_STREAM: return "stream synchronize";
	case GTT_SYNC_CONTEXT: return "context synchronize";
	}
	return "synchronize";
}

static void gpu_events(chrome_ctx *c)
{
	const ana_model *m = c->m;
	ana_json *j = c->j;
	for (size_t i = 0; i < m->apis.n; i++) {
		const gtt_cuda_api *a = &m->apis.v[i];
		x_event(c, ana_string_get(m, a->pid, a->name_id), "cuda_api", a->pid, track(c, TRACK_API, a->pid, a->tid, 0),
		        a->start_ns, a->end_ns);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		ana_json_kv_u64(j, "correlation", a->correlation);
		if (a->status)
			ana_json_kv_i64(j, "status", a->status);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->kernels.n; i++) {
		const gtt_cuda_kernel *k = &m->kernels.v[i];
		x_event(c, ana_kernel_name(m, k->pid, k->name_id), "cuda_kernel", k->pid,
		        track(c, TRACK_STREAM, k->pid, k->device, k->stream), k->start_ns, k->end_ns);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		char g[96];
		snprintf(g, sizeof(g), "%ux%ux%u", k->grid[0], k->grid[1], k->grid[2]);
		ana_json_kv_str(j, "grid", g);
		snprintf(g, sizeof(g), "%ux%ux%u", k->block[0], k->block[1], k->block[2]);
		ana_json_kv_str(j, "block", g);
		ana_json_kv_u64(j, "shared_bytes", k->shared_bytes);
		ana_json_kv_u64(j, "registers", k->registers);
		ana_json_kv_u64(j, "correlation", k->correlation);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->memcpys.n; i++) {
		const gtt_cuda_memcpy *k = &m->memcpys.v[i];
		x_event(c, memcpy_name(k->kind), "cuda_memcpy", k->pid, track(c, TRACK_STREAM, k->pid, k->device, k->stream),
		        k->start_ns, k->end_ns);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		ana_json_kv_u64(j, "bytes", k->bytes);
		ana_json_kv_u64(j, "correlation", k->correlation);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->memsets.n; i++) {
		const gtt_cuda_memset *k = &m->memsets.v[i];
		x_event(c, "memset", "cuda_memset", k->pid, track(c, TRACK_STREAM, k->pid, k->device, k->stream), k->start_ns,
		        k->end_ns);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		ana_json_kv_u64(j, "bytes", k->bytes);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->syncs.n; i++) {
		const gtt_cuda_sync *k = &m->syncs.v[i];
		x_event(c, sync_name(k->kind), "cuda_sync", k->pid, track(c, TRACK_SYNC, k->pid, k->context, 0), k->start_ns,
		        k->end_ns);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->nvtx.n; i++) {
		const gtt_nvtx *k = &m->nvtx.v[i];
		const char *name = ana_string_get(m, k->pid, k->name_id);
		uint32_t tid = track(c, TRACK_NVTX, k->pid, k->tid, 0);
		if (k->kind == GTT_NVTX_MARKER) {
			ana_json_newline(j);
			ana_json_obj_begin(j);
			ana_json_kv_str(j, "name", name);
			ana_json_kv_str(j, "cat", "nvtx");
			ana_json_kv_str(j, "ph", "i");
			ana_json_kv_str(j, "s", "t");
			ts_field(j, "ts", k->start_ns);
			ana_json_kv_u64(j, "pid", k->pid);
			ana_json_kv_u64(j, "tid", tid);
		} else {
			x_event(c, name, "nvtx", k->pid, tid, k->start_ns, k->end_ns);
		}
		if (k->domain_id) {
			ana_json_key(j, "args");
			ana_json_obj_begin(j);
			ana_json_kv_str(j, "domain", ana_string_get(m, k->pid, k->domain_id));
			ana_json_obj_end(j);
		}
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->counters.n; i++) {
		const gtt_counter *k = &m->counters.v[i];
		ana_json_newline(j);
		ana_json_obj_begin(j);
		ana_json_kv_str(j, "name", ana_string_get(m, k->pid, k->name_id));
		ana_json_kv_str(j, "ph", "C");
		ts_field(j, "ts", k->time_ns);
		ana_json_kv_u64(j, "pid", k->pid);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		ana_json_kv_double(j, "value", k->value);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
}

/* (pid, position) order of positions into a pid array */
static int cmp_pid_at(const void *a, const void *b, void *ctx)
{
	const uint32_t *pids = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	if (pids[x] != pids[y])
		return pids[x] < pids[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* A process's name: its command line from process records, else the thread named like it. */
static const char *process_label(const ana_model *m, uint32_t pid, char *buf, size_t cap)
{
	const char *comm = ana_process_comm(m, pid);
	if (!comm) {
		const ana_thread *t = ana_thread_find(m, pid, pid);
		comm = t && t->name ? t->name : NULL;
	}
	/* the readers add the pid themselves (Perfetto, speedscope: "name (pid N)"); NULL when the
	 * trace does not name it, and the readers say "pid N" */
	if (!comm)
		return NULL;
	snprintf(buf, cap, "%s", comm);
	return buf;
}

int ana_export_chrome(const ana_model *m, const ana_export_opts *o, FILE *out)
{
	chrome_ctx c = {.m = m};
	size_t *first = NULL, *next = NULL;
	uint32_t *pids = NULL;
	size_t n_pids = 0, *order = NULL;
	uint8_t *first_of_pid = NULL;
	int rc = GTT_ENOMEM;
	if (ana_thread_sample_lists(m, o ? o->gil : -1, &first, &next) < 0 || !(c.tracks = ana_keymap_create()) ||
	    !(c.j = ana_json_create(out)))
		goto out;
	ana_json *j = c.j;
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "displayTimeUnit", "ns");
	ana_json_key(j, "otherData");
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "exporter", "groundtruth gt-analyze " GT_VERSION);
	ana_json_kv_str(j, "clock", "CLOCK_MONOTONIC");
	for (size_t i = 0; i < m->meta.n; i++)
		if (strcmp(m->meta.v[i].key, "command") == 0 || strcmp(m->meta.v[i].key, "hostname") == 0)
			ana_json_kv_str(j, m->meta.v[i].key, m->meta.v[i].value);
	ana_json_obj_end(j);
	ana_json_newline(j);
	ana_json_key(j, "traceEvents");
	ana_json_arr_begin(j);
	for (size_t t = 0; t < m->threads.n; t++)
		if (first[t] != SIZE_MAX && (rc = thread_slices(&c, t, first, next)) < 0)
			goto out;
	gpu_events(&c);
	if (c.oom) {
		rc = GTT_ENOMEM;
		goto out;
	}
	/* Metadata: processes (every pid seen), sampled threads, then the extra tracks. */
	if (!(pids = malloc((m->threads.n + c.extra.n + 1) * sizeof(*pids))))
		goto out;
	for (size_t t = 0; t < m->threads.n; t++)
		pids[n_pids++] = m->threads.v[t].pid;
	for (size_t k = 0; k < c.extra.n; k++)
		pids[n_pids++] = c.extra.v[k].pid;
	/* each pid once, in order of first appearance (a pair scan cost pids^2 with many processes) */
	if (!(order = malloc((n_pids + 1) * sizeof(*order))) || !(first_of_pid = calloc(n_pids + 1, 1)))
		goto out;
	for (size_t a = 0; a < n_pids; a++)
		order[a] = a;
	qsort_r(order, n_pids, sizeof(*order), cmp_pid_at, pids);
	for (size_t k = 0; k < n_pids; k++)
		first_of_pid[order[k]] = k == 0 || pids[order[k - 1]] != pids[order[k]];
	for (size_t a = 0; a < n_pids; a++) {
		if (!first_of_pid[a])
			continue;
		char buf[300];
		const char *label = process_label(m, pids[a], buf, sizeof(buf));
		if (label)
			meta_event(j, "process_name", pids[a], 0, "name", label, 0);
	}
	for (size_t t = 0; t < m->threads.n; t++) {
		const ana_thread *th = &m->threads.v[t];
		char tn[256];
		/* the real tid is the event's: readers show it beside the name */
		meta_event(j, "thread_name", th->pid, th->tid, "name", ana_export_thread_name(m, th, tn, sizeof(tn)), 0);
		meta_event(j, "thread_sort_index", th->pid, th->tid, "sort_index", NULL, (int64_t)(2 * t));
	}
	for (size_t k = 0; k < c.extra.n; k++) {
		uint32_t tid = EXTRA_TID + (uint32_t)k;
		meta_event(j, "thread_name", c.extra.v[k].pid, tid, "name", c.extra.v[k].name, 0);
		meta_event(j, "thread_sort_index", c.extra.v[k].pid, tid, "sort_index", NULL, (int64_t)(2 * m->threads.n + k));
	}
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	ana_json_newline(j);
	rc = ana_json_error(j) < 0 ? GTT_EIO : 0;
out:
	for (size_t k = 0; k < c.extra.n; k++)
		free(c.extra.v[k].name);
	free(c.extra.v);
	free(pids);
	free(order);
	free(first_of_pid);
	ana_keymap_destroy(c.tracks);
	ana_json_destroy(c.j);
	free(first);
	free(next);
	return rc;
}
