/* pipeline.c — orchestration: target and drafter workers around the HS queue, measuring themselves. */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "backend.h"
#include "gt_counters.h"
#include "queue.h"
#include "telemetry.h"

enum { ROLE_TARGET, ROLE_DRAFTER };

enum { TP_ALLOC, TP_EMBED, TP_FORWARD, TP_FREE, TP_SYNC, TP_QUEUE_PUT, TP_COUNT };
static const char *const target_phases[TP_COUNT] = { "alloc", "embed", "forward", "free", "sync", "queue_put" };

enum { DP_QUEUE_GET, DP_ALLOC, DP_DOC_IDS, DP_PACK, DP_CHUNK_FWD, DP_BACKWARD, DP_OPTIMIZER, DP_SYNC, DP_FREE, DP_COUNT };
static const char *const drafter_phases[DP_COUNT] = { "queue_get", "alloc",    "doc_ids",   "pack", "chunk_fwd",
	                                              "backward",  "optimizer", "sync", "free" };

_Static_assert((int)DP_COUNT <= (int)PL_MAX_PHASES, "too many phases");

/* One batch of hidden states on its way from a target to a drafter. */
typedef struct hs_item {
	void *hs;            /* [n_docs * lmax, hidden] activations on the target's device */
	pl_alloc *owner;     /* the target's allocator, which gets hs back */
	pl_fence *ready;     /* the target's stream after hs was written */
	int device, n_docs, lmax;
	int64_t tokens;
	int lens[PL_MAX_BATCH];
} hs_item;

/* A persistent device buffer (weights, optimizer state), freed at the end. */
typedef struct dbuf {
	void *p;
	size_t bytes;
} dbuf;

enum { MAX_DBUF = 16 };

struct pl_worker {
	pl_run *run;
	int role, index, device;
	pl_dev *dev;
	pl_alloc *alloc;
	pl_thread_rec rec;
	uint64_t rng;
	int begun, ended, finished;
	int64_t cpu0_ns, phase_t0_ns; /* the current phase's start */
	pthread_t thread;
	int spawned;
	dbuf bufs[MAX_DBUF];
	int n_bufs;
	/* target */
	void **w_layers;
	/* drafter: fp32 masters, moments, gradients, activation copies, the loss scalar */
	float *wq, *wo, *mq, *vq, *mo, *vo, *gq, *go, *loss;
	void *wq_act, *wo_act;
	int opt_step;
};

struct pl_run {
	pl_config cfg;
	const pl_backend *be;
	pl_queue *queue;
	pl_worker *workers;
	int n_workers;
	pl_thread_rec main_rec;
	int64_t main_cpu0_ns;
	int64_t start_ns, end_ns, deadline_ns;
	int started, finished, threads_running;
	volatile int aborted;
	pthread_mutex_t mu;
	int error_rc;
	char error[256];
	char driver[16], driver_detail[64];
	int64_t tokens_produced, tokens_consumed;
	int64_t live_produced, live_consumed; /* running totals for the tokens.* counters */
	pl_queue_stats qstats;
};

/* Running token totals of the process as counters (docs/COUNTERS.md): the last value of
 * tokens.trained is the telemetry's tokens.consumed, of tokens.produced its tokens.produced. */
#define COUNTER_PRODUCED "tokens.produced"
#define COUNTER_TRAINED "tokens.trained"

/* ---- errors ---- */

static void set_error(pl_run *r, int rc, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&r->mu);
	if (!r->error_rc) {
		r->error_rc = rc;
		va_start(ap, fmt);
		vsnprintf(r->error, sizeof r->error, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&r->mu);
	pl_run_abort(r);
}

/* A backend call failed inside a worker: record it and return PL_EBACKEND. */
static int be_fail(pl_worker *w, const char *what, int rc)
{
	set_error(w->run, PL_EBACKEND, "%s: %s failed: %s", w->rec.name, what, w->run->be->strerror(rc));
	return PL_EBACKEND;
}

/* rc from a backend call: 0 stays 0, a failure is recorded and becomes PL_EBACKEND. */
static int chk(pl_worker *w, const char *what, int rc)
{
	return rc < 0 ? be_fail(w, what, rc) : 0;
}

