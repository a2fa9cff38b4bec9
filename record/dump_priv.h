/* dump_priv.h — what gt-record --dump collects about a process, shared by the collector
 * (dump.c), the text/JSON printers (dump_out.c) and the trace writer (dump_gtt.c). */
#ifndef REC_DUMP_PRIV_H
#define REC_DUMP_PRIV_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "addrspace.h"
#include "dump_cuda.h"
#include "dump_py.h"
#include "procmem.h"
#include "procthread.h"
#include "pyreader.h"
#include "tracestop.h"

enum { DF_NATIVE = 1, DF_PYTHON = 2 };
typedef struct dframe {
	uint8_t kind;            /* DF_* */
	uint8_t interp;          /* a native frame inside the interpreter's binary */
	uint8_t trampoline;      /* the signal trampoline */
	uint8_t fp;              /* found through frame pointers (a guess), not CFI */
	const char *name;        /* function (Python: qualname), NULL when unknown */
	const char *where;       /* native: module file name; Python: source file */
	int32_t line;            /* Python: source line, -1 unknown */
	uint64_t addr;           /* native: the pc (a return address unless exact) */
	uint64_t offset;         /* native: from the function's start, or from the module's base */
} dframe;

/* A thread's GIL state. */
enum { DG_NONE = 0 /* runs no Python */, DG_HOLDS, DG_WAITING, DG_RELEASED, DG_UNKNOWN,
       DG_NOT_HELD /* does not hold it; waiting cannot be told (the interpreter has no take_gil symbol) */ };

typedef struct dthr {
	pid_t tid;
	rec_pt_state st;         /* /proc, read before the thread was stopped */
	int ts_rc, ts_err;       /* the ptrace stop: REC_TS_*, errno; -1 when not tried */
	int stopped;             /* registers taken during a stop of ours */
	int from_proc;           /* only sp and pc, from /proc/TID/syscall (not stopped by us) */
	rec_ts_regs regs;
	rec_as_frame *nat;       /* native frames, leaf first */
	size_t n_nat;
	int nat_end;             /* REC_AS_END_* */
	uint64_t tstate;         /* its PyThreadState, 0 none */
	rec_dpy_stack py;
	int py_read;             /* py holds a read (possibly empty) */
	int py_unstopped;        /* read while the thread ran (it may be torn) */
	int gil;                 /* DG_* */
	char (*kstack)[64];
	int n_kstack;            /* < 0: unreadable (-errno) */
	uint8_t *stack;          /* -o: the user stack from regs.sp */
	uint32_t stack_len;
	uint64_t time_ns;        /* when the registers were taken */
	uint64_t stop_ns;        /* how long we held it stopped */
	const rec_dcuda_call *cuda;
	dframe *frames;          /* merged, leaf first */
	size_t n_frames;
} dthr;

typedef struct dproc {
	pid_t pid;
	char command[1024];
	int gone;                /* exited during the dump */
	int py;                  /* 1 a CPython was found and read */
	int gil_waits_known;     /* the interpreter names take_gil: waiting threads can be told */
	rec_py_found pyf;
	char py_note[512];       /* why there are no Python stacks ("" when there are) */
	char perm_note[512];     /* why ptrace was refused ("" when it was not) */
	rec_procmem *mem;
	rec_as *as;
	rec_dpy *dpy;
	dthr *th;
	size_t n_th;
	size_t n_gone_threads;   /* threads that exited while we went round */
	uint64_t t0_ns, t1_ns, max_stop_ns;
	int gil_locked;          /* 1 held, 0 free, -1 unknown */
	pid_t gil_tid;           /* its holder, 0 unknown */
	rec_dcuda_call *cuda;
	int cuda_rc;             /* calls in flight, or REC_DCUDA_* */
	uint64_t cuda_res_ns;
	char **strs;             /* strings the frames own */
	size_t n_strs, cap_strs;
} dproc;

/* dump_out.c: the text view (one process) and the JSON document (all of them). */
void rec_dump_print_text(FILE *f, const dproc *p, int all_frames);
void rec_dump_print_json(FILE *f, const dproc *ps, size_t n);
/* dump_gtt.c: a one-snapshot trace of the processes at path (never replacing a file).
 * 0, or -1 with a one-line reason in err. */
int rec_dump_write_gtt(const char *path, const dproc *ps, size_t n, int no_archive, char *err, size_t errlen);

/* "sleeping in futex" / "running" / ..., for text and notes. */
void rec_dump_state_text(const dthr *t, char *buf, size_t len);
/* "holds", "waiting", "released", "unknown", NULL for DG_NONE. */
const char *rec_dump_gil_word(int gil);

#endif
