/* test_textin.c — the one text reader (analyze/textin.c) and what reads through it: LF, CR LF and
 * CR line ends (also split between pieces), NUL bytes refused at once with the line named, over-long
 * lines refused, counts that do not fit in 64 bits; the folded parser's sum past 2^64 - 1 refused,
 * FlameGraph's difference format recognized; import-perf on CR LF text (blank lines still end a
 * sample), periods past 2^64 - 1, period sums past it. */
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "gtt.h"
#include "import_perf.h"
#include "testhelp.h"
#include "textin.h"

typedef struct collect { char text[4096]; size_t n; int lines; } collect;

static int on_line(void *ctx, const char *s, size_t len, uint64_t lineno)
{
	collect *c = ctx;
	c->n += (size_t)snprintf(c->text + c->n, sizeof(c->text) - c->n, "%llu[%.*s]", (unsigned long long)lineno,
	                         (int)len, s);
	c->lines++;
	return 0;
}

/* Feed text in pieces of size piece; returns the reader's status. */
static int read_pieces(const char *text, size_t len, size_t piece, collect *c, char *why, size_t whylen)
{
	memset(c, 0, sizeof(*c));
	ana_lines *lr = ana_lines_create(on_line, c);
	int rc = 0;
	for (size_t at = 0; at < len && rc == 0; at += piece)
		rc = ana_lines_feed(lr, text + at, len - at < piece ? len - at : piece);
	if (rc == 0)
		rc = ana_lines_finish(lr);
	snprintf(why, whylen, "%s", ana_lines_why(lr));
	ana_lines_destroy(lr);
	return rc;
}

static void test_line_ends(void)
{
	static const char *const inputs[] = { "a 1\nb 2\n\nc 3", "a 1\r\nb 2\r\n\r\nc 3", "a 1\rb 2\r\rc 3",
	                                      "a 1\r\nb 2\n\rc 3\r\n" };
	static const char *const want[] = { "1[a 1]2[b 2]3[]4[c 3]", "1[a 1]2[b 2]3[]4[c 3]", "1[a 1]2[b 2]3[]4[c 3]",
	                                    "1[a 1]2[b 2]3[]4[c 3]" };
	for (size_t i = 0; i < 4; i++)
		for (size_t piece = 1; piece <= 5; piece += 4) {
			collect c;
			char why[200];
			int rc = read_pieces(inputs[i], strlen(inputs[i]), piece, &c, why, sizeof(why));
			th_check(rc == 0 && strcmp(c.text, want[i]) == 0, "line ends, input %zu in pieces of %zu: %s", i, piece,
			         c.text);
		}
	/* a byte-order mark starts the first line only, also when it arrives a byte at a time */
	static const char bom[] = "\xef\xbb\xbf" "a 1\n\xef\xbb\xbf" "b 2\n";
	for (size_t piece = 1; piece <= 64; piece += 63) {
		collect c;
		char why[200];
		int rc = read_pieces(bom, strlen(bom), piece, &c, why, sizeof(why));
		th_check(rc == 0 && strcmp(c.text, "1[a 1]2[\xef\xbb\xbf" "b 2]") == 0,
		         "a UTF-8 byte-order mark before the first line is dropped (pieces of %zu)", piece);
	}
}

