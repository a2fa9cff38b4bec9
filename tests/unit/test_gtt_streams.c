/* test_gtt_streams.c — the kinds' streams of format 1.1: a writer puts samples, context switches
 * and CUDA activity into packed chunks of their own, and a reader asked for some kinds
 * (gtt_reader_only) passes over the chunks of the other streams without expanding them.
 * Checked: every chunk holds only its stream's kinds; the records of each kind are those of a
 * trace written in one data stream (the layout before the kinds' streams), in order; a masked
 * read returns exactly a full read's records of its kinds and expands only the chunks whose
 * stream can hold them (with and without prefetch, under a window, and on a cut trace); a
 * trace of one data stream is read as before, every data chunk expanded. gtt_reader_summarize
 * passes over the CUDA stream's chunks and sums their headers; gtt_reader_chunk_at. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Switches (most records), samples with callchains and stack copies, Python stacks and GIL
 * records, CUDA kernels, API calls and copies, /proc readings, NVTX ranges, and a definition now
 * and then; many tasks, so that every stream's blocks introduce task numbers. one: every data
 * record in the one data stream. */
static buf make_trace(int one, int level)
{
	int fd;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.level = level;
	o.block_bytes = 16384;
	o.one_data_stream = one;
	gtt_writer *w = memtrace_open("gtt_streams", &o, &fd);
	static uint8_t stack[512];
	uint64_t regs[3] = { 1, 2, 3 }, ips[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	gtt_py_frame pf[2] = { { 0x7f00, 10, 0 }, { 0x7f10, 20, 0 } };
	char name[32];
	lcg_state = 5;
	for (int i = 0; i < 20000; i++) {
		uint64_t t = 1000000000ull + (uint64_t)i * 1000 + lcg() % 700;
		uint32_t pid = 100 + lcg() % 3, tid = pid * 10 + lcg() % 40, k = lcg() % 20;
		gtt_record r;
		memset(&r, 0, sizeof(r));
		if (k < 10) {
			r.tag = GTT_REC_SWITCH;
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = pid, .tid = tid, .cpu = lcg() % 8, .kind = lcg() % 2 };
		} else if (k < 12) {
			r.tag = GTT_REC_SAMPLE;
			r.u.sample = (gtt_sample){ .time_ns = t, .pid = pid, .tid = tid, .cpu = 1, .period_ns = 1000000,
			                           .n_user = 1 + lcg() % 4, .ips = ips };
			if (lcg() % 2) {
				r.u.sample.flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
				r.u.sample.n_regs = 3;
				r.u.sample.regs = regs;
				r.u.sample.regs_mask = 7;
				r.u.sample.stack = stack;
				r.u.sample.stack_len = (uint32_t)(lcg() % sizeof(stack));
			}
		} else if (k == 12) {
			r.tag = GTT_REC_PY_STACK;
			r.u.py_stack = (gtt_py_stack){ .time_ns = t, .pid = pid, .tid = tid, .n_frames = 2, .frames = pf };
		} else if (k == 13) {
			r.tag = GTT_REC_GIL;
			r.u.gil = (gtt_gil){ .time_ns = t, .pid = pid, .holder_tid = tid, .locked = 1, .switches = (uint64_t)i };
		} else if (k == 14) {
			r.tag = GTT_REC_CUDA_KERNEL;
			r.u.kernel = (gtt_cuda_kernel){ .start_ns = t, .end_ns = t + 500, .pid = pid, .correlation = (uint32_t)i,
			                                .name_id = lcg() % 5 };
		} else if (k == 15) {
			r.tag = GTT_REC_CUDA_API;
			r.u.api = (gtt_cuda_api){ .start_ns = t, .end_ns = t + 300, .pid = pid, .tid = tid,
			                          .correlation = (uint32_t)i, .name_id = 7 };
		} else if (k == 16) {
			r.tag = GTT_REC_CUDA_MEMCPY;
			r.u.memcpy = (gtt_cuda_memcpy){ .start_ns = t, .end_ns = t + 90, .pid = pid, .correlation = (uint32_t)i,
			                                .kind = GTT_MEMCPY_HTOD, .bytes = 4096 };
		} else if (k == 17) {
			r.tag = GTT_REC_THREAD_CPU;
			r.u.thread_cpu = (gtt_thread_cpu){ .time_ns = t, .pid = pid, .tid = tid, .utime_ns = (uint64_t)i * 7,
			                                   .state = 'R' };
		} else if (k == 18) {
			r.tag = GTT_REC_NVTX;
			r.u.nvtx = (gtt_nvtx){ .start_ns = t, .end_ns = t + 50, .pid = pid, .tid = tid, .kind = GTT_NVTX_RANGE,
			                       .name_id = 3 };
		} else {
			snprintf(name, sizeof(name), "name_%d", i);
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

/* A record's kind and fields as 1.0 payload bytes: equal records, equal bytes. */
static buf canon(const gtt_record *rec)
{
	enc e = { 0 };
	if (enc_reserve(&e, 4) == 0) {
		memcpy(e.p, &rec->tag, 4);
		e.n = 4;
	}
	if (gtt_encode(&e, rec) != 0)
		e.n = 4;
	return (buf){ e.p, e.n };
}

typedef struct recs { buf *v; size_t n, cap; int errors; uint64_t expanded; } recs;

typedef struct how {
	uint64_t only;      /* gtt_reader_only (0: every kind) */
	uint64_t keep;      /* kinds kept of what comes (0: all) */
	int prefetch;
	uint64_t from, to;  /* a window (both 0: none) */
} how;

static recs read_recs(const buf *t, how h)
{
	int err = 0;
	recs r = { 0 };
	gtt_record rec;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	if (!rd)
		abort();
	gtt_reader_only(rd, h.only);
	if (h.prefetch)
		gtt_reader_prefetch(rd);
	if ((h.from || h.to) && gtt_reader_set_window(rd, h.from, h.to) != 0)
		abort();
	for (int rc; (rc = gtt_reader_next(rd, &rec)) != 0;) {
		if (rc < 0) {
			r.errors++;
			continue;
		}
		if (h.keep && (rec.tag >= 64 || !(h.keep & GTT_KIND_BIT(rec.tag))))
			continue;
		if (r.n == r.cap) {
			r.cap = r.cap ? 2 * r.cap : 256;
			r.v = realloc(r.v, r.cap * sizeof(*r.v));
		}
		r.v[r.n++] = canon(&rec);
	}
	r.expanded = gtt_reader_expanded(rd);
	gtt_reader_close(rd);
	return r;
}

static void recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].p);
	free(r->v);
}

