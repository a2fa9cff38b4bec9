/* test_export.c — exporters on a hand-built model: JSON escaping, speedscope structure and
 * weights, Chrome slices/tracks/metadata, pprof protobuf decoded back field by field.
 * test_export --write FORMAT FILE writes the export of a small timeline model for
 * tests/cli/export_consumers.sh. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "json.h"
#include "model.h"
#include "pb.h"
#include "testhelp.h"

static uint32_t frame(ana_model *m, const char *name, const char *module, const char *file, int line, int kind,
                      int inlined)
{
	ana_frame f = {.name = name, .module = module, .file = file, .line = line, .kind = (uint8_t)kind,
	               .inlined = (uint8_t)inlined};
	return ana_frame_intern(m, &f);
}

static void sample(ana_model *m, uint64_t t, uint32_t thread, uint32_t stack, int cls)
{
	ana_sample *s = ana_vec_push(m->samples);
	s->time_ns = t;
	s->weight_ns = 1000;
	s->thread_idx = thread;
	s->pid = m->threads.v[thread].pid;
	s->tid = m->threads.v[thread].tid;
	s->stack_id = stack;
	s->cls = (uint8_t)cls;
	m->threads.v[thread].n_samples++;
	m->threads.v[thread].sampled_ns += 1000;
}

/* Two threads; worker is a Python thread; "work" has an inlined call "inl". */
static ana_model *make_model(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	m->path = strdup("synthetic.gtt");
	ana_kv *kv = ana_vec_push(m->meta);
	kv->key = strdup("command");
	kv->value = strdup("/bin/prog --x");
	ana_thread *t = ana_vec_push(m->threads);
	t->pid = 100, t->tid = 100, t->name = strdup("main");
	t = ana_vec_push(m->threads);
	t->pid = 100, t->tid = 101, t->name = strdup("work\"er"), t->is_python = 1;
	ana_mapping *mp = ana_vec_push(m->mappings);
	mp->m.path = ana_intern_str(m, "/bin/prog");
	mp->m.start = 0x400000, mp->m.end = 0x500000;
	mp->m.build_id_len = 2, mp->m.build_id[0] = 0xab, mp->m.build_id[1] = 0xcd;
	uint32_t f_main = frame(m, "main", "prog", "prog.c", 10, ANA_FRAME_NATIVE, 0);
	uint32_t f_work = frame(m, "work", "prog", "prog.c", 20, ANA_FRAME_NATIVE, 0);
	uint32_t f_inl = frame(m, "inl", "prog", "prog.h", 3, ANA_FRAME_NATIVE, 1);
	uint32_t f_leaf = frame(m, "leaf\n\x01\xff", "prog", NULL, 0, ANA_FRAME_NATIVE, 0);
	uint32_t f_py = frame(m, "py_fn", "x.py", "x.py", 5, ANA_FRAME_PYTHON, 0);
	uint32_t s0[] = {f_main, f_work, f_inl};
	uint32_t s1[] = {f_main, f_leaf};
	uint32_t s2[] = {f_py, f_work};
	uint32_t st0 = ana_stack_intern(m, s0, 3), st1 = ana_stack_intern(m, s1, 2), st2 = ana_stack_intern(m, s2, 2);
	/* main: 3 samples of st0, 1 of st1 (contiguous), then a gap, 1 of st0 */
	sample(m, 10000, 0, st0, ANA_CLASS_NONPY);
	sample(m, 11000, 0, st0, ANA_CLASS_NONPY);
	sample(m, 11500, 1, st2, ANA_CLASS_PY_GIL);
	sample(m, 12000, 0, st0, ANA_CLASS_NONPY);
	sample(m, 12500, 1, st2, ANA_CLASS_NATIVE_NOGIL);
	sample(m, 13000, 0, st1, ANA_CLASS_NONPY);
	sample(m, 50000, 0, st0, ANA_CLASS_NONPY);
	m->start_ns = 10000;
	m->end_ns = 51000;
	ana_string *s = ana_vec_push(m->strings);
	s->pid = 100, s->id = 1, s->text = strdup("_Z6kernelv");
	s = ana_vec_push(m->strings);
	s->pid = 100, s->id = 2, s->text = strdup("cudaLaunchKernel");
	s = ana_vec_push(m->strings);
	s->pid = 100, s->id = 3, s->text = strdup("step");
	gtt_cuda_kernel *k = ana_vec_push(m->kernels);
	k->start_ns = 12000, k->end_ns = 14000, k->pid = 100, k->stream = 7, k->name_id = 1, k->correlation = 5;
	k = ana_vec_push(m->kernels);
	k->start_ns = 14000, k->end_ns = 15000, k->pid = 100, k->stream = 8, k->name_id = 1;
	gtt_cuda_api *a = ana_vec_push(m->apis);
	a->start_ns = 11000, a->end_ns = 11800, a->pid = 100, a->tid = 100, a->name_id = 2, a->correlation = 5;
	gtt_nvtx *n = ana_vec_push(m->nvtx);
	n->start_ns = 10000, n->end_ns = 20000, n->pid = 100, n->tid = 101, n->kind = GTT_NVTX_RANGE, n->name_id = 3;
	gtt_counter *c = ana_vec_push(m->counters);
	c->time_ns = 12345, c->pid = 100, c->name_id = 3, c->value = 0.5;
	return m;
}

