/* input.c — the folded forms of a trace that the flame views draw: per GIL class (flame graph)
 * and in time order per thread (flame chart). Reading the input itself is analyze/source.c's. */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bounds.h"
#include "gtt.h"

static int push_line(ana_folded *out, size_t *cap, const char *stack, size_t len,
                     uint64_t count, uint32_t cls_mask)
{
	if (gt_grow((void **)&out->lines, cap, out->n + 1, sizeof(*out->lines)) < 0)
		return REN_ENOMEM;
	char *s = malloc(len + 1);
	if (!s)
		return REN_ENOMEM;
	memcpy(s, stack, len);
	s[len] = 0;
	out->lines[out->n++] = (ana_folded_line){.stack = s, .count = count, .cls_mask = cls_mask};
	out->total += count;
	return 0;
}

int ren_input_fold_classes(const ana_model *m, const ana_fold_opts *sel, ana_folded *out)
{
	/* one line per (stack, class): the leaf carries the class suffix, which
	 * ren_flame_build() strips, and cls_mask holds that one class */
	ana_fold_opts o = *sel;
	o.annotate_class = 1;
	return ana_fold(m, &o, out) < 0 ? REN_ENOMEM : 0; /* ana_fold fails for memory only */
}

static int tid_selected(const char *filter, uint32_t tid)
{
	if (!filter)
		return 1;
	for (const char *p = filter; *p;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end != p && v == tid)
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
	return 0;
}

static const ana_thread *const *g_sort_threads;

static int cmp_sample_idx(const void *pa, const void *pb)
{
	const ana_sample *a = *(const ana_sample *const *)pa, *b = *(const ana_sample *const *)pb;
	const ana_thread *ta = g_sort_threads[a->thread_idx], *tb = g_sort_threads[b->thread_idx];
	if (ta != tb) {
		if (ta->sampled_ns != tb->sampled_ns)
			return ta->sampled_ns > tb->sampled_ns ? -1 : 1;
		return a->thread_idx < b->thread_idx ? -1 : 1;
	}
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns ? -1 : 1;
	return 0;
}

/* one frame name as folded text has it: ';' separates frames, a newline ends the line */
static size_t put_name(char *dst, const char *name)
{
	size_t n = 0;
	for (const char *p = name ? name : "?"; *p; p++)
		dst[n++] = *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p;
	return n;
}

/* "thread-name tid;frame;...;frame" of one sample into *buf */
static int sample_stack(const ana_model *m, const ana_sample *s, char **buf, size_t *cap)
{
	const ana_thread *t = &m->threads.v[s->thread_idx];
	const char *tname = t->name ? t->name : "?";
	const ana_stack *st = s->stack_id < m->stacks.n ? &m->stacks.v[s->stack_id] : NULL;
	size_t need = strlen(tname) + 40;
	for (uint32_t k = 0; st && k < st->n; k++) {
		const char *nm = m->frames.v[st->frames[k]].name;
		need += strlen(nm ? nm : "?") + 1;
	}
	if (GT_GROW(*buf, *cap, need) < 0)
		return REN_ENOMEM;
	size_t o = put_name(*buf, tname);
	o += (size_t)sprintf(*buf + o, " %u", s->tid);
	for (uint32_t k = 0; st && k < st->n; k++) {
		(*buf)[o++] = ';';
		o += put_name(*buf + o, m->frames.v[st->frames[k]].name);
	}
	if (!st || !st->n)
		o += (size_t)sprintf(*buf + o, ";[unknown]");
	(*buf)[o] = 0;
	return 0;
}

int ren_flamechart_fold(const ana_model *m, const char *tid_filter, int gil, uint64_t from_ns,
                        uint64_t to_ns, ana_folded *out)
{
	uint64_t from = from_ns ? ana_sat_add(m->start_ns, from_ns) : 0, to = ana_sat_add(m->start_ns, to_ns);
	size_t cap = 0, n = 0, bcap = 0;
	int rc = REN_ENOMEM;
	const ana_sample **v = malloc((m->samples.n ? m->samples.n : 1) * sizeof(*v));
	const ana_thread **threads = malloc((m->threads.n ? m->threads.n : 1) * sizeof(*threads));
	char *buf = NULL;
	memset(out, 0, sizeof(*out));
	if (!v || !threads)
		goto out;
	for (size_t i = 0; i < m->threads.n; i++)
		threads[i] = &m->threads.v[i];
	for (size_t i = 0; i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		if (s->thread_idx >= m->threads.n || !tid_selected(tid_filter, s->tid))
			continue;
		if (gil >= 0 && !(gil & (1 << s->cls)))
			continue;
		if (s->time_ns < from || (to_ns && s->time_ns >= to))
			continue;
		v[n++] = s;
	}
	g_sort_threads = threads;
	qsort(v, n, sizeof(*v), cmp_sample_idx);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		uint64_t count = 1;
		while (j < n && v[j]->thread_idx == v[i]->thread_idx && v[j]->stack_id == v[i]->stack_id &&
		       v[j]->cls == v[i]->cls) {
			count++;
			j++;
		}
		if ((rc = sample_stack(m, v[i], &buf, &bcap)) < 0 ||
		    (rc = push_line(out, &cap, buf, strlen(buf), count, 1u << v[i]->cls)) < 0)
			goto out;
		i = j;
	}
	rc = 0;
out:
	free(v);
	free(threads);
	free(buf);
	if (rc < 0)
		ana_folded_free(out);
	return rc;
}
