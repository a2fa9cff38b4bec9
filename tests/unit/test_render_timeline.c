/* test_render_timeline.c — the timeline layout on a synthetic trace with known contents
 * (threads, samples, switches, GIL, CUDA kernels/copies/API calls, NVTX, a counter, a sampler
 * lag window): rows in busiest-first order, spans at the right times, window and thread
 * filters, legend. With --write-trace FILE it only writes that trace (for the CLI and browser
 * tests). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "layout.h"
#include "model.h"
#include "svg.h"
#include "testhelp.h"
#include "timeline.h"

#define T0 1000000000000ull /* trace start, ns */
#define MS 1000000ull

static int put(gtt_writer *w, gtt_record *r)
{
	return gtt_write(w, r) < 0 ? -1 : 0;
}

static int str(gtt_writer *w, uint32_t id, const char *text)
{
	gtt_record r = {.tag = GTT_REC_STRING};
	r.u.string = (gtt_string){.pid = 100, .id = id, .text = text};
	return put(w, &r);
}

/* 2 s: MainThread busy 0-0.8 s, loader busy all but 1.0-1.2 s (busiest), launcher in bursts */
static int write_trace(const char *path)
{
	int err = 0, rc = 0;
	gtt_writer *w = gtt_writer_open(path, &err);
	if (!w)
		return -1;
	gtt_record r = {.tag = GTT_REC_META};
	char start[32];
	snprintf(start, sizeof(start), "%llu", (unsigned long long)T0);
	r.u.meta = (gtt_meta){"command", "python3 train.py"};
	rc |= put(w, &r);
	r.u.meta = (gtt_meta){"start_ns", start};
	rc |= put(w, &r);
	static const struct { uint32_t tid; const char *name; } th[] = {
		{100, "MainThread"}, {101, "loader"}, {102, "launcher"}};
	for (int i = 0; i < 3; i++) {
		r = (gtt_record){.tag = GTT_REC_THREAD};
		r.u.thread = (gtt_thread){T0, 100, th[i].tid, GTT_THREAD_START, th[i].name};
		rc |= put(w, &r);
	}
	static const uint64_t ips[] = {0x401000, 0x402000, 0x403000};
	uint64_t n_samples = 0; /* the END record says how many were written, as the recorder's does */
	for (uint64_t t = 10 * MS; t <= 2000 * MS; t += 10 * MS) {
		uint32_t tids[3];
		int n = 0;
		if (t <= 800 * MS)
			tids[n++] = 100;
		if (t <= 1000 * MS || t > 1200 * MS)
			tids[n++] = 101;
		if ((t / (100 * MS)) % 4 == 0)
			tids[n++] = 102;
		for (int k = 0; k < n; k++) {
			r = (gtt_record){.tag = GTT_REC_SAMPLE};
			r.u.sample = (gtt_sample){.time_ns = T0 + t, .pid = 100, .tid = tids[k],
			                          .period_ns = 10 * MS, .n_user = 3, .ips = ips};
			rc |= put(w, &r);
			n_samples++;
		}
	}
	static const struct { uint64_t t; uint32_t tid, kind; } sw[] = {
		{800, 100, GTT_SWITCH_OUT}, {1000, 101, GTT_SWITCH_OUT}, {1200, 101, GTT_SWITCH_IN},
		{1950, 100, GTT_SWITCH_IN}};
	for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
		r = (gtt_record){.tag = GTT_REC_SWITCH};
		r.u.sw = (gtt_switch){T0 + sw[i].t * MS, 100, sw[i].tid, 0, sw[i].kind};
		rc |= put(w, &r);
	}
	static const struct { uint64_t t; uint32_t holder; } gil[] = {
		{0, 100}, {800, 0}, {1200, 101}, {1600, 0}};
	for (size_t i = 0; i < 4; i++) {
		r = (gtt_record){.tag = GTT_REC_GIL};
		r.u.gil = (gtt_gil){.time_ns = T0 + gil[i].t * MS, .pid = 100,
		                    .holder_tid = gil[i].holder, .locked = gil[i].holder != 0};
		rc |= put(w, &r);
	}
	rc |= str(w, 1, "void gemm_kernel<float>(float*, int)");
	rc |= str(w, 2, "cudaLaunchKernel");
	rc |= str(w, 3, "step");
	rc |= str(w, 4, "forward");
	rc |= str(w, 5, "queue_depth");
	rc |= str(w, 6, "cudaStreamSynchronize");
	r = (gtt_record){.tag = GTT_REC_CUDA_DEVICE};
	r.u.cuda_device = (gtt_cuda_device){.pid = 100, .device = 0, .cc_major = 9, .sm_count = 132,
	                                    .name = "NVIDIA H100", .uuid = "GPU-0"};
	rc |= put(w, &r);
	/* 20 kernels of 30 ms every 100 ms from 0.05 s, each after a 5 ms copy and a launch */
	for (uint32_t i = 0; i < 20; i++) {
		uint64_t ks = T0 + 50 * MS + i * 100 * MS;
		r = (gtt_record){.tag = GTT_REC_CUDA_MEMCPY};
		r.u.memcpy = (gtt_cuda_memcpy){ks - 8 * MS, ks - 3 * MS, 100, 0, 1, 8, 1000 + i,
		                               GTT_MEMCPY_HTOD, 1, 64u << 20};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_CUDA_API};
		r.u.api = (gtt_cuda_api){ks - 2 * MS, ks - 2 * MS + 20000, 100, 102, 2000 + i,
		                         GTT_API_RUNTIME, 211, 0, 2};
		rc |= put(w, &r);
		r = (gtt_record){.tag = GTT_REC_CUDA_KERNEL};
		r.u.kernel = (gtt_cuda_kernel){.start_ns = ks, .end_ns = ks + 30 * MS, .pid = 100,
		                               .device = 0, .stream = 7, .correlation = 2000 + i,
		                               .grid = {128, 1, 1}, .block = {256, 1, 1},
		                               .registers = 64, .name_id = 1};
		rc |= put(w, &r);
	}
	r = (gtt_record){.tag = GTT_REC_CUDA_API};
	r.u.api = (gtt_cuda_api){T0 + 1500 * MS, T0 + 1700 * MS, 100, 102, 3000, GTT_API_RUNTIME,
	                         131, 0, 6};
	rc |= put(w, &r);
	for (uint32_t i = 0; i < 2; i++) {
		r = (gtt_record){.tag = GTT_REC_NVTX};
		r.u.nvtx = (gtt_nvtx){T0 + i * 400 * MS, T0 + (i + 1) * 400 * MS, 100, 100,
		                      GTT_NVTX_RANGE, 0, 3, 0, 0};
		rc |= put(w, &r);
		r.u.nvtx = (gtt_nvtx){T0 + i * 400 * MS + 50 * MS, T0 + i * 400 * MS + 250 * MS, 100, 100,
		                      GTT_NVTX_RANGE, 0, 4, 0xff80c0ff, 1};
		rc |= put(w, &r);
	}
	for (uint32_t i = 0; i <= 20; i++) {
		r = (gtt_record){.tag = GTT_REC_COUNTER};
		r.u.counter = (gtt_counter){T0 + i * 100 * MS, 100, 5, i < 10 ? 9 + (i % 3) : 60 - i};
		rc |= put(w, &r);
	}
	r = (gtt_record){.tag = GTT_REC_HEALTH};
	r.u.health = (gtt_health){.time_ns = T0 + 1300 * MS, .end_ns = T0 + 1450 * MS,
	                          .source = GTT_SRC_PERF, .kind = GTT_HEALTH_LAG_WINDOW,
	                          .value = {50 * MS}, .text = ""};
	rc |= put(w, &r);
	r = (gtt_record){.tag = GTT_REC_END};
	r.u.end = (gtt_end){.time_ns = T0 + 2000 * MS, .reason = GTT_END_TARGET_EXIT, .n_samples = n_samples};
	rc |= put(w, &r);
	if (gtt_writer_close(w) < 0)
		rc = -1;
	return rc;
}

