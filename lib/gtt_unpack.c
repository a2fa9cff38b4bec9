/* gtt_unpack.c — the reader's side of packed chunks (format 1.1): check the header, expand the
 * block (zstd, or stored), and hand out its records one at a time, every length bounds-checked
 * and never more than GTT_PACKED_MAX_RAW bytes held. */
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

/* Hand the chunk the reader will expand after file offset at to the worker when it is a whole
 * zstd-packed chunk of PREFETCH_MIN_RAW or more (its checksum is checked when the reader gets to
 * it; a chunk that fails it is never taken). Under a window that is the window's next chunk, not
 * the next in the file: expanding the chunk after each definitions chunk a window reads would
 * expand the whole trace. Chunks the reader passes over whole (gtt_reader_only,
 * gtt_reader_summarize) are looked past the same way. */
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
	if (gtt_unpack_header(p, n, &ci) != 0 || ci.codec != GTT_CODEC_ZSTD || ci.raw_len < PREFETCH_MIN_RAW)
		return;
	gtt_prefetch_start(r->pf, at, p + GTT_PACKED_HEADER_LEN, n - GTT_PACKED_HEADER_LEN, ci.raw_len);
	r->n_expanded++;
}

int gtt_unpack_open(gtt_reader *r, const uint8_t *p, uint32_t len, uint64_t off)
{
	gtt_chunk_info ci;
	int rc = gtt_unpack_header(p, len, &ci);
	r->blk_active = 0;
	r->blk_off = UINT64_MAX;
	if (rc)
		return rc;
	ci.offset = off;
	const uint8_t *z = p + GTT_PACKED_HEADER_LEN;
	size_t zlen = len - GTT_PACKED_HEADER_LEN;
	switch (ci.codec) {
	case GTT_CODEC_NONE:
		if (zlen != ci.raw_len)
			return GTT_ECORRUPT;
		r->blk = z; /* the records are the payload itself: no copy */
		break;
	case GTT_CODEC_ZSTD:
		if (!r->dctx && !(r->dctx = gtt_zstd_dctx_new()))
			return gtt_zstd_available() ? GTT_ENOMEM : GTT_ENOZSTD;
		if (r->want_prefetch && !r->pf && !(r->pf = gtt_prefetch_new()))
			r->want_prefetch = 0; /* no thread: expand here, as without */
		rc = r->pf && ci.raw_len ? gtt_prefetch_take(r->pf, off, z, zlen, ci.raw_len, &r->blk_buf, &r->blk_cap) : 1;
		if (rc <= 0) {
			if (rc < 0)
				return rc;
			r->blk = r->blk_buf;
			break;
		}
		if (r->blk_cap < ci.raw_len) {
			/* one buffer of the largest block so far, at most GTT_PACKED_MAX_RAW */
			free(r->blk_buf);
			r->blk_cap = 0;
			if (!(r->blk_buf = malloc(ci.raw_len)))
				return GTT_ENOMEM;
			r->blk_cap = ci.raw_len;
		}
		r->n_expanded += ci.raw_len != 0;
		if (ci.raw_len && (rc = gtt_zstd_decompress(r->dctx, r->blk_buf, ci.raw_len, z, zlen)) < 0)
			return rc;
		r->blk = r->blk_buf;
		break;
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
	if (unwanted && tag != GTT_REC_CALLCHAIN && gtt_compact_skip(&r->bst, (uint32_t)tag, p, (uint32_t)len) == 0)
		return 2; /* passed over (decoded below when it does not skip cleanly, and callchains are kept) */
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
