/* test_bounds.c — numbers at the edges of their range must not become memory errors or wrong
 * output: time bins (analyze/bounds.c) for any times; a trace whose records sit at 0 and near
 * 2^64 ns (the GPU busy histogram once wrapped its size to zero and wrote past it) through the
 * report, fold and the timeline; a timeline narrower than its label column (the counter rows once
 * allocated a negative number of columns); a time axis far from zero; counter values that are
 * not finite; names with characters Cairo or XML refuse (U+FFFE once failed every PNG/PDF).
 * A trace naming 20 000 threads loads with every thread found (the loader sorted them by insertion).
 * With --write-trace FILE it only writes the edge trace (for the CLI tests), with
 * --write-threads N FILE a trace of N threads (for bench/scaling.sh), with --dup-samples IN OUT a
 * copy of a trace with every sample chunk twice (for tests/cli/analyze_inputs.sh). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bounds.h"
#include "cairo_out.h"
#include "fold.h"
#include "gtt.h"
#include "layout.h"
#include "model.h"
#include "report.h"
#include "svg.h"
#include "testhelp.h"
#include "timeline.h"

static char tmpdir[] = "/tmp/gt-test-bounds.XXXXXX";

static void test_bins(void)
{
	ana_bins b;
	ana_bins_init(&b, 0, UINT64_MAX, 100 * GT_NS_PER_MS, 200);
	th_check(b.n <= 200 && b.n >= 199, "2^64 ns in 100 ms bins: at most 200 bins (%zu)", b.n);
	th_check(ana_bins_index(&b, UINT64_MAX) == b.n - 1 && ana_bins_index(&b, 0) == 0,
	         "the first and last times index the first and last bin");
	th_check(ana_bins_end(&b, b.n - 1) == UINT64_MAX && ana_bins_start(&b, 0) == 0, "bins cover [t0, t1)");
	int ok = 1;
	for (size_t i = 0; i < b.n; i++)
		ok &= ana_bins_end(&b, i) > ana_bins_start(&b, i) && (i == 0 || ana_bins_start(&b, i) == ana_bins_end(&b, i - 1));
	th_check(ok, "bins are contiguous and non-empty");
	ana_bins_init(&b, 1000, 1000 + 2500, 1000, 10);
	th_check(b.n == 3 && b.width_ns == 1000 && ana_bins_end(&b, 2) == 3500, "2.5 bins round up to 3 (%zu)", b.n);
	th_check(ana_bins_index(&b, 999) == 0 && ana_bins_index(&b, 2000) == 1 && ana_bins_index(&b, 5000) == 2,
	         "times outside [t0, t1) clamp to the edge bins");
	ana_bins_init(&b, UINT64_MAX, UINT64_MAX, 0, 0);
	th_check(b.n == 1 && ana_bins_index(&b, 0) == 0 && ana_bins_index(&b, UINT64_MAX) == 0,
	         "an empty range at the top of the clock is one bin");
	th_check(ana_sat_add(UINT64_MAX - 1, 5) == UINT64_MAX && ana_sat_mul(1ull << 40, 1ull << 40) == UINT64_MAX &&
	         ana_span(5, 3) == 0 && ana_rel_s(0, UINT64_MAX) < -1e10, "saturating sums, spans, signed seconds");
}

/* ---- a trace at the edges of the clock ---- */

static int put(gtt_writer *w, gtt_record *r)
{
	return gtt_write(w, r) < 0;
}

