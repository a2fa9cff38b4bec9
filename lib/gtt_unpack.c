/* gtt_unpack.c — the reader's side of packed chunks (format 1.1 and 1.2): check the header, expand
 * the block (zstd, or stored; in 1.2 the samples' registers and stack copies from a frame of
 * their own, only for a reader that wants them), and hand out its records one at a time, every
 * length bounds-checked and never more than GTT_PACKED_MAX_RAW bytes held per frame. */
#include <stdlib.h>
#include <string.h>

#include "gtt_priv.h"

int gtt_unpack_header(const uint8_t *p, uint32_t len, gtt_chunk_info *ci)
{
	if (len < GTT_PACKED_HEADER_LEN)
		return GTT_ECORRUPT;
	memset(ci, 0, sizeof(*ci));
	ci->tag = GTT_REC_PACKED;
	ci->codec = p[0];
	ci->stream = p[1];
	ci->raw_len = rd32(p + 4);
	ci->n_records = rd32(p + 8);
	ci->first_ns = rd64(p + 12);
	ci->last_ns = rd64(p + 20);
	ci->stored_len = len;
	if (ci->codec == GTT_CODEC_ZSTD_SPLIT && len >= GTT_PACKED_HEADER_LEN + 4)
		ci->side_len = rd32(p + GTT_PACKED_HEADER_LEN); /* (checked by gtt_unpack_frames) */
	/* a block claiming more than the limit is refused before any allocation */
	if (ci->raw_len > GTT_PACKED_MAX_RAW)
		return GTT_ECORRUPT;
	return 0;
}

int gtt_unpack_unwanted(const gtt_reader *r, const uint8_t *p, uint32_t len)
{
	if (!r->only || len < GTT_PACKED_HEADER_LEN)
		return 0; /* every kind wanted; a header too short is unpack_open's to refuse */
	uint64_t kinds = gtt_stream_kinds(p[1]);
	return kinds && !(kinds & r->only);
}

int gtt_unpack_summarized(const gtt_reader *r, const uint8_t *p, uint32_t len, gtt_chunk_info *ci)
{
	if (!r->summarize || len < GTT_PACKED_HEADER_LEN || p[1] >= 32 || !(r->summarize >> p[1] & 1))
		return 0;
	/* a header that does not parse is unpack_open's to refuse; a time 0 hides the others */
	return gtt_unpack_header(p, len, ci) == 0 && ci->first_ns != 0;
}

/* A chunk expanding to less is expanded by the reader itself: handing it to the worker (a futex
 * wake and a switch each way) costs about what expanding it does. A recording's definitions
 * chunks, one between every two others, expand to under 4 KiB (1 999 of the first 2 000 of a
 * generated 1-hour trace); its data chunks to about 1 MiB. */
#define PREFETCH_MIN_RAW (8u << 10)

int gtt_unpack_frames(const uint8_t *p, uint32_t len, const gtt_chunk_info *ci, int want_side, gtt_frames *f)
{
	const uint8_t *z = p + GTT_PACKED_HEADER_LEN;
	size_t zlen = len - GTT_PACKED_HEADER_LEN;
	memset(f, 0, sizeof(*f));
	if (ci->codec == GTT_CODEC_ZSTD_SPLIT) {
		/* u32 side_len, u32 the records' frame length, the records' frame, the side frame */
		if (zlen < 8)
			return GTT_ECORRUPT;
		uint32_t side_len = rd32(z), rzlen = rd32(z + 4);
		z += 8;
		zlen -= 8;
		/* a writer keeps a side section only when it has bytes: one of none is a lie, and so is
		 * one past the limit or a records' frame past the chunk's end */
		if (side_len == 0 || side_len > GTT_PACKED_MAX_RAW || rzlen > zlen)
			return GTT_ECORRUPT;
		if (want_side) {
			f->z[1] = z + rzlen;
			f->zlen[1] = zlen - rzlen;
			f->raw_len[1] = side_len;
		}
		zlen = rzlen;
	}
	f->z[0] = z;
	f->zlen[0] = zlen;
	f->raw_len[0] = ci->raw_len;
	return 0;
}

