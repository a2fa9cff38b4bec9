/* export_chrome.c — the model as Chrome Trace Event JSON (what Perfetto and chrome://tracing
 * load): nested X slices rebuilt from runs of samples per thread, GIL-class runs, CUDA API
 * calls, kernels/copies per stream, NVTX ranges, counters; metadata names every track. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "export.h"
#include "gtt.h"
#include "json.h"

/* Track kinds: sampled threads use tid = thread index + 1; the others get the next ids. */
enum { TRACK_GIL = 1, TRACK_API = 2, TRACK_NVTX = 3, TRACK_STREAM = 4, TRACK_SYNC = 5 };

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
	ana_json_decimal(j, (int64_t)ns, 3);   /* microseconds with ns precision */
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
	return (uint32_t)(c->m->threads.n + 1 + (size_t)id);
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

/* One thread's samples as a flame chart: a frame's slice lasts while consecutive samples
 * share the stack prefix up to it; a gap of more than 1.5 periods closes everything. */
static int thread_slices(chrome_ctx *c, size_t t, const size_t *first, const size_t *next)
{
	const ana_model *m = c->m;
	const ana_thread *th = &m->threads.v[t];
	uint32_t tid = (uint32_t)(t + 1);
	uint32_t *open_f = NULL;
	uint64_t *open_t = NULL;
	size_t depth = 0, cap = 0;
	uint64_t prev_end = 0, prev_w = 0;
	int prev_cls = -1;
	uint64_t cls_start = 0;
	uint32_t gil_tid = 0;
	if (th->is_python)
		gil_tid = track(c, TRACK_GIL, th->pid, th->tid, 0);
	for (size_t i = first[t];; i = next[i]) {
		const ana_sample *s = i == SIZE_MAX ? NULL : &m->samples.v[i];
		int gap = !s || (prev_w && s->time_ns > prev_end + prev_w / 2);
		const ana_stack *st = s ? &m->stacks.v[s->stack_id] : NULL;
		size_t keep = 0;
		if (!gap)
			while (keep < depth && keep < st->n && open_f[keep] == st->frames[keep])
				keep++;
		uint64_t close_at = gap ? prev_end : s->time_ns;
		while (depth > keep) {
			depth--;
			const ana_frame *f = &m->frames.v[open_f[depth]];
			x_event(c, f->name ? f->name : "?", f->kind == ANA_FRAME_PYTHON ? "python" : f->kind == ANA_FRAME_KERNEL ? "kernel" : "native",
			        th->pid, tid, open_t[depth], close_at);
			ana_json_obj_end(c->j);
		}
		if (gil_tid && prev_cls >= 0 && (gap || s->cls != prev_cls)) {
			x_event(c, ana_class_name(prev_cls), "gil", th->pid, gil_tid, cls_start, close_at);
			ana_json_obj_end(c->j);
			prev_cls = -1;
		}
		if (!s)
			break;
		if (st->n > cap) {
			size_t ncap = st->n * 2;
			uint32_t *f2 = realloc(open_f, ncap * sizeof(*f2));
			if (!f2)
				goto oom;
			open_f = f2;
			uint64_t *t2 = realloc(open_t, ncap * sizeof(*t2));
			if (!t2)
				goto oom;
			open_t = t2;
			cap = ncap;
		}
		for (; depth < st->n; depth++) {
			open_f[depth] = st->frames[depth];
			open_t[depth] = s->time_ns;
		}
		if (gil_tid && prev_cls < 0) {
			prev_cls = s->cls;
			cls_start = s->time_ns;
		}
		prev_end = s->time_ns + s->weight_ns;
		prev_w = s->weight_ns;
	}
	free(open_f);
	free(open_t);
	return 0;
oom:
	free(open_f);
	free(open_t);
	return GTT_ENOMEM;
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
		x_event(c, ana_kernel_name(m, k->pid, k->name_id), "kernel", k->pid,
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
		x_event(c, memcpy_name(k->kind), "memcpy", k->pid, track(c, TRACK_STREAM, k->pid, k->device, k->stream),
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
		x_event(c, "memset", "memset", k->pid, track(c, TRACK_STREAM, k->pid, k->device, k->stream), k->start_ns,
		        k->end_ns);
		ana_json_key(j, "args");
		ana_json_obj_begin(j);
		ana_json_kv_u64(j, "bytes", k->bytes);
		ana_json_obj_end(j);
		ana_json_obj_end(j);
	}
	for (size_t i = 0; i < m->syncs.n; i++) {
		const gtt_cuda_sync *k = &m->syncs.v[i];
		x_event(c, sync_name(k->kind), "sync", k->pid, track(c, TRACK_SYNC, k->pid, k->context, 0), k->start_ns,
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

/* A process's name: its command line from process records, else the thread named like it. */
static const char *process_label(const ana_model *m, uint32_t pid, char *buf, size_t cap)
{
	const char *comm = NULL;
	for (size_t i = 0; i < m->processes.n; i++)
		if (m->processes.v[i].pid == pid && m->processes.v[i].comm && m->processes.v[i].comm[0])
			comm = m->processes.v[i].comm;
	if (!comm) {
		const ana_thread *t = ana_thread_find(m, pid, pid);
		comm = t && t->name ? t->name : NULL;
	}
	if (comm)
		snprintf(buf, cap, "%s (pid %u)", comm, pid);
	else
		snprintf(buf, cap, "pid %u", pid);
	return buf;
}

int ana_export_chrome(const ana_model *m, FILE *out)
{
	chrome_ctx c = {.m = m};
	size_t *first = NULL, *next = NULL;
	uint32_t *pids = NULL;
	size_t n_pids = 0;
	int rc = GTT_ENOMEM;
	if (ana_thread_sample_lists(m, &first, &next) < 0 || !(c.tracks = ana_keymap_create()) ||
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
	for (size_t a = 0; a < n_pids; a++) {
		int seen = 0;
		for (size_t b = 0; b < a && !seen; b++)
			seen = pids[b] == pids[a];
		if (seen)
			continue;
		char buf[300];
		meta_event(j, "process_name", pids[a], 0, "name", process_label(m, pids[a], buf, sizeof(buf)), 0);
	}
	for (size_t t = 0; t < m->threads.n; t++) {
		const ana_thread *th = &m->threads.v[t];
		char name[300], tn[256];
		snprintf(name, sizeof(name), "%s (tid %u)", ana_export_thread_name(m, th, tn, sizeof(tn)), th->tid);
		meta_event(j, "thread_name", th->pid, (uint32_t)(t + 1), "name", name, 0);
		meta_event(j, "thread_sort_index", th->pid, (uint32_t)(t + 1), "sort_index", NULL, (int64_t)(2 * t));
	}
	for (size_t k = 0; k < c.extra.n; k++) {
		uint32_t tid = (uint32_t)(m->threads.n + 1 + k);
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
	ana_keymap_destroy(c.tracks);
	ana_json_destroy(c.j);
	free(first);
	free(next);
	return rc;
}
