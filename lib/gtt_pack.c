/* gtt_pack.c — the writer's side of format 1.1: records go into open blocks, one per stream
 * (definitions; samples, switches and CUDA activity each in their own; the other data kinds
 * together), in compact encodings, callchains are interned once per recording, and full blocks
 * (or a flush) become packed chunks compressed with zstd. Compression runs on a worker
 * thread of the writer, so that a thread writing a record never waits the milliseconds a block
 * takes; chunks still go out in the order their blocks closed. Every chunk written is noted for
 * the index that gtt_writer_close puts at the end. All functions run under the writer's lock. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt_priv.h"

typedef struct block {
	enc raw;              /* inner records */
	enc side;             /* 1.2's samples stream: their registers and stack copies, apart */
	uint32_t n;
	uint64_t first_ns, last_ns;
	uint32_t stream;      /* GTT_STREAM_* */
	gtt_blkstate st;
} block;

/* An interned callchain */
typedef struct ichain {
	uint64_t hash;
	size_t off;           /* ips in pk->words */
	uint32_t n_kernel, n_user;
	uint64_t last_seq;    /* the last data block that referred to it */
} ichain;

/* A closed block on its way to the file */
typedef struct job {
	uint8_t *raw;         /* owned by the queue slot; swapped with the block's buffer */
	size_t n, cap;
	uint8_t *side;        /* the block's side section, the same way */
	size_t side_n, side_cap;
	uint32_t n_rec;
	uint64_t first_ns, last_ns;
	uint32_t stream;
} job;
/* closed blocks waiting: beyond, a writing thread waits. Room for two flushes of every stream:
 * a flush queues all its blocks at once (gtt_pack_emit) */
#define PACK_QUEUE (2 * GTT_STREAMS)

struct gtt_pack {
	block blk[GTT_STREAMS]; /* indexed by GTT_STREAM_* */
	job q[PACK_QUEUE];
	unsigned q_head, q_count;
	uint64_t q_bytes;
	pthread_t thr;
	int thr_on, thr_stop, thr_failed;
	pthread_cond_t cv_work, cv_done;
	int level;            /* < 0: store */
	int codec;            /* GTT_CODEC_* used for blocks */
	int no_zstd;          /* compression wanted, libzstd missing */
	uint32_t block_bytes;
	int no_index;
	int one_data_stream;  /* gtt_writer_opts.one_data_stream */
	int split;            /* 1.2 with zstd: the samples' registers and stack copies apart (codec 2) */
	void *cctx;
	uint8_t *zbuf;
	size_t zcap;
	/* callchains: ids 1..n_chains; chains[id - 1] */
	ichain *chains;
	size_t n_chains, cap_chains;
	uint32_t *slots;      /* open addressing: chain id, 0 empty */
	size_t n_slots;
	uint64_t *words;
	size_t n_words, cap_words;
	int chains_full;      /* caps reached: later chains are written inline */
	void *scratch;        /* decoding records given raw */
	size_t scratch_cap;
	/* the index */
	gtt_index_entry *idx;
	size_t n_idx, cap_idx;
	/* statistics */
	uint64_t data_seq, n_blocks, raw_bytes, packed_bytes, n_chain_refs;
	uint64_t file_seq;    /* the first data block of the current file (gtt_writer_switch) */
};

/* The writer keeps at most this many callchain words (the reader's limit is larger). */
#define PACK_CHAIN_WORDS_MAX (GTT_CHAIN_WORDS_MAX / 2)

static void block_reset(block *b)
{
	b->raw.n = 0;
	b->side.n = 0;
	b->n = 0;
	b->first_ns = UINT64_MAX;
	b->last_ns = 0;
	gtt_blkstate_reset(&b->st);
}

