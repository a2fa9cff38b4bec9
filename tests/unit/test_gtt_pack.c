/* test_gtt_pack.c — trace format 1.1: every record kind through packed blocks and compact
 * encodings (zstd and stored), block boundaries, a cut at every byte, corrupt and oversized
 * packed chunks, hostile inner records, a missing libzstd, the chunk index (from the file,
 * rebuilt, damaged) and time windows, tell/seek, callchain redefinition, concurrent writers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "testhelp.h"

/* ---- traces in memory ---- */

typedef struct buf {
	uint8_t *p;
	size_t n;
} buf;

static int memfd = -1;

static gtt_writer *mw_open(uint32_t minor, int level, uint32_t block_bytes, int no_index)
{
	int err = 0;
	if (memfd < 0)
		memfd = memfd_create("gtt_pack", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 0) != 0 || lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	o.level = level;
	o.block_bytes = block_bytes;
	o.no_index = no_index;
	gtt_writer *w = gtt_writer_fdopen_opts(dup(memfd), 0, &o, &err);
	if (!w)
		abort();
	return w;
}

static buf mw_close(gtt_writer *w)
{
	buf b = { 0 };
	if (gtt_writer_close(w) != 0)
		abort();
	off_t n = lseek(memfd, 0, SEEK_END);
	b.p = malloc((size_t)n + 1);
	if (!b.p || pread(memfd, b.p, (size_t)n, 0) != n)
		abort();
	b.n = (size_t)n;
	return b;
}

/* A record as its 1.0 payload bytes, prefixed by the tag: the canonical form to compare. */
static buf canon(const gtt_record *rec)
{
	enc e = { 0 };
	buf b = { 0 };
	uint8_t t[4];
	le32(t, rec->tag);
	if (enc_reserve(&e, 4) == 0) {
		memcpy(e.p, t, 4);
		e.n = 4;
	}
	if (gtt_encode(&e, rec) != 0) {
		/* unknown tags: the raw payload */
		e.n = 4;
		if (enc_reserve(&e, rec->len) == 0 && rec->len) {
			memcpy(e.p + 4, rec->raw, rec->len);
			e.n += rec->len;
		}
	}
	b.p = e.p;
	b.n = e.n;
	return b;
}

static int same(buf a, buf b)
{
	return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Every record of a trace in canonical form, in reading order (callchain definitions and the
 * writer's own "compression" meta left out: they are the format's business). */
typedef struct recs {
	buf *v;
	uint32_t *tags;
	size_t n, cap;
	int errors, truncated;
} recs;

static void recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].p);
	free(r->v);
	free(r->tags);
	memset(r, 0, sizeof(*r));
}

static void recs_add(recs *r, const gtt_record *rec)
{
	if (rec->tag == GTT_REC_CALLCHAIN ||
	    (rec->tag == GTT_REC_META && strcmp(rec->u.meta.key, "compression") == 0))
		return;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		r->tags = realloc(r->tags, r->cap * sizeof(*r->tags));
	}
	r->tags[r->n] = rec->tag;
	r->v[r->n++] = canon(rec);
}

static recs read_recs_reader(gtt_reader *rd)
{
	recs r = { 0 };
	gtt_record rec;
	int rc;
	while ((rc = gtt_reader_next(rd, &rec)) != 0) {
		if (rc < 0) {
			r.errors++;
			continue;
		}
		recs_add(&r, &rec);
	}
	r.truncated = gtt_reader_truncated(rd);
	return r;
}

static recs read_recs(const uint8_t *p, size_t n)
{
	int err = 0;
	recs r = { 0 };
	gtt_reader *rd = gtt_reader_open_mem(p, n, &err);
	if (!rd) {
		r.errors = 1;
		return r;
	}
	r = read_recs_reader(rd);
	gtt_reader_close(rd);
	return r;
}

/* The records of one stream (GTT_STREAM_*: the writer keeps their order within each), in order. */
static int same_stream(const recs *a, const recs *b, uint32_t stream)
{
	size_t i = 0, j = 0;
	for (;;) {
		while (i < a->n && gtt_stream_of(a->tags[i]) != stream)
			i++;
		while (j < b->n && gtt_stream_of(b->tags[j]) != stream)
			j++;
		if (i == a->n || j == b->n)
			return i == a->n && j == b->n;
		if (!same(a->v[i], b->v[j]))
			return 0;
		i++;
		j++;
	}
}

