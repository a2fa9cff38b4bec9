/* load_gpu.c — the GPU aggregates of a model (gpu_sum.h): streamed by the loader in a read of
 * the CUDA records once everything else is known (ana_opts.stream_cuda: `report` keeps no CUDA
 * record; the read is decoded on a thread of its own), or made from the model's arrays when it
 * kept them. */
#include <pthread.h>
#include <stdlib.h>

#include "bounds.h"
#include "gtt_priv.h" /* gtt_rec_times, gtt_stream_of */
#include "gpu_sum.h"
#include "gt_ring.h"
#include "load_priv.h"
#include "window.h"

/* (load_priv.h) */
/* One unit (a chunk, or a record of a plain one) whose times run from first to last (<= last),
 * in file order, into the horizon *h. */
static void see_late(uint64_t *latest, uint64_t *h, uint64_t first, uint64_t last)
{
	if (last > *latest)
		*latest = last;
	if (*latest - first > *h)
		*h = *latest - first;
}

/* (load_priv.h) */
uint64_t ana_load_horizon(const loader *L)
{
	const gtt_index_entry *e;
	size_t n;
	uint64_t latest = 0, h = 0;
	if (gtt_reader_index(L->r, &e, &n) < 0)
		return L->p1_late_ok ? L->p1_late_ns : UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (e[i].flags & GTT_INDEX_DEFS)
			continue;
		if ((e[i].flags & GTT_INDEX_PLAIN) || e[i].first_ns > e[i].last_ns)
			return L->p1_late_ok ? L->p1_late_ns : UINT64_MAX;
		see_late(&latest, &h, e[i].first_ns, e[i].last_ns);
	}
	return h;
}

/* (load_priv.h) */
void ana_load_see_late(loader *L, uint64_t *latest_end, const gtt_record *rec)
{
	uint64_t t0, t1;
	/* definitions as the index passes over their chunks */
	if (gtt_stream_of(rec->tag) != GTT_STREAM_DEFS && gtt_rec_times(rec, &t0, &t1))
		see_late(latest_end, &L->p1_late_ns, t0, t1);
}

/* The GPU read on two threads: a reader thread decodes the trace's CUDA records into batches
 * (its reader expanding chunks ahead on a third), the loader's thread feeds them to the sweep in
 * the same order, so the sums are the same as one thread's. */
#define GPU_BATCH 4096
#define GPU_BATCHES 4

typedef struct gpu_batch {
	gtt_record rec[GPU_BATCH];
	size_t n;
	int last;                /* the reader stopped after these */
} gpu_batch;

typedef struct gpu_pipe {
	loader *L;
	gpu_batch *b;            /* GPU_BATCHES, in a ring: the reader thread fills, the sweep takes */
	gt_ring ring;
} gpu_pipe;

/* A record the sweep takes (cut to the window, when there is one). */
static int is_gpu_record(const ana_model *m, gtt_record *rec)
{
	switch (rec->tag) {
	case GTT_REC_CUDA_KERNEL:
	case GTT_REC_CUDA_MEMCPY:
	case GTT_REC_CUDA_MEMSET:
	case GTT_REC_CUDA_SYNC:
	case GTT_REC_CUDA_API:
		return ana_window_keep(&m->window, rec);
	default:
		return 0;
	}
}

/* Fill b with the next records to sweep; 1 when the trace (or what pass 1 read of it) ended. */
static int read_batch(loader *L, gpu_batch *b)
{
	b->n = 0;
	b->last = 0;
	while (b->n < GPU_BATCH) {
		int n = gtt_reader_next(L->r, &b->rec[b->n]);
		if (n == 0 || (n < 0 && n != GTT_ECORRUPT && n != GTT_EINVAL))
			return b->last = 1; /* pass 1 met the same end or error and said so */
		if (n > 0 && is_gpu_record(L->m, &b->rec[b->n]))
			b->n++;
	}
	return 0;
}

static void *reader_main(void *arg)
{
	gpu_pipe *p = arg;
	long slot;
	for (int last = 0; !last && (slot = gt_ring_produce(&p->ring)) >= 0;) {
		last = read_batch(p->L, &p->b[slot]);
		gt_ring_publish(&p->ring, last);
	}
	return NULL;
}

/* Sweep every batch the reader thread makes. 0 or the sweep's error; 1 when no thread could be
 * made (read on this one). */
static int sweep_piped(loader *L, ana_gpu_acc *a)
{
	gpu_pipe p = { .L = L };
	pthread_t th;
	int rc = 0;
	if (!(p.b = malloc(GPU_BATCHES * sizeof(*p.b))) || gt_ring_init(&p.ring, GPU_BATCHES, 1) < 0) {
		free(p.b);
		return 1;
	}
	if (pthread_create(&th, NULL, reader_main, &p) != 0) {
		rc = 1;
		goto out;
	}
	long slot;
	for (int last = 0; !last && rc == 0 && (slot = gt_ring_consume(&p.ring)) >= 0;) {
		gpu_batch *b = &p.b[slot];
		for (size_t i = 0; i < b->n && rc == 0; i++)
			rc = ana_gpu_acc_add(a, &b->rec[i]);
		last = b->last;
		gt_ring_release(&p.ring);
	}
	gt_ring_stop(&p.ring); /* after an error: the reader thread ends at its next batch */
	pthread_join(th, NULL);
out:
	gt_ring_destroy(&p.ring);
	free(p.b);
	return rc;
}

int ana_load_gpu(loader *L)
{
	ana_model *m = L->m;
	ana_gpu_acc *a = ana_gpu_acc_new(m, ana_load_horizon(L));
	gtt_record rec;
	int rc = a ? 0 : GTT_ENOMEM;
	/* a trace without CUDA work, syncs or API calls is not read again: an empty sum */
	if (rc == 0 && L->n_streamed) {
		gtt_reader_rewind(L->r); /* the window, if any, stays */
		/* the other records are passed over without being decoded */
		gtt_reader_only(L->r, GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY) |
		                      GTT_KIND_BIT(GTT_REC_CUDA_MEMSET) | GTT_KIND_BIT(GTT_REC_CUDA_SYNC) |
		                      GTT_KIND_BIT(GTT_REC_CUDA_API));
		if ((rc = sweep_piped(L, a)) == 1) {
			rc = 0;
			for (;;) {
				int n = gtt_reader_next(L->r, &rec);
				if (n == 0 || (n < 0 && n != GTT_ECORRUPT && n != GTT_EINVAL))
					break; /* pass 1 met the same end or error and said so */
				if (n > 0 && is_gpu_record(m, &rec) && (rc = ana_gpu_acc_add(a, &rec)) < 0)
					break;
			}
		}
		gtt_reader_only(L->r, 0);
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
