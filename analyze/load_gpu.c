/* load_gpu.c — the GPU aggregates of a model (gpu_sum.h): streamed by the loader in a read of
 * the CUDA records once everything else is known (ana_opts.stream_cuda: `report` keeps no CUDA
 * record), or made from the model's arrays when it kept them. */
#include <stdlib.h>

#include "bounds.h"
#include "gpu_sum.h"
#include "load_priv.h"
#include "window.h"

/* (load_priv.h) */
uint64_t ana_load_horizon(gtt_reader *r)
{
	const gtt_index_entry *e;
	size_t n;
	uint64_t latest = 0, h = 0;
	if (gtt_reader_index(r, &e, &n) < 0)
		return UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (e[i].flags & GTT_INDEX_DEFS)
			continue;
		if ((e[i].flags & GTT_INDEX_PLAIN) || e[i].first_ns > e[i].last_ns)
			return UINT64_MAX;
		if (e[i].last_ns > latest)
			latest = e[i].last_ns;
		if (latest - e[i].first_ns > h)
			h = latest - e[i].first_ns;
	}
	return h;
}

int ana_load_gpu(loader *L)
{
	ana_model *m = L->m;
	ana_gpu_acc *a = ana_gpu_acc_new(m, ana_load_horizon(L->r));
	gtt_record rec;
	int rc = a ? 0 : GTT_ENOMEM;
	/* a trace without CUDA work, syncs or API calls is not read again: an empty sum */
	if (L->n_streamed)
		gtt_reader_rewind(L->r); /* the window, if any, stays */
	while (rc == 0 && L->n_streamed) {
		int n = gtt_reader_next(L->r, &rec);
		if (n == 0 || (n < 0 && n != GTT_ECORRUPT && n != GTT_EINVAL))
			break; /* pass 1 met the same end or error and said so */
		if (n < 0)
			continue;
		switch (rec.tag) {
		case GTT_REC_CUDA_KERNEL:
		case GTT_REC_CUDA_MEMCPY:
		case GTT_REC_CUDA_MEMSET:
		case GTT_REC_CUDA_SYNC:
		case GTT_REC_CUDA_API:
			if (ana_window_keep(&m->window, &rec))
				rc = ana_gpu_acc_add(a, &rec);
			break;
		default:
			break;
		}
	}
	if (rc < 0) {
		ana_gpu_acc_free(a);
		return rc;
	}
	return ana_gpu_acc_finish(a, &m->gpu);
}

/* The aggregates of the arrays of m, fed in file order of each kind (which is what the arrays
 * hold), everything held until the end. */
static ana_gpu_sum *sum_of_arrays(const ana_model *m)
{
	ana_gpu_acc *a = ana_gpu_acc_new(m, UINT64_MAX);
	ana_gpu_sum *s = NULL;
	gtt_record rec;
	int rc = a ? 0 : GTT_ENOMEM;
#define FEED(VEC, TAG, FIELD)                                      \
	for (size_t i = 0; rc == 0 && i < m->VEC.n; i++) {         \
		rec.tag = TAG;                                     \
		rec.u.FIELD = m->VEC.v[i];                         \
		rc = ana_gpu_acc_add(a, &rec);                     \
	}
	FEED(apis, GTT_REC_CUDA_API, api)
	FEED(kernels, GTT_REC_CUDA_KERNEL, kernel)
	FEED(memcpys, GTT_REC_CUDA_MEMCPY, memcpy)
	FEED(memsets, GTT_REC_CUDA_MEMSET, memset)
	FEED(syncs, GTT_REC_CUDA_SYNC, sync)
#undef FEED
	if (rc < 0) {
		ana_gpu_acc_free(a);
		return NULL;
	}
	return ana_gpu_acc_finish(a, &s) < 0 ? NULL : s;
}

const ana_gpu_sum *ana_gpu_sum_of(const ana_model *m)
{
	if (!m->gpu) {
		/* made once and kept with the model (a cache: the model's figures do not change) */
		ana_model *mut = (ana_model *)m;
		mut->gpu = sum_of_arrays(m);
	}
	return m->gpu;
}

void ana_gpu_sum_forget(const ana_model *m)
{
	if (m->gpu && !m->cuda_streamed) {
		ana_model *mut = (ana_model *)m;
		ana_gpu_sum_free(mut->gpu);
		mut->gpu = NULL;
	}
}

uint64_t ana_gpu_sum_kernels(const ana_model *m)
{
	return m->gpu && m->cuda_streamed ? m->gpu->n_kernels : m->kernels.n;
}

uint64_t ana_gpu_n_records(const ana_model *m)
{
	if (m->gpu && m->cuda_streamed)
		return m->gpu->n_fed;
	return m->kernels.n + m->memcpys.n + m->memsets.n + m->syncs.n + m->apis.n;
}
