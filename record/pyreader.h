/* pyreader.h — CPython stacks and GIL state read from the target's memory (process_vm_readv),
 * on their own thread with an absolute schedule; never stops the target. */
#ifndef REC_PYREADER_H
#define REC_PYREADER_H

#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "pyoffsets.h"

typedef struct rec_py_opts {
	double stack_hz;      /* Python stack reads per second (default: the sampling rate) */
	double gil_hz;        /* GIL polls per second (default 1000) */
	int forced;           /* --python: the user insists; failure to find CPython is an error */
	int verbose;
	/* Called after every record the reader writes (--top), from the reader's threads; NULL: none */
	void (*observe)(void *ctx, const gtt_record *rec);
	void *observe_ctx;
} rec_py_opts;

typedef struct rec_py rec_py;

/* Start reading Python state of pid in a background thread that writes PY_CODE,
 * PY_STACK, GIL, TICKS and HEALTH records to w. The interpreter may not be
 * initialized yet (launch mode): the reader keeps looking for it for a while.
 * Returns NULL with a one-line reason in err when it cannot even start. */
rec_py *rec_py_start(pid_t pid, gtt_writer *w, const rec_py_opts *opts, char *err, size_t errlen);
/* One-line status for the live status line and final summary ("python 3.12: 1234 stacks"). */
void rec_py_status(rec_py *p, char *buf, size_t len);
/* Stop the thread, write final health/ticks records, free. Returns 0, or 1 when
 * --python was forced and no supported interpreter was found (message in err). NULL ok. */
int rec_py_stop(rec_py *p, char *err, size_t errlen);

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
