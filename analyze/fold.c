/* fold.c — folded stacks from the model (aggregate by interned stack first, build text only
 * for distinct stacks), and the FlameGraph text form in and out. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cli.h"
#include "fold.h"
#include "demangle.h"
#include "outfile.h"
#include "gpu_sum.h"
#include "gt_util.h"
#include "launch.h"
#include "model_priv.h"
#include "python.h"
#include "sample_sum.h"
#include "textin.h"

void ana_fold_opts_init(ana_fold_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->gil = -1;
}

const char *ana_fold_class_suffix(int cls)
{
	switch (cls) {
	case ANA_CLASS_PY_GIL: return "_[py]";
	case ANA_CLASS_NATIVE_GIL: return "_[gil]";
	case ANA_CLASS_NATIVE_NOGIL: return "_[nogil]";
	case ANA_CLASS_WAIT_GIL: return "_[wait]";
	}
	return "";
}

/* One aggregation key: a stack, the thread and class when they change the text, and
 * whether the stack is truncated (it then hangs under a "[truncated]" frame). */
typedef struct fold_key {
	uint32_t stack_id, thread_idx;
	uint32_t cls;
	uint32_t truncated;
	uint32_t cls_mask;
	uint64_t count, weight_ns;
} fold_key;

typedef struct fold_ctx {
	ANA_VEC(fold_key) keys;
	ana_idtable table;
} fold_ctx;

static int key_eq(uint32_t id, const void *key, void *ctx)
{
	const fold_key *a = &((fold_ctx *)ctx)->keys.v[id], *b = key;
	return a->stack_id == b->stack_id && a->thread_idx == b->thread_idx && a->cls == b->cls &&
	       a->truncated == b->truncated;
}

typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (GT_GROW(b->p, b->cap, b->n + len + 1) < 0) {
		b->oom = 1;
		return;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = 0;
}

/* A frame name in folded text: ';' separates frames and a newline ends the line. */
static void sb_name(sbuf *b, const char *s)
{
	size_t start = b->n;
	sb_put(b, s, strlen(s));
	if (b->oom)
		return;
	for (size_t i = start; i < b->n; i++)
		if (b->p[i] == ';')
			b->p[i] = ':';
		else if (b->p[i] == '\n' || b->p[i] == '\r')
			b->p[i] = ' ';
}

static int parse_tids(const char *list, uint32_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!list)
		return 0;
	size_t cap = 1;
	for (const char *p = list; *p; p++)
		cap += *p == ',';
	uint32_t *v = malloc(cap * sizeof(*v));
	if (!v)
		return GTT_ENOMEM;
	const char *p = list;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long t = strtoul(p, &end, 10);
		if (end == p || errno || t > UINT32_MAX || (*end && *end != ',')) {
			free(v);
			return GTT_EINVAL;
		}
		v[(*n)++] = (uint32_t)t;
		p = *end ? end + 1 : end;
	}
	*out = v;
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const ana_folded_line *)a)->stack, ((const ana_folded_line *)b)->stack);
}

/* Sort lines by stack and merge equal ones (different frames can print the same). */
static void sort_merge(ana_folded *fd)
{
	if (fd->n > 1) /* qsort(NULL, 0, ...) is undefined behaviour (UBSan: nonnull argument) */
		qsort(fd->lines, fd->n, sizeof(*fd->lines), line_cmp);
	size_t k = 0;
	for (size_t i = 0; i < fd->n; i++) {
		if (k && strcmp(fd->lines[k - 1].stack, fd->lines[i].stack) == 0) {
			/* counts parsed from text can be anything: saturate, never wrap to a small number */
			uint64_t c = fd->lines[k - 1].count, w = fd->lines[k - 1].weight_ns;
			fd->lines[k - 1].count = c + fd->lines[i].count < c ? UINT64_MAX : c + fd->lines[i].count;
			fd->lines[k - 1].weight_ns = w + fd->lines[i].weight_ns < w ? UINT64_MAX : w + fd->lines[i].weight_ns;
			fd->lines[k - 1].base_count = ana_sat_add(fd->lines[k - 1].base_count, fd->lines[i].base_count);
			fd->lines[k - 1].cls_mask |= fd->lines[i].cls_mask;
			free(fd->lines[i].stack);
			continue;
		}
		fd->lines[k++] = fd->lines[i];
	}
	fd->n = k;
}

static const char *proc_name(const ana_model *m, uint32_t pid, char *buf, size_t cap)
{
	const char *comm = ana_process_comm(m, pid);
	const ana_thread *main_thread = ana_thread_find(m, pid, pid);
	if (comm) {
		size_t len = strcspn(comm, " ");
		const char *base = memrchr(comm, '/', len);
		base = base ? base + 1 : comm;
		snprintf(buf, cap, "%.*s %u", (int)(len - (size_t)(base - comm)), base, pid);
	} else if (main_thread && main_thread->name) {
		snprintf(buf, cap, "%s %u", main_thread->name, pid);
	} else {
		snprintf(buf, cap, "pid %u", pid);
	}
	return buf;
}

