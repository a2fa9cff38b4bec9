/* test_gtt_split.c — format 1.2: the samples' registers and stack copies in a zstd frame of their
 * own inside each packed chunk of the samples stream (codec 2), which a reader asked for bare
 * samples (gtt_reader_skip_stacks) never expands. Checked: a 1.2 writer makes such chunks and
 * says 1.2 in the header, a 1.1 writer (and one without zstd, or of one data stream) neither;
 * the records read back are those of the 1.1 trace of the same writes, with and without prefetch
 * and under a window; a bare read gives every sample's other fields and flags with no registers
 * or stack, whatever the layout, and never expands the side frame (one made to fail with its
 * checksum right goes unnoticed bare and is a corrupt chunk read whole); a seek back into a chunk
 * read bare gives the sample whole; bare and whole reads by turns with prefetch give what reads
 * all one way give; a 1.0 trace's samples (plain chunks) come bare too; layouts that do not add
 * up (a side length of 0 or over the limit, a records' frame length past the end, swallowing
 * the side frame or one short), and an unknown codec, are refused; gtt_reader_chunk_at tells the
 * side's length. */
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "memtrace.h"
#include "testhelp.h"

typedef struct buf { uint8_t *p; size_t n; } buf;

static uint64_t lcg_state;
static uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33);
}

/* Samples (half of them with registers and a stack copy of random length, some with registers
 * only), switches, CUDA kernels and strings, over many tasks. */
static buf make_trace(uint32_t minor, int level, int one)
{
	int fd;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	o.level = level;
	o.block_bytes = 32768;
	o.one_data_stream = one;
	gtt_writer *w = memtrace_open("gtt_split", &o, &fd);
	static uint8_t stack[2048];
	uint64_t regs[17], ips[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	char name[32];
	lcg_state = 11;
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)(i * 7 + (i >> 5));
	for (int i = 0; i < 17; i++)
		regs[i] = 0x7ffe0000ull + (uint64_t)i * 8;
	for (int i = 0; i < 12000; i++) {
		uint64_t t = 2000000000ull + (uint64_t)i * 1000 + lcg() % 700;
		uint32_t pid = 100 + lcg() % 3, tid = pid * 10 + lcg() % 30, k = lcg() % 10;
		gtt_record r;
		memset(&r, 0, sizeof(r));
		if (k < 5) {
			r.tag = GTT_REC_SAMPLE;
			r.u.sample = (gtt_sample){ .time_ns = t, .pid = pid, .tid = tid, .cpu = lcg() % 4, .period_ns = 1000000,
			                           .n_user = 1 + lcg() % 4, .ips = ips };
			uint32_t how = lcg() % 4;
			if (how >= 1) {
				r.u.sample.flags = GTT_SAMPLE_REGS;
				r.u.sample.n_regs = 1 + lcg() % 17;
				r.u.sample.regs = regs + lcg() % (18 - r.u.sample.n_regs);
				r.u.sample.regs_abi = 2;
				r.u.sample.regs_mask = (1ull << r.u.sample.n_regs) - 1;
			}
			if (how >= 2) {
				r.u.sample.flags |= GTT_SAMPLE_STACK;
				r.u.sample.stack_len = lcg() % sizeof(stack);
				r.u.sample.stack = stack + lcg() % (sizeof(stack) - r.u.sample.stack_len + 1);
			}
		} else if (k < 8) {
			r.tag = GTT_REC_SWITCH;
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = pid, .tid = tid, .cpu = lcg() % 8, .kind = lcg() % 2 };
		} else if (k == 8) {
			r.tag = GTT_REC_CUDA_KERNEL;
			r.u.kernel = (gtt_cuda_kernel){ .start_ns = t, .end_ns = t + 400, .pid = pid, .correlation = (uint32_t)i };
		} else {
			snprintf(name, sizeof(name), "s%d", i);
			r.tag = GTT_REC_STRING;
			r.u.string = (gtt_string){ .pid = pid, .id = (uint32_t)i, .text = name };
		}
		if (gtt_write(w, &r) != 0)
			abort();
	}
	buf b = { 0 };
	b.p = memtrace_close(w, fd, &b.n);
	return b;
}