static char *export_text(const ana_model *m, int format, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int rc = ana_export(m, format, NULL, f);
	fclose(f);
	if (len)
		*len = n;
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static size_t count_sub(const char *s, const char *sub)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
		n++;
	return n;
}

static void test_json(void)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	ana_json *j = ana_json_create(f);
	ana_json_obj_begin(j);
	ana_json_kv_str(j, "s", "a\"b\\c\n\t\x01\xc3\xa9\xff\xe2\x82");
	ana_json_kv_double(j, "d", 0.1);
	ana_json_kv_double(j, "nan", 0.0 / 0.0);
	ana_json_key(j, "ts");
	ana_json_decimal(j, 1234567, 3);
	ana_json_key(j, "a");
	ana_json_arr_begin(j);
	ana_json_u64(j, UINT64_MAX);
	ana_json_i64(j, -5);
	ana_json_bool(j, 1);
	ana_json_null(j);
	ana_json_arr_end(j);
	ana_json_obj_end(j);
	int err = ana_json_error(j);
	ana_json_destroy(j);
	fclose(f);
	th_check(err == 0, "balanced document reports no error");
	th_check(strcmp(buf, "{\"s\":\"a\\\"b\\\\c\\n\\t\\u0001\xc3\xa9\\ufffd\\ufffd\\ufffd\",\"d\":0.1,\"nan\":null,"
	                     "\"ts\":1234.567,\"a\":[18446744073709551615,-5,true,null]}") == 0,
	         "escaping (quote, backslash, controls, valid UTF-8 kept, invalid bytes U+FFFD), numbers: %s", buf);
	free(buf);
	f = open_memstream(&buf, &n);
	j = ana_json_create(f);
	ana_json_arr_begin(j);
	err = ana_json_error(j);
	ana_json_destroy(j);
	fclose(f);
	th_check(err < 0, "an unclosed array is an error");
	free(buf);
}