/* ---- a realistic mix of every kind ---- */

static uint64_t lcg_state = 7;
static uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33);
}

#define W(TAG, FIELD, ...) do { gtt_record r_; memset(&r_, 0, sizeof(r_)); r_.tag = TAG; \
	r_.u.FIELD = (typeof(r_.u.FIELD)){ __VA_ARGS__ }; if (gtt_write(w, &r_) != 0) bad++; } while (0)

/* Write n rounds of records of every kind with times around t0 + i * step; returns failures. */
static int write_mix(gtt_writer *w, int n, uint64_t t0, uint64_t step)
{
	int bad = 0;
	uint8_t stack[2048];
	uint64_t regs[17];
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)(i * 7);
	W(GTT_REC_META, meta, .key = "command", .value = "train.py --hostile \"<&>\"");
	W(GTT_REC_PROCESS, process, .time_ns = t0, .pid = 100, .ppid = 1, .event = GTT_PROC_START, .comm = "python");
	W(GTT_REC_MAPPING, mapping, .time_ns = t0, .pid = 100, .prot = 5, .start = 0x400000, .end = 0x500000,
	  .pgoff = 0x1000, .build_id_len = 20, .build_id = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 },
	  .path = "/usr/bin/python3");
	W(GTT_REC_CUDA_DEVICE, cuda_device, .pid = 100, .device = 0, .cc_major = 9, .sm_count = 132,
	  .global_mem_bytes = 1ull << 37, .name = "NVIDIA H200", .uuid = "GPU-xyz");
	W(GTT_REC_STRING, string, .pid = 100, .id = 1, .text = "_Z6kernelPf");
	W(GTT_REC_PY_CODE, py_code, .pid = 100, .code_id = 0x7f0000001000ull | (3ull << 48), .first_line = -5,
	  .name = "step", .qualname = "Model.step", .filename = "/srv/model.py");
	for (int i = 0; i < n; i++) {
		uint64_t t = t0 + (uint64_t)i * step;
		uint32_t tid = 100 + lcg() % 9;
		uint32_t k = lcg();
		uint64_t ips[6] = { 0xffffffff81000000ull + (k % 3) * 16, 0x401000 + (k % 5) * 8, 0x402000,
		                    0x7f1234560000ull + (k % 7), 0x403000, 0x400100 };
		uint32_t nk = k % 2, nu = 1 + k % 5;
		for (int r = 0; r < 17; r++)
			regs[r] = 0x7ffd00000000ull + (uint64_t)lcg();
		W(GTT_REC_SWITCH, sw, .time_ns = t, .pid = 100, .tid = tid, .cpu = k % 64,
		  .kind = (i % 7 == 0) ? 7 + k % 3 : k % 3);
		W(GTT_REC_SWITCH, sw, .time_ns = t + 1500, .pid = 100, .tid = tid, .cpu = 1u << 31, .kind = 0);
		if (i % 3 == 0)
			W(GTT_REC_SAMPLE, sample, .time_ns = t + 10, .pid = 100, .tid = tid, .cpu = k % 4,
			  .flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK | (k & 4), .period_ns = 10101010 + (k % 2),
			  .n_kernel = nk, .n_user = nu, .ips = ips + 1 - nk, .regs_abi = 2, .regs_mask = 0xff0fffull,
			  .n_regs = 17, .regs = regs, .stack_len = 64 + k % 1900, .stack = stack);
		if (i % 5 == 0)
			W(GTT_REC_SAMPLE, sample, .time_ns = t + 20, .pid = 100, .tid = tid, .cpu = 0, .period_ns = 0,
			  .n_kernel = 0, .n_user = 0);
		if (i % 4 == 0) {
			gtt_py_frame pf[3] = { { 0x7f0000001000ull | (3ull << 48), 40 + (int32_t)(k % 3), GTT_PYFRAME_ENTRY },
			                       { 0x2000, -1, GTT_PYFRAME_NATIVE }, { 0x3000, INT32_MIN, 0 } };
			W(GTT_REC_PY_STACK, py_stack, .time_ns = t + 30, .pid = 100, .tid = tid, .thread_id = 0x55550000 + tid,
			  .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = 1 + k % 3, .frames = pf);
			W(GTT_REC_GIL, gil, .time_ns = t + 31, .pid = 100, .holder_tid = tid, .locked = 1, .flags = 0,
			  .switches = (uint64_t)i * 1000);
		}
		if (i % 6 == 0) {
			W(GTT_REC_CUDA_KERNEL, kernel, .start_ns = t + 5000, .end_ns = t + 4000, .pid = 100, .device = 0,
			  .context = 1, .stream = 7 + k % 2, .correlation = (uint32_t)i * 3, .grid = { k % 1024, 1, 1 },
			  .block = { 256, 1, 1 }, .shared_bytes = 4096, .registers = 32, .name_id = 1);
			W(GTT_REC_CUDA_API, api, .start_ns = t + 100, .end_ns = t + 3100, .pid = 100, .tid = tid,
			  .correlation = (uint32_t)i * 3, .domain = GTT_API_RUNTIME, .cbid = 211, .status = -(int32_t)(k % 3),
			  .name_id = 2);
			W(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = t, .end_ns = t + 900, .pid = 100, .device = 0, .stream = 7,
			  .correlation = UINT32_MAX - (uint32_t)i, .kind = GTT_MEMCPY_HTOD, .flags = 1, .bytes = UINT64_MAX - k);
			W(GTT_REC_CUDA_MEMSET, memset, .start_ns = t, .end_ns = t + 90, .pid = 100, .stream = 7,
			  .correlation = 5, .value = k, .bytes = 64);
			W(GTT_REC_CUDA_SYNC, sync, .start_ns = t, .end_ns = t + 9000, .pid = 100, .context = 1, .stream = 7,
			  .correlation = 6, .kind = GTT_SYNC_STREAM);
			W(GTT_REC_CUDA_ALLOC, alloc, .time_ns = t, .pid = 100, .device = 0, .op = GTT_ALLOC_FREE,
			  .mem_kind = 3, .address = 0x7f0000000000ull + k, .bytes = 1 << 20);
			W(GTT_REC_NVTX, nvtx, .start_ns = t, .end_ns = t, .pid = 100, .tid = tid, .kind = GTT_NVTX_MARKER,
			  .domain_id = 0, .name_id = 3, .color = 0xff00ff00u, .depth = 2);
			W(GTT_REC_COUNTER, counter, .time_ns = t, .pid = 100, .name_id = 4, .value = -1.5e300);
			W(GTT_REC_THREAD_CPU, thread_cpu, .time_ns = t, .pid = 100, .tid = tid, .utime_ns = UINT64_MAX,
			  .stime_ns = 7, .nvcsw = 8, .nivcsw = 9, .state = 'S');
		}
		if (i % 50 == 0) {
			W(GTT_REC_THREAD, thread, .time_ns = t, .pid = 100, .tid = tid, .event = GTT_THREAD_NAME,
			  .name = "worker-with-a-long-name");
			W(GTT_REC_HEALTH, health, .time_ns = t, .end_ns = t + 5, .source = GTT_SRC_PERF,
			  .kind = GTT_HEALTH_LOST, .tid = tid, .count = 3, .value = { 1, 2, 3, 4 }, .text = "lost");
			W(GTT_REC_TICKS, ticks, .start_ns = t, .end_ns = t + step, .source = GTT_SRC_PYSTACK,
			  .period_ns = 1000000, .intended = 100, .done = 99, .late_p50_ns = 1, .late_p99_ns = 2,
			  .late_max_ns = 3);
		}
	}
	W(GTT_REC_ARCHIVE, archive, .build_id_len = 20, .build_id = { 1, 2, 3 }, .path = "/usr/bin/python3",
	  .kind = GTT_ARCHIVE_ELF, .total_bytes = sizeof(stack), .offset = 0, .len = sizeof(stack), .data = stack);
	W(GTT_REC_END, end, .time_ns = t0 + (uint64_t)n * step, .reason = GTT_END_DURATION, .n_samples = 3,
	  .n_records = 4);
	return bad;
}

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

