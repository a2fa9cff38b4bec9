/* test_gtt_pack.c — trace format 1.1: every record kind through packed blocks and compact
 * encodings (zstd and stored), block boundaries, a cut at every byte, corrupt and oversized
 * packed chunks, hostile inner records, a missing libzstd, records given raw and records too big
 * for a block. The index, windows, seeks, redefinitions and concurrent writers: test_gtt_index.c. */
#include "packtrace.h"
#include "testhelp.h"

/* The same mix written as 1.0 and as 1.1 with these options. */
static void roundtrip(const char *what, int level, uint32_t block_bytes, int n)
{
	gtt_writer *w0 = mw_open(0, 0, 0, 0);
	lcg_state = 7;
	int bad0 = write_mix(w0, n, 1000000000ull, 100000);
	buf b0 = mw_close(w0);
	gtt_writer *w1 = mw_open(1, level, block_bytes, 0);
	lcg_state = 7;
	int bad1 = write_mix(w1, n, 1000000000ull, 100000);
	gtt_writer_stats st;
	gtt_writer_get_stats(w1, &st);
	buf b1 = mw_close(w1);
	recs r0 = read_recs(b0.p, b0.n), r1 = read_recs(b1.p, b1.n);
	th_check(bad0 == 0 && bad1 == 0, "%s: every record written", what);
	th_check(r0.errors == 0 && r1.errors == 0 && r0.n > 100, "%s: both read without error (%zu records)", what, r1.n);
	th_check(r0.n == r1.n, "%s: as many records as 1.0 (%zu, %zu)", what, r1.n, r0.n);
	int same_data = 1;
	for (uint32_t k = 0; k < GTT_STREAMS; k++)
		if (k != GTT_STREAM_DEFS)
			same_data &= same_stream(&r0, &r1, k);
	th_check(same_data, "%s: data records equal field for field, in order within each stream", what);
	th_check(same_stream(&r0, &r1, GTT_STREAM_DEFS), "%s: definitions equal field for field, in order", what);
	th_check(st.n_chains > 0 && st.n_chain_refs > st.n_chains, "%s: callchains interned (%llu chains, %llu refs)",
	         what, (unsigned long long)st.n_chains, (unsigned long long)st.n_chain_refs);
	printf("  %s: 1.0 %zu bytes, 1.1 %zu bytes, %llu blocks\n", what, b0.n, b1.n, (unsigned long long)st.n_blocks);
	if (level >= 0)
		th_check(b1.n * 3 < b0.n, "%s: a third of the 1.0 size or less (%zu vs %zu)", what, b1.n, b0.n);
	else
		th_check(b1.n < b0.n, "%s: smaller than 1.0 even uncompressed (%zu vs %zu)", what, b1.n, b0.n);
	recs_free(&r0);
	recs_free(&r1);
	free(b0.p);
	free(b1.p);
}

static void packed(buf *b, const uint8_t *inner, uint32_t n, uint32_t raw_len, uint32_t n_rec, int codec)
{
	uint8_t *p = malloc(GTT_PACKED_HEADER_LEN + n + 1);
	p[0] = (uint8_t)codec; p[1] = GTT_STREAM_DATA; p[2] = p[3] = 0;
	le32(p + 4, raw_len);
	le32(p + 8, n_rec);
	le64(p + 12, 1);
	le64(p + 20, 2);
	memcpy(p + GTT_PACKED_HEADER_LEN, inner, n);
	chunk(b, GTT_REC_PACKED, p, GTT_PACKED_HEADER_LEN + n);
	free(p);
}

/* An inner record: varint tag, varint length, body. */
static size_t inner(uint8_t *out, uint32_t tag, const uint8_t *body, size_t n)
{
	size_t k = gtt_uv_put(out, tag);
	k += gtt_uv_put(out + k, n);
	memcpy(out + k, body, n);
	return k + n;
}

