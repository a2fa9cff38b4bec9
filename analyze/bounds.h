/* bounds.h — checked arithmetic for numbers that come from a trace or a text input. Record times,
 * counts and ids can be anything in a hostile or corrupt file whose checksums are valid, so in
 * analyze/ and render/: sums of them saturate instead of wrapping, durations are never negative,
 * and a time becomes an array index only through ana_bins (which sizes the array and clamps the
 * index). Nothing here allocates or fails.
 * Return rule: nothing here fails (checked arithmetic saturates or clamps). */
#ifndef ANA_BOUNDS_H
#define ANA_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "gt_util.h"

/* a + b, UINT64_MAX when it does not fit. */
static inline uint64_t ana_sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* a * b, UINT64_MAX when it does not fit. */
static inline uint64_t ana_sat_mul(uint64_t a, uint64_t b)
{
	uint64_t p;
	return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

/* The length of [a, b): b - a, or 0 when b is not after a. */
static inline uint64_t ana_span(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

/* Nanoseconds from ref to t as a double, negative when t is before ref (never a wrapped huge
 * number, also when the two are more than 2^63 apart). */
static inline double ana_rel_ns(uint64_t t, uint64_t ref)
{
	return t >= ref ? (double)(t - ref) : -(double)(ref - t);
}

/* The same in seconds. */
static inline double ana_rel_s(uint64_t t, uint64_t ref)
{
	return ana_rel_ns(t, ref) / (double)GT_NS_PER_SEC;
}

/* A non-negative double as a u64, clamped: 2^64 and above give UINT64_MAX, NaN and negatives 0
 * (a plain cast of those is undefined). */
static inline uint64_t ana_d2u64(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

/* n * size in *bytes; 0, or -1 when it does not fit in size_t. */
static inline int ana_size_mul(size_t n, size_t size, size_t *bytes)
{
	return __builtin_mul_overflow(n, size, bytes) ? -1 : 0;
}

/* [t0, t1) cut into n bins of width_ns (the last one may be shorter). The only way a time
 * becomes an array index: n is bounded by the caller's max_n whatever the times are. */
typedef struct ana_bins {
	uint64_t t0, t1;
	uint64_t width_ns;
	size_t n;
} ana_bins;

/* Bins of width_ns (>= 1) over [t0, t1), widened so that there are at most max_n (>= 1) of
 * them. t1 <= t0 gives one bin of width 1 at t0. */
void ana_bins_init(ana_bins *b, uint64_t t0, uint64_t t1, uint64_t width_ns, size_t max_n);
/* The bin holding t: 0 for t before t0, n - 1 for t at or after t1. */
size_t ana_bins_index(const ana_bins *b, uint64_t t);
/* Start and end of bin i (< n); the end of the last bin is t1. */
uint64_t ana_bins_start(const ana_bins *b, size_t i);
uint64_t ana_bins_end(const ana_bins *b, size_t i);

#endif
