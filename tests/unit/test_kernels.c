/* test_kernels.c — the pipeline's CPU kernel twins against naive double-precision references. */
#include "kernels.h"
#include "testhelp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng_state = 12345;
static float frand(void) /* [-1, 1) */
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}
static float *rand_buf(size_t n)
{
	float *p = malloc(n * sizeof *p);
	for (size_t i = 0; i < n; i++)
		p[i] = frand();
	return p;
}
static double rel_err(const float *x, const float *ref, size_t n)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (x[i] != x[i])
			return INFINITY;
		num += ((double)x[i] - ref[i]) * ((double)x[i] - ref[i]);
		den += (double)ref[i] * ref[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void test_gemm(void)
{
	const int m = 77, n = 301, k = 133; /* not multiples of the blocks */
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			float *a = rand_buf((size_t)m * k), *b = rand_buf((size_t)k * n);
			float *c = rand_buf((size_t)m * n), *r = malloc((size_t)m * n * sizeof(float));
			memcpy(r, c, (size_t)m * n * sizeof(float));
			int lda = ta ? m : k, ldb = tb ? k : n;
			float beta = ta ? 0.5f : 0.0f;
			/* independent reference, written here */
			for (int i = 0; i < m; i++)
				for (int j = 0; j < n; j++) {
					double s = 0;
					for (int kk = 0; kk < k; kk++)
						s += (double)(ta ? a[kk * lda + i] : a[i * lda + kk]) *
						     (tb ? b[j * ldb + kk] : b[kk * ldb + j]);
					r[i * n + j] = (float)(s + beta * r[i * n + j]);
				}
			kn_cpu_gemm(m, n, k, a, lda, ta, b, ldb, tb, c, n, beta);
			double e = rel_err(c, r, (size_t)m * n);
			th_check(e < 1e-5, "gemm ta=%d tb=%d beta=%g matches reference (rel err %.2e)", ta, tb, beta, e);
			kn_ref_gemm(m, n, k, a, lda, ta, b, ldb, tb, c, n, 0.0f);
			if (beta == 0.0f) {
				e = rel_err(c, r, (size_t)m * n);
				th_check(e < 1e-6, "kn_ref_gemm ta=%d tb=%d agrees (rel err %.2e)", ta, tb, e);
			}
			free(a); free(b); free(c); free(r);
		}
}

static void test_embed(void)
{
	const int rows = 64, h = 96;
	float *x = malloc(sizeof(float) * rows * h), *y = malloc(sizeof(float) * rows * h);
	kn_cpu_embed(x, rows, h, 7);
	kn_cpu_embed(y, rows, h, 7);
	int in_range = 1, same = memcmp(x, y, sizeof(float) * rows * h) == 0;
	double mean = 0;
	for (int i = 0; i < rows * h; i++) {
		in_range &= x[i] >= -1.0f && x[i] < 1.0f;
		mean += x[i];
	}
	mean /= rows * h;
	th_check(in_range, "embed values lie in [-1, 1)");
	th_check(same, "embed is deterministic");
	th_check(fabs(mean) < 0.05, "embed values are centred (mean %.4f)", mean);
	kn_cpu_embed(y, rows, h, 8);
	int differ = 0;
	for (int i = 0; i < rows * h; i++)
		differ += x[i] != y[i];
	th_check(differ > rows * h * 9 / 10, "another seed gives other values (%d of %d differ)", differ, rows * h);
	th_check(x[5 * h + 3] == kn_embed_value(7, 5, 3), "embed element equals kn_embed_value");
	free(x); free(y);
}

