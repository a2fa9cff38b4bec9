/* window.h — reading a time window of a trace (--from S --to S on every gt-analyze command):
 * where the recording starts (the origin the seconds count from), which chunks to read (the
 * trace's chunk index, lib/gtt_index.c) and which records of them fall in the window.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_WINDOW_H
#define ANA_WINDOW_H

#include "gtt.h"
#include "model.h"

/* How much before a window is read for the state when it begins: the GIL holder of each
 * process and the last /proc reading of each thread (their loops run at 1 Hz or faster). */
#define ANA_WINDOW_LEAD_NS (1000000000ull)

/* The recording's start, which --from/--to count from: the recorder's `start_ns` meta when the
 * trace begins with one, or the earliest time in the chunk index when earlier (and when there is
 * no such meta), or, for a trace whose chunks have no time ranges (format 1.0), the earliest
 * record time found by reading it. Leaves the reader rewound with no window. 0, or the reader's
 * GTT_E* code (*origin_ns 0 when the trace holds no timestamp at all). */
int ana_window_origin(gtt_reader *r, uint64_t *origin_ns);

/* The latest time the chunk index knows of (0 when it knows none: a 1.0 trace). */
uint64_t ana_window_index_end(gtt_reader *r);

/* Whether rec belongs to the window w [from_ns, to_ns): point records (samples, switches,
 * /proc readings, Python reads, GIL records, allocations, counters, health counts) whose time
 * lies in it; interval records (CUDA activity and API calls, NVTX ranges, throttled, lagging
 * and overhead stretches) that overlap it, cut at its edges (rec is changed; kept whole with
 * w->whole); tick summaries
 * that overlap it, whole (a summary cannot be split; the whole recording's summary only when
 * the window holds all of it); definitions (meta, processes, threads,
 * mappings, code objects, strings, devices, archive, capture and END records, configuration and
 * notes) always. 1 keep, 0 drop. */
int ana_window_keep(const ana_window *w, gtt_record *rec);

#endif
