/* test_gtt_only.c — the reader's options for fast passes. gtt_reader_only: a reader asked for
 * some kinds returns exactly those records of a full read, field for field and in order (the
 * others passed over with their new task numbers kept), in packed (zstd and stored) and 1.0
 * traces; seeking to positions told by a full read works with the mask set.
 * gtt_reader_prefetch: the same records and errors as without, on whole, damaged and cut traces,
 * and with seeks back and forth; under a window it expands only the chunks the window reads.
 * A chunk's checksum checked once, and a chunk that fails it failing again. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "memtrace.h"
#include "testhelp.h"

typedef struct buf { uint8_t *p; size_t n; } buf;

static uint64_t lcg_state = 11;
static uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33);
}

/* A trace of many tasks (a new task number now and then in every kind, so that records passed
 * over define tasks that wanted ones use), switches, samples with callchains and stack copies,
 * Python stacks, CUDA kernels and API calls. */
static buf make_trace(uint32_t minor, int level)
{
	int fd;
	buf b = { 0 };
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	o.level = level;
	o.block_bytes = 16384;
	gtt_writer *w = memtrace_open("gtt_only", &o, &fd);
	static uint8_t stack[256];
	uint64_t regs[3] = { 1, 2, 3 }, ips[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	gtt_py_frame pf[2] = { { 0x7f00, 10, 0 }, { 0x7f10, 20, 0 } };
	for (int i = 0; i < 4000; i++) {
		uint64_t t = 1000000000ull + (uint64_t)i * 1000 + lcg() % 700;
		uint32_t pid = 100 + lcg() % 3, tid = pid * 10 + lcg() % 40;
		gtt_record r;
		memset(&r, 0, sizeof(r));
		switch (lcg() % 5) {
		case 0:
			r.tag = GTT_REC_SWITCH;
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = pid, .tid = tid, .cpu = lcg() % 8, .kind = lcg() % 2 };
			break;
		case 1:
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
			break;
		case 2:
			r.tag = GTT_REC_PY_STACK;
			r.u.py_stack = (gtt_py_stack){ .time_ns = t, .pid = pid, .tid = tid, .n_frames = 2, .frames = pf };
			break;
		case 3:
			r.tag = GTT_REC_CUDA_KERNEL;
			r.u.kernel = (gtt_cuda_kernel){ .start_ns = t, .end_ns = t + 500, .pid = pid, .correlation = (uint32_t)i,
			                                .name_id = lcg() % 5 };
			break;
		default:
			r.tag = GTT_REC_CUDA_API;
			r.u.api = (gtt_cuda_api){ .start_ns = t, .end_ns = t + 300, .pid = pid, .tid = tid,
			                          .correlation = (uint32_t)i, .name_id = 7 };
			break;
		}
		if (gtt_write(w, &r) != 0)
			abort();
	}
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

typedef struct recs { buf *v; gtt_pos *pos; size_t n, cap; int errors; } recs;

static int prefetch; /* readers made by read_all decompress ahead */
static uint64_t win_from, win_to; /* read_all's window (both 0: none) */
static uint64_t expanded;         /* chunks the last read_all expanded */

/* Every record of the kinds in mask (0: all) of a reader set to only (0: everything). */
static recs read_all(const buf *t, uint64_t only, uint64_t mask)
{
	int err = 0;
	recs r = { 0 };
	gtt_record rec;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	if (!rd)
		abort();
	gtt_reader_only(rd, only);
	if (prefetch)
		gtt_reader_prefetch(rd);
	if ((win_from || win_to) && gtt_reader_set_window(rd, win_from, win_to) != 0)
		abort();
	for (int rc; (rc = gtt_reader_next(rd, &rec)) != 0;) {
		if (rc < 0) {
			r.errors++;
			continue;
		}
		if (mask && (rec.tag >= 64 || !(mask & GTT_KIND_BIT(rec.tag))))
			continue;
		if (r.n == r.cap) {
			r.cap = r.cap ? 2 * r.cap : 256;
			r.v = realloc(r.v, r.cap * sizeof(*r.v));
			r.pos = realloc(r.pos, r.cap * sizeof(*r.pos));
		}
		gtt_reader_tell(rd, &r.pos[r.n]);
		r.v[r.n++] = canon(&rec);
	}
	expanded = gtt_reader_expanded(rd);
	gtt_reader_close(rd);
	return r;
}

static void recs_free(recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].p);
	free(r->v);
	free(r->pos);
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

