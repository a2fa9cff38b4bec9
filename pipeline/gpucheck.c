/* gpucheck.c — --check (CUDA kernels vs CPU twins) and --bench (TFLOP/s, GB/s vs copy bandwidth). */
#include "gpucheck.h"

#include <stdio.h>

#include "pipeline.h"

#ifndef GT_HAVE_CUDA
int pl_gpu_check(int device, uint32_t seed, pl_check_result *out, int max, int *n_out, char *err,
                 size_t errlen)
{
	(void)device;
	(void)seed;
	(void)out;
	(void)max;
	*n_out = 0;
	snprintf(err, errlen, "this gt-pipeline was built without CUDA");
	return PL_ENODEV;
}

int pl_gpu_bench(int device, pl_bench_result *out, int max, int *n_out, char *err, size_t errlen)
{
	(void)device;
	(void)out;
	(void)max;
	*n_out = 0;
	snprintf(err, errlen, "this gt-pipeline was built without CUDA");
	return PL_ENODEV;
}
#else

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

/* The H100/H200 SXM datasheet's dense bf16/fp16 tensor rate: a lead, not a measurement. */
#define DENSE_BF16_PEAK_TFLOPS 989.4

typedef struct gctx {
	int device;
	cudaStream_t st;
	cublasHandle_t cb;
	uint32_t rng;
	char *err;
	size_t errlen;
	int failed;
} gctx;

static int open_ctx(gctx *g, int device, char *err, size_t errlen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	g->device = device;
	g->err = err;
	g->errlen = errlen;
	if (e != cudaSuccess || n == 0) {
		snprintf(err, errlen, "no usable GPU (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
		return PL_ENODEV;
	}
	if (device >= n) {
		snprintf(err, errlen, "device %d does not exist (%d found)", device, n);
		return PL_ENODEV;
	}
	if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaStreamCreate(&g->st)) != cudaSuccess) {
		snprintf(err, errlen, "device %d: %s", device, cudaGetErrorString(e));
		return PL_EBACKEND;
	}
	if (cublasCreate(&g->cb) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g->cb, g->st) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "device %d: cuBLAS initialisation failed", device);
		return PL_EBACKEND;
	}
	return 0;
}

static void close_ctx(gctx *g)
{
	if (g->cb)
		cublasDestroy(g->cb);
	if (g->st)
		cudaStreamDestroy(g->st);
}

/* Records the first failure of a CUDA call or kernel; returns 1 when rc is an error. */
static int bad(gctx *g, const char *what, int rc)
{
	if (rc >= 0)
		return 0;
	if (!g->failed)
		snprintf(g->err, g->errlen, "%s: %s", what, kn_cuda_strerror(rc));
	g->failed = 1;
	return 1;
}

static int cu(cudaError_t e)
{
	return e == cudaSuccess ? 0 : -(int)e;
}

static float frand(gctx *g)
{
	g->rng = g->rng * 1664525u + 1013904223u;
	return (float)(g->rng >> 8) / 8388608.0f - 1.0f;
}

/* n random values rounded to bf16 (or fp16 when f16): floats in *f, bits on the device in *d. */
static int rand_dev(gctx *g, int64_t n, int f16, float **f, void **d)
{
	uint16_t *bits = malloc((size_t)n * 2);
	*f = malloc((size_t)n * sizeof(float));
	*d = NULL;
	if (!bits || !*f) {
		free(bits);
		return -(int)cudaErrorMemoryAllocation;
	}
	for (int64_t i = 0; i < n; i++) {
		float v = frand(g);
		if (f16) {
			bits[i] = kn_f32_to_f16(v);
			(*f)[i] = (float)v; /* replaced below by the exact fp16 value */
		} else {
			bits[i] = kn_f32_to_bf16(v);
			(*f)[i] = kn_bf16_to_f32(bits[i]);
		}
	}
	if (f16) /* fp16 values read back exactly through a device-free decode */
		for (int64_t i = 0; i < n; i++) {
			uint16_t h = bits[i];
			int e = (h >> 10) & 31, m = h & 1023;
			float v = e ? ldexpf((float)(m | 1024), e - 25) : ldexpf((float)m, -24);
			(*f)[i] = (h & 0x8000) ? -v : v;
		}
	int rc = cu(cudaMalloc(d, (size_t)n * 2));
	if (rc == 0)
		rc = cu(cudaMemcpy(*d, bits, (size_t)n * 2, cudaMemcpyHostToDevice));
	free(bits);
	return rc;
}

