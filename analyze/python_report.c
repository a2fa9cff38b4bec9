/* python_report.c — the report's Python section (per-thread GIL figures, top functions per
 * class) and the warning that names processes with samples but no Python reads (python.h). */
#include "gt_util.h"
#include "python.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "bounds.h"
#include "model_priv.h"
#include "sample_sum.h"

#define TOP_PER_CLASS 8

typedef struct fn_count { uint32_t key; uint32_t key2; uint64_t n; } fn_count;

/* A frame whose name already says where it is (ana_python_frame_name added the place). */
static int named_with_place(const ana_frame *f)
{
	size_t n = f->name ? strlen(f->name) : 0;
	return n > 3 && f->name[n - 1] == ')' && strstr(f->name, " (") != NULL;
}

static int cmp_fn(const void *a, const void *b)
{
	const fn_count *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->key2 < y->key2 ? -1 : x->key2 > y->key2;
}

static int cmp_fn_n(const void *a, const void *b)
{
	const fn_count *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return cmp_fn(a, b);
}

/* Innermost Python frame and leaf native frame of a stack (ANA_NO_ID when none). */
static void leaf_frames(const ana_model *m, const ana_stack *st, uint32_t *py, uint32_t *nat)
{
	uint32_t i;

	*py = *nat = ANA_NO_ID;
	for (i = st->n; i > 0; i--) {
		const ana_frame *f = &m->frames.v[st->frames[i - 1]];
		if (f->kind == ANA_FRAME_PYTHON && *py == ANA_NO_ID)
			*py = st->frames[i - 1];
		if ((f->kind == ANA_FRAME_NATIVE || f->kind == ANA_FRAME_KERNEL) && *nat == ANA_NO_ID)
			*nat = st->frames[i - 1];
	}
}

static const char *base_name(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;
	return b ? b + 1 : p ? p : "?";
}

static void print_frame(FILE *out, const ana_model *m, uint32_t id)
{
	const ana_frame *f;

	if (id == ANA_NO_ID) {
		fprintf(out, "-");
		return;
	}
	f = &m->frames.v[id];
	if (f->kind == ANA_FRAME_PYTHON && named_with_place(f))
		fprintf(out, "%s", f->name);
	else if (f->kind == ANA_FRAME_PYTHON)
		fprintf(out, "%s (%s:%d)", f->name, base_name(f->file), f->line);
	else
		fprintf(out, "%s [%s]", f->name, base_name(f->module));
}

/* Top functions of one class: the innermost Python function for python+GIL, else the native
 * leaf with the Python function it runs under. */
static void print_top_class(FILE *out, const ana_model *m, const ana_sample_sum *ss, int cls)
{
	fn_count *v = malloc((ss->rows.n ? ss->rows.n : 1) * sizeof(*v));
	size_t n = 0, i, j, k = 0;
	uint64_t total = 0;

	if (!v)
		return;
	for (i = 0; i < ss->rows.n; i++) {
		const ana_ssum_row *r = &ss->rows.v[i];
		uint32_t py, nat;
		if (r->cls != (uint32_t)cls)
			continue;
		leaf_frames(m, &m->stacks.v[r->stack_id], &py, &nat);
		v[n++] = cls == ANA_CLASS_PY_GIL && py != ANA_NO_ID ? (fn_count){ py, ANA_NO_ID, r->n } : (fn_count){ nat, py, r->n };
		total += r->n;
	}
	qsort(v, n, sizeof(*v), cmp_fn);
	for (i = 0; i < n; i = j) {
		uint64_t c = 0;
		for (j = i; j < n && v[j].key == v[i].key && v[j].key2 == v[i].key2; j++)
			c += v[j].n;
		v[k++] = (fn_count){ v[i].key, v[i].key2, c };
	}
	qsort(v, k, sizeof(*v), cmp_fn_n);
	if (total)
		fprintf(out, "  %s (%" PRIu64 " samples):\n", ana_class_name(cls), total);
	for (i = 0; i < k && i < TOP_PER_CLASS; i++) {
		fprintf(out, "    %5.1f%%  ", 100.0 * (double)v[i].n / (double)total);
		print_frame(out, m, v[i].key);
		if (cls != ANA_CLASS_PY_GIL && v[i].key2 != ANA_NO_ID) {
			fprintf(out, "  <- ");
			print_frame(out, m, v[i].key2);
		}
		fprintf(out, "\n");
	}
	free(v);
}

/* ---- processes that look like Python but were not read ---- */

