/* dump_py.h — the Python side of gt-record --dump: a process's thread states, each thread's
 * frame chain read while gt-record holds it stopped, the GIL, and code objects named once.
 * Reads through record/pyoffsets.h (process_vm_readv). Return rule: counts, or -1. */
#ifndef REC_DUMP_PY_H
#define REC_DUMP_PY_H

#include <stdint.h>
#include <sys/types.h>

#include "procmem.h"
#include "pyoffsets.h"
#include "pyreader.h"

typedef struct rec_dpy rec_dpy;

/* A reader of the interpreter found (f is copied; mem is kept, not owned). NULL on ENOMEM. */
rec_dpy *rec_dpy_open(rec_procmem *mem, const rec_py_found *f);
void rec_dpy_close(rec_dpy *p);
/* Read the thread-state lists of every interpreter. The number of thread states, or -1 when
 * the interpreter list is unreadable. */
int rec_dpy_read_threads(rec_dpy *p);
/* The thread state of OS thread tid: by native_thread_id (3.11+), else by its pthread_t, which
 * glibc makes the thread pointer (fs_base, 0 when unknown). 0 when tid runs no Python. */
uint64_t rec_dpy_tstate_of(const rec_dpy *p, pid_t tid, uint64_t fs_base);

/* One thread's Python stack, leaf first. */
typedef struct rec_dpy_stack {
	rec_pyframe_raw *frames; /* malloc'ed, n entries */
	int n;
	int torn;                /* the chain broke off (a read failed, a cycle, 1024 frames) */
	int idle;                /* the thread state has no frame */
	int gil;                 /* 1 holds the GIL, 0 does not, -1 unknown */
} rec_dpy_stack;
/* Read tstate's frames and whether it holds the GIL (call while its thread is stopped, so
 * the chain cannot change under the reader). 0, or -1 when the thread state is unreadable. */
int rec_dpy_read_stack(rec_dpy *p, uint64_t tstate, rec_dpy_stack *out);
void rec_dpy_stack_free(rec_dpy_stack *s);
/* GIL holder (a thread state) when locked: 1 locked (holder set), 0 free, -1 unknown. */
int rec_dpy_gil(rec_dpy *p, uint64_t *holder);

/* The code object at addr, read once (NULL when unreadable or not a code object), and the
 * source line of code-unit index in it (-1 unknown). */
const rec_pycode *rec_dpy_code(rec_dpy *p, uint64_t addr);
int rec_dpy_line(const rec_dpy *p, const rec_pycode *c, int64_t index);
/* Code objects read so far, in reading order (for writing PY_CODE records). */
size_t rec_dpy_n_codes(const rec_dpy *p);
const rec_pycode *rec_dpy_code_at(const rec_dpy *p, size_t i, uint64_t *addr);

#endif
