/* pydiscover.h — finding CPython in a target process: the mapping that has _PyRuntime (a
 * libpython before the executable), its version (Py_Version, _Py_DebugOffsets or the file
 * name) and the struct layout for it, and whether the interpreter is initialized yet.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PYDISCOVER_H
#define REC_PYDISCOVER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "procmem.h"
#include "pyoffsets.h"

/* What discovery found (and, while looking, what it saw). */
typedef struct rec_pyinterp {
	rec_pyoff off;             /* the layout of this version */
	uint64_t runtime;          /* _PyRuntime in the target */
	uint64_t code_type;        /* PyCode_Type in the target, 0 unknown */
	uint64_t dict_type;        /* PyDict_Type in the target, 0 unknown (then no thread names) */
	char version[32];          /* "3.12.1" (or "3.12" when only the minor is known) */
	char path[PATH_MAX];       /* the file that has _PyRuntime */
	/* While looking: a file named like an interpreter but without _PyRuntime was mapped. Not
	 * final (in launch mode the executable is mapped before its libpython): the reason to
	 * give when nothing better turns up. */
	char tentative[320];
	/* The candidate mappings of the last look that found nothing (their paths, starts and
	 * offsets, hashed): while they stay the same, a look opens no file again. */
	uint64_t nothing_sig;
	int have_nothing_sig;
	int same_looks;            /* looks in a row that met the same candidates (0: they changed) */
} rec_pyinterp;

/* One look at pid's mappings (read through m). Returns 1 found (py filled), 0 not yet (look
 * again later; a look at the same candidate mappings as the last that found nothing reads only
 * /proc/PID/maps), or final: -ESRCH the process is gone (reason: py->tentative when set, else
 * no CPython was found), -ENOTSUP a CPython it cannot read (unsupported version, unknown
 * version, refused debug offsets). A one-line reason goes to reason[0..len) when final. */
int rec_pydisc_find(pid_t pid, rec_procmem *m, rec_pyinterp *py, char *reason, size_t len);
/* The verdict a command line's program name gives on its own ("python3.9 ..." names a
 * CPython that is not supported), for a process gone before any look saw its interpreter
 * mapped: 1 with the one-line reason in reason[0..len), 0 when the name says nothing. */
int rec_pydisc_name_verdict(const char *cmdline, char *reason, size_t len);
/* 1 once the interpreter is initialized (an interpreter with a thread state), 0 not yet,
 * -ESRCH the process is gone. */
int rec_pydisc_ready(rec_procmem *m, const rec_pyinterp *py);

#endif
