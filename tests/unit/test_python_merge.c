/* test_python_merge.c — analyze/python.c on a hand-built model: splicing Python frames at the
 * eval-loop frames, nearest-read rule, --python-only, the GIL classes of samples (with the
 * windows GIL records give since format 1.1), --python-frames names, Python thread names, and
 * the warning for a Python process without Python reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "python.h"
#include "testhelp.h"

#define PID 100
#define T_NATIVE 101
#define T_PY 102
#define T_OTHER 103
#define MS 1000000ull

static uint32_t fr(ana_model *m, const char *name, const char *module)
{
	ana_frame f = { .name = name, .module = module, .kind = ANA_FRAME_NATIVE };
	return ana_frame_intern(m, &f);
}

static void add_code(ana_model *m, uint64_t id, const char *name, const char *qual)
{
	ana_pycode *c = ana_vec_push(m->pycodes);
	c->pid = PID;
	c->code_id = id;
	c->first_line = 1;
	c->name = strdup(name);
	c->qualname = strdup(qual);
	c->filename = strdup("/app/work.py");
}

/* A Python read: frames given leaf first as (code, line, flags) triples. */
static void add_read(ana_model *m, uint32_t tid, uint64_t t, uint32_t flags, int n, const uint64_t *f3)
{
	ana_pystack *s = ana_vec_push(m->pystacks);
	int i;

	s->time_ns = t;
	s->pid = PID;
	s->tid = tid;
	s->flags = flags;
	s->n_frames = (uint32_t)n;
	gtt_py_frame f[64];
	for (i = 0; i < n && i < 64; i++)
		f[i] = (gtt_py_frame){ f3[3 * i], (int32_t)f3[3 * i + 1], (uint32_t)f3[3 * i + 2] };
	s->frames = ana_pyframes_intern(m, f, (uint32_t)i);
}

static gtt_gil *add_gil(ana_model *m, uint64_t t, uint32_t holder, uint32_t locked)
{
	gtt_gil *g = ana_vec_push(m->gil);
	g->time_ns = t;
	g->pid = PID;
	g->holder_tid = holder;
	g->locked = locked;
	return g;
}

static size_t add_sample(ana_model *m, uint32_t tid, uint64_t t, const uint32_t *frames, uint32_t n, int unwind_ok)
{
	ana_sample *s = ana_vec_push(m->samples);
	s->time_ns = t;
	s->weight_ns = 10 * MS;
	s->pid = PID;
	s->tid = tid;
	s->stack_id = ana_stack_intern(m, frames, n);
	s->unwind_ok = (uint8_t)unwind_ok;
	s->cls = ANA_CLASS_NONPY;
	return m->samples.n - 1;
}

/* "a;b;c" of a sample's stack, root first. */
static const char *stack_str(const ana_model *m, size_t si)
{
	static char buf[1024];
	const ana_stack *st = &m->stacks.v[m->samples.v[si].stack_id];
	size_t n = 0;
	uint32_t i;

	buf[0] = 0;
	for (i = 0; i < st->n && n < sizeof(buf) - 64; i++) {
		const ana_frame *f = &m->frames.v[st->frames[i]];
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? ";" : "", f->name);
		if (f->kind == ANA_FRAME_PYTHON)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, ":%d", f->line);
	}
	return buf;
}