/* A record as 1.0 payload bytes (kind first): equal records, equal bytes. bare: a sample's
 * registers and stack left out, as a bare read gives it. */
static buf canon(const gtt_record *rec, int bare)
{
	gtt_record r = *rec;
	enc e = { 0 };
	if (bare && r.tag == GTT_REC_SAMPLE) {
		r.u.sample.n_regs = 0;
		r.u.sample.regs = NULL;
		r.u.sample.stack_len = 0;
		r.u.sample.stack = NULL;
	}
	if (enc_reserve(&e, 4) == 0) {
		memcpy(e.p, &r.tag, 4);
		e.n = 4;
	}
	if (gtt_encode(&e, &r) != 0)
		e.n = 4;
	return (buf){ e.p, e.n };
}

typedef struct recs { buf *v; size_t n, cap; int errors, bad_bare; } recs;

/* Every record of t (read bare or whole, with or without prefetch), as canon(bare_canon). */
static recs read_recs(const buf *t, int bare, int prefetch, int bare_canon, uint64_t from, uint64_t to)
{
	int err = 0;
	recs r = { 0 };
	gtt_record rec;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	if (!rd)
		abort();
	gtt_reader_skip_stacks(rd, bare);
	if (prefetch)
		gtt_reader_prefetch(rd);
	if ((from || to) && gtt_reader_set_window(rd, from, to) != 0)
		abort();
	for (int rc; (rc = gtt_reader_next(rd, &rec)) != 0;) {
		if (rc < 0) {
			r.errors++;
			continue;
		}
		uint64_t t0, t1;
		if ((from || to) && (!gtt_rec_times(&rec, &t0, &t1) || t1 < from || t0 > to))
			continue; /* (a window selects whole chunks, which differ with the layout) */
		/* bare: nothing of the unwind data comes, the flags still say what there was */
		if (bare && rec.tag == GTT_REC_SAMPLE &&
		    (rec.u.sample.n_regs || rec.u.sample.regs || rec.u.sample.stack_len || rec.u.sample.stack))
			r.bad_bare++;
		if (r.n == r.cap) {
			r.cap = r.cap ? 2 * r.cap : 256;
			r.v = realloc(r.v, r.cap * sizeof(*r.v));
		}
		r.v[r.n++] = canon(&rec, bare_canon);
	}
	gtt_reader_close(rd);
	return r;
}

static void recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].p);
	free(r->v);
}

/* The records of a and b of kind tag, in order, are the same. */
static int same_kind(const recs *a, const recs *b, uint32_t tag)
{
	size_t i = 0, j = 0;
	for (;;) {
		while (i < a->n && memcmp(a->v[i].p, &tag, 4) != 0)
			i++;
		while (j < b->n && memcmp(b->v[j].p, &tag, 4) != 0)
			j++;
		if (i == a->n || j == b->n)
			return i == a->n && j == b->n;
		if (a->v[i].n != b->v[j].n || memcmp(a->v[i].p, b->v[j].p, a->v[i].n) != 0)
			return 0;
		i++, j++;
	}
}

/* The same records of every kind in the same order (the writer keeps each stream's order; where
 * its blocks close, and so how the streams interleave, depends on their sizes). The meta records
 * differ in the compression one. */
static int same(const recs *a, const recs *b)
{
	static const uint32_t tags[] = { GTT_REC_SAMPLE, GTT_REC_SWITCH, GTT_REC_CUDA_KERNEL, GTT_REC_STRING };
	if (a->n != b->n)
		return 0;
	for (size_t k = 0; k < sizeof(tags) / sizeof(tags[0]); k++)
		if (!same_kind(a, b, tags[k]))
			return 0;
	return 1;
}

