/* test_gtt_index.c — trace format 1.1's chunk index (from the file, rebuilt, damaged) and time
 * windows, tell/seek, callchain redefinition in a flight recorder's segments, and concurrent
 * writers. Shares its traces with test_gtt_pack.c (packtrace.h). */
#include <pthread.h>
#include <stdio.h>

#include "packtrace.h"
#include "testhelp.h"

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

/* 1 when seeking r to pos and reading gives the record want (canonical form). */
static int seek_reads(gtt_reader *r, const gtt_pos *pos, buf want)
{
	gtt_record rec;
	if (gtt_reader_seek(r, pos) != 0 || gtt_reader_next(r, &rec) != 1)
		return 0;
	buf c = canon(&rec);
	int ok = same(c, want);
	free(c.p);
	return ok;
}

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
	for (size_t i = 0; i < n; i += 3)
		bad += !seek_reads(r, &pos[i], want[i]);
	for (int k = 0; k < 2000 && n; k++) {
		size_t i = lcg() % n;
		if (!seek_reads(r, &pos[i], want[i])) {
			bad++;
			continue;
		}
		/* and the record after it follows */
		if (i + 1 < n && gtt_reader_next(r, &rec) == 1) {
			buf c = canon(&rec);
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
	uint64_t x = (uint64_t)lseek(mw_fd, 0, SEEK_END);
	gtt_writer_stats st;
	gtt_writer_get_stats(w, &st);
	uint64_t since = st.block_seq;
	write_chain_samples(w, 3000, 10, 50000); /* only chains 1..10, defined before x */
	gtt_writer_flush(w);
	uint64_t y = (uint64_t)lseek(mw_fd, 0, SEEK_END);
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

/* ---- the scan that rebuilds an index hands its pages back ---- */

/* The process's resident pages of files (RssFile), in KiB; 0 when unknown. */
static long rss_file_kib(void)
{
	char line[256];
	long kib = 0;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssFile: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* A 1.0 trace has a chunk header in every page: the scan touches the whole mapping, and the
 * reader must not keep what it walked (a 10 GB trace would stay resident). */
static void test_scan_drops(void)
{
	char path[] = "/tmp/gt-index-scan-XXXXXX";
	int fd = mkstemp(path), err = 0;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = 0;
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &o, &err) : NULL;
	if (!w) {
		th_check(0, "a 1.0 trace file written (%s)", gtt_strerror(err));
		return;
	}
	lcg_state = 5;
	int bad = write_mix(w, 60000, SEC, 1000000);
	th_check(bad == 0 && gtt_writer_close(w) == 0, "a 1.0 trace file written");
	gtt_reader *r = gtt_reader_open(path, &err);
	uint64_t size = r ? gtt_reader_size(r) : 0;
	long before = rss_file_kib();
	const gtt_index_entry *e;
	size_t n = 0;
	int rc = r ? gtt_reader_index(r, &e, &n) : -1;
	long grew = rss_file_kib() - before;
	th_check(rc == 0 && n == 1 && (e[0].flags & GTT_INDEX_PLAIN) && e[0].end == size,
	         "its index is rebuilt by a scan: one plain run of %llu bytes", (unsigned long long)size);
	th_check(size > (32u << 20) && before > 0 && grew < 12 * 1024,
	         "the scan of %llu MiB keeps %ld KiB of the file resident (at most the last 8 MiB walked)",
	         (unsigned long long)(size >> 20), grew);
	gtt_reader_close(r);
	unlink(path);
}

int main(void)
{
	test_scan_drops();
	test_index();
	test_seek();
	test_redefine();
	test_threads();
	return th_report();
}