static ana_model *build(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	uint32_t start, main_, runmain, eval, call, zcomp, deflate, takegil, cond, listsort, npsum, libc_memcpy;
	ana_thread *t;
	gtt_ticks *tk;
	int i;
	/* leaf first: native_work (entry) <- run <- <module> (entry) */
	const uint64_t py_native[] = { 3, 44, GTT_PYFRAME_ENTRY, 2, 20, 0, 1, 5, GTT_PYFRAME_ENTRY };
	const uint64_t py_loop[] = { 4, 24, GTT_PYFRAME_ENTRY, 2, 21, 0, 1, 5, GTT_PYFRAME_ENTRY };

	m->path = strdup("hand-built");
	start = fr(m, "_start", "python3.12");
	main_ = fr(m, "main", "python3.12");
	runmain = fr(m, "Py_RunMain", "libpython3.12.so.1.0");
	eval = fr(m, "_PyEval_EvalFrameDefault", "libpython3.12.so.1.0");
	call = fr(m, "PyObject_Vectorcall", "libpython3.12.so.1.0");
	zcomp = fr(m, "zlib_compress", "zlib.cpython-312-x86_64-linux-gnu.so");
	deflate = fr(m, "deflate", "libz.so.1");
	takegil = fr(m, "take_gil", "libpython3.12.so.1.0");
	cond = fr(m, "pthread_cond_timedwait", "libc.so.6");
	listsort = fr(m, "list_sort_impl", "libpython3.12.so.1.0");
	npsum = fr(m, "npy_sum", "_multiarray_umath.so");
	libc_memcpy = fr(m, "memcpy", "libc.so.6");
	add_code(m, 1, "<module>", "<module>");
	add_code(m, 2, "run", "Worker.run");
	add_code(m, 3, "native_work", "native_work");
	add_code(m, 4, "loop", "loop");
	tk = ana_vec_push(m->ticks);
	tk->source = GTT_SRC_PYSTACK;
	tk->flags = GTT_TICKS_WHOLE;
	tk->period_ns = 10 * MS;
	/* reads every 10 ms from 0 to 100 ms, except none between 200 and 400 ms */
	for (i = 0; i <= 10; i++) {
		add_read(m, T_NATIVE, (uint64_t)i * 10 * MS, 0, 3, py_native);
		add_read(m, T_PY, (uint64_t)i * 10 * MS + MS, 0, 3, py_loop);
	}
	add_read(m, T_PY, 400 * MS, GTT_PYSTACK_HOLDS_GIL, 3, py_loop);
	add_gil(m, 0, T_PY, 1);
	add_gil(m, 50 * MS, T_NATIVE, 1);
	add_gil(m, 60 * MS, 0, 0);
	add_gil(m, 70 * MS, T_PY, 1);
	{
		uint32_t s0[] = { start, main_, runmain, eval, call, eval, zcomp, deflate };
		uint32_t s1[] = { start, main_, runmain, eval, call, eval, zcomp, deflate };
		uint32_t s2[] = { start, main_, runmain, eval, call, eval, call, takegil, cond };
		uint32_t s3[] = { start, main_, runmain, eval, call, eval };
		uint32_t s4[] = { start, main_, runmain, eval, call, eval, listsort, libc_memcpy };
		uint32_t s5[] = { start, main_, runmain, eval, call, eval, npsum };
		uint32_t s6[] = { zcomp, deflate };
		uint32_t s7[] = { start, main_, deflate };
		add_sample(m, T_NATIVE, 12 * MS, s0, 8, 1);   /* 0: GIL with T_PY: native, no GIL */
		add_sample(m, T_NATIVE, 55 * MS, s1, 8, 1);   /* 1: holds the GIL in zlib: native+GIL */
		add_sample(m, T_PY, 52 * MS, s2, 9, 1);       /* 2: take_gil: waiting */
		add_sample(m, T_PY, 80 * MS, s3, 6, 1);       /* 3: python+GIL */
		add_sample(m, T_PY, 81 * MS, s4, 8, 1);       /* 4: list sort in libpython (+libc): python+GIL */
		add_sample(m, T_PY, 82 * MS, s5, 7, 1);       /* 5: numpy holding the GIL: native+GIL */
		add_sample(m, T_NATIVE, 31 * MS, s6, 2, 0);   /* 6: unwinding stopped early: Python on top */
		add_sample(m, T_OTHER, 33 * MS, s7, 3, 1);    /* 7: not a Python thread */
		add_sample(m, T_PY, 300 * MS, s3, 6, 1);      /* 8: no read within 10 ms */
		add_sample(m, T_PY, 69 * MS, s3, 6, 1);       /* 9: bytecode 1 ms before the poll saw T_PY take it */
		add_sample(m, T_PY, 65 * MS, s3, 6, 1);       /* 10: bytecode while the records say free */
		add_sample(m, T_PY, 69 * MS, s5, 7, 1);       /* 11: extension code in that window */
	}
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = T_NATIVE, .is_python = 1 };
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = T_PY, .is_python = 1 };
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = T_OTHER };
	m->end_ns = 400 * MS;
	return m;
}