int ana_fold_tids_check(const char *list)
{
	uint32_t *v = NULL;
	size_t n = 0;
	int rc = list && list[0] ? parse_tids(list, &v, &n) : GTT_EINVAL;
	free(v);
	return rc == GTT_ENOMEM ? 0 : rc; /* out of memory here is no verdict on the list */
}

int ana_fold_weight_parse(const char *word)
{
	if (strcmp(word, "samples") == 0)
		return ANA_WEIGHT_SAMPLES;
	if (strcmp(word, "gpu-time") == 0)
		return ANA_WEIGHT_GPU_TIME;
	if (strcmp(word, "wall") == 0)
		return ANA_WEIGHT_WALL;
	return -1;
}

/* ---- wall time from the Python reader's reads (ANA_WEIGHT_WALL) ---- */

/* One read's key: its interned frames (equal stacks share them), its thread when rooted. */
typedef struct read_key { const gtt_py_frame *frames; uint32_t n, pid, thread_idx; uint64_t count; } read_key;

static int read_key_cmp(const void *pa, const void *pb)
{
	const read_key *a = pa, *b = pb;
	if (a->frames != b->frames)
		return (uintptr_t)a->frames < (uintptr_t)b->frames ? -1 : 1;
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->thread_idx < b->thread_idx ? -1 : a->thread_idx > b->thread_idx;
}

/* Whether a read passes --gil: held = the thread held the GIL at the read (python, native-gil
 * classes), released = it did not (nogil, wait). */
static int read_gil_ok(const ana_fold_opts *o, const ana_pystack *r)
{
	if (o->gil < 0)
		return 1;
	int held = (r->flags & 1) != 0;
	int want_held = (o->gil & ((1 << ANA_CLASS_PY_GIL) | (1 << ANA_CLASS_NATIVE_GIL))) != 0;
	int want_released = (o->gil & ((1 << ANA_CLASS_NATIVE_NOGIL) | (1 << ANA_CLASS_WAIT_GIL))) != 0;
	return held ? want_held : want_released;
}

/* The line of one key: [process;thread;] Python frames, root first. 0 or GTT_ENOMEM. */
static int wall_line(const ana_model *m, const ana_fold_opts *o, ana_pynamer *nm, const read_key *k,
                     uint64_t period_ns, sbuf *b, ana_folded *out)
{
	b->n = 0;
	sb_put(b, "", 0);
	if (o->threads) {
		const ana_thread *t = &m->threads.v[k->thread_idx];
		char buf[300];
		sb_name(b, proc_name(m, t->pid, buf, sizeof(buf)));
		snprintf(buf, sizeof(buf), "%s %u", t->name ? t->name : "?", t->tid);
		sb_put(b, ";", 1);
		sb_name(b, buf);
	}
	for (uint32_t f = k->n; f-- > 0;) {
		uint32_t id = ana_pynamer_id(nm, k->pid, &k->frames[f]);
		if (id == ANA_NO_ID)
			return GTT_ENOMEM;
		if (b->n)
			sb_put(b, ";", 1);
		sb_name(b, m->frames.v[id].name);
	}
	if (b->oom || !(out->lines[out->n].stack = strdup(b->p)))
		return GTT_ENOMEM;
	out->lines[out->n].count = k->count;
	out->lines[out->n].weight_ns = ana_sat_mul(k->count, period_ns);
	out->lines[out->n].base_count = 0;
	out->lines[out->n].cls_mask = 0;
	out->n++;
	out->total = ana_sat_add(out->total, k->count);
	return 0;
}

/* Folded wall time of the Python threads (ANA_WEIGHT_WALL). The model is named into (Python
 * frames are interned as the merge interns them; nothing another view reads changes). 0 or
 * GTT_ENOMEM. */
