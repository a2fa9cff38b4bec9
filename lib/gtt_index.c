/* gtt_index.c — the chunk index of format 1.1: written at the end by the writer, read back (and
 * checked) or rebuilt by a scan of chunk headers, and used to read only the chunks of a time
 * window plus every definitions chunk. */
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt_priv.h"

#define INDEX_MAGIC "GTTINDEX"
#define INDEX_ENTRY_LEN 36
#define INDEX_TRAILER_LEN 16 /* u64 offset of the index chunk, then the magic */

int gtt_index_encode(enc *e, const gtt_index_entry *v, size_t n, uint64_t self_off)
{
	if (enc_reserve(e, 4 + n * INDEX_ENTRY_LEN + INDEX_TRAILER_LEN) != 0)
		return e->err;
	uint8_t *p = e->p + e->n;
	le32(p, (uint32_t)n);
	p += 4;
	for (size_t i = 0; i < n; i++, p += INDEX_ENTRY_LEN) {
		le64(p, v[i].offset);
		le32(p + 8, (uint32_t)(v[i].end - v[i].offset));
		le32(p + 12, v[i].n_records);
		le64(p + 16, v[i].first_ns);
		le64(p + 24, v[i].last_ns);
		le32(p + 32, v[i].flags);
	}
	le64(p, self_off);
	memcpy(p + 8, INDEX_MAGIC, 8);
	e->n += 4 + n * INDEX_ENTRY_LEN + INDEX_TRAILER_LEN;
	return 0;
}

static int add_entry(gtt_reader *r, const gtt_index_entry *e)
{
	if (GT_GROW(r->idx, r->cap_idx, r->n_idx + 1) != 0)
		return GTT_ENOMEM;
	r->idx[r->n_idx++] = *e;
	return 0;
}

/* The index chunk at the end of the file, when it is there and consistent: its entries must
 * cover every byte from the header to the index chunk, chunk after chunk. 1 loaded, 0 not
 * usable (r->n_idx back to 0), GTT_ENOMEM. */
static int load(gtt_reader *r)
{
	const uint8_t *d = r->data;
	size_t len = r->len;
	if (len < GTT_HEADER_LEN + GTT_CHUNK_HEADER_LEN + 4 + INDEX_TRAILER_LEN ||
	    memcmp(d + len - 8, INDEX_MAGIC, 8) != 0)
		return 0;
	uint64_t self = rd64(d + len - INDEX_TRAILER_LEN);
	if (self < GTT_HEADER_LEN || self > len - GTT_CHUNK_HEADER_LEN - 4 - INDEX_TRAILER_LEN)
		return 0;
	const uint8_t *h = d + self, *p = h + GTT_CHUNK_HEADER_LEN;
	uint32_t plen = rd32(h + 4);
	if (rd32(h) != GTT_REC_INDEX || (uint64_t)plen + GTT_CHUNK_HEADER_LEN != len - self ||
	    gtt_crc32c(gtt_crc32c(0, h, 8), p, plen) != rd32(h + 8))
		return 0;
	uint32_t n = rd32(p);
	if (n > (plen - 4 - INDEX_TRAILER_LEN) / INDEX_ENTRY_LEN ||
	    (uint64_t)n * INDEX_ENTRY_LEN + 4 + INDEX_TRAILER_LEN != plen)
		return 0;
	uint64_t prev_end = GTT_HEADER_LEN;
	p += 4;
	for (uint32_t i = 0; i < n; i++, p += INDEX_ENTRY_LEN) {
		gtt_index_entry e = {
			.offset = rd64(p), .n_records = rd32(p + 12), .first_ns = rd64(p + 16),
			.last_ns = rd64(p + 24), .flags = rd32(p + 32),
		};
		uint32_t clen = rd32(p + 8);
		if (e.offset != prev_end || clen < GTT_CHUNK_HEADER_LEN || clen > self - e.offset)
			goto bad;
		e.end = e.offset + clen;
		prev_end = e.end;
		if (add_entry(r, &e) != 0)
			return GTT_ENOMEM;
	}
	if (prev_end != self)
		goto bad;
	return 1;
bad:
	r->n_idx = 0;
	return 0;
}

/* Rebuild by walking the chunk headers (and the headers of packed chunks); checksums are left
 * to the reading. Runs of other chunks become one entry of unknown time range. The pages walked
 * are handed back as it goes: a 1.0 trace has a chunk header in every page. */
