/* gtt_priv.h — internals shared by the files of lib/: the trace framing and reader core (gtt.c),
 * the record codec (gtt_codec.c), compact encodings (gtt_compact.c), packed blocks on the writing
 * (gtt_pack.c) and reading side (gtt_unpack.c), the chunk index (gtt_index.c) and zstd
 * (gtt_zstd.c). */
#ifndef GTT_PRIV_H
#define GTT_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gtt.h"

/* Little-endian fields, written and read byte for byte. */
static inline void le32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(p, &v, 4); /* the same bytes as below, in one store */
#else
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
#endif
}
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}
static inline void le64(uint8_t *p, uint64_t v)
{
	le32(p, (uint32_t)v);
	le32(p + 4, (uint32_t)(v >> 32));
}

/* Encoder: appends to a growable buffer; err latches the first failure. */
typedef struct enc {
	uint8_t *p;
	size_t n, cap;
	int err;
} enc;

/* Slow path of enc_reserve: grow the buffer; -1 (and e->err) when out of memory. */
int gtt_enc_grow(enc *e, size_t more);

/* Make room for more bytes at e->p + e->n: 0, or -1 with e->err set. */
static inline int enc_reserve(enc *e, size_t more)
{
	if (__builtin_expect(e->n + more <= e->cap && !e->err, 1))
		return 0;
	return gtt_enc_grow(e, more);
}

/* Append rec's payload (chosen by rec->tag) to e. 0, GTT_EINVAL for an unknown tag, or
 * GTT_ENOMEM. */
int gtt_encode(enc *e, const gtt_record *rec);