static int fold_wall(ana_model *m, const ana_fold_opts *o, ana_folded *out)
{
	uint32_t *tids = NULL;
	size_t n_tids = 0, n = 0;
	read_key *keys = NULL;
	ana_pynamer *nm = NULL;
	sbuf b = { 0 };
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = parse_tids(o->tid_filter, &tids, &n_tids)) < 0)
		return rc;
	uint64_t from = o->from_ns ? ana_sat_add(m->start_ns, o->from_ns) : 0;
	uint64_t to = ana_sat_add(m->start_ns, o->to_ns);
	const char *hz = ana_meta_get(m, "frequency_hz");
	double rate = hz ? strtod(hz, NULL) : 0;
	uint64_t period_ns = rate > 0 ? gt_hz_to_period_ns(rate) : 0;
	/* a model that streamed its reads has them counted by (stack, thread, GIL held): the same
	 * keys, taken from those rows (a window is the loader's, never this fold's) */
	const ana_sample_sum *ss = m->samples_streamed ? ana_sample_sum_of(m) : NULL;
	if (m->samples_streamed && (!ss || o->from_ns || o->to_ns)) {
		rc = ss ? GTT_EINVAL : GTT_ENOMEM;
		goto out;
	}
	size_t n_in = ss ? ss->read_rows.n : m->pystacks.n;
	rc = GTT_ENOMEM;
	if (!(keys = malloc((n_in ? n_in : 1) * sizeof(*keys))))
		goto out;
	for (size_t i = 0; i < n_in; i++) {
		const ana_ssum_read_row *row = ss ? &ss->read_rows.v[i] : NULL;
		ana_pystack one;
		const ana_pystack *r = ss ? &one : &m->pystacks.v[i];
		if (ss)
			one = (ana_pystack){ m->start_ns, row->pid, row->tid, row->held, row->n_frames, row->frames };
		if (!r->n_frames || (!ss && (r->time_ns < from || (o->to_ns && r->time_ns >= to))) || !read_gil_ok(o, r))
			continue;
		size_t t = 0;
		while (t < n_tids && tids[t] != r->tid)
			t++;
		if (n_tids && t == n_tids)
			continue;
		const ana_thread *th = o->threads ? ana_thread_find(m, r->pid, r->tid) : NULL;
		keys[n++] = (read_key){ r->frames, r->n_frames, r->pid, th ? (uint32_t)(th - m->threads.v) : 0,
		                        row ? row->n : 1 };
	}
	if (n > 1)
		qsort(keys, n, sizeof(*keys), read_key_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && read_key_cmp(&keys[k - 1], &keys[i]) == 0)
			keys[k - 1].count += keys[i].count;
		else
			keys[k++] = keys[i];
	}
	if (!(out->lines = calloc(k ? k : 1, sizeof(*out->lines))) || !(nm = ana_pynamer_create_mode(m, o->python_frames)))
		goto out;
	for (size_t i = 0; i < k; i++)
		if (wall_line(m, o, nm, &keys[i], period_ns, &b, out) < 0)
			goto out;
	sort_merge(out);
	rc = 0;
out:
	if (rc < 0)
		ana_folded_free(out);
	ana_pynamer_destroy(nm);
	free(keys);
	free(b.p);
	free(tids);
	return rc;
}

/* One folded line of GPU work: [threads roots;] stack (or [no launch stack]) ;[kind NAME]. */
static int gpu_line(const ana_model *m, const ana_fold_opts *o, const ana_launch_group *g, uint32_t stack_id,
                    double ns, sbuf *b, ana_folded *out, size_t *cap)
{
	uint64_t count = ana_d2u64(ns + 0.5);
	if (!count)
		return 0;
	b->n = 0;
	sb_put(b, "", 0);
	if (o->threads) {
		char buf[300];
		const ana_thread *t = g->tid ? ana_thread_find(m, g->pid, g->tid) : NULL;
		sb_name(b, proc_name(m, g->pid, buf, sizeof(buf)));
		if (g->tid)
			snprintf(buf, sizeof(buf), "%s %u", t && t->name ? t->name : "?", g->tid);
		else
			snprintf(buf, sizeof(buf), "[no API record]");
		sb_put(b, ";", 1);
		sb_name(b, buf);
	}
	int any = 0;
	if (stack_id == ANA_NO_ID) {
		if (b->n)
			sb_put(b, ";", 1);
		sb_put(b, ANA_LAUNCH_NO_STACK, strlen(ANA_LAUNCH_NO_STACK));
		any = 1;
	} else {
		const ana_stack *st = &m->stacks.v[stack_id];
		for (uint32_t f = 0; f < st->n; f++) {
			const ana_frame *fr = &m->frames.v[st->frames[f]];
			if (o->python_only && fr->kind != ANA_FRAME_PYTHON)
				continue;
			if (b->n)
				sb_put(b, ";", 1);
			sb_name(b, fr->name);
			any = 1;
		}
	}
	if (!any) {
		if (b->n)
			sb_put(b, ";", 1);
		sb_put(b, "[no python frames]", 18);
	}
	sb_put(b, ";", 1);
	if (g->kind == ANA_WORK_KERNEL) {
		/* the kernel with its template arguments; its parameter list says nothing more */
		const char *kn = ana_kernel_name(m, g->pid, g->name_id);
		sb_put(b, "[kernel ", 8);
		size_t before = b->n;
		sb_name(b, kn);
		if (!b->oom)
			b->n = before + ana_name_without_params(kn);
		sb_put(b, "]", 1);
	} else {
		char buf[32];
		const char *label = ana_launch_work_label(g, buf, sizeof(buf));
		sb_put(b, label, strlen(label));
	}
	if (GT_GROW(out->lines, *cap, out->n + 1) < 0 || b->oom || !(out->lines[out->n].stack = strdup(b->p)))
		return GTT_ENOMEM;
	out->lines[out->n].count = count;
	out->lines[out->n].weight_ns = count;
	out->lines[out->n].base_count = 0;
	out->lines[out->n].cls_mask = 0;
	out->n++;
	out->total = ana_sat_add(out->total, count);
	return 0;
}