gtt_pack *gtt_pack_new(const gtt_writer_opts *o, int *err)
{
	gtt_pack *pk = calloc(1, sizeof(*pk));
	if (!pk) {
		*err = GTT_ENOMEM;
		return NULL;
	}
	pk->level = o->level == 0 ? GTT_ZSTD_LEVEL_DEFAULT : o->level;
	pk->block_bytes = o->block_bytes ? o->block_bytes : GTT_BLOCK_BYTES_DEFAULT;
	if (pk->block_bytes > GTT_PACKED_MAX_RAW / 2)
		pk->block_bytes = GTT_PACKED_MAX_RAW / 2;
	pk->no_index = o->no_index;
	pk->one_data_stream = o->one_data_stream;
	pk->codec = GTT_CODEC_NONE;
	if (pk->level > 0) {
		pk->cctx = gtt_zstd_cctx_new();
		if (pk->cctx)
			pk->codec = GTT_CODEC_ZSTD;
		else
			pk->no_zstd = 1;
	}
	/* a reader that does not unwind (passes over samples' figures, the GPU report) expands the
	 * samples' chunks without their stack copies, nine tenths of a DWARF trace's bytes */
	pk->split = o->minor >= 2 && pk->codec == GTT_CODEC_ZSTD && !pk->one_data_stream;
	for (uint32_t i = 0; i < GTT_STREAMS; i++) {
		pk->blk[i].stream = i;
		pk->blk[i].st.out_side = pk->split && i == GTT_STREAM_SAMPLES ? &pk->blk[i].side : NULL;
		block_reset(&pk->blk[i]);
	}
	pthread_cond_init(&pk->cv_work, NULL);
	pthread_cond_init(&pk->cv_done, NULL);
	return pk;
}

void gtt_pack_free(gtt_pack *pk)
{
	if (!pk)
		return;
	for (int i = 0; i < GTT_STREAMS; i++) {
		free(pk->blk[i].raw.p);
		free(pk->blk[i].side.p);
	}
	for (int i = 0; i < PACK_QUEUE; i++) {
		free(pk->q[i].raw);
		free(pk->q[i].side);
	}
	pthread_cond_destroy(&pk->cv_work);
	pthread_cond_destroy(&pk->cv_done);
	gtt_zstd_cctx_free(pk->cctx);
	free(pk->zbuf);
	free(pk->chains);
	free(pk->slots);
	free(pk->words);
	free(pk->idx);
	free(pk->scratch);
	free(pk);
}

int gtt_pack_open(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	char value[96];
	if (pk->codec == GTT_CODEC_ZSTD)
		snprintf(value, sizeof(value), "zstd level %d", pk->level);
	else if (pk->no_zstd)
		snprintf(value, sizeof(value), "none (libzstd.so.1 could not be loaded)");
	else
		snprintf(value, sizeof(value), "none");
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta.key = "compression";
	r.u.meta.value = value;
	return gtt_pack_write(w, &r);
}

/* Note the plain chunk just appended at offset at (a flush moves bytes from out to written:
 * the sum is the file offset either way). */
static int note_plain(gtt_writer *w, uint64_t at)
{
	gtt_pack *pk = w->pk;
	if (GT_GROW(pk->idx, pk->cap_idx, pk->n_idx + 1) != 0)
		return GTT_ENOMEM;
	gtt_index_entry *e = &pk->idx[pk->n_idx++];
	e->offset = at;
	e->end = w->written_bytes + w->out.n;
	e->first_ns = UINT64_MAX;
	e->last_ns = 0;
	e->n_records = 1;
	e->flags = GTT_INDEX_PLAIN;
	return 0;
}

/* zstd-compress n bytes of src to dst (room for gtt_zstd_bound(n)): *k the bytes. 0 or <0. */
static int zframe(gtt_pack *pk, uint8_t *dst, size_t cap, const uint8_t *src, size_t n, size_t *k)
{
	return gtt_zstd_compress(pk->cctx, dst, cap, src, n, pk->level, k);
}

/* Make the packed chunk of j in pk->zbuf (header, then the compressed or stored records; a
 * side section after the records' frame, codec 2); *len gets its payload length. Only one
 * thread at a time: the worker, or the writing thread when there is no worker. */
