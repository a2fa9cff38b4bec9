/* gpucheck.c — --check (CUDA kernels vs CPU twins) and --bench (TFLOP/s, GB/s vs copy bandwidth). */
#include "gpucheck.h"

#include <stdio.h>

#include "pipeline.h"

#ifndef GT_HAVE_CUDA
int pl_gpu_check(int device, uint32_t seed, pl_check_result *out, int max, int *n_out, char *err,
                 size_t errlen)
{
	(void)device; (void)seed; (void)out; (void)max;
	*n_out = 0;
	snprintf(err, errlen, "this gt-pipeline was built without CUDA");
	return PL_ENODEV;
}

int pl_gpu_bench(int device, pl_bench_result *out, int max, int *n_out, char *err, size_t errlen)
{
	(void)device; (void)out; (void)max;
	*n_out = 0;
	snprintf(err, errlen, "this gt-pipeline was built without CUDA");
	return PL_ENODEV;
}
#endif