static void *poisoned(gctx *g, size_t bytes)
{
	void *p = NULL;
	if (bad(g, "cudaMalloc", cu(cudaMalloc(&p, bytes))))
		return NULL;
	bad(g, "cudaMemset", cu(cudaMemset(p, 0xff, bytes))); /* all-ones: NaN in bf16, fp16 and fp32 */
	return p;
}

/* Reads n outputs (bf16 / fp16 bits, or fp32) back as floats. */
static float *read_back(gctx *g, const void *d, int64_t n, int kind /* 0 bf16, 1 f16, 2 f32 */)
{
	float *f = malloc((size_t)n * sizeof(float));
	uint16_t *bits = kind < 2 ? malloc((size_t)n * 2) : NULL;
	if (!f || (kind < 2 && !bits))
		goto fail;
	if (bad(g, "synchronise", cu(cudaStreamSynchronize(g->st))))
		goto fail;
	if (kind == 2) {
		if (bad(g, "read back", cu(cudaMemcpy(f, d, (size_t)n * 4, cudaMemcpyDeviceToHost))))
			goto fail;
		return f;
	}
	if (bad(g, "read back", cu(cudaMemcpy(bits, d, (size_t)n * 2, cudaMemcpyDeviceToHost))))
		goto fail;
	for (int64_t i = 0; i < n; i++) {
		if (kind == 0) {
			f[i] = kn_bf16_to_f32(bits[i]);
		} else {
			uint16_t h = bits[i];
			int e = (h >> 10) & 31, m = h & 1023;
			float v = e == 31 ? NAN : e ? ldexpf((float)(m | 1024), e - 25) : ldexpf((float)m, -24);
			f[i] = (h & 0x8000) ? -v : v;
		}
	}
	free(bits);
	return f;
fail:
	free(f);
	free(bits);
	return NULL;
}

static void compare(pl_check_result *r, const char *name, const float *got, const float *want, int64_t n, double tol)
{
	double num = 0, den = 0, mx = 0;
	int64_t nan = 0;
	snprintf(r->name, sizeof r->name, "%s", name);
	for (int64_t i = 0; i < n; i++) {
		if (isnan(got[i])) {
			nan++;
			continue;
		}
		double d = (double)got[i] - want[i];
		num += d * d;
		den += (double)want[i] * want[i];
		if (fabs(d) > mx)
			mx = fabs(d);
	}
	r->rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
	r->max_abs_err = mx;
	r->tol = tol;
	r->n_unwritten = nan;
	r->ok = nan == 0 && r->rel_err <= tol;
}

static void round_bf16(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = kn_bf16_to_f32(kn_f32_to_bf16(x[i]));
}

typedef struct gemm_case {
	const char *name;
	int dtype, m, n, k, ta, tb, c_f32;
	double tol;
} gemm_case;

static void check_gemm(gctx *g, const gemm_case *gc, pl_check_result *r)
{
	float *fa = NULL, *fb = NULL, *got = NULL, *want = NULL;
	void *da = NULL, *db = NULL, *dc = NULL;
	int64_t na = (int64_t)gc->m * gc->k, nb = (int64_t)gc->k * gc->n, nc = (int64_t)gc->m * gc->n;
	int f16 = gc->dtype == KN_F16;

	if (bad(g, "upload", rand_dev(g, na, f16, &fa, &da)) || bad(g, "upload", rand_dev(g, nb, f16, &fb, &db)))
		goto out;
	if (!(dc = poisoned(g, (size_t)nc * (gc->c_f32 ? 4 : 2))))
		goto out;
	int lda = gc->ta ? gc->m : gc->k, ldb = gc->tb ? gc->k : gc->n;
	if (bad(g, gc->name, kn_cuda_gemm(g->cb, gc->dtype, gc->m, gc->n, gc->k, da, lda, gc->ta, db, ldb, gc->tb, dc,
	                                  gc->n, gc->c_f32, 0.0f)))
		goto out;
	if (!(got = read_back(g, dc, nc, gc->c_f32 ? 2 : f16)) || !(want = malloc((size_t)nc * sizeof(float))))
		goto out;
	kn_ref_gemm(gc->m, gc->n, gc->k, fa, lda, gc->ta, fb, ldb, gc->tb, want, gc->n, 0.0f);
	compare(r, gc->name, got, want, nc, gc->tol);
out:
	free(fa);
	free(fb);
	free(got);
	free(want);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
}