/* Folded GPU time (ANA_WEIGHT_GPU_TIME). 0 or GTT_ENOMEM. */
static int fold_gpu(const ana_model *m, const ana_fold_opts *o, ana_folded *out)
{
	ana_launches L;
	sbuf b = { 0 };
	uint32_t *tids = NULL;
	size_t n_tids = 0, cap = 0;
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = parse_tids(o->tid_filter, &tids, &n_tids)) < 0)
		return rc;
	uint64_t from = o->from_ns ? ana_sat_add(m->start_ns, o->from_ns) : 0;
	uint64_t to = o->to_ns ? ana_sat_add(m->start_ns, o->to_ns) : 0;
	/* a model that streamed its CUDA records has them joined already (load_launch.c), over the
	 * loader's window */
	const ana_launches *lp = &L;
	memset(&L, 0, sizeof(L));
	if (m->cuda_streamed) {
		if (!m->gpu_launches || !m->gpu || from || to) {
			rc = GTT_EINVAL;
			goto out;
		}
		lp = &m->gpu->launches;
	} else if ((rc = ana_launches_build(m, from, to, &L)) < 0) {
		goto out;
	}
	for (size_t i = 0; i < lp->n_groups && rc == 0; i++) {
		const ana_launch_group *g = &lp->groups[i];
		if (g->kind == ANA_WORK_SYNC)
			continue; /* host waiting, not device work */
		if (n_tids) {
			size_t t = 0;
			while (t < n_tids && tids[t] != g->tid)
				t++;
			if (t == n_tids)
				continue;
		}
		for (size_t k = 0; k < g->n_sites && rc == 0; k++)
			rc = gpu_line(m, o, g, lp->sites[g->first_site + k].stack_id, lp->sites[g->first_site + k].est_ns, &b,
			              out, &cap);
		if (rc == 0)
			rc = gpu_line(m, o, g, ANA_NO_ID, g->none_ns, &b, out, &cap);
	}
	if (rc == 0)
		sort_merge(out);
out:
	ana_launches_free(&L);
	if (rc < 0)
		ana_folded_free(out);
	free(b.p);
	free(tids);
	return rc;
}

/* A sample of class cls on thread tid is in the selection (--gil, --tid). */
static int tid_kept(const ana_fold_opts *o, const uint32_t *tids, size_t n_tids, uint32_t tid, uint32_t cls)
{
	if (o->gil >= 0 && !(o->gil & (1 << cls)))
		return 0;
	if (!n_tids)
		return 1;
	size_t t = 0;
	while (t < n_tids && tids[t] != tid)
		t++;
	return t < n_tids;
}

/* n samples of (stack, thread, class, truncated), weighing weight_ns together, into their line's
 * key. 0 or GTT_ENOMEM. */
static int add_key(fold_ctx *ctx, const ana_fold_opts *o, uint32_t stack_id, uint32_t thread_idx, uint32_t cls,
                   int truncated, uint64_t n, uint64_t weight_ns)
{
	fold_key k = { stack_id, o->threads ? thread_idx : 0, o->annotate_class ? cls : 0, truncated && !o->python_only,
	               0, 0, 0 };
	uint32_t *slot = ana_idtable_slot(&ctx->table, ana_hash_u64(((uint64_t)k.stack_id << 32) ^
	                                                            ((uint64_t)k.thread_idx << 4) ^ k.cls ^
	                                                            (uint64_t)k.truncated << 3),
	                                  key_eq, &k, ctx);
	if (!slot)
		return GTT_ENOMEM;
	if (!*slot) {
		fold_key *e = ana_vec_push(ctx->keys);
		if (!e)
			return GTT_ENOMEM;
		*e = k;
		*slot = (uint32_t)ctx->keys.n;
		ctx->table.n++;
	}
	fold_key *e = &ctx->keys.v[*slot - 1];
	e->count += n;
	e->weight_ns += weight_ns;
	e->cls_mask |= 1u << cls;
	return 0;
}