static int write_edge_trace(const char *path)
{
	int err = 0, rc = 0;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w)
		return -1;
	gtt_record r = {.tag = GTT_REC_META};
	r.u.meta = (gtt_meta){"command", "edge \xef\xbf\xbe name \xef\xb7\x90 \xf0\x9f\xbf\xbf \x7f"};
	rc |= put(w, &r);
	r = (gtt_record){.tag = GTT_REC_THREAD};
	r.u.thread = (gtt_thread){1, 10, 10, GTT_THREAD_START, "main\xef\xbf\xbf"};
	rc |= put(w, &r);
	r = (gtt_record){.tag = GTT_REC_STRING};
	r.u.string = (gtt_string){10, 1, "kernel\xef\xbf\xbe"};
	rc |= put(w, &r);
	r.u.string = (gtt_string){10, 2, "counter"};
	rc |= put(w, &r);
	static const uint64_t ips[] = {0x401000};
	static const uint64_t ts[] = {1, 2, UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX};
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		r = (gtt_record){.tag = GTT_REC_SAMPLE};
		r.u.sample = (gtt_sample){.time_ns = ts[i], .pid = 10, .tid = 10, .period_ns = i == 2 ? UINT64_MAX : 1000,
		                          .n_user = 1, .ips = ips};
		rc |= put(w, &r);
	}
	/* kernels at both ends of the clock on two devices: the busy histogram spans 2^64 ns */
	static const uint64_t ks[][2] = {{1, 100}, {UINT64_MAX - 100, UINT64_MAX}, {1000, UINT64_MAX - 1000}};
	for (size_t i = 0; i < 3; i++) {
		r = (gtt_record){.tag = GTT_REC_CUDA_KERNEL};
		r.u.kernel = (gtt_cuda_kernel){.start_ns = ks[i][0], .end_ns = ks[i][1], .pid = 10, .device = i == 2,
		                               .stream = 7, .correlation = (uint32_t)i, .name_id = 1};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_CUDA_API};
		r.u.api = (gtt_cuda_api){.start_ns = ks[i][0], .end_ns = ks[i][0] + 1, .pid = 10, .tid = 10,
		                         .correlation = (uint32_t)i, .domain = GTT_API_RUNTIME, .name_id = 1};
		rc |= put(w, &r);
	}
	static const double vals[] = {1, INFINITY, NAN, 1.7e308, -1.7e308, 5};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		r = (gtt_record){.tag = GTT_REC_COUNTER};
		r.u.counter = (gtt_counter){.time_ns = i * (UINT64_MAX / 6), .pid = 10, .name_id = 2, .value = vals[i]};
		rc |= put(w, &r);
	}
	rc |= gtt_writer_close(w) < 0;
	return rc ? -1 : 0;
}

/* n threads, each named, sampled, switched and read from /proc once, in a shuffled (pid, tid)
 * order: the loader once kept threads sorted by inserting each in place (n^2 / 2 moves). */
static int write_threads_trace(const char *path, uint32_t n)
{
	int err = 0, rc = 0;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w)
		return -1;
	static const uint64_t ips[] = {0x401000};
	gtt_record r;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t tid = 1000 + (uint32_t)(((uint64_t)i * 2654435761u) % n); /* a permutation of 0..n-1 */
		char name[32];
		snprintf(name, sizeof(name), "worker-%u", tid);
		r = (gtt_record){.tag = GTT_REC_THREAD};
		r.u.thread = (gtt_thread){1000 + i, 7, tid, GTT_THREAD_START, name};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_SAMPLE};
		r.u.sample = (gtt_sample){.time_ns = 2000 + i, .pid = 7, .tid = tid, .period_ns = 1000, .n_user = 1,
		                          .ips = ips};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_SWITCH};
		r.u.sw = (gtt_switch){.time_ns = 2000 + i, .pid = 7, .tid = tid + n, .kind = GTT_SWITCH_OUT};
		rc |= put(w, &r);
	}
	rc |= gtt_writer_close(w) < 0;
	return rc ? -1 : 0;
}

/* n processes, each with a command, one thread, one sample, a CUDA device and a kernel of its own:
 * per-process lookups once scanned every process record (fold --threads, the Chrome export, the
 * symbolizer's parent lookup) and per-device ones every device (the GPU report). */