/* Elementwise and data-movement kernels on one shared set of inputs. */
static int check_ops(gctx *g, pl_check_result *res, int max)
{
	enum { H = 264, ND = 5, LMAX = 200, T = 337 };
	const int lens[ND] = { 37, 1, 200, 0, 99 };
	const int64_t N = (int64_t)ND * LMAX * H + 5; /* covers the pack source; odd: scalar tails */
	float *fx = NULL, *fy = NULL, *fz = NULL, *got = NULL, *want = NULL, *want2 = NULL;
	void *dx = NULL, *dy = NULL, *dz = NULL, *dout = NULL;
	int *dlens = NULL, *dids = NULL, *drows = NULL, hids[T], hrows[T], gids[T], grows[T];
	float *dloss = NULL, loss_gpu = 0;
	int n = 0;

	if (bad(g, "upload", rand_dev(g, N, 0, &fx, &dx)) || bad(g, "upload", rand_dev(g, N, 0, &fy, &dy)) ||
	    bad(g, "upload", rand_dev(g, N, 0, &fz, &dz)))
		goto out;
	want = malloc((size_t)N * sizeof(float));
	want2 = malloc((size_t)N * sizeof(float));
	if (!want || !want2)
		goto out;

	/* embed: integer hash to float, exact on both sides before the bf16 rounding */
	if (n < max && (dout = poisoned(g, (size_t)N * 2))) {
		if (!bad(g, "embed", kn_cuda_embed(g->st, dout, 333, H, 4242)) && (got = read_back(g, dout, 333 * H, 0))) {
			kn_cpu_embed(want, 333, H, 4242);
			round_bf16(want, 333 * H);
			compare(&res[n++], "embed", got, want, 333 * H, 1e-7);
		}
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
	if (n < max && (dout = poisoned(g, (size_t)N * 2))) {
		if (!bad(g, "act_fwd", kn_cuda_act_fwd(g->st, dx, dout, N)) && (got = read_back(g, dout, N, 0))) {
			kn_cpu_act_fwd(fx, want, N);
			compare(&res[n++], "act_fwd", got, want, N, 1e-2);
		}
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
	if (n < max && (dout = poisoned(g, (size_t)N * 2))) {
		if (!bad(g, "act_bwd", kn_cuda_act_bwd(g->st, dx, dy, dout, N)) && (got = read_back(g, dout, N, 0))) {
			kn_cpu_act_bwd(fx, fy, want, N);
			compare(&res[n++], "act_bwd", got, want, N, 1e-2);
		}
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
	/* doc_ids + pack_rows */
	if (bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dlens, sizeof lens))) ||
	    bad(g, "upload", cu(cudaMemcpy(dlens, lens, sizeof lens, cudaMemcpyHostToDevice))) ||
	    !(dids = poisoned(g, sizeof(int) * T)) || !(drows = poisoned(g, sizeof(int) * T)))
		goto out;
	if (n < max && !bad(g, "doc_ids", kn_cuda_doc_ids(g->st, dlens, ND, LMAX, dids, drows)) &&
	    !bad(g, "read back", cu(cudaStreamSynchronize(g->st))) &&
	    !bad(g, "read back", cu(cudaMemcpy(gids, dids, sizeof gids, cudaMemcpyDeviceToHost))) &&
	    !bad(g, "read back", cu(cudaMemcpy(grows, drows, sizeof grows, cudaMemcpyDeviceToHost)))) {
		int64_t t = kn_cpu_doc_ids(lens, ND, LMAX, hids, hrows), wrong = 0;
		for (int64_t i = 0; i < T; i++)
			wrong += gids[i] != hids[i] || grows[i] != hrows[i];
		pl_check_result *r = &res[n++];
		snprintf(r->name, sizeof r->name, "doc_ids");
		r->rel_err = (double)wrong / (double)T;
		r->max_abs_err = (double)wrong;
		r->tol = 0;
		r->ok = wrong == 0 && t == T;
	}
	/* pack_rows from a [ND * LMAX, H] source: N covers it */
	if (n < max && (dout = poisoned(g, (size_t)T * H * 2))) {
		if (!bad(g, "pack_rows", kn_cuda_pack_rows(g->st, dx, drows, T, H, dout)) &&
		    (got = read_back(g, dout, T * H, 0))) {
			kn_cpu_pack_rows(fx, hrows, T, H, want);
			compare(&res[n++], "pack_rows", got, want, T * H, 0.0);
		}
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
	/* chunk_fwd on the packed layout, q, k, v from the three inputs */
	if (n < max && (dout = poisoned(g, (size_t)T * H * 2))) {
		void *scratch = NULL;
		if (!bad(g, "cudaMalloc", cu(cudaMalloc(&scratch, (size_t)kn_cuda_chunk_fwd_scratch_bytes(T, 64)))) &&
		    !bad(g, "chunk_fwd", kn_cuda_chunk_fwd(g->cb, g->st, dx, dy, dz, dids, T, H, 64, scratch, dout)) &&
		    (got = read_back(g, dout, T * H, 0))) {
			kn_cpu_chunk_fwd(fx, fy, fz, hids, T, H, 64, want);
			compare(&res[n++], "chunk_fwd (h 264, chunk 64)", got, want, T * H, 1e-2);
		}
		cudaFree(scratch);
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
	/* loss_grad: the gradient and the accumulated scalar */
	if (n + 1 < max && (dout = poisoned(g, (size_t)N * 2)) &&
	    !bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dloss, sizeof(float)))) &&
	    !bad(g, "memset", cu(cudaMemset(dloss, 0, sizeof(float))))) {
		if (!bad(g, "loss_grad", kn_cuda_loss_grad(g->st, dx, dy, dout, N, 0.5f, dloss)) &&
		    (got = read_back(g, dout, N, 0)) &&
		    !bad(g, "read back", cu(cudaMemcpy(&loss_gpu, dloss, sizeof(float), cudaMemcpyDeviceToHost)))) {
			double loss = kn_cpu_loss_grad(fx, fy, want, N, 0.5f);
			compare(&res[n++], "loss_grad (gradient)", got, want, N, 1e-2);
			float lg = loss_gpu, lw = (float)loss;
			compare(&res[n++], "loss_grad (loss scalar)", &lg, &lw, 1, 1e-4);
		}
		free(got);
		got = NULL;
		cudaFree(dout);
		dout = NULL;
	}