static void test_refusals(void)
{
	collect c;
	char why[200];
	static const char nul[] = "a 1\nb\0c 2\nd 3\n";
	int rc = read_pieces(nul, sizeof(nul) - 1, 3, &c, why, sizeof(why));
	th_check(rc == GTT_EFORMAT && strstr(why, "NUL byte at line 2") && c.lines == 1,
	         "a NUL byte refuses the input at its line, nothing after it is read (%s)", why);
	size_t big = ANA_LINE_MAX + 10;
	char *zeros = calloc(1, big), *xs = malloc(big);
	memset(xs, 'x', big);
	rc = read_pieces(zeros, big, 1 << 16, &c, why, sizeof(why));
	th_check(rc == GTT_EFORMAT && strstr(why, "NUL byte at line 1"), "/dev/zero-like input: refused at once (%s)", why);
	rc = read_pieces(xs, big, 1 << 16, &c, why, sizeof(why));
	th_check(rc == GTT_EFORMAT && strstr(why, "line 1 is longer than"), "a line over %u MiB is refused (%s)",
	         ANA_LINE_MAX >> 20, why);
	free(zeros);
	free(xs);
	uint64_t v = 0;
	th_check(ana_parse_count("18446744073709551615", 20, &v) == 0 && v == UINT64_MAX, "2^64 - 1 is a count");
	th_check(ana_parse_count("18446744073709551616", 20, &v) < 0 && ana_parse_count("100000000000000000000000", 24, &v) < 0,
	         "2^64 and 10^23 are not counts");
	th_check(ana_parse_count("", 0, &v) < 0 && ana_parse_count("-1", 2, &v) < 0 && ana_parse_count("1.5", 3, &v) < 0,
	         "empty, negative and fractional are not counts");
}

static int fold_text(const char *text, size_t len, ana_folded *fd, ana_fold_parse_info *info)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int rc = ana_fold_parse(f, fd, info);
	fclose(f);
	return rc;
}

static void test_folded(void)
{
	ana_folded fd;
	ana_fold_parse_info info;
	/* the same profile with LF, CR LF and CR line ends: three stacks, not one */
	static const char *const forms[] = { "main;a 2\nmain;b 3\n", "main;a 2\r\nmain;b 3\r\n", "main;a 2\rmain;b 3\r" };
	for (int i = 0; i < 3; i++) {
		int rc = fold_text(forms[i], strlen(forms[i]), &fd, &info);
		th_check(rc == 0 && fd.n == 2 && fd.total == 5 && strcmp(fd.lines[1].stack, "main;b") == 0 && !info.n_bad,
		         "folded with line ends of kind %d: 2 stacks, 5 samples", i);
		ana_folded_free(&fd);
	}
	static const char over[] = "a 18446744073709551615\nb 1\n";
	int rc = fold_text(over, sizeof(over) - 1, &fd, &info);
	th_check(rc == GTT_EFORMAT && strstr(info.why, "past 2^64 - 1 by line 2"), "counts summing past 2^64 are refused (%s)",
	         info.why);
	static const char huge[] = "a 100000000000000000000000\nb 7\n";
	rc = fold_text(huge, sizeof(huge) - 1, &fd, &info);
	th_check(rc == 0 && fd.n == 1 && info.n_bad == 1 && info.first_bad_line == 1,
	         "a count of 10^23 is a bad line, not a wrapped number");
	ana_folded_free(&fd);
	static const char nul[] = "a 1\nb\0 2\n";
	rc = fold_text(nul, sizeof(nul) - 1, &fd, &info);
	th_check(rc == GTT_EFORMAT && strstr(info.why, "NUL"), "a NUL byte refuses folded text (%s)", info.why);
	/* FlameGraph's difference format: "STACK BEFORE AFTER" */
	static const char diff[] = "main;a 10 20\nmain;b 30 0\nmain;c 0 5\n";
	rc = fold_text(diff, sizeof(diff) - 1, &fd, &info);
	th_check(rc == 0 && fd.two_counts && fd.n == 3 && fd.total == 25 && fd.base_total == 40 &&
	             strcmp(fd.lines[0].stack, "main;a") == 0 && fd.lines[0].base_count == 10 && fd.lines[0].count == 20 &&
	             fd.lines[1].count == 0,
	         "two counts on every line: the difference format (before 40, after 25 samples)");
	char *out = NULL;
	size_t len = 0;
	FILE *w = open_memstream(&out, &len);
	ana_fold_write(&fd, w);
	fclose(w);
	th_check(strcmp(out, diff) == 0, "the difference format is written back as it was read");
	free(out);
	ana_folded_free(&fd);
	static const char mixed[] = "main;frame 2 7\nmain;b 3\n";
	rc = fold_text(mixed, sizeof(mixed) - 1, &fd, &info);
	th_check(rc == 0 && !fd.two_counts && fd.n == 2 && strcmp(fd.lines[0].stack, "main;frame 2") == 0 &&
	             fd.lines[0].count == 7,
	         "one line with one count: a frame name ending in a number keeps it");
	ana_folded_free(&fd);
}