/* The packed chunks of t by codec; *first2 the offset of the first codec-2 chunk (0 none). */
static void count_codecs(const buf *t, size_t n_codec[4], size_t *first2)
{
	size_t wrong = 0;
	memset(n_codec, 0, 4 * sizeof(*n_codec));
	*first2 = 0;
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN <= t->n;) {
		uint32_t len = rd32(t->p + off + 4);
		const uint8_t *p = t->p + off + GTT_CHUNK_HEADER_LEN;
		if (off + GTT_CHUNK_HEADER_LEN + len > t->n)
			break;
		if (rd32(t->p + off) == GTT_REC_PACKED && p[0] < 4) {
			n_codec[p[0]]++;
			if (p[0] == GTT_CODEC_ZSTD_SPLIT && !*first2)
				*first2 = off;
			wrong += p[0] == GTT_CODEC_ZSTD_SPLIT && p[1] != GTT_STREAM_SAMPLES;
		}
		off += GTT_CHUNK_HEADER_LEN + len;
	}
	th_check(wrong == 0, "every chunk of codec 2 is of the samples stream (%zu not)", wrong);
}

static void fix_crc(buf *t, size_t off)
{
	uint32_t len = rd32(t->p + off + 4);
	le32(t->p + off + 8, gtt_crc32c(gtt_crc32c(0, t->p + off, 8), t->p + off + GTT_CHUNK_HEADER_LEN, len));
}

static void test_writers(const buf *t12, const buf *t11)
{
	size_t n[4], first2;
	count_codecs(t12, n, &first2);
	th_check(n[GTT_CODEC_ZSTD_SPLIT] > 3 && n[GTT_CODEC_ZSTD] > 3 && t12->p[10] == 2,
	         "1.2: %zu chunks of codec 2 (samples), %zu of codec 1, header 1.%u", n[GTT_CODEC_ZSTD_SPLIT],
	         n[GTT_CODEC_ZSTD], t12->p[10]);
	count_codecs(t11, n, &first2);
	th_check(n[GTT_CODEC_ZSTD_SPLIT] == 0 && t11->p[10] == 1, "1.1: no chunk of codec 2 (%zu), header 1.%u",
	         n[GTT_CODEC_ZSTD_SPLIT], t11->p[10]);
	buf stored = make_trace(2, -1, 0), one = make_trace(2, 0, 1);
	count_codecs(&stored, n, &first2);
	th_check(n[GTT_CODEC_ZSTD_SPLIT] == 0 && n[GTT_CODEC_ZSTD] == 0 && stored.p[10] == 1,
	         "stored blocks (no zstd): no codec 2, header 1.%u", stored.p[10]);
	count_codecs(&one, n, &first2);
	th_check(n[GTT_CODEC_ZSTD_SPLIT] == 0 && one.p[10] == 1, "one data stream: no codec 2, header 1.%u", one.p[10]);
	/* the same records whatever the layout */
	recs a = read_recs(t11, 0, 0, 0, 0, 0), b = read_recs(&stored, 0, 0, 0, 0, 0);
	th_check(a.errors == 0 && b.errors == 0 && same(&a, &b), "stored 1.1 and zstd 1.1: the same %zu records", a.n);
	recs_free(&a);
	recs_free(&b);
	free(stored.p);
	free(one.p);
}

