/* top.h — gt-record --top: a live per-thread view while recording. The model (top.c) sees the
 * records the recording writes (through observers: it never writes any), unwinds DWARF samples
 * on its own thread with record/unwind.c, and classifies every sample into the five GIL classes
 * exactly as gt-analyze does (docs/PYTHON.md); the view (top_view.c) draws it on the terminal
 * once a second in plain ANSI and reads q / t. Return rule: pointers (NULL on failure, with a
 * reason), counts. */
#ifndef REC_TOP_H
#define REC_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gtt.h"

/* The five classes of docs/PYTHON.md, in the order they are shown. */
enum { REC_TOP_PY_GIL = 0, REC_TOP_NATIVE_GIL, REC_TOP_NATIVE_NOGIL, REC_TOP_WAIT_GIL, REC_TOP_NONPY,
       REC_TOP_NCLASS };

/* ---- the model ---- */

typedef struct rec_top_model rec_top_model;

/* A model of the recording of pid (and the processes it creates). freq_hz: the sampling rate
 * (for "due" samples). NULL on ENOMEM. */
rec_top_model *rec_top_model_create(pid_t pid, double freq_hz);
void rec_top_model_destroy(rec_top_model *m);
/* Take note of one record written to the trace (thread-safe, cheap: samples are copied into a
 * bounded queue; when it is full they are counted as skipped, and the trace is unaffected).
 * The signature is rec_perf_observer's, ctx the model. */
void rec_top_model_observe(void *ctx, const gtt_record *r);
/* Classify the samples queued so far (call from one thread). Returns how many. */
size_t rec_top_model_process(rec_top_model *m);

typedef struct rec_top_row {
	uint32_t pid, tid;
	char name[32];
	uint64_t n[REC_TOP_NCLASS];   /* samples per class */
	uint64_t samples;             /* their sum */
	char hottest[160];            /* the most frequent function ("" when no sample) */
	double cpu_pct;               /* the view's: CPU % from /proc (0 from the model) */
} rec_top_row;
/* Per-thread rows of the current interval (total = 0) or of the whole recording (total = 1),
 * into out[0..cap); returns the number of threads with samples (may exceed cap). */
size_t rec_top_model_rows(rec_top_model *m, int total, rec_top_row *out, size_t cap);
/* Start a new interval (the rows of total = 1 go on). */
void rec_top_model_next_interval(rec_top_model *m);

typedef struct rec_top_stats {
	uint64_t samples, lost, throttled, skipped;   /* skipped: not classified (queue full) */
	uint64_t py_failed, py_torn;                  /* Python reads (READ_ERRORS health) */
	uint64_t lag_windows;                         /* LAG_WINDOW health records */
	uint64_t gil_held_ns, gil_span_ns;            /* GIL held time in the interval, and its span */
	uint64_t gil_changes;
	int python;                                   /* any Python stack seen */
} rec_top_stats;
/* Counters of the current interval (total = 0) or of the whole recording. */
void rec_top_model_stats(rec_top_model *m, int total, rec_top_stats *st);
/* Pids seen (the target and the processes it created), into out[0..cap); returns the count. */
size_t rec_top_model_pids(rec_top_model *m, pid_t *out, size_t cap);

/* ---- the view ---- */

typedef struct rec_top rec_top;
typedef struct rec_top_opts {
	pid_t pid;
	double freq_hz;
	const char *command;    /* shown in the header */
} rec_top_opts;

/* Open the controlling terminal (alternate screen, keys without echo; Ctrl-C still signals) and
 * start the thread that draws once a second; q makes gt-record end the recording as Ctrl-C
 * does, t switches between the last second and the whole recording. NULL with a one-line
 * reason in err (no terminal). rec_top_observer() gives the observer to install. */
rec_top *rec_top_start(const rec_top_opts *o, char *err, size_t errlen);
/* The model behind the view (for rec_top_model_observe). */
rec_top_model *rec_top_model_of(rec_top *t);
/* Stop the thread, restore the terminal, and print the classes over the whole recording on f
 * (the numbers gt-analyze report gives for the trace). NULL ok. */
void rec_top_stop(rec_top *t, FILE *f);

#endif