static int compress_job(gtt_pack *pk, const job *j, uint32_t *len)
{
	size_t raw = j->n, bound = pk->codec == GTT_CODEC_ZSTD ? gtt_zstd_bound(raw) : 0;
	size_t sbound = j->side_n ? 8 + gtt_zstd_bound(j->side_n) : 0;
	size_t need = GTT_PACKED_HEADER_LEN + (bound > raw ? bound : raw) + sbound;
	if (need > pk->zcap) {
		uint8_t *z = realloc(pk->zbuf, need);
		if (!z)
			return GTT_ENOMEM;
		pk->zbuf = z;
		pk->zcap = need;
	}
	uint8_t *h = pk->zbuf;
	size_t stored = raw;
	int codec = GTT_CODEC_NONE, rc;
	if (j->side_n) {
		/* u32 side_len, u32 the records' frame length, the two frames (both zstd: a side
		 * section is there only when the writer has zstd) */
		uint8_t *z = h + GTT_PACKED_HEADER_LEN + 8;
		size_t k = 0, ks = 0;
		if ((rc = zframe(pk, z, bound, j->raw, raw, &k)) != 0 ||
		    (rc = zframe(pk, z + k, need - GTT_PACKED_HEADER_LEN - 8 - k, j->side, j->side_n, &ks)) != 0)
			return rc;
		le32(h + GTT_PACKED_HEADER_LEN, (uint32_t)j->side_n);
		le32(h + GTT_PACKED_HEADER_LEN + 4, (uint32_t)k);
		stored = 8 + k + ks;
		codec = GTT_CODEC_ZSTD_SPLIT;
	} else if (pk->codec == GTT_CODEC_ZSTD) {
		size_t k = 0;
		if ((rc = zframe(pk, h + GTT_PACKED_HEADER_LEN, need - GTT_PACKED_HEADER_LEN, j->raw, raw, &k)) != 0)
			return rc;
		if (k < raw) { /* else (incompressible) the bytes are stored as they are */
			stored = k;
			codec = GTT_CODEC_ZSTD;
		}
	}
	if (codec == GTT_CODEC_NONE)
		memcpy(h + GTT_PACKED_HEADER_LEN, j->raw, raw);
	h[0] = (uint8_t)codec;
	h[1] = (uint8_t)j->stream;
	h[2] = h[3] = 0;
	le32(h + 4, (uint32_t)raw);
	le32(h + 8, j->n_rec);
	le64(h + 12, j->first_ns);
	le64(h + 20, j->last_ns);
	*len = (uint32_t)(GTT_PACKED_HEADER_LEN + stored);
	return 0;
}

/* Append the chunk made by compress_job (lock held). */
static int append_job(gtt_writer *w, const job *j, uint32_t len)
{
	gtt_pack *pk = w->pk;
	uint64_t at = 0;
	int rc = gtt_append_chunk(w, GTT_REC_PACKED, pk->zbuf, len, &at);
	if (rc < 0)
		return rc;
	if (GT_GROW(pk->idx, pk->cap_idx, pk->n_idx + 1) != 0)
		return GTT_ENOMEM;
	gtt_index_entry *e = &pk->idx[pk->n_idx++];
	e->offset = at;
	e->end = at + GTT_CHUNK_HEADER_LEN + len;
	e->first_ns = j->first_ns;
	e->last_ns = j->last_ns;
	e->n_records = j->n_rec;
	e->flags = j->stream == GTT_STREAM_DEFS ? GTT_INDEX_DEFS : 0;
	pk->n_blocks++;
	pk->raw_bytes += j->n + j->side_n;
	pk->packed_bytes += GTT_CHUNK_HEADER_LEN + len;
	return 0;
}

