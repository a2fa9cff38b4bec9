/* gtt_prefetch.c — a reader's decompression ahead (gtt_reader_prefetch): one worker thread expands
 * the packed chunk after the one being read while the caller decodes this one, so that zstd runs
 * on another core. The bytes are the same as the reader's own decompression would give; a chunk
 * the worker did not (or could not) expand is expanded by the reader as before. */
#include <pthread.h>
#include <stdlib.h>

#include "gtt_priv.h"

enum { PF_IDLE, PF_QUEUED, PF_WORKING, PF_DONE };

struct gtt_prefetch {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state, quit;
	/* the job: the frames f of the chunk at file offset off */
	uint64_t off;
	gtt_frames f;
	int rc;
	gtt_xbuf buf[2]; /* the worker's buffers, swapped with the reader's when taken */
	void *dctx;
};

/* Expand frame i of f into x (grown to fit). 0, GTT_ENOMEM, or gtt_zstd_decompress's error. */
int gtt_expand_frame(void **dctx, const gtt_frames *f, int i, gtt_xbuf *x)
{
	uint32_t n = f->raw_len[i];
	if (!n)
		return 0;
	if (x->cap < n) {
		/* one buffer of the largest frame so far, at most GTT_PACKED_MAX_RAW */
		free(x->p);
		x->cap = 0;
		if (!(x->p = malloc(n)))
			return GTT_ENOMEM;
		x->cap = n;
	}
	if (!*dctx && !(*dctx = gtt_zstd_dctx_new()))
		return gtt_zstd_available() ? GTT_ENOMEM : GTT_ENOZSTD;
	return gtt_zstd_decompress(*dctx, x->p, n, f->z[i], f->zlen[i]);
}

static void *worker(void *arg)
{
	gtt_prefetch *pf = arg;
	pthread_mutex_lock(&pf->mu);
	for (;;) {
		while (pf->state != PF_QUEUED && !pf->quit)
			pthread_cond_wait(&pf->cv, &pf->mu);
		if (pf->quit)
			break;
		pf->state = PF_WORKING;
		gtt_frames f = pf->f;
		pthread_mutex_unlock(&pf->mu);
		int rc = gtt_expand_frame(&pf->dctx, &f, 0, &pf->buf[0]);
		if (rc == 0 && f.z[1])
			rc = gtt_expand_frame(&pf->dctx, &f, 1, &pf->buf[1]);
		pthread_mutex_lock(&pf->mu);
		pf->rc = rc;
		pf->state = PF_DONE;
		pthread_cond_broadcast(&pf->cv);
	}
	pthread_mutex_unlock(&pf->mu);
	return NULL;
}

gtt_prefetch *gtt_prefetch_new(void)
{
	gtt_prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->cv, NULL);
	if (pthread_create(&pf->thread, NULL, worker, pf) != 0) {
		pthread_mutex_destroy(&pf->mu);
		pthread_cond_destroy(&pf->cv);
		free(pf);
		return NULL;
	}
	return pf;
}

void gtt_prefetch_free(gtt_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->quit = 1;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	pthread_join(pf->thread, NULL);
	pthread_mutex_destroy(&pf->mu);
	pthread_cond_destroy(&pf->cv);
	free(pf->buf[0].p);
	free(pf->buf[1].p);
	gtt_zstd_dctx_free(pf->dctx);
	free(pf);
}

void gtt_prefetch_start(gtt_prefetch *pf, uint64_t off, const gtt_frames *f)
{
	pthread_mutex_lock(&pf->mu);
	while (pf->state == PF_QUEUED || pf->state == PF_WORKING)
		pthread_cond_wait(&pf->cv, &pf->mu); /* one job at a time: the worker's buffers */
	pf->off = off;
	pf->f = *f;
	pf->state = PF_QUEUED;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
}

static int same_frames(const gtt_frames *a, const gtt_frames *b)
{
	for (int i = 0; i < 2; i++)
		if (a->z[i] != b->z[i] || a->zlen[i] != b->zlen[i] || a->raw_len[i] != b->raw_len[i])
			return 0;
	return 1;
}

int gtt_prefetch_take(gtt_prefetch *pf, uint64_t off, const gtt_frames *f, gtt_xbuf buf[2])
{
	int rc = 1;
	pthread_mutex_lock(&pf->mu);
	if (pf->state != PF_IDLE && pf->off == off && same_frames(&pf->f, f)) {
		while (pf->state != PF_DONE)
			pthread_cond_wait(&pf->cv, &pf->mu);
		pf->state = PF_IDLE;
		rc = pf->rc;
		if (rc == GTT_ENOMEM) {
			rc = 1; /* the worker had no room: the reader tries itself */
		} else {
			for (int i = 0; i < (f->z[1] ? 2 : 1); i++) {
				gtt_xbuf x = buf[i];
				buf[i] = pf->buf[i];
				pf->buf[i] = x;
			}
		}
	}
	pthread_mutex_unlock(&pf->mu);
	return rc;
}