static void test_masks(const char *what, const buf *t)
{
	static const uint64_t masks[] = {
		GTT_KIND_BIT(GTT_REC_SAMPLE),
		GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_API),
		GTT_KIND_BIT(GTT_REC_SWITCH),
		GTT_KIND_BIT(GTT_REC_PY_STACK) | GTT_KIND_BIT(GTT_REC_CUDA_API),
	};
	for (size_t k = 0; k < sizeof(masks) / sizeof(masks[0]); k++) {
		recs full = read_all(t, 0, masks[k]), only = read_all(t, masks[k], 0);
		th_check(full.errors == 0 && only.errors == 0 && full.n > 300,
		         "%s, mask %zu: both read without error (%zu records)", what, k, full.n);
		th_check(same(&full, &only), "%s, mask %zu: exactly the full read's records of those kinds, in order (%zu, %zu)",
		         what, k, full.n, only.n);
		recs_free(&full);
		recs_free(&only);
	}
	/* positions told by a full read, read again backwards and forwards with only samples (by
	 * the reader that read the trace: callchain definitions are kept from that read) */
	recs full = read_all(t, 0, GTT_KIND_BIT(GTT_REC_SAMPLE));
	int err = 0, bad = 0;
	gtt_record rec;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	if (prefetch)
		gtt_reader_prefetch(rd);
	while (gtt_reader_next(rd, &rec) != 0)
		;
	gtt_reader_only(rd, GTT_KIND_BIT(GTT_REC_SAMPLE));
	for (size_t j = 0; j < 2 * full.n; j++) {
		size_t i = j < full.n ? j : 2 * full.n - 1 - j;
		if (gtt_reader_seek(rd, &full.pos[i]) != 0 || gtt_reader_next(rd, &rec) != 1) {
			bad++;
			continue;
		}
		buf c = canon(&rec);
		bad += c.n != full.v[i].n || memcmp(c.p, full.v[i].p, c.n) != 0;
		free(c.p);
	}
	th_check(bad == 0 && full.n > 300, "%s: every sample read again at its position with only samples wanted (%zu, %d bad)",
	         what, full.n, bad);
	gtt_reader_close(rd);
	recs_free(&full);
}

/* A kind the trace does not hold: nothing comes, and reading ends cleanly. */
static void test_none(const buf *t)
{
	recs none = read_all(t, GTT_KIND_BIT(GTT_REC_NVTX), 0);
	th_check(none.n == 0 && none.errors == 0, "a reader asked for a kind the trace lacks returns nothing (%zu)", none.n);
	recs_free(&none);
}

/* Decompressing ahead changes nothing a reader returns: the trace whole, with damaged bytes
 * (checksums, zstd data), and cut inside a chunk. */
static void test_prefetch(const buf *t)
{
	buf d = { malloc(t->n), t->n };
	memcpy(d.p, t->p, t->n);
	for (size_t at = 4096; at < d.n; at += d.n / 7)
		d.p[at] ^= 0x5a;
	const buf *v[] = { t, &d, &(buf){ t->p, t->n / 2 + 17 } };
	const char *what[] = { "whole", "damaged", "cut" };
	for (int i = 0; i < 3; i++) {
		prefetch = 0;
		recs a = read_all(v[i], 0, 0), b = read_all(v[i], GTT_KIND_BIT(GTT_REC_SAMPLE), 0);
		prefetch = 1;
		recs c = read_all(v[i], 0, 0), e = read_all(v[i], GTT_KIND_BIT(GTT_REC_SAMPLE), 0);
		th_check(a.n > 100 && same(&a, &c) && a.errors == c.errors,
		         "prefetch, %s trace: the same records and errors as without (%zu, %zu; %d, %d errors)", what[i], a.n,
		         c.n, a.errors, c.errors);
		th_check(same(&b, &e) && b.errors == e.errors, "prefetch, %s trace, only samples: the same as without (%zu, %zu)",
		         what[i], b.n, e.n);
		recs_free(&a);
		recs_free(&b);
		recs_free(&c);
		recs_free(&e);
	}
	test_masks("zstd blocks, prefetch", t);
	prefetch = 0;
	free(d.p);
}

/* A reader checks each chunk's checksum once: a second pass (rewind) gives the same records and
 * errors as the first, a chunk that failed fails again, and a position that is no chunk's start
 * (a seek anywhere into chunks already checked) never yields a record. */
static void test_checked_once(const buf *t)
{
	buf d = { malloc(t->n), t->n };
	memcpy(d.p, t->p, t->n);
	d.p[t->n / 3] ^= 0x21; /* a checksum mismatch in the first third */
	const buf *traces[] = { t, &d };
	for (int k = 0; k < 2; k++) {
		int err = 0;
		gtt_reader *rd = gtt_reader_open_mem(traces[k]->p, traces[k]->n, &err);
		gtt_record rec;
		uint64_t n[2] = { 0, 0 }, errors[2] = { 0, 0 }, sum[2] = { 0, 0 };
		uint64_t starts[64];
		size_t n_starts = 0;
		for (int pass = 0; rd && pass < 2; pass++) {
			gtt_reader_rewind(rd);
			for (int rc; (rc = gtt_reader_next(rd, &rec)) != 0;) {
				if (rc < 0) {
					errors[pass]++;
					continue;
				}
				buf c = canon(&rec);
				for (size_t i = 0; i < c.n; i++)
					sum[pass] = sum[pass] * 31 + c.p[i];
				free(c.p);
				n[pass]++;
				if (n_starts < 64 && (n_starts == 0 || starts[n_starts - 1] != gtt_reader_offset(rd)))
					starts[n_starts++] = gtt_reader_offset(rd);
			}
		}
		th_check(rd && n[0] == n[1] && sum[0] == sum[1] && errors[0] == errors[1] && (k == 0) == (errors[0] == 0),
		         "%s trace read twice: %llu records, %llu errors each time", k ? "damaged" : "whole",
		         (unsigned long long)n[0], (unsigned long long)errors[0]);
		int records = 0;
		for (size_t i = 0; rd && i < n_starts; i++) {
			gtt_pos pos = { starts[i] + 1 + i % 7, 0 };
			if (gtt_reader_seek(rd, &pos) == 0 && gtt_reader_next(rd, &rec) == 1)
				records++;
		}
		th_check(rd && n_starts > 3 && records == 0, "%s trace: %zu seeks into checked chunks, %d records from them",
		         k ? "damaged" : "whole", n_starts, records);
		gtt_reader_close(rd);
	}
	free(d.p);
}