static void test_speedscope(ana_model *m)
{
	char *s = export_text(m, ANA_EXPORT_SPEEDSCOPE, NULL);
	th_check(s != NULL, "speedscope export succeeds");
	if (!s)
		return;
	th_check(strstr(s, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"") != NULL, "schema URL");
	th_check(count_sub(s, "\"type\":\"sampled\"") == 2, "one sampled profile per thread with samples");
	th_check(strstr(s, "\"name\":\"main (pid 100, tid 100)\"") && strstr(s, "\"name\":\"work\\\"er (pid 100, tid 101)\""),
	         "profiles named by thread, names escaped");
	/* main: st0 x3 merged, st1, 36 us without samples, st0 again -> weights 3000, 1000, 36000 (an
	 * empty stack), 1000; frames in first-use order */
	th_check(strstr(s, "\"samples\":[\n[0,1,2],\n[0,3],\n[],\n[0,1,2]],\"weights\":[3000,1000,36000,1000],"
	                   "\"endValue\":51000") != NULL,
	         "consecutive equal stacks merged, time without samples an empty stack (the time view is true), "
	         "weights in ns, endValue the recording's end");
	th_check(strstr(s, "\"startValue\":9000") != NULL && count_sub(s, "\"startValue\":9000") == 2,
	         "every profile starts at the first sample's period (one time axis)");
	th_check(strstr(s, "{\"name\":\"leaf\\n\\u0001\\ufffd\",\"file\":\"prog\"}") != NULL,
	         "frame without a source file falls back to the module; control bytes escaped");
	th_check(strstr(s, "{\"name\":\"inl\",\"file\":\"prog.h\",\"line\":3}") != NULL, "inlined frame has its own entry");
	th_check(strstr(s, "\"activeProfileIndex\":0") != NULL, "busiest thread first");
	free(s);
}

static void test_chrome(ana_model *m)
{
	char *s = export_text(m, ANA_EXPORT_CHROME, NULL);
	th_check(s != NULL, "chrome export succeeds");
	if (!s)
		return;
	/* main thread (its OS tid, 100): main open 10000..14000 (4 samples contiguous), gap, 50000..51000,
	 * as B/E pairs: parents begin first and end last, also at one time */
	th_check(strstr(s, "{\"name\":\"main\",\"cat\":\"native\",\"ph\":\"B\",\"ts\":10.000,\"pid\":100,\"tid\":100},\n"
	                   "{\"name\":\"work\",\"cat\":\"native\",\"ph\":\"B\",\"ts\":10.000,\"pid\":100,\"tid\":100},\n"
	                   "{\"name\":\"inl\",\"cat\":\"native\",\"ph\":\"B\",\"ts\":10.000,\"pid\":100,\"tid\":100}") != NULL,
	         "slices begin parents first, on the thread's OS tid");
	th_check(strstr(s, "{\"name\":\"inl\",\"cat\":\"native\",\"ph\":\"E\",\"ts\":13.000,\"pid\":100,\"tid\":100},\n"
	                   "{\"name\":\"work\",\"cat\":\"native\",\"ph\":\"E\",\"ts\":13.000,\"pid\":100,\"tid\":100},\n"
	                   "{\"name\":\"leaf\\n\\u0001\\ufffd\",\"cat\":\"native\",\"ph\":\"B\",\"ts\":13.000") != NULL,
	         "a frame's slice ends when the stack changes under it, children first, before the new ones begin");
	th_check(strstr(s, "\"ph\":\"E\",\"ts\":14.000,\"pid\":100,\"tid\":100},\n"
	                   "{\"name\":\"main\",\"cat\":\"native\",\"ph\":\"B\",\"ts\":50.000") != NULL,
	         "a gap of more than 1.5 periods closes the slices");
	th_check(count_sub(s, "\"ph\":\"B\"") == count_sub(s, "\"ph\":\"E\""), "every slice that begins ends");
	th_check(strstr(s, "\"name\":\"python+GIL\",\"cat\":\"gil\",\"ph\":\"X\",\"ts\":11.500,\"dur\":1.000") != NULL &&
	             strstr(s, "\"name\":\"native, no GIL\",\"cat\":\"gil\",\"ph\":\"X\",\"ts\":12.500,\"dur\":1.000") != NULL,
	         "GIL class runs on the Python thread's GIL track");
	th_check(strstr(s, "{\"name\":\"kernel()\",\"cat\":\"cuda_kernel\",\"ph\":\"X\",\"ts\":12.000,\"dur\":2.000,\"pid\":100,\"tid\":1073741") != NULL,
	         "kernels demangled on a stream track (above every OS tid), category cuda_kernel");
	th_check(strstr(s, "\"args\":{\"name\":\"GPU 0 stream 7\"}") && strstr(s, "\"args\":{\"name\":\"GPU 0 stream 8\"}"),
	         "one track per stream, named");
	th_check(strstr(s, "\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_api\"") != NULL, "API calls exported");
	th_check(strstr(s, "\"name\":\"step\",\"cat\":\"nvtx\",\"ph\":\"X\"") != NULL, "NVTX ranges exported");
	th_check(strstr(s, "{\"name\":\"step\",\"ph\":\"C\",\"ts\":12.345,\"pid\":100,\"args\":{\"value\":0.5}}") != NULL,
	         "counters as C events");
	th_check(strstr(s, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":100,\"tid\":101,\"args\":{\"name\":\"work\\\"er\"}}") != NULL,
	         "thread_name metadata on the OS tid (the readers add the tid)");
	th_check(strstr(s, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":100,\"tid\":0,\"args\":{\"name\":\"main\"}}") != NULL,
	         "process_name metadata");
	char *again = export_text(m, ANA_EXPORT_CHROME, NULL);
	th_check(again && strcmp(again, s) == 0, "deterministic: a second export is byte-equal");
	free(again);
	free(s);
}

