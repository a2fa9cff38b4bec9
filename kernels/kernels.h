/* kernels.h — the pipeline's compute kernels: CPU twins (kn_cpu_*) and CUDA launchers (kn_cuda_*). */
#ifndef KERNELS_H
#define KERNELS_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions shared by both sides:
 * - matrices are row-major; "h" is the hidden size, "t" a number of tokens (rows);
 * - the CPU twins compute in float (fp32) on float buffers;
 * - the CUDA kernels store activations in bf16 (weights' master copies, gradients and optimizer
 *   state in fp32) and accumulate in fp32, so a CUDA result matches its twin run on the same
 *   bf16-rounded inputs to bf16 precision (relative L2 error around 1e-3..1e-2).
 * - every function is deterministic: same inputs, same outputs (no hidden randomness).
 */

/* Kernel identifiers, used for launch counts (telemetry) and reports. */
enum kn_kernel {
	KN_GEMM,        /* cuBLAS GEMM (one call; cuBLAS may launch one or more kernels) */
	KN_EMBED,       /* hash-based embedding fill */
	KN_ACT_FWD,     /* tanh-GELU, y = gelu(x) */
	KN_ACT_BWD,     /* dx = dy * gelu'(x) */
	KN_DOC_IDS,     /* repeat-interleave of document lengths -> doc id and source row per token */
	KN_PACK_ROWS,   /* gather rows: dst[i] = src[src_row[i]] */
	KN_CHUNK_FWD,   /* chunked causal, document-masked softmax attention */
	KN_LOSS_GRAD,   /* dy = scale * (y - target), loss += sum (y - target)^2 */
	KN_ADAM,        /* Adam step on fp32 master weights (+ low-precision copy on CUDA) */
	KN_COUNT
};

/* The stable name of a kernel id ("gemm", "chunk_fwd", ...); "?" when out of range. */
const char *kn_kernel_name(int id);

/* ---- CPU twins (kernels/cpu_*.c); marked noinline so profiles show them by name ---- */

/* C[m,n] = op(A)[m,k] . op(B)[k,n] (+ beta * C). op(A) is A (stored [m,lda]) or, when ta, A^T
 * (A stored [k,lda]); likewise op(B) with tb (B stored [n,ldb]). Blocked for the cache. */
void kn_cpu_gemm(int m, int n, int k, const float *a, int lda, int ta, const float *b, int ldb,
                 int tb, float *c, int ldc, float beta);

/* The same product computed the obvious way, in double: the reference the tests trust. */
void kn_ref_gemm(int m, int n, int k, const float *a, int lda, int ta, const float *b, int ldb,
                 int tb, float *c, int ldc, float beta);

/* x[r, j] = a value in [-1, 1) hashed from (seed, r, j); rows x h elements. */
void kn_cpu_embed(float *x, int64_t rows, int h, uint32_t seed);

/* The embed value for one element; the CUDA kernel uses the same formula. */
float kn_embed_value(uint32_t seed, int64_t row, int col);

/* y[i] = gelu(x[i]) (tanh approximation) for n elements; x and y may alias. */
void kn_cpu_act_fwd(const float *x, float *y, int64_t n);

/* dx[i] = dy[i] * gelu'(x[i]); dx may alias dy. */
void kn_cpu_act_bwd(const float *x, const float *dy, float *dx, int64_t n);

/* Repeat-interleave: for document d (lens[d] tokens, padded to lmax rows in the source),
 * token t of the packed layout gets doc_id[t] = d and src_row[t] = d * lmax + position.
 * Returns the number of tokens written (sum of lens). */
int64_t kn_cpu_doc_ids(const int *lens, int n_docs, int lmax, int *doc_id, int *src_row);

/* dst[i, :] = src[src_row[i], :] for i < t (h columns). */
void kn_cpu_pack_rows(const float *src, const int *src_row, int64_t t, int h, float *dst);

/* Chunked attention-like forward: for token i, keys j in i's chunk (chunk-aligned window),
 * j <= i and doc_id[j] == doc_id[i]; out[i] = softmax_j(q_i . k_j / sqrt(h)) . v_j. */
