/* counters.h — counters the recorded program emits itself (lib/gt_counters.h or any language
 * writing docs/COUNTERS.md's lines): a private directory handed to the launched command in
 * GT_COUNTERS_DIR, whose per-process files counters.PID are read incrementally into STRING +
 * COUNTER records. Return rule: a count (>= 0) or -errno; nothing here prints. */
#ifndef REC_COUNTERS_H
#define REC_COUNTERS_H

#include <stdint.h>
#include "gtt.h"

typedef struct rec_counters rec_counters;

/* Counter names get STRING ids from here up, so they never meet the CUDA agent's ids, which
 * share the pid's id space. */
#define REC_COUNTER_ID_BASE 0xC0000000u
/* A watermark line for counter X becomes counter "X@watermark" (docs/COUNTERS.md). */
#define REC_COUNTER_WATERMARK_SUFFIX "@watermark"

/* Make the private directory (mode 0700, under $TMPDIR or /tmp). NULL with *err = -errno. */
rec_counters *rec_counters_create(int *err);
/* The directory, for GT_COUNTERS_DIR. */
const char *rec_counters_dir(const rec_counters *c);
/* In the launched child between fork and exec: export GT_COUNTERS_DIR. NULL ok. */
void rec_counters_child_env(const rec_counters *c);
/* Read the complete lines appended since the last call (at most a few MiB per file per call)
 * and write their records to w. Returns the number of counter records written, or -errno. */
int rec_counters_merge(rec_counters *c, gtt_writer *w);
/* Final merge; a NOTE health record per file that had malformed lines; remove the directory
 * and free. Returns what the final merge returned. NULL ok (returns 0). */
int rec_counters_finish(rec_counters *c, gtt_writer *w);

/* Parse one line (without its newline). 0 and the fields on success; <0 when malformed, with
 * a static reason in *why. The name is returned as [*name, *name + *name_len) inside line.
 * kind is 'c' (value) or 'w' (watermark). Exposed for the unit test. */
int rec_counters_parse_line(const char *line, size_t len, char *kind, uint64_t *t_ns,
                            const char **name, size_t *name_len, double *value, const char **why);

#endif
