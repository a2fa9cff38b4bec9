/* chunk_fwd.cu — chunked, document-masked causal attention: two batched cuBLAS GEMMs around a masked softmax kernel. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels.h"

namespace {

const int kRowsPerBlock = 8; /* one warp per row */

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
	return v;
}

__device__ __forceinline__ float warp_add(float v)
{
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

/* Row i of the scores (chunk wide, already scaled): keep keys j <= i of the same document in
 * i's chunk, softmax them, write bf16 weights (0 elsewhere). */
__global__ void kn_chunk_softmax_kernel(const float *s, const int *doc_id, int64_t t, int chunk, __nv_bfloat16 *p)
{
	const int lane = threadIdx.x & 31;
	const int64_t i = blockIdx.x * (int64_t)kRowsPerBlock + (threadIdx.x >> 5);
	if (i >= t)
		return;
	const int64_t c0 = i / chunk * chunk;
	const int di = doc_id[i];
	const float *row = s + i * chunk;
	__nv_bfloat16 *prow = p + i * chunk;
	float mx = -INFINITY, sum = 0.f;

	for (int j = lane; j < chunk; j += 32)
		if (c0 + j <= i && doc_id[c0 + j] == di)
			mx = fmaxf(mx, row[j]);
	mx = warp_max(mx);
	for (int j = lane; j < chunk; j += 32)
		if (c0 + j <= i && doc_id[c0 + j] == di)
			sum += __expf(row[j] - mx);
	const float inv = 1.0f / warp_add(sum); /* j = i is always there: sum >= 1 */
	for (int j = lane; j < chunk; j += 32) {
		float w = (c0 + j <= i && doc_id[c0 + j] == di) ? __expf(row[j] - mx) * inv : 0.f;
		prow[j] = __float2bfloat16_rn(w);
	}
}

/* Row-major C = alpha op(A) op(B) for batch matrices at the given strides (see gemm.cu). */
cublasStatus_t gemm_rm(cublasHandle_t hd, int m, int n, int k, float alpha, const void *a, int lda, int64_t sa,
                       int ta, const void *b, int ldb, int64_t sb, int tb, void *c, cudaDataType_t ct, int ldc,
                       int64_t sc, int batch)
{
	const float beta = 0.0f;
	return cublasGemmStridedBatchedEx(hd, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
	                                  &alpha, b, CUDA_R_16BF, ldb, sb, a, CUDA_R_16BF, lda, sa, &beta, c, ct, ldc, sc,
	                                  batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

const int kCublasBase = 10000; /* as in gemm.cu */

int64_t scores_bytes(int64_t t, int chunk)
{
	int64_t rows = (t + chunk - 1) / chunk * chunk;
	return (rows * chunk * 4 + 255) / 256 * 256;
}

} // namespace

extern "C" int64_t kn_cuda_chunk_fwd_scratch_bytes(int64_t t, int chunk)
{
	if (t <= 0 || chunk <= 0)
		return 0;
	int64_t rows = (t + chunk - 1) / chunk * chunk;
	return scores_bytes(t, chunk) + rows * chunk * 2;
}

extern "C" int kn_cuda_chunk_fwd(void *cublas, void *stream, const void *q_bf16, const void *k_bf16,
                                 const void *v_bf16, const int *doc_id, int64_t t, int h, int chunk, void *scratch,
                                 void *out_bf16)
{
	cublasHandle_t hd = (cublasHandle_t)cublas;
	float *s = (float *)scratch;
	__nv_bfloat16 *p = (__nv_bfloat16 *)((char *)scratch + scores_bytes(t, chunk));
	const __nv_bfloat16 *q = (const __nv_bfloat16 *)q_bf16, *k = (const __nv_bfloat16 *)k_bf16;
	const __nv_bfloat16 *v = (const __nv_bfloat16 *)v_bf16;
	__nv_bfloat16 *o = (__nv_bfloat16 *)out_bf16;
	const int64_t full = t / chunk, rem = t - full * chunk, tail = full * chunk;
	const float scale = 1.0f / sqrtf((float)h);
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;

	if (t <= 0)
		return 0;
	if (chunk < 1 || chunk > 1024 || h < 1)
		return -(int)cudaErrorInvalidValue;
	/* S_b = scale Q_b K_b^T (chunk x chunk per chunk; the tail chunk is rem x rem at the same pitch) */
	if (full > 0)
		st = gemm_rm(hd, chunk, chunk, h, scale, q, h, (int64_t)chunk * h, 0, k, h, (int64_t)chunk * h, 1, s, CUDA_R_32F,
		             chunk, (int64_t)chunk * chunk, (int)full);
	if (st == CUBLAS_STATUS_SUCCESS && rem > 0)
		st = gemm_rm(hd, (int)rem, (int)rem, h, scale, q + tail * h, h, 0, 0, k + tail * h, h, 0, 1, s + tail * chunk,
		             CUDA_R_32F, chunk, 0, 1);
	if (st != CUBLAS_STATUS_SUCCESS)
		return -(kCublasBase + (int)st);
	kn_chunk_softmax_kernel<<<(unsigned)((t + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0,
	                          (cudaStream_t)stream>>>(s, doc_id, t, chunk, p);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return -(int)e;
	/* O_b = P_b V_b */
	if (full > 0)
		st = gemm_rm(hd, chunk, h, chunk, 1.0f, p, chunk, (int64_t)chunk * chunk, 0, v, h, (int64_t)chunk * h, 0, o,
		             CUDA_R_16BF, h, (int64_t)chunk * h, (int)full);
	if (st == CUBLAS_STATUS_SUCCESS && rem > 0)
		st = gemm_rm(hd, (int)rem, h, (int)rem, 1.0f, p + tail * chunk, chunk, 0, 0, v + tail * h, h, 0, 0, o + tail * h,
		             CUDA_R_16BF, h, 0, 1);
	if (st != CUBLAS_STATUS_SUCCESS)
		return -(kCublasBase + (int)st);
	return 0;
}