static int same(const recs *a, const recs *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].n != b->v[i].n || memcmp(a->v[i].p, b->v[i].p, a->v[i].n) != 0)
			return 0;
	return 1;
}

/* The packed chunks of a trace by stream, counted from the chunk headers (whole chunks only). */
static void count_chunks(const buf *t, size_t n_stream[256])
{
	memset(n_stream, 0, 256 * sizeof(*n_stream));
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN <= t->n;) {
		uint32_t len = rd32(t->p + off + 4);
		if (off + GTT_CHUNK_HEADER_LEN + len > t->n)
			break;
		if (rd32(t->p + off) == GTT_REC_PACKED)
			n_stream[t->p[off + GTT_CHUNK_HEADER_LEN + 1]]++;
		off += GTT_CHUNK_HEADER_LEN + len;
	}
}

/* Chunks a read asked for kinds only must expand: those of any-kind streams and of the
 * streams that can hold one of the kinds. */
static size_t chunks_for(const size_t n_stream[256], uint64_t only)
{
	size_t n = 0;
	for (int s = 0; s < 256; s++) {
		uint64_t kinds = gtt_stream_kinds((uint32_t)s);
		if (!only || !kinds || (kinds & only))
			n += n_stream[s];
	}
	return n;
}

/* Every record of a chunk is of its stream's kinds. */
static void test_layout(const buf *t)
{
	int err = 0, wrong = 0;
	size_t n_recs[GTT_STREAMS] = { 0 };
	gtt_record rec;
	gtt_chunk_info ci;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	while (rd && gtt_reader_next(rd, &rec) > 0) {
		gtt_reader_chunk(rd, &ci);
		uint64_t kinds = gtt_stream_kinds(ci.stream);
		if (ci.tag == GTT_REC_PACKED && ci.stream < GTT_STREAMS)
			n_recs[ci.stream]++;
		wrong += ci.tag != GTT_REC_PACKED || (kinds && !(kinds & GTT_KIND_BIT(rec.tag))) ||
		         ci.stream != gtt_stream_of(rec.tag);
	}
	gtt_reader_close(rd);
	th_check(wrong == 0, "every record is in a packed chunk of its kind's stream (%d not)", wrong);
	th_check(n_recs[GTT_STREAM_SAMPLES] && n_recs[GTT_STREAM_SWITCHES] && n_recs[GTT_STREAM_CUDA] &&
	         n_recs[GTT_STREAM_DATA] && n_recs[GTT_STREAM_DEFS],
	         "every stream has records: data %zu, definitions %zu, samples %zu, switches %zu, CUDA %zu",
	         n_recs[GTT_STREAM_DATA], n_recs[GTT_STREAM_DEFS], n_recs[GTT_STREAM_SAMPLES],
	         n_recs[GTT_STREAM_SWITCHES], n_recs[GTT_STREAM_CUDA]);
}