static const ren_item *find_text(const ren_scene *s, const char *text)
{
	for (size_t i = 0; i < ren_scene_count(s); i++) {
		const ren_item *it = &ren_scene_items(s)[i];
		if (it->kind == REN_TEXT && it->text && strcmp(it->text, text) == 0)
			return it;
	}
	return NULL;
}

/* data rects whose tooltip contains needle */
static size_t count_spans(const ren_scene *s, const char *needle, const ren_item **first)
{
	size_t n = 0;
	for (size_t i = 0; i < ren_scene_count(s); i++) {
		const ren_item *it = &ren_scene_items(s)[i];
		if (it->kind == REN_RECT && (it->flags & REN_F_DATA) && it->tip && strstr(it->tip, needle)) {
			if (!n && first)
				*first = it;
			n++;
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-trace") == 0)
		return write_trace(argv[2]) < 0 ? 2 : 0;
	char path[] = "/tmp/gt-test-timeline.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		printf("FAIL: mkstemp\n");
		return 1;
	}
	close(fd);
	th_check(write_trace(path) == 0, "synthetic trace written");
	char err[256] = "";
	ana_model *m = ana_model_load(path, NULL, err, sizeof(err));
	th_check(m != NULL, "trace loads (%s)", err);
	if (!m) {
		unlink(path);
		return th_report();
	}
	ren_timeline_opts o;
	int rc;
	ren_timeline_opts_init(&o);
	ren_scene *s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(s != NULL, "timeline laid out (%s)", err);
	if (s) {
		const ren_item *loader = find_text(s, "loader 101"), *main_t = find_text(s, "MainThread 100"),
		               *launcher = find_text(s, "launcher 102");
		th_check(loader && main_t && launcher, "a row per thread");
		th_check(loader && main_t && launcher && loader->y < main_t->y && main_t->y < launcher->y,
		         "rows busiest first (loader, MainThread, launcher)");
		th_check(find_text(s, "GPU 0 stream 7") && find_text(s, "GPU 0 stream 8"), "a row per GPU stream");
		th_check(find_text(s, "queue_depth") != NULL, "a counter row");
		th_check(find_text(s, "  NVTX MainThread") != NULL, "an NVTX row under its thread");
		const ren_item *k = NULL;
		th_check(count_spans(s, "\nkernel 30 ms", &k) == 20, "20 kernel spans");
		/* the first kernel starts at 0.05 s of 2 s; the plot is [230, 1380] */
		const char *px0 = ren_scene_get(s, "plotx0"), *px1 = ren_scene_get(s, "plotx1");
		double x0 = px0 ? atof(px0) : 0, x1 = px1 ? atof(px1) : 0;
		th_check(k && fabs(k->x - (x0 + (x1 - x0) * 0.05 / 2.0)) < 0.01, "kernel at 0.05 s is at x %.2f",
		         k ? k->x : -1);
		th_check(k && fabs(k->w - (x1 - x0) * 0.03 / 2.0) < 0.01, "kernel 30 ms wide (%.2f px)", k ? k->w : -1);
		th_check(count_spans(s, "\nmemcpy 64.00 MiB", NULL) == 20, "20 copies with their size");
		th_check(count_spans(s, "cudaLaunchKernel", NULL) == 20, "20 API spans on the launcher row");
		const ren_item *off = NULL;
		th_check(count_spans(s, "off-CPU 200 ms", &off) == 1, "loader's off-CPU gap of 200 ms");
		th_check(off && loader && fabs(off->y - loader->y) < 28, "the gap is on loader's row");
		th_check(count_spans(s, "holds the GIL 800 ms", NULL) == 1 &&
		         count_spans(s, "holds the GIL 400 ms", NULL) == 1, "GIL ownership spans");
		th_check(count_spans(s, "perf sampler behind for 150 ms (up to 50 ms late)", NULL) == 1,
		         "the sampler lag window is shaded");
		th_check(count_spans(s, "queue_depth = 50", NULL) >= 1, "counter values in tooltips");
		th_check(count_spans(s, "forward\nNVTX range 200 ms", NULL) == 2, "NVTX ranges");
		th_check(find_text(s, "holds the GIL") && find_text(s, "kernel") &&
		         find_text(s, "sampler behind") && find_text(s, "off-CPU") && find_text(s, "copy HtoD"),
		         "legend names what the trace has");
		th_check(find_text(s, "1.0 s") || find_text(s, "1.00 s"), "axis ticks in seconds");
		/* the SVG holds no raw template brackets */
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		th_check(ren_svg_write(s, f) == 0, "SVG written");
		fclose(f);
		th_check(buf && strstr(buf, "gemm_kernel&lt;float&gt;") && !strstr(buf, "gemm_kernel<"),
		         "kernel names escaped");
		free(buf);
	}
	ren_scene_destroy(s);

	/* a window: 1.0 - 1.5 s holds kernels 10..14 (the one at 0.95 s ends at 0.98 s) */
	ren_timeline_opts_init(&o);
	o.has_from = o.has_to = 1;
	o.from_ns = 1000 * MS;
	o.to_ns = 1500 * MS;
	s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(s && count_spans(s, "\nkernel ", NULL) == 5, "window keeps the 5 kernels in it");
	ren_scene_destroy(s);

	ren_timeline_opts_init(&o);
	o.threads_re = "^load";
	s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(s && find_text(s, "loader 101") && !find_text(s, "MainThread 100"), "--threads filters rows");
	ren_scene_destroy(s);

	o.threads_re = "nosuchthread";
	s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(!s && rc == REN_EEMPTY && strstr(err, "no thread matches"), "no matching thread is an error: %s", err);

	ren_timeline_opts_init(&o);
	o.has_from = 1;
	o.from_ns = 5000 * MS;
	s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(!s && rc == REN_EEMPTY && strstr(err, "outside the trace"), "a window past the end is an error: %s", err);

	o.has_from = 0;
	o.threads_re = "(";
	s = ren_timeline_layout(m, &o, &rc, err, sizeof(err));
	th_check(!s && rc == REN_EINVAL && strstr(err, "bad --threads"), "a bad --threads expression is REN_EINVAL: %s", err);

	ana_model_free(m);
	unlink(path);
	return th_report();
}
