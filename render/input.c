/* input.c — reads gt-render's input: a .gtt trace through libana (model + fold), or folded
 * stacks from a file or stdin. */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bounds.h"
#include "gtt.h"

static int read_all(int fd, char **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *p = malloc(cap + 1);
	if (!p)
		return GTT_ENOMEM;
	for (;;) {
		if (n == cap) {
			char *q = realloc(p, cap * 2 + 1);
			if (!q) {
				free(p);
				return GTT_ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		ssize_t r = read(fd, p + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(p);
			return GTT_EIO;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	p[n] = 0;
	*buf = p;
	*len = n;
	return 0;
}

static int push_line(ana_folded *out, size_t *cap, const char *stack, size_t len,
                     uint64_t count, uint32_t cls_mask)
{
	if (out->n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		ana_folded_line *v = realloc(out->lines, c * sizeof(*v));
		if (!v)
			return GTT_ENOMEM;
		out->lines = v;
		*cap = c;
	}
	char *s = malloc(len + 1);
	if (!s)
		return GTT_ENOMEM;
	memcpy(s, stack, len);
	s[len] = 0;
	out->lines[out->n++] = (ana_folded_line){.stack = s, .count = count, .cls_mask = cls_mask};
	out->total += count;
	return 0;
}

int ren_fold_parse_mem(const char *buf, size_t len, ana_folded *out, size_t *n_bad,
                       size_t *first_bad_line)
{
	/* one parser for folded text in the toolkit: analyze/fold.c's */
	FILE *f = fmemopen((void *)buf, len, "r");
	if (!f)
		return GTT_ENOMEM;
	int rc = ana_fold_parse(f, out, n_bad, first_bad_line);
	fclose(f);
	return rc;
}

int ren_input_fold_classes(const ana_model *m, const ana_fold_opts *sel, ana_folded *out)
{
	/* one line per (stack, class): the leaf carries the class suffix, which
	 * ren_flame_build() strips, and cls_mask holds that one class */
	ana_fold_opts o = *sel;
	o.annotate_class = 1;
	return ana_fold(m, &o, out);
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
	if (need > *cap) {
		char *p = realloc(*buf, need * 2);
		if (!p)
			return GTT_ENOMEM;
		*buf = p;
		*cap = need * 2;
	}
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
	int rc = GTT_ENOMEM;
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

int ren_input_open(ren_input *in, const char *path, const ana_opts *opts, char *err,
                   size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc, fd = -1;
	memset(in, 0, sizeof(*in));
	int is_stdin = strcmp(path, "-") == 0;
	if (is_stdin) {
		fd = 0;
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return GTT_EIO;
	}
	/* a trace file is handed to the model loader by path, without reading it here */
	if (!is_stdin) {
		char magic[GTT_MAGIC_LEN];
		ssize_t r = pread(fd, magic, sizeof(magic), 0);
		if (r == (ssize_t)sizeof(magic) && memcmp(magic, GTT_MAGIC, GTT_MAGIC_LEN) == 0) {
			close(fd);
			fd = -1;
			goto trace;
		}
	}
	rc = read_all(fd, &buf, &len);
	if (!is_stdin)
		close(fd);
	fd = -1;
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, rc == GTT_EIO ? strerror(errno) : "out of memory");
		return rc;
	}
	if (len == 0) {
		snprintf(err, errlen, "%s: empty input", path);
		free(buf);
		return GTT_EEMPTY;
	}
	if (len >= GTT_MAGIC_LEN && memcmp(buf, GTT_MAGIC, GTT_MAGIC_LEN) == 0) {
		/* a trace on stdin: the loader wants a path */
		char tmpl[] = "/tmp/gt-render.XXXXXX";
		int tfd = mkstemp(tmpl);
		if (tfd < 0 || write(tfd, buf, len) != (ssize_t)len) {
			snprintf(err, errlen, "cannot spool the trace from stdin: %s", strerror(errno));
			if (tfd >= 0) {
				close(tfd);
				unlink(tmpl);
			}
			free(buf);
			return GTT_EIO;
		}
		close(tfd);
		free(buf);
		if (!(in->tmp_path = strdup(tmpl))) {
			unlink(tmpl);
			return GTT_ENOMEM;
		}
		path = in->tmp_path;
		goto trace;
	}
	if (memchr(buf, 0, len)) {
		snprintf(err, errlen, "%s: not a .gtt trace or folded stacks (binary data)", path);
		free(buf);
		return GTT_EFORMAT;
	}
	rc = ren_fold_parse_mem(buf, len, &in->folded, &in->n_bad, &in->first_bad_line);
	free(buf);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (in->folded.n == 0) {
		if (in->n_bad)
			snprintf(err, errlen, "%s: not a .gtt trace or folded stacks (line %zu is not "
			                      "\"frame;frame;... COUNT\")", path, in->first_bad_line);
		else
			snprintf(err, errlen, "%s: no stacks in input", path);
		ana_folded_free(&in->folded);
		return in->n_bad ? GTT_EFORMAT : GTT_EEMPTY;
	}
	return 0;
trace:
	in->model = ana_model_load(path, opts, err, errlen);
	if (!in->model) {
		if (!err[0])
			snprintf(err, errlen, "%s: cannot load the trace", path);
		ren_input_close(in);
		return GTT_ECORRUPT;
	}
	return 0;
}

void ren_input_close(ren_input *in)
{
	if (!in)
		return;
	ana_model_free(in->model);
	in->model = NULL;
	ana_folded_free(&in->folded);
	if (in->tmp_path) {
		unlink(in->tmp_path);
		free(in->tmp_path);
		in->tmp_path = NULL;
	}
}