out:
	free(fx);
	free(fy);
	free(fz);
	free(want);
	free(want2);
	cudaFree(dx);
	cudaFree(dy);
	cudaFree(dz);
	cudaFree(dlens);
	cudaFree(dids);
	cudaFree(drows);
	cudaFree(dloss);
	return n;
}

/* chunk_fwd at the pipeline's hidden size, with a partial last chunk. */
static int check_chunk_large(gctx *g, pl_check_result *r)
{
	enum { H = 2048, T = 300 };
	const int lens[3] = { 150, 20, 130 };
	int ids[T], rows[T], *dids = NULL;
	float *fq = NULL, *fk = NULL, *fv = NULL, *got = NULL, *want = NULL;
	void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *scratch = NULL;
	int n = 0;

	kn_cpu_doc_ids(lens, 3, 150, ids, rows);
	if (bad(g, "upload", rand_dev(g, (int64_t)T * H, 0, &fq, &dq)) ||
	    bad(g, "upload", rand_dev(g, (int64_t)T * H, 0, &fk, &dk)) ||
	    bad(g, "upload", rand_dev(g, (int64_t)T * H, 0, &fv, &dv)) ||
	    bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dids, sizeof ids))) ||
	    bad(g, "upload", cu(cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice))) ||
	    !(dout = poisoned(g, (size_t)T * H * 2)) ||
	    bad(g, "cudaMalloc", cu(cudaMalloc(&scratch, (size_t)kn_cuda_chunk_fwd_scratch_bytes(T, 128)))))
		goto out;
	if (!bad(g, "chunk_fwd", kn_cuda_chunk_fwd(g->cb, g->st, dq, dk, dv, dids, T, H, 128, scratch, dout)) &&
	    (got = read_back(g, dout, (int64_t)T * H, 0)) && (want = malloc(sizeof(float) * T * H))) {
		kn_cpu_chunk_fwd(fq, fk, fv, ids, T, H, 128, want);
		compare(r, "chunk_fwd (h 2048, chunk 128)", got, want, (int64_t)T * H, 1e-2);
		n = 1;
	}