static int write_procs_trace(const char *path, uint32_t n)
{
	int err = 0, rc = 0;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w)
		return -1;
	static const uint64_t ips[] = {0x401000};
	gtt_record r;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pid = 1000 + i;
		char comm[32];
		snprintf(comm, sizeof(comm), "/bin/worker-%u --x", pid);
		r = (gtt_record){.tag = GTT_REC_PROCESS};
		r.u.process = (gtt_process){.time_ns = 1000 + i, .pid = pid, .ppid = 1, .event = GTT_PROC_START, .comm = comm};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_SAMPLE};
		r.u.sample = (gtt_sample){.time_ns = 2000 + i, .pid = pid, .tid = pid, .period_ns = 1000, .n_user = 1,
		                          .ips = ips};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_CUDA_DEVICE};
		r.u.cuda_device = (gtt_cuda_device){.pid = pid, .device = 0, .name = "GPU", .uuid = comm};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_CUDA_KERNEL};
		r.u.kernel = (gtt_cuda_kernel){.start_ns = 3000 + 2 * (uint64_t)i, .end_ns = 3001 + 2 * (uint64_t)i, .pid = pid};
		rc |= put(w, &r);
	}
	rc |= gtt_writer_close(w) < 0;
	return rc ? -1 : 0;
}

static char *report_of(const ana_model *m);

/* A mapping whose path names a FIFO (or /dev/zero): the symbolizer must not block opening it or
 * read it without end. An alarm turns a hang into a failure. */