/* Hand the chunk the reader will expand after file offset at to the worker when it is a whole
 * zstd-packed chunk of PREFETCH_MIN_RAW or more (its checksum is checked when the reader gets to
 * it; a chunk that fails it is never taken). Under a window that is the window's next chunk, not
 * the next in the file: expanding the chunk after each definitions chunk a window reads would
 * expand the whole trace. Chunks the reader passes over whole (gtt_reader_only,
 * gtt_reader_summarize) are looked past the same way. A codec-2 chunk's side frame goes with
 * its records' unless the reader wants samples bare (gtt_reader_skip_stacks). */
static void prefetch_next(gtt_reader *r, uint64_t at)
{
	const uint8_t *h, *p;
	uint32_t n;
	for (;;) {
		at = gtt_index_next_read(r, at);
		if (at > r->len || r->len - at < GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN)
			return;
		h = r->data + at;
		p = h + GTT_CHUNK_HEADER_LEN;
		n = rd32(h + 4);
		if (rd32(h) != GTT_REC_PACKED || n > r->len - at - GTT_CHUNK_HEADER_LEN)
			return;
		gtt_chunk_info si;
		if (!gtt_unpack_unwanted(r, p, n) && !gtt_unpack_summarized(r, p, n, &si))
			break;
		at += GTT_CHUNK_HEADER_LEN + (uint64_t)n;
	}
	gtt_chunk_info ci;
	gtt_frames f;
	if (gtt_unpack_header(p, n, &ci) != 0 || (ci.codec != GTT_CODEC_ZSTD && ci.codec != GTT_CODEC_ZSTD_SPLIT) ||
	    gtt_unpack_frames(p, n, &ci, !r->skip_stacks, &f) != 0 ||
	    (uint64_t)f.raw_len[0] + f.raw_len[1] < PREFETCH_MIN_RAW || !f.raw_len[0])
		return;
	gtt_prefetch_start(r->pf, at, &f);
	r->n_expanded++;
}

/* Expand a codec-2 chunk's side frame now (the chunk was opened bare, and a sample is wanted
 * whole). 0 or GTT_E*. */
static int expand_side(gtt_reader *r)
{
	gtt_frames f = { .z = { NULL, r->side_z }, .zlen = { 0, r->side_zlen },
	                 .raw_len = { 0, r->blk_info.side_len } };
	int rc = gtt_expand_frame(&r->dctx, &f, 1, &r->side_x);
	if (rc < 0)
		return rc;
	r->side_state = 2;
	r->bst.side = r->side_x.p;
	return 0;
}

/* Expand the zstd frames of the chunk at off (from the worker when it expanded them). */
static int expand(gtt_reader *r, uint64_t off, const gtt_frames *f)
{
	int rc;
	if (!r->dctx && !(r->dctx = gtt_zstd_dctx_new()))
		return gtt_zstd_available() ? GTT_ENOMEM : GTT_ENOZSTD;
	if (r->want_prefetch && !r->pf && !(r->pf = gtt_prefetch_new()))
		r->want_prefetch = 0; /* no thread: expand here, as without */
	gtt_xbuf x[2] = { r->blk_x, r->side_x };
	rc = r->pf && f->raw_len[0] ? gtt_prefetch_take(r->pf, off, f, x) : 1;
	r->blk_x = x[0];
	r->side_x = x[1];
	if (rc <= 0)
		return rc;
	r->n_expanded += f->raw_len[0] != 0;
	if ((rc = gtt_expand_frame(&r->dctx, f, 0, &r->blk_x)) < 0)
		return rc;
	return f->z[1] ? gtt_expand_frame(&r->dctx, f, 1, &r->side_x) : 0;
}