out:
	free(fq);
	free(fk);
	free(fv);
	free(got);
	free(want);
	cudaFree(dq);
	cudaFree(dk);
	cudaFree(dv);
	cudaFree(dids);
	cudaFree(dout);
	cudaFree(scratch);
	return n;
}

/* Three Adam steps: fp32 masters and moments, and the bf16 copy. */
static int check_adam(gctx *g, pl_check_result *res, int max)
{
	const int64_t N = 100003;
	float *w = malloc(N * sizeof(float)), *m = calloc(N, sizeof(float)), *v = calloc(N, sizeof(float));
	float *gr = malloc(N * sizeof(float)), *got = NULL, *gotb = NULL;
	float *dw = NULL, *dm = NULL, *dv = NULL, *dg = NULL;
	void *dwb = NULL;
	int n = 0;

	if (!w || !m || !v || !gr || max < 2)
		goto out;
	for (int64_t i = 0; i < N; i++)
		w[i] = frand(g);
	if (bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dw, N * 4))) || bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dm, N * 4))) ||
	    bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dv, N * 4))) || bad(g, "cudaMalloc", cu(cudaMalloc((void **)&dg, N * 4))) ||
	    !(dwb = poisoned(g, N * 2)) || bad(g, "upload", cu(cudaMemcpy(dw, w, N * 4, cudaMemcpyHostToDevice))) ||
	    bad(g, "memset", cu(cudaMemset(dm, 0, N * 4))) || bad(g, "memset", cu(cudaMemset(dv, 0, N * 4))))
		goto out;
	for (int step = 1; step <= 3; step++) {
		for (int64_t i = 0; i < N; i++)
			gr[i] = frand(g);
		if (bad(g, "upload", cu(cudaMemcpy(dg, gr, N * 4, cudaMemcpyHostToDevice))) ||
		    bad(g, "adam", kn_cuda_adam(g->st, dw, dm, dv, dg, dwb, N, 1e-2f, 0.9f, 0.999f, 1e-8f, step)) ||
		    bad(g, "synchronise", cu(cudaStreamSynchronize(g->st))))
			goto out;
		kn_cpu_adam(w, m, v, gr, N, 1e-2f, 0.9f, 0.999f, 1e-8f, step);
	}
	if (!(got = read_back(g, dw, N, 2)) || !(gotb = read_back(g, dwb, N, 0)))
		goto out;
	compare(&res[n++], "adam (fp32 weights)", got, w, N, 1e-5);
	round_bf16(w, N);
	compare(&res[n++], "adam (bf16 copy)", gotb, w, N, 1e-2);
out:
	free(w);
	free(m);
	free(v);
	free(gr);
	free(got);
	free(gotb);
	cudaFree(dw);
	cudaFree(dm);
	cudaFree(dv);
	cudaFree(dg);
	cudaFree(dwb);
	return n;
}