void kn_cpu_chunk_fwd(const float *q, const float *k, const float *v, const int *doc_id,
                      int64_t t, int h, int chunk, float *out);

/* dy[i] = scale * (y[i] - target[i]); returns sum (y - target)^2 (accumulated in double). */
double kn_cpu_loss_grad(const float *y, const float *target, float *dy, int64_t n, float scale);

/* One Adam step (bias-corrected, step >= 1) on n fp32 weights with fp32 moments. */
void kn_cpu_adam(float *w, float *m, float *v, const float *g, int64_t n, float lr, float beta1,
                 float beta2, float eps, int step);

/* ---- bf16 helpers (host side; round to nearest even, like the CUDA intrinsics) ---- */
uint16_t kn_f32_to_bf16(float f);
float kn_bf16_to_f32(uint16_t b);
uint16_t kn_f32_to_f16(float f);

/* ---- CUDA launchers (kernels/ .cu files; exist only in CUDA builds, GT_HAVE_CUDA) ----
 * stream is a cudaStream_t, cublas a cublasHandle_t; pointers are device pointers; "bf16"
 * buffers hold __nv_bfloat16. Each returns 0 or a negative code for kn_cuda_strerror(). Launch
 * errors are checked right after the launch (cudaGetLastError), not by synchronizing. */
enum kn_dtype { KN_BF16 = 0, KN_F16 = 1 };

/* C = op(A) . op(B) in row-major terms, as kn_cpu_gemm; A and B of type dtype, C of type dtype
 * or fp32 (c_f32), fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F). */
int kn_cuda_gemm(void *cublas, int dtype, int m, int n, int k, const void *a, int lda, int ta,
                 const void *b, int ldb, int tb, void *c, int ldc, int c_f32, float beta);
int kn_cuda_embed(void *stream, void *x_bf16, int64_t rows, int h, uint32_t seed);
int kn_cuda_act_fwd(void *stream, const void *x_bf16, void *y_bf16, int64_t n);
int kn_cuda_act_bwd(void *stream, const void *x_bf16, const void *dy_bf16, void *dx_bf16, int64_t n);
/* lens is a device array of n_docs ints; writes doc_id and src_row (device int arrays). */
int kn_cuda_doc_ids(void *stream, const int *lens, int n_docs, int lmax, int *doc_id, int *src_row);
int kn_cuda_pack_rows(void *stream, const void *src_bf16, const int *src_row, int64_t t, int h,
                      void *dst_bf16);
/* chunk_fwd as PyTorch would write it, on the tensor cores: per chunk S = Q K^T (cuBLAS strided
 * batched GEMM, fp32 scores), kn_chunk_softmax (masked to the causal same-document window,
 * bf16 weights), then O = P V (cuBLAS). cublas must already be bound to stream. scratch holds
 * kn_cuda_chunk_fwd_scratch_bytes(t, chunk) bytes of device memory. */
int kn_cuda_chunk_fwd(void *cublas, void *stream, const void *q_bf16, const void *k_bf16,
                      const void *v_bf16, const int *doc_id, int64_t t, int h, int chunk,
                      void *scratch, void *out_bf16);
int64_t kn_cuda_chunk_fwd_scratch_bytes(int64_t t, int chunk);
/* loss (a device float) is accumulated into, not reset: zero it first (cudaMemsetAsync). */
int kn_cuda_loss_grad(void *stream, const void *y_bf16, const void *target_bf16, void *dy_bf16,
                      int64_t n, float scale, float *loss);
/* w_bf16 (may be NULL) receives the updated weights rounded to bf16. */
int kn_cuda_adam(void *stream, float *w, float *m, float *v, const float *g, void *w_bf16,
                 int64_t n, float lr, float beta1, float beta2, float eps, int step);
/* The text for a code returned by a kn_cuda_* function (CUDA runtime or cuBLAS). */
const char *kn_cuda_strerror(int rc);

#ifdef __cplusplus
}
#endif
#endif
