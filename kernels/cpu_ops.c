/* cpu_ops.c — CPU twins of the pipeline's custom kernels (embed, GELU, doc ids, pack, chunk_fwd, loss, Adam). */
#include "kernels.h"

#include <math.h>
#include <string.h>

static const char *const kernel_names[KN_COUNT] = {
	[KN_GEMM] = "gemm",           [KN_EMBED] = "embed",         [KN_ACT_FWD] = "act_fwd",
	[KN_ACT_BWD] = "act_bwd",     [KN_DOC_IDS] = "doc_ids",     [KN_PACK_ROWS] = "pack_rows",
	[KN_CHUNK_FWD] = "chunk_fwd", [KN_LOSS_GRAD] = "loss_grad", [KN_ADAM] = "adam",
};

const char *kn_kernel_name(int id)
{
	return id >= 0 && id < KN_COUNT ? kernel_names[id] : "?";
}

float kn_embed_value(uint32_t seed, int64_t row, int col)
{
	uint32_t x = seed + (uint32_t)row * 0x9E3779B1u + (uint32_t)((uint64_t)row >> 32) * 0x7FEB352Du +
	             (uint32_t)col * 0x85EBCA77u;
	x ^= x >> 16;
	x *= 0x7FEB352Du;
	x ^= x >> 15;
	x *= 0x846CA68Bu;
	x ^= x >> 16;
	/* 24 random bits scaled exactly into [-1, 1): the same float on CPU and GPU. */
	return (float)(x >> 8) * (1.0f / 8388608.0f) - 1.0f;
}

__attribute__((noinline)) void kn_cpu_embed(float *x, int64_t rows, int h, uint32_t seed)
{
	for (int64_t r = 0; r < rows; r++)
		for (int j = 0; j < h; j++)
			x[r * h + j] = kn_embed_value(seed, r, j);
}

#define GELU_C0 0.7978845608f /* sqrt(2 / pi) */
#define GELU_C1 0.044715f

__attribute__((noinline)) void kn_cpu_act_fwd(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		y[i] = 0.5f * v * (1.0f + tanhf(GELU_C0 * (v + GELU_C1 * v * v * v)));
	}
}

__attribute__((noinline)) void kn_cpu_act_bwd(const float *x, const float *dy, float *dx, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float th = tanhf(GELU_C0 * (v + GELU_C1 * v * v * v));
		float d = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * GELU_C0 * (1.0f + 3.0f * GELU_C1 * v * v);
		dx[i] = dy[i] * d;
	}
}

__attribute__((noinline)) int64_t kn_cpu_doc_ids(const int *lens, int n_docs, int lmax, int *doc_id,
                                                 int *src_row)
{
	int64_t t = 0;
	for (int d = 0; d < n_docs; d++)
		for (int p = 0; p < lens[d]; p++, t++) {
			doc_id[t] = d;
			src_row[t] = d * lmax + p;
		}
	return t;
}

__attribute__((noinline)) void kn_cpu_pack_rows(const float *src, const int *src_row, int64_t t, int h,
                                                float *dst)
{
	for (int64_t i = 0; i < t; i++)
		memcpy(dst + i * h, src + (int64_t)src_row[i] * h, (size_t)h * sizeof(float));
}

static float dot(const float *a, const float *b, int h)
{
	float s = 0;
	for (int j = 0; j < h; j++)
		s += a[j] * b[j];
	return s;
}

__attribute__((noinline)) void kn_cpu_chunk_fwd(const float *q, const float *k, const float *v,
                                                const int *doc_id, int64_t t, int h, int chunk,
                                                float *out)
{
	float p[1024];
	const float scale = 1.0f / sqrtf((float)h);

	if (chunk > 1024)
		chunk = 1024;
	for (int64_t i = 0; i < t; i++) {
		int64_t c0 = i / chunk * chunk;
		float mx = -INFINITY, sum = 0;
		float *o = out + i * h;
		for (int64_t j = c0; j <= i; j++) {
			float s = doc_id[j] == doc_id[i] ? dot(q + i * h, k + j * h, h) * scale : -INFINITY;
			p[j - c0] = s;
			if (s > mx)
				mx = s;
		}
		for (int64_t j = c0; j <= i; j++) {
			p[j - c0] = p[j - c0] == -INFINITY ? 0.0f : expf(p[j - c0] - mx);
			sum += p[j - c0];
		}
		memset(o, 0, (size_t)h * sizeof(float));
		for (int64_t j = c0; j <= i; j++) {
			float w = p[j - c0] / sum;
			if (w == 0.0f)
				continue;
			const float *vj = v + j * h;
			for (int c = 0; c < h; c++)
				o[c] += w * vj[c];
		}
	}
}

__attribute__((noinline)) double kn_cpu_loss_grad(const float *y, const float *target, float *dy,
                                                  int64_t n, float scale)
{
	double loss = 0;
	for (int64_t i = 0; i < n; i++) {
		float d = y[i] - target[i];
		loss += (double)d * d;
		dy[i] = scale * d;
	}
	return loss;
}

__attribute__((noinline)) void kn_cpu_adam(float *w, float *m, float *v, const float *g, int64_t n,
                                           float lr, float beta1, float beta2, float eps, int step)
{
	const float c1 = 1.0f / (1.0f - powf(beta1, (float)step));
	const float c2 = 1.0f / (1.0f - powf(beta2, (float)step));
	for (int64_t i = 0; i < n; i++) {
		float gi = g[i];
		m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
		v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
		w[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
	}
}

uint16_t kn_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0;
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float kn_bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

uint16_t kn_f32_to_f16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	float a = fabsf(f);
	if (a != a)
		return 0x7e00;
	if (a >= 65520.0f)
		return sign | 0x7c00;
	if (a < 6.103515625e-05f) /* subnormal: units of 2^-24, round to nearest */
		return sign | (uint16_t)lrintf(a * 16777216.0f);
	int e;
	float mant = frexpf(a, &e); /* a = mant * 2^e, mant in [0.5, 1) */
	long q = lrintf(mant * 2048.0f); /* 11 significant bits */
	if (q == 2048) {
		q = 1024;
		e++;
	}
	return sign | (uint16_t)(((e + 14) << 10) | (q - 1024));
}