/* Thread names from py_thread records, and the one naming function of Python frames. */
static void names(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	ana_pythread *p;
	ana_thread *t;
	char buf[256];

	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = PID, .name = strdup("python3") };
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = T_PY, .name = strdup("python3") };
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = PID, .tid = T_OTHER, .name = strdup("drafter-0-long-") };
	p = ana_vec_push(m->pythreads);
	*p = (ana_pythread){ 1, PID, T_PY, strdup("target-1") };
	p = ana_vec_push(m->pythreads);
	*p = (ana_pythread){ 2, PID, T_PY, strdup("target-1b") };
	p = ana_vec_push(m->pythreads);
	*p = (ana_pythread){ 3, PID, T_OTHER, strdup("drafter-0-long-name") };
	th_check(ana_thread_names(m) == 0, "thread names");
	th_check(!strcmp(m->threads.v[0].name, "python3") && !m->threads.v[0].py_name, "no Python name: the OS name");
	th_check(!strcmp(m->threads.v[1].name, "target-1b (python3)") && !strcmp(m->threads.v[1].comm, "python3"),
	         "the last Python name, with the OS name: %s", m->threads.v[1].name);
	th_check(!strcmp(m->threads.v[2].name, "drafter-0-long-"),
	         "an OS name that is the Python name cut to 15 bytes adds nothing: %s", m->threads.v[2].name);
	ana_model_free(m);

	th_check(!strcmp(ana_python_frame_name(ANA_PYFRAMES_AUTO, "run", "/a/b.py", 3, buf, sizeof(buf)), "run"),
	         "a plain name stays");
	th_check(!strcmp(ana_python_frame_name(ANA_PYFRAMES_AUTO, "<module>",
	                                       "/usr/lib/python3/dist-packages/torch/nn/__init__.py", 12, buf, sizeof(buf)),
	                 "<module> (torch/nn/__init__.py:12)"), "<module> under dist-packages: %s", buf);
	th_check(!strcmp(ana_python_frame_name(ANA_PYFRAMES_AUTO, "f.<locals>.<lambda>",
	                                       "/root/.pyenv/versions/3.12.1/lib/python3.12/json/decoder.py", 7, buf,
	                                       sizeof(buf)),
	                 "f.<locals>.<lambda> (json/decoder.py:7)"), "a lambda in the stdlib: %s", buf);
	th_check(!strcmp(ana_python_frame_name(ANA_PYFRAMES_AUTO, "main.<locals>.worker", "/a/b.py", 3, buf, sizeof(buf)),
	                 "main.<locals>.worker"), "a nested function is not ambiguous");
	th_check(!strcmp(ana_python_frame_name(ANA_PYFRAMES_AUTO, "<module>", "/srv/app/__main__.py", 0, buf, sizeof(buf)),
	                 "<module> (app/__main__.py)"), "__main__.py keeps its directory, no line: %s", buf);
}

/* A process that looks like Python (its threads are python3.12) with samples and no Python
 * read gets a warning naming it; the recorder's reason when it left one. */
static void unread(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	ana_thread *t;
	gtt_health *h;
	char *out = NULL;
	size_t n, out_len = 0;
	const char *const *w;
	FILE *f;
	uint32_t fid = fr(m, "spin", "python3.12");

	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = 200, .tid = 200, .name = strdup("python3.12"), .comm = strdup("python3.12"), .n_samples = 3 };
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = 300, .tid = 300, .name = strdup("gcc"), .comm = strdup("gcc"), .n_samples = 1 };
	for (int i = 0; i < 3; i++)
		add_sample(m, 200, (uint64_t)i * MS, &fid, 1, 1);
	add_sample(m, 300, 0, &fid, 1, 1);
	ana_python_unread_warn(m);
	w = ana_model_warnings(m, &n);
	th_check(n == 1 && strstr(w[0], "pid 200 (python3.12): 3 samples (75.0%) but no Python stacks"),
	         "warning names the Python process, not gcc: %s", n ? w[0] : "(none)");
	ana_model_free(m);

	m = calloc(1, sizeof(*m));
	fid = fr(m, "spin", "python3.9");
	t = ana_vec_push(m->threads);
	*t = (ana_thread){ .pid = 200, .tid = 200, .name = strdup("python3.9"), .comm = strdup("python3.9"), .n_samples = 1 };
	add_sample(m, 200, 0, &fid, 1, 1);
	h = ana_vec_push(m->health);
	*h = (gtt_health){ .kind = GTT_HEALTH_NOTE, .source = GTT_SRC_PYSTACK, .pid = 200,
	                   .text = ana_intern_str(m, "CPython 3.9 is not supported (3.10 to 3.13 are): CPU samples only (/x/python3.9)") };
	f = open_memstream(&out, &out_len);
	ana_python_report(m, f);
	fclose(f);
	th_check(out && strstr(out, "WARNING: pid 200 (python3.9): 1 samples (100.0%) but no Python stacks: CPython 3.9 is not supported"),
	         "report: the recorder's reason: %s", out ? out : "");
	free(out);
	ana_model_free(m);
}

