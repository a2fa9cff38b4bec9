/* test_launch_load.c — launch stacks through the loader (analyze/launch.c's loading half): a
 * trace written here with a mapping, the agent's py_code records (ids with bit 0 set), API calls,
 * kernels and cuda_callstack records of every completeness flag, loaded by ana_model_load: the
 * Python frames go on the root side in order, the native ones after them from the outermost to
 * the caller of CUDA (named after the mapping: no symbols), the markers say what is missing, the
 * stacks are found by correlation, and the report and fold attribute the kernels by them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"
#include "launch.h"
#include "launch_report.h"
#include "testhelp.h"

#define PID 500
#define T0 1000000000ull

static gtt_writer *W;

static void put(gtt_record *r)
{
	th_check(gtt_write(W, r) == 0, "record %s written", gtt_tag_name(r->tag));
}

static void str(uint32_t id, const char *text)
{
	gtt_record r = { .tag = GTT_REC_STRING };
	r.u.string = (gtt_string){ .pid = PID, .id = id, .text = text };
	put(&r);
}

static void code(uint64_t id, const char *name, const char *file)
{
	gtt_record r = { .tag = GTT_REC_PY_CODE };
	r.u.py_code = (gtt_py_code){ .pid = PID, .code_id = id, .first_line = 1, .name = name, .qualname = name,
	                             .filename = file };
	put(&r);
}

static void launch(uint32_t corr, uint64_t t, uint32_t flags, int with_stack, const gtt_py_frame *py, uint32_t n_py)
{
	static const uint64_t ips[3] = { 0x400100, 0x400200, 0x400300 }; /* leaf first */
	gtt_record r = { .tag = GTT_REC_CUDA_API };
	r.u.api = (gtt_cuda_api){ .start_ns = t, .end_ns = t + 5000, .pid = PID, .tid = PID + 1, .correlation = corr,
	                          .domain = GTT_API_RUNTIME, .name_id = 1 };
	put(&r);
	if (with_stack) {
		gtt_record c = { .tag = GTT_REC_CUDA_CALLSTACK };
		c.u.callstack = (gtt_cuda_callstack){ .time_ns = t + 100, .pid = PID, .tid = PID + 1, .correlation = corr,
		                                      .domain = GTT_API_RUNTIME, .name_id = 1, .flags = flags,
		                                      .n_native = (flags & GTT_CALLSTACK_NATIVE_NONE) ? 0 : 3,
		                                      .ips = ips, .n_py = n_py, .py = py };
		put(&c);
	}
	gtt_record k = { .tag = GTT_REC_CUDA_KERNEL };
	k.u.kernel = (gtt_cuda_kernel){ .start_ns = t + 10000, .end_ns = t + 20000, .pid = PID, .correlation = corr,
	                                .name_id = 2 };
	put(&k);
}

/* The frame names of a stack, root first, joined by ';'. */
static const char *names(const ana_model *m, uint32_t stack_id)
{
	static char buf[1024];
	size_t o = 0;
	buf[0] = 0;
	const ana_stack *st = &m->stacks.v[stack_id];
	for (uint32_t i = 0; i < st->n && o < sizeof(buf) - 100; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? ";" : "", m->frames.v[st->frames[i]].name);
	return buf;
}

