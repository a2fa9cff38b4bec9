/* gemm.cu — row-major GEMMs through cuBLAS (bf16/fp16 operands, fp32 accumulation), and error texts. */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels.h"

enum { KN_CUBLAS_BASE = 10000 }; /* codes -(base + cublasStatus_t) are cuBLAS errors */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: pass B first, swap m and n.
 * A row-major X[r][c] (leading dimension ld) is the column-major X^T with the same ld. */
extern "C" int kn_cuda_gemm(void *cublas, int dtype, int m, int n, int k, const void *a, int lda, int ta,
                            const void *b, int ldb, int tb, void *c, int ldc, int c_f32, float beta)
{
	const float alpha = 1.0f;
	cudaDataType_t ab = dtype == KN_F16 ? CUDA_R_16F : CUDA_R_16BF;
	cudaDataType_t ct = c_f32 ? CUDA_R_32F : ab;
	if (m <= 0 || n <= 0 || k <= 0)
		return 0;
	cublasStatus_t st = cublasGemmEx((cublasHandle_t)cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
	                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ab, ldb, a, ab, lda, &beta,
	                                 c, ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		return -(KN_CUBLAS_BASE + (int)st);
	return 0;
}

extern "C" const char *kn_cuda_strerror(int rc)
{
	if (rc >= 0)
		return "success";
	if (-rc >= KN_CUBLAS_BASE)
		return cublasGetStatusString((cublasStatus_t)(-rc - KN_CUBLAS_BASE));
	return cudaGetErrorString((cudaError_t)(-rc));
}
