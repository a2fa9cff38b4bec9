/* fuzz_analyze.c — libFuzzer target: whole gt-analyze commands over mutated traces whose CRCs are
 * valid (trace_mut.h's mutator keeps them right and every input is fixed again before use), so
 * the mutations reach the analysis: the model loader, `report` (threads, top functions, sampler
 * health, Python, the GPU summary with busy %, idle gaps, GPU-idle blame and launch sites), `fold`
 * with the options chosen from the input, the four exports, and diff/check of the profile against
 * itself. Outputs are checked, not only produced: folded lines sorted, unique and positive with
 * the right total, every JSON export strict JSON, the pprof profile well-formed protobuf, and a
 * profile compared with itself shows no move.
 * Seeds: .gtt in testdata build/fuzz/seeds
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "diff.h"
#include "export.h"
#include "fold.h"
#include "gtt.h"
#include "model.h"
#include "pb.h"
#include "report.h"
#include "trace_mut.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *mem_out(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	if (!f)
		abort();
	return f;
}

static void check_folded(const ana_folded *fd)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < fd->n; i++) {
		const ana_folded_line *l = &fd->lines[i];
		if (!l->stack || !l->stack[0] || strchr(l->stack, '\n') || l->count == 0)
			abort();
		if (i && strcmp(fd->lines[i - 1].stack, l->stack) >= 0)
			abort(); /* sorted, merged */
		sum = sum + l->count < sum ? UINT64_MAX : sum + l->count;
	}
	if (sum != fd->total)
		abort();
}

static void run_fold(const ana_model *m, uint32_t h)
{
	ana_fold_opts fo;
	ana_folded fd;
	ana_fold_opts_init(&fo);
	fo.threads = h & 1;
	fo.annotate_class = h >> 1 & 1;
	fo.python_only = h >> 2 & 1;
	static const int gils[] = { -1, 1 << ANA_CLASS_PY_GIL | 1 << ANA_CLASS_NATIVE_GIL, 1 << ANA_CLASS_NATIVE_NOGIL,
	                            1 << ANA_CLASS_WAIT_GIL };
	fo.gil = gils[h >> 3 & 3];
	if (h >> 5 & 1) {
		fo.from_ns = (uint64_t)(h >> 8 & 0xff) * 1000000ull;
		fo.to_ns = h >> 6 & 1 ? UINT64_MAX - (h >> 16) : fo.from_ns + 50000000ull;
	}
	char tids[64];
	if (m->samples.n && (h >> 7 & 1)) {
		snprintf(tids, sizeof(tids), "%u,%u", m->samples.v[0].tid, m->samples.v[m->samples.n - 1].tid);
		fo.tid_filter = tids;
	}
	if (ana_fold(m, &fo, &fd) < 0)
		return; /* ENOMEM under the fuzzer's malloc limit */
	check_folded(&fd);
	if (!fo.python_only && fo.gil < 0 && !fo.from_ns && !fo.to_ns && !fo.tid_filter && fd.total != m->samples.n)
		abort(); /* every sample is in exactly one line */
	ana_folded_free(&fd);
}

static void run_exports(const ana_model *m)
{
	for (int fmt = ANA_EXPORT_FOLDED; fmt <= ANA_EXPORT_CHROME; fmt++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = mem_out(&buf, &len);
		int rc = ana_export(m, fmt, NULL, f);
		fclose(f);
		if (rc == 0 && fmt != ANA_EXPORT_FOLDED && tm_json_valid(buf, len) != 0) {
			fwrite(buf, 1, len < 4096 ? len : 4096, stderr);
			abort(); /* an export that is not JSON */
		}
		free(buf);
	}
	uint8_t *pb = NULL;
	size_t n = 0;
	if (ana_export_pprof_raw(m, NULL, &pb, &n) == 0) {
		const uint8_t *p = pb, *end = pb + n;
		ana_pb_field fl;
		int rc;
		while ((rc = ana_pb_next(&p, end, &fl)) == 1)
			;
		if (rc != 0)
			abort(); /* a profile.proto that does not parse */
		free(pb);
	}
}

static void run_diff_check(const ana_model *m)
{
	ana_profile *p = ana_profile_from_model(m);
	if (!p)
		return;
	ana_diff d;
	if (ana_diff_compute(p, p, 0, &d) == 0) {
		for (size_t i = 0; i < d.n; i++)
			if (d.rows[i].d_self != 0 || d.rows[i].d_total != 0 || d.rows[i].sig_self || d.rows[i].sig_total)
				abort(); /* a profile moved against itself */
		char *buf = NULL;
		size_t len = 0;
		FILE *f = mem_out(&buf, &len);
		int rc = ana_diff_write_json(&d, "a", "b", f);
		ana_diff_write_text(&d, "a", "b", 0, f);
		fclose(f);
		(void)rc;
		free(buf);
		ana_diff_free(&d);
	}
	ana_check_opts co;
	ana_check_result cr;
	ana_check_opts_init(&co);
	if (ana_check_run(p, p, &co, &cr) == 0) {
		if (cr.n_moves)
			abort(); /* check fails a profile against itself */
		ana_check_result_free(&cr);
	}
	ana_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	size_t len;
	uint8_t *img = tm_image(data, size, &len);
	uint32_t h = tm_hash(img, len);
	ana_opts o;
	ana_opts_init(&o);
	o.skip_corrupt = 1;
	o.kernel = h >> 24 & 1;
	o.python_only = (h >> 25 & 7) == 0;
	o.no_python_merge = (h >> 25 & 7) == 1;
	char err[512];
	ana_model *m = tm_load(img, len, &o, err, sizeof(err));
	if (!m) {
		if (!err[0] || !memchr(err, 0, sizeof(err)))
			abort(); /* a failed load names its reason */
		free(img);
		return 0;
	}
	ana_report_opts ro;
	ana_report_opts_init(&ro);
	ro.top_n = 1 + (int)(h >> 28);
	ana_report(m, &ro, devnull);
	run_fold(m, h);
	run_exports(m);
	run_diff_check(m);
	ana_model_free(m);
	free(img);
	return 0;
}
