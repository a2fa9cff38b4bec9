/* backend.h — the compute backend the pipeline runs on: CPU twins (backend_cpu.c) or CUDA + cuBLAS (backend_cuda.c). */
#ifndef PL_BACKEND_H
#define PL_BACKEND_H
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

typedef struct pl_dev pl_dev;     /* one worker's device context: stream, cuBLAS handle, counters */
typedef struct pl_fence pl_fence; /* a point in one worker's stream (a CUDA event); NULL on the CPU */

/*
 * A backend is a table of functions. Buffers are "device" pointers (host memory on the CPU).
 * Activations are act_bytes wide (fp32 on the CPU, bf16 on CUDA); weights' master copies,
 * gradients, optimizer state and the loss scalar are fp32 everywhere. Every function that can
 * fail returns 0 or a negative code for strerror(). Kernel calls are asynchronous on CUDA (in
 * the worker's stream) and synchronous on the CPU; each is counted per kernel (launch_counts).
 */
typedef struct pl_backend {
	const char *name;   /* "cpu" or "cuda" */
	size_t act_bytes;   /* bytes per activation element */
	const char *launch_kind; /* what launch_counts count: "cpu-call" or "cuda-launch" */

	/* Checks that every listed device exists; fills err on failure. */
	int (*probe)(const int *devices, int n_devices, char *err, size_t errlen);
	/* Creates a context (stream, library handles) on a device; NULL with err filled on failure.
	 * Called on any thread; dev_bind makes the calling (worker) thread use that device. */
	pl_dev *(*dev_create)(int device, char *err, size_t errlen);
	void (*dev_destroy)(pl_dev *d); /* accepts NULL; waits for the stream first */
	int (*dev_bind)(pl_dev *d);
	int (*dev_sync)(pl_dev *d);     /* waits until everything queued on d has run */
	const char *(*strerror)(int rc);

	/* Raw device memory (the churn path: cudaMalloc/cudaFree, mmap/munmap); NULL on failure. */
	void *(*raw_alloc)(pl_dev *d, size_t bytes);
	void (*raw_free)(pl_dev *d, void *p, size_t bytes);

	int (*h2d)(pl_dev *d, void *dst, const void *src, size_t bytes);  /* src reusable on return */
	int (*d2h_sync)(pl_dev *d, void *dst, const void *src, size_t bytes); /* copy + stream sync */
	int (*zero)(pl_dev *d, void *p, size_t bytes);
	/* Uploads n fp32 values as activations (converting to bf16 on CUDA); synchronous. */
	int (*upload_act)(pl_dev *d, void *dst, const float *src, int64_t n);
	/* Copies bytes from a buffer on device src_device into dst on d's device, in d's stream. */
	int (*peer_copy)(pl_dev *d, void *dst, const void *src, int src_device, size_t bytes);

	/* Fences: record a point in d's stream (NULL on the CPU, or on failure with *rc set). */
	pl_fence *(*fence_record)(pl_dev *d, int *rc);
	int (*fence_wait)(pl_dev *d, pl_fence *f);  /* d's stream waits for f (f may be NULL) */
	int (*fence_sync)(pl_fence *f);             /* the host waits for f (f may be NULL) */
	int (*fence_done)(pl_fence *f);             /* 1 when reached (NULL is always reached) */
	void (*fence_destroy)(pl_fence *f);         /* accepts NULL */

	/* Named ranges around pipeline phases (NVTX on CUDA, nothing on the CPU). */
	void (*range_push)(pl_dev *d, const char *name);
	void (*range_pop)(pl_dev *d);

	/* Kernels: same meaning as kn_cpu_* in kernels.h, on act_bytes-wide activations. */
	int (*gemm)(pl_dev *d, int m, int n, int k, const void *a, int lda, int ta, const void *b,
	            int ldb, int tb, void *c, int ldc, int c_f32, float beta);
	int (*embed)(pl_dev *d, void *x, int64_t rows, int h, uint32_t seed);
	int (*act_fwd)(pl_dev *d, const void *x, void *y, int64_t n);
	int (*act_bwd)(pl_dev *d, const void *x, const void *dy, void *dx, int64_t n);
	int (*doc_ids)(pl_dev *d, const int *lens, int n_docs, int lmax, int *doc_id, int *src_row);
	int (*pack_rows)(pl_dev *d, const void *src, const int *src_row, int64_t t, int h, void *dst);
	int (*chunk_fwd)(pl_dev *d, const void *q, const void *k, const void *v, const int *doc_id,
	                 int64_t t, int h, int chunk, void *out);
	/* *loss (an fp32 device scalar) is accumulated into. */
	int (*loss_grad)(pl_dev *d, const void *y, const void *target, void *dy, int64_t n, float scale,
	                 float *loss);
	/* w_act (may be NULL) receives the new weights as activations. */
	int (*adam)(pl_dev *d, float *w, float *m, float *v, const float *g, void *w_act, int64_t n,
	            float lr, float beta1, float beta2, float eps, int step);

	/* Copies the per-kernel call/launch counts of d into counts[KN_COUNT]. */
	void (*launch_counts)(pl_dev *d, int64_t *counts);
} pl_backend;

/* The CPU backend (always there). */
const pl_backend *pl_backend_cpu(void);

/* The CUDA backend, or NULL when this build has no CUDA (GT_HAVE_CUDA unset). */
const pl_backend *pl_backend_cuda(void);

#endif