/* Folded CPU samples (ANA_WEIGHT_SAMPLES). 0 or GTT_ENOMEM (GTT_EINVAL: ana_fold). */
static int fold_samples(const ana_model *m, const ana_fold_opts *o, ana_folded *out)
{
	int rc = 0;
	fold_ctx ctx = { 0 };
	sbuf b = { 0 };
	uint32_t *tids = NULL;
	size_t n_tids = 0;
	memset(out, 0, sizeof(*out));
	if ((rc = parse_tids(o->tid_filter, &tids, &n_tids)) < 0)
		goto out;
	/* no upper bound without --to: a sample at 2^64 - 1 ns is still a sample */
	uint64_t from = o->from_ns ? ana_sat_add(m->start_ns, o->from_ns) : 0;
	uint64_t to = ana_sat_add(m->start_ns, o->to_ns);
	if (m->samples_streamed) {
		/* the loader kept no sample, only their counts by (thread, stack, class, truncated):
		 * the same keys, taken from those (a window is the loader's, never this fold's) */
		const ana_sample_sum *ss = ana_sample_sum_of(m);
		if (!ss || o->from_ns || o->to_ns) {
			rc = ss ? GTT_EINVAL : GTT_ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < ss->rows.n; i++) {
			const ana_ssum_row *r = &ss->rows.v[i];
			if (tid_kept(o, tids, n_tids, m->threads.v[r->thread_idx].tid, r->cls) &&
			    (rc = add_key(&ctx, o, r->stack_id, r->thread_idx, r->cls, r->truncated, r->n, r->weight_ns)) < 0)
				goto out;
		}
	}
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		if (s->time_ns < from || (o->to_ns && s->time_ns >= to))
			continue;
		if (tid_kept(o, tids, n_tids, s->tid, s->cls) &&
		    (rc = add_key(&ctx, o, s->stack_id, s->thread_idx, s->cls, ANA_UNWIND_TRUNCATED(s->unwind), 1,
		                  s->weight_ns)) < 0)
			goto out;
	}
	out->lines = calloc(ctx.keys.n ? ctx.keys.n : 1, sizeof(*out->lines));
	if (!out->lines) {
		rc = GTT_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ctx.keys.n; i++) {
		const fold_key *k = &ctx.keys.v[i];
		const ana_stack *st = &m->stacks.v[k->stack_id];
		b.n = 0;
		sb_put(&b, "", 0);
		if (o->threads) {
			const ana_thread *t = &m->threads.v[k->thread_idx];
			char buf[300];
			sb_name(&b, proc_name(m, t->pid, buf, sizeof(buf)));
			snprintf(buf, sizeof(buf), ";%s %u", t->name ? t->name : "?", t->tid);
			sb_put(&b, ";", 1);
			sb_name(&b, buf + 1);
		}
		int any = 0;
		/* where the native stack's root side is missing: at the root, or after the Python
		 * frames that the merge put there in its place */
		uint32_t gap = UINT32_MAX;
		if (k->truncated) {
			gap = 0;
			while (gap < st->n && m->frames.v[st->frames[gap]].kind == ANA_FRAME_PYTHON)
				gap++;
		}
		for (uint32_t f = 0; f <= st->n; f++) {
			if (f == gap) {
				if (b.n)
					sb_put(&b, ";", 1);
				sb_put(&b, ANA_TRUNCATED_FRAME, strlen(ANA_TRUNCATED_FRAME));
			}
			if (f == st->n)
				break;
			const ana_frame *fr = &m->frames.v[st->frames[f]];
			if (o->python_only && fr->kind != ANA_FRAME_PYTHON && fr->kind != ANA_FRAME_ROOT)
				continue;
			if (b.n)
				sb_put(&b, ";", 1);
			sb_name(&b, fr->name);
			any = 1;
		}
		if (!any) {
			if (o->python_only)
				continue; /* no Python frame in this stack: not part of a Python-only view */
			if (b.n)
				sb_put(&b, ";", 1);
			sb_put(&b, "[unknown]", 9);
		}
		if (o->annotate_class)
			sb_name(&b, ana_fold_class_suffix((int)k->cls));
		if (b.oom || !(out->lines[out->n].stack = strdup(b.p))) {
			rc = GTT_ENOMEM;
			goto out;
		}
		out->lines[out->n].count = k->count;
		out->lines[out->n].weight_ns = k->weight_ns;
		out->lines[out->n].cls_mask = k->cls_mask;
		out->n++;
		out->total += k->count;
	}
	sort_merge(out);
out:
	if (rc < 0)
		ana_folded_free(out);
	free(b.p);
	free(tids);
	free(ctx.keys.v);
	ana_idtable_free(&ctx.table);
	return rc;
}

int ana_fold(const ana_model *m, const ana_fold_opts *o, ana_folded *out)
{
	if (o->weight == ANA_WEIGHT_WALL)
		return fold_wall((ana_model *)m, o, out); /* interns Python frame names only */
	return o->weight == ANA_WEIGHT_GPU_TIME ? fold_gpu(m, o, out) : fold_samples(m, o, out);
}

/* ---- folded text in ---- */

typedef struct fold_parser {
	ana_folded *out;
	ana_fold_parse_info *info;
	size_t cap;
	ana_idtable table;           /* stack text -> line: equal lines merge as they are read */
	ANA_VEC(size_t) two_at;      /* per line: where " COUNT1" starts in its stack, SIZE_MAX for none */
	uint64_t base_total;
	int base_over;               /* the first counts' sum passed 2^64 - 1 */
	size_t n_one;                /* lines with one count only */
} fold_parser;

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The count at the end of s[0..*len) after a blank: its value, *len cut before the blanks. */
static int last_count(const char *s, size_t *len, uint64_t *v)
{
	size_t n = *len, d = n;
	while (d > 0 && !is_blank(s[d - 1]))
		d--;
	if (d == n || d == 0 || ana_parse_count(s + d, n - d, v) < 0)
		return -1;
	while (d > 0 && is_blank(s[d - 1]))
		d--;
	*len = d;
	return 0;
}

struct line_key { const char *s; size_t len; };

static int line_eq(uint32_t id, const void *key, void *ctx)
{
	const struct line_key *k = key;
	const char *stack = ((const ana_folded *)ctx)->lines[id].stack;
	return strncmp(stack, k->s, k->len) == 0 && stack[k->len] == 0;
}