int pl_gpu_check(int device, uint32_t seed, pl_check_result *out, int max, int *n_out, char *err, size_t errlen)
{
	static const gemm_case cases[] = {
		{ "gemm bf16 NN (bf16 out)", KN_BF16, 300, 264, 520, 0, 0, 0, 1e-2 },
		{ "gemm bf16 TN (fp32 out)", KN_BF16, 264, 264, 777, 1, 0, 1, 1e-4 },
		{ "gemm bf16 NT (bf16 out)", KN_BF16, 300, 264, 264, 0, 1, 0, 1e-2 },
		{ "gemm fp16 NN (fp16 out)", KN_F16, 256, 512, 384, 0, 0, 0, 5e-3 },
	};
	gctx g = { .rng = seed * 2654435761u + 1 };
	int n = 0, rc = open_ctx(&g, device, err, errlen);

	*n_out = 0;
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0] && n < max && !g.failed; i++)
		check_gemm(&g, &cases[i], &out[n++]);
	if (!g.failed)
		n += check_ops(&g, out + n, max - n);
	if (!g.failed && n < max)
		n += check_chunk_large(&g, out + n);
	if (!g.failed)
		n += check_adam(&g, out + n, max - n);
	rc = g.failed ? PL_EBACKEND : 0;
out:
	*n_out = n;
	close_ctx(&g);
	return rc;
}

/* ---- benchmark ---- */

enum { B_COPY, B_GEMM, B_EMBED, B_ACT_FWD, B_ACT_BWD, B_DOC_IDS, B_PACK, B_CHUNK, B_LOSS, B_ADAM };

typedef struct bench_bufs {
	void *b0, *b1, *b2;  /* large scratch buffers */
	size_t bytes;        /* each */
	int *ids, *rows, *lens;
	float *loss;
	void *scratch;       /* chunk_fwd's */
} bench_bufs;

typedef struct bench_op {
	const char *name;
	int kind, dtype, m, n, k, ta, tb, c_f32;
	int64_t elems;       /* elementwise size or tokens */
	int h, chunk;
} bench_op;