static const uint64_t masks[] = {
	GTT_KIND_BIT(GTT_REC_SAMPLE),
	GTT_KIND_BIT(GTT_REC_SWITCH),
	GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_API) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY),
	GTT_KIND_BIT(GTT_REC_SAMPLE) | GTT_KIND_BIT(GTT_REC_PY_STACK) | GTT_KIND_BIT(GTT_REC_GIL) |
		GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_API),
	GTT_KIND_BIT(GTT_REC_THREAD_CPU),
	GTT_KIND_BIT(GTT_REC_STRING),
};
#define N_MASKS (sizeof(masks) / sizeof(masks[0]))

/* A masked read against a full one: the same records of its kinds, and (streams) only the chunks
 * that can hold them expanded; a trace of one data stream expands every chunk, as before. */
static void test_masks(const char *what, const buf *t, int streams, int prefetch, int zstd)
{
	size_t n_stream[256];
	count_chunks(t, n_stream);
	for (size_t k = 0; k < N_MASKS; k++) {
		recs full = read_recs(t, (how){ .keep = masks[k], .prefetch = prefetch });
		recs only = read_recs(t, (how){ .only = masks[k], .prefetch = prefetch });
		size_t want = chunks_for(n_stream, streams ? masks[k] : 0), all = chunks_for(n_stream, 0);
		if (!zstd)
			want = 0; /* stored chunks are not expanded (gtt_reader_expanded counts zstd's) */
		th_check(full.errors == 0 && only.errors == 0 && full.n > 50 && same(&full, &only),
		         "%s, mask %zu: exactly the full read's %zu records of its kinds, in order (%zu)", what, k, full.n,
		         only.n);
		/* the prefetch may expand the one chunk after the last read, never a skipped one */
		th_check(only.expanded >= want && only.expanded <= want + (size_t)prefetch && (!streams || !zstd || want < all),
		         "%s, mask %zu: %llu of %zu chunks expanded (%zu can hold the kinds)", what, k,
		         (unsigned long long)only.expanded, all, want);
		recs_free(&full);
		recs_free(&only);
	}
}

/* The records of r of one kind, in order (borrowed: free only the array). */
static recs of_kind(const recs *r, uint32_t tag)
{
	recs x = { 0 };
	x.v = malloc((r->n + 1) * sizeof(*x.v));
	for (size_t j = 0; j < r->n; j++)
		if (rd32(r->v[j].p) == tag)
			x.v[x.n++] = r->v[j];
	return x;
}

/* The same records written in the kinds' streams and in one data stream: each kind's records
 * equal, in order, and a masked read of either gives the same records. */
static void test_layouts(const buf *streams, const buf *one)
{
	static const int tags[] = { GTT_REC_SAMPLE, GTT_REC_SWITCH, GTT_REC_PY_STACK, GTT_REC_GIL, GTT_REC_CUDA_KERNEL,
	                            GTT_REC_CUDA_API, GTT_REC_CUDA_MEMCPY, GTT_REC_THREAD_CPU, GTT_REC_NVTX,
	                            GTT_REC_STRING };
	int bad = 0;
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		recs a = read_recs(streams, (how){ .keep = GTT_KIND_BIT(tags[i]) });
		recs b = read_recs(one, (how){ .keep = GTT_KIND_BIT(tags[i]) });
		bad += !same(&a, &b) || a.n == 0;
		recs_free(&a);
		recs_free(&b);
	}
	th_check(bad == 0, "kinds' streams and one data stream: every kind's records equal, in order (%d kinds differ)", bad);
	bad = 0;
	for (size_t k = 0; k < N_MASKS; k++) {
		recs a = read_recs(streams, (how){ .only = masks[k] }), b = read_recs(one, (how){ .only = masks[k] });
		/* each kind in order; across kinds the order is the file's */
		for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
			recs x = of_kind(&a, (uint32_t)tags[i]), y = of_kind(&b, (uint32_t)tags[i]);
			bad += !same(&x, &y);
			free(x.v);
			free(y.v);
		}
		bad += a.n != b.n;
		recs_free(&a);
		recs_free(&b);
	}
	th_check(bad == 0, "masked reads of both layouts return the same records of each kind (%d differ)", bad);
	th_check(streams->n < one->n * 11 / 10, "the kinds' streams cost at most 10%% in size (%zu against %zu bytes)",
	         streams->n, one->n);
}