/* ---- small helpers ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: cheap, deterministic per worker */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Phases are contiguous: each starts where the previous one of the step ended (the first at the
 * step's start), so a preemption between two phases is charged to the next one and the phases
 * add up to the step. */
static void phase_begin(pl_worker *w, int p)
{
	w->run->be->range_push(w->dev, w->rec.phase_names[p]);
}

static void phase_end(pl_worker *w, int p)
{
	int64_t now = pl_now_ns();
	pl_series_add(&w->rec.phase_ns[p], now - w->phase_t0_ns);
	w->phase_t0_ns = now;
	w->run->be->range_pop(w->dev);
}

static void *dbuf_alloc(pl_worker *w, size_t bytes)
{
	if (w->n_bufs == MAX_DBUF)
		return NULL;
	void *p = w->run->be->raw_alloc(w->dev, bytes);
	if (p)
		w->bufs[w->n_bufs++] = (dbuf){ p, bytes };
	return p;
}

/* Weights: uniform values with variance 1/h * gain^2, from a seed (the same on every backend). */
static void init_weights(float *host, int h, uint32_t seed, float gain)
{
	const float scale = gain * sqrtf(3.0f / (float)h);
	for (int i = 0; i < h; i++)
		for (int j = 0; j < h; j++)
			host[(size_t)i * h + j] = kn_embed_value(seed, i, j) * scale;
}

/* ---- setup ---- */

static int setup_target(pl_worker *w, float *host, char *err, size_t errlen)
{
	const pl_backend *be = w->run->be;
	const pl_config *c = &w->run->cfg;
	size_t n = (size_t)c->hidden * c->hidden;

	w->w_layers = calloc((size_t)c->layers, sizeof *w->w_layers);
	if (!w->w_layers)
		return PL_ENOMEM;
	for (int l = 0; l < c->layers; l++) {
		w->w_layers[l] = be->raw_alloc(w->dev, n * be->act_bytes);
		if (!w->w_layers[l]) {
			snprintf(err, errlen, "%s: cannot allocate weights on device %d", w->rec.name, w->device);
			return PL_ENOMEM;
		}
		init_weights(host, c->hidden, c->seed * 7919u + 1000u + (uint32_t)l, 1.0f);
		int rc = be->upload_act(w->dev, w->w_layers[l], host, (int64_t)n);
		if (rc < 0) {
			snprintf(err, errlen, "%s: uploading weights failed: %s", w->rec.name, be->strerror(rc));
			return PL_EBACKEND;
		}
	}
	return 0;
}

static int setup_drafter(pl_worker *w, float *host, char *err, size_t errlen)
{
	const pl_backend *be = w->run->be;
	const pl_config *c = &w->run->cfg;
	size_t n = (size_t)c->hidden * c->hidden, fb = n * sizeof(float);
	int rc = 0;

	w->wq = dbuf_alloc(w, fb);
	w->wo = dbuf_alloc(w, fb);
	w->mq = dbuf_alloc(w, fb);
	w->vq = dbuf_alloc(w, fb);
	w->mo = dbuf_alloc(w, fb);
	w->vo = dbuf_alloc(w, fb);
	w->gq = dbuf_alloc(w, fb);
	w->go = dbuf_alloc(w, fb);
	w->loss = dbuf_alloc(w, sizeof(float));
	if (be->act_bytes == sizeof(float)) { /* the master copy is what the GEMMs read */
		w->wq_act = w->wq;
		w->wo_act = w->wo;
	} else {
		w->wq_act = dbuf_alloc(w, n * be->act_bytes);
		w->wo_act = dbuf_alloc(w, n * be->act_bytes);
	}
	if (!w->wq || !w->wo || !w->mq || !w->vq || !w->mo || !w->vo || !w->gq || !w->go || !w->loss ||
	    !w->wq_act || !w->wo_act) {
		snprintf(err, errlen, "%s: cannot allocate drafter state on device %d", w->rec.name, w->device);
		return PL_ENOMEM;
	}
	for (int which = 0; which < 2 && rc == 0; which++) {
		float *master = which ? w->wo : w->wq;
		void *act = which ? w->wo_act : w->wq_act;
		init_weights(host, c->hidden, c->seed * 7919u + 2000u + (uint32_t)which, 0.5f);
		rc = be->h2d(w->dev, master, host, fb);
		if (rc == 0 && act != (void *)master)
			rc = be->upload_act(w->dev, act, host, (int64_t)n);
	}
	float *zeros[] = { w->mq, w->vq, w->mo, w->vo, w->gq, w->go };
	for (size_t i = 0; i < sizeof zeros / sizeof zeros[0] && rc == 0; i++)
		rc = be->zero(w->dev, zeros[i], fb);
	if (rc == 0)
		rc = be->zero(w->dev, w->loss, sizeof(float));
	if (rc == 0)
		rc = be->dev_sync(w->dev);
	if (rc < 0) {
		snprintf(err, errlen, "%s: initialising drafter state failed: %s", w->rec.name, be->strerror(rc));
		return PL_EBACKEND;
	}
	return 0;
}

int pl_run_create(const pl_config *cfg, pl_run **out, char *err, size_t errlen)
{
	pl_run *r = NULL;
	float *host = NULL;
	int rc;

	*out = NULL;
	r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return PL_ENOMEM;
	}
	pthread_mutex_init(&r->mu, NULL);
	r->main_cpu0_ns = pl_thread_cpu_ns();
	r->main_rec.start_ns = pl_now_ns();
	strcpy(r->driver, "c");
	r->cfg = *cfg;
	if ((rc = pl_config_resolve(&r->cfg, err, errlen)) < 0)
		goto out;
	const pl_config *c = &r->cfg;
	if (strcmp(c->backend, "cuda") == 0) {
		r->be = pl_backend_cuda();
		if (!r->be) {
			snprintf(err, errlen, "backend cuda: this gt-pipeline was built without CUDA");
			rc = PL_ENODEV;
			goto out;
		}
	} else {
		r->be = pl_backend_cpu();
	}
	if ((rc = r->be->probe(c->gpus, c->n_gpus, err, errlen)) < 0) {
		rc = PL_ENODEV;
		goto out;
	}
	host = malloc((size_t)c->hidden * c->hidden * sizeof(float));
	r->n_workers = c->targets + c->drafters;
	r->workers = calloc((size_t)r->n_workers, sizeof *r->workers);
	if (!host || !r->workers) {
		snprintf(err, errlen, "out of memory");
		rc = PL_ENOMEM;
		goto out;
	}
	for (int i = 0; i < r->n_workers; i++) {
		pl_worker *w = &r->workers[i];
		w->run = r;
		w->role = i < c->targets ? ROLE_TARGET : ROLE_DRAFTER;
		w->index = w->role == ROLE_TARGET ? i : i - c->targets;
		/* placement: workers in order (targets first), round robin over --gpus */
		w->device = c->gpus[i % c->n_gpus];
		w->rng = ((uint64_t)c->seed << 32) ^ (uint64_t)(i + 1) * 0x51ED27u;
		snprintf(w->rec.name, sizeof w->rec.name, "%s-%d", w->role == ROLE_TARGET ? "target" : "drafter", w->index % 1000);
		w->rec.role = w->role == ROLE_TARGET ? "target" : "drafter";
		w->rec.index = w->index;
		w->rec.device = w->device;
		w->rec.n_phases = w->role == ROLE_TARGET ? TP_COUNT : DP_COUNT;
		w->rec.phase_names = w->role == ROLE_TARGET ? target_phases : drafter_phases;
		w->dev = r->be->dev_create(w->device, err, errlen);
		if (!w->dev) {
			rc = PL_EBACKEND;
			goto out;
		}
		if ((rc = r->be->dev_bind(w->dev)) < 0) {
			snprintf(err, errlen, "%s: cannot use device %d: %s", w->rec.name, w->device, r->be->strerror(rc));
			rc = PL_EBACKEND;
			goto out;
		}
		w->alloc = pl_alloc_create(r->be, w->dev, c->alloc_cached);
		if (!w->alloc) {
			snprintf(err, errlen, "out of memory");
			rc = PL_ENOMEM;
			goto out;
		}
		rc = w->role == ROLE_TARGET ? setup_target(w, host, err, errlen) : setup_drafter(w, host, err, errlen);
		if (rc < 0)
			goto out;
	}
	snprintf(r->main_rec.name, sizeof r->main_rec.name, "main");
	r->main_rec.role = "main";
	r->main_rec.device = -1;
	r->main_rec.tid = (int)syscall(SYS_gettid);
	r->main_rec.cpu_native_ns = pl_thread_cpu_ns() - r->main_cpu0_ns; /* all of create is native */
	rc = 0;
out:
	free(host);
	if (rc < 0) {
		pl_run_destroy(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* ---- the workers ---- */

static int target_step(pl_worker *w)
{
	pl_run *r = w->run;
	const pl_backend *be = r->be;
	const pl_config *c = &r->cfg;
	hs_item *item = NULL;
	void *x = NULL, *y = NULL;
	int rc = 0;

	phase_begin(w, TP_ALLOC);
	item = calloc(1, sizeof *item);
	if (!item) {
		set_error(r, PL_ENOMEM, "%s: out of memory", w->rec.name);
		return PL_ENOMEM;
	}
	item->n_docs = c->batch;
	item->device = w->device;
	item->owner = w->alloc;
	for (int b = 0; b < c->batch; b++) {
		item->lens[b] = c->seq_min + (int)(rng_next(&w->rng) % (uint64_t)(c->seq_max - c->seq_min + 1));
		if (item->lens[b] > item->lmax)
			item->lmax = item->lens[b];
		item->tokens += item->lens[b];
	}
	int64_t rows = (int64_t)c->batch * item->lmax;
	size_t bytes = (size_t)rows * c->hidden * be->act_bytes;
	x = pl_alloc_get(w->alloc, bytes);
	y = pl_alloc_get(w->alloc, bytes);
	item->hs = pl_alloc_get(w->alloc, bytes);
	if (!x || !y || !item->hs) {
		set_error(r, PL_ENOMEM, "%s: out of device memory (%zu bytes)", w->rec.name, bytes);
		rc = PL_ENOMEM;
		goto out;
	}
	phase_end(w, TP_ALLOC);

	phase_begin(w, TP_EMBED);
	uint32_t input_seed = c->seed ^ (uint32_t)(w->index << 20) ^ (uint32_t)w->rec.steps;
	if ((rc = chk(w, "embed", be->embed(w->dev, x, rows, c->hidden, input_seed))) < 0)
		goto out;
	phase_end(w, TP_EMBED);

	phase_begin(w, TP_FORWARD);
	for (int l = 0; l < c->layers; l++) {
		if ((rc = chk(w, "gemm", be->gemm(w->dev, (int)rows, c->hidden, c->hidden, x, c->hidden, 0, w->w_layers[l],
		                           c->hidden, 0, y, c->hidden, 0, 0.0f))) < 0)
		goto out;
		if ((rc = chk(w, "act_fwd", be->act_fwd(w->dev, y, l == c->layers - 1 ? item->hs : x, rows * c->hidden))) < 0)
		goto out;
	}
	phase_end(w, TP_FORWARD);

	/* x and y are only ever used on this worker's stream: no fence needed to reuse them */
	phase_begin(w, TP_FREE);
	if ((rc = chk(w, "free", pl_alloc_put(w->alloc, x, NULL))) < 0)
		goto out;
	x = NULL;
	if ((rc = chk(w, "free", pl_alloc_put(w->alloc, y, NULL))) < 0)
		goto out;
	y = NULL;
	phase_end(w, TP_FREE);

	/* hidden states are handed over once computed: the host waits for this stream (on one GPU
	 * shared by every worker, this is where a target feels the others' GPU work) */
	phase_begin(w, TP_SYNC);
	item->ready = be->fence_record(w->dev, &rc);
	if (rc < 0) {
		rc = be_fail(w, "fence", rc);
		goto out;
	}
	if ((rc = chk(w, "wait for the forward", be->fence_sync(item->ready))) < 0)
		goto out;
	phase_end(w, TP_SYNC);

	phase_begin(w, TP_QUEUE_PUT);
	/* once queued the item belongs to a drafter, which may free it at once */
	int64_t tokens = item->tokens;
	if (pl_queue_put(r->queue, item, NULL) < 0) {
		rc = 0; /* aborted: not this worker's error */
		goto out;
	}
	item = NULL;
	phase_end(w, TP_QUEUE_PUT);
	w->rec.tokens += tokens;
	w->rec.steps++;
	/* the process's running total on the trace clock (a no-op outside gt-record) */
	gt_counter(COUNTER_PRODUCED, (double)__atomic_add_fetch(&r->live_produced, tokens, __ATOMIC_RELAXED));
	return 1;
out:
	w->run->be->range_pop(w->dev);
	pl_alloc_put(w->alloc, x, NULL);
	pl_alloc_put(w->alloc, y, NULL);
	if (item) {
		be->fence_destroy(item->ready);
		pl_alloc_put(w->alloc, item->hs, NULL);
		free(item);
	}
	return rc;
}

static void release_item(pl_worker *w, hs_item *item, pl_fence *after_use)
{
	if (!item)
		return;
	pl_alloc_put(item->owner, item->hs, after_use);
	w->run->be->fence_destroy(item->ready);
	free(item);
}

static int drafter_step(pl_worker *w)
{
	pl_run *r = w->run;
	const pl_backend *be = r->be;
	const pl_config *c = &r->cfg;
	const int h = c->hidden;
	hs_item *item = NULL;
	void *buf[7] = { 0 }, *stage = NULL;
	int *lens_d = NULL, *ids = NULL, *rows = NULL;
	int rc = 0;

	phase_begin(w, DP_QUEUE_GET);
	item = pl_queue_get(r->queue, NULL);
	if (!item) {
		be->range_pop(w->dev);
		return 0;
	}
	if ((rc = chk(w, "wait for hidden states", be->fence_wait(w->dev, item->ready))) < 0)
		goto out;
	phase_end(w, DP_QUEUE_GET);

	const int64_t t = item->tokens;
	const size_t act = (size_t)t * h * be->act_bytes;
	phase_begin(w, DP_ALLOC);
	lens_d = pl_alloc_get(w->alloc, sizeof(int) * (size_t)item->n_docs);
	ids = pl_alloc_get(w->alloc, sizeof(int) * (size_t)t);
	rows = pl_alloc_get(w->alloc, sizeof(int) * (size_t)t);
	for (int i = 0; i < 7; i++)
		buf[i] = pl_alloc_get(w->alloc, act);
	int ok = lens_d && ids && rows;
	for (int i = 0; i < 7; i++)
		ok = ok && buf[i];
	if (ok && item->device != w->device) {
		stage = pl_alloc_get(w->alloc, (size_t)item->n_docs * item->lmax * h * be->act_bytes);
		ok = stage != NULL;
	}
	if (!ok) {
		set_error(r, PL_ENOMEM, "%s: out of device memory (%zu bytes per buffer)", w->rec.name, act);
		rc = PL_ENOMEM;
		goto out;
	}
	void *P = buf[0], *Q = buf[1], *A = buf[2], *Z = buf[3], *Y = buf[4], *D1 = buf[5], *D2 = buf[6];
	phase_end(w, DP_ALLOC);

	phase_begin(w, DP_DOC_IDS);
	if ((rc = chk(w, "copy lengths", be->h2d(w->dev, lens_d, item->lens, sizeof(int) * (size_t)item->n_docs))) < 0)
		goto out;
	if ((rc = chk(w, "doc_ids", be->doc_ids(w->dev, lens_d, item->n_docs, item->lmax, ids, rows))) < 0)
		goto out;
	phase_end(w, DP_DOC_IDS);

	phase_begin(w, DP_PACK);
	const void *src = item->hs;
	if (stage) {
		if ((rc = chk(w, "peer copy", be->peer_copy(w->dev, stage, item->hs, item->device,
		                                     (size_t)item->n_docs * item->lmax * h * be->act_bytes))) < 0)
		goto out;
		src = stage;
	}
	if ((rc = chk(w, "pack_rows", be->pack_rows(w->dev, src, rows, t, h, P))) < 0)
		goto out;
	pl_fence *used = be->fence_record(w->dev, &rc);
	if (rc < 0) {
		rc = be_fail(w, "fence", rc);
		goto out;
	}
	release_item(w, item, used);
	item = NULL;
	phase_end(w, DP_PACK);

	phase_begin(w, DP_CHUNK_FWD);
	if ((rc = chk(w, "gemm", be->gemm(w->dev, (int)t, h, h, P, h, 0, w->wq_act, h, 0, Q, h, 0, 0.0f))) < 0)
		goto out;
	if ((rc = chk(w, "chunk_fwd", be->chunk_fwd(w->dev, Q, P, P, ids, t, h, c->chunk, A))) < 0)
		goto out;
	if ((rc = chk(w, "gemm", be->gemm(w->dev, (int)t, h, h, A, h, 0, w->wo_act, h, 0, Z, h, 0, 0.0f))) < 0)
		goto out;
	if ((rc = chk(w, "act_fwd", be->act_fwd(w->dev, Z, Y, t * h))) < 0)
		goto out;
	phase_end(w, DP_CHUNK_FWD);

	phase_begin(w, DP_BACKWARD);
	if ((rc = chk(w, "loss_grad", be->loss_grad(w->dev, Y, P, D1, t * h, 2.0f / (float)(t * h), w->loss))) < 0)
		goto out;
	if ((rc = chk(w, "act_bwd", be->act_bwd(w->dev, Z, D1, D1, t * h))) < 0)
		goto out;
	if ((rc = chk(w, "gemm", be->gemm(w->dev, h, h, (int)t, A, h, 1, D1, h, 0, w->go, h, 1, 0.0f))) < 0)
		goto out;
	if ((rc = chk(w, "gemm", be->gemm(w->dev, (int)t, h, h, D1, h, 0, w->wo_act, h, 1, D2, h, 0, 0.0f))) < 0)
		goto out;
	if ((rc = chk(w, "gemm", be->gemm(w->dev, h, h, (int)t, P, h, 1, D2, h, 0, w->gq, h, 1, 0.0f))) < 0)
		goto out;
	phase_end(w, DP_BACKWARD);

	phase_begin(w, DP_OPTIMIZER);
	w->opt_step++;
	if ((rc = chk(w, "adam", be->adam(w->dev, w->wq, w->mq, w->vq, w->gq, w->wq_act, (int64_t)h * h, 1e-4f, 0.9f,
	                           0.999f, 1e-8f, w->opt_step))) < 0)
		goto out;
	if ((rc = chk(w, "adam", be->adam(w->dev, w->wo, w->mo, w->vo, w->go, w->wo_act, (int64_t)h * h, 1e-4f, 0.9f,
	                           0.999f, 1e-8f, w->opt_step))) < 0)
		goto out;
	phase_end(w, DP_OPTIMIZER);

	if (c->sync_every > 0 && (w->rec.steps + 1) % c->sync_every == 0) {
		/* the .item() pattern: a scalar back to the host, waiting for the whole stream */
		float loss = 0;
		phase_begin(w, DP_SYNC);
		if ((rc = chk(w, "loss read-back", be->d2h_sync(w->dev, &loss, w->loss, sizeof loss))) < 0)
		goto out;
		if ((rc = chk(w, "zero loss", be->zero(w->dev, w->loss, sizeof(float)))) < 0)
		goto out;
		w->rec.last_loss = loss;
		w->rec.loss_reads++;
		phase_end(w, DP_SYNC);
	}

	phase_begin(w, DP_FREE);
	pl_alloc_put(w->alloc, lens_d, NULL);
	pl_alloc_put(w->alloc, ids, NULL);
	pl_alloc_put(w->alloc, rows, NULL);
	pl_alloc_put(w->alloc, stage, NULL);
	for (int i = 0; i < 7; i++)
		pl_alloc_put(w->alloc, buf[i], NULL);
	phase_end(w, DP_FREE);
	w->rec.tokens += t;
	w->rec.steps++;
	gt_counter(COUNTER_TRAINED, (double)__atomic_add_fetch(&w->run->live_consumed, t, __ATOMIC_RELAXED));
	return 1;
out:
	be->range_pop(w->dev);
	release_item(w, item, NULL);
	pl_alloc_put(w->alloc, lens_d, NULL);
	pl_alloc_put(w->alloc, ids, NULL);
	pl_alloc_put(w->alloc, rows, NULL);
	pl_alloc_put(w->alloc, stage, NULL);
	for (int i = 0; i < 7; i++)
		pl_alloc_put(w->alloc, buf[i], NULL);
	return rc;
}

const char *pl_worker_name(pl_worker *w)
{
	return w->rec.name;
}

int pl_worker_begin(pl_worker *w)
{
	int rc;
	if (w->begun)
		return 0;
	w->begun = 1;
	pthread_setname_np(pthread_self(), w->rec.name);
	w->rec.tid = (int)syscall(SYS_gettid);
	w->rec.start_ns = pl_now_ns();
	w->cpu0_ns = pl_thread_cpu_ns();
	if ((rc = w->run->be->dev_bind(w->dev)) < 0)
		return be_fail(w, "binding the device", rc);
	return 0;
}

static void finish_worker(pl_worker *w)
{
	if (w->finished)
		return;
	w->finished = 1;
	if (w->role == ROLE_TARGET && w->run->queue)
		pl_queue_producer_done(w->run->queue);
}

int pl_worker_step(pl_worker *w)
{
	pl_run *r = w->run;
	const pl_config *c = &r->cfg;
	int64_t cpu0 = pl_thread_cpu_ns(), t0 = pl_now_ns();
	int rc;

	if (w->finished || !w->begun || w->ended || !r->started)
		return 0;
	if (r->aborted) {
		finish_worker(w);
		return 0;
	}
	if (w->role == ROLE_TARGET) {
		if ((c->steps && w->rec.steps >= c->steps) || (c->seconds > 0 && t0 >= r->deadline_ns)) {
			finish_worker(w);
			w->rec.cpu_native_ns += pl_thread_cpu_ns() - cpu0;
			return 0;
		}
		w->phase_t0_ns = t0;
		rc = target_step(w);
	} else {
		w->phase_t0_ns = t0;
		rc = drafter_step(w);
	}
	if (rc == 1)
		pl_series_add(&w->rec.step_ns, pl_now_ns() - t0);
	else
		finish_worker(w);
	w->rec.cpu_native_ns += pl_thread_cpu_ns() - cpu0;
	return rc;
}

void pl_worker_add_python(pl_worker *w, int64_t cpu_ns, int64_t wall_ns)
{
	w->rec.cpu_python_work_ns += cpu_ns;
	w->rec.python_wall_ns += wall_ns;
}

int pl_worker_end(pl_worker *w)
{
	int64_t cpu0 = pl_thread_cpu_ns();
	if (!w->begun || w->ended)
		return 0;
	finish_worker(w);
	/* the worker's GPU work belongs to its time */
	int rc = w->run->be->dev_sync(w->dev);
	if (rc < 0)
		be_fail(w, "final synchronisation", rc);
	w->rec.cpu_native_ns += pl_thread_cpu_ns() - cpu0;
	w->rec.end_ns = pl_now_ns();
	w->rec.cpu_ns = pl_thread_cpu_ns() - w->cpu0_ns;
	w->ended = 1;
	return 0;
}

static void *worker_main(void *arg)
{
	pl_worker *w = arg;
	if (pl_worker_begin(w) == 0)
		while (pl_worker_step(w) > 0)
			;
	pl_worker_end(w);
	return NULL;
}

/* ---- the run ---- */

int pl_run_start(pl_run *r, int spawn_threads)
{
	const pl_config *c = &r->cfg;
	if (r->started)
		return 0;
	r->start_ns = pl_now_ns();
	r->deadline_ns = r->start_ns + (int64_t)(c->seconds * 1e9);
	r->queue = pl_queue_create(c->queue_depth, c->min_ready, c->targets, r->start_ns,
	                           (int64_t)c->sample_ms * 1000000, 200000);
	if (!r->queue)
		return PL_ENOMEM;
	r->started = 1;
	if (!spawn_threads)
		return 0;
	for (int i = 0; i < r->n_workers; i++) {
		if (pthread_create(&r->workers[i].thread, NULL, worker_main, &r->workers[i]) != 0) {
			set_error(r, PL_ENOMEM, "cannot start a thread: %s", strerror(errno));
			break;
		}
		r->workers[i].spawned = 1;
	}
	r->threads_running = 1;
	return r->error_rc;
}

int pl_run_finish(pl_run *r)
{
	int64_t cpu0 = pl_thread_cpu_ns();
	if (r->finished)
		return r->error_rc;
	for (int i = 0; i < r->n_workers; i++)
		if (r->workers[i].spawned) {
			pthread_join(r->workers[i].thread, NULL);
			r->workers[i].spawned = 0;
		}
	r->threads_running = 0;
	r->end_ns = pl_now_ns();
	if (r->queue)
		pl_queue_finish(r->queue, r->end_ns, &r->qstats);
	for (int i = 0; i < r->n_workers; i++) {
		pl_worker *w = &r->workers[i];
		r->be->launch_counts(w->dev, w->rec.launches);
		pl_alloc_get_stats(w->alloc, &w->rec.alloc);
		if (w->role == ROLE_TARGET)
			r->tokens_produced += w->rec.tokens;
		else
			r->tokens_consumed += w->rec.tokens;
	}
	r->main_rec.end_ns = r->end_ns;
	r->main_rec.cpu_native_ns += pl_thread_cpu_ns() - cpu0;
	r->main_rec.cpu_ns = pl_thread_cpu_ns() - r->main_cpu0_ns;
	r->finished = 1;
	return r->error_rc;
}

void pl_run_abort(pl_run *r)
{
	r->aborted = 1;
	if (r->queue)
		pl_queue_abort(r->queue);
}

const char *pl_run_error(pl_run *r)
{
	return r->error;
}

int pl_run_n_workers(pl_run *r)
{
	return r->n_workers;
}

pl_worker *pl_run_worker(pl_run *r, int i)
{
	return i >= 0 && i < r->n_workers ? &r->workers[i] : NULL;
}

void pl_run_set_driver(pl_run *r, const char *driver, const char *detail)
{
	snprintf(r->driver, sizeof r->driver, "%s", driver ? driver : "");
	snprintf(r->driver_detail, sizeof r->driver_detail, "%s", detail ? detail : "");
}

double pl_run_tokens_per_s(pl_run *r)
{
	int64_t wall = r->end_ns - r->start_ns;
	return wall > 0 ? (double)r->tokens_consumed * 1e9 / (double)wall : 0.0;
}

static void role_summary(pl_run *r, int role, char **p, size_t *left)
{
	const pl_series *list[512];
	const pl_thread_rec *first = NULL;
	pl_stats st;
	int n;

	for (int i = 0; i < r->n_workers; i++)
		if (r->workers[i].role == role && !first)
			first = &r->workers[i].rec;
	if (!first)
		return;
	int w = snprintf(*p, *left, "  %-8s ms/step p50/p99:", first->role);
	for (int ph = 0; ph <= first->n_phases && w >= 0 && (size_t)w < *left; ph++) {
		*p += w;
		*left -= (size_t)w;
		n = 0;
		for (int i = 0; i < r->n_workers && n < 512; i++)
			if (r->workers[i].role == role)
				list[n++] = ph < first->n_phases ? &r->workers[i].rec.phase_ns[ph] : &r->workers[i].rec.step_ns;
		pl_series_stats(list, (size_t)n, &st);
		w = snprintf(*p, *left, " %s %.2f/%.2f", ph < first->n_phases ? first->phase_names[ph] : "| step",
		             st.p50_ns / 1e6, st.p99_ns / 1e6);
	}
	if (w >= 0 && (size_t)w < *left) {
		*p += w;
		*left -= (size_t)w;
	}
	w = snprintf(*p, *left, "\n");
	if (w >= 0 && (size_t)w < *left) {
		*p += w;
		*left -= (size_t)w;
	}
}

void pl_run_summary(pl_run *r, char *buf, size_t len)
{
	const pl_config *c = &r->cfg;
	const pl_queue_stats *q = &r->qstats;
	double wall_s = (double)(r->end_ns - r->start_ns) / 1e9;
	int64_t tsteps = 0, dsteps = 0;
	char *p = buf;
	size_t left = len;
	int w;

	if (!len)
		return;
	for (int i = 0; i < r->n_workers; i++)
		*(r->workers[i].role == ROLE_TARGET ? &tsteps : &dsteps) += r->workers[i].rec.steps;
	w = snprintf(p, left,
	             "backend %s, %d targets, %d drafters, alloc %s, hidden %d, layers %d, driver %s\n"
	             "tokens/s: %.1f (%lld tokens trained in %.2f s; %lld produced; %lld target steps, %lld drafter steps)\n"
	             "queue depth: mean %.2f, min %d, max %d (depth %d, min_ready %d); at or below min_ready %.1f%% of the time\n",
	             c->backend, c->targets, c->drafters, c->alloc_cached ? "cached" : "churn", c->hidden, c->layers,
	             r->driver, pl_run_tokens_per_s(r), (long long)r->tokens_consumed, wall_s,
	             (long long)r->tokens_produced, (long long)tsteps, (long long)dsteps, q->mean, q->min_seen,
	             q->max_seen, q->depth, q->min_ready,
	             q->observed_ns > 0 ? 100.0 * (double)q->at_or_below_ns / (double)q->observed_ns : 0.0);
	if (w < 0 || (size_t)w >= left)
		return;
	p += w;
	left -= (size_t)w;
	role_summary(r, ROLE_TARGET, &p, &left);
	role_summary(r, ROLE_DRAFTER, &p, &left);
}

int pl_run_write_telemetry(pl_run *r, const char *path, char *err, size_t errlen)
{
	const pl_thread_rec **threads = calloc((size_t)r->n_workers + 1, sizeof *threads);
	int rc;
	if (!threads) {
		snprintf(err, errlen, "out of memory");
		return PL_ENOMEM;
	}
	for (int i = 0; i < r->n_workers; i++)
		threads[i] = &r->workers[i].rec;
	threads[r->n_workers] = &r->main_rec;
	pl_telemetry t = {
		.cfg = &r->cfg,
		.driver = r->driver,
		.driver_detail = r->driver_detail,
		.launch_kind = r->be->launch_kind,
		.error = r->error,
		.pid = (int)getpid(),
		.start_ns = r->start_ns,
		.end_ns = r->end_ns,
		.tokens_produced = r->tokens_produced,
		.tokens_consumed = r->tokens_consumed,
		.tokens_per_s = pl_run_tokens_per_s(r),
		.queue = r->qstats,
		.threads = threads,
		.n_threads = r->n_workers + 1,
	};
	rc = pl_telemetry_write(path, &t, err, errlen);
	free(threads);
	return rc;
}

void pl_run_destroy(pl_run *r)
{
	hs_item *item;
	if (!r)
		return;
	if (r->threads_running) {
		pl_run_abort(r);
		pl_run_finish(r);
	}
	while (r->queue && (item = pl_queue_take_left(r->queue))) {
		r->be->fence_sync(item->ready);
		pl_alloc_put(item->owner, item->hs, NULL);
		r->be->fence_destroy(item->ready);
		free(item);
	}
	for (int i = 0; r->workers && i < r->n_workers; i++) {
		pl_worker *w = &r->workers[i];
		if (w->dev)
			r->be->dev_sync(w->dev);
	}
	for (int i = 0; r->workers && i < r->n_workers; i++) {
		pl_worker *w = &r->workers[i];
		pl_alloc_destroy(w->alloc);
		if (w->w_layers)
			for (int l = 0; l < r->cfg.layers; l++)
				if (w->w_layers[l])
					r->be->raw_free(w->dev, w->w_layers[l], (size_t)r->cfg.hidden * r->cfg.hidden * r->be->act_bytes);
		free(w->w_layers);
		for (int b = 0; b < w->n_bufs; b++)
			r->be->raw_free(w->dev, w->bufs[b].p, w->bufs[b].bytes);
		if (w->dev)
			r->be->dev_destroy(w->dev);
		for (int p = 0; p < PL_MAX_PHASES; p++)
			pl_series_free(&w->rec.phase_ns[p]);
		pl_series_free(&w->rec.step_ns);
	}
	free(r->workers);
	pl_queue_destroy(r->queue);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
