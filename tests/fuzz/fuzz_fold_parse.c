/* fuzz_fold_parse.c — libFuzzer target: the folded-stacks parser (ana_fold_parse) over arbitrary
 * bytes. The parser keeps file order; after ana_fold_sort_merge the result must be sorted by stack
 * with no duplicates, its total the sum of its counts, and writing it out and parsing that again
 * must give the same lines back, in the same order, with no bad line.
 * Seeds: .folded in testdata
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "fold.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse(const void *text, size_t n, ana_folded *out, size_t *bad, size_t *first_bad)
{
	/* fmemopen() of zero bytes fails; an empty stream stands in for it. */
	FILE *f = n ? fmemopen((void *)text, n, "r") : fopen("/dev/null", "r");
	if (!f)
		abort();
	if (ana_fold_parse(f, out, bad, first_bad) != 0)
		abort();
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ana_folded a, b;
	size_t bad = 0, first_bad = 0, bad2 = 0, first_bad2 = 0;
	parse(data, size, &a, &bad, &first_bad);
	if ((bad == 0) != (first_bad == 0))
		abort();
	uint64_t sum = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (!a.lines[i].stack || strchr(a.lines[i].stack, '\n'))
			abort();
		sum += a.lines[i].count;
	}
	if (sum != a.total)
		abort();
	if (memchr(data, 0, size)) {
		ana_folded_free(&a);
		return 0;
	}
	for (size_t i = 0; i < a.n; i++)
		if (!a.lines[i].stack[0])
			abort(); /* an empty stack cannot be written back */

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f || ana_fold_write(&a, f) != 0)
		abort();
	fclose(f);
	parse(text, len, &b, &bad2, &first_bad2);
	if (bad2 != 0 || b.n != a.n || b.total != a.total)
		abort(); /* what we write, we read back */
	for (size_t i = 0; i < a.n; i++)
		if (strcmp(a.lines[i].stack, b.lines[i].stack) != 0 || a.lines[i].count != b.lines[i].count)
			abort();
	free(text);
	if (ana_fold_sort_merge(&a) != 0 || a.total != sum)
		abort();
	for (size_t i = 0; i < a.n; i++) {
		if (i && strcmp(a.lines[i - 1].stack, a.lines[i].stack) >= 0)
			abort(); /* sorted, merged */
		if (a.lines[i].count == 0)
			abort(); /* merging equal stacks wrapped their count around 2^64 */
	}
	ana_folded_free(&a);
	ana_folded_free(&b);
	return 0;
}
