/* pyreader.h — CPython stacks, GIL state and thread names read from the memory of every
 * Python process of the recorded tree (process_vm_readv), by three threads with absolute
 * schedules whatever the number of processes; never stops a target.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno; how the
 * reader ended is a rec_py_state, put into words only by gt-record's session. */
#ifndef REC_PYREADER_H
#define REC_PYREADER_H

#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "pyoffsets.h"

typedef struct rec_py_opts {
	double stack_hz;      /* Python stack reads per second (0: 99; gt-record passes its -F) */
	double gil_hz;        /* GIL polls per second (0: 1000) */
	/* Called after every record the reader writes (--top), from the reader's threads; NULL: none */
	void (*observe)(void *ctx, const gtt_record *rec);
	void *observe_ctx;
} rec_py_opts;

/* What the reader found; the CLI decides what to tell the user. */
typedef enum rec_py_state {
	REC_PY_LOOKING = 0,   /* no interpreter found yet */
	REC_PY_READING,       /* found, reading stacks and GIL (also after the target exited) */
	REC_PY_NOT_FOUND,     /* the target has no CPython interpreter (or exited before one was mapped) */
	REC_PY_REFUSED,       /* a CPython it cannot read: unsupported version, stripped, refused offsets */
	REC_PY_EXITED_EARLY,  /* the target exited before its interpreter was initialized */
	REC_PY_FAILED,        /* the reader itself failed (out of memory) */
} rec_py_state;

/* How a reader ended (rec_py_stop). */
typedef struct rec_py_result {
	rec_py_state state;   /* never REC_PY_LOOKING: a search cut short is NOT_FOUND or REFUSED */
	int target_gone;      /* the target exited during the recording */
	char text[512];       /* READING: the rec_py_status line; otherwise the reason, one line */
} rec_py_result;

typedef struct rec_py rec_py;

/* Start reading Python state of pid (and, through rec_py_fork/exec, of its children) in
 * background threads that write PY_CODE, PY_STACK, PY_THREAD, GIL, TICKS and HEALTH records to
 * w. The interpreter may not be initialized yet (launch mode): the reader keeps looking for it
 * until the recording ends.
 * Returns NULL with a one-line reason in err when it cannot even start. */
rec_py *rec_py_start(pid_t pid, gtt_writer *w, const rec_py_opts *opts, char *err, size_t errlen);
/* The recorded process tree changed (gt-record's session passes on the PROCESS records it
 * writes): a new process child of parent, an exec (with its command line: what its name says
 * is the reason given when the process is gone before its interpreter was seen), an exit,
 * each with the time of its record.
 * A process forked without exec is read with its parent's interpreter; after an exec each
 * process is looked at afresh (a child for a short while: an interpreter shows up within
 * milliseconds of the exec). At most REC_PY_MAX_PROCS processes are read at once (a note names
 * the ones left out). Cheap: the reader's own threads do the work. NULL p ok. */
#define REC_PY_MAX_PROCS 64
void rec_py_fork(rec_py *p, pid_t parent, pid_t child, uint64_t time_ns);
void rec_py_exec(rec_py *p, pid_t pid, uint64_t time_ns, const char *cmdline);
void rec_py_exit(rec_py *p, pid_t pid);
/* A mapping record of pid was written (an MMAP2, or one /proc synthesized): a process still
 * being looked at for an interpreter reads its mappings again at the next look (pyproc.h,
 * rec_pyproc_maps_moved). NULL p ok. */
void rec_py_mapped(rec_py *p, pid_t pid);
/* One-line status of a running reader ("python 3.12: 1234 stacks ...", "python: looking for
 * CPython in pid N", "python: <reason>"); also the text of the NOTE written at the end. */
void rec_py_status(rec_py *p, char *buf, size_t len);
/* Stop the threads, write final health/ticks records and a NOTE saying how it went, free.
 * res (may be NULL) gets the outcome. NULL p ok (res zeroed). */
void rec_py_stop(rec_py *p, rec_py_result *res);

/* The offset of the kernel tid in glibc's struct pthread (how 3.10 thread states map to OS
 * tids), found in two threads of this process; -1 when they disagree. rec_py_start() finds it
 * itself; this is for other readers of pyproc.c (benchmarks). */
int32_t rec_py_tcb_tid_offset(void);

/* What discovery finds in a process (for readers other than the recording loops: --dump). */
typedef struct rec_py_found {
	rec_pyoff off;          /* the interpreter's struct layout */
	uint64_t runtime;       /* _PyRuntime in the target */
	uint64_t code_type;     /* PyCode_Type in the target, 0 unknown */
	char version[32];       /* "3.12.1" */
	char path[4096];        /* the binary holding the interpreter */
} rec_py_found;
/* One discovery attempt on pid, as the recording reader makes it. 1 found; 0 no CPython in
 * pid; -1 a CPython that cannot be read (unsupported version, stripped, the process gone):
 * a one-line reason in err for 0 and -1. */
int rec_py_find(pid_t pid, rec_py_found *out, char *err, size_t errlen);

#endif