/* ---- varints (LEB128) and zigzag ---- */
#define GTT_VARINT_MAX 10
/* Write v at p (room for GTT_VARINT_MAX bytes); returns the bytes written. */
static inline size_t gtt_uv_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}
static inline uint64_t gtt_zz(uint64_t v) /* v is an int64 difference computed modulo 2^64 */
{
	return (v << 1) ^ (uint64_t)((int64_t)v >> 63);
}
static inline uint64_t gtt_unzz(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}
/* Read a varint from [*p, end): 0 and *v, or -1 when it runs past end or over 64 bits. */
static inline int gtt_uv_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t x = 0;
	/* most varints of a trace are one byte (deltas, task numbers, small ids) */
	if (__builtin_expect(q < end && *q < 0x80, 1)) {
		*v = *q;
		*p = q + 1;
		return 0;
	}
	for (unsigned shift = 0; q < end && shift < 64; shift += 7) {
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* ---- zstd (gtt_zstd.c, loaded with dlopen) ---- */
/* 1 when libzstd.so.1 (or $GT_LIBZSTD) is loaded. */
int gtt_zstd_available(void);
/* Tests: act as if the library were missing (1) or not (0). */
void gtt_zstd_force_missing(int on);
size_t gtt_zstd_bound(size_t n);
void *gtt_zstd_cctx_new(void);
void gtt_zstd_cctx_free(void *cctx);
void *gtt_zstd_dctx_new(void);
void gtt_zstd_dctx_free(void *dctx);
/* Compress src into dst (cap >= gtt_zstd_bound(n)); 0 and *out, or GTT_ENOZSTD/GTT_ENOMEM. */
int gtt_zstd_compress(void *cctx, void *dst, size_t cap, const void *src, size_t n, int level, size_t *out);
/* Expand one frame that must hold exactly raw_len bytes into dst. 0, GTT_ECORRUPT, GTT_ENOZSTD. */
int gtt_zstd_decompress(void *dctx, void *dst, size_t raw_len, const void *src, size_t n);

/* The zstd frames of a packed chunk to expand: the records' (0) and, for codec 2 when the
 * samples' registers and stack copies are wanted, theirs (1; z[1] NULL: none). */
typedef struct gtt_frames {
	const uint8_t *z[2];
	size_t zlen[2];
	uint32_t raw_len[2];
} gtt_frames;
/* A buffer of the frame's bytes and its size, grown as needed. */
typedef struct gtt_xbuf {
	uint8_t *p;
	size_t cap;
} gtt_xbuf;

/* ---- compact encodings inside packed blocks (gtt_compact.c) ---- */
#define GTT_BLK_TASKS 4096   /* (pid, tid) pairs a block names by number; more are written out */
#define GTT_BLK_TAGS 64      /* tags with per-block delta state */

/* What encoder and decoder both track inside one block (reset at every block). */
typedef struct gtt_blkstate {
	uint64_t prev_t[GTT_BLK_TAGS];    /* last primary time per tag */
	uint64_t prev_corr[GTT_BLK_TAGS]; /* last correlation id per tag */
	uint64_t prev_period;             /* last sample period */
	uint32_t n_tasks;
	uint64_t tasks[GTT_BLK_TASKS];    /* pid << 32 | tid */
	/* encoder only: open-addressing (pid, tid) -> task number + 1 */
	uint16_t task_hash[2 * GTT_BLK_TASKS];
	/* the samples' registers and stack copies kept apart (codec 2). Encoder: out_side, where
	 * they go (NULL: into the body). Decoder: side_apart says the block keeps them apart, side
	 * holds its side_len bytes (NULL while not expanded), side_pos is the next sample's; bare:
	 * samples are given without them (gtt_reader_skip_stacks). Only side_pos is reset. */
	enc *out_side;
	const uint8_t *side;
	uint32_t side_len, side_pos;
	uint8_t side_apart, bare;
} gtt_blkstate;
/* Per-block state back to a block's start (the side configuration stays). */
void gtt_blkstate_reset(gtt_blkstate *st);

/* 1 when tag has a compact body (else the body is the tag's 1.0 payload). */
int gtt_compact_has(uint32_t tag);
/* 1 when records of tag go to the definitions stream. */
int gtt_is_defs_tag(uint32_t tag);
/* The stream (GTT_STREAM_*) a 1.1 writer puts records of tag into; gtt_stream_kinds of it
 * holds tag, or is 0 (any kind). */
uint32_t gtt_stream_of(uint32_t tag);
/* The times a record covers: 1 with [*t0, *t1], or 0 when the kind has no time. */
int gtt_rec_times(const gtt_record *rec, uint64_t *t0, uint64_t *t1);
/* Append one inner record (varint tag, varint length, body) to e. chain_id: for a sample, the
 * interned callchain (0: its ips are written inline). 0 or GTT_ENOMEM/GTT_EINVAL. */
int gtt_compact_encode(enc *e, gtt_blkstate *st, const gtt_record *rec, uint32_t chain_id);

/* Callchains defined so far (reader side), indexed by id. */
typedef struct gtt_chaintab {
	struct gtt_chainent { uint64_t off; uint32_t n_kernel, n_user; } *v;
	size_t cap;          /* entries in v (ids < cap) */
	uint64_t *ips;
	size_t n_ips, cap_ips;
} gtt_chaintab;
#define GTT_CHAIN_WORDS_MAX (32u << 20) /* words of all callchains a reader keeps */
/* Define (or define again) a callchain. 0, GTT_EINVAL (bad id, too many words), GTT_ENOMEM. */
int gtt_chaintab_put(gtt_chaintab *t, uint32_t id, uint32_t n_kernel, uint32_t n_user, const uint64_t *ips);
void gtt_chaintab_free(gtt_chaintab *t);

/* Decode the body of one inner record into rec (pointers into body, the chain table or
 * *scratch). A callchain definition is also entered into chains. 0, GTT_EINVAL, GTT_ENOMEM. */
int gtt_compact_decode(gtt_blkstate *st, gtt_chaintab *chains, uint32_t tag, const uint8_t *body,
                       uint32_t len, gtt_record *rec, void **scratch, size_t *scratch_cap);

/* Pass over one inner record that the reader does not return (gtt_reader_only): only what later
 * records of the block need of it (a new task number) is kept, as gtt_compact_decode would keep
 * it; its per-kind delta state is not (no record of its kind is decoded after it in this pass).
 * 0, or GTT_EINVAL (also for a kind this cannot skip: decode it instead). Not for callchains. */
int gtt_compact_skip(gtt_blkstate *st, uint32_t tag, const uint8_t *body, uint32_t len);

/* ---- the writer (gtt.c), with packed blocks (gtt_pack.c) ---- */
typedef struct gtt_pack gtt_pack;

struct gtt_writer {
	int fd;
	pthread_mutex_t lock;
	enc out;            /* whole chunks waiting to be written */
	uint64_t written_bytes;
	uint64_t n_records;
	int err;            /* first error, sticky */
	int err_errno;
	int append;
	uint32_t minor;
	gtt_pack *pk;       /* packed mode (1.1, not append); NULL: one plain chunk per record */
	gtt_writer_tap tap; /* sees every record accepted in packed mode (gtt_writer_set_tap) */
	void *tap_ctx;
	int in_replay;      /* gtt_writer_switch's replay is writing: the tap does not see it */
	int switching;      /* gtt_writer_switch is under way: other callers wait on cv_switch */
	int active;         /* calls inside the writer (lock_writer), waits for the worker included */
	pthread_cond_t cv_switch;
};

/* Append one framed chunk to w->out (caller holds the lock); flushes when the buffer is big.
 * Returns 0 or GTT_E*. *at gets the chunk's file offset when at is not NULL. */
int gtt_append_chunk(gtt_writer *w, uint32_t tag, const uint8_t *payload, uint32_t len, uint64_t *at);
/* Encode rec as one plain chunk (caller holds the lock). */
int gtt_append_record(gtt_writer *w, const gtt_record *rec);

gtt_pack *gtt_pack_new(const gtt_writer_opts *o, int *err);
void gtt_pack_free(gtt_pack *pk);
/* Meta records the writer adds at open (the "compression" key). Caller holds the lock. */
int gtt_pack_open(gtt_writer *w);
/* Put rec into its block (caller holds the lock). */
int gtt_pack_write(gtt_writer *w, const gtt_record *rec);
/* Put a record given as a 1.0 payload into its block (unknown tags keep the payload). */
int gtt_pack_write_raw(gtt_writer *w, uint32_t tag, const uint8_t *payload, uint32_t len);
/* Close and write out the open blocks (definitions first). Caller holds the lock. */
int gtt_pack_emit(gtt_writer *w);
/* gtt_pack_emit, then wait until the worker put every closed block into w->out. */
int gtt_pack_sync(gtt_writer *w);
/* Stop the compression worker (caller does not hold the lock). */
void gtt_pack_stop(gtt_writer *w);
/* Write the index chunk (after gtt_pack_sync). Caller holds the lock. */
int gtt_pack_write_index(gtt_writer *w);
/* 1 when the writer keeps the samples' registers and stack copies apart (codec 2: format 1.2). */
int gtt_pack_splits(const gtt_pack *pk);
/* Raw bytes in open blocks. */
uint64_t gtt_pack_pending(const gtt_pack *pk);
void gtt_pack_stats(const gtt_pack *pk, gtt_writer_stats *st);
int gtt_pack_redefine(gtt_writer *w, uint64_t since_seq);
/* A new file begins (gtt_writer_switch): its index starts empty, and every callchain is
 * defined again before its first use in it. Caller holds the lock, blocks written. */
void gtt_pack_new_file(gtt_writer *w);

/* ---- the reader (gtt.c), packed chunks (gtt_unpack.c), index (gtt_index.c) ---- */
struct gtt_reader {
	const uint8_t *data;
	size_t len;
	int mapped;         /* data is an mmap of len bytes */
	size_t dropped_to;  /* mapped pages before this were handed back (drop_behind in gtt.c) */
	int owned;          /* data was malloc'ed */
	size_t off;         /* next chunk */
	size_t last_off;    /* chunk last returned */
	size_t crc_ok_to;   /* the chunks in [0, crc_ok_to) were read whole and their checksums
	                     * matched: a later pass over them from the start does not check again */
	size_t crc_at;      /* where the chunk after the last one read begins when every chunk from
	                     * the start was read one after the other (SIZE_MAX after a jump: a seek
	                     * or an index entry may point anywhere, so the chunk there is checked) */
	int truncated;
	int stopped;        /* an unrecoverable error ended reading */
	uint32_t major, minor;
	void *scratch;
	size_t scratch_cap;
	int err_errno;
	gtt_chunk_info cur; /* chunk of the record last returned */
	uint32_t cur_index; /* its index in a packed chunk */

	/* the packed chunk being expanded */
	int blk_active;     /* records of it remain to be returned */
	uint64_t blk_off;   /* its offset; UINT64_MAX when blk holds none */
	const uint8_t *blk; /* its records (blk_buf, or the payload for codec none) */
	uint32_t blk_len;
	size_t blk_pos;
	uint32_t blk_index; /* records returned (or skipped) so far */
	gtt_chunk_info blk_info;
	gtt_blkstate bst;
	gtt_xbuf blk_x;     /* blk's bytes, when expanded */
	/* codec 2: the samples' registers and stack copies of the chunk, apart */
	int side_state;     /* 0 none (in the records, if any), 1 apart and not expanded, 2 expanded */
	const uint8_t *side_z; /* their zstd frame */
	size_t side_zlen;
	gtt_xbuf side_x;    /* the expanded bytes (bst.side points here once expanded) */
	int skip_stacks;    /* gtt_reader_skip_stacks */
	void *dctx;
	gtt_chaintab chains;

	/* chunk index and window */
	gtt_index_entry *idx;
	size_t n_idx, cap_idx;
	int idx_state;      /* 0 not built, 1 from the file, 2 rebuilt by a scan */
	uint64_t scan_stop; /* rebuilt: where the scan ended early (a cut or an impossible length) */
	int scan_why;       /* 0 none, 1 cut off, 2 corrupt length */
	int window;
	uint64_t win_from, win_to;
	int seeked_plain;   /* the next chunk is read where seek put it, window or not */
	uint64_t only;      /* gtt_reader_only's mask, 0 every kind */
	uint32_t summarize; /* gtt_reader_summarize's streams */
	gtt_summary summary;
	int want_prefetch;  /* gtt_reader_prefetch: pf made at the first zstd chunk */
	struct gtt_prefetch *pf;
	uint64_t n_expanded;  /* gtt_reader_expanded */
};

/* Hand the pages of r's mapping in [*dropped_to, at) back to the kernel (rounded down to a page)
 * once they make 8 MiB, or now; *dropped_to moves to there (back, after a seek back). Nothing is
 * lost: a page touched again comes back from the page cache or the file. */
void gtt_drop_behind(const gtt_reader *r, size_t *dropped_to, size_t at, int now);

/* ---- decompression ahead (gtt_prefetch.c) ---- */
typedef struct gtt_prefetch gtt_prefetch;
/* Expand frame i of f into x (grown to fit; *dctx made at the first use). 0, GTT_ENOMEM,
 * GTT_ENOZSTD or GTT_ECORRUPT. */
int gtt_expand_frame(void **dctx, const gtt_frames *f, int i, gtt_xbuf *x);
/* A worker thread. NULL when none could be made (the reader expands every chunk itself). */
gtt_prefetch *gtt_prefetch_new(void);
/* Stop and join the worker (its job, if any, finished first). NULL ok. */
void gtt_prefetch_free(gtt_prefetch *pf);
/* Expand the frames f of the packed chunk at file offset off in the background, once the job
 * before it is done. The frames must stay readable until taken or replaced. */
void gtt_prefetch_start(gtt_prefetch *pf, uint64_t off, const gtt_frames *f);
/* The expansion of that same chunk and frames, if it is the job: waits for it, swaps the
 * worker's buffers with buf[0] (and buf[1] for a second frame) and returns its result (0 or
 * gtt_zstd_decompress's error). 1 when the job is another chunk's (or the same chunk's other
 * frames) or failed for memory (expand it yourself). */
int gtt_prefetch_take(gtt_prefetch *pf, uint64_t off, const gtt_frames *f, gtt_xbuf buf[2]);

/* The zstd frames of a packed chunk of codec 1 or 2 whose payload is p[0..len) and header ci:
 * the records' in f->z[0], for codec 2 with want_side the side frame in f->z[1] (its length
 * side_len in f->raw_len[1]). 0, or GTT_ECORRUPT for a layout that does not add up (docs/FORMAT.md,
 * "Format 1.2": a side_len of 0 or over GTT_PACKED_MAX_RAW, a records' frame past the end). */
int gtt_unpack_frames(const uint8_t *p, uint32_t len, const gtt_chunk_info *ci, int want_side, gtt_frames *f);
/* Start expanding the packed chunk whose payload is p[0..len) at file offset off. 0 or GTT_E*. */
int gtt_unpack_open(gtt_reader *r, const uint8_t *p, uint32_t len, uint64_t off);
/* 1 when the packed chunk whose payload is p[0..len) is of a stream that holds none of the kinds
 * the reader was asked for (gtt_reader_only): passed over whole, never expanded. */
int gtt_unpack_unwanted(const gtt_reader *r, const uint8_t *p, uint32_t len);
/* 1 when that chunk is one gtt_reader_summarize passes over, with its header in *ci. */
int gtt_unpack_summarized(const gtt_reader *r, const uint8_t *p, uint32_t len, gtt_chunk_info *ci);
/* Next record of the open packed chunk: 1, 2 when it is of a kind the reader does not return
 * (gtt_reader_only: passed over, rec not filled), or GTT_EINVAL/GTT_ENOMEM. */
int gtt_unpack_next(gtt_reader *r, gtt_record *rec);
/* Start the open packed chunk over from its first record. */
void gtt_unpack_restart(gtt_reader *r);
/* Skip records of the open packed chunk until index records were passed. 0 or GTT_EINVAL. */
int gtt_unpack_skip(gtt_reader *r, uint32_t index);
/* Parse a packed chunk's header into ci. 0 or GTT_ECORRUPT. */
int gtt_unpack_header(const uint8_t *p, uint32_t len, gtt_chunk_info *ci);
/* Where the next chunk to read is under the window: r->off moved to the next selected chunk;
 * 0 when there is none. 1 to go on. */
int gtt_index_position(gtt_reader *r);
/* Where the reader will read its next chunk from off on (what gtt_index_position would choose,
 * r unchanged): off itself without a window, UINT64_MAX when the window has no chunk left. */
uint64_t gtt_index_next_read(const gtt_reader *r, uint64_t off);
/* Encode the index chunk payload for entries (writer side). */
int gtt_index_encode(enc *e, const gtt_index_entry *v, size_t n, uint64_t self_off);

#endif
