/* session_priv.h — what session.c and session_capture.c share: the recording's state and the
 * session's ways of speaking (the only record/ files besides main.c that print). */
#ifndef REC_SESSION_PRIV_H
#define REC_SESSION_PRIV_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "archive.h"
#include "capture.h"
#include "clock.h"
#include "child.h"
#include "counters.h"
#include "cuda_inject.h"
#include "gtt.h"
#include "outfile.h"
#include "perf_sampler.h"
#include "procid.h"
#include "procfs.h"
#include "pyreader.h"
#include "ring.h"
#include "session.h"
#include "swgate.h"
#include "ticker.h"
#include "top.h"

typedef struct sess {
	const rec_opts *o;
	gtt_writer *w;
	rec_perf *perf;
	rec_archive *arch;
	rec_procstat *ps;
	rec_cuda *cuda;
	rec_counters *counters;  /* launch mode: GT_COUNTERS_DIR for the command (docs/COUNTERS.md) */
	rec_py *py;
	rec_ticker *drain;
	rec_top *top;            /* --top, NULL without */
	pid_t target;
	int launch;
	rec_child child;        /* launch mode: the command */
	uint64_t start_ns;
	int ended;              /* the recording ended before the drain loop (attach: target gone) */
	int discard;            /* the recording never began: the file gt-record created is removed */
	rec_out *out;           /* the trace file */
	char out_note[PATH_MAX * 2 + 64]; /* what became of an existing output, or why it could not */
	uint32_t end_reason;
	int write_rc;           /* the first trace write error (-EIO), 0 when none */
	int tty;
	uint64_t status_ns, status_samples;
	uint64_t py_failed;     /* --python=on and no interpreter found */
	char py_note[1024];
	/* capture control (session_capture.c) */
	rec_capture *cap;       /* NULL without --delay, --capture-range, --ring, --max-size */
	rec_ring *ring;         /* --ring */
	char ring_note[PATH_MAX + 128];
	uint64_t merge_ns;      /* nvtx capture: when the CUDA side files were merged last */
	uint64_t end_samples;   /* the END record's sample count when it is not the sampler's (a ring window) */
	int have_end_samples;
	int capture_ended;      /* --max-size reached: the command runs on, unrecorded */
	uint64_t size_last;     /* --max-size: the trace's size at the last drain */
	/* a job's clock and identities (session_job.c) */
	rec_clock_offset clk;   /* perf's clock against ours */
	uint64_t clock_next_ns; /* when the next periodic clock pair is due */
	rec_procid *ids;        /* rank/role of each process (NULL: out of memory, none written) */
	/* the switch gate (session_gate.c) */
	rec_swgate *gate;       /* --switch-events=auto on a gateable sampler, else NULL */
	int gate_said;          /* its first close was said on stderr */
	uint32_t n_found;       /* processes of the tree found through /proc after lost records */
} sess;

/* One line on stderr, "gt-record: ..." */
void rec_sess_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A meta record. */
void rec_sess_meta(sess *s, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A health note from source. */
void rec_sess_note(sess *s, uint32_t source, const char *text);

/* ---- capture control (session_capture.c) ---- */
/* After the output is open, before any record: the capture state machine and the ring, and
 * the writer tap that feeds them. 0, or GT_EXIT_BROKEN with one line said. */
int rec_sess_capture_open(sess *s);
/* The meta key `capture` (nothing without capture control). */
void rec_sess_capture_meta(sess *s);
/* Launch mode, before the command starts: --capture-range=nvtx needs the CUDA agent. 0, or
 * GT_EXIT_BROKEN with one line said. */
int rec_sess_capture_need_agent(sess *s, const char *why);
/* --capture-range=nvtx:NAME: hand the rule to the agent (launch: the child's environment; attach:
 * the control file), so it records only inside those ranges and reports them. 0, or
 * GT_EXIT_BROKEN with one line said. */
int rec_sess_capture_agent_rule(sess *s);
/* The events exist and the drain schedule is made: write the initial capture state, and when
 * sampling starts off, close the ticker gate (the side loops start paused) and pause the
 * drain schedule's accounting. Before the side loops start. */
void rec_sess_capture_begin(sess *s);
/* The drain loop's wait: the schedule while sampling is on, a plain sleep of one period while
 * it is off (its ticks are not intended then). Returns now. */
uint64_t rec_sess_capture_wait(sess *s);
/* One step of the drain loop: switch sampling as the rule says, the ring's rotation and
 * SIGUSR2 windows, nvtx merges. 1 when the recording must end (--max-size; end_reason set),
 * -1 on a write error (write_rc set), else 0. */
int rec_sess_capture_step(sess *s, uint64_t now);
/* Before the side loops are stopped: open the gate (a paused loop must see its stop). */
void rec_sess_capture_release(sess *s);
/* The ring's end: the window of the last SECONDS goes into a new writer that replaces s->w
 * (the segment writer is closed); the archive and END follow into it. 0, or -1 with one line
 * said (the segments stay, s->w unchanged). */
int rec_sess_capture_ring_final(sess *s, uint64_t end_ns);
/* After the last flush: put the ring's window at -o. */
void rec_sess_capture_ring_commit(sess *s);
/* The summary's capture line (nothing without capture control). */
void rec_sess_capture_summary(sess *s, uint64_t end_ns);
/* Free the capture state (after the writer is closed). */
void rec_sess_capture_close(sess *s);

/* ---- the switch gate (session_gate.c) ---- */
/* After the sampler is open: the meta key switch_events, and with --switch-events=auto on a
 * system-wide sampler without capture control the gate (open) and its first record. */
void rec_sess_gate_start(sess *s);
/* After each drain: the gate's decision, the switch events closed or opened, its record. */
void rec_sess_gate_step(sess *s, uint64_t now);
/* Under capture control, after sampling started: the switch events' opening failed, so the
 * gate is closed for good, with a `switch_gate` record (reason failed) and a note. */
void rec_sess_gate_sampling(sess *s, uint64_t now);
/* The summary's line when the gate closed at least once. */
void rec_sess_gate_summary(sess *s, uint64_t end_ns);
/* Free the gate. */
void rec_sess_gate_close(sess *s);

/* ---- a job's clock and identities (session_job.c) ---- */
/* In write_meta: measure perf's clock against ours, write the clock meta keys and the first
 * clock pair (tag 17). */
void rec_sess_job_start(sess *s);
/* After the sampler is open: records on our clock. */
void rec_sess_job_sampler(sess *s);
/* The CUDA merge learns each agent process's clock from the identities (time namespaces). */
void rec_sess_job_cuda(sess *s);
/* The drain loop: a clock pair every CLOCK_PERIOD_NS. */
void rec_sess_job_step(sess *s, uint64_t now);
/* Before the END: the last clock pair; frees the identities. */
void rec_sess_job_finish(sess *s);
/* From the observer: process records bring identities. */
void rec_sess_job_observe(sess *s, const gtt_record *r);

#endif