/* Decode the pprof profile back with our reader and check its structure. */
static void test_pprof(ana_model *m)
{
	uint8_t *raw = NULL;
	size_t len = 0;
	th_check(ana_export_pprof_raw(m, NULL, &raw, &len) == 0 && len > 0, "pprof encodes");
	const uint8_t *p = raw, *end = raw + len;
	ana_pb_field f;
	const char *strs[256];
	size_t n_str = 0, n_sample = 0, n_loc = 0, n_func = 0, n_map = 0, multi_line = 0;
	uint64_t total_count = 0, total_ns = 0;
	int ok = 1, rc;
	while ((rc = ana_pb_next(&p, end, &f)) == 1) {
		if (f.field == 6 && n_str < 256) {
			char *s = malloc(f.len + 1);
			memcpy(s, f.data, f.len);
			s[f.len] = 0;
			strs[n_str++] = s;
		}
	}
	ok &= rc == 0;
	th_check(ok && n_str > 0 && strs[0][0] == 0, "profile decodes to the end; string table starts with \"\"");
	for (p = raw; ana_pb_next(&p, end, &f) == 1;) {
		const uint8_t *q = f.data, *qe = f.data + f.len;
		ana_pb_field g;
		if (f.field == 2) {
			n_sample++;
			while (ana_pb_next(&q, qe, &g) == 1)
				if (g.field == 2) {
					uint64_t v[2];
					if (ana_pb_unpack(g.data, g.len, v, 2) == 2)
						total_count += v[0], total_ns += v[1];
				}
		} else if (f.field == 4) {
			size_t lines = 0;
			n_loc++;
			while (ana_pb_next(&q, qe, &g) == 1)
				lines += g.field == 4;
			multi_line += lines > 1;
		} else if (f.field == 5) {
			n_func++;
		} else if (f.field == 3) {
			n_map++;
			while (ana_pb_next(&q, qe, &g) == 1)
				if (g.field == 6)
					ok &= g.v < n_str && strcmp(strs[g.v], "abcd") == 0;
		}
	}
	th_check(total_count == 7 && total_ns == 7000, "sample values sum to 7 samples, 7000 ns (%llu, %llu)",
	         (unsigned long long)total_count, (unsigned long long)total_ns);
	th_check(n_sample == 4, "samples aggregated per (stack, thread, class): 4 (%zu)", n_sample);
	th_check(n_func == 5, "one function per (name, file): 5 (%zu)", n_func);
	th_check(n_loc == 5 && multi_line == 1, "locations: work+inl share one location with two lines (%zu, %zu)", n_loc,
	         multi_line);
	th_check(n_map == 1 && ok, "mapping carries the build-id as hex");
	int found_labels = 0;
	for (size_t i = 0; i < n_str; i++)
		found_labels += !strcmp(strs[i], "gil") + !strcmp(strs[i], "python+GIL") + !strcmp(strs[i], "thread") +
		                !strcmp(strs[i], "tid") + !strcmp(strs[i], "command: /bin/prog --x");
	th_check(found_labels == 5, "labels thread/tid/gil with class names, command comment");
	int py_sys = 0;
	for (size_t i = 0; i < n_str; i++)
		py_sys += !strcmp(strs[i], "x.py:py_fn");
	th_check(py_sys == 1, "a Python function's system_name is file:name, not its name (pprof tidies names equal "
	         "to it: <module> became <unknown>)");
	for (size_t i = 0; i < n_str; i++)
		free((char *)strs[i]);

	/* The gzipped form inflates to the same bytes. */
	size_t zlen = 0;
	char *z = export_text(m, ANA_EXPORT_PPROF, &zlen);
	uint8_t *back = malloc(len + 16);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	inflateInit2(&zs, 15 + 16);
	zs.next_in = (uint8_t *)z;
	zs.avail_in = (uInt)zlen;
	zs.next_out = back;
	zs.avail_out = (uInt)len + 16;
	int zr = inflate(&zs, Z_FINISH);
	th_check(z && (uint8_t)z[0] == 0x1f && (uint8_t)z[1] == 0x8b && zr == Z_STREAM_END && zs.total_out == len &&
	             memcmp(back, raw, len) == 0,
	         "gzip stream inflates to the raw profile");
	inflateEnd(&zs);
	free(back);
	free(z);
	free(raw);
}