static int fold_line(void *ctx, const char *s, size_t len, uint64_t lineno)
{
	fold_parser *P = ctx;
	ana_folded *out = P->out;
	uint64_t count, count1 = 0;
	/* "STACK COUNT": the count is the last field; spaces inside the stack are kept, the blanks
	 * around the count are not (FlameGraph's own reading) */
	while (len > 0 && is_blank(s[len - 1]))
		len--;
	if (len == 0)
		return 0;
	if (last_count(s, &len, &count) < 0 || len == 0) { /* no count, or nothing but a count */
		if (!P->info->n_bad)
			P->info->first_bad_line = (size_t)lineno;
		P->info->n_bad++;
		return 0;
	}
	/* FlameGraph's difference format has two counts, "STACK BEFORE AFTER" (difffolded.pl) */
	size_t stack_len = len, two_at = SIZE_MAX;
	if (last_count(s, &stack_len, &count1) == 0 && stack_len > 0)
		two_at = stack_len;
	else
		P->n_one++;
	if (count == 0 && (two_at == SIZE_MAX || count1 == 0))
		return 0; /* a stack that was never sampled adds nothing */
	if (__builtin_add_overflow(out->total, count, &out->total)) {
		snprintf(P->info->why, sizeof(P->info->why), "counts add up past 2^64 - 1 by line %llu: not sample "
		         "counts these tools can weigh", (unsigned long long)lineno);
		return GTT_EFORMAT;
	}
	if (two_at != SIZE_MAX && __builtin_add_overflow(P->base_total, count1, &P->base_total))
		P->base_over = 1;
	/* memory follows distinct stacks, not lines: a line seen before adds to it */
	struct line_key k = { s, len };
	uint32_t *slot = ana_idtable_slot(&P->table, ana_hash_bytes(s, len, 3), line_eq, &k, out);
	if (!slot)
		return GTT_ENOMEM;
	if (*slot) {
		ana_folded_line *l = &out->lines[*slot - 1];
		l->count += count;          /* fits: at most the total */
		l->base_count += count1;    /* fits unless base_over, which refuses the file */
		return 0;
	}
	if (out->n >= UINT32_MAX - 1 || gt_grow((void **)&out->lines, &P->cap, out->n + 1, sizeof(*out->lines)) < 0)
		return GTT_ENOMEM;
	size_t *at = ana_vec_push(P->two_at);
	char *stack = malloc(len + 1);
	if (!at || !stack) {
		free(stack);
		return GTT_ENOMEM;
	}
	memcpy(stack, s, len);
	stack[len] = 0;
	*at = two_at;
	out->lines[out->n++] = (ana_folded_line){ .stack = stack, .count = count, .base_count = count1 };
	*slot = (uint32_t)out->n;
	P->table.n++;
	return 0;
}

/* Lines of equal stacks merged into the first of them, file order otherwise kept (after the
 * difference format's first counts are cut off, lines that differed only in them are equal). */
static int merge_equal(fold_parser *P)
{
	ana_folded *out = P->out;
	ana_idtable t = { 0 };
	size_t k = 0;
	for (size_t i = 0; i < out->n; i++) {
		ana_folded_line *l = &out->lines[i];
		struct line_key key = { l->stack, strlen(l->stack) };
		uint32_t *slot = ana_idtable_slot(&t, ana_hash_bytes(key.s, key.len, 3), line_eq, &key, out);
		if (!slot) {
			ana_idtable_free(&t);
			return GTT_ENOMEM;
		}
		if (*slot) {
			out->lines[*slot - 1].count += l->count;
			out->lines[*slot - 1].base_count += l->base_count;
			free(l->stack);
			continue;
		}
		out->lines[k] = *l;
		*slot = (uint32_t)++k;
		t.n++;
	}
	for (size_t i = k; i < out->n; i++)
		out->lines[i].stack = NULL;
	out->n = k;
	ana_idtable_free(&t);
	return 0;
}

/* Every line had two counts: the difference format. Else a line that looked like it has a
 * frame name ending in " NUMBER" (kept whole) and its one count. */
static int fold_parse_end(fold_parser *P)
{
	ana_folded *out = P->out;
	if (out->n && P->n_one == 0) {
		if (P->base_over) {
			snprintf(P->info->why, sizeof(P->info->why), "the first counts of the difference format add up "
			         "past 2^64 - 1");
			return GTT_EFORMAT;
		}
		for (size_t i = 0; i < out->n; i++)
			out->lines[i].stack[P->two_at.v[i]] = 0;
		out->two_counts = 1;
		out->base_total = P->base_total;
		return merge_equal(P);
	}
	size_t k = 0;
	for (size_t i = 0; i < out->n; i++) {
		out->lines[i].base_count = 0;
		if (out->lines[i].count)
			out->lines[k++] = out->lines[i];
		else
			free(out->lines[i].stack); /* "STACK N 0": a frame ending in N, never sampled */
	}
	out->n = k;
	return 0;
}

