/* test_top.c — the --top model's classification on hand-made records, rule by rule as
 * docs/PYTHON.md states them (and analyze/python.c applies them): a wait frame, the GIL
 * records and the poll's window, extension vs interpreter vs system frames leafward of the
 * innermost eval frame, threads without Python reads, the hottest-function labels, and a
 * DWARF sample unwound from a real stack copy. The "interpreter" is this test binary: it
 * defines _PyEval_EvalFrameDefault and take_gil; libz stands for an extension, libc for a
 * system library. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "gt_util.h"
#include "procmem.h"
#include "testhelp.h"
#include "top.h"

#if defined(__x86_64__)

static volatile int g_sink;
static uint64_t g_regs[17];
static uint8_t g_stack[16384];
static uint32_t g_stack_len;

/* perf order: ax bx cx dx si di bp sp ip r8..r15 */
__attribute__((noinline)) static void capture(void)
{
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t"
	                 "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"
	                 : "=&r"(ip), "=&r"(sp), "=&r"(bp), "=&r"(bx), "=&r"(r12), "=&r"(r13), "=&r"(r14), "=&r"(r15));
	memset(g_regs, 0, sizeof(g_regs));
	g_regs[1] = bx; g_regs[6] = bp; g_regs[7] = sp; g_regs[8] = ip;
	g_regs[13] = r12; g_regs[14] = r13; g_regs[15] = r14; g_regs[16] = r15;
	/* the live stack above us, a few KiB, read as gt-record reads a target's (ASan's redzones
	 * in our own frames are no business of a plain memcpy) */
	{
		rec_procmem *me = rec_procmem_open(getpid());
		g_stack_len = me && rec_procmem_read(me, sp, g_stack, 4096) == 0 ? 4096 : 0;
		rec_procmem_close(me);
	}
	g_sink++;
}

/* The eval loop as gt-analyze knows it, by name. */
__attribute__((noinline, used)) void _PyEval_EvalFrameDefault(int mode);
__attribute__((noinline, used)) void _PyEval_EvalFrameDefault(int mode)
{
	if (mode)
		capture();
	g_sink += mode;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void take_gil(void);
__attribute__((noinline, used)) void take_gil(void)
{
	g_sink++;
	__asm__ volatile("" ::: "memory");
}

#define T0 (5 * GT_NS_PER_SEC)
#define PID ((uint32_t)getpid())

static void rec_gil(rec_top_model *m, uint64_t t, uint32_t holder, uint32_t locked)
{
	gtt_record r;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_GIL;
	r.u.gil.time_ns = t;
	r.u.gil.pid = PID;
	r.u.gil.holder_tid = holder;
	r.u.gil.locked = locked;
	rec_top_model_observe(m, &r);
}

static void rec_pystack(rec_top_model *m, uint32_t tid, uint64_t t, uint32_t flags)
{
	gtt_record r;
	gtt_py_frame f = { 0x1000, 7, GTT_PYFRAME_ENTRY };
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_PY_STACK;
	r.u.py_stack.time_ns = t;
	r.u.py_stack.pid = PID;
	r.u.py_stack.tid = tid;
	r.u.py_stack.flags = flags;
	r.u.py_stack.n_frames = 1;
	r.u.py_stack.frames = &f;
	rec_top_model_observe(m, &r);
}

/* A frame-pointer sample: ips leaf first, the first exact, the others return addresses. */
static void rec_sample(rec_top_model *m, uint32_t tid, uint64_t t, const uint64_t *ips, uint32_t n)
{
	gtt_record r;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_SAMPLE;
	r.u.sample.time_ns = t;
	r.u.sample.pid = PID;
	r.u.sample.tid = tid;
	r.u.sample.period_ns = 10 * GT_NS_PER_MS;
	r.u.sample.n_user = n;
	r.u.sample.ips = ips;
	rec_top_model_observe(m, &r);
}

static const rec_top_row *row_of(const rec_top_row *rows, size_t n, uint32_t tid)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (rows[i].tid == tid)
			return &rows[i];
	return NULL;
}