static void test_pb(void)
{
	ana_pb b;
	ana_pb_init(&b);
	ana_pb_uint(&b, 1, 150);
	size_t mk = ana_pb_begin(&b, 2);
	char big[300];
	memset(big, 'x', sizeof(big));
	ana_pb_bytes(&b, 3, big, sizeof(big));
	ana_pb_end(&b, mk);
	ana_pb_int(&b, 4, -1);
	th_check(b.n >= 3 && b.p[0] == 0x08 && b.p[1] == 0x96 && b.p[2] == 0x01, "varint 150 = 08 96 01");
	const uint8_t *p = b.p;
	ana_pb_field f, g;
	int ok = ana_pb_next(&p, b.p + b.n, &f) == 1 && f.v == 150;
	ok &= ana_pb_next(&p, b.p + b.n, &f) == 1 && f.field == 2 && f.len == 303;
	const uint8_t *q = f.data;
	ok &= ana_pb_next(&q, f.data + f.len, &g) == 1 && g.field == 3 && g.len == 300;
	ok &= ana_pb_next(&p, b.p + b.n, &f) == 1 && f.field == 4 && f.v == UINT64_MAX;
	ok &= ana_pb_next(&p, b.p + b.n, &f) == 0;
	th_check(ok, "nested message longer than 127 bytes gets a two-byte length; -1 is ten bytes");
	uint8_t bad[] = {0x12, 0x05, 0x01};
	p = bad;
	th_check(ana_pb_next(&p, bad + 3, &f) == -1, "a length past the end is malformed");
	ana_pb_free(&b);
}

/* A model for the consumer tests (tests/cli/export_consumers.sh): thread "worker" runs alpha for
 * its first second (100 samples of 10 ms), is off-CPU for two seconds, runs beta for the fourth;
 * a Python thread runs "<module>" at line 7 of x.py. The time-ordered view of its speedscope export
 * must show alpha in the first quarter, nothing in the middle half, beta in the last quarter. */