static void test_act(void)
{
	const int n = 4001;
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
	float *dy = malloc(n * sizeof(float)), *dx = malloc(n * sizeof(float));
	for (int i = 0; i < n; i++) {
		x[i] = -6.0f + 12.0f * i / (n - 1);
		dy[i] = frand();
	}
	kn_cpu_act_fwd(x, y, n);
	double worst = 0;
	for (int i = 0; i < n; i++) { /* exact GELU via erf; the tanh form is within ~1e-3 */
		double ref = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
		worst = fmax(worst, fabs(y[i] - ref));
	}
	th_check(worst < 2e-3, "act_fwd matches erf GELU (max abs err %.2e)", worst);
	kn_cpu_act_bwd(x, dy, dx, n);
	worst = 0;
	for (int i = 0; i < n; i++) { /* central difference of the tanh form, in double */
		double hstep = 1e-3, xp = x[i] + hstep, xm = x[i] - hstep, c0 = sqrt(2.0 / M_PI);
		double fp = 0.5 * xp * (1 + tanh(c0 * (xp + 0.044715 * xp * xp * xp)));
		double fm = 0.5 * xm * (1 + tanh(c0 * (xm + 0.044715 * xm * xm * xm)));
		worst = fmax(worst, fabs(dx[i] - dy[i] * (fp - fm) / (2 * hstep)));
	}
	th_check(worst < 1e-4, "act_bwd matches the numerical derivative (max abs err %.2e)", worst);
	kn_cpu_act_fwd(x, x, n);
	th_check(memcmp(x, y, n * sizeof(float)) == 0, "act_fwd works in place");
	free(x); free(y); free(dy); free(dx);
}

static void test_doc_pack(void)
{
	int lens[] = { 3, 0, 5, 1, 7 }, nd = 5, lmax = 7, h = 10;
	int ids[16], rows[16];
	int64_t t = kn_cpu_doc_ids(lens, nd, lmax, ids, rows);
	th_check(t == 16, "doc_ids returns the token count (%lld)", (long long)t);
	int ok = 1, pos = 0;
	for (int d = 0; d < nd; d++)
		for (int p = 0; p < lens[d]; p++, pos++)
			ok &= ids[pos] == d && rows[pos] == d * lmax + p;
	th_check(ok, "doc_ids is repeat_interleave(arange, lens) with source rows");
	float *src = rand_buf((size_t)nd * lmax * h), *dst = malloc(sizeof(float) * 16 * h);
	kn_cpu_pack_rows(src, rows, t, h, dst);
	ok = 1;
	for (int i = 0; i < t; i++)
		for (int c = 0; c < h; c++)
			ok &= dst[i * h + c] == src[rows[i] * h + c];
	th_check(ok, "pack_rows gathers the source rows");
	free(src); free(dst);
}

static void test_chunk_fwd(void)
{
	const int t = 150, h = 24, chunk = 32;
	int lens[] = { 40, 1, 70, 39 }, ids[150], rows[150];
	kn_cpu_doc_ids(lens, 4, 70, ids, rows);
	float *q = rand_buf((size_t)t * h), *k = rand_buf((size_t)t * h), *v = rand_buf((size_t)t * h);
	float *o = malloc(sizeof(float) * t * h), *r = malloc(sizeof(float) * t * h);
	for (int i = 0; i < t; i++) {
		double s[150], mx = -1e300, sum = 0;
		int c0 = i / chunk * chunk;
		for (int j = c0; j <= i; j++) {
			if (ids[j] != ids[i]) continue;
			double d = 0;
			for (int c = 0; c < h; c++) d += (double)q[i * h + c] * k[j * h + c];
			s[j] = d / sqrt((double)h);
			if (s[j] > mx) mx = s[j];
		}
		for (int j = c0; j <= i; j++)
			if (ids[j] == ids[i]) { s[j] = exp(s[j] - mx); sum += s[j]; }
		for (int c = 0; c < h; c++) {
			double acc = 0;
			for (int j = c0; j <= i; j++)
				if (ids[j] == ids[i]) acc += s[j] / sum * v[j * h + c];
			r[i * h + c] = (float)acc;
		}
	}
	kn_cpu_chunk_fwd(q, k, v, ids, t, h, chunk, o);
	double e = rel_err(o, r, (size_t)t * h);
	th_check(e < 1e-5, "chunk_fwd matches the reference attention (rel err %.2e)", e);
	/* token 40 is a one-token document: its output is its own value row */
	th_check(memcmp(o + 40 * h, v + 40 * h, h * sizeof(float)) == 0, "a one-token document attends to itself only");
	free(q); free(k); free(v); free(o); free(r);
}