/* A GIL record believed until the next one: unless a later read of the thread's stack that read
 * the GIL too (GTT_PYSTACK_GIL_READ) saw otherwise, as when a GIL poll starved of CPU missed the
 * release. The records say T_NATIVE holds the GIL from 50 to 60 ms. */
static void stale_gil(void)
{
	ana_model *m = build();
	ana_opts o;
	const uint64_t py_native[] = { 3, 44, GTT_PYFRAME_ENTRY, 2, 20, 0, 1, 5, GTT_PYFRAME_ENTRY };
	const ana_stack *st = &m->stacks.v[m->samples.v[1].stack_id]; /* zlib under the eval loop */
	uint32_t zlib[16];
	uint32_t n = st->n;
	memcpy(zlib, st->frames, n * sizeof(uint32_t));

	add_read(m, T_NATIVE, 52 * MS, GTT_PYSTACK_GIL_READ | GTT_PYSTACK_HOLDS_GIL, 3, py_native);
	add_read(m, T_NATIVE, 56 * MS, GTT_PYSTACK_GIL_READ, 3, py_native); /* released: unseen by the poll */
	add_read(m, T_NATIVE, 58 * MS, 0, 3, py_native);                    /* no GIL read: says nothing */
	size_t agree = add_sample(m, T_NATIVE, 54 * MS, zlib, n, 1);
	size_t stale = add_sample(m, T_NATIVE, 57 * MS, zlib, n, 1);
	size_t later = add_sample(m, T_NATIVE, 59 * MS, zlib, n, 1);
	ana_opts_init(&o);
	th_check(ana_python_merge(m, &o) == 0, "stale GIL: merge runs");
	th_check(m->samples.v[agree].cls == ANA_CLASS_NATIVE_GIL, "a read after the record that agrees: held (%s)",
	         ana_class_name(m->samples.v[agree].cls));
	th_check(m->samples.v[stale].cls == ANA_CLASS_NATIVE_NOGIL,
	         "a read after the record saw the GIL released: not held (%s)", ana_class_name(m->samples.v[stale].cls));
	th_check(m->samples.v[later].cls == ANA_CLASS_NATIVE_NOGIL,
	         "a read without a GIL read in between does not hide the newer observation (%s)",
	         ana_class_name(m->samples.v[later].cls));
	th_check(m->samples.v[1].cls == ANA_CLASS_NATIVE_GIL, "the 55 ms sample: the 52 ms read agrees, held (%s)",
	         ana_class_name(m->samples.v[1].cls));
	ana_model_free(m);

	/* the same reads without GTT_PYSTACK_GIL_READ (traces before it existed): the records rule */
	m = build();
	add_read(m, T_NATIVE, 56 * MS, 0, 3, py_native);
	stale = add_sample(m, T_NATIVE, 57 * MS, zlib, n, 1);
	th_check(ana_python_merge(m, &o) == 0 && m->samples.v[stale].cls == ANA_CLASS_NATIVE_GIL,
	         "no GIL read with the stack: the record holds (%s)", ana_class_name(m->samples.v[stale].cls));
	ana_model_free(m);
}