int ana_fold_parse_stream(const void *head, size_t head_len, FILE *rest, ana_folded *out, ana_fold_parse_info *info)
{
	fold_parser P = { .out = out, .info = info };
	int rc = GTT_ENOMEM;
	memset(out, 0, sizeof(*out));
	memset(info, 0, sizeof(*info));
	ana_lines *lr = ana_lines_create(fold_line, &P);
	if (!lr)
		goto out;
	if ((head_len && (rc = ana_lines_feed(lr, head, head_len)) < 0) ||
	    (rest && (rc = ana_lines_read(lr, rest)) < 0) || (rc = ana_lines_finish(lr)) < 0 ||
	    (rc = fold_parse_end(&P)) < 0)
		goto out;
	rc = 0;
out:
	if (rc == GTT_EFORMAT && !info->why[0] && lr)
		snprintf(info->why, sizeof(info->why), "%s", ana_lines_why(lr));
	ana_lines_destroy(lr);
	ana_idtable_free(&P.table);
	free(P.two_at.v);
	if (rc < 0)
		ana_folded_free(out);
	return rc;
}

int ana_fold_parse(FILE *f, ana_folded *out, ana_fold_parse_info *info)
{
	return ana_fold_parse_stream(NULL, 0, f, out, info);
}

int ana_fold_sort_merge(ana_folded *fd)
{
	sort_merge(fd);
	return 0;
}

int ana_fold_write(const ana_folded *fd, FILE *out)
{
	for (size_t i = 0; i < fd->n; i++) {
		int rc = fd->two_counts ? fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", fd->lines[i].stack,
		                                  fd->lines[i].base_count, fd->lines[i].count)
		                        : fprintf(out, "%s %" PRIu64 "\n", fd->lines[i].stack, fd->lines[i].count);
		if (rc < 0)
			return GTT_EIO;
	}
	return 0;
}

void ana_folded_free(ana_folded *fd)
{
	if (!fd)
		return;
	for (size_t i = 0; i < fd->n; i++)
		free(fd->lines[i].stack);
	free(fd->lines);
	memset(fd, 0, sizeof(*fd));
}

/* ---- the command ---- */

static void fold_usage(FILE *out)
{
	fprintf(out,
	        "usage: gt-analyze fold [OPTIONS] TRACE\n\n"
	        "Folded stacks, one \"root;...;leaf COUNT\" line per distinct stack, sorted: the input of\n"
	        "FlameGraph's flamegraph.pl, speedscope and gt-render.\n\n"
	        "  --weight WHAT    samples (default: CPU samples), or gpu-time: the device ns of each\n"
	        "                   kernel, copy and memset under the launch stack of the call that\n"
	        "                   started it (Python + native, then [kernel NAME]); work whose call has\n"
	        "                   no stack, and that no sampled stack stands for, under [no launch stack];\n"
	        "                   or wall: the Python threads' wall time by Python stack, from the Python\n"
	        "                   reader's reads of every thread, running or blocked (counts are reads;\n"
	        "                   py-spy's and Austin's view; --gil held|released by the GIL at the read)\n"
	        "  --threads        start each stack with \"PROCESS PID;THREAD TID\"\n"
	        "  --gil WHICH      only samples of these GIL classes: " ANA_GIL_WORDS "\n"
	        "                   (held = python,native-gil; released = nogil,wait; any = every sample)\n"
	        "  --python-only    keep only Python frames\n"
	        "  --annotate       suffix leaf frames with the sample's class (_[py] _[gil] _[nogil] _[wait])\n"
	        "  --tid LIST       only these threads (comma-separated tids)\n"
	        "  -o FILE          write to FILE instead of stdout\n" ANA_CLI_OPTS_HELP
	        "  -h, --help       this help\n");
}

void ana_fold_load_opts(ana_opts *o, int weight, int each_sample)
{
	o->stream_cuda = weight == ANA_WEIGHT_GPU_TIME ? ANA_STREAM_CUDA_LAUNCHES : ANA_STREAM_CUDA_TABLES;
	if (!each_sample)
		o->stream_samples = 1;
	o->sum_reads = weight == ANA_WEIGHT_WALL;
}

