/* fuzz_fold_parse.c — libFuzzer target: the folded-stacks parser (ana_fold_parse) over arbitrary
 * bytes. Text with a NUL byte is refused, counts never wrap (their sum past 2^64 - 1 is refused), no
 * stack holds a line end (LF, CR LF and CR all end lines); the parser keeps file order; after
 * ana_fold_sort_merge the result must be sorted by stack with no duplicates, its total the sum of its
 * counts, and writing it out and parsing that again must give the same lines back, in the same
 * order, with no bad line (both counts of FlameGraph's difference format included).
 * Seeds: .folded in testdata
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "fold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 0, or GTT_EFORMAT for text the parser refuses (binary data, counts summing past 2^64 - 1);
 * anything else is a bug. */
static int parse(const void *text, size_t n, ana_folded *out, size_t *bad, size_t *first_bad)
{
	/* fmemopen() of zero bytes fails; an empty stream stands in for it. */
	FILE *f = n ? fmemopen((void *)text, n, "r") : fopen("/dev/null", "r");
	ana_fold_parse_info info;
	if (!f)
		abort();
	int rc = ana_fold_parse(f, out, &info);
	fclose(f);
	if (rc != 0 && (rc != GTT_EFORMAT || !info.why[0]))
		abort(); /* a refusal says why */
	*bad = info.n_bad;
	*first_bad = info.first_bad_line;
	return rc;
}

/* A stack whose last frame ends in " DIGITS": written back, its line can read as two counts. A
 * first stack that starts with a UTF-8 byte-order mark: written first, the mark is dropped. */
static int ambiguous(const ana_folded *fd)
{
	if (fd->n && strncmp(fd->lines[0].stack, "\xef\xbb\xbf", 3) == 0)
		return 1;
	for (size_t i = 0; i < fd->n && !fd->two_counts; i++) {
		const char *sp = strrchr(fd->lines[i].stack, ' '), *tab = strrchr(fd->lines[i].stack, '\t');
		if (tab > sp)
			sp = tab;
		if (sp && sp[1] && strspn(sp + 1, "0123456789") == strlen(sp + 1))
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ana_folded a, b;
	size_t bad = 0, first_bad = 0, bad2 = 0, first_bad2 = 0;
	int rc = parse(data, size, &a, &bad, &first_bad);
	if (memchr(data, 0, size) && rc != GTT_EFORMAT)
		abort(); /* text with a NUL byte is refused, never cut */
	if (rc != 0)
		return 0;
	if ((bad == 0) != (first_bad == 0))
		abort();
	uint64_t sum = 0, sum1 = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (!a.lines[i].stack || !a.lines[i].stack[0] || strpbrk(a.lines[i].stack, "\r\n"))
			abort(); /* LF, CR LF and CR end lines: no stack holds one */
		if (__builtin_add_overflow(sum, a.lines[i].count, &sum) ||
		    __builtin_add_overflow(sum1, a.lines[i].base_count, &sum1))
			abort(); /* a sum past 2^64 - 1 is refused, not wrapped */
		if (!a.two_counts && (a.lines[i].count == 0 || a.lines[i].base_count))
			abort();
	}
	if (sum != a.total || (a.two_counts && sum1 != a.base_total))
		abort();

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f || ana_fold_write(&a, f) != 0)
		abort();
	fclose(f);
	if (!ambiguous(&a)) {
		if (parse(text, len, &b, &bad2, &first_bad2) != 0)
			abort();
		if (bad2 != 0 || b.n != a.n || b.total != a.total || b.two_counts != a.two_counts)
			abort(); /* what we write, we read back */
		for (size_t i = 0; i < a.n; i++)
			if (strcmp(a.lines[i].stack, b.lines[i].stack) != 0 || a.lines[i].count != b.lines[i].count ||
			    a.lines[i].base_count != b.lines[i].base_count)
				abort();
		ana_folded_free(&b);
	}
	free(text);
	if (ana_fold_sort_merge(&a) != 0 || a.total != sum)
		abort();
	for (size_t i = 0; i < a.n; i++) {
		if (i && strcmp(a.lines[i - 1].stack, a.lines[i].stack) >= 0)
			abort(); /* sorted, merged */
		if (a.lines[i].count == 0 && !a.two_counts)
			abort(); /* merging equal stacks wrapped their count around 2^64 */
	}
	ana_folded_free(&a);
	return 0;
}
