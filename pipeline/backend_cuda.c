/* backend_cuda.c — the CUDA backend: one stream + cuBLAS handle per worker, NVTX ranges, launch counts. */
#include "backend.h"

#ifndef GT_HAVE_CUDA
const pl_backend *pl_backend_cuda(void)
{
	return NULL;
}
#else

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pl_dev {
	int device;
	cudaStream_t stream;
	cublasHandle_t cublas;
	void *scratch;          /* chunk_fwd's scores and weights, grown on demand */
	int64_t scratch_bytes;
	int64_t counts[KN_COUNT];
};

struct pl_fence {
	cudaEvent_t ev;
};

static int cu_rc(cudaError_t e)
{
	return e == cudaSuccess ? 0 : -(int)e;
}

static int cu_probe(const int *devices, int n_devices, char *err, size_t errlen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		snprintf(err, errlen, "backend cuda: no usable GPU (%s)",
		         e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
		return -1;
	}
	for (int i = 0; i < n_devices; i++)
		if (devices[i] >= n) {
			snprintf(err, errlen, "backend cuda: --gpus names device %d but only %d CUDA device%s found",
			         devices[i], n, n == 1 ? " is" : "s are");
			return -1;
		}
	return 0;
}

static void cu_dev_destroy(pl_dev *d)
{
	if (!d)
		return;
	cudaSetDevice(d->device);
	if (d->stream)
		cudaStreamSynchronize(d->stream);
	cudaFree(d->scratch);
	if (d->cublas)
		cublasDestroy(d->cublas);
	if (d->stream)
		cudaStreamDestroy(d->stream);
	free(d);
}

static pl_dev *cu_dev_create(int device, char *err, size_t errlen)
{
	pl_dev *d = calloc(1, sizeof *d);
	cudaError_t e;
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->device = device;
	if ((e = cudaSetDevice(device)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		snprintf(err, errlen, "backend cuda: device %d: %s", device, cudaGetErrorString(e));
		goto fail;
	}
	cublasStatus_t st = cublasCreate(&d->cublas);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasSetStream(d->cublas, d->stream);
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "backend cuda: device %d: cuBLAS: %s", device, cublasGetStatusString(st));
		goto fail;
	}
	return d;
fail:
	cu_dev_destroy(d);
	return NULL;
}

static int cu_dev_bind(pl_dev *d)
{
	return cu_rc(cudaSetDevice(d->device));
}

static int cu_dev_sync(pl_dev *d)
{
	return cu_rc(cudaStreamSynchronize(d->stream));
}

static void *cu_raw_alloc(pl_dev *d, size_t bytes)
{
	void *p = NULL;
	(void)d; /* the calling thread is bound to d's device */
	if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
		cudaGetLastError(); /* clear the sticky-free error so later launches report their own */
		return NULL;
	}
	return p;
}

static void cu_raw_free(pl_dev *d, void *p, size_t bytes)
{
	int prev = d->device;
	(void)bytes;
	if (!p)
		return;
	/* a drafter on another GPU may return a target's buffer: free it on its own device */
	cudaGetDevice(&prev);
	if (prev != d->device)
		cudaSetDevice(d->device);
	cudaFree(p); /* implicitly synchronises the device: part of the churn pathology */
	if (prev != d->device)
		cudaSetDevice(prev);
}

static int cu_h2d(pl_dev *d, void *dst, const void *src, size_t bytes)
{
	return cu_rc(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, d->stream));
}

static int cu_d2h_sync(pl_dev *d, void *dst, const void *src, size_t bytes)
{
	int rc = cu_rc(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, d->stream));
	return rc ? rc : cu_rc(cudaStreamSynchronize(d->stream));
}

static int cu_zero(pl_dev *d, void *p, size_t bytes)
{
	return cu_rc(cudaMemsetAsync(p, 0, bytes, d->stream));
}

static int cu_upload_act(pl_dev *d, void *dst, const float *src, int64_t n)
{
	uint16_t *tmp = malloc((size_t)n * sizeof *tmp);
	int rc;
	if (!tmp)
		return -(int)cudaErrorMemoryAllocation;
	for (int64_t i = 0; i < n; i++)
		tmp[i] = kn_f32_to_bf16(src[i]);
	rc = cu_rc(cudaMemcpyAsync(dst, tmp, (size_t)n * sizeof *tmp, cudaMemcpyHostToDevice, d->stream));
	if (rc == 0)
		rc = cu_rc(cudaStreamSynchronize(d->stream));
	free(tmp);
	return rc;
}

static int cu_peer_copy(pl_dev *d, void *dst, const void *src, int src_device, size_t bytes)
{
	return cu_rc(cudaMemcpyPeerAsync(dst, d->device, src, src_device, bytes, d->stream));
}

static pl_fence *cu_fence_record(pl_dev *d, int *rc)
{
	pl_fence *f = malloc(sizeof *f);
	if (!f) {
		*rc = -(int)cudaErrorMemoryAllocation;
		return NULL;
	}
	*rc = cu_rc(cudaEventCreateWithFlags(&f->ev, cudaEventDisableTiming));
	if (*rc == 0)
		*rc = cu_rc(cudaEventRecord(f->ev, d->stream));
	if (*rc < 0) {
		free(f);
		return NULL;
	}
	return f;
}

static int cu_fence_wait(pl_dev *d, pl_fence *f)
{
	return f ? cu_rc(cudaStreamWaitEvent(d->stream, f->ev, 0)) : 0;
}

static int cu_fence_sync(pl_fence *f)
{
	return f ? cu_rc(cudaEventSynchronize(f->ev)) : 0;
}

