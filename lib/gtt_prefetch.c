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
	/* the job: the chunk at file offset off, zstd data z[0..zlen) expanding to raw_len bytes */
	uint64_t off;
	const uint8_t *z;
	size_t zlen;
	uint32_t raw_len;
	int rc;
	uint8_t *buf; /* the worker's buffer, swapped with the reader's when taken */
	size_t cap;
	void *dctx;
};

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
		const uint8_t *z = pf->z;
		size_t zlen = pf->zlen;
		uint32_t raw_len = pf->raw_len;
		pthread_mutex_unlock(&pf->mu);
		int rc = 0;
		if (pf->cap < raw_len) {
			free(pf->buf);
			pf->cap = 0;
			if ((pf->buf = malloc(raw_len)) != NULL)
				pf->cap = raw_len;
		}
		if (!pf->buf || (!pf->dctx && !(pf->dctx = gtt_zstd_dctx_new())))
			rc = GTT_ENOMEM;
		else
			rc = gtt_zstd_decompress(pf->dctx, pf->buf, raw_len, z, zlen);
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
	free(pf->buf);
	gtt_zstd_dctx_free(pf->dctx);
	free(pf);
}

void gtt_prefetch_start(gtt_prefetch *pf, uint64_t off, const uint8_t *z, size_t zlen, uint32_t raw_len)
{
	pthread_mutex_lock(&pf->mu);
	while (pf->state == PF_QUEUED || pf->state == PF_WORKING)
		pthread_cond_wait(&pf->cv, &pf->mu); /* one job at a time: the worker's one buffer */
	pf->off = off;
	pf->z = z;
	pf->zlen = zlen;
	pf->raw_len = raw_len;
	pf->state = PF_QUEUED;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
}

int gtt_prefetch_take(gtt_prefetch *pf, uint64_t off, const uint8_t *z, size_t zlen, uint32_t raw_len, uint8_t **buf,
                      size_t *cap)
{
	int rc = 1;
	pthread_mutex_lock(&pf->mu);
	if (pf->state != PF_IDLE && pf->off == off && pf->z == z && pf->zlen == zlen && pf->raw_len == raw_len) {
		while (pf->state != PF_DONE)
			pthread_cond_wait(&pf->cv, &pf->mu);
		pf->state = PF_IDLE;
		rc = pf->rc;
		if (rc == GTT_ENOMEM) {
			rc = 1; /* the worker had no room: the reader tries itself */
		} else {
			uint8_t *b = *buf;
			size_t c = *cap;
			*buf = pf->buf;
			*cap = pf->cap;
			pf->buf = b;
			pf->cap = c;
		}
	}
	pthread_mutex_unlock(&pf->mu);
	return rc;
}