static void test_hostile(void)
{
	gtt_record rec;
	int err = 0;
	/* a valid switch, then a chunk claiming 16 MiB + 1, then a valid one again */
	uint8_t body[64], in[256];
	size_t k = 0, nb = 0;
	nb += gtt_uv_put(body + nb, gtt_zz(12345)); /* time */
	nb += gtt_uv_put(body + nb, 0);             /* new task */
	nb += gtt_uv_put(body + nb, 7);
	nb += gtt_uv_put(body + nb, 8);
	nb += gtt_uv_put(body + nb, 1u << 2 | 1);   /* cpu 1, out */
	k = inner(in, GTT_REC_SWITCH, body, nb);
	buf b = header11();
	packed(&b, in, (uint32_t)k, (uint32_t)k, 1, GTT_CODEC_NONE);
	packed(&b, in, (uint32_t)k, GTT_PACKED_MAX_RAW + 1, 1, GTT_CODEC_NONE);
	packed(&b, in, (uint32_t)k, UINT32_MAX, 1, GTT_CODEC_ZSTD);
	packed(&b, in, (uint32_t)k, (uint32_t)k, 1, 9); /* a codec of a later version */
	packed(&b, in, (uint32_t)k, (uint32_t)k + 1, 1, GTT_CODEC_NONE); /* stored length disagrees */
	packed(&b, in, (uint32_t)k, (uint32_t)k, 1, GTT_CODEC_NONE);
	gtt_reader *r = gtt_reader_open_mem(b.p, b.n, &err);
	int rc1 = gtt_reader_next(r, &rec);
	int ok1 = rc1 == 1 && rec.tag == GTT_REC_SWITCH && rec.u.sw.time_ns == 12345 && rec.u.sw.pid == 7 &&
	          rec.u.sw.tid == 8 && rec.u.sw.cpu == 1 && rec.u.sw.kind == 1 && (rec.flags & GTT_RECF_PACKED);
	th_check(ok1, "a hand-made packed switch decodes");
	th_check(gtt_reader_next(r, &rec) == GTT_ECORRUPT, "a block claiming 16 MiB + 1 is refused as corrupt");
	th_check(gtt_reader_next(r, &rec) == GTT_ECORRUPT, "a block claiming 4 GiB is refused as corrupt");
	th_check(gtt_reader_next(r, &rec) == GTT_EVERSION, "an unknown codec is a newer version's");
	th_check(gtt_reader_next(r, &rec) == GTT_ECORRUPT, "stored bytes that disagree with the raw length: corrupt");
	th_check(gtt_reader_next(r, &rec) == 1 && rec.tag == GTT_REC_SWITCH, "reading goes on after them");
	th_check(gtt_reader_next(r, &rec) == 0, "and ends");
	gtt_reader_close(r);
	free(b.p);

	/* inner records: broken framing, undefined chain, task number out of range, bad chain id,
	 * lengths past the block, each followed by a good record */
	struct { const char *what; uint8_t body[32]; size_t n; uint32_t tag; int framing; } cases[] = {
		{ "a sample referring to a callchain never defined", { 2, 0, 7, 8, 0, 0, 0, 50 }, 8, GTT_REC_SAMPLE, 0 },
		{ "a task number past the block's table", { 2, 9 }, 2, GTT_REC_SWITCH, 0 },
		{ "a callchain with id 0", { 0, 0, 1, 2 }, 4, GTT_REC_CALLCHAIN, 0 },
		{ "a callchain with an id over the limit", { 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 1, 2 }, 8, GTT_REC_CALLCHAIN, 0 },
		{ "a Python stack claiming 2^32-1 frames", { 2, 0, 7, 8, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f }, 11, GTT_REC_PY_STACK, 0 },
		{ "a sample with 2^31 inline frames", { 2, 0, 7, 8, 0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 0 }, 14, GTT_REC_SAMPLE, 0 },
		{ "a stack copy longer than the body", { 2, 0, 7, 8, 0, 2, 0, 0, 0x80, 0x01, 1 }, 11, GTT_REC_SAMPLE, 0 },
		{ "a varint of 11 bytes", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 11, GTT_REC_SWITCH, 0 },
		{ "a body length past the block", { 0 }, 0, GTT_REC_SWITCH, 1 },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint8_t blk[256];
		size_t n = 0;
		if (cases[c].framing) {
			n += gtt_uv_put(blk + n, GTT_REC_SWITCH);
			n += gtt_uv_put(blk + n, 200);
		} else {
			n += inner(blk + n, cases[c].tag, cases[c].body, cases[c].n);
		}
		memcpy(blk + n, in, k);
		n += k;
		buf h = header11();
		packed(&h, blk, (uint32_t)n, (uint32_t)n, 2, GTT_CODEC_NONE);
		packed(&h, in, (uint32_t)k, (uint32_t)k, 1, GTT_CODEC_NONE);
		r = gtt_reader_open_mem(h.p, h.n, &err);
		int a = gtt_reader_next(r, &rec), b2 = gtt_reader_next(r, &rec);
		int t2 = rec.tag, c3 = gtt_reader_next(r, &rec);
		if (cases[c].framing)
			th_check(a == GTT_EINVAL && b2 == 1 && t2 == GTT_REC_SWITCH && c3 == 0,
			         "%s: refused, the rest of the block skipped, the next block read (%d %d %d)",
			         cases[c].what, a, b2, c3);
		else
			th_check(a == GTT_EINVAL && b2 == 1 && t2 == GTT_REC_SWITCH && c3 == 1,
			         "%s: refused, the next record read (%d %d %d)", cases[c].what, a, b2, c3);
		gtt_reader_close(r);
		free(h.p);
	}
}