/* ---- hand-made packed chunks ---- */

static void chunk(buf *b, uint32_t tag, const uint8_t *payload, uint32_t len)
{
	b->p = realloc(b->p, b->n + GTT_CHUNK_HEADER_LEN + len);
	uint8_t *h = b->p + b->n;
	le32(h, tag);
	le32(h + 4, len);
	if (len)
		memcpy(h + GTT_CHUNK_HEADER_LEN, payload, len);
	le32(h + 8, gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len));
	b->n += GTT_CHUNK_HEADER_LEN + len;
}

static buf header11(void)
{
	buf b = { malloc(GTT_HEADER_LEN), GTT_HEADER_LEN };
	memcpy(b.p, GTT_MAGIC, GTT_MAGIC_LEN);
	b.p[8] = 1; b.p[9] = 0; b.p[10] = 1; b.p[11] = 0;
	le32(b.p + 12, 0);
	return b;
}

/* A packed chunk of codec none around inner bytes, claiming raw_len. */
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

/* ---- the index and time windows ---- */

#define SEC 1000000000ull

static int entries_equal(const gtt_index_entry *a, size_t na, const gtt_index_entry *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (a[i].offset != b[i].offset || a[i].end != b[i].end || a[i].first_ns != b[i].first_ns ||
		    a[i].last_ns != b[i].last_ns || a[i].n_records != b[i].n_records || a[i].flags != b[i].flags)
			return 0;
	return 1;
}

