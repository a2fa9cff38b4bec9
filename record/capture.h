/* capture.h — gt-record's capture control: when sampling is on (--delay, --capture-range=signal
 * or nvtx:NAME) and when the recording must stop (--max-size), as a state machine the drain loop
 * polls; the capture records (tag 32) it writes, and the history of captured intervals that the
 * ring (--ring, ring.h) and the summary use.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_CAPTURE_H
#define REC_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "gtt.h"

/* --capture-range */
enum { REC_CAP_ALWAYS = 0, REC_CAP_SIGNAL = 1, REC_CAP_NVTX = 2 };

typedef struct rec_capture_opts {
	double delay_s;          /* --delay: sampling starts this long after the recording; 0 none */
	int range;               /* REC_CAP_* */
	const char *nvtx_name;   /* REC_CAP_NVTX: the range name */
	double ring_s;           /* --ring: keep the last this many seconds; 0 none */
	uint64_t max_size;       /* --max-size in bytes; 0 none */
} rec_capture_opts;

/* One stretch of captured time; stop_ns 0 while open. */
typedef struct rec_capture_iv {
	uint64_t start_ns, stop_ns;
	uint32_t start_source, stop_source; /* GTT_CAPTURE_* */
} rec_capture_iv;

typedef struct rec_capture rec_capture;

/* Parse --max-size's SIZE: a number with an optional K, M, G or T suffix (powers of 1024;
 * "B" and "iB" after it are accepted). 0 and *bytes, or -EINVAL. */
int rec_capture_parse_size(const char *s, uint64_t *bytes);
/* The state machine for o (copied; nvtx_name too), the recording starting at start_ns. NULL
 * on ENOMEM. */
rec_capture *rec_capture_create(const rec_capture_opts *o, uint64_t start_ns);
void rec_capture_destroy(rec_capture *c);
/* 1 when sampling can be off at some time (delay, signal or nvtx): the sampler must open its
 * events switchable (rec_perf_opts.capture) and the side loops obey the ticker gate. */
int rec_capture_switchable(const rec_capture *c);
/* The rule in words ("SIGUSR1 starts sampling, SIGUSR2 stops it; after a delay of 5 s"), for
 * the meta key `capture`, --help-like; "" when there is no capture control. */
void rec_capture_rule(const rec_capture *c, char *buf, size_t len);
/* Which signals the session must catch and hand to rec_capture_signal: SIGUSR1 and SIGUSR2
 * for --capture-range=signal, SIGUSR2 for --ring. */
int rec_capture_wants_signals(const rec_capture *c);
/* From a signal handler (async-signal-safe): SIGUSR1 or SIGUSR2 arrived. */
void rec_capture_signal(int sig);
/* Every record written (the writer's tap, under its lock: quick, no writing): the CUDA agent's
 * capture records (pid != 0, source nvtx, the capture name) tell whether a range is open. */
void rec_capture_observe(rec_capture *c, const gtt_record *rec);

/* What the drain loop must do now. */
typedef struct rec_capture_action {
	int start;               /* switch sampling on */
	int stop;                /* switch sampling off */
	uint32_t source;         /* why (GTT_CAPTURE_*) */
	int end;                 /* --max-size reached: stop the recording (after stop) */
	int dump;                /* --ring: SIGUSR2 asked for the window now */
} rec_capture_action;
/* Decide at now, the trace being trace_bytes long (its size on disk plus what is buffered, at
 * the compressed size). Fills a (zeroed when nothing is to be done). */
void rec_capture_poll(rec_capture *c, uint64_t now, uint64_t trace_bytes, rec_capture_action *a);
/* Sampling was switched (on = 1 started, 0 stopped) at now for source: the history gets the
 * interval, and w (NULL: none) a capture record with pid 0. 0 or -EIO. */
int rec_capture_switched(rec_capture *c, gtt_writer *w, uint64_t now, int on, uint32_t source);
/* Write the initial state as a capture record at now: a stop when sampling starts off, so
 * that the trace says capture control was in force (0 or -EIO; nothing when always on). */
int rec_capture_begin(rec_capture *c, gtt_writer *w, uint64_t now);
/* 1 while sampling is on. */
int rec_capture_is_on(const rec_capture *c);
/* The source of the current state (what started or stopped sampling last). */
uint32_t rec_capture_source(const rec_capture *c);
/* Captured time up to now, and the number of intervals. */
uint64_t rec_capture_captured_ns(const rec_capture *c, uint64_t now, uint32_t *n_intervals);
/* The history, oldest first (pointer valid until the next rec_capture_switched). */
const rec_capture_iv *rec_capture_history(const rec_capture *c, size_t *n);
/* The options (as given). */
const rec_capture_opts *rec_capture_options(const rec_capture *c);

#endif