static void test_special_mapping(void)
{
	char path[256], fifo[256], err[512];
	snprintf(path, sizeof(path), "%s/fifo.gtt", tmpdir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
	if (mkfifo(fifo, 0600) != 0) {
		printf("SKIP: mkfifo: %s\n", strerror(errno));
		return;
	}
	int e = 0, rc = 0;
	gtt_writer *w = gtt_writer_open(path, &e);
	static const uint64_t ips[] = {0x401000, 0x501000};
	const char *paths[] = {fifo, "/dev/zero"};
	for (int i = 0; w && i < 2; i++) {
		gtt_record r = {.tag = GTT_REC_MAPPING};
		r.u.mapping = (gtt_mapping){.pid = 9, .prot = 5, .start = 0x400000 + 0x100000 * (uint64_t)i,
		                            .end = 0x480000 + 0x100000 * (uint64_t)i, .path = paths[i]};
		rc |= put(w, &r);
	}
	gtt_record r = {.tag = GTT_REC_SAMPLE};
	r.u.sample = (gtt_sample){.time_ns = 5, .pid = 9, .tid = 9, .period_ns = 1000, .n_user = 2, .ips = ips};
	rc |= w ? put(w, &r) : 1;
	rc |= !w || gtt_writer_close(w) < 0;
	alarm(30);
	ana_model *m = rc ? NULL : ana_model_load(path, NULL, err, sizeof(err));
	alarm(0);
	th_check(m && m->samples.n == 1, "a mapping of a FIFO and of /dev/zero: loaded without blocking (%s)", m ? "ok" : err);
	ana_model_free(m);
	unlink(path);
	unlink(fifo);
}

static void test_many_threads(void)
{
	char path[256], err[512];
	snprintf(path, sizeof(path), "%s/threads.gtt", tmpdir);
	uint32_t n = 20000;
	th_check(write_threads_trace(path, n) == 0, "a trace naming %u threads in shuffled order is written", n);
	ana_model *m = ana_model_load(path, NULL, err, sizeof(err));
	th_check(m != NULL, "it loads (%s)", m ? "ok" : err);
	if (!m)
		return;
	int sorted = m->threads.n == 2 * (size_t)n;
	for (size_t i = 1; i < m->threads.n && sorted; i++)
		sorted = m->threads.v[i - 1].tid < m->threads.v[i].tid;
	th_check(sorted, "%zu threads (named ones and those only switch records name), in tid order", m->threads.n);
	int named = 1;
	for (uint32_t k = 0; k < n && named; k += 997) {
		char want[32];
		snprintf(want, sizeof(want), "worker-%u", 1000 + k);
		const ana_thread *t = ana_thread_find(m, 7, 1000 + k);
		named = t && t->name && strcmp(t->name, want) == 0 && t->n_samples == 1;
	}
	th_check(named, "each thread is found with its name and its one sample");
	ana_model_free(m);
	unlink(path);

	snprintf(path, sizeof(path), "%s/procs.gtt", tmpdir);
	th_check(write_procs_trace(path, 5000) == 0, "a trace of 5000 processes is written");
	m = ana_model_load(path, NULL, err, sizeof(err));
	th_check(m && m->threads.n == 5000, "it loads (%s)", m ? "ok" : err);
	if (m) {
		ana_fold_opts fo;
		ana_folded fd;
		ana_fold_opts_init(&fo);
		fo.threads = 1;
		int ok = ana_fold(m, &fo, &fd) == 0 && fd.n == 5000;
		for (size_t i = 0; ok && i < fd.n; i += 499) {
			char want[64];
			unsigned pid = (unsigned)strtoul(strrchr(fd.lines[i].stack, ';') ? strstr(fd.lines[i].stack, "worker-") + 7 : "0", NULL, 10);
			snprintf(want, sizeof(want), "worker-%u %u;worker-%u %u;", pid, pid, pid, pid);
			ok = strncmp(fd.lines[i].stack, want, strlen(want)) == 0;
		}
		th_check(ok, "fold --threads names each process after its command (indexed lookup)");
		if (fd.lines)
			ana_folded_free(&fd);
		char *rep = report_of(m);
		th_check(rep && strstr(rep, "GPU 4999: pid 5999 device 0"), "5000 GPUs (one UUID each) in the report");
		free(rep);
		ana_model_free(m);
	}
	unlink(path);
}

/* A copy of trace in with every sample chunk written twice (CRCs stay right: chunks are copied
 * whole), as a damaged copy or a recorder bug would leave it: its END record then disagrees. */
static int dup_samples(const char *in, const char *out)
{
	FILE *f = fopen(in, "rb"), *o = fopen(out, "wb");
	uint8_t *d = NULL;
	long n = -1;
	int rc = -1;
	if (!f || !o || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < GTT_HEADER_LEN || fseek(f, 0, SEEK_SET) != 0 ||
	    !(d = malloc((size_t)n)) || fread(d, 1, (size_t)n, f) != (size_t)n)
		goto out;
	fwrite(d, 1, GTT_HEADER_LEN, o);
	for (size_t off = GTT_HEADER_LEN; off + GTT_CHUNK_HEADER_LEN <= (size_t)n;) {
		uint32_t tag = d[off] | d[off + 1] << 8 | d[off + 2] << 16 | (uint32_t)d[off + 3] << 24;
		uint32_t len = d[off + 4] | d[off + 5] << 8 | d[off + 6] << 16 | (uint32_t)d[off + 7] << 24;
		size_t c = GTT_CHUNK_HEADER_LEN + (size_t)len;
		if (c > (size_t)n - off)
			break;
		fwrite(d + off, 1, c, o);
		if (tag == GTT_REC_SAMPLE)
			fwrite(d + off, 1, c, o);
		off += c;
	}
	rc = ferror(o) ? -1 : 0;
out:
	free(d);
	if (f)
		fclose(f);
	if (o && fclose(o) != 0)
		rc = -1;
	return rc;
}

static int scene_finite(const ren_scene *sc)
{
	const ren_item *it = ren_scene_items(sc);
	for (size_t i = 0; i < ren_scene_count(sc); i++)
		if (!isfinite(it[i].x) || !isfinite(it[i].y) || !isfinite(it[i].w) || !isfinite(it[i].h))
			return 0;
	return 1;
}

static int scene_text_clean(const ren_scene *sc)
{
	const ren_item *it = ren_scene_items(sc);
	for (size_t i = 0; i < ren_scene_count(sc); i++)
		if ((it[i].text && !ren_text_clean(it[i].text, strlen(it[i].text))) ||
		    (it[i].tip && !ren_text_clean(it[i].tip, strlen(it[i].tip))))
			return 0;
	return 1;
}

static char *report_of(const ana_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ana_report(m, NULL, f);
	fclose(f);
	return buf;
}

/* Per-bucket values printed after "GPU N busy % per ..." up to the next blank or heading. */
static size_t busy_values(const char *rep, int dev)
{
	char head[64];
	snprintf(head, sizeof(head), "GPU %d busy %% per", dev);
	const char *p = strstr(rep, head);
	size_t n = 0;
	if (!p)
		return 0;
	p = strchr(p, '\n');
	while (p && p[1] == ' ' && p[2] == ' ' && p[3] == ' ') {
		const char *e = strchr(p + 1, '\n'), *c = strchr(p + 1, ':');
		for (const char *q = c; q && e && q < e; q++)
			n += q[0] == ' ' && q[1] >= '0' && q[1] <= '9';
		p = e;
	}
	return n;
}

static void test_edge_trace(void)
{
	char path[256], err[512];
	snprintf(path, sizeof(path), "%s/edge.gtt", tmpdir);
	th_check(write_edge_trace(path) == 0, "a trace with times at 0 and 2^64 - 1 is written");
	ana_model *m = ana_model_load(path, NULL, err, sizeof(err));
	th_check(m != NULL, "it loads (%s)", m ? "ok" : err);
	if (!m)
		return;
	char *rep = report_of(m);
	th_check(rep && strstr(rep, "GPU busy"), "the report has the GPU busy section");
	size_t n0 = busy_values(rep, 0), n1 = busy_values(rep, 1);
	th_check(n0 >= 1 && n0 <= 200 && n0 == n1, "busy %% over 2^64 ns: at most 200 buckets per device (%zu, %zu)",
	         n0, n1);
	th_check(strstr(rep, "GPU 1: busy 100.0% of the recording") != NULL,
	         "a kernel from 1000 ns to 2^64 - 1000 ns keeps GPU 1 busy the whole recording");
	free(rep);

	ana_fold_opts fo;
	ana_folded fd;
	ana_fold_opts_init(&fo);
	th_check(ana_fold(m, &fo, &fd) == 0 && fd.total == m->samples.n && fd.total == 5,
	         "fold keeps the sample at 2^64 - 1 ns (%llu of %zu)", (unsigned long long)fd.total, m->samples.n);
	ana_folded_free(&fd);

	ren_timeline_opts to;
	int rc_tl;
	ren_timeline_opts_init(&to);
	to.width_px = 200;
	ren_scene *sc = ren_timeline_layout(m, &to, &rc_tl, err, sizeof(err));
	th_check(sc != NULL, "a 200 px timeline with counters is laid out (%s)", sc ? "ok" : err);
	if (sc) {
		th_check(ren_scene_width(sc) >= REN_TL_MIN_WIDTH, "narrower than the label column: widened to %.0f px",
		         ren_scene_width(sc));
		th_check(scene_finite(sc), "every coordinate is finite (times near 2^64, counter values inf/NaN/1.7e308)");
		th_check(scene_text_clean(sc), "every text in the scene is clean (U+FFFE, U+FDD0, U+1FFFF, DEL replaced)");
		char png[300], pdf[300];
		snprintf(png, sizeof(png), "%s/edge.png", tmpdir);
		snprintf(pdf, sizeof(pdf), "%s/edge.pdf", tmpdir);
		th_check(ren_cairo_write(sc, png, REN_CAIRO_PNG, err, sizeof(err)) == 0,
		         "PNG of names with noncharacters is written (%s)", err);
		th_check(ren_cairo_write(sc, pdf, REN_CAIRO_PDF, err, sizeof(err)) == 0,
		         "PDF of names with noncharacters is written (%s)", err);
		char *svg = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&svg, &len);
		th_check(ren_svg_write(sc, f) == 0, "SVG is written");
		fclose(f);
		th_check(svg && !strstr(svg, "\xef\xbf\xbe") && !strstr(svg, "\xef\xbf\xbf") && strstr(svg, "\xef\xbf\xbd"),
		         "the SVG shows noncharacters as U+FFFD");
		free(svg);
		ren_scene_destroy(sc);
	}
	/* a window of 1 us, 2^63 ns after the start: the axis must end (a double far from zero does
	 * not change when a small step is added to it) */
	ren_timeline_opts_init(&to);
	to.has_from = to.has_to = 1;
	to.from_ns = INT64_MAX / 2;
	to.to_ns = INT64_MAX / 2 + 1000;
	sc = ren_timeline_layout(m, &to, &rc_tl, err, sizeof(err));
	size_t ticks = 0;
	if (sc)
		for (size_t i = 0; i < ren_scene_count(sc); i++)
			ticks += ren_scene_items(sc)[i].kind == REN_TEXT && (ren_scene_items(sc)[i].flags & REN_F_AXIS);
	th_check(sc != NULL && ticks >= 1 && ticks <= 20 && scene_finite(sc),
	         "a 1 us window 4.6e18 ns in: the axis has %zu labels and ends", ticks);
	ren_scene_destroy(sc);
	ana_model_free(m);
	unlink(path);
	snprintf(path, sizeof(path), "%s/edge.png", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/edge.pdf", tmpdir);
	unlink(path);
}

static void test_text_policy(void)
{
	static const struct { const char *s; int ok; } cases[] = {
		{"plain", 1}, {"tab\tnl\ncr\r", 1}, {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 1}, {"\xef\xbf\xbd", 1},
		{"\xef\xbf\xbe", 0}, {"\xef\xbf\xbf", 0}, {"\xef\xb7\x90", 0}, {"\xef\xb7\xaf", 0}, {"\xf0\x9f\xbf\xbe", 0},
		{"\xf4\x8f\xbf\xbf", 0}, {"\x01", 0}, {"\x7f", 0}, {"\xc3", 0}, {"\xed\xa0\x80", 0}, {"\xc0\xaf", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		th_check(ren_text_clean(cases[i].s, strlen(cases[i].s)) == cases[i].ok, "text policy: case %zu is %s", i,
		         cases[i].ok ? "drawn" : "replaced");
	ren_scene *sc = ren_scene_create(300, 100, REN_DOC_STATIC);
	ren_item *it = ren_text(sc, 10, 10, "a\xef\xbf\xbe" "b", 12, REN_ANCHOR_START, 0);
	th_check(it && strcmp(it->text, "a\xef\xbf\xbd" "b") == 0, "a scene stores text cleaned, whoever made it");
	th_check(ren_scene_set(sc, "title", "t\xef\xbf\xbf") == 0 && strcmp(ren_scene_get(sc, "title"), "t\xef\xbf\xbd") == 0,
	         "scene settings are stored cleaned");
	ren_scene_destroy(sc);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-trace") == 0) /* the edge trace alone, for CLI tests */
		return write_edge_trace(argv[2]) == 0 ? 0 : 2;
	if (argc == 4 && strcmp(argv[1], "--dup-samples") == 0) /* IN OUT, for tests/cli/analyze_inputs.sh */
		return dup_samples(argv[2], argv[3]) == 0 ? 0 : 2;
	if (argc == 4 && strcmp(argv[1], "--write-procs") == 0) /* N processes, for bench/scaling.sh */
		return write_procs_trace(argv[3], (uint32_t)strtoul(argv[2], NULL, 10)) == 0 ? 0 : 2;
	if (argc == 4 && strcmp(argv[1], "--write-threads") == 0) /* N threads, for bench/scaling.sh */
		return write_threads_trace(argv[3], (uint32_t)strtoul(argv[2], NULL, 10)) == 0 ? 0 : 2;
	if (!mkdtemp(tmpdir)) {
		printf("FAIL: mkdtemp\n");
		return 1;
	}
	test_bins();
	test_edge_trace();
	test_special_mapping();
	test_many_threads();
	test_text_policy();
	rmdir(tmpdir);
	return th_report();
}
