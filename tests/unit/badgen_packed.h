/* badgen_packed.h — the format 1.1 part of the bad-trace corpus, included by test_badgen.c (one
 * generator writes the whole corpus; this part is kept apart to keep each file readable). Uses
 * test_badgen.c's writer helpers, base content and chunk helpers. */
#ifndef BADGEN_PACKED_H
#define BADGEN_PACKED_H

/* Made without depending on the libzstd version: the real writer stores its blocks, then each
 * block becomes a zstd frame of raw blocks (what zstd itself makes of incompressible data), a
 * format every libzstd expands. */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A zstd frame holding p[0..n) in raw blocks of at most 128 KiB, content size declared. */
static void zstd_raw_frame(buf *out, const uint8_t *p, size_t n)
{
	uint8_t h[9];
	put_le(h, 0xFD2FB528u, 4);
	h[4] = 0xA0;                 /* 4-byte content size, single segment, no checksum */
	put_le(h + 5, n, 4);
	append(out, h, 9);
	size_t at = 0;
	do {
		size_t k = n - at > (128u << 10) ? (128u << 10) : n - at;
		uint8_t bh[3];
		put_le(bh, (uint64_t)(at + k == n) | (uint64_t)k << 3, 3); /* last flag, type 0 raw, size */
		append(out, bh, 3);
		append(out, p + at, k);
		at += k;
	} while (at < n);
}

/* The base content written as 1.1, every stored block turned into a zstd frame, and an index
 * that matches. */
static buf packed_trace(void)
{
	int err = 0;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.level = -1;        /* stored: converted below */
	o.no_index = 1;
	o.block_bytes = 256;  /* several data blocks: a cut or a bad one leaves the others */
	o.one_data_stream = 1; /* the layout these files were first made in (no kinds' streams) */
	if (memfd < 0)
		memfd = memfd_create("badgen", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 0) != 0 || lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	gtt_writer *w = gtt_writer_fdopen_opts(dup(memfd), 0, &o, &err);
	if (!w)
		abort();
	meta_block(w, "prog --corpus --packed");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	sample_block(w, BASE_SAMPLES);
	end_block(w, BASE_SAMPLES, T0 + (BASE_SAMPLES + 1) * PERIOD);
	buf in = tw_end(w), out = { 0 };
	append(&out, in.p, GTT_HEADER_LEN);
	size_t off[4096], n = chunk_offsets(&in, off, 4096);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *c = in.p + off[i], *pl = c + GTT_CHUNK_HEADER_LEN;
		uint32_t tag = rd32(c), len = rd32(c + 4);
		if (tag != GTT_REC_PACKED || pl[0] != GTT_CODEC_NONE) {
			append(&out, c, GTT_CHUNK_HEADER_LEN + len);
			continue;
		}
		buf z = { 0 };
		append(&z, pl, GTT_PACKED_HEADER_LEN);
		z.p[0] = GTT_CODEC_ZSTD;
		zstd_raw_frame(&z, pl + GTT_PACKED_HEADER_LEN, len - GTT_PACKED_HEADER_LEN);
		append_chunk(&out, tag, z.p, (uint32_t)z.n);
		free(z.p);
	}
	free(in.p);
	/* the index of the converted image, as the writer would have written it */
	gtt_reader *r = gtt_reader_open_mem(out.p, out.n, &err);
	const gtt_index_entry *e;
	size_t ne = 0;
	if (!r || gtt_reader_index(r, &e, &ne) != 0)
		abort();
	enc x = { 0 };
	if (gtt_index_encode(&x, e, ne, out.n) != 0)
		abort();
	gtt_reader_close(r);
	append_chunk(&out, GTT_REC_INDEX, x.p, (uint32_t)x.n);
	free(x.p);
	return out;
}

/* Offset of the second packed chunk of the given stream. */
static size_t find_packed(const buf *b, int stream)
{
	size_t off[4096], n = chunk_offsets(b, off, 4096);
	int k = 1;
	for (size_t i = 0; i < n; i++)
		if (rd32(b->p + off[i]) == GTT_REC_PACKED && b->p[off[i] + GTT_CHUNK_HEADER_LEN + 1] == stream && k-- == 0)
			return off[i];
	abort();
}