static int only(const rec_top_row *r, int cls)
{
	return r && r->samples > 0 && r->n[cls] == r->samples;
}

int main(void)
{
	rec_top_model *m = rec_top_model_create(getpid(), 100);
	rec_top_row rows[32];
	const rec_top_row *r;
	size_t n;
	uint64_t eval = (uint64_t)(uintptr_t)&_PyEval_EvalFrameDefault;
	uint64_t wait = (uint64_t)(uintptr_t)&take_gil;
	uint64_t ext = (uint64_t)(uintptr_t)&deflate;    /* libz: an extension */
	uint64_t sys = (uint64_t)(uintptr_t)&getppid;    /* libc: a system library */
	gtt_record code;

	th_check(m != NULL, "a model");
	if (!m)
		return th_report();
	memset(&code, 0, sizeof(code));
	code.tag = GTT_REC_PY_CODE;
	code.u.py_code.pid = PID;
	code.u.py_code.code_id = 0x1000;
	code.u.py_code.name = code.u.py_code.qualname = "py_func";
	code.u.py_code.filename = "/srv/app/app.py";
	rec_top_model_observe(m, &code);
	/* threads 101-104, 106-107 run Python; 105 never shows up in a Python read */
	for (uint32_t tid = 101; tid <= 107; tid++)
		if (tid != 105)
			rec_pystack(m, tid, T0, 0);
	rec_gil(m, T0, 101, 1);

	{
		uint64_t s1[] = { eval + 2, eval + 1 };
		uint64_t s2[] = { ext + 2, eval + 1 };
		uint64_t s4[] = { wait + 2, eval + 1 };
		uint64_t s7[] = { sys + 2, eval + 1 };
		uint64_t s5[] = { ext + 2 };

		rec_sample(m, 101, T0 + 1000, s1, 2);           /* held, only the interpreter */
		rec_sample(m, 101, T0 + 2000, s1, 2);
		rec_sample(m, 103, T0 + 3000, s2, 2);           /* 101 holds it: 103 in zlib without */
		rec_sample(m, 104, T0 + 4000, s4, 2);           /* in take_gil */
		rec_sample(m, 105, T0 + 5000, s5, 1);           /* no Python read ever */
		rec_sample(m, 107, T0 + 6000, s7, 2);           /* held below; libc leafward */
		rec_gil(m, T0 + 10 * GT_NS_PER_MS, 102, 1);
		rec_pystack(m, 102, T0 + 10 * GT_NS_PER_MS, GTT_PYSTACK_HOLDS_GIL); /* the read at T0 is too far */
		rec_sample(m, 102, T0 + 11 * GT_NS_PER_MS, s2, 2); /* held, zlib leafward of eval */
		rec_gil(m, T0 + 20 * GT_NS_PER_MS, 107, 1);
		rec_sample(m, 107, T0 + 21 * GT_NS_PER_MS, s7, 2);
		/* 106: the records say 107 holds it at t, but at t + 1 ms 106 does: within the poll's
		 * window, a stack running bytecode counts as holding it; one in zlib does not */
		rec_gil(m, T0 + 31 * GT_NS_PER_MS, 106, 1);
		rec_sample(m, 106, T0 + 30 * GT_NS_PER_MS, s1, 2);
		rec_gil(m, T0 + 41 * GT_NS_PER_MS, 101, 1);
		rec_gil(m, T0 + 51 * GT_NS_PER_MS, 106, 1);
		rec_sample(m, 106, T0 + 50 * GT_NS_PER_MS, s2, 2);
	}
	th_check(rec_top_model_process(m) == 10, "10 samples classified");
	n = rec_top_model_rows(m, 0, rows, 32);
	th_check(n == 7, "7 threads with samples (%zu)", n);
	r = row_of(rows, n, 101);
	th_check(only(r, REC_TOP_PY_GIL), "held, interpreter only: python+GIL");
	th_check(r && strcmp(r->hottest, "py_func (app.py:7)") == 0, "its hottest: the Python function and line ('%s')",
	         r ? r->hottest : "");
	r = row_of(rows, n, 102);
	th_check(only(r, REC_TOP_NATIVE_GIL), "held, extension frame leafward of the eval loop: native+GIL");
	th_check(r && strcmp(r->hottest, "deflate <- py_func") == 0, "its hottest: the native leaf under the Python function ('%s')",
	         r ? r->hottest : "");
	r = row_of(rows, n, 103);
	th_check(only(r, REC_TOP_NATIVE_NOGIL), "another thread holds it: native, no GIL");
	r = row_of(rows, n, 104);
	th_check(only(r, REC_TOP_WAIT_GIL), "take_gil on the stack: waiting");
	r = row_of(rows, n, 105);
	th_check(only(r, REC_TOP_NONPY), "no Python read: not python");
	th_check(r && strcmp(r->hottest, "deflate") == 0, "... hottest: its native leaf ('%s')", r ? r->hottest : "");
	r = row_of(rows, n, 107);
	th_check(r && r->n[REC_TOP_NATIVE_NOGIL] == 1 && r->n[REC_TOP_PY_GIL] == 1,
	         "a libc leaf is not extension code: held -> python+GIL, not held -> no GIL");
	r = row_of(rows, n, 106);
	th_check(r && r->n[REC_TOP_PY_GIL] == 1 && r->n[REC_TOP_NATIVE_NOGIL] == 1,
	         "within the GIL poll's window: bytecode counts as held, zlib does not");

	/* a DWARF sample: registers and a copy of this thread's stack, unwound by the model */
	{
		gtt_record s;
		_PyEval_EvalFrameDefault(1);
		rec_pystack(m, 108, T0 + 60 * GT_NS_PER_MS, 0);
		rec_gil(m, T0 + 60 * GT_NS_PER_MS, 101, 1);
		rec_gil(m, T0 + 62 * GT_NS_PER_MS, 108, 1);
		memset(&s, 0, sizeof(s));
		s.tag = GTT_REC_SAMPLE;
		s.u.sample.time_ns = T0 + 61 * GT_NS_PER_MS;
		s.u.sample.pid = PID;
		s.u.sample.tid = 108;
		s.u.sample.flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
		s.u.sample.regs_abi = 2;
		s.u.sample.regs_mask = 0x1ffull | 0xff0000ull;
		s.u.sample.n_regs = 17;
		s.u.sample.regs = g_regs;
		s.u.sample.stack_len = g_stack_len;
		s.u.sample.stack = g_stack;
		rec_top_model_observe(m, &s);
		rec_top_model_process(m);
		n = rec_top_model_rows(m, 0, rows, 32);
		r = row_of(rows, n, 108);
		/* only an unwind that reaches the eval frame makes the window count it as held */
		th_check(only(r, REC_TOP_PY_GIL), "a DWARF sample unwound to the eval frame: python+GIL in the window");
	}
	/* intervals: the current one starts empty, the whole recording keeps counting */
	rec_top_model_next_interval(m);
	th_check(rec_top_model_rows(m, 0, rows, 32) == 0, "a new interval starts empty");
	n = rec_top_model_rows(m, 1, rows, 32);
	r = row_of(rows, n, 101);
	th_check(n == 8 && r && r->samples == 2, "the whole recording keeps every thread (%zu)", n);
	{
		gtt_record h;
		rec_top_stats st;
		memset(&h, 0, sizeof(h));
		h.tag = GTT_REC_HEALTH;
		h.u.health.kind = GTT_HEALTH_LOST;
		h.u.health.source = GTT_SRC_PERF;
		h.u.health.count = 17;
		h.u.health.text = "";
		rec_top_model_observe(m, &h);
		rec_top_model_stats(m, 1, &st);
		th_check(st.lost == 17 && st.samples == 11 && st.python, "stats: 11 samples, 17 lost, Python seen");
	}
	rec_top_model_destroy(m);
	return th_report();
}

#else
int main(void)
{
	printf("SKIP: --top unwinds x86-64 only\n0 passed, 0 failed\n");
	return 0;
}
#endif