/* A trace whose definitions come between the other chunks, as a recording's do (a new thread
 * and a new string every 100 records): many small definitions chunks. */
static buf make_defs_trace(void)
{
	int fd;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.block_bytes = 16384; /* data chunks the prefetch takes (gtt_unpack.c: 8 KiB or more) */
	gtt_writer *w = memtrace_open("gtt_defs", &o, &fd);
	uint64_t ips[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	char name[32];
	for (uint32_t i = 0; i < 80000; i++) {
		uint64_t t = 1000000000ull + (uint64_t)i * 500000;
		gtt_record r;
		memset(&r, 0, sizeof(r));
		if (i % 100 == 0) {
			snprintf(name, sizeof(name), "kernel_%u", i / 100);
			r.tag = GTT_REC_STRING;
			r.u.string = (gtt_string){ .id = 1 + i / 100, .text = name };
			if (gtt_write(w, &r) != 0)
				abort();
			memset(&r, 0, sizeof(r));
		}
		r.tag = GTT_REC_SAMPLE;
		r.u.sample = (gtt_sample){ .time_ns = t, .pid = 100, .tid = 1000 + i / 100, .cpu = 1, .period_ns = 1000000,
		                           .n_user = 1 + lcg() % 4, .ips = ips };
		if (gtt_write(w, &r) != 0)
			abort();
	}
	buf b = { 0 };
	b.p = memtrace_close(w, fd, &b.n);
	return b;
}

/* A window read with prefetch expands the chunks the window reads (its own and the definitions
 * chunks between them) and at most one more, not the chunk after each of them in the file. */
static void test_prefetch_window(const buf *t)
{
	int err = 0;
	gtt_reader *rd = gtt_reader_open_mem(t->p, t->n, &err);
	const gtt_index_entry *e;
	size_t n = 0, n_defs = 0, n_data = 0, n_sel = 0;
	if (!rd || gtt_reader_index(rd, &e, &n) < 0)
		abort();
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++)
		if (!(e[i].flags & GTT_INDEX_DEFS) && e[i].first_ns <= e[i].last_ns) {
			lo = e[i].first_ns < lo ? e[i].first_ns : lo;
			hi = e[i].last_ns > hi ? e[i].last_ns : hi;
		}
	win_from = lo + (hi - lo) * 4 / 10;
	win_to = lo + (hi - lo) * 5 / 10;
	for (size_t i = 0; i < n; i++) {
		int defs = (e[i].flags & GTT_INDEX_DEFS) != 0;
		n_defs += defs;
		n_data += !defs;
		n_sel += defs || (e[i].first_ns <= win_to && e[i].last_ns >= win_from);
	}
	gtt_reader_close(rd);
	recs a = read_all(t, 0, 0);
	uint64_t x_plain = expanded;
	prefetch = 1;
	recs b = read_all(t, 0, 0);
	uint64_t x_pf = expanded;
	prefetch = 0;
	win_from = win_to = 0;
	th_check(n_defs > 10 && n_data > 10 && n_sel - n_defs < n_data / 4, "window test trace: %zu definitions and %zu other chunks, %zu read by the window",
	         n_defs, n_data, n_sel);
	th_check(a.n > 0 && same(&a, &b) && a.errors == 0 && b.errors == 0,
	         "window with prefetch: the same records as without (%zu, %zu)", a.n, b.n);
	th_check(x_plain <= n_sel && x_pf <= x_plain + 1,
	         "window with prefetch: %llu chunks expanded (%llu without prefetch; the window reads %zu of %zu)",
	         (unsigned long long)x_pf, (unsigned long long)x_plain, n_sel, n);
	recs_free(&a);
	recs_free(&b);
}

int main(void)
{
	buf z = make_trace(1, 0), s = make_trace(1, -1), v = make_trace(0, 0);
	test_masks("zstd blocks", &z);
	test_masks("stored blocks", &s);
	test_masks("format 1.0", &v);
	test_none(&z);
	test_none(&v);
	test_prefetch(&z);
	test_checked_once(&z);
	test_checked_once(&s);
	buf d = make_defs_trace();
	test_prefetch_window(&d);
	free(d.p);
	free(z.p);
	free(s.p);
	free(v.p);
	return th_report();
}
