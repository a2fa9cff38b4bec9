/* cpu_gemm.c — the CPU twin of the cuBLAS GEMM: a cache-blocked fp32 product, and a naive reference. */
#include "kernels.h"

#include <string.h>

enum { GEMM_MB = 64, GEMM_NB = 256, GEMM_KB = 128 };

static inline float op_a(const float *a, int lda, int ta, int i, int kk)
{
	return ta ? a[(size_t)kk * lda + i] : a[(size_t)i * lda + kk];
}

/* Copies op(B)[k0:k0+kb, j0:j0+nb] into a contiguous kb x nb panel. */
static __attribute__((noinline)) void kn_cpu_gemm_pack_b(const float *b, int ldb, int tb, int k0,
                                                         int kb, int j0, int nb, float *panel)
{
	for (int kk = 0; kk < kb; kk++) {
		float *dst = panel + (size_t)kk * nb;
		if (!tb) {
			memcpy(dst, b + (size_t)(k0 + kk) * ldb + j0, (size_t)nb * sizeof(float));
		} else {
			for (int j = 0; j < nb; j++)
				dst[j] = b[(size_t)(j0 + j) * ldb + k0 + kk];
		}
	}
}

/* 4 floats as one GCC vector (an SSE register on baseline x86-64), so the inner loop is SIMD
 * whatever the optimisation level's vectoriser decides. */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
	v4f v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void store4(float *p, v4f v)
{
	memcpy(p, &v, sizeof v);
}

/* C[i0:i0+mb, j0:j0+nb] += op(A)[i0:, k0:k0+kb] . panel: the hot inner loop, 16 columns of a
 * row at a time in four independent accumulators. */
static __attribute__((noinline)) void kn_cpu_gemm_block(const float *a, int lda, int ta, int i0,
                                                        int mb, int k0, int kb, const float *panel,
                                                        int nb, float *c, int ldc, int j0)
{
	const int nb16 = nb & ~15;
	for (int i = i0; i < i0 + mb; i++) {
		float *restrict crow = c + (size_t)i * ldc + j0;
		for (int j = 0; j < nb16; j += 16) {
			v4f c0 = load4(crow + j), c1 = load4(crow + j + 4);
			v4f c2 = load4(crow + j + 8), c3 = load4(crow + j + 12);
			const float *bp = panel + j;
			for (int kk = 0; kk < kb; kk++, bp += nb) {
				const float av = op_a(a, lda, ta, i, k0 + kk);
				c0 += av * load4(bp);
				c1 += av * load4(bp + 4);
				c2 += av * load4(bp + 8);
				c3 += av * load4(bp + 12);
			}
			store4(crow + j, c0);
			store4(crow + j + 4, c1);
			store4(crow + j + 8, c2);
			store4(crow + j + 12, c3);
		}
		for (int j = nb16; j < nb; j++) {
			float acc = crow[j];
			for (int kk = 0; kk < kb; kk++)
				acc += op_a(a, lda, ta, i, k0 + kk) * panel[(size_t)kk * nb + j];
			crow[j] = acc;
		}
	}
}

__attribute__((noinline)) void kn_cpu_gemm(int m, int n, int k, const float *a, int lda, int ta,
                                           const float *b, int ldb, int tb, float *c, int ldc,
                                           float beta)
{
	/* 128 KiB on the stack, kept there on purpose: no DWARF stack copy (perf's limit is
	 * 64 KiB) reaches the callers above it, which is how a profiler's truncated stacks show
	 * up in practice; tests/cli/analyze_truncated.sh checks that the default recording still
	 * reaches the root (through the frame-pointer callchain) */
	float panel[GEMM_KB * GEMM_NB];

	for (int i = 0; i < m; i++) {
		float *crow = c + (size_t)i * ldc;
		if (beta == 0.0f)
			memset(crow, 0, (size_t)n * sizeof(float));
		else if (beta != 1.0f)
			for (int j = 0; j < n; j++)
				crow[j] *= beta;
	}
	for (int j0 = 0; j0 < n; j0 += GEMM_NB) {
		int nb = n - j0 < GEMM_NB ? n - j0 : GEMM_NB;
		for (int k0 = 0; k0 < k; k0 += GEMM_KB) {
			int kb = k - k0 < GEMM_KB ? k - k0 : GEMM_KB;
			kn_cpu_gemm_pack_b(b, ldb, tb, k0, kb, j0, nb, panel);
			for (int i0 = 0; i0 < m; i0 += GEMM_MB) {
				int mb = m - i0 < GEMM_MB ? m - i0 : GEMM_MB;
				kn_cpu_gemm_block(a, lda, ta, i0, mb, k0, kb, panel, nb, c, ldc, j0);
			}
		}
	}
}

void kn_ref_gemm(int m, int n, int k, const float *a, int lda, int ta, const float *b, int ldb,
                 int tb, float *c, int ldc, float beta)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int kk = 0; kk < k; kk++) {
				double av = ta ? a[(size_t)kk * lda + i] : a[(size_t)i * lda + kk];
				double bv = tb ? b[(size_t)j * ldb + kk] : b[(size_t)kk * ldb + j];
				s += av * bv;
			}
			float *cp = c + (size_t)i * ldc + j;
			*cp = (float)(s + (beta == 0.0f ? 0.0 : (double)beta * *cp));
		}
}