/* Records read through a window [from, to]: every record of the full read whose time range meets
 * the window must come back, in order; definitions all come back. Returns data records read. */
static size_t check_window(const char *what, const buf *b, uint64_t from, uint64_t to, size_t *n_data_all,
                           int expect_some)
{
	int err = 0, rc;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(b->p, b->n, &err);
	recs full = read_recs_reader(r), in_full = { 0 }, got = { 0 }, in_got = { 0 };
	th_check(gtt_reader_set_window(r, from, to) == 0, "%s: window set", what);
	size_t n_data = 0;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			got.errors++;
			continue;
		}
		uint64_t t0, t1;
		recs_add(&got, &rec);
		if (!gtt_is_defs_tag(rec.tag))
			n_data++;
		if (!gtt_is_defs_tag(rec.tag) && gtt_rec_times(&rec, &t0, &t1) && t0 <= to && t1 >= from)
			recs_add(&in_got, &rec);
	}
	gtt_reader_set_window(r, 0, UINT64_MAX);
	size_t all = 0;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		uint64_t t0, t1;
		if (rc > 0 && !gtt_is_defs_tag(rec.tag)) {
			all++;
			if (gtt_rec_times(&rec, &t0, &t1) && t0 <= to && t1 >= from)
				recs_add(&in_full, &rec);
		}
	}
	*n_data_all = all;
	th_check(got.errors == 0, "%s: read without error", what);
	th_check((in_full.n > 0) == expect_some && same_stream(&in_full, &in_got, 0),
	         "%s: every record of the window is read, in order (%zu)", what, in_got.n);
	th_check(same_stream(&full, &got, 1), "%s: every definition is read", what);
	recs_free(&full);
	recs_free(&in_full);
	recs_free(&got);
	recs_free(&in_got);
	gtt_reader_close(r);
	return n_data;
}