static int looks_like_python(const char *s)
{
	const char *b;

	if (!s)
		return 0;
	b = strrchr(s, '/');
	b = b ? b + 1 : s;
	return strncmp(b, "python", 6) == 0 || strstr(s, "libpython3") != NULL;
}

/* The comm of pid (process records, else its main thread's OS name), NULL when unknown. */
static const char *proc_name(const ana_model *m, uint32_t pid)
{
	const ana_thread *t = ana_thread_find(m, pid, pid);
	size_t i;

	for (i = m->processes.n; i-- > 0;)
		if (m->processes.v[i].pid == pid && m->processes.v[i].comm && m->processes.v[i].comm[0])
			return m->processes.v[i].comm;
	return t ? (t->comm ? t->comm : t->name) : NULL;
}

/* Why the recorder did not read pid: its Python reader's note for pid, if any. */
static const char *reader_note(const ana_model *m, uint32_t pid)
{
	size_t i;

	for (i = 0; i < m->health.n; i++) {
		const gtt_health *h = &m->health.v[i];
		if (h->kind == GTT_HEALTH_NOTE && h->source == GTT_SRC_PYSTACK && h->pid == pid && h->text &&
		    strncmp(h->text, "python ", 7) != 0)
			return h->text;
	}
	return NULL;
}

/* Does pid look like Python as it ran last: its command, its threads' names, or a mapping of
 * a python executable or libpython, since its last exec (before an exec, a child of a Python
 * process is a copy of it: a subprocess that runs /bin/true is not Python). */
static int proc_is_pythonish(const ana_model *m, uint32_t pid)
{
	uint64_t exec_ns = 0;
	size_t i;

	for (i = 0; i < m->processes.n; i++)
		if (m->processes.v[i].pid == pid && m->processes.v[i].event == GTT_PROC_EXEC &&
		    m->processes.v[i].time_ns > exec_ns)
			exec_ns = m->processes.v[i].time_ns;
	if (looks_like_python(proc_name(m, pid)))
		return 1;
	for (i = 0; i < m->threads.n; i++)
		if (m->threads.v[i].pid == pid && looks_like_python(m->threads.v[i].comm))
			return 1;
	for (i = 0; i < m->mappings.n; i++)
		if (m->mappings.v[i].m.pid == pid && m->mappings.v[i].m.time_ns >= exec_ns &&
		    looks_like_python(m->mappings.v[i].m.path))
			return 1;
	return 0;
}

/* Each process with samples that looks like Python and has no Python read: one line to
 * emit(ctx, line) (at most 8, then a count). */
static void unread_procs(const ana_model *m, void (*emit)(void *ctx, const char *line), void *ctx)
{
	uint64_t total = ana_model_n_samples(m) ? ana_model_n_samples(m) : 1, small = 0;
	size_t i, k, n_warned = 0, n_small = 0;
	char line[640];

	for (i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		uint64_t n = 0;
		int read = 0;
		if (i > 0 && m->threads.v[i - 1].pid == t->pid)
			continue; /* one line per process: its first thread (threads are sorted by pid) */
		for (k = i; k < m->threads.n && m->threads.v[k].pid == t->pid; k++) {
			n += m->threads.v[k].n_samples;
			read |= m->threads.v[k].is_python;
		}
		/* a blind spot that matters: 1% of the samples or 20 (a helper process that ran for a
		 * moment is counted below, not named) */
		if (!n || read || !proc_is_pythonish(m, t->pid))
			continue;
		if (n * 100 < total && n < 20) {
			n_small++;
			small += n;
			continue;
		}
		if (n_warned++ >= 8)
			continue;
		{
			const char *why = reader_note(m, t->pid), *name = proc_name(m, t->pid);
			const char *py = ana_meta_get(m, "python");
			snprintf(line, sizeof(line), "pid %u (%.80s): %" PRIu64 " samples (%.1f%%) but no Python stacks: %s",
			         t->pid, name ? name : "?", n, 100.0 * (double)n / (double)total,
			         why ? why : py && strcmp(py, "off") == 0 ? "recorded with --python=off"
			                 : "its Python was not read (a recorder older than child-process reading, "
			                   "or the process ran too briefly to be looked at)");
			emit(ctx, line);
		}
	}
	if (n_warned > 8) {
		snprintf(line, sizeof(line), "%zu more Python-looking processes with samples and no Python stacks",
		         n_warned - 8);
		emit(ctx, line);
	}
	if (n_small) {
		snprintf(line, sizeof(line), "%zu short-lived Python-looking process%s without Python stacks: %" PRIu64
		         " samples (%.1f%%)", n_small, n_small == 1 ? "" : "es", small, 100.0 * (double)small / (double)total);
		emit(ctx, line);
	}
}

