/* timeline.c — lays out the per-thread timeline of a trace (see timeline.h). */
#include "timeline.h"

#include <stdio.h>
#include <string.h>

void ren_timeline_opts_init(ren_timeline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->width_px = 1400;
}

ren_scene *ren_timeline_layout(const ana_model *m, const ren_timeline_opts *o, char *err,
                               size_t errlen)
{
	(void)m;
	(void)o;
	snprintf(err, errlen, "the timeline view is not implemented yet");
	return NULL;
}