static ana_model *make_timeline_model(void)
{
	ana_model *m = calloc(1, sizeof(*m));
	m->path = strdup("timeline.gtt");
	ana_thread *t = ana_vec_push(m->threads);
	t->pid = 200, t->tid = 200, t->name = strdup("worker");
	t = ana_vec_push(m->threads);
	t->pid = 200, t->tid = 201, t->name = strdup("py"), t->is_python = 1;
	uint32_t f_main = frame(m, "main", "prog", "prog.c", 10, ANA_FRAME_NATIVE, 0);
	uint32_t f_a = frame(m, "alpha", "prog", "prog.c", 20, ANA_FRAME_NATIVE, 0);
	uint32_t f_b = frame(m, "beta", "prog", "prog.c", 30, ANA_FRAME_NATIVE, 0);
	uint32_t f_mod = frame(m, "<module>", "x.py", "x.py", 7, ANA_FRAME_PYTHON, 0);
	uint32_t sa[] = {f_main, f_a}, sb[] = {f_main, f_b};
	uint32_t st_a = ana_stack_intern(m, sa, 2), st_b = ana_stack_intern(m, sb, 2), st_py = ana_stack_intern(m, &f_mod, 1);
	const uint64_t ms = 1000000ull, t0 = 1000 * ms;
	for (int i = 1; i <= 100; i++) {
		sample(m, t0 + (uint64_t)i * 10 * ms, 0, st_a, ANA_CLASS_NONPY);
		sample(m, t0 + (uint64_t)i * 10 * ms + 5 * ms, 1, st_py, ANA_CLASS_PY_GIL);
	}
	for (int i = 301; i <= 400; i++)
		sample(m, t0 + (uint64_t)i * 10 * ms, 0, st_b, ANA_CLASS_NONPY);
	for (size_t i = 0; i < m->samples.n; i++) {
		m->samples.v[i].weight_ns = 10 * ms;
		m->threads.v[m->samples.v[i].thread_idx].sampled_ns += 10 * ms - 1000;
	}
	m->start_ns = t0;
	m->end_ns = t0 + 4000 * ms;
	return m;
}

/* Sample weights are record values: two of 2^64 - 1 ns on one stack make one pprof sample of
 * the largest int64, not a wrapped or negative time. */
static void test_pprof_saturates(void)
{
	ana_model *m = make_model();
	for (size_t i = 0; i < m->samples.n; i++)
		m->samples.v[i].weight_ns = UINT64_MAX;
	uint8_t *raw = NULL;
	size_t len = 0;
	int ok = ana_export_pprof_raw(m, NULL, &raw, &len) == 0, big = 0, neg = 0;
	const uint8_t *p = raw, *end = raw + len;
	ana_pb_field f, g;
	while (ok && ana_pb_next(&p, end, &f) == 1) {
		const uint8_t *q = f.data, *qe = f.data + f.len;
		while (f.field == 2 && ana_pb_next(&q, qe, &g) == 1) {
			uint64_t v[2];
			if (g.field == 2 && ana_pb_unpack(g.data, g.len, v, 2) == 2) {
				big += v[1] == (uint64_t)INT64_MAX;
				neg += v[1] > (uint64_t)INT64_MAX;
			}
		}
	}
	th_check(ok && big == 4 && neg == 0, "pprof times saturate at 2^63 - 1 (%d samples at the cap, %d wrapped)",
	         big, neg);
	free(raw);
	ana_model_free(m);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--write") == 0) { /* FORMAT FILE: the consumer tests' input */
		ana_model *m = make_timeline_model();
		FILE *f = fopen(argv[3], "w");
		int rc = f ? ana_export(m, ana_export_format_parse(argv[2]), NULL, f) : -1;
		if (f && fclose(f) != 0)
			rc = -1;
		ana_model_free(m);
		return rc < 0 ? 2 : 0;
	}
	test_json();
	test_pb();
	ana_model *m = make_model();
	test_speedscope(m);
	test_chrome(m);
	test_pprof(m);
	test_pprof_saturates();
	th_check(ana_export_format_parse("perfetto") == ANA_EXPORT_CHROME && ana_export_format_parse("svg") < 0,
	         "format names");
	ana_model_free(m);
	return th_report();
}