static void test_index(void)
{
	gtt_writer *w = mw_open(1, 0, 2048, 0);
	lcg_state = 11;
	write_mix(w, 2000, SEC, 50000000); /* 100 s */
	buf bi = mw_close(w);
	w = mw_open(1, 0, 2048, 1);
	lcg_state = 11;
	write_mix(w, 2000, SEC, 50000000);
	buf bn = mw_close(w);

	int err = 0;
	const gtt_index_entry *ei, *en;
	size_t ni = 0, nn = 0;
	gtt_reader *ri = gtt_reader_open_mem(bi.p, bi.n, &err), *rn = gtt_reader_open_mem(bn.p, bn.n, &err);
	th_check(gtt_reader_index(ri, &ei, &ni) == 1, "the index comes from the file (%zu entries)", ni);
	th_check(gtt_reader_index(rn, &en, &nn) == 0, "without an index chunk it is rebuilt by a scan");
	th_check(ni > 50 && entries_equal(ei, ni, en, nn), "the rebuilt index equals the written one");
	int covers = ni > 0 && ei[0].offset == GTT_HEADER_LEN, defs = 0, ordered = 1;
	for (size_t i = 0; i < ni; i++) {
		if (i && ei[i].offset != ei[i - 1].end)
			covers = 0;
		if (ei[i].flags & GTT_INDEX_DEFS)
			defs++;
		else if (ei[i].first_ns > ei[i].last_ns || ei[i].first_ns < SEC || ei[i].last_ns > 102 * SEC)
			ordered = 0;
	}
	th_check(covers, "entries cover the trace chunk after chunk");
	th_check(defs > 0 && ordered, "definitions blocks are flagged (%d); data blocks carry their time ranges", defs);
	/* the entries belong to the reader: keep a copy of the rebuilt ones */
	gtt_index_entry *en_copy = malloc((nn ? nn : 1) * sizeof(*en_copy));
	memcpy(en_copy, en, nn * sizeof(*en_copy));
	en = en_copy;
	gtt_reader_close(ri);
	gtt_reader_close(rn);

	/* damaged indexes are not trusted */
	for (int how = 0; how < 3; how++) {
		uint8_t *copy = malloc(bi.n);
		memcpy(copy, bi.p, bi.n);
		uint64_t self = rd64(copy + bi.n - 16);
		uint8_t *pl = copy + self + GTT_CHUNK_HEADER_LEN;
		uint32_t plen = rd32(copy + self + 4);
		if (how == 0)
			pl[4 + 36 * 3] ^= 8;                      /* an offset, CRC left wrong */
		else if (how == 1)
			le64(pl + 4 + 36 * 3, rd64(pl + 4 + 36 * 3) + 12); /* an offset, CRC made right */
		else
			le64(copy + bi.n - 16, self - 12);        /* the trailer points elsewhere */
		if (how == 1)
			le32(copy + self + 8, gtt_crc32c(gtt_crc32c(0, copy + self, 8), pl, plen));
		gtt_reader *r = gtt_reader_open_mem(copy, bi.n, &err);
		const gtt_index_entry *e;
		size_t n = 0;
		th_check(gtt_reader_index(r, &e, &n) == 0 && entries_equal(e, n, en, nn),
		         "a damaged index (%s) is rebuilt", how == 0 ? "bad checksum" : how == 1 ? "gap" : "bad trailer");
		gtt_reader_close(r);
		free(copy);
	}

	size_t all = 0, got = check_window("window 30-40 s of 100 s", &bi, 30 * SEC, 40 * SEC, &all, 1);
	th_check(got * 4 < all, "the window reads a fraction of the data (%zu of %zu records)", got, all);
	got = check_window("window without the index chunk", &bn, 30 * SEC, 40 * SEC, &all, 1);
	th_check(got * 4 < all, "the rebuilt index selects as well (%zu of %zu)", got, all);
	got = check_window("an empty window 0-1 ns", &bi, 0, 1, &all, 0);
	th_check(got * 20 < all, "an empty window reads (almost) no data (%zu of %zu)", got, all);
	got = check_window("window over everything", &bi, 0, UINT64_MAX - 1, &all, 1);
	th_check(got == all, "a window over everything reads everything");

	/* a trace cut off without its index: the window ends with the same truncation */
	{
		size_t cut = bn.n - 37;
		uint8_t *copy = malloc(cut);
		memcpy(copy, bn.p, cut);
		gtt_reader *r = gtt_reader_open_mem(copy, cut, &err);
		gtt_record rec;
		int rc, n = 0;
		gtt_reader_set_window(r, 95 * SEC, 200 * SEC);
		while ((rc = gtt_reader_next(r, &rec)) > 0)
			n++;
		th_check(rc == 0 && n > 0 && gtt_reader_truncated(r), "a cut-off trace read through a window is truncated");
		gtt_reader_close(r);
		free(copy);
	}
	/* a 1.0 trace: one plain run, everything read */
	{
		w = mw_open(0, 0, 0, 0);
		lcg_state = 11;
		write_mix(w, 200, SEC, 50000000);
		buf b0 = mw_close(w);
		gtt_reader *r = gtt_reader_open_mem(b0.p, b0.n, &err);
		const gtt_index_entry *e;
		size_t n = 0;
		int rc = gtt_reader_index(r, &e, &n);
		th_check(rc == 0 && n == 1 && (e[0].flags & GTT_INDEX_PLAIN) && e[0].end == b0.n,
		         "a 1.0 trace indexes as one plain run");
		gtt_reader_close(r);
		got = check_window("1.0 trace through a window", &b0, 3 * SEC, 4 * SEC, &all, 1);
		th_check(got == all, "a 1.0 trace is read whole whatever the window");
		free(b0.p);
	}
	free(en_copy);
	free(bi.p);
	free(bn.p);
}