int main(void)
{
	char path[] = "/tmp/gt-launch-load-XXXXXX";
	int fd = mkstemp(path), err = 0;
	W = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
	th_check(W != NULL, "writer");
	if (!W)
		return th_report();
	gtt_record r = { .tag = GTT_REC_MAPPING };
	r.u.mapping = (gtt_mapping){ .time_ns = T0 - 1000, .pid = PID, .prot = 5, .start = 0x400000, .end = 0x401000,
	                             .path = "/opt/app/libapp.so" };
	put(&r);
	str(1, "cudaLaunchKernel");
	str(2, "_Z4gemmPfi");
	code(0x1001, "train", "/src/train.py");
	code(0x2001, "step", "/src/train.py");
	/* leaf first: step at line 44, called from train at line 7 */
	const gtt_py_frame py[2] = { { 0x2001, 44, 0 }, { 0x1001, 7, GTT_PYFRAME_ENTRY } };
	launch(1, T0, GTT_CALLSTACK_FIRST | GTT_CALLSTACK_NATIVE_AT_PY, 1, py, 2);
	launch(2, T0 + 1000000, GTT_CALLSTACK_NTH | GTT_CALLSTACK_NATIVE_AT_PY | GTT_CALLSTACK_PY_TRUNC, 1, py, 2);
	launch(3, T0 + 2000000, GTT_CALLSTACK_NTH | GTT_CALLSTACK_NATIVE_TRUNC, 1, py, 2);
	launch(4, T0 + 3000000, GTT_CALLSTACK_NTH | GTT_CALLSTACK_PY_FAIL, 1, NULL, 0);
	launch(5, T0 + 4000000, GTT_CALLSTACK_NTH | GTT_CALLSTACK_NATIVE_NONE | GTT_CALLSTACK_PY_NONE, 1, NULL, 0);
	launch(6, T0 + 5000000, 0, 0, NULL, 0); /* no stack */
	gtt_writer_close(W);

	char eb[256] = "";
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, eb, sizeof(eb));
	unlink(path);
	th_check(m != NULL, "trace loads (%s)", eb);
	if (!m)
		return th_report();
	th_check(m->callstacks.n == 5, "five launch stacks in the model (%zu)", m->callstacks.n);
	const ana_callstack *c1 = ana_callstack_find(m, PID, 1), *c2 = ana_callstack_find(m, PID, 2),
	                    *c3 = ana_callstack_find(m, PID, 3), *c4 = ana_callstack_find(m, PID, 4),
	                    *c5 = ana_callstack_find(m, PID, 5);
	th_check(c1 && c2 && c3 && c4 && c5 && !ana_callstack_find(m, PID, 6) && !ana_callstack_find(m, PID + 1, 1),
	         "found by (pid, correlation); none for the call without one");
	/* native frames root first: 0x400300 (outermost) ... 0x400100 (the caller of CUDA, looked up at ip - 1) */
	const char *nat = "[libapp.so+0x2ff];[libapp.so+0x1ff];[libapp.so+0xff]";
	char want[512];
	snprintf(want, sizeof(want), "train;step;%s", nat);
	th_check(c1 && strcmp(names(m, c1->stack_id), want) == 0, "Python root side, then native from the outermost (%s)",
	         c1 ? names(m, c1->stack_id) : "-");
	const ana_frame *leaf_py = c1 ? &m->frames.v[m->stacks.v[c1->stack_id].frames[1]] : NULL;
	th_check(leaf_py && leaf_py->kind == ANA_FRAME_PYTHON && leaf_py->line == 44 && strcmp(leaf_py->file, "/src/train.py") == 0,
	         "the launching Python frame keeps its file and line");
	snprintf(want, sizeof(want), "[truncated];train;step;%s", nat);
	th_check(c2 && strcmp(names(m, c2->stack_id), want) == 0, "a cut Python chain: [truncated] at the root (%s)",
	         c2 ? names(m, c2->stack_id) : "-");
	snprintf(want, sizeof(want), "train;step;[truncated];%s", nat);
	th_check(c3 && strcmp(names(m, c3->stack_id), want) == 0,
	         "a native walk cut at its cap: [truncated] between the Python and the native frames (%s)",
	         c3 ? names(m, c3->stack_id) : "-");
	snprintf(want, sizeof(want), "%s;%s", ANA_LAUNCH_PY_UNREADABLE, nat);
	th_check(c4 && strcmp(names(m, c4->stack_id), want) == 0, "an unreadable Python stack is said so (%s)",
	         c4 ? names(m, c4->stack_id) : "-");
	th_check(c5 && strcmp(names(m, c5->stack_id), ANA_LAUNCH_EMPTY) == 0, "nothing at all: an empty-stack frame");

	/* fold --weight gpu-time: each kernel (10 us) under its call's stack, call 6 under [no launch stack] */
	ana_fold_opts fo;
	ana_fold_opts_init(&fo);
	fo.weight = ANA_WEIGHT_GPU_TIME;
	ana_folded fl;
	th_check(ana_fold(m, &fo, &fl) == 0 && fl.total == 60000, "60 us of GPU time folded (%llu)",
	         (unsigned long long)fl.total);
	int no_stack = 0, first = 0;
	for (size_t i = 0; i < fl.n; i++) {
		no_stack += strcmp(fl.lines[i].stack, "[no launch stack];[kernel gemm]") == 0;
		first += strncmp(fl.lines[i].stack, "train;step;[libapp.so+0x2ff]", 28) == 0;
	}
	/* the 1-in-N stacks stand for call 6 too: no line under [no launch stack] */
	th_check(!no_stack && first == 1, "the launch without a stack is stood for by the 1-in-N ones");
	ana_folded_free(&fl);
	char *rep = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&rep, &len);
	ana_launch_report(m, f, 5);
	fclose(f);
	th_check(rep && strstr(rep, "6 launches, 0.060 ms GPU time; 5 of 6 launches sampled (83.3 %)"),
	         "report: 5 of 6 launches sampled");
	th_check(rep && strstr(rep, "step (train.py:44) < train (train.py:7); native: [libapp.so+0xff] < [libapp.so+0x1ff]"),
	         "report: the site as Python line, caller, then the caller of CUDA");
	free(rep);
	ana_model_free(m);
	return th_report();
}