static void fix_crc(buf *b, size_t at)
{
	uint32_t len = rd32(b->p + at + 4);
	put_le(b->p + at + 8, gtt_crc32c(gtt_crc32c(0, b->p + at, 8), b->p + at + GTT_CHUNK_HEADER_LEN, len), 4);
}

static buf mk_packed_corrupt(void)
{
	buf b = packed_trace();
	size_t at = find_packed(&b, GTT_STREAM_DATA);
	/* the first block header of the frame (after the 9-byte frame header): type 3, reserved */
	b.p[at + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN + 9] |= 0x06;
	fix_crc(&b, at);
	return b;
}

static buf mk_packed_huge(void)
{
	buf b = packed_trace();
	size_t at = find_packed(&b, GTT_STREAM_DATA);
	put_le(b.p + at + GTT_CHUNK_HEADER_LEN + 4, 0xffffffffu, 4); /* raw length 4 GiB - 1 */
	fix_crc(&b, at);
	return b;
}

static buf mk_packed_cut(void)
{
	buf b = packed_trace();
	size_t at = find_packed(&b, GTT_STREAM_DATA);
	b.n = at + GTT_CHUNK_HEADER_LEN + rd32(b.p + at + 4) / 2;
	return b;
}

/* One inner record: varint tag, varint length, body. */
static void inner(buf *b, uint32_t tag, const uint8_t *body, size_t n)
{
	uint8_t h[2 * GTT_VARINT_MAX];
	size_t k = gtt_uv_put(h, tag);
	k += gtt_uv_put(h + k, n);
	append(b, h, k);
	append(b, body, n);
}

static buf mk_packed_records(void)
{
	buf b = packed_trace(), out = { 0 }, blk = { 0 }, z = { 0 };
	size_t at = find_packed(&b, GTT_STREAM_DATA);
	/* a sample of a callchain never defined; a switch naming task 9 of a block that has none; a
	 * switch whose time is an 11-byte varint; a good switch; a length past the block */
	static const uint8_t undefined_chain[] = { 2, 0, 0x92, 0x21, 0x92, 0x21, 0, 0, 0, 50 };
	static const uint8_t bad_task[] = { 2, 9, 4 };
	static const uint8_t long_varint[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 1, 1, 4 };
	static const uint8_t good[] = { 0x80, 0x94, 0xeb, 0xdc, 0x07, 0, 0x92, 0x21, 0x92, 0x21, 5 };
	inner(&blk, GTT_REC_SAMPLE, undefined_chain, sizeof(undefined_chain));
	inner(&blk, GTT_REC_SWITCH, bad_task, sizeof(bad_task));
	inner(&blk, GTT_REC_SWITCH, long_varint, sizeof(long_varint));
	inner(&blk, GTT_REC_SWITCH, good, sizeof(good));
	uint8_t past[2] = { GTT_REC_SWITCH, 0x7f };
	append(&blk, past, 2);
	uint8_t h[GTT_PACKED_HEADER_LEN] = { GTT_CODEC_ZSTD, GTT_STREAM_DATA };
	put_le(h + 4, blk.n, 4);
	put_le(h + 8, 5, 4);
	put_le(h + 12, T0, 8);
	put_le(h + 20, T0 + 1, 8);
	append(&z, h, sizeof(h));
	zstd_raw_frame(&z, blk.p, blk.n);
	append(&out, b.p, at);
	append_chunk(&out, GTT_REC_PACKED, z.p, (uint32_t)z.n);
	append(&out, b.p + at, b.n - at); /* then the real data block, the end, the index (now off) */
	free(b.p);
	free(blk.p);
	free(z.p);
	return out;
}

static buf mk_packed_bad_index(void)
{
	buf b = packed_trace();
	size_t off[4096], n = chunk_offsets(&b, off, 4096), at = off[n - 1];
	uint8_t *pl = b.p + at + GTT_CHUNK_HEADER_LEN;
	uint32_t ne = rd32(pl);
	for (uint32_t i = 0; i < ne; i++) /* every entry points 5 bytes into its chunk */
		put_le(pl + 4 + (size_t)i * 36, rd64(pl + 4 + (size_t)i * 36) + 5, 8);
	fix_crc(&b, at);
	return b;
}

#endif