/* Whole and bare reads of 1.2 against the 1.1 trace of the same writes. */
static void test_reads(const buf *t12, const buf *t11)
{
	recs ref = read_recs(t11, 0, 0, 0, 0, 0), ref_bare = read_recs(t11, 0, 0, 1, 0, 0);
	th_check(ref.n > 10000 && ref.errors == 0, "1.1: %zu records", ref.n);
	for (int pf = 0; pf <= 1; pf++) {
		recs whole = read_recs(t12, 0, pf, 0, 0, 0), bare = read_recs(t12, 1, pf, 0, 0, 0);
		recs bare11 = read_recs(t11, 1, pf, 0, 0, 0);
		th_check(whole.errors == 0 && same(&whole, &ref), "1.2 whole%s: the 1.1 trace's %zu records (%zu)",
		         pf ? ", prefetch" : "", ref.n, whole.n);
		th_check(bare.errors == 0 && bare.bad_bare == 0 && same(&bare, &ref_bare),
		         "1.2 bare%s: every record, samples without registers or stack (%d with)", pf ? ", prefetch" : "",
		         bare.bad_bare);
		th_check(bare11.errors == 0 && bare11.bad_bare == 0 && same(&bare11, &ref_bare),
		         "1.1 bare%s: the same as 1.2 bare", pf ? ", prefetch" : "");
		recs_free(&whole);
		recs_free(&bare);
		recs_free(&bare11);
	}
	/* 1.0 (plain chunks): bare samples too */
	buf t10 = make_trace(0, 0, 0);
	recs bare10 = read_recs(&t10, 1, 0, 0, 0, 0), whole10 = read_recs(&t10, 0, 0, 1, 0, 0);
	th_check(t10.p[10] == 0 && bare10.errors == 0 && bare10.bad_bare == 0 && same_kind(&bare10, &ref_bare, GTT_REC_SAMPLE) &&
	             same_kind(&whole10, &ref_bare, GTT_REC_SAMPLE),
	         "1.0 bare: the samples of plain chunks without registers or stack too (%d with)", bare10.bad_bare);
	recs_free(&bare10);
	recs_free(&whole10);
	free(t10.p);
	/* a window: the same chunks of either layout */
	recs w12 = read_recs(t12, 0, 1, 0, 2003000000ull, 2004000000ull);
	recs w11 = read_recs(t11, 0, 1, 0, 2003000000ull, 2004000000ull);
	th_check(w12.errors == 0 && w12.n > 100 && same(&w12, &w11), "a window: the same %zu records both ways", w11.n);
	recs_free(&w12);
	recs_free(&w11);
	recs_free(&ref);
	recs_free(&ref_bare);
}

/* The 40th sample with a stack copy of a read of t (bare or whole), and its position. */
static int sample40(gtt_reader *rd, int bare, gtt_record *rec, gtt_pos *pos)
{
	gtt_reader_skip_stacks(rd, bare);
	for (int n = 0; gtt_reader_next(rd, rec) > 0;) {
		if (rec->tag == GTT_REC_SAMPLE && (rec->u.sample.flags & GTT_SAMPLE_STACK) && ++n == 40) {
			gtt_reader_tell(rd, pos);
			return 1;
		}
	}
	return 0;
}

/* A sample with a stack copy read bare, then sought again and read whole. */
static void test_seek(const buf *t12)
{
	int err = 0, ok = 0;
	gtt_record rec, want;
	gtt_pos pos, wpos;
	uint8_t stack[4096];
	uint64_t regs[64];
	gtt_reader *rd = gtt_reader_open_mem(t12->p, t12->n, &err), *ref = gtt_reader_open_mem(t12->p, t12->n, &err);
	int found = sample40(rd, 1, &rec, &pos) && sample40(ref, 0, &want, &wpos) && pos.chunk == wpos.chunk &&
	            pos.index == wpos.index && want.u.sample.stack_len > 0 && want.u.sample.stack_len <= sizeof(stack);
	if (found) {
		uint32_t len = want.u.sample.stack_len, nr = want.u.sample.n_regs;
		memcpy(stack, want.u.sample.stack, len);
		memcpy(regs, want.u.sample.regs, 8 * (size_t)nr);
		/* forward in the chunk read bare, then back to it: both whole now */
		gtt_reader_skip_stacks(rd, 0);
		gtt_pos next = pos;
		next.index++;
		ok = gtt_reader_seek(rd, &next) == 0 && gtt_reader_next(rd, &rec) == 1 && gtt_reader_seek(rd, &pos) == 0 &&
		     gtt_reader_next(rd, &rec) == 1 && rec.tag == GTT_REC_SAMPLE && rec.u.sample.stack_len == len &&
		     rec.u.sample.n_regs == nr && rec.u.sample.regs && memcmp(rec.u.sample.regs, regs, 8 * (size_t)nr) == 0 &&
		     memcmp(rec.u.sample.stack, stack, len) == 0;
	}
	th_check(found && ok, "a sample read bare, sought again whole: its registers and %u-byte stack",
	         found ? want.u.sample.stack_len : 0);
	gtt_reader_close(ref);
	gtt_reader_close(rd);
}

