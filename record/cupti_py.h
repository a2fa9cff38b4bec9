/* cupti_py.h — the calling thread's Python stack, read in-process by the CUDA agent for its
 * launch stacks. Return rule: a frame count (>= 0), or -1; the reason is in the flags. */
#ifndef REC_CUPTI_PY_H
#define REC_CUPTI_PY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "pyoffsets.h"

/* Code ids the agent writes: the code object's address with bit 0 set, and a reuse counter in
 * bits 48-63. The recorder's Python reader writes the address itself (code objects are at
 * least 8-byte aligned, so bit 0 is clear) with its own counter: the two never collide. */
#define AG_PY_CODE_ID_BIT 0x1ull
#define AG_PY_MAX_DEPTH 256    /* the deepest Python stack taken (frames beyond are cut: TRUNC) */

/* Find the interpreter in this process (dlsym of _PyRuntime, PyGILState_GetThisThreadState,
 * Py_Version/Py_GetVersion; a libpython loaded RTLD_LOCAL is found through dl_iterate_phdr).
 * Done once; later calls return the first answer. 1 found and supported, 0 no interpreter,
 * -1 an interpreter we cannot read (why says which). why may be NULL. */
int ag_py_init(char *why, size_t whylen);
/* Our pid (at start, and in a fork()ed child): spares a getpid() per stack. */
void ag_py_set_pid(pid_t pid);
/* An address inside the interpreter's code (libpython, or a static python executable), NULL
 * when none was found: where native launch stacks stop. */
const void *ag_py_interpreter(void);
/* "3.12" style version of the interpreter found (empty when none). */
const char *ag_py_version(void);

/* Called for each code object seen for the first time, before any stack that uses its id is
 * returned: the caller must queue a py_code description of it. 0, or -1 when it could not (the
 * stack is then abandoned and the code object described again next time). */
typedef int (*ag_py_code_sink)(void *ctx, uint64_t code_id, const rec_pycode *c);

typedef struct ag_pythr ag_pythr;    /* per-thread reading state (memory reader, scratch) */

/* The calling thread's Python frames, leaf first, into out[0..cap) (code id, line, flags as in
 * py_stack). *t is the thread's state, created on first use (free with ag_pythr_free at thread
 * exit). *flags gets GTT_CALLSTACK_PY_NONE (not a Python thread, or no interpreter),
 * GTT_CALLSTACK_PY_FAIL (unreadable) or GTT_CALLSTACK_PY_TRUNC (cut at cap or broken chain).
 * Safe without the GIL: only this thread's own frames are read, through process_vm_readv on
 * ourselves (an unexpected layout gives EFAULT, never a crash). Returns the frame count. */
int ag_py_stack(ag_pythr **t, gtt_py_frame *out, int cap, uint32_t *flags, ag_py_code_sink sink, void *ctx);
void ag_pythr_free(ag_pythr *t);

/* Counters: code objects described, code-cache revalidations that found a reused address. */
typedef struct ag_py_stats {
	uint64_t n_codes, n_reused, n_read_fail;
} ag_py_stats;
void ag_py_stats_get(ag_py_stats *st);

#endif
