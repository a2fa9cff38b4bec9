/* cuda_inject.h — gt-record's side of CUDA tracing: injecting libgtcupti.so into a launched
 * program and merging the agent's side files into the trace. */
#ifndef REC_CUDA_INJECT_H
#define REC_CUDA_INJECT_H

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
/* Final merge, remove side files, free. NULL ok. */
int rec_cuda_finish(rec_cuda *c, gtt_writer *w);

#endif
