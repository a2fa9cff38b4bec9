/* backend_cuda.c — the CUDA backend: one stream + cuBLAS handle per worker, NVTX ranges, launch counts. */
#include "backend.h"

#ifndef GT_HAVE_CUDA
const pl_backend *pl_backend_cuda(void)
{
	return NULL;
}
#endif