/* ---- cut-off and corrupt compressed traces ---- */

static void test_cuts(void)
{
	gtt_writer *w = mw_open(1, 0, 512, 0);
	lcg_state = 3;
	write_mix(w, 60, 5000, 1000);
	buf b = mw_close(w);
	recs full = read_recs(b.p, b.n);
	int bad = 0, shrink = 0, trunc_wrong = 0, prefix_wrong = 0;
	size_t prev = 0;
	/* chunk boundaries: where a cut is a whole (shorter) trace */
	uint8_t *boundary = calloc(b.n + 1, 1);
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN <= b.n;
	     off += GTT_CHUNK_HEADER_LEN + rd32(b.p + off + 4))
		boundary[off] = 1;
	boundary[b.n] = 1;
	for (size_t cut = GTT_HEADER_LEN; cut < b.n; cut++) {
		uint8_t *copy = malloc(cut); /* exact size: ASan sees any read past the cut */
		memcpy(copy, b.p, cut);
		recs r = read_recs(copy, cut);
		if (r.errors)
			bad++;
		if (r.n < prev)
			shrink++;
		if (r.truncated != !boundary[cut])
			trunc_wrong++;
		for (size_t i = 0; i < r.n && i < full.n; i++)
			if (!same(r.v[i], full.v[i])) {
				prefix_wrong++;
				break;
			}
		prev = r.n;
		recs_free(&r);
		free(copy);
	}
	th_check(bad == 0, "a compressed trace cut at each of %zu bytes reads without error (%d bad)", b.n, bad);
	th_check(shrink == 0 && prefix_wrong == 0, "each cut gives a prefix of the records, growing with the cut");
	th_check(trunc_wrong == 0, "cuts inside a chunk are truncated, cuts between chunks are not");

	/* a flipped byte inside a compressed data block, the CRC made right: corrupt, skipped */
	size_t at = 0, n_zstd = 0;
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN <= b.n; off += GTT_CHUNK_HEADER_LEN + rd32(b.p + off + 4)) {
		const uint8_t *pl = b.p + off + GTT_CHUNK_HEADER_LEN;
		if (rd32(b.p + off) == GTT_REC_PACKED && pl[0] == GTT_CODEC_ZSTD && pl[1] != GTT_STREAM_DEFS) {
			n_zstd++;
			if (n_zstd == 3)
				at = off;
		}
	}
	th_check(at != 0, "the trace has zstd data blocks (%zu)", n_zstd);
	int corrupt_ok = 1;
	for (uint32_t where = 0; at && where < 6; where++) {
		uint8_t *copy = malloc(b.n);
		memcpy(copy, b.p, b.n);
		uint32_t plen = rd32(copy + at + 4);
		uint8_t *pl = copy + at + GTT_CHUNK_HEADER_LEN;
		if (where < 4)
			pl[GTT_PACKED_HEADER_LEN + 6 + where * (plen - GTT_PACKED_HEADER_LEN - 12) / 4] ^= 0x5a;
		else if (where == 4)
			le32(pl + 4, rd32(pl + 4) + 1); /* raw length that the frame does not hold */
		else
			le32(pl + 4, rd32(pl + 4) - 1);
		le32(copy + at + 8, gtt_crc32c(gtt_crc32c(0, copy + at, 8), pl, plen));
		int err = 0, n_err = 0, n_ok = 0, rc;
		gtt_record rec;
		gtt_reader *r = gtt_reader_open_mem(copy, b.n, &err);
		uint64_t err_at = 0;
		while ((rc = gtt_reader_next(r, &rec)) != 0) {
			if (rc < 0) {
				n_err++;
				err_at = gtt_reader_offset(r);
			} else {
				n_ok++;
			}
		}
		gtt_reader_close(r);
		/* a damaged frame either fails to expand (one error at the chunk), or expands to
		 * records that then fail to decode one by one; nothing else is lost */
		if (n_err == 0 || (size_t)n_ok + 1 < full.n / 2 || (n_err == 1 && err_at != at)) {
			corrupt_ok = 0;
			printf("  damage %u: %d errors (last at %llu, block at %zu), %d records of %zu\n", where, n_err,
			       (unsigned long long)err_at, at, n_ok, full.n);
		}
		free(copy);
	}
	th_check(corrupt_ok, "a corrupt compressed block is reported and skipped, the rest read");
	/* the same with a bad CRC: one corrupt chunk, the others whole */
	{
		uint8_t *copy = malloc(b.n);
		memcpy(copy, b.p, b.n);
		copy[at + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN + 3] ^= 1;
		recs r = read_recs(copy, b.n);
		th_check(r.errors == 1 && r.n > full.n / 2, "a bad checksum on a packed chunk: one error, reading goes on");
		recs_free(&r);
		free(copy);
	}
	recs_free(&full);
	free(boundary);
	free(b.p);
}