static int cu_fence_done(pl_fence *f)
{
	if (!f)
		return 1;
	cudaError_t e = cudaEventQuery(f->ev);
	if (e == cudaErrorNotReady)
		return 0;
	if (e != cudaSuccess)
		cudaGetLastError();
	return 1;
}

static void cu_fence_destroy(pl_fence *f)
{
	if (!f)
		return;
	cudaEventDestroy(f->ev); /* released once the event completes */
	free(f);
}

static void cu_range_push(pl_dev *d, const char *name)
{
	(void)d;
	nvtxRangePushA(name);
}

static void cu_range_pop(pl_dev *d)
{
	(void)d;
	nvtxRangePop();
}

static int cu_gemm(pl_dev *d, int m, int n, int k, const void *a, int lda, int ta, const void *b, int ldb, int tb,
                   void *c, int ldc, int c_f32, float beta)
{
	d->counts[KN_GEMM]++;
	return kn_cuda_gemm(d->cublas, KN_BF16, m, n, k, a, lda, ta, b, ldb, tb, c, ldc, c_f32, beta);
}

static int cu_embed(pl_dev *d, void *x, int64_t rows, int h, uint32_t seed)
{
	d->counts[KN_EMBED]++;
	return kn_cuda_embed(d->stream, x, rows, h, seed);
}

static int cu_act_fwd(pl_dev *d, const void *x, void *y, int64_t n)
{
	d->counts[KN_ACT_FWD]++;
	return kn_cuda_act_fwd(d->stream, x, y, n);
}

static int cu_act_bwd(pl_dev *d, const void *x, const void *dy, void *dx, int64_t n)
{
	d->counts[KN_ACT_BWD]++;
	return kn_cuda_act_bwd(d->stream, x, dy, dx, n);
}

static int cu_doc_ids(pl_dev *d, const int *lens, int n_docs, int lmax, int *doc_id, int *src_row)
{
	d->counts[KN_DOC_IDS]++;
	return kn_cuda_doc_ids(d->stream, lens, n_docs, lmax, doc_id, src_row);
}

static int cu_pack_rows(pl_dev *d, const void *src, const int *src_row, int64_t t, int h, void *dst)
{
	d->counts[KN_PACK_ROWS]++;
	return kn_cuda_pack_rows(d->stream, src, src_row, t, h, dst);
}

static int cu_chunk_fwd(pl_dev *d, const void *q, const void *k, const void *v, const int *doc_id, int64_t t,
                        int h, int chunk, void *out)
{
	int64_t need = kn_cuda_chunk_fwd_scratch_bytes(t, chunk);
	d->counts[KN_CHUNK_FWD]++;
	if (need > d->scratch_bytes) {
		/* the old scratch may still be read by queued work: wait before replacing it */
		int rc = cu_rc(cudaStreamSynchronize(d->stream));
		if (rc < 0)
			return rc;
		cudaFree(d->scratch);
		d->scratch = NULL;
		d->scratch_bytes = 0;
		if ((rc = cu_rc(cudaMalloc(&d->scratch, (size_t)(need + need / 4)))) < 0)
			return rc;
		d->scratch_bytes = need + need / 4;
	}
	return kn_cuda_chunk_fwd(d->cublas, d->stream, q, k, v, doc_id, t, h, chunk, d->scratch, out);
}

static int cu_loss_grad(pl_dev *d, const void *y, const void *target, void *dy, int64_t n, float scale, float *loss)
{
	d->counts[KN_LOSS_GRAD]++;
	return kn_cuda_loss_grad(d->stream, y, target, dy, n, scale, loss);
}

static int cu_adam(pl_dev *d, float *w, float *m, float *v, const float *g, void *w_act, int64_t n, float lr,
                   float beta1, float beta2, float eps, int step)
{
	d->counts[KN_ADAM]++;
	return kn_cuda_adam(d->stream, w, m, v, g, w_act, n, lr, beta1, beta2, eps, step);
}

static void cu_launch_counts(pl_dev *d, int64_t *counts)
{
	memcpy(counts, d->counts, sizeof d->counts);
}

static const pl_backend cuda_backend = {
	.name = "cuda",
	.act_bytes = 2,
	.launch_kind = "cuda-launch",
	.probe = cu_probe,
	.dev_create = cu_dev_create,
	.dev_destroy = cu_dev_destroy,
	.dev_bind = cu_dev_bind,
	.dev_sync = cu_dev_sync,
	.strerror = kn_cuda_strerror,
	.raw_alloc = cu_raw_alloc,
	.raw_free = cu_raw_free,
	.h2d = cu_h2d,
	.d2h_sync = cu_d2h_sync,
	.zero = cu_zero,
	.upload_act = cu_upload_act,
	.peer_copy = cu_peer_copy,
	.fence_record = cu_fence_record,
	.fence_wait = cu_fence_wait,
	.fence_sync = cu_fence_sync,
	.fence_done = cu_fence_done,
	.fence_destroy = cu_fence_destroy,
	.range_push = cu_range_push,
	.range_pop = cu_range_pop,
	.gemm = cu_gemm,
	.embed = cu_embed,
	.act_fwd = cu_act_fwd,
	.act_bwd = cu_act_bwd,
	.doc_ids = cu_doc_ids,
	.pack_rows = cu_pack_rows,
	.chunk_fwd = cu_chunk_fwd,
	.loss_grad = cu_loss_grad,
	.adam = cu_adam,
	.launch_counts = cu_launch_counts,
};

const pl_backend *pl_backend_cuda(void)
{
	return &cuda_backend;
}
#endif
