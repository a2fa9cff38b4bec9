/* bounds.c — time bins whose size and indexes stay in range for any record times (bounds.h). */
#include "bounds.h"

void ana_bins_init(ana_bins *b, uint64_t t0, uint64_t t1, uint64_t width_ns, size_t max_n)
{
	if (t1 <= t0)
		t1 = t0 == UINT64_MAX ? t0 : t0 + 1;
	if (t1 == t0) /* t0 at the top of the range: one empty bin */
		t0--;
	if (!width_ns)
		width_ns = 1;
	if (!max_n)
		max_n = 1;
	uint64_t span = t1 - t0;
	/* ceil(span / width) without span + width - 1, which can wrap */
	uint64_t n = span / width_ns + (span % width_ns != 0);
	if (n > max_n) {
		width_ns = span / max_n + (span % max_n != 0);
		n = span / width_ns + (span % width_ns != 0);
	}
	b->t0 = t0;
	b->t1 = t1;
	b->width_ns = width_ns;
	b->n = (size_t)n;
}

size_t ana_bins_index(const ana_bins *b, uint64_t t)
{
	if (t <= b->t0)
		return 0;
	if (t >= b->t1)
		return b->n - 1;
	uint64_t i = (t - b->t0) / b->width_ns;
	return i < b->n ? (size_t)i : b->n - 1;
}

uint64_t ana_bins_start(const ana_bins *b, size_t i)
{
	if (i >= b->n)
		return b->t1;
	/* i < n, so i * width < t1 - t0: no overflow */
	return b->t0 + (uint64_t)i * b->width_ns;
}

uint64_t ana_bins_end(const ana_bins *b, size_t i)
{
	uint64_t s = ana_bins_start(b, i);
	return b->t1 - s <= b->width_ns ? b->t1 : s + b->width_ns;
}
