// build: -shared -fPIC -iquote record
/* fake_gtcupti.c — stands in for the CUDA agent in --dump tests (no GPU here): a shared object
 * that exports the in-flight table under the agent's symbol, laid out by the agent's own header.
 * Copied to libgtcupti.so by tests/cli/dump_cuda.sh; tests/progs/cuda_inflight.c fills it. */
#include "gtcupti_inflight.h"

__attribute__((visibility("default"))) struct gtcupti_inflight gtcupti_inflight;