/* ---- tell and seek ---- */

static void seek_check(const char *what, const buf *b)
{
	int err = 0, rc;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(b->p, b->n, &err);
	size_t n = 0, cap = 1024, bad = 0;
	gtt_pos *pos = malloc(cap * sizeof(*pos));
	buf *want = malloc(cap * sizeof(*want));
	while ((rc = gtt_reader_next(r, &rec)) > 0) {
		if (n == cap) {
			cap *= 2;
			pos = realloc(pos, cap * sizeof(*pos));
			want = realloc(want, cap * sizeof(*want));
		}
		gtt_reader_tell(r, &pos[n]);
		want[n++] = canon(&rec);
	}
	/* forward in file order, every third record, then random jumps both ways */
	for (size_t i = 0; i < n; i += 3) {
		if (gtt_reader_seek(r, &pos[i]) != 0 || gtt_reader_next(r, &rec) != 1) {
			bad++;
			continue;
		}
		buf c = canon(&rec);
		bad += !same(c, want[i]);
		free(c.p);
	}
	for (int k = 0; k < 2000 && n; k++) {
		size_t i = lcg() % n;
		if (gtt_reader_seek(r, &pos[i]) != 0 || gtt_reader_next(r, &rec) != 1) {
			bad++;
			continue;
		}
		buf c = canon(&rec);
		bad += !same(c, want[i]);
		free(c.p);
		/* and the record after it follows */
		if (i + 1 < n && gtt_reader_next(r, &rec) == 1) {
			c = canon(&rec);
			bad += !same(c, want[i + 1]);
			free(c.p);
		}
	}
	th_check(n > 100 && bad == 0, "%s: seek to a told position gives the same record (%zu records, %zu bad)",
	         what, n, bad);
	gtt_pos nowhere = { .chunk = b->n + 5, .index = 0 };
	th_check(gtt_reader_seek(r, &nowhere) == GTT_EINVAL, "%s: a position past the end is refused", what);
	for (size_t i = 0; i < n; i++)
		free(want[i].p);
	free(want);
	free(pos);
	gtt_reader_close(r);
}

static void test_seek(void)
{
	gtt_writer *w = mw_open(1, 0, 4096, 0);
	lcg_state = 13;
	write_mix(w, 600, SEC, 1000000);
	buf b = mw_close(w);
	seek_check("1.1", &b);
	free(b.p);
	w = mw_open(0, 0, 0, 0);
	lcg_state = 13;
	write_mix(w, 200, SEC, 1000000);
	b = mw_close(w);
	seek_check("1.0", &b);
	free(b.p);
}

/* ---- a flight recorder's redefinitions ---- */

static void write_chain_samples(gtt_writer *w, int n, int n_chains, uint64_t t0)
{
	for (int i = 0; i < n; i++) {
		uint64_t ips[4] = { 0x401000 + (uint64_t)(i % n_chains) * 64, 0x402000, 0x403000, 0x400100 };
		gtt_record r = { .tag = GTT_REC_SAMPLE };
		r.u.sample = (gtt_sample){ .time_ns = t0 + (uint64_t)i, .pid = 1, .tid = 2, .period_ns = 1000,
		                           .n_user = 4, .ips = ips };
		gtt_write(w, &r);
	}
}

static int count_good_samples(const uint8_t *p, size_t n, int *errors)
{
	int err = 0, rc, good = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(p, n, &err);
	*errors = 0;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0)
			(*errors)++;
		else if (rec.tag == GTT_REC_SAMPLE && rec.u.sample.n_user == 4 && rec.u.sample.chain_id &&
		         rec.u.sample.ips[0] == 0x401000 + (uint64_t)((rec.u.sample.time_ns - 50000) % 10) * 64)
			good++;
	}
	gtt_reader_close(r);
	return good;
}