static int rebuild(gtt_reader *r)
{
	size_t off = r->len >= GTT_HEADER_LEN ? GTT_HEADER_LEN : r->len, dropped_to = 0;
	r->n_idx = 0;
	r->scan_why = 0;
	for (; off < r->len; gtt_drop_behind(r, &dropped_to, off, 0)) {
		const uint8_t *h = r->data + off;
		if (r->len - off < GTT_CHUNK_HEADER_LEN) {
			r->scan_why = 1;
			break;
		}
		uint32_t tag = rd32(h), plen = rd32(h + 4);
		if (plen > GTT_MAX_PAYLOAD) {
			r->scan_why = 2;
			break;
		}
		if (plen > r->len - off - GTT_CHUNK_HEADER_LEN) {
			r->scan_why = 1;
			break;
		}
		size_t next = off + GTT_CHUNK_HEADER_LEN + plen;
		gtt_chunk_info ci;
		gtt_index_entry e = { .offset = off, .end = next, .first_ns = UINT64_MAX, .flags = GTT_INDEX_PLAIN };
		if (tag == GTT_REC_INDEX) {
			off = next;
			continue;
		}
		if (tag == GTT_REC_PACKED && gtt_unpack_header(h + GTT_CHUNK_HEADER_LEN, plen, &ci) == 0) {
			e.first_ns = ci.first_ns;
			e.last_ns = ci.last_ns;
			e.n_records = ci.n_records;
			e.flags = ci.stream == GTT_STREAM_DEFS ? GTT_INDEX_DEFS : 0;
		} else if (r->n_idx && (r->idx[r->n_idx - 1].flags & GTT_INDEX_PLAIN) && r->idx[r->n_idx - 1].end == off) {
			r->idx[r->n_idx - 1].end = next; /* a run of plain chunks */
			off = next;
			continue;
		}
		if (add_entry(r, &e) != 0)
			return GTT_ENOMEM;
		off = next;
	}
	gtt_drop_behind(r, &dropped_to, off, 1);
	r->scan_stop = off;
	return 0;
}

int gtt_reader_index(gtt_reader *r, const gtt_index_entry **entries, size_t *n)
{
	if (!r)
		return GTT_EINVAL;
	if (!r->idx_state) {
		int rc = load(r);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			r->idx_state = 1;
		} else {
			if ((rc = rebuild(r)) < 0) {
				r->n_idx = 0;
				return rc;
			}
			r->idx_state = 2;
		}
	}
	if (entries)
		*entries = r->idx;
	if (n)
		*n = r->n_idx;
	return r->idx_state == 1;
}

int gtt_reader_set_window(gtt_reader *r, uint64_t from_ns, uint64_t to_ns)
{
	if (!r || from_ns > to_ns)
		return GTT_EINVAL;
	int rc = gtt_reader_index(r, NULL, NULL);
	if (rc < 0)
		return rc;
	r->window = !(from_ns == 0 && to_ns == UINT64_MAX);
	r->win_from = from_ns;
	r->win_to = to_ns;
	gtt_reader_rewind(r);
	return 0;
}

static int selected(const gtt_reader *r, const gtt_index_entry *e)
{
	if ((e->flags & (GTT_INDEX_DEFS | GTT_INDEX_PLAIN)) || e->first_ns > e->last_ns)
		return 1;
	return e->first_ns <= r->win_to && e->last_ns >= r->win_from;
}

/* The first selected entry that ends after off: its index, or r->n_idx when there is none. */
static size_t next_selected(const gtt_reader *r, uint64_t off)
{
	size_t lo = 0, hi = r->n_idx;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->idx[mid].end <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < r->n_idx && !selected(r, &r->idx[lo]))
		lo++;
	return lo;
}

uint64_t gtt_index_next_read(const gtt_reader *r, uint64_t off)
{
	if (!r->window)
		return off;
	size_t i = next_selected(r, off);
	if (i == r->n_idx)
		return UINT64_MAX; /* the window's last chunk was read (a rebuilt index's cut aside) */
	return off < r->idx[i].offset ? r->idx[i].offset : off;
}

int gtt_index_position(gtt_reader *r)
{
	size_t i = next_selected(r, r->off);
	if (i < r->n_idx) {
		if (r->off < r->idx[i].offset)
			r->off = (size_t)r->idx[i].offset;
		return 1;
	}
	/* past the last entry: where a rebuilt index stopped early, reading meets the same cut or
	 * impossible length as a plain read would */
	if (r->idx_state == 2 && r->scan_why && r->off <= r->scan_stop) {
		r->off = (size_t)r->scan_stop;
		return 1;
	}
	r->off = r->len;
	return 0;
}