int gtt_unpack_open(gtt_reader *r, const uint8_t *p, uint32_t len, uint64_t off)
{
	gtt_chunk_info ci;
	gtt_frames f;
	int rc = gtt_unpack_header(p, len, &ci);
	r->blk_active = 0;
	r->blk_off = UINT64_MAX;
	r->side_state = 0;
	if (rc)
		return rc;
	ci.offset = off;
	switch (ci.codec) {
	case GTT_CODEC_NONE:
		if (len - GTT_PACKED_HEADER_LEN != ci.raw_len)
			return GTT_ECORRUPT;
		r->blk = p + GTT_PACKED_HEADER_LEN; /* the records are the payload itself: no copy */
		break;
	case GTT_CODEC_ZSTD:
	case GTT_CODEC_ZSTD_SPLIT: {
		gtt_frames all;
		if ((rc = gtt_unpack_frames(p, len, &ci, 1, &all)) < 0)
			return rc;
		f = all;
		if (r->skip_stacks) /* samples bare: their registers and stack copies stay packed */
			f.z[1] = NULL, f.zlen[1] = 0, f.raw_len[1] = 0;
		if ((rc = expand(r, off, &f)) < 0)
			return rc;
		r->blk = r->blk_x.p;
		if (ci.codec == GTT_CODEC_ZSTD_SPLIT) {
			r->side_z = all.z[1];
			r->side_zlen = all.zlen[1];
			r->side_state = f.z[1] ? 2 : 1;
		}
		break;
	}
	default:
		return GTT_EVERSION; /* a codec of a newer minor version */
	}
	r->blk_info = ci;
	r->blk_off = off;
	r->blk_len = ci.raw_len;
	gtt_unpack_restart(r);
	if (r->pf)
		prefetch_next(r, off + GTT_CHUNK_HEADER_LEN + len);
	return 0;
}

void gtt_unpack_restart(gtt_reader *r)
{
	r->blk_pos = 0;
	r->blk_index = 0;
	r->blk_active = r->blk_off != UINT64_MAX;
	gtt_blkstate_reset(&r->bst);
	r->bst.side_apart = r->side_state != 0;
	r->bst.side = r->side_state == 2 ? r->side_x.p : NULL;
	r->bst.side_len = r->side_state ? r->blk_info.side_len : 0;
}

int gtt_unpack_next(gtt_reader *r, gtt_record *rec)
{
	const uint8_t *p = r->blk + r->blk_pos, *end = r->blk + r->blk_len;
	uint64_t tag, len;
	r->blk_index++;
	if (gtt_uv_get(&p, end, &tag) != 0 || gtt_uv_get(&p, end, &len) != 0 || tag > UINT32_MAX ||
	    len > (uint64_t)(end - p)) {
		/* the framing is broken: nothing after this point can be found */
		r->blk_pos = r->blk_len;
		return GTT_EINVAL;
	}
	r->blk_pos = (size_t)(p + len - r->blk);
	int unwanted = r->only && tag < 64 && !(r->only >> tag & 1);
	/* a sample of a codec-2 chunk moves the side section's cursor: decoded, never skipped */
	int keeps_side = tag == GTT_REC_SAMPLE && r->bst.side_apart;
	if (unwanted && tag != GTT_REC_CALLCHAIN && !keeps_side &&
	    gtt_compact_skip(&r->bst, (uint32_t)tag, p, (uint32_t)len) == 0)
		return 2; /* passed over (decoded below when it does not skip cleanly, and callchains are kept) */
	r->bst.bare = (uint8_t)(r->skip_stacks || unwanted);
	if (keeps_side && !r->bst.bare && r->side_state == 1) {
		int rc = expand_side(r);
		if (rc < 0) {
			r->blk_pos = r->blk_len; /* the chunk's samples cannot be had whole */
			return rc == GTT_ENOMEM ? rc : GTT_ECORRUPT;
		}
	}
	int rc = gtt_compact_decode(&r->bst, &r->chains, (uint32_t)tag, p, (uint32_t)len, rec, &r->scratch,
	                            &r->scratch_cap);
	if (unwanted)
		return rc == GTT_ENOMEM ? rc : 2;
	return rc < 0 ? rc : 1;
}

int gtt_unpack_skip(gtt_reader *r, uint32_t index)
{
	gtt_record rec;
	/* records before index are decoded (the delta state needs them), not returned */
	while (r->blk_index < index) {
		if (!r->blk_active || r->blk_pos >= r->blk_len)
			return GTT_EINVAL;
		int rc = gtt_unpack_next(r, &rec);
		if (rc == GTT_ENOMEM)
			return rc;
	}
	if (r->blk_pos >= r->blk_len)
		return GTT_EINVAL;
	return 0;
}