static void test_redefine(void)
{
	gtt_writer *w = mw_open(1, 0, 4096, 1);
	write_chain_samples(w, 2000, 40, 0); /* chains 1..40 */
	gtt_writer_flush(w);
	uint64_t x = (uint64_t)lseek(memfd, 0, SEEK_END);
	gtt_writer_stats st;
	gtt_writer_get_stats(w, &st);
	uint64_t since = st.block_seq;
	write_chain_samples(w, 3000, 10, 50000); /* only chains 1..10, defined before x */
	gtt_writer_flush(w);
	uint64_t y = (uint64_t)lseek(memfd, 0, SEEK_END);
	th_check(gtt_writer_redefine(w, since) == 0, "redefinition of the chains used since block %llu",
	         (unsigned long long)since);
	buf b = mw_close(w);
	/* the ring: header, the redefinitions, then the blocks kept (the earlier ones dropped) */
	buf ring = header11(), bare = header11();
	ring.p = realloc(ring.p, b.n);
	memcpy(ring.p + ring.n, b.p + y, b.n - y);
	ring.n += b.n - y;
	memcpy(ring.p + ring.n, b.p + x, y - x);
	ring.n += y - x;
	bare.p = realloc(bare.p, b.n);
	memcpy(bare.p + bare.n, b.p + x, y - x);
	bare.n += y - x;
	int errors = 0, good = count_good_samples(ring.p, ring.n, &errors);
	th_check(good == 3000 && errors == 0, "the kept blocks decode with the redefinitions (%d of 3000, %d errors)",
	         good, errors);
	good = count_good_samples(bare.p, bare.n, &errors);
	th_check(good == 0 && errors == 3000, "and without them they do not (%d good, %d errors)", good, errors);
	/* the redefinitions hold only the chains still in use */
	int n_defs = 0, rc;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(ring.p, ring.n, &errors);
	while ((rc = gtt_reader_next(r, &rec)) != 0)
		n_defs += rc > 0 && rec.tag == GTT_REC_CALLCHAIN;
	gtt_reader_close(r);
	th_check(n_defs == 10, "10 chains redefined, not 40 (%d)", n_defs);
	free(ring.p);
	free(bare.p);
	free(b.p);
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

struct thr_arg { gtt_writer *w; uint32_t tid; };
static void *thr_write(void *p)
{
	struct thr_arg *a = p;
	for (int i = 0; i < 5000; i++) {
		uint64_t ips[2] = { 0x1000 + (uint64_t)(i % 37), a->tid };
		gtt_record r = { .tag = GTT_REC_SAMPLE };
		r.u.sample = (gtt_sample){ .time_ns = (uint64_t)i, .pid = 1, .tid = a->tid, .n_user = 2, .ips = ips };
		gtt_write(a->w, &r);
		if (i % 1000 == 0)
			gtt_writer_flush(a->w);
	}
	return NULL;
}

/* Rounds: a thread waiting for room in the worker's queue lets the others write meanwhile. */
static void test_threads(void)
{
	int rounds = 40, bad_round = -1, k = 0;
	for (int round = 0; round < rounds && bad_round < 0; round++) {
		gtt_writer *w = mw_open(1, 0, 4096, 0);
		pthread_t t[4];
		struct thr_arg a[4];
		for (int i = 0; i < 4; i++) {
			a[i] = (struct thr_arg){ w, (uint32_t)(i + 1) };
			pthread_create(&t[i], NULL, thr_write, &a[i]);
		}
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		buf b = mw_close(w);
		int err = 0, rc, order = 1;
		uint64_t last[5] = { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX }; /* times start at 0 */
		gtt_record rec;
		gtt_reader *r = gtt_reader_open_mem(b.p, b.n, &err);
		for (k = 0; (rc = gtt_reader_next(r, &rec)) > 0;) {
			if (rec.tag != GTT_REC_SAMPLE)
				continue;
			uint32_t tid = rec.u.sample.tid;
			if (tid < 1 || tid > 4 || rec.u.sample.ips[1] != tid ||
			    rec.u.sample.ips[0] != 0x1000 + rec.u.sample.time_ns % 37 ||
			    rec.u.sample.time_ns != last[tid] + 1)
				order = 0;
			last[tid] = rec.u.sample.time_ns;
			k++;
		}
		if (rc != 0 || k != 20000 || !order)
			bad_round = round;
		gtt_reader_close(r);
		free(b.p);
	}
	th_check(bad_round < 0, "4 threads x 5000 samples read back whole, in order, %d rounds (%d: %d)", rounds, bad_round, k);
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
	test_index();
	test_seek();
	test_redefine();
	test_raw_and_big();
	test_threads();
	return th_report();
}