/* ---- libzstd missing ---- */

static void test_no_zstd(void)
{
	gtt_writer *w = mw_open(1, 0, 0, 0);
	lcg_state = 5;
	write_mix(w, 40, 1000, 1000);
	buf bz = mw_close(w);
	gtt_zstd_force_missing(1);
	w = mw_open(1, 0, 0, 0);
	lcg_state = 5;
	write_mix(w, 40, 1000, 1000);
	gtt_writer_stats st;
	gtt_writer_get_stats(w, &st);
	buf bn = mw_close(w);
	th_check(strcmp(st.codec, "none") == 0, "without libzstd the writer stores blocks (codec %s)", st.codec);
	int err = 0, rc, saw_meta = 0, n_nozstd = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(bn.p, bn.n, &err);
	while ((rc = gtt_reader_next(r, &rec)) > 0)
		if (rec.tag == GTT_REC_META && strcmp(rec.u.meta.key, "compression") == 0 &&
		    strstr(rec.u.meta.value, "libzstd.so.1"))
			saw_meta = 1;
	th_check(rc == 0 && saw_meta, "the stored trace reads, and its meta says libzstd.so.1 was missing");
	gtt_reader_close(r);
	r = gtt_reader_open_mem(bz.p, bz.n, &err);
	while ((rc = gtt_reader_next(r, &rec)) != 0)
		if (rc == GTT_ENOZSTD)
			n_nozstd++;
	gtt_reader_close(r);
	th_check(n_nozstd > 0, "a zstd trace without libzstd: GTT_ENOZSTD per compressed chunk (%d)", n_nozstd);
	th_check(strstr(gtt_strerror(GTT_ENOZSTD), "libzstd.so.1") != NULL, "its message names libzstd.so.1: %s",
	         gtt_strerror(GTT_ENOZSTD));
	gtt_zstd_force_missing(0);
	recs a = read_recs(bz.p, bz.n), b = read_recs(bn.p, bn.n);
	th_check(a.errors == 0 && same_stream(&a, &b, 0) && same_stream(&a, &b, 1),
	         "stored and compressed traces hold the same records");
	th_check(bn.n > bz.n, "compression pays (%zu stored, %zu zstd)", bn.n, bz.n);
	recs_free(&a);
	recs_free(&b);
	free(bz.p);
	free(bn.p);
}

/* ---- records given raw, records too big for a block, many threads ---- */

