/* backend_cpu.c — the CPU backend: kernels/ twins on host memory, mmap/munmap as the raw allocator. */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct pl_dev {
	int64_t counts[KN_COUNT];
};

static int cpu_probe(const int *devices, int n_devices, char *err, size_t errlen)
{
	(void)devices;
	(void)n_devices;
	(void)err;
	(void)errlen;
	return 0;
}

static pl_dev *cpu_dev_create(int device, char *err, size_t errlen)
{
	(void)device;
	pl_dev *d = calloc(1, sizeof *d);
	if (!d)
		snprintf(err, errlen, "out of memory");
	return d;
}

static void cpu_dev_destroy(pl_dev *d)
{
	free(d);
}

static int cpu_nop(pl_dev *d)
{
	(void)d;
	return 0;
}

static const char *cpu_strerror(int rc)
{
	return rc == -ENOMEM ? "out of memory" : "cpu backend error";
}

/* Fresh anonymous mappings: every step pays for mmap, page faults on first touch and munmap,
 * the host-side analogue of cudaMalloc/cudaFree churn. */
static void *cpu_raw_alloc(pl_dev *d, size_t bytes)
{
	(void)d;
	void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void cpu_raw_free(pl_dev *d, void *p, size_t bytes)
{
	(void)d;
	if (p)
		munmap(p, bytes ? bytes : 1);
}

static int cpu_copy(pl_dev *d, void *dst, const void *src, size_t bytes)
{
	(void)d;
	memcpy(dst, src, bytes);
	return 0;
}

static int cpu_zero(pl_dev *d, void *p, size_t bytes)
{
	(void)d;
	memset(p, 0, bytes);
	return 0;
}

static int cpu_upload_act(pl_dev *d, void *dst, const float *src, int64_t n)
{
	return cpu_copy(d, dst, src, (size_t)n * sizeof(float));
}

static int cpu_peer_copy(pl_dev *d, void *dst, const void *src, int src_device, size_t bytes)
{
	(void)src_device;
	return cpu_copy(d, dst, src, bytes);
}

static pl_fence *cpu_fence_record(pl_dev *d, int *rc)
{
	(void)d;
	*rc = 0;
	return NULL;
}

static int cpu_fence_wait(pl_dev *d, pl_fence *f)
{
	(void)d;
	(void)f;
	return 0;
}

static int cpu_fence_sync(pl_fence *f)
{
	(void)f;
	return 0;
}

static int cpu_fence_done(pl_fence *f)
{
	(void)f;
	return 1;
}

static void cpu_fence_destroy(pl_fence *f)
{
	(void)f;
}

static void cpu_range_push(pl_dev *d, const char *name)
{
	(void)d;
	(void)name;
}

static void cpu_range_pop(pl_dev *d)
{
	(void)d;
}

static int cpu_gemm(pl_dev *d, int m, int n, int k, const void *a, int lda, int ta, const void *b,
                    int ldb, int tb, void *c, int ldc, int c_f32, float beta)
{
	(void)c_f32; /* everything is fp32 here */
	d->counts[KN_GEMM]++;
	kn_cpu_gemm(m, n, k, a, lda, ta, b, ldb, tb, c, ldc, beta);
	return 0;
}

static int cpu_embed(pl_dev *d, void *x, int64_t rows, int h, uint32_t seed)
{
	d->counts[KN_EMBED]++;
	kn_cpu_embed(x, rows, h, seed);
	return 0;
}

static int cpu_act_fwd(pl_dev *d, const void *x, void *y, int64_t n)
{
	d->counts[KN_ACT_FWD]++;
	kn_cpu_act_fwd(x, y, n);
	return 0;
}

static int cpu_act_bwd(pl_dev *d, const void *x, const void *dy, void *dx, int64_t n)
{
	d->counts[KN_ACT_BWD]++;
	kn_cpu_act_bwd(x, dy, dx, n);
	return 0;
}

static int cpu_doc_ids(pl_dev *d, const int *lens, int n_docs, int lmax, int *doc_id, int *src_row)
{
	d->counts[KN_DOC_IDS]++;
	kn_cpu_doc_ids(lens, n_docs, lmax, doc_id, src_row);
	return 0;
}

static int cpu_pack_rows(pl_dev *d, const void *src, const int *src_row, int64_t t, int h, void *dst)
{
	d->counts[KN_PACK_ROWS]++;
	kn_cpu_pack_rows(src, src_row, t, h, dst);
	return 0;
}

static int cpu_chunk_fwd(pl_dev *d, const void *q, const void *k, const void *v, const int *doc_id,
                         int64_t t, int h, int chunk, void *out)
{
	d->counts[KN_CHUNK_FWD]++;
	kn_cpu_chunk_fwd(q, k, v, doc_id, t, h, chunk, out);
	return 0;
}

static int cpu_loss_grad(pl_dev *d, const void *y, const void *target, void *dy, int64_t n, float scale,
                         float *loss)
{
	d->counts[KN_LOSS_GRAD]++;
	*loss += (float)kn_cpu_loss_grad(y, target, dy, n, scale);
	return 0;
}

static int cpu_adam(pl_dev *d, float *w, float *m, float *v, const float *g, void *w_act, int64_t n,
                    float lr, float beta1, float beta2, float eps, int step)
{
	d->counts[KN_ADAM]++;
	kn_cpu_adam(w, m, v, g, n, lr, beta1, beta2, eps, step);
	if (w_act && w_act != (void *)w)
		memcpy(w_act, w, (size_t)n * sizeof(float));
	return 0;
}

static void cpu_launch_counts(pl_dev *d, int64_t *counts)
{
	memcpy(counts, d->counts, sizeof d->counts);
}

static const pl_backend cpu_backend = {
	.name = "cpu",
	.act_bytes = sizeof(float),
	.launch_kind = "cpu-call",
	.probe = cpu_probe,
	.dev_create = cpu_dev_create,
	.dev_destroy = cpu_dev_destroy,
	.dev_bind = cpu_nop,
	.dev_sync = cpu_nop,
	.strerror = cpu_strerror,
	.raw_alloc = cpu_raw_alloc,
	.raw_free = cpu_raw_free,
	.h2d = cpu_copy,
	.d2h_sync = cpu_copy,
	.zero = cpu_zero,
	.upload_act = cpu_upload_act,
	.peer_copy = cpu_peer_copy,
	.fence_record = cpu_fence_record,
	.fence_wait = cpu_fence_wait,
	.fence_sync = cpu_fence_sync,
	.fence_done = cpu_fence_done,
	.fence_destroy = cpu_fence_destroy,
	.range_push = cpu_range_push,
	.range_pop = cpu_range_pop,
	.gemm = cpu_gemm,
	.embed = cpu_embed,
	.act_fwd = cpu_act_fwd,
	.act_bwd = cpu_act_bwd,
	.doc_ids = cpu_doc_ids,
	.pack_rows = cpu_pack_rows,
	.chunk_fwd = cpu_chunk_fwd,
	.loss_grad = cpu_loss_grad,
	.adam = cpu_adam,
	.launch_counts = cpu_launch_counts,
};

const pl_backend *pl_backend_cpu(void)
{
	return &cpu_backend;
}