/* A window read asked for kinds: the window's records of those kinds, fewer chunks expanded
 * than by the window alone. */
static void test_window(const buf *t)
{
	uint64_t from = 1000000000ull + 6000000, to = 1000000000ull + 9000000;
	for (size_t k = 0; k < 3; k++) {
		recs full = read_recs(t, (how){ .keep = masks[k], .from = from, .to = to });
		recs only = read_recs(t, (how){ .only = masks[k], .from = from, .to = to, .prefetch = 1 });
		recs all = read_recs(t, (how){ .from = from, .to = to });
		th_check(full.n > 10 && same(&full, &only) && only.expanded < all.expanded,
		         "window, mask %zu: the window's %zu records of its kinds, %llu chunks expanded (the window: %llu)", k,
		         full.n, (unsigned long long)only.expanded, (unsigned long long)all.expanded);
		recs_free(&full);
		recs_free(&only);
		recs_free(&all);
	}
}

/* A trace cut anywhere reads to its last whole chunk: a masked read of a cut gives the records
 * of its kinds a full read of the cut gives, and reports the cut. */
static void test_cuts(const buf *t)
{
	int bad = 0, n = 0;
	for (size_t cut = GTT_HEADER_LEN; cut < t->n; cut += t->n / 97 + 1, n++) {
		buf c = { t->p, cut };
		for (size_t k = 0; k < 3; k++) {
			recs full = read_recs(&c, (how){ .keep = masks[k] }), only = read_recs(&c, (how){ .only = masks[k] });
			bad += !same(&full, &only) || full.errors || only.errors;
			recs_free(&full);
			recs_free(&only);
		}
	}
	th_check(bad == 0, "%d cuts: masked reads give the cut's records of their kinds, no error (%d differ)", n, bad);
}

/* gtt_reader_summarize: the CUDA stream's chunks passed over, their headers summed; the other
 * records read as without; a CUDA record with a time 0 keeps its chunk read. gtt_reader_chunk_at
 * tells chunk starts (and their streams) from other offsets and from chunks that fail their
 * checksum. */
