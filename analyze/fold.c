/* fold.c — folded stacks from the model (aggregate by interned stack first, build text only
 * for distinct stacks), and the FlameGraph text form in and out. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "model_priv.h"

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
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
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
	const char *comm = NULL;
	for (size_t i = 0; i < m->processes.n; i++)
		if (m->processes.v[i].pid == pid && m->processes.v[i].comm && m->processes.v[i].comm[0])
			comm = m->processes.v[i].comm;
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

int ana_fold(const ana_model *m, const ana_fold_opts *o, ana_folded *out)
{
	int rc = 0;
	fold_ctx ctx = { 0 };
	sbuf b = { 0 };
	uint32_t *tids = NULL;
	size_t n_tids = 0;
	memset(out, 0, sizeof(*out));
	if ((rc = parse_tids(o->tid_filter, &tids, &n_tids)) < 0)
		goto out;
	uint64_t from = o->from_ns ? m->start_ns + o->from_ns : 0;
	uint64_t to = o->to_ns ? m->start_ns + o->to_ns : UINT64_MAX;
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		if (s->time_ns < from || s->time_ns >= to)
			continue;
		if (o->gil >= 0 && !(o->gil & (1 << s->cls)))
			continue;
		if (n_tids) {
			size_t t = 0;
			while (t < n_tids && tids[t] != s->tid)
				t++;
			if (t == n_tids)
				continue;
		}
		fold_key k = { s->stack_id, o->threads ? s->thread_idx : 0, o->annotate_class ? s->cls : 0,
		               ANA_UNWIND_TRUNCATED(s->unwind) && !o->python_only, 0, 0, 0 };
		uint32_t *slot = ana_idtable_slot(&ctx.table, ana_hash_u64(((uint64_t)k.stack_id << 32) ^
		                                                           ((uint64_t)k.thread_idx << 4) ^ k.cls ^
		                                                           (uint64_t)k.truncated << 3),
		                                  key_eq, &k, &ctx);
		if (!slot) {
			rc = GTT_ENOMEM;
			goto out;
		}
		if (!*slot) {
			fold_key *e = ana_vec_push(ctx.keys);
			if (!e) {
				rc = GTT_ENOMEM;
				goto out;
			}
			*e = k;
			*slot = (uint32_t)ctx.keys.n;
			ctx.table.n++;
		}
		fold_key *e = &ctx.keys.v[*slot - 1];
		e->count++;
		e->weight_ns += s->weight_ns;
		e->cls_mask |= 1u << s->cls;
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

int ana_fold_parse(FILE *f, ana_folded *out, size_t *bad, size_t *first_bad_line)
{
	int rc = 0;
	char *line = NULL;
	size_t cap = 0, lcap = 0, lineno = 0;
	ssize_t len;
	memset(out, 0, sizeof(*out));
	*bad = 0;
	*first_bad_line = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		/* "STACK COUNT": the count is the last field; spaces inside the stack are kept, the
		 * blanks around the count are not (FlameGraph's own reading) */
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
		                   line[len - 1] == '\t'))
			line[--len] = 0;
		if (len == 0)
			continue;
		char *sp = line + len;
		while (sp > line && sp[-1] != ' ' && sp[-1] != '\t')
			sp--;
		char *num = sp, *end = NULL;
		while (sp > line && (sp[-1] == ' ' || sp[-1] == '\t'))
			sp--;
		unsigned long long count = 0;
		if (sp > line && *num >= '0' && *num <= '9') {
			errno = 0;
			count = strtoull(num, &end, 10);
		}
		if (sp == line || !end || *end || errno) {
			if (!*bad)
				*first_bad_line = lineno;
			(*bad)++;
			continue;
		}
		if (count == 0)
			continue; /* a stack that was never sampled adds nothing */
		*sp = 0;
		if (out->n == lcap) {
			lcap = lcap ? lcap * 2 : 256;
			ana_folded_line *v = realloc(out->lines, lcap * sizeof(*v));
			if (!v) {
				rc = GTT_ENOMEM;
				goto out;
			}
			out->lines = v;
		}
		ana_folded_line *l = &out->lines[out->n];
		memset(l, 0, sizeof(*l));
		if (!(l->stack = strdup(line))) {
			rc = GTT_ENOMEM;
			goto out;
		}
		l->count = count;
		out->n++;
		out->total += count;
	}
	if (ferror(f))
		rc = GTT_EIO;
out:
	free(line);
	if (rc < 0)
		ana_folded_free(out);
	return rc;
}

int ana_fold_sort_merge(ana_folded *fd)
{
	sort_merge(fd);
	return 0;
}

int ana_fold_write(const ana_folded *fd, FILE *out)
{
	for (size_t i = 0; i < fd->n; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", fd->lines[i].stack, fd->lines[i].count) < 0)
			return GTT_EIO;
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