/* Count read errors, and samples, of a read of t. */
static int errors_of(const buf *t, int bare, size_t *n_samples)
{
	int err = 0, n = 0;
	gtt_record rec;
	*n_samples = 0;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	gtt_reader_skip_stacks(rd, bare);
	for (int rc; rd && (rc = gtt_reader_next(rd, &rec)) != 0;) {
		if (rc == GTT_EVERSION)
			n += 100;
		else if (rc < 0)
			n++;
		else
			*n_samples += rec.tag == GTT_REC_SAMPLE;
	}
	gtt_reader_close(rd);
	return n;
}

/* The side frame damaged (checksum of the chunk right): a bare read cannot see it, a whole read
 * gives a corrupt chunk and goes on; layouts that lie; an unknown codec. */
static void test_damage(const buf *t12)
{
	size_t n[4], first2, ns_ok, ns;
	count_codecs(t12, n, &first2);
	errors_of(t12, 0, &ns_ok);
	buf d = { malloc(t12->n), t12->n };
	uint8_t *pl = d.p + first2 + GTT_CHUNK_HEADER_LEN, *z = pl + GTT_PACKED_HEADER_LEN;
	const uint8_t *z0 = t12->p + first2 + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN;
	uint32_t len = rd32(t12->p + first2 + 4), side_len = rd32(z0), rzlen = rd32(z0 + 4);
	gtt_chunk_info ci;
	gtt_reader *rd = gtt_reader_open_mem(t12->p, t12->n, &(int){ 0 });
	th_check(gtt_reader_chunk_at(rd, first2, &ci) == 1 && ci.codec == GTT_CODEC_ZSTD_SPLIT && ci.side_len == side_len &&
	         side_len > 1000, "gtt_reader_chunk_at: codec 2, %u bytes of registers and stacks apart", ci.side_len);
	gtt_reader_close(rd);

	memcpy(d.p, t12->p, t12->n);
	size_t at = GTT_PACKED_HEADER_LEN + 8 + rzlen + (len - GTT_PACKED_HEADER_LEN - 8 - rzlen) / 2;
	pl[at] ^= 0x5a;
	pl[at + 1] ^= 0xa5;
	fix_crc(&d, first2);
	int e_bare = errors_of(&d, 1, &ns), e_whole;
	th_check(e_bare == 0 && ns == ns_ok, "side frame damaged: a bare read sees nothing wrong (%d errors, %zu of %zu samples)",
	         e_bare, ns, ns_ok);
	e_whole = errors_of(&d, 0, &ns);
	th_check(e_whole == 1 && ns < ns_ok, "read whole: one corrupt chunk, its samples lost (%zu of %zu)", ns, ns_ok);

	memcpy(d.p, t12->p, t12->n);
	le32(z, GTT_PACKED_MAX_RAW + 1);
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) == 1 && errors_of(&d, 0, &ns) == 1, "a side length over the limit: refused either way");

	memcpy(d.p, t12->p, t12->n);
	le32(z + 4, len); /* the records' frame longer than the chunk */
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) == 1 && errors_of(&d, 0, &ns) == 1, "a records' frame past the chunk's end: refused");

	memcpy(d.p, t12->p, t12->n);
	le32(z, side_len - 8); /* fewer side bytes than the samples claim */
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) >= 1 && errors_of(&d, 0, &ns) == 1,
	         "a side length shorter than its frame and its samples: records that do not decode bare, a corrupt chunk whole");

	memcpy(d.p, t12->p, t12->n);
	le32(z, 0); /* a side section of no bytes: a writer never makes one */
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) == 1 && errors_of(&d, 0, &ns) == 1,
	         "a side length of 0 in a chunk of codec 2: one corrupt chunk either way");

	memcpy(d.p, t12->p, t12->n);
	le32(z + 4, len - GTT_PACKED_HEADER_LEN - 8); /* the records' frame takes the side frame's bytes too */
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) == 1 && errors_of(&d, 0, &ns) == 1,
	         "a records' frame length that swallows the side frame: one corrupt chunk either way");

	memcpy(d.p, t12->p, t12->n);
	le32(z + 4, rzlen - 1); /* the records' frame cut short by a byte, the side frame a byte longer */
	fix_crc(&d, first2);
	th_check(errors_of(&d, 1, &ns) == 1 && errors_of(&d, 0, &ns) == 1,
	         "a records' frame length one short: one corrupt chunk either way");

	memcpy(d.p, t12->p, t12->n);
	pl[0] = 3;
	fix_crc(&d, first2);
	th_check(errors_of(&d, 0, &ns) == 100, "codec 3: a newer version's chunk (GTT_EVERSION)");
	free(d.p);
}