static void test_summarize(const buf *t, int streams)
{
	int err = 0;
	gtt_record rec;
	uint64_t cuda = GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_API) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY);
	uint64_t n_cuda = 0, lo = UINT64_MAX, hi = 0, n_other = 0, n_read = 0, n_read_cuda = 0;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	while (rd && gtt_reader_next(rd, &rec) > 0) {
		uint64_t t0, t1;
		if (rec.tag < 64 && (cuda & GTT_KIND_BIT(rec.tag)) && gtt_rec_times(&rec, &t0, &t1)) {
			n_cuda++;
			lo = t0 < lo ? t0 : lo;
			hi = t1 > hi ? t1 : hi;
		} else {
			n_other++;
		}
	}
	uint64_t x_full = gtt_reader_expanded(rd);
	gtt_reader_rewind(rd);
	gtt_reader_summarize(rd, 1u << GTT_STREAM_CUDA);
	while (rd && gtt_reader_next(rd, &rec) > 0) {
		n_read++;
		n_read_cuda += rec.tag < 64 && (cuda & GTT_KIND_BIT(rec.tag));
	}
	gtt_summary sum;
	gtt_reader_summary(rd, &sum);
	uint64_t x_sum = gtt_reader_expanded(rd) - x_full;
	if (streams) {
		th_check(n_read == n_other && n_read_cuda == 0 && sum.n_records == n_cuda && sum.first_ns == lo &&
		         sum.last_ns == hi && x_sum < x_full,
		         "summarized: %llu other records read, %llu CUDA records in %llu chunks summed (%llu), times equal, "
		         "%llu of %llu chunks expanded", (unsigned long long)n_read, (unsigned long long)sum.n_records,
		         (unsigned long long)sum.n_chunks, (unsigned long long)n_cuda, (unsigned long long)x_sum,
		         (unsigned long long)x_full);
	} else {
		th_check(n_read == n_other + n_cuda && sum.n_chunks == 0 && x_sum == x_full,
		         "one data stream: nothing to summarize, every record read (%llu)", (unsigned long long)n_read);
	}
	/* chunk starts: each one's stream as the reader saw it; an offset inside a chunk is none */
	int bad = 0, n_chunks = 0;
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN <= t->n; off += GTT_CHUNK_HEADER_LEN + rd32(t->p + off + 4)) {
		gtt_chunk_info ci;
		n_chunks++;
		bad += gtt_reader_chunk_at(rd, off, &ci) != 1 || ci.offset != off ||
		       (ci.tag == GTT_REC_PACKED && ci.stream != t->p[off + GTT_CHUNK_HEADER_LEN + 1]);
		bad += gtt_reader_chunk_at(rd, off + 5, &ci) != 0;
	}
	th_check(bad == 0 && n_chunks > 10, "chunk_at: %d chunk starts told, offsets inside them not (%d wrong)", n_chunks, bad);
	gtt_reader_close(rd);
	if (!streams)
		return;
	/* a CUDA chunk whose checksum fails is no chunk start for chunk_at, and is met (corrupt) by a
	 * summarizing read as by any other */
	buf d = { malloc(t->n), t->n };
	memcpy(d.p, t->p, t->n);
	size_t at = 0;
	for (size_t off = GTT_HEADER_LEN; !at && off + GTT_CHUNK_HEADER_LEN <= d.n; off += GTT_CHUNK_HEADER_LEN + rd32(d.p + off + 4))
		if (rd32(d.p + off) == GTT_REC_PACKED && d.p[off + GTT_CHUNK_HEADER_LEN + 1] == GTT_STREAM_CUDA)
			at = off;
	d.p[at + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN + 2] ^= 0x40;
	rd = gtt_reader_open_mem(d.p, d.n, &err);
	gtt_reader_summarize(rd, 1u << GTT_STREAM_CUDA);
	int n_err = 0, rc;
	uint64_t err_at = 0;
	while ((rc = gtt_reader_next(rd, &rec)) != 0)
		if (rc < 0) {
			n_err++;
			err_at = gtt_reader_offset(rd);
		}
	gtt_chunk_info ci;
	th_check(at && n_err == 1 && err_at == at && gtt_reader_chunk_at(rd, at, &ci) == 0,
	         "a CUDA chunk with a bad checksum: one error there while summarizing (%d), no chunk for chunk_at", n_err);
	gtt_reader_close(rd);
	free(d.p);
}

/* A CUDA record with no time (0) keeps its chunk read: its header's times cannot tell the rest. */
static void test_summarize_zero(void)
{
	int fd, err = 0;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	gtt_writer *w = memtrace_open("gtt_streams0", &o, &fd);
	gtt_record r;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_CUDA_API;
	r.u.api = (gtt_cuda_api){ .start_ns = 0, .end_ns = 5000, .pid = 1, .tid = 1, .correlation = 1 };
	if (gtt_write(w, &r) != 0)
		abort();
	r.u.api = (gtt_cuda_api){ .start_ns = 7000, .end_ns = 9000, .pid = 1, .tid = 1, .correlation = 2 };
	if (gtt_write(w, &r) != 0)
		abort();
	buf b = { 0 };
	b.p = memtrace_close(w, fd, &b.n);
	gtt_reader *rd = gtt_reader_open_mem(b.p, b.n, &err);
	gtt_reader_summarize(rd, 1u << GTT_STREAM_CUDA);
	int n = 0;
	while (gtt_reader_next(rd, &r) > 0)
		n += r.tag == GTT_REC_CUDA_API;
	gtt_summary sum;
	gtt_reader_summary(rd, &sum);
	th_check(n == 2 && sum.n_chunks == 0, "a CUDA chunk with a time 0 is read, not summed (%d records, %llu chunks)", n,
	         (unsigned long long)sum.n_chunks);
	gtt_reader_close(rd);
	free(b.p);
}

int main(void)
{
	buf z = make_trace(0, 0), s = make_trace(0, -1), one = make_trace(1, 0);
	test_layout(&z);
	test_layout(&s);
	test_masks("kinds' streams, zstd", &z, 1, 0, 1);
	test_masks("kinds' streams, zstd, prefetch", &z, 1, 1, 1);
	test_masks("kinds' streams, stored", &s, 1, 0, 0);
	test_masks("one data stream", &one, 0, 0, 1);
	test_layouts(&z, &one);
	test_window(&z);
	test_cuts(&z);
	test_summarize(&z, 1);
	test_summarize(&one, 0);
	test_summarize_zero();
	free(z.p);
	free(s.p);
	free(one.p);
	return th_report();
}