static ana_perf_import *import(const char *text, size_t len, int *rc)
{
	ana_perf_import *pi = ana_perf_import_create(NULL);
	*rc = ana_perf_import_feed(pi, text, len);
	if (*rc == 0)
		*rc = ana_perf_import_finish(pi);
	return pi;
}

static void test_import_perf(void)
{
	static const char lf[] = "prog 1/1 [000] 1.0: 1000 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\t 401100 main+0x2 (/bin/prog)\n\n"
	                         "prog 1/1 [000] 1.1: 1000 cpu-clock:uhp: \n\t 401200 b+0x1 (/bin/prog)\n\t 401100 main+0x2 (/bin/prog)\n\n";
	char crlf[sizeof(lf) * 2], cr[sizeof(lf)];
	size_t n = 0;
	for (size_t i = 0; i < sizeof(lf) - 1; i++) {
		if (lf[i] == '\n')
			crlf[n++] = '\r';
		crlf[n++] = lf[i];
		cr[i] = lf[i] == '\n' ? '\r' : lf[i];
	}
	const char *texts[] = { lf, crlf, cr };
	size_t lens[] = { sizeof(lf) - 1, n, sizeof(lf) - 1 };
	for (int k = 0; k < 3; k++) {
		int rc;
		ana_perf_import *pi = import(texts[k], lens[k], &rc);
		uint64_t c0 = 0, c1 = 0;
		const char *s0 = ana_perf_import_stack(pi, 0, &c0), *s1 = ana_perf_import_stack(pi, 1, &c1);
		th_check(rc == 0 && ana_perf_import_nstacks(pi) == 2 && s0 && strcmp(s0, "prog;main;a") == 0 && c0 == 1000 &&
		             s1 && strcmp(s1, "prog;main;b") == 0,
		         "perf script with line ends of kind %d: two samples, not one merged stack", k);
		ana_perf_import_destroy(pi);
	}
	static const char big[] = "prog 1/1 [000] 1.0: 18446744073709551616 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\n"
	                          "prog 1/1 [000] 1.1: 5 cpu-clock:uhp: \n\t 401000 b+0x1 (/bin/prog)\n\n";
	int rc;
	ana_perf_import *pi = import(big, sizeof(big) - 1, &rc);
	ana_perf_stats st;
	ana_perf_import_stats(pi, &st);
	uint64_t c = 0;
	const char *s = ana_perf_import_stack(pi, 0, &c);
	th_check(rc == 0 && st.bad_lines == 1 && st.first_bad_line == 1 && ana_perf_import_nstacks(pi) == 1 && s &&
	             strcmp(s, "prog;b") == 0 && c == 5,
	         "a period of 2^64 is a bad line and its sample is left out (was counted as 1)");
	ana_perf_import_destroy(pi);
	static const char sum[] = "prog 1/1 [000] 1.0: 18446744073709551615 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\n"
	                          "prog 1/1 [000] 1.1: 1 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\n";
	pi = import(sum, sizeof(sum) - 1, &rc);
	th_check(rc == GTT_EFORMAT && strstr(ana_perf_import_why(pi), "past 2^64 - 1"),
	         "periods summing past 2^64 - 1 are refused (%s)", ana_perf_import_why(pi));
	ana_perf_import_destroy(pi);
	static const char nul[] = "prog 1/1 [000] 1.0: 1 cpu-clock:uhp: \n\t 401000 a\0b (/bin/prog)\n\n";
	pi = import(nul, sizeof(nul) - 1, &rc);
	th_check(rc == GTT_EFORMAT && strstr(ana_perf_import_why(pi), "NUL byte at line 2"),
	         "a NUL byte refuses perf script text (was passed through) (%s)", ana_perf_import_why(pi));
	ana_perf_import_destroy(pi);
}

int main(void)
{
	test_line_ends();
	test_refusals();
	test_folded();
	test_import_perf();
	return th_report();
}