static void test_raw_and_big(void)
{
	gtt_writer *w = mw_open(1, 0, 0, 0);
	gtt_record k = { .tag = GTT_REC_CUDA_KERNEL };
	k.u.kernel = (gtt_cuda_kernel){ .start_ns = 5, .end_ns = 9, .pid = 3, .device = 1, .stream = 2,
	                                .correlation = 77, .grid = { 4, 5, 6 }, .name_id = 8 };
	enc e = { 0 };
	gtt_encode(&e, &k);
	th_check(gtt_write_raw(w, GTT_REC_CUDA_KERNEL, e.p, (uint32_t)e.n) == 0, "a raw 1.0 kernel record is taken");
	th_check(gtt_write_raw(w, GTT_REC_CUDA_KERNEL, e.p, 6) == GTT_EINVAL, "a raw payload that does not decode is refused");
	th_check(gtt_write_raw(w, 999, "abc", 3) == 0, "a raw record of an unknown tag is taken");
	th_check(gtt_write_raw(w, GTT_REC_PACKED, "abc", 3) == GTT_EINVAL, "a raw packed chunk is refused");
	gtt_record cc = { .tag = GTT_REC_CALLCHAIN };
	th_check(gtt_write(w, &cc) == GTT_EINVAL, "callchain records are the writer's own");
	size_t big_len = GTT_PACKED_MAX_RAW - 1000;
	uint8_t *big = calloc(1, big_len);
	for (size_t i = 0; i < big_len; i += 4096)
		big[i] = (uint8_t)i;
	gtt_record a = { .tag = GTT_REC_ARCHIVE };
	a.u.archive = (gtt_archive){ .build_id_len = 1, .build_id = { 9 }, .path = "/big", .kind = GTT_ARCHIVE_ELF,
	                             .total_bytes = big_len, .len = (uint32_t)big_len, .data = big };
	th_check(gtt_write(w, &a) == 0, "a record bigger than a block is taken");
	gtt_record end = { .tag = GTT_REC_END };
	end.u.end.time_ns = 10;
	gtt_write(w, &k);
	gtt_write(w, &end);
	buf b = mw_close(w);
	int err = 0, rc, n = 0, kern = 0, unk = 0, arch = 0, last_end = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(b.p, b.n, &err);
	while ((rc = gtt_reader_next(r, &rec)) > 0) {
		n++;
		last_end = rec.tag == GTT_REC_END;
		if (rec.tag == GTT_REC_CUDA_KERNEL && rec.u.kernel.correlation == 77 && rec.u.kernel.grid[2] == 6 &&
		    rec.u.kernel.end_ns == 9 && (rec.flags & GTT_RECF_PACKED))
			kern++;
		if (rec.tag == 999 && rec.len == 3 && memcmp(rec.raw, "abc", 3) == 0)
			unk++;
		if (rec.tag == GTT_REC_ARCHIVE && rec.u.archive.len == big_len && memcmp(rec.u.archive.data, big, big_len) == 0 &&
		    !(rec.flags & GTT_RECF_PACKED))
			arch++;
	}
	th_check(rc == 0 && kern == 2 && unk == 1 && arch == 1, "read back: kernels %d, unknown %d, big archive %d (plain chunk)",
	         kern, unk, arch);
	th_check(last_end, "the end record is the last one");
	const gtt_index_entry *ix;
	size_t ni = 0, plain = 0;
	gtt_reader_index(r, &ix, &ni);
	for (size_t i = 0; i < ni; i++)
		plain += (ix[i].flags & GTT_INDEX_PLAIN) != 0;
	th_check(plain == 1, "the index lists the plain chunk as such");
	gtt_reader_close(r);
	free(big);
	free(e.p);
	free(b.p);
}


int main(void)
{
	th_check(gtt_zstd_available(), "libzstd.so.1 loads on this machine");
	roundtrip("zstd, 1 MiB blocks", 0, 0, 3000);
	roundtrip("zstd level 19, 4 KiB blocks", 19, 4096, 3000);
	roundtrip("stored, 1 KiB blocks", -1, 1024, 1000);
	test_hostile();
	test_cuts();
	test_no_zstd();
	test_raw_and_big();
	return th_report();
}
