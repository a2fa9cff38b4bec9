/* test_python_merge.c — analyze/python.c on a hand-built model: splicing Python frames at the
 * eval-loop frames, nearest-read rule, --python-only, and the GIL classes of samples. */
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

static void add_gil(ana_model *m, uint64_t t, uint32_t holder, uint32_t locked)
{
	gtt_gil *g = ana_vec_push(m->gil);
	g->time_ns = t;
	g->pid = PID;
	g->holder_tid = holder;
	g->locked = locked;
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

int main(void)
{
	ana_model *m = build();
	ana_opts o;
	char *out = NULL;
	size_t out_len = 0;
	FILE *f;

	ana_opts_init(&o);
	th_check(ana_python_merge(m, &o) == 0, "merge runs");
	th_check(!strcmp(stack_str(m, 0), "_start;main;Py_RunMain;<module>:5;Worker.run:20;PyObject_Vectorcall;"
	                                 "native_work:44;zlib_compress;deflate"),
	         "segments go to their eval frames, root first: %s", stack_str(m, 0));
	th_check(m->samples.v[0].cls == ANA_CLASS_NATIVE_NOGIL, "zlib while another thread holds the GIL: %s",
	         ana_class_name(m->samples.v[0].cls));
	th_check(m->samples.v[1].cls == ANA_CLASS_NATIVE_GIL, "zlib holding the GIL: %s", ana_class_name(m->samples.v[1].cls));
	th_check(m->samples.v[2].cls == ANA_CLASS_WAIT_GIL, "take_gil on the stack: %s", ana_class_name(m->samples.v[2].cls));
	th_check(m->samples.v[3].cls == ANA_CLASS_PY_GIL, "eval loop holding the GIL: %s", ana_class_name(m->samples.v[3].cls));
	th_check(!strcmp(stack_str(m, 3), "_start;main;Py_RunMain;<module>:5;Worker.run:21;PyObject_Vectorcall;loop:24"),
	         "nearest read of the right thread (the 81 ms read): %s", stack_str(m, 3));
	th_check(m->samples.v[4].cls == ANA_CLASS_PY_GIL, "interpreter + libc code under the eval loop: %s",
	         ana_class_name(m->samples.v[4].cls));
	th_check(m->samples.v[5].cls == ANA_CLASS_NATIVE_GIL, "extension code holding the GIL: %s",
	         ana_class_name(m->samples.v[5].cls));
	th_check(!strcmp(stack_str(m, 6), "<module>:5;Worker.run:20;native_work:44;zlib_compress;deflate"),
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
	th_check(!strcmp(stack_str(m, 0), "<module>:5;Worker.run:20;native_work:44"), "--python-only: %s", stack_str(m, 0));
	th_check(!strcmp(stack_str(m, 8), "[no python read]"), "--python-only without a read: %s", stack_str(m, 8));
	th_check(m->samples.v[1].cls == ANA_CLASS_NATIVE_GIL, "--python-only keeps the class");
	ana_model_free(m);
	return th_report();
}