/* Bare and whole reads taking turns every few records, with prefetch: the worker's jobs were
 * made for the other way as often as not (a chunk expanded whole is read bare, one expanded bare
 * is read whole, its side frame expanded then); every record is what a read made all one way
 * gives. */
static void test_toggle(const buf *t12)
{
	recs whole = read_recs(t12, 0, 0, 0, 0, 0), whole_bare = read_recs(t12, 0, 0, 1, 0, 0);
	int err = 0, bare = 0;
	size_t i = 0, bad = 0, n_bare = 0, n_whole = 0;
	gtt_record rec;
	gtt_reader *rd = gtt_reader_open_mem(t12->p, t12->n, &err);
	gtt_reader_prefetch(rd);
	for (int rc; rd && (rc = gtt_reader_next(rd, &rec)) != 0; i++) {
		if (rc < 0 || i >= whole.n) {
			bad++;
			continue;
		}
		const buf *want = bare ? &whole_bare.v[i] : &whole.v[i];
		buf c = canon(&rec, bare);
		bad += c.n != want->n || memcmp(c.p, want->p, c.n) != 0;
		free(c.p);
		if (rec.tag == GTT_REC_SAMPLE && bare) {
			n_bare++;
			bad += rec.u.sample.n_regs || rec.u.sample.regs || rec.u.sample.stack_len || rec.u.sample.stack;
		} else if (rec.tag == GTT_REC_SAMPLE) {
			n_whole++;
		}
		if (i % 37 == 0)
			gtt_reader_skip_stacks(rd, bare = !bare);
	}
	gtt_reader_close(rd);
	th_check(bad == 0 && i == whole.n && n_bare > 1000 && n_whole > 1000,
	         "bare and whole by turns, prefetch: %zu records as read one way (%zu bare samples, %zu whole; %zu wrong)",
	         i, n_bare, n_whole, bad);
	recs_free(&whole);
	recs_free(&whole_bare);
}

int main(void)
{
	if (!gtt_zstd_available()) {
		printf("SKIP: libzstd.so.1 not loadable: no codec 2 to test\n");
		return 0;
	}
	buf t12 = make_trace(2, 0, 0), t11 = make_trace(1, 0, 0);
	test_writers(&t12, &t11);
	test_reads(&t12, &t11);
	test_seek(&t12);
	test_toggle(&t12);
	test_damage(&t12);
	free(t12.p);
	free(t11.p);
	return th_report();
}