/* The worker: compresses queued blocks outside the lock, appends them under it, in order. */
static void *worker(void *arg)
{
	gtt_writer *w = arg;
	gtt_pack *pk = w->pk;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!pk->q_count && !pk->thr_stop)
			pthread_cond_wait(&pk->cv_work, &w->lock);
		if (!pk->q_count)
			break;
		job *j = &pk->q[pk->q_head]; /* stays queued (and its slot untouched) until appended */
		uint32_t len = 0;
		pthread_mutex_unlock(&w->lock);
		int rc = compress_job(pk, j, &len);
		pthread_mutex_lock(&w->lock);
		if (!rc && !w->err)
			rc = append_job(w, j, len);
		if (rc && !w->err)
			w->err = rc;
		pk->q_head = (pk->q_head + 1) % PACK_QUEUE;
		pk->q_count--;
		pk->q_bytes -= j->n + j->side_n;
		pthread_cond_broadcast(&pk->cv_done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Start the worker (lock held); without one, blocks are compressed by the writing thread. */
static void start_worker(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	sigset_t all, old;
	if (pk->thr_on || pk->thr_failed || pk->codec != GTT_CODEC_ZSTD)
		return;
	/* the worker takes no signals: they belong to the program's own threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&pk->thr, NULL, worker, w) == 0)
		pk->thr_on = 1;
	else
		pk->thr_failed = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Wait until every queued block is in the file buffer (lock held). */
static int drain(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	while (pk->q_count)
		pthread_cond_wait(&pk->cv_done, &w->lock);
	return w->err;
}

/* Hand block b's records to job j (the block's buffer goes to the job, the job's old one, done
 * with, to the block) and reset b. */
static void take_block(block *b, job *j)
{
	uint8_t *p = j->raw, *ps = j->side;
	size_t cap = j->cap, caps = j->side_cap;
	j->raw = b->raw.p;
	j->cap = b->raw.cap;
	j->n = b->raw.n;
	j->side = b->side.p;
	j->side_cap = b->side.cap;
	j->side_n = b->side.n;
	b->side.p = ps;
	b->side.cap = caps;
	j->n_rec = b->n;
	j->first_ns = b->first_ns;
	j->last_ns = b->last_ns;
	j->stream = b->stream;
	b->raw.p = p;
	b->raw.cap = cap;
	block_reset(b);
}

/* Queue block b for the worker (a slot is free). */
static void queue_block(gtt_pack *pk, block *b)
{
	job *j = &pk->q[(pk->q_head + pk->q_count) % PACK_QUEUE];
	take_block(b, j);
	pk->q_count++;
	pk->q_bytes += j->n + j->side_n;
	pthread_cond_signal(&pk->cv_work);
}

/* Close block b: queue it for the worker, or make its chunk here. */
static int emit_block(gtt_writer *w, block *b)
{
	gtt_pack *pk = w->pk;
	int rc = 0;
	if (b->n == 0)
		return 0;
	start_worker(w);
	if (pk->thr_on) {
		block *defs = &pk->blk[GTT_STREAM_DEFS];
		for (;;) {
			while (pk->q_count == PACK_QUEUE && !w->err)
				pthread_cond_wait(&pk->cv_done, &w->lock);
			if (w->err)
				return w->err;
			/* a wait lets other writing threads in: their samples in this data block may refer
			 * to callchains defined in the open definitions block since, which must reach the
			 * file first (else the reader meets an id before its definition) */
			if (b == defs || !defs->n)
				break;
			queue_block(pk, defs);
		}
		if (b->n) /* (another thread may have emitted it during a wait) */
			queue_block(pk, b);
		return 0;
	}
	job j = { 0 };
	take_block(b, &j);
	uint32_t len = 0;
	rc = compress_job(pk, &j, &len);
	if (!rc)
		rc = append_job(w, &j, len);
	/* the block keeps its buffers */
	free(b->raw.p);
	b->raw.p = j.raw;
	b->raw.cap = j.cap;
	free(b->side.p);
	b->side.p = j.side;
	b->side.cap = j.side_cap;
	return rc;
}

/* Raw bytes in the open data blocks (every stream but the definitions). */
static size_t data_pending(const gtt_pack *pk)
{
	size_t n = 0;
	for (int i = 0; i < GTT_STREAMS; i++)
		if (i != GTT_STREAM_DEFS)
			n += pk->blk[i].raw.n + pk->blk[i].side.n;
	return n;
}

int gtt_pack_emit(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	unsigned n_open = 0;
	for (int i = 0; i < GTT_STREAMS; i++)
		n_open += pk->blk[i].n != 0;
	/* room for every block first: a wait between two would let another thread define a
	 * callchain in the next definitions block and use it in a data block still open, which
	 * would then reach the file before its definition */
	start_worker(w);
	while (pk->thr_on && pk->q_count > PACK_QUEUE - n_open && !w->err)
		pthread_cond_wait(&pk->cv_done, &w->lock);
	if (w->err)
		return w->err;
	/* definitions first: a data block may refer to callchains defined in the open one */
	int rc = emit_block(w, &pk->blk[GTT_STREAM_DEFS]);
	/* the data blocks close together, so that each flush's chunks cover the same stretch of
	 * time: a reader's reorder horizon (the chunk index's time ranges) stays what one data
	 * block per flush gave, and a data block sequence number (gtt_writer_redefine) names them
	 * all */
	int any = data_pending(pk) != 0;
	for (int i = 0; i < GTT_STREAMS && !rc; i++)
		if (i != GTT_STREAM_DEFS)
			rc = emit_block(w, &pk->blk[i]);
	if (!rc && any)
		pk->data_seq++;
	return rc;
}

int gtt_pack_sync(gtt_writer *w)
{
	int rc = gtt_pack_emit(w);
	return rc ? rc : drain(w);
}

void gtt_pack_stop(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	if (!pk || !pk->thr_on)
		return;
	pthread_mutex_lock(&w->lock);
	pk->thr_stop = 1;
	pthread_cond_signal(&pk->cv_work);
	pthread_mutex_unlock(&w->lock);
	pthread_join(pk->thr, NULL);
	pk->thr_on = 0;
}

/* ---- callchain interning ---- */

static uint64_t chain_hash(uint32_t n_kernel, const uint64_t *ips, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n_kernel ^ (uint64_t)n << 32;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ips[i]) * 0xff51afd7ed558ccdull;
	return h ^ h >> 29;
}

static int slots_grow(gtt_pack *pk)
{
	size_t ns = pk->n_slots ? pk->n_slots * 2 : 4096;
	uint32_t *s = calloc(ns, sizeof(*s));
	if (!s)
		return GTT_ENOMEM;
	for (size_t i = 0; i < pk->n_slots; i++) {
		uint32_t id = pk->slots[i];
		if (!id)
			continue;
		size_t j = pk->chains[id - 1].hash & (ns - 1);
		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = id;
	}
	free(pk->slots);
	pk->slots = s;
	pk->n_slots = ns;
	return 0;
}

static int put_def(gtt_writer *w, uint32_t id)
{
	gtt_pack *pk = w->pk;
	const ichain *c = &pk->chains[id - 1];
	gtt_record r = { .tag = GTT_REC_CALLCHAIN };
	r.u.callchain.id = id;
	r.u.callchain.n_kernel = c->n_kernel;
	r.u.callchain.n_user = c->n_user;
	r.u.callchain.ips = pk->words + c->off;
	block *b = &pk->blk[GTT_STREAM_DEFS];
	int rc = gtt_compact_encode(&b->raw, &b->st, &r, 0);
	if (rc) {
		b->raw.err = 0;
		return rc;
	}
	b->n++;
	if (b->raw.n >= pk->block_bytes)
		return emit_block(w, b);
	return 0;
}

/* The id of s's callchain (defining it in the definitions block when new), or 0 when it is
 * written inline (no frames, or the caps are reached). */
static int intern(gtt_writer *w, const gtt_sample *s, uint32_t *id)
{
	gtt_pack *pk = w->pk;
	size_t n = (size_t)s->n_kernel + s->n_user;
	*id = 0;
	if (n == 0 || n > 65536 || pk->chains_full)
		return 0;
	if (pk->n_chains * 2 >= pk->n_slots && slots_grow(pk) != 0)
		return GTT_ENOMEM;
	uint64_t h = chain_hash(s->n_kernel, s->ips, n);
	size_t j = h & (pk->n_slots - 1);
	for (;; j = (j + 1) & (pk->n_slots - 1)) {
		uint32_t k = pk->slots[j];
		if (!k)
			break;
		ichain *c = &pk->chains[k - 1];
		if (c->hash == h && c->n_kernel == s->n_kernel && c->n_user == s->n_user &&
		    memcmp(pk->words + c->off, s->ips, n * 8) == 0) {
			/* last used in an earlier file of a switched writer: that file has the
			 * definition, this one needs it again */
			if (c->last_seq < pk->file_seq) {
				int rc = put_def(w, k);
				if (rc)
					return rc;
			}
			c->last_seq = pk->data_seq;
			*id = k;
			pk->n_chain_refs++;
			return 0;
		}
	}
	if (pk->n_chains >= GTT_CHAIN_ID_MAX || pk->n_words + n > PACK_CHAIN_WORDS_MAX) {
		pk->chains_full = 1;
		return 0;
	}
	if (GT_GROW(pk->chains, pk->cap_chains, pk->n_chains + 1) != 0 ||
	    GT_GROW(pk->words, pk->cap_words, pk->n_words + n) != 0)
		return GTT_ENOMEM;
	ichain *c = &pk->chains[pk->n_chains++];
	c->hash = h;
	c->off = pk->n_words;
	c->n_kernel = s->n_kernel;
	c->n_user = s->n_user;
	c->last_seq = pk->data_seq;
	memcpy(pk->words + pk->n_words, s->ips, n * 8);
	pk->n_words += n;
	pk->slots[j] = (uint32_t)pk->n_chains;
	*id = (uint32_t)pk->n_chains;
	int rc = put_def(w, *id);
	if (rc) {
		/* never an id without its definition: forget the chain */
		pk->slots[j] = 0;
		pk->n_chains--;
		pk->n_words -= n;
		*id = 0;
		return rc;
	}
	pk->n_chain_refs++;
	return 0;
}

int gtt_pack_redefine(gtt_writer *w, uint64_t since_seq)
{
	gtt_pack *pk = w->pk;
	for (size_t i = 0; i < pk->n_chains; i++) {
		if (pk->chains[i].last_seq < since_seq)
			continue;
		int rc = put_def(w, (uint32_t)(i + 1));
		if (rc)
			return rc;
	}
	return 0;
}

void gtt_pack_new_file(gtt_writer *w)
{
	w->pk->n_idx = 0;
	w->pk->file_seq = w->pk->data_seq;
}

/* ---- records ---- */

/* A record too big for a block goes out as a plain chunk, after the open blocks (order kept). */
static int write_plain(gtt_writer *w, const gtt_record *rec)
{
	int rc = gtt_pack_sync(w);
	if (rc)
		return rc;
	uint64_t at = w->written_bytes + w->out.n;
	if ((rc = gtt_append_record(w, rec)) < 0)
		return rc;
	return note_plain(w, at);
}

/* What encoding one record of tag can change in the block state, to undo it. */
typedef struct undo {
	uint64_t prev_t, prev_corr, prev_period;
	uint32_t n_tasks;
} undo;

static void undo_save(undo *u, const gtt_blkstate *st, uint32_t tag)
{
	u->prev_t = tag < GTT_BLK_TAGS ? st->prev_t[tag] : 0;
	u->prev_corr = tag < GTT_BLK_TAGS ? st->prev_corr[tag] : 0;
	u->prev_period = st->prev_period;
	u->n_tasks = st->n_tasks;
}

static void undo_apply(const undo *u, gtt_blkstate *st, uint32_t tag)
{
	if (tag < GTT_BLK_TAGS) {
		st->prev_t[tag] = u->prev_t;
		st->prev_corr[tag] = u->prev_corr;
	}
	st->prev_period = u->prev_period;
	/* tasks added by the record took empty slots last: clearing them, newest first, gives
	 * back the table as it was */
	while (st->n_tasks > u->n_tasks) {
		uint16_t k = (uint16_t)st->n_tasks--;
		for (size_t h = 0; h < 2 * GTT_BLK_TASKS; h++)
			if (st->task_hash[h] == k) {
				st->task_hash[h] = 0;
				break;
			}
	}
}

int gtt_pack_write(gtt_writer *w, const gtt_record *rec)
{
	gtt_pack *pk = w->pk;
	int rc;
	uint32_t chain_id = 0;
	if (rec->tag == GTT_REC_PACKED || rec->tag == GTT_REC_INDEX || rec->tag == GTT_REC_CALLCHAIN)
		return GTT_EINVAL;
	if (rec->tag == GTT_REC_END && (rc = gtt_pack_emit(w)) < 0)
		return rc; /* the end record comes after every other */
	if (rec->tag == GTT_REC_SAMPLE && (rc = intern(w, &rec->u.sample, &chain_id)) < 0)
		return rc;
	uint32_t stream = gtt_stream_of(rec->tag);
	if (pk->one_data_stream && stream != GTT_STREAM_DEFS)
		stream = GTT_STREAM_DATA;
	block *b = &pk->blk[stream];
	size_t at = b->raw.n, at_side = b->side.n;
	undo u;
	undo_save(&u, &b->st, rec->tag);
	rc = gtt_compact_encode(&b->raw, &b->st, rec, chain_id);
	if (rc) {
		b->raw.err = b->side.err = 0;
		b->side.n = at_side;
		undo_apply(&u, &b->st, rec->tag);
		return rc;
	}
	if (b->raw.n - at > GTT_PACKED_MAX_RAW - pk->block_bytes ||
	    b->side.n - at_side > GTT_PACKED_MAX_RAW - pk->block_bytes) {
		b->raw.n = at;
		b->side.n = at_side;
		undo_apply(&u, &b->st, rec->tag);
		if ((rc = write_plain(w, rec)) == 0 && w->tap && !w->in_replay)
			w->tap(w->tap_ctx, rec);
		return rc;
	}
	b->n++;
	if (w->tap && !w->in_replay)
		w->tap(w->tap_ctx, rec);
	uint64_t t0, t1;
	if (gtt_rec_times(rec, &t0, &t1)) {
		if (t0 < b->first_ns)
			b->first_ns = t0;
		if (t1 > b->last_ns)
			b->last_ns = t1;
	}
	if (rec->tag == GTT_REC_END)
		return emit_block(w, b);
	if (b->stream == GTT_STREAM_DEFS)
		return b->raw.n >= pk->block_bytes ? emit_block(w, b) : 0;
	/* the data streams together make a block's worth (one chunk per stream, as one data block
	 * made one chunk before the kinds had streams) */
	return data_pending(pk) >= pk->block_bytes ? gtt_pack_emit(w) : 0;
}

int gtt_pack_write_raw(gtt_writer *w, uint32_t tag, const uint8_t *payload, uint32_t len)
{
	gtt_pack *pk = w->pk;
	if (tag == GTT_REC_PACKED || tag == GTT_REC_INDEX || tag == GTT_REC_CALLCHAIN)
		return GTT_EINVAL;
	if (strcmp(gtt_tag_name(tag), "unknown") != 0) {
		/* a known kind is encoded like any other record (the CUDA agent's records arrive so) */
		gtt_record rec;
		int rc = gtt_decode(tag, payload, len, &rec, &pk->scratch, &pk->scratch_cap);
		return rc ? rc : gtt_pack_write(w, &rec);
	}
	/* an unknown kind keeps its payload as the body, in the data stream */
	block *b = &pk->blk[GTT_STREAM_DATA];
	if (len > GTT_PACKED_MAX_RAW - pk->block_bytes - 2 * GTT_VARINT_MAX) {
		int rc = gtt_pack_sync(w);
		uint64_t at = w->written_bytes + w->out.n;
		if (!rc)
			rc = gtt_append_chunk(w, tag, payload, len, NULL);
		return rc ? rc : note_plain(w, at);
	}
	if (enc_reserve(&b->raw, 2 * GTT_VARINT_MAX + (size_t)len) != 0) {
		b->raw.err = 0;
		return GTT_ENOMEM;
	}
	b->raw.n += gtt_uv_put(b->raw.p + b->raw.n, tag);
	b->raw.n += gtt_uv_put(b->raw.p + b->raw.n, len);
	if (len)
		memcpy(b->raw.p + b->raw.n, payload, len);
	b->raw.n += len;
	b->n++;
	if (data_pending(pk) >= pk->block_bytes)
		return gtt_pack_emit(w);
	return 0;
}

int gtt_pack_splits(const gtt_pack *pk)
{
	return pk->split;
}

uint64_t gtt_pack_pending(const gtt_pack *pk)
{
	return pk ? data_pending(pk) + pk->blk[GTT_STREAM_DEFS].raw.n + pk->q_bytes : 0;
}

void gtt_pack_stats(const gtt_pack *pk, gtt_writer_stats *st)
{
	st->codec = pk->codec == GTT_CODEC_ZSTD ? "zstd" : "none";
	st->n_blocks = pk->n_blocks;
	st->raw_bytes = pk->raw_bytes + gtt_pack_pending(pk);
	st->packed_bytes = pk->packed_bytes;
	st->n_chains = pk->n_chains;
	st->n_chain_refs = pk->n_chain_refs;
	st->block_seq = pk->data_seq;
	st->pending_bytes = gtt_pack_pending(pk);
}

int gtt_pack_write_index(gtt_writer *w)
{
	gtt_pack *pk = w->pk;
	int rc = drain(w);
	if (rc || pk->no_index || w->append)
		return rc;
	/* an index that would not fit one chunk is left out: readers rebuild it */
	if (pk->n_idx > (GTT_MAX_PAYLOAD - 64) / 36)
		return 0;
	enc e = { 0 };
	uint64_t self = w->written_bytes + w->out.n;
	rc = gtt_index_encode(&e, pk->idx, pk->n_idx, self);
	if (!rc)
		rc = gtt_append_chunk(w, GTT_REC_INDEX, e.p, (uint32_t)e.n, NULL);
	free(e.p);
	return rc;
}