int ana_cmd_fold(int argc, char **argv)
{
	enum { O_THREADS = 1, O_GIL, O_PYONLY, O_TID, O_ANNOTATE, O_WEIGHT };
	static const struct option longopts[] = {
		{ "threads", no_argument, NULL, O_THREADS },
		{ "weight", required_argument, NULL, O_WEIGHT },
		{ "gil", required_argument, NULL, O_GIL },
		{ "python-only", no_argument, NULL, O_PYONLY },
		{ "annotate", no_argument, NULL, O_ANNOTATE },
		{ "tid", required_argument, NULL, O_TID },
		{ "help", no_argument, NULL, 'h' },
		ANA_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	ana_opts o;
	ana_fold_opts fo;
	ana_opts_init(&o);
	ana_fold_opts_init(&fo);
	const char *outpath = NULL;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		if ((rc = ana_cli_opt("fold", c, optarg, &o)) != 0) {
			if (rc < 0)
				return GT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case O_THREADS: fo.threads = 1; break;
		case O_PYONLY: fo.python_only = o.python_only = 1; break;
		case O_ANNOTATE: fo.annotate_class = 1; break;
		case O_WEIGHT:
			if ((fo.weight = ana_fold_weight_parse(optarg)) < 0)
				return ana_cli_usage_error("fold", "--weight wants samples, gpu-time or wall, not '%s'", optarg);
			break;
		case O_GIL:
			if ((fo.gil = ana_gil_parse(optarg)) < -1)
				return ana_cli_usage_error("fold", "--gil wants " ANA_GIL_WORDS ", not '%s'", optarg);
			break;
		case O_TID:
			if (!optarg[0] || strspn(optarg, "0123456789,") != strlen(optarg) || strstr(optarg, ",,") ||
			    optarg[0] == ',' || optarg[strlen(optarg) - 1] == ',' || ana_fold_tids_check(optarg) < 0)
				return ana_cli_usage_error("fold", "--tid wants a comma-separated list of thread ids, not '%s'",
				                           optarg);
			fo.tid_filter = optarg;
			break;
		case 'o': outpath = optarg; break;
		case 'h':
			fold_usage(stdout);
			return GT_EXIT_OK;
		default:
			return ana_cli_usage_error("fold", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ana_cli_usage_error("fold", optind == argc ? "missing TRACE" : "one TRACE only");
	if (fo.weight == ANA_WEIGHT_GPU_TIME && (fo.gil >= 0 || fo.annotate_class))
		return ana_cli_usage_error("fold", "--gil and --annotate select CPU samples; not with --weight gpu-time");
	if (fo.weight == ANA_WEIGHT_WALL && fo.annotate_class)
		return ana_cli_usage_error("fold", "--annotate marks CPU samples' classes; not with --weight wall");
	fo.python_frames = o.python_frames;
	ana_fold_load_opts(&o, fo.weight, 0);
	ana_model *m = ana_cli_load(argv[optind], &o, &rc);
	if (!m)
		return rc;
	ana_folded fd;
	char oerr[512];
	const char *inputs[] = { argv[optind], NULL };
	ana_out *of = ana_out_open(outpath, inputs, oerr, sizeof(oerr));
	if (!of) {
		fprintf(stderr, "gt-analyze: %s\n", oerr);
		ana_model_free(m);
		return GT_EXIT_BROKEN;
	}
	FILE *out = ana_out_stream(of);
	if (ana_fold(m, &fo, &fd) < 0) {
		fprintf(stderr, "gt-analyze: out of memory while folding\n");
		rc = GT_EXIT_BROKEN;
	} else {
		/* an empty answer is an answer, but say so: the options may be what left nothing */
		const ana_gpu_sum *gs = m->cuda_streamed ? m->gpu : NULL;
		const ana_sample_sum *ss = m->samples_streamed ? ana_sample_sum_of(m) : NULL;
		uint64_t n_reads = ss ? ss->n_reads : m->pystacks.n;
		if (fo.weight == ANA_WEIGHT_GPU_TIME) {
			if (gs ? !gs->n_kernels && !gs->n_copies && !gs->n_memsets : !m->kernels.n && !m->memcpys.n && !m->memsets.n)
				fprintf(stderr, "gt-analyze fold: warning: %s has no GPU work (kernels, copies, memsets)\n",
				        argv[optind]);
			else if (fd.total == 0)
				fprintf(stderr, "gt-analyze fold: warning: no GPU work is in the selection (time window, --tid)\n");
		} else if (fo.weight == ANA_WEIGHT_WALL) {
			if (!n_reads)
				fprintf(stderr, "gt-analyze fold: warning: %s has no Python stack reads\n", argv[optind]);
			else if (fd.total == 0)
				fprintf(stderr, "gt-analyze fold: warning: none of the %" PRIu64 " Python stack reads is in the "
				                "selection (time window, --gil, --tid; reads of idle threads have no frame)\n", n_reads);
		} else if (fd.total == 0 && ana_model_n_samples(m))
			fprintf(stderr, "gt-analyze fold: warning: none of the %" PRIu64 " samples is in the selection "
			                "(time window, --gil, --python-only, --threads)\n", ana_model_n_samples(m));
		else if (!ana_model_n_samples(m))
			fprintf(stderr, "gt-analyze fold: warning: %s has no samples\n", argv[optind]);
		if (ana_fold_write(&fd, out) < 0 || fflush(out) != 0) {
			fprintf(stderr, "gt-analyze: writing folded stacks failed: %s\n", strerror(errno));
			rc = GT_EXIT_BROKEN;
		}
		ana_folded_free(&fd);
	}
	if (ana_out_close(of, rc != GT_EXIT_BROKEN, oerr, sizeof(oerr)) < 0) {
		fprintf(stderr, "gt-analyze: %s\n", oerr);
		rc = GT_EXIT_BROKEN;
	}
	ana_model_free(m);
	return rc;
}