int main(void)
{
	ana_model *m = build();
	ana_opts o;
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;

	ana_opts_init(&o);
	th_check(ana_python_merge(m, &o) == 0, "merge runs");
	th_check(!strcmp(stack_str(m, 0), "_start;main;Py_RunMain;<module> (work.py:5):5;Worker.run:20;PyObject_Vectorcall;"
	                                 "native_work:44;zlib_compress;deflate"),
	         "segments go to their eval frames, root first: %s", stack_str(m, 0));
	th_check(m->samples.v[0].cls == ANA_CLASS_NATIVE_NOGIL, "zlib while another thread holds the GIL: %s",
	         ana_class_name(m->samples.v[0].cls));
	th_check(m->samples.v[1].cls == ANA_CLASS_NATIVE_GIL, "zlib holding the GIL: %s", ana_class_name(m->samples.v[1].cls));
	th_check(m->samples.v[2].cls == ANA_CLASS_WAIT_GIL, "take_gil on the stack: %s", ana_class_name(m->samples.v[2].cls));
	th_check(m->samples.v[3].cls == ANA_CLASS_PY_GIL, "eval loop holding the GIL: %s", ana_class_name(m->samples.v[3].cls));
	th_check(!strcmp(stack_str(m, 3), "_start;main;Py_RunMain;<module> (work.py:5):5;Worker.run:21;PyObject_Vectorcall;loop:24"),
	         "nearest read of the right thread (the 81 ms read): %s", stack_str(m, 3));
	th_check(m->samples.v[4].cls == ANA_CLASS_PY_GIL, "interpreter + libc code under the eval loop: %s",
	         ana_class_name(m->samples.v[4].cls));
	th_check(m->samples.v[5].cls == ANA_CLASS_NATIVE_GIL, "extension code holding the GIL: %s",
	         ana_class_name(m->samples.v[5].cls));
	th_check(!strcmp(stack_str(m, 6), "<module> (work.py:5):5;Worker.run:20;native_work:44;zlib_compress;deflate"),
	         "truncated native stack: Python frames on the root side: %s", stack_str(m, 6));
	th_check(m->samples.v[7].cls == ANA_CLASS_NONPY && !strcmp(stack_str(m, 7), "_start;main;deflate"),
	         "thread never read: not python, stack untouched");
	th_check(!strcmp(stack_str(m, 8), "_start;main;Py_RunMain;_PyEval_EvalFrameDefault;PyObject_Vectorcall;_PyEval_EvalFrameDefault"),
	         "no read within one period: native stack kept: %s", stack_str(m, 8));
	th_check(m->samples.v[9].cls == ANA_CLASS_PY_GIL,
	         "bytecode within two poll periods before a recorded take: held (%s)", ana_class_name(m->samples.v[9].cls));
	th_check(m->samples.v[10].cls == ANA_CLASS_NATIVE_NOGIL,
	         "bytecode far from a GIL change: the records rule (%s)", ana_class_name(m->samples.v[10].cls));
	th_check(m->samples.v[11].cls == ANA_CLASS_NATIVE_NOGIL,
	         "extension code in the ambiguous window: the records rule (%s)", ana_class_name(m->samples.v[11].cls));
	f = open_memstream(&out, &out_len);
	for (size_t i = 0; i < m->threads.n; i++)
		memset(m->threads.v[i].n_class, 0, sizeof(m->threads.v[i].n_class));
	for (size_t i = 0; i < m->samples.n; i++)
		for (size_t k = 0; k < m->threads.n; k++)
			if (m->threads.v[k].tid == m->samples.v[i].tid)
				m->threads.v[k].n_class[m->samples.v[i].cls]++;
	ana_python_report(m, f);
	fclose(f);
	printf("%s", out);
	th_check(out && strstr(out, "GIL held") && strstr(out, "deflate [libz.so.1]  <- native_work (work.py:44)") &&
	         strstr(out, "pthread_cond_timedwait [libc.so.6]  <- loop (work.py:24)"),
	         "report: GIL utilization and top functions per class");
	/* GIL: held 0-60 ms and 70-400 ms of 400 ms = 97.5%; hand-offs T_PY->T_NATIVE->T_PY = 2 */
	th_check(out && strstr(out, "GIL held 97.5% of 0.40 s; 5.0 hand-offs/s"), "report: GIL held 97.5%%, 2 hand-offs in 0.4 s");
	free(out);
	ana_model_free(m);

	m = build();
	o.python_only = 1;
	th_check(ana_python_merge(m, &o) == 0, "merge --python-only runs");
	th_check(!strcmp(stack_str(m, 0), "<module> (work.py:5):5;Worker.run:20;native_work:44"), "--python-only: %s",
	         stack_str(m, 0));
	th_check(!strcmp(stack_str(m, 8), "[no python read]"), "--python-only without a read: %s", stack_str(m, 8));
	th_check(m->samples.v[1].cls == ANA_CLASS_NATIVE_GIL, "--python-only keeps the class");
	ana_model_free(m);

	/* --python-frames */
	m = build();
	o.python_only = 0;
	o.python_frames = ANA_PYFRAMES_FUNCTION;
	ana_python_merge(m, &o);
	th_check(!strcmp(stack_str(m, 6), "<module>:5;Worker.run:20;native_work:44;zlib_compress;deflate"),
	         "--python-frames function: names only: %s", stack_str(m, 6));
	ana_model_free(m);
	m = build();
	o.python_frames = ANA_PYFRAMES_LINE;
	ana_python_merge(m, &o);
	th_check(!strcmp(stack_str(m, 6), "<module> (work.py:5):5;Worker.run (work.py:20):20;native_work (work.py:44):44;"
	                                 "zlib_compress;deflate"),
	         "--python-frames line: every frame with its place: %s", stack_str(m, 6));
	ana_model_free(m);
	o.python_frames = ANA_PYFRAMES_AUTO;
	names();

	/* GIL windows from the records themselves (format 1.1): the take at 70 ms was first seen
	 * by a read at 70 ms after one at 68.5 ms still saw it free */
	m = build();
	m->gil.v[3].prev_ns = 68500000;
	{
		uint32_t s3[] = { 0, 0, 0, 0, 0, 0 };
		memcpy(s3, m->stacks.v[m->samples.v[3].stack_id].frames, sizeof(s3));
		add_sample(m, T_PY, 68 * MS, s3, 6, 1); /* 12: bytecode before the read that still saw it free */
	}
	ana_python_merge(m, &o);
	th_check(m->samples.v[9].cls == ANA_CLASS_PY_GIL, "bytecode after the read that saw it free: held (%s)",
	         ana_class_name(m->samples.v[9].cls));
	th_check(m->samples.v[12].cls == ANA_CLASS_NATIVE_NOGIL,
	         "bytecode before that read (inside the old two-period window): the records rule (%s)",
	         ana_class_name(m->samples.v[12].cls));
	ana_model_free(m);
	/* the holder changed hands twice between two reads that both saw T_NATIVE: a sample of
	 * T_PY running bytecode there may have held it */
	m = build();
	{
		uint32_t s3[6];
		gtt_gil *a = add_gil(m, 100 * MS, T_NATIVE, 1), *b = add_gil(m, 110 * MS, T_NATIVE, 1);
		a->switches = 40;
		b->switches = 42;
		b->prev_ns = 105 * MS;
		memcpy(s3, m->stacks.v[m->samples.v[3].stack_id].frames, sizeof(s3));
		add_read(m, T_PY, 107 * MS, 0, 0, NULL);
		add_sample(m, T_PY, 107 * MS, s3, 6, 1);  /* 12: in (105, 110]: switches moved by 2 */
		add_sample(m, T_PY, 103 * MS, s3, 6, 1);  /* 13: before the read at 105 */
	}
	ana_python_merge(m, &o);
	th_check(m->samples.v[12].cls == ANA_CLASS_PY_GIL, "two unseen hand-offs: bytecode counts as held (%s)",
	         ana_class_name(m->samples.v[12].cls));
	th_check(m->samples.v[13].cls == ANA_CLASS_NATIVE_NOGIL, "outside that window: the records rule (%s)",
	         ana_class_name(m->samples.v[13].cls));
	ana_model_free(m);
	unread();
	stale_gil();
	return th_report();
}
