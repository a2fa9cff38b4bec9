/* fuzz_import_perf.c — libFuzzer target: the `perf script` text importer over arbitrary bytes.
 *
 * The first byte picks the options and a piece size; the rest is fed twice, once whole and
 * once in pieces (lines straddle feed() calls, a CR LF may be split between them), and both
 * parses must refuse the same inputs (any with a NUL byte) and otherwise give the same stacks,
 * counts and statistics. The results must be sorted, unique and printable as folded lines.
 * Seeds: .perf-script in testdata
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "import_perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parse, or NULL when the input is refused (GTT_EFORMAT, with a reason); *refused says so. */
static ana_perf_import *parse(const ana_perf_opts *o, const char *text, size_t n, size_t piece, int *refused)
{
	ana_perf_import *pi = ana_perf_import_create(o);
	int rc = 0;
	if (!pi)
		abort();
	for (size_t at = 0; at < n && rc == 0; at += piece) {
		size_t k = n - at < piece ? n - at : piece;
		rc = ana_perf_import_feed(pi, text + at, k);
	}
	if (rc == 0)
		rc = ana_perf_import_finish(pi);
	*refused = rc == GTT_EFORMAT;
	if (rc != 0 && (rc != GTT_EFORMAT || !ana_perf_import_why(pi)[0]))
		abort(); /* only a refusal, and it says why */
	if (rc) {
		ana_perf_import_destroy(pi);
		return NULL;
	}
	return pi;
}

static char *write_out(const ana_perf_import *pi, size_t *len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, len);
	if (!f || ana_perf_import_write(pi, f) != 0)
		abort();
	fclose(f);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	ana_perf_opts o;
	ana_perf_opts_init(&o);
	o.pid = data[0] & 1;
	o.tid = data[0] >> 1 & 1;
	o.kernel = data[0] >> 2 & 1;
	o.jit = data[0] >> 3 & 1;
	o.addrs = data[0] >> 4 & 1;
	size_t piece = (size_t)(data[0] >> 5) * 7 + 1;
	const char *text = (const char *)data + 1;
	size_t n = size - 1;

	int ref1, ref2;
	ana_perf_import *whole = parse(&o, text, n, n ? n : 1, &ref1);
	ana_perf_import *bits = parse(&o, text, n, piece, &ref2);
	if (ref1 != ref2)
		abort(); /* feeding in pieces changed whether the input is refused */
	if (memchr(text, 0, n) && !ref1)
		abort(); /* text with a NUL byte is refused, never passed through */
	if (ref1)
		return 0;

	size_t ns = ana_perf_import_nstacks(whole);
	if (ns != ana_perf_import_nstacks(bits))
		abort(); /* feeding in pieces changed the result */
	const char *prev = NULL;
	for (size_t i = 0; i < ns; i++) {
		uint64_t c1 = 0, c2 = 0;
		const char *s1 = ana_perf_import_stack(whole, i, &c1);
		const char *s2 = ana_perf_import_stack(bits, i, &c2);
		if (!s1 || !s2 || c1 != c2)
			abort();
		if (strpbrk(s1, "\r\n"))
			abort(); /* a folded line may not span lines (CR ends a line too) */
		if (prev && strcmp(prev, s1) >= 0)
			abort(); /* sorted and unique */
		prev = s1;
	}
	ana_perf_stats st1, st2;
	ana_perf_import_stats(whole, &st1);
	ana_perf_import_stats(bits, &st2);
	if (st1.samples != st2.samples || st1.bad_lines != st2.bad_lines || st1.lines != st2.lines ||
	    st1.filtered != st2.filtered || strcmp(st1.event, st2.event) != 0)
		abort();
	if (st1.bad_lines && (st1.first_bad_line == 0 || st1.first_bad_line > st1.lines))
		abort();
	for (size_t i = 0; i < 12; i++) {
		uint64_t lineno;
		const char *t;
		if (ana_perf_import_bad(whole, i, &lineno, &t) == 0 && (!t || lineno == 0 || lineno > st1.lines))
			abort();
	}
	size_t len1 = 0, len2 = 0;
	char *out1 = write_out(whole, &len1), *out2 = write_out(bits, &len2);
	if (len1 != len2 || memcmp(out1, out2, len1) != 0)
		abort();
	free(out1);
	free(out2);
	ana_perf_import_destroy(whole);
	ana_perf_import_destroy(bits);
	return 0;
}
