/* gt_util.c — the shared small machinery of gt_util.h: unit conversions, array growth, notes. */
#include "gt_util.h"

#include <math.h>
#include <stdlib.h>

uint64_t gt_s_to_ns(double s)
{
	if (!(s > 0))
		return 0;
	if (s >= (double)UINT64_MAX / (double)GT_NS_PER_SEC)
		return UINT64_MAX;
	return (uint64_t)(s * (double)GT_NS_PER_SEC + 0.5);
}

uint64_t gt_hz_to_period_ns(double hz)
{
	if (!(hz > 0) || !isfinite(hz))
		return 1;
	double p = (double)GT_NS_PER_SEC / hz;
	if (p < 1)
		return 1;
	if (p >= (double)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)(p + 0.5);
}

int gt_grow(void **v, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	if (elem == 0)
		return GTT_EINVAL;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return GTT_ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return GTT_ENOMEM;
	void *p = realloc(*v, ncap * elem);
	if (!p)
		return GTT_ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

int gtt_write_health(gtt_writer *w, const gtt_health *h)
{
	gtt_record r = { .tag = GTT_REC_HEALTH };
	r.u.health = *h;
	if (!r.u.health.text)
		r.u.health.text = "";
	return gtt_write(w, &r);
}

int gtt_write_note(gtt_writer *w, uint32_t source, uint64_t time_ns, uint32_t pid, uint32_t tid,
                   const char *text)
{
	gtt_health h = {
		.time_ns = time_ns, .end_ns = time_ns, .source = source, .kind = GTT_HEALTH_NOTE,
		.pid = pid, .tid = tid, .text = text,
	};
	return gtt_write_health(w, &h);
}