static int run_op(gctx *g, bench_bufs *b, const bench_op *op)
{
	switch (op->kind) {
	case B_COPY:
		return cu(cudaMemcpyAsync(b->b1, b->b0, (size_t)op->elems, cudaMemcpyDeviceToDevice, g->st));
	case B_GEMM:
		return kn_cuda_gemm(g->cb, op->dtype, op->m, op->n, op->k, b->b0, op->ta ? op->m : op->k, op->ta, b->b1,
		                    op->tb ? op->k : op->n, op->tb, b->b2, op->n, op->c_f32, 0.0f);
	case B_EMBED:
		return kn_cuda_embed(g->st, b->b0, op->elems / op->h, op->h, 7);
	case B_ACT_FWD:
		return kn_cuda_act_fwd(g->st, b->b0, b->b1, op->elems);
	case B_ACT_BWD:
		return kn_cuda_act_bwd(g->st, b->b0, b->b1, b->b2, op->elems);
	case B_DOC_IDS:
		return kn_cuda_doc_ids(g->st, b->lens, 8, (int)(op->elems / 8), b->ids, b->rows);
	case B_PACK:
		return kn_cuda_pack_rows(g->st, b->b0, b->rows, op->elems, op->h, b->b1);
	case B_CHUNK: {
		size_t mat = (size_t)op->elems * op->h * 2;
		return kn_cuda_chunk_fwd(g->cb, g->st, b->b0, b->b1, (char *)b->b0 + mat, b->ids, op->elems, op->h,
		                         op->chunk, b->scratch, (char *)b->b1 + mat);
	}
	case B_LOSS:
		return kn_cuda_loss_grad(g->st, b->b0, b->b1, b->b2, op->elems, 1e-9f, b->loss);
	case B_ADAM: {
		size_t fb = (size_t)op->elems * 4;
		return kn_cuda_adam(g->st, (float *)b->b0, (float *)((char *)b->b0 + fb), (float *)b->b1,
		                    (float *)((char *)b->b1 + fb), b->b2, op->elems, 1e-6f, 0.9f, 0.999f, 1e-8f, 1);
	}
	}
	return 0;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

/* Median milliseconds of reps timed calls after warm-up calls, each between two events. */
static int time_op(gctx *g, bench_bufs *b, const bench_op *op, int warm, int reps, double *median_ms)
{
	cudaEvent_t e0, e1;
	float ms[64];
	int rc = cu(cudaEventCreate(&e0));
	if (rc == 0)
		rc = cu(cudaEventCreate(&e1));
	for (int i = 0; i < warm && rc == 0; i++)
		rc = run_op(g, b, op);
	for (int i = 0; i < reps && i < 64 && rc == 0; i++) {
		rc = cu(cudaEventRecord(e0, g->st));
		if (rc == 0)
			rc = run_op(g, b, op);
		if (rc == 0)
			rc = cu(cudaEventRecord(e1, g->st));
		if (rc == 0)
			rc = cu(cudaEventSynchronize(e1));
		if (rc == 0)
			rc = cu(cudaEventElapsedTime(&ms[i], e0, e1));
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	if (rc == 0) {
		int n = reps < 64 ? reps : 64;
		qsort(ms, (size_t)n, sizeof ms[0], cmp_f);
		*median_ms = ms[n / 2];
	}
	return rc;
}

int pl_gpu_bench(int device, pl_bench_result *out, int max, int *n_out, char *err, size_t errlen)
{
	const int64_t E = (int64_t)128 << 20; /* 128 Mi elements: 256 MiB of bf16, ~4x the L2 */
	const int H = 2048;
	const bench_op ops[] = {
		{ "copy d2d (512 MiB each way)", B_COPY, 0, 0, 0, 0, 0, 0, 0, (int64_t)512 << 20, 0, 0 },
		{ "gemm bf16 8192x8192x8192", B_GEMM, KN_BF16, 8192, 8192, 8192, 0, 0, 0, 0, 0, 0 },
		{ "gemm fp16 8192x8192x8192", B_GEMM, KN_F16, 8192, 8192, 8192, 0, 0, 0, 0, 0, 0 },
		{ "gemm bf16 16384x2048x2048 (target)", B_GEMM, KN_BF16, 16384, 2048, 2048, 0, 0, 0, 0, 0, 0 },
		{ "gemm bf16 2048x2048x16384 TN fp32 (dW)", B_GEMM, KN_BF16, 2048, 2048, 16384, 1, 0, 1, 0, 0, 0 },
		{ "embed", B_EMBED, 0, 0, 0, 0, 0, 0, 0, E, H, 0 },
		{ "act_fwd", B_ACT_FWD, 0, 0, 0, 0, 0, 0, 0, E, 0, 0 },
		{ "act_bwd", B_ACT_BWD, 0, 0, 0, 0, 0, 0, 0, E, 0, 0 },
		{ "loss_grad", B_LOSS, 0, 0, 0, 0, 0, 0, 0, E, 0, 0 },
		{ "pack_rows (65536 x 2048)", B_PACK, 0, 0, 0, 0, 0, 0, 0, 65536, H, 0 },
		{ "doc_ids (65536 tokens, 8 docs)", B_DOC_IDS, 0, 0, 0, 0, 0, 0, 0, 65536, 0, 0 },
		{ "chunk_fwd (32768 x 2048, chunk 64)", B_CHUNK, 0, 0, 0, 0, 0, 0, 0, 32768, H, 64 },
		{ "adam (32 Mi fp32 weights)", B_ADAM, 0, 0, 0, 0, 0, 0, 0, (int64_t)32 << 20, 0, 0 },
	};
	bench_bufs b = { .bytes = (size_t)E * 2 * 2 }; /* 512 MiB each: room for two matrices of chunk_fwd */
	gctx g = { 0 };
	int n = 0, rc = open_ctx(&g, device, err, errlen);
	double copy_gbs = 0;
	int *hrows = NULL;

	*n_out = 0;
	if (rc < 0)
		goto out;
	rc = PL_EBACKEND;
	if (bad(&g, "cudaMalloc", cu(cudaMalloc(&b.b0, b.bytes))) || bad(&g, "cudaMalloc", cu(cudaMalloc(&b.b1, b.bytes))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc(&b.b2, b.bytes))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc((void **)&b.ids, 65536 * sizeof(int)))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc((void **)&b.rows, 65536 * sizeof(int)))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc((void **)&b.lens, 8 * sizeof(int)))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc((void **)&b.loss, sizeof(float)))) ||
	    bad(&g, "cudaMalloc", cu(cudaMalloc(&b.scratch, (size_t)kn_cuda_chunk_fwd_scratch_bytes(65536, 1024)))))
		goto out;
	/* random data everywhere (zeros make GEMMs look faster than they are) */
	if (bad(&g, "fill", kn_cuda_embed(g.st, b.b0, (int64_t)(b.bytes / 2 / H), H, 1)) ||
	    bad(&g, "fill", kn_cuda_embed(g.st, b.b1, (int64_t)(b.bytes / 2 / H), H, 2)) ||
	    bad(&g, "fill", kn_cuda_embed(g.st, b.b2, (int64_t)(b.bytes / 2 / H), H, 3)))
		goto out;
	/* gather rows in a scattered order; documents of 4096 tokens for doc_ids/chunk_fwd */
	int hlens[8];
	for (int i = 0; i < 8; i++)
		hlens[i] = 8192;
	hrows = malloc(65536 * sizeof(int));
	if (!hrows)
		goto out;
	for (int i = 0; i < 65536; i++)
		hrows[i] = (int)(((int64_t)i * 7919) % 65536);
	if (bad(&g, "upload", cu(cudaMemcpy(b.rows, hrows, 65536 * sizeof(int), cudaMemcpyHostToDevice))) ||
	    bad(&g, "upload", cu(cudaMemcpy(b.lens, hlens, sizeof hlens, cudaMemcpyHostToDevice))) ||
	    bad(&g, "doc_ids", kn_cuda_doc_ids(g.st, b.lens, 8, 8192, b.ids, b.rows)) ||
	    bad(&g, "upload", cu(cudaMemcpyAsync(b.rows, hrows, 65536 * sizeof(int), cudaMemcpyHostToDevice, g.st))) ||
	    bad(&g, "memset", cu(cudaMemset(b.loss, 0, sizeof(float)))) ||
	    bad(&g, "synchronise", cu(cudaStreamSynchronize(g.st))))
		goto out;

	for (size_t i = 0; i < sizeof ops / sizeof ops[0] && n < max; i++) {
		const bench_op *op = &ops[i];
		double ms = 0, work = 0;
		if (bad(&g, op->name, time_op(&g, &b, op, 3, op->kind == B_GEMM ? 10 : 20, &ms)))
			goto out;
		pl_bench_result *r = &out[n++];
		snprintf(r->name, sizeof r->name, "%s", op->name);
		r->median_us = ms * 1e3;
		switch (op->kind) {
		case B_COPY: work = 2.0 * (double)op->elems; break;
		case B_GEMM: work = 2.0 * op->m * op->n * (double)op->k; break;
		case B_EMBED: work = 2.0 * (double)op->elems; break;
		case B_ACT_FWD: work = 4.0 * (double)op->elems; break;
		case B_ACT_BWD: case B_LOSS: work = 6.0 * (double)op->elems; break;
		case B_DOC_IDS: work = 8.0 * (double)op->elems + 32; break;
		case B_PACK: work = 4.0 * (double)op->elems * op->h + 4.0 * (double)op->elems; break;
		case B_CHUNK: work = 8.0 * (double)op->elems * op->h + 4.0 * (double)op->elems; break;
		case B_ADAM: work = 30.0 * (double)op->elems; break;
		}
		r->work = work;
		if (op->kind == B_GEMM) {
			r->unit = "TFLOP/s";
			r->value = work / (ms * 1e-3) / 1e12;
			r->ceiling = DENSE_BF16_PEAK_TFLOPS;
		} else {
			r->unit = "GB/s";
			r->value = work / (ms * 1e-3) / 1e9;
			if (op->kind == B_COPY)
				copy_gbs = r->value;
			r->ceiling = copy_gbs;
		}
	}
	rc = 0;
out:
	*n_out = n;
	free(hrows);
	cudaFree(b.b0);
	cudaFree(b.b1);
	cudaFree(b.b2);
	cudaFree(b.ids);
	cudaFree(b.rows);
	cudaFree(b.lens);
	cudaFree(b.loss);
	cudaFree(b.scratch);
	close_ctx(&g);
	return rc;
}
#endif
