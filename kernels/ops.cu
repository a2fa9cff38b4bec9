/* ops.cu — the pipeline's custom CUDA kernels (bf16 storage, fp32 math), twins of kernels/cpu_ops.c. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

typedef __nv_bfloat16 bf16;

namespace {

const int kThreads = 256;
const int64_t kMaxBlocks = 8192; /* grid-stride beyond this: ~60 blocks per SM on an H200 */

int blocks_for(int64_t work, int per_block = kThreads)
{
	int64_t b = (work + per_block - 1) / per_block;
	return (int)(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

int launch_rc()
{
	cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : -(int)e;
}

/* 8 bf16 values moved as one 16-byte access. */
struct __align__(16) bf16x8 {
	__nv_bfloat162 v[4];
};

__device__ __forceinline__ void unpack8(const bf16x8 &p, float *f)
{
#pragma unroll
	for (int k = 0; k < 4; k++) {
		float2 t = __bfloat1622float2(p.v[k]);
		f[2 * k] = t.x;
		f[2 * k + 1] = t.y;
	}
}

__device__ __forceinline__ bf16x8 pack8(const float *f)
{
	bf16x8 p;
#pragma unroll
	for (int k = 0; k < 4; k++)
		p.v[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
	return p;
}

__device__ __forceinline__ float embed_value(uint32_t seed, int64_t row, int col)
{
	uint32_t x = seed + (uint32_t)row * 0x9E3779B1u + (uint32_t)((uint64_t)row >> 32) * 0x7FEB352Du +
	             (uint32_t)col * 0x85EBCA77u;
	x ^= x >> 16;
	x *= 0x7FEB352Du;
	x ^= x >> 15;
	x *= 0x846CA68Bu;
	x ^= x >> 16;
	return (float)(x >> 8) * (1.0f / 8388608.0f) - 1.0f;
}

const float kGeluC0 = 0.7978845608f;
const float kGeluC1 = 0.044715f;

__device__ __forceinline__ float gelu(float v)
{
	return 0.5f * v * (1.0f + tanhf(kGeluC0 * (v + kGeluC1 * v * v * v)));
}

__device__ __forceinline__ float gelu_grad(float v)
{
	float th = tanhf(kGeluC0 * (v + kGeluC1 * v * v * v));
	return 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * kGeluC0 * (1.0f + 3.0f * kGeluC1 * v * v);
}

/* h is a multiple of 8, so rows * h is too. */
__global__ void kn_embed_kernel(bf16x8 *x, int64_t rows, int h, uint32_t seed)
{
	const int64_t n8 = rows * h / 8;
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t e = i * 8, r = e / h;
		int c = (int)(e - r * h);
		float f[8];
#pragma unroll
		for (int k = 0; k < 8; k++)
			f[k] = embed_value(seed, r, c + k);
		x[i] = pack8(f);
	}
}

/* Elementwise kernels: 8 elements per thread step, then a scalar tail for n % 8. */
__global__ void kn_act_fwd_kernel(const bf16 *x, bf16 *y, int64_t n)
{
	const int64_t n8 = n / 8, stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	for (int64_t i = tid; i < n8; i += stride) {
		float f[8];
		unpack8(reinterpret_cast<const bf16x8 *>(x)[i], f);
#pragma unroll
		for (int k = 0; k < 8; k++)
			f[k] = gelu(f[k]);
		reinterpret_cast<bf16x8 *>(y)[i] = pack8(f);
	}
	for (int64_t i = n8 * 8 + tid; i < n; i += stride)
		y[i] = __float2bfloat16_rn(gelu(__bfloat162float(x[i])));
}

__global__ void kn_act_bwd_kernel(const bf16 *x, const bf16 *dy, bf16 *dx, int64_t n)
{
	const int64_t n8 = n / 8, stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	for (int64_t i = tid; i < n8; i += stride) {
		float fx[8], fd[8];
		unpack8(reinterpret_cast<const bf16x8 *>(x)[i], fx);
		unpack8(reinterpret_cast<const bf16x8 *>(dy)[i], fd);
#pragma unroll
		for (int k = 0; k < 8; k++)
			fd[k] *= gelu_grad(fx[k]);
		reinterpret_cast<bf16x8 *>(dx)[i] = pack8(fd);
	}
	for (int64_t i = n8 * 8 + tid; i < n; i += stride)
		dx[i] = __float2bfloat16_rn(__bfloat162float(dy[i]) * gelu_grad(__bfloat162float(x[i])));
}

/* One block per document: its offset is the sum of the lengths before it (n_docs is small). */
__global__ void kn_doc_ids_kernel(const int *lens, int n_docs, int lmax, int *doc_id, int *src_row)
{
	__shared__ int offset;
	const int d = blockIdx.x;
	if (threadIdx.x == 0) {
		int o = 0;
		for (int i = 0; i < d; i++)
			o += lens[i];
		offset = o;
	}
	__syncthreads();
	const int len = lens[d];
	for (int p = threadIdx.x; p < len; p += blockDim.x) {
		doc_id[offset + p] = d;
		src_row[offset + p] = d * lmax + p;
	}
}

/* One warp per row (rows of h / 8 16-byte vectors), four independent loads in flight per lane
 * before the stores: the gather is latency-bound otherwise. */
__global__ void kn_pack_rows_kernel(const bf16x8 *src, const int *src_row, int64_t t, int h8, bf16x8 *dst)
{
	const int lane = threadIdx.x & 31;
	const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
	for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5; r < t; r += warps) {
		const bf16x8 *s = src + (int64_t)src_row[r] * h8;
		bf16x8 *o = dst + r * h8;
		for (int c = lane; c < h8; c += 128) {
			bf16x8 v[4];
#pragma unroll
			for (int k = 0; k < 4; k++)
				if (c + 32 * k < h8)
					v[k] = s[c + 32 * k];
#pragma unroll
			for (int k = 0; k < 4; k++)
				if (c + 32 * k < h8)
					o[c + 32 * k] = v[k];
		}
	}
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

/* dy = scale * (y - target); the block's sum of squares is added to *loss. */
__global__ void kn_loss_grad_kernel(const bf16 *y, const bf16 *tg, bf16 *dy, int64_t n, float scale, float *loss)
{
	__shared__ float partial[kThreads / 32];
	const int64_t n8 = n / 8, stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	float local = 0.f;
	for (int64_t i = tid; i < n8; i += stride) {
		float fy[8], ft[8];
		unpack8(reinterpret_cast<const bf16x8 *>(y)[i], fy);
		unpack8(reinterpret_cast<const bf16x8 *>(tg)[i], ft);
#pragma unroll
		for (int e = 0; e < 8; e++) {
			float d = fy[e] - ft[e];
			local += d * d;
			fy[e] = scale * d;
		}
		reinterpret_cast<bf16x8 *>(dy)[i] = pack8(fy);
	}
	for (int64_t i = n8 * 8 + tid; i < n; i += stride) {
		float d = __bfloat162float(y[i]) - __bfloat162float(tg[i]);
		local += d * d;
		dy[i] = __float2bfloat16_rn(scale * d);
	}
	local = warp_sum(local);
	if (threadIdx.x % 32 == 0)
		partial[threadIdx.x / 32] = local;
	__syncthreads();
	if (threadIdx.x < 32) {
		float b = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.f;
		b = warp_sum(b);
		if (threadIdx.x == 0)
			atomicAdd(loss, b);
	}
}

__global__ void kn_adam_kernel(float *w, float *m, float *v, const float *g, bf16 *w_bf16, int64_t n, float lr,
                               float beta1, float beta2, float eps, float c1, float c2)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t n4 = n / 4;
	const int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	for (int64_t i = tid; i < n4; i += stride) {
		float4 wv = reinterpret_cast<float4 *>(w)[i], mv = reinterpret_cast<float4 *>(m)[i];
		float4 vv = reinterpret_cast<float4 *>(v)[i], gv = reinterpret_cast<const float4 *>(g)[i];
		float *pw = &wv.x, *pm = &mv.x, *pv = &vv.x, *pg = &gv.x;
#pragma unroll
		for (int e = 0; e < 4; e++) {
			pm[e] = beta1 * pm[e] + (1.0f - beta1) * pg[e];
			pv[e] = beta2 * pv[e] + (1.0f - beta2) * pg[e] * pg[e];
			pw[e] -= lr * (pm[e] * c1) / (sqrtf(pv[e] * c2) + eps);
		}
		reinterpret_cast<float4 *>(w)[i] = wv;
		reinterpret_cast<float4 *>(m)[i] = mv;
		reinterpret_cast<float4 *>(v)[i] = vv;
		if (w_bf16) {
			reinterpret_cast<__nv_bfloat162 *>(w_bf16)[2 * i] = __floats2bfloat162_rn(wv.x, wv.y);
			reinterpret_cast<__nv_bfloat162 *>(w_bf16)[2 * i + 1] = __floats2bfloat162_rn(wv.z, wv.w);
		}
	}
	for (int64_t i = n4 * 4 + tid; i < n; i += stride) {
		m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
		v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
		w[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
		if (w_bf16)
			w_bf16[i] = __float2bfloat16_rn(w[i]);
	}
}

} // namespace

extern "C" int kn_cuda_embed(void *stream, void *x_bf16, int64_t rows, int h, uint32_t seed)
{
	if (h % 8)
		return -(int)cudaErrorInvalidValue;
	int64_t n8 = rows * h / 8;
	if (n8 == 0)
		return 0;
	kn_embed_kernel<<<blocks_for(n8), kThreads, 0, (cudaStream_t)stream>>>((bf16x8 *)x_bf16, rows, h, seed);
	return launch_rc();
}

extern "C" int kn_cuda_act_fwd(void *stream, const void *x_bf16, void *y_bf16, int64_t n)
{
	if (n <= 0)
		return 0;
	kn_act_fwd_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, (cudaStream_t)stream>>>((const bf16 *)x_bf16,
	                                                                                (bf16 *)y_bf16, n);
	return launch_rc();
}

extern "C" int kn_cuda_act_bwd(void *stream, const void *x_bf16, const void *dy_bf16, void *dx_bf16, int64_t n)
{
	if (n <= 0)
		return 0;
	kn_act_bwd_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, (cudaStream_t)stream>>>(
		(const bf16 *)x_bf16, (const bf16 *)dy_bf16, (bf16 *)dx_bf16, n);
	return launch_rc();
}

extern "C" int kn_cuda_doc_ids(void *stream, const int *lens, int n_docs, int lmax, int *doc_id, int *src_row)
{
	if (n_docs <= 0)
		return 0;
	kn_doc_ids_kernel<<<n_docs, kThreads, 0, (cudaStream_t)stream>>>(lens, n_docs, lmax, doc_id, src_row);
	return launch_rc();
}

extern "C" int kn_cuda_pack_rows(void *stream, const void *src_bf16, const int *src_row, int64_t t, int h,
                                 void *dst_bf16)
{
	if (h % 8)
		return -(int)cudaErrorInvalidValue;
	if (t <= 0)
		return 0;
	int64_t blocks = (t + 7) / 8; /* 8 warps per block, one row each */
	kn_pack_rows_kernel<<<(int)(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, (cudaStream_t)stream>>>(
		(const bf16x8 *)src_bf16, src_row, t, h / 8, (bf16x8 *)dst_bf16);
	return launch_rc();
}

extern "C" int kn_cuda_loss_grad(void *stream, const void *y_bf16, const void *target_bf16, void *dy_bf16,
                                 int64_t n, float scale, float *loss)
{
	if (n <= 0)
		return 0;
	kn_loss_grad_kernel<<<blocks_for((n + 7) / 8), kThreads, 0, (cudaStream_t)stream>>>(
		(const bf16 *)y_bf16, (const bf16 *)target_bf16, (bf16 *)dy_bf16, n, scale, loss);
	return launch_rc();
}

extern "C" int kn_cuda_adam(void *stream, float *w, float *m, float *v, const float *g, void *w_bf16, int64_t n,
                            float lr, float beta1, float beta2, float eps, int step)
{
	if (n <= 0)
		return 0;
	float c1 = 1.0f / (1.0f - powf(beta1, (float)step)), c2 = 1.0f / (1.0f - powf(beta2, (float)step));
	kn_adam_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, (cudaStream_t)stream>>>(w, m, v, g, (bf16 *)w_bf16, n, lr,
	                                                                              beta1, beta2, eps, c1, c2);
	return launch_rc();
}
