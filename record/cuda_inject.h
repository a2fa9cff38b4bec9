/* cuda_inject.h — gt-record's side of CUDA tracing: injecting libgtcupti.so into a launched
 * program and merging the agent's side files into the trace. */
#ifndef REC_CUDA_INJECT_H
#define REC_CUDA_INJECT_H

#include <sys/types.h>
#include "gtt.h"

typedef struct rec_cuda rec_cuda;

/* Find the agent (next to gt-record: ../lib/libgtcupti.so, or $GT_CUPTI_AGENT) and make a
 * directory for side files. Returns NULL when CUDA tracing is off or the agent is absent
 * (reason in err; not an error for CPU-only recording). argv0 locates the binary. */
rec_cuda *rec_cuda_prepare(const char *argv0, int dormant, char *err, size_t errlen);
/* In the child between fork and exec: set CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH and
 * the side-file directory in the environment. Async-signal-safe enough (setenv only). */
void rec_cuda_child_env(const rec_cuda *c);
/* Periodically and at the end: append the agent's finished chunks to w. Returns the number of
 * records merged or <0. */
int rec_cuda_merge(rec_cuda *c, gtt_writer *w);
/* Attach mode (gt-record -p PID): switch CUDA tracing of pid on (into c's side-file
 * directory; c from rec_cuda_prepare(argv0, 0, ...)) or off. Only a process started under
 * `gt-record --prepare` has the agent. Returns 1 when the agent is there (loaded, or injected
 * and waiting for the program to start CUDA), 0 when the process has no agent (record CPU data
 * and say so; err holds the note), <0 on error (reason in err). Finish switches it off again. */
int rec_cuda_attach(rec_cuda *c, pid_t pid, int on, char *err, size_t errlen);
/* Before ending a launched command early (-d: SIGTERM skips its exit handlers): ask every agent
 * still running to flush and close its side file, waiting up to 3 s. NULL ok. */
void rec_cuda_switch_off(rec_cuda *c);
/* Capture control by NVTX ranges (gt-record --capture-range=nvtx:NAME): the agent keeps its CUDA
 * records only inside NVTX ranges named by spec — "NAME" (NVTX's default domain), "NAME@DOMAIN",
 * "NAME@*" (any domain) — and writes a capture record (tag 32, source nvtx) when such a range
 * opens (the first of that name, on any thread) and when the last one closes. Call before
 * rec_cuda_child_env (launch mode: GT_CUPTI_CAPTURE_NVTX in the command's environment) or
 * rec_cuda_attach (attach mode: a "set GT_CUPTI_CAPTURE_NVTX=" line of the control file; without
 * a call, gt-record's own GT_CUPTI_CAPTURE_NVTX, else no rule). spec NULL or "": no rule. 0, or
 * GTT_EINVAL for a malformed spec (err says why). The capture records reach the trace with the
 * agent's other records, at the next rec_cuda_merge after the range opened or closed (the
 * agent writes them to its side file at once: docs/CUDA.md, "Capture ranges"). */
int rec_cuda_capture_nvtx(rec_cuda *c, const char *spec, char *err, size_t errlen);
/* Records the merge hands on besides writing them — launch stacks (cuda_callstack) and capture
 * records (capture, source nvtx: where a capture range of the agent's process opened or closed) —
 * fn is called from the merging thread with each decoded record, in the order merged. NULL c ok. */
typedef void (*rec_cuda_observer)(void *ctx, const gtt_record *rec);
void rec_cuda_set_observer(rec_cuda *c, rec_cuda_observer fn, void *ctx);
/* Final merge, remove side files, free. NULL ok. */
int rec_cuda_finish(rec_cuda *c, gtt_writer *w);

#endif
