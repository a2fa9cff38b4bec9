/* clock.h — the trace clock: CLOCK_REALTIME pairs (tag 17) that let traces of several hosts be
 * merged, and the offset between perf_event's timestamps and our CLOCK_MONOTONIC, which differ
 * inside a time namespace (perf stamps stay on the host's clock; clock_gettime is offset).
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_CLOCK_H
#define REC_CLOCK_H

#include <stdint.h>
#include "gtt.h"

/* One realtime pair: realtime_ns was read between mono_ns - uncertainty_ns and
 * mono_ns + uncertainty_ns of our CLOCK_MONOTONIC (the tightest of several reads). */
typedef struct rec_clock_pair {
	uint64_t mono_ns, realtime_ns, uncertainty_ns;
} rec_clock_pair;
void rec_clock_read_pair(rec_clock_pair *p);

/* Write a clock record of kind (GTT_CLOCK_*) read now, with host name and boot id. 0 or -EIO. */
int rec_clock_write(gtt_writer *w, uint32_t kind);

/* How perf_event's CLOCK_MONOTONIC timestamps relate to ours: ours = perf's + offset_ns.
 * measured_ns/uncertainty_ns: the offset seen by bracketing a perf COMM record of this thread
 * between two clock_gettime calls (best of several); have_measured 0 when perf_event_open was
 * refused. timens_ns: /proc/self/timens_offsets' monotonic offset (have_timens 0 when the
 * kernel has no time namespaces). offset_ns is timens_ns when the two agree (exact), the
 * measurement when they do not (agree == 0: say so), 0 when neither is known. */
typedef struct rec_clock_offset {
	int64_t offset_ns;
	int64_t measured_ns;
	uint64_t uncertainty_ns;
	int64_t timens_ns;
	int have_measured, have_timens, agree;
} rec_clock_offset;
void rec_clock_perf_offset(rec_clock_offset *o);

#endif
