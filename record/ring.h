/* ring.h — gt-record --ring SECONDS: a flight recorder whose ring lives on disk. The trace is
 * written in segments of SECONDS: the one being written is PATH.ring (the first one PATH), and
 * at each rotation the finished segment becomes PATH, so that a recorder killed at any moment
 * leaves PATH holding the last complete window (a whole trace: every segment starts with the
 * definitions it needs — meta, processes, threads, mappings, Python code, strings, CUDA devices,
 * the capture state — and the writer defines its callchains again). The window of the last
 * SECONDS is copied out of the last two segments into one trace at the end (PATH) and on
 * SIGUSR2 (PATH-stem.N.gtt, while the recording goes on).
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno; functions
 * returning a pointer give NULL with a one-line reason in err. */
#ifndef REC_RING_H
#define REC_RING_H

#include <stddef.h>
#include <stdint.h>
#include "capture.h"
#include "gtt.h"

typedef struct rec_ring rec_ring;

/* The ring for output path, segments of seconds; the first segment is the file the session
 * opened at path (first_fd, not taken over). A PATH.ring left by a killed ring recording is
 * kept as PATH.ring.old (note says so, else ""). cap gives the capture state at segment starts
 * and the captured intervals of windows (NULL: always on). NULL with a reason in err. */
rec_ring *rec_ring_create(const char *path, double seconds, int first_fd, rec_capture *cap, uint64_t start_ns,
                          char *note, size_t notelen, char *err, size_t errlen);
/* The session moved the first segment to PATH (at_path 1), or could not (0: the trace stays at a
 * temporary name, and the ring does not rotate: it would replace what is at PATH). */
void rec_ring_committed(rec_ring *r, int at_path);
/* The writer's tap (gtt_writer_set_tap, under its lock): keeps the definitions a new segment
 * must repeat. */
void rec_ring_tap(rec_ring *r, const gtt_record *rec);
/* In the drain loop: start a new segment when the current one is SECONDS old, and reap a dump
 * that finished (msg gets its line for the user, else ""). 0, or -EIO (a trace write error: the
 * recording stops) or -errno (a segment file could not be created: the recording stops, reason
 * in msg). */
int rec_ring_poll(rec_ring *r, gtt_writer *w, uint64_t now, char *msg, size_t msglen);
/* SIGUSR2: the window ending at now goes to the next dump file. Returns its writer, for the
 * caller to write the symbol archive into, then rec_ring_dump_go copies the window in the
 * background. NULL with a reason in err (a dump still running, or the file could not be made). */
gtt_writer *rec_ring_dump_begin(rec_ring *r, gtt_writer *w, uint64_t now, char *err, size_t errlen);
/* Copy the window into the dump begun, on a thread of its own; rec_ring_poll reaps it. 0 or
 * -errno (then the dump file is removed). */
int rec_ring_dump_go(rec_ring *r);
/* Wait for a SIGUSR2 window still being written and reap it (msg gets its line, else "").
 * 1 when there was one, else 0. */
int rec_ring_dump_wait(rec_ring *r, char *msg, size_t msglen);
/* The end (exit, Ctrl-C, -d; no dump running: rec_ring_dump_wait first): flush w, copy the window ending at end_ns into a new file beside
 * PATH, and return its writer for the archive and the END record; *n_samples gets the
 * samples in it. w itself is left to the caller to close. NULL with a reason in err. */
gtt_writer *rec_ring_final_begin(rec_ring *r, gtt_writer *w, uint64_t end_ns, uint64_t *n_samples,
                                 char *err, size_t errlen);
/* Close the final writer and put the window at PATH (replacing the last segment there) and
 * remove PATH.ring. 0 or -errno with the reason in err (the segments then stay). */
int rec_ring_final_commit(rec_ring *r, gtt_writer *fw, char *err, size_t errlen);
/* What the ring did, for the summary. */
typedef struct rec_ring_stats {
	uint32_t n_segments;     /* segments begun */
	uint32_t n_dumps;        /* windows written on SIGUSR2 */
	uint64_t window_start_ns, window_end_ns; /* of the final window (after final_begin) */
	size_t n_defs;           /* definitions a new segment repeats */
} rec_ring_stats;
void rec_ring_get_stats(const rec_ring *r, rec_ring_stats *st);
/* Wait for a dump still running, close the segment files, free. NULL ok. */
void rec_ring_destroy(rec_ring *r);

/* ---- the window copy (ring_copy.c) ---- */
typedef struct rec_ring_copy_in {
	const uint8_t *const *seg;  /* segment images, oldest first (a cut-off one is read to its last chunk) */
	const size_t *seg_len;
	int n_seg;
	uint64_t cut_ns, end_ns;    /* the window */
	const rec_capture_iv *iv;   /* captured intervals (NULL, 0: always on) */
	size_t n_iv;
	const char *nvtx_name;      /* the capture name, for nvtx capture records; NULL none */
} rec_ring_copy_in;
typedef struct rec_ring_copy_out {
	uint64_t n_samples, n_records;
	uint64_t n_bad;             /* records of the segments that did not read (skipped) */
} rec_ring_copy_out;
/* Write into w what the window [cut_ns, end_ns] of the segments holds: the records of that
 * time (and the GIL state at the cut), each definition once (what existed before the cut with
 * time 0), the meta with start_ns and start_realtime_ns moved to the cut and run_start_ns the
 * recording's start, and capture records of the intervals clipped to the window (pid 0; an
 * edge made by the window has source ring). 0 or -EIO/-ENOMEM. */
int rec_ring_copy_window(const rec_ring_copy_in *in, gtt_writer *w, rec_ring_copy_out *out);

#endif