static void warn_line(void *ctx, const char *line)
{
	ana_warn(ctx, "%s", line);
}

static void print_line(void *ctx, const char *line)
{
	fprintf(ctx, "  WARNING: %s\n", line);
}

void ana_python_unread_warn(ana_model *m)
{
	unread_procs(m, warn_line, m);
}

void ana_python_report(const ana_model *m, FILE *out)
{
	const char *ver, *interp;
	uint64_t n_py = 0, cls_total[ANA_CLASS_COUNT] = { 0 };
	uint32_t pids[64];
	size_t n_pids = 0, i, k;
	int c;
	const ana_sample_sum *ss = m ? ana_sample_sum_of(m) : NULL;

	if (!m || !ss || (ss->n_reads == 0 && ss->n_gil == 0)) {
		/* nothing was read: say so only where a process looks like Python */
		size_t before = 0;
		if (m)
			for (i = 0; i < m->threads.n; i++)
				before += m->threads.v[i].n_samples && proc_is_pythonish(m, m->threads.v[i].pid);
		if (before) {
			fprintf(out, "\nPython and the GIL: no Python stacks in this trace\n");
			unread_procs(m, print_line, out);
		}
		return;
	}
	ver = ana_meta_get(m, "python_version");
	interp = ana_meta_get(m, "python_interpreter");
	fprintf(out, "\nPython and the GIL (CPython %s%s%s; %" PRIu64 " stack reads)\n", ver ? ver : "?",
	        interp ? ", " : "", interp ? interp : "", ss->n_reads);
	for (i = 0; i < ss->n_py_pids; i++)
		pids[n_pids++] = ss->py_pids[i];
	for (k = 0; k < n_pids; k++) {
		uint64_t span, held, hand, sw;
		int have_sw;
		ana_ssum_gil_figures(ss, pids[k], m->end_ns, &span, &held, &hand, &sw, &have_sw);
		if (!span) {
			fprintf(out, "  pid %u: no GIL records\n", pids[k]);
			continue;
		}
		fprintf(out, "  pid %u: GIL held %.1f%% of %.2f s; %.1f hand-offs/s seen by the poll", pids[k],
		        100.0 * (double)held / (double)span, gt_ns_to_s(span), (double)hand * (double)GT_NS_PER_SEC / (double)span);
		if (have_sw)
			fprintf(out, ", %.1f switches/s by the interpreter's counter", (double)sw * (double)GT_NS_PER_SEC / (double)span);
		fprintf(out, "\n");
	}
	unread_procs(m, print_line, out);
	fprintf(out, "  %7s %7s  %-16s %8s %11s %11s %11s %11s %9s\n", "PID", "TID", "NAME", "SAMPLES",
	        "python+GIL", "native+GIL", "no GIL", "waiting", "GIL-HELD");
	for (i = 0; i < m->threads.n; i++) {
		const ana_thread *t = &m->threads.v[i];
		uint64_t n = 0;
		if (!t->is_python)
			continue;
		for (c = 1; c < ANA_CLASS_COUNT; c++) {
			n += t->n_class[c];
			cls_total[c] += t->n_class[c];
		}
		n_py += n;
		fprintf(out, "  %7u %7u  %-16s %8" PRIu64, t->pid, t->tid, t->name ? t->name : "?", n);
		for (c = 1; c < ANA_CLASS_COUNT; c++)
			fprintf(out, " %10.1f%%", n ? 100.0 * (double)t->n_class[c] / (double)n : 0.0);
		fprintf(out, " %8.1f%%\n", n ? 100.0 * (double)(t->n_class[ANA_CLASS_PY_GIL] + t->n_class[ANA_CLASS_NATIVE_GIL]) / (double)n : 0.0);
	}
	if (n_py) {
		fprintf(out, "  %7s %7s  %-16s %8" PRIu64, "", "", "(all)", n_py);
		for (c = 1; c < ANA_CLASS_COUNT; c++)
			fprintf(out, " %10.1f%%", 100.0 * (double)cls_total[c] / (double)n_py);
		fprintf(out, " %8.1f%%\n", 100.0 * (double)(cls_total[ANA_CLASS_PY_GIL] + cls_total[ANA_CLASS_NATIVE_GIL]) / (double)n_py);
		fprintf(out, "  Top functions per class:\n");
		for (c = 1; c < ANA_CLASS_COUNT; c++)
			print_top_class(out, m, ss, c);
	}
}
