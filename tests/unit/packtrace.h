/* packtrace.h — what test_gtt_pack.c and test_gtt_index.c share: traces of format 1.0/1.1 written
 * into memory, every record read back in canonical form (its 1.0 payload), a realistic mix of every
 * record kind, and hand-made chunks. */
#ifndef PACKTRACE_H
#define PACKTRACE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "memtrace.h"

/* ---- traces in memory ---- */

typedef struct buf {
	uint8_t *p;
	size_t n;
} buf;

static int mw_fd = -1; /* the memfd of the writer mw_open made last */

/* A writer of format 1.minor in memory with these options; aborts on failure. One at a time. */
static inline gtt_writer *mw_open(uint32_t minor, int level, uint32_t block_bytes, int no_index)
{
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	o.level = level;
	o.block_bytes = block_bytes;
	o.no_index = no_index;
	return memtrace_open("gtt_pack", &o, &mw_fd);
}

/* Close mw_open's writer: the trace's bytes (malloc'd). */
static inline buf mw_close(gtt_writer *w)
{
	buf b = { 0 };
	b.p = memtrace_close(w, mw_fd, &b.n);
	mw_fd = -1;
	return b;
}

/* A record as its 1.0 payload bytes, prefixed by the tag: the canonical form to compare. */
static inline buf canon(const gtt_record *rec)
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

static inline int same(buf a, buf b)
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

static inline void recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].p);
	free(r->v);
	free(r->tags);
	memset(r, 0, sizeof(*r));
}

static inline void recs_add(recs *r, const gtt_record *rec)
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

static inline recs read_recs_reader(gtt_reader *rd)
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

static inline recs read_recs(const uint8_t *p, size_t n)
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
static inline int same_stream(const recs *a, const recs *b, uint32_t stream)
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
static inline uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33);
}

#define W(TAG, FIELD, ...) do { gtt_record r_; memset(&r_, 0, sizeof(r_)); r_.tag = TAG; \
	r_.u.FIELD = (typeof(r_.u.FIELD)){ __VA_ARGS__ }; if (gtt_write(w, &r_) != 0) bad++; } while (0)

/* Write n rounds of records of every kind with times around t0 + i * step; returns failures. */
static inline int write_mix(gtt_writer *w, int n, uint64_t t0, uint64_t step)
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

/* ---- hand-made packed chunks ---- */

static inline void chunk(buf *b, uint32_t tag, const uint8_t *payload, uint32_t len)
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

static inline buf header11(void)
{
	buf b = { malloc(GTT_HEADER_LEN), GTT_HEADER_LEN };
	memcpy(b.p, GTT_MAGIC, GTT_MAGIC_LEN);
	b.p[8] = 1; b.p[9] = 0; b.p[10] = 1; b.p[11] = 0;
	le32(b.p + 12, 0);
	return b;
}

/* A packed chunk of codec none around inner bytes, claiming raw_len. */

#endif