static void test_loss_adam(void)
{
	const int n = 1000;
	float *y = rand_buf(n), *tg = rand_buf(n), *dy = malloc(n * sizeof(float));
	double ref = 0, worst = 0;
	double loss = kn_cpu_loss_grad(y, tg, dy, n, 0.25f);
	for (int i = 0; i < n; i++) {
		double d = (double)y[i] - tg[i];
		ref += d * d;
		worst = fmax(worst, fabs(dy[i] - 0.25 * d));
	}
	th_check(fabs(loss - ref) < 1e-6 * ref, "loss_grad returns the sum of squares (%.6f vs %.6f)", loss, ref);
	th_check(worst < 1e-6, "loss_grad writes scale * (y - target)");

	float *w = rand_buf(n), *g = rand_buf(n), *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
	double *wr = malloc(n * sizeof(double)), *mr = calloc(n, sizeof(double)), *vr = calloc(n, sizeof(double));
	for (int i = 0; i < n; i++) wr[i] = w[i];
	for (int step = 1; step <= 5; step++) {
		for (int i = 0; i < n; i++) g[i] = frand();
		kn_cpu_adam(w, m, v, g, n, 1e-2f, 0.9f, 0.999f, 1e-8f, step);
		for (int i = 0; i < n; i++) {
			mr[i] = 0.9 * mr[i] + 0.1 * g[i];
			vr[i] = 0.999 * vr[i] + 0.001 * (double)g[i] * g[i];
			wr[i] -= 1e-2 * (mr[i] / (1 - pow(0.9, step))) / (sqrt(vr[i] / (1 - pow(0.999, step))) + 1e-8);
		}
	}
	worst = 0;
	for (int i = 0; i < n; i++) worst = fmax(worst, fabs(w[i] - wr[i]));
	th_check(worst < 1e-5, "adam matches the double reference over 5 steps (max abs err %.2e)", worst);
	free(y); free(tg); free(dy); free(w); free(g); free(m); free(v); free(wr); free(mr); free(vr);
}

static void test_halfs(void)
{
	th_check(kn_f32_to_bf16(1.0f) == 0x3f80, "bf16(1.0) = 0x3f80");
	th_check(kn_f32_to_bf16(-2.5f) == 0xc020, "bf16(-2.5) = 0xc020");
	/* 1 + 2^-8 is half-way between bf16 1.0 and 1.0078125: ties go to even (1.0) */
	th_check(kn_f32_to_bf16(1.00390625f) == 0x3f80, "bf16 rounds ties to even");
	th_check(kn_f32_to_bf16(1.01171875f) == 0x3f82, "bf16 rounds 1.01171875 up to even 0x3f82");
	th_check(kn_bf16_to_f32(0x4049) == 3.140625f, "bf16 0x4049 reads back 3.140625");
	float worst = 0;
	for (int i = 0; i < 1000; i++) {
		float f = frand() * 100.0f;
		worst = fmaxf(worst, fabsf(kn_bf16_to_f32(kn_f32_to_bf16(f)) - f) / fabsf(f));
	}
	th_check(worst <= 1.0f / 256, "bf16 round trip within half an ulp (rel %.2e)", worst);
	th_check(kn_f32_to_f16(1.0f) == 0x3c00 && kn_f32_to_f16(-2.0f) == 0xc000, "f16 of 1 and -2");
	th_check(kn_f32_to_f16(65504.0f) == 0x7bff && kn_f32_to_f16(1e6f) == 0x7c00, "f16 max and overflow");
	th_check(kn_f32_to_f16(0.1f) == 0x2e66, "f16(0.1) = 0x2e66 (got 0x%04x)", kn_f32_to_f16(0.1f));
	th_check(kn_f32_to_f16(5.9604645e-08f) == 0x0001, "f16 smallest subnormal");
	th_check(strcmp(kn_kernel_name(KN_CHUNK_FWD), "chunk_fwd") == 0 && strcmp(kn_kernel_name(99), "?") == 0,
	         "kernel names");
}

int main(void)
{
	test_gemm();
	test_embed();
	test_act();
	test_doc_pack();
	test_chunk_fwd();
	test_loss_adam();
	test_halfs();
	return th_report();
}
