/* pyproc.h — one process as the Python reader sees it: its interpreter (pydiscover.c), its
 * code cache (pycode.c), the stack pass that reads every thread's frames from one snapshot and
 * checks them in one batched read, its GIL state (shared by the stack pass and the GIL poll),
 * its thread names (pythreads.c) and its counters. pyreader.c's threads drive every process
 * of a recording through this; nothing else uses it.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PYPROC_H
#define REC_PYPROC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "procmem.h"
#include "pycode.h"
#include "pydiscover.h"
#include "pyreader.h"

/* Where a process's records go (shared by every process of a reader). */
typedef struct rec_pysink {
	gtt_writer *w;                                   /* may be NULL */
	void (*observe)(void *ctx, const gtt_record *r); /* may be NULL */
	void *observe_ctx;
	/* called (from the stack loop) when a process's GIL state starts moving: the GIL poll
	 * should wake up */
	void (*gil_wake)(void *ctx);
	void *wake_ctx;
} rec_pysink;

typedef struct rec_pyproc rec_pyproc;

/* A process to read: root is the recorded process itself (it may still have to exec: it is
 * looked at until the recording ends), else a child of the tree (looked at for a short while
 * after its exec). tcb_tid_off: 3.10 thread ids (see pyreader.c), -1 unknown. NULL on ENOMEM. */
rec_pyproc *rec_pyproc_create(pid_t pid, int root, const rec_pysink *sink, int32_t tcb_tid_off);
/* Free. NULL ok. */
void rec_pyproc_destroy(rec_pyproc *p);

/* ---- discovery (pyreader.c's look thread) ---- */

/* A process forked without exec (at fork_ns) runs its parent's interpreter at the same
 * addresses: take its layout instead of looking (parent found). */
void rec_pyproc_inherit(rec_pyproc *p, const rec_pyproc *parent, uint64_t fork_ns);
/* The time the image this process is read in was known to be the one (its interpreter was
 * found then, or inherited at the fork); 0 while nothing was found. An exec after that time
 * makes what was found stale. */
uint64_t rec_pyproc_image_ns(const rec_pyproc *p);
/* The command line this process exec'd (the PROCESS record's): what its name says is the
 * reason given if it is gone before any look saw its interpreter. */
void rec_pyproc_exec_cmd(rec_pyproc *p, const char *cmdline);
/* One look for the interpreter at now: 1 found and initialized (state READING; records say
 * what was found), 0 not yet (look again at rec_pyproc_next_look()), -1 final (state says
 * why: NOT_FOUND, REFUSED, EXITED_EARLY). */
int rec_pyproc_look(rec_pyproc *p, uint64_t now_ns);
uint64_t rec_pyproc_next_look(const rec_pyproc *p);
/* A new mapping of the process was recorded (its perf MMAP2 record): the next look reads its
 * mappings again. Past the first seconds of fast looks, a process that was not Python is looked
 * at again only then (or every QUIET_LOOK_NS): reading /proc/PID/maps four times a second was
 * a fifth of the recorder's CPU on a non-Python target. Any thread. */
void rec_pyproc_maps_moved(rec_pyproc *p);

/* ---- the stack loop ---- */

/* One stack pass over every thread (PY_STACK records, py_thread names now and then). 0, or
 * -ESRCH when the process is gone. */
int rec_pyproc_pass(rec_pyproc *p);
/* A READ_ERRORS health record for the second that ended (force: whatever has passed). */
void rec_pyproc_health(rec_pyproc *p, uint64_t now_ns, int force);
/* Time the last pass took (ns), for the loop's real-time budget. */
uint64_t rec_pyproc_last_pass_ns(const rec_pyproc *p);

/* ---- the GIL poll ---- */

/* 1 while the GIL state moves and the poll should read it at its full rate. */
int rec_pyproc_gil_fast(const rec_pyproc *p);
/* 1 while the GIL changes hands faster than the poll reads it (at least 24 of the last 32
 * polls saw a change): the poll cannot tell holders apart between its reads, whatever its
 * rate, and pyreader.c slows it down. */
int rec_pyproc_gil_churn(const rec_pyproc *p);
/* One poll of the GIL at now (a GIL record on change). 0, or -ESRCH when the process is gone.
 * After a stretch without any change the process leaves the poll (rec_pyproc_gil_fast() 0):
 * the stack pass watches its GIL from then on and hands it back on the first change. */
int rec_pyproc_gil_poll(rec_pyproc *p, uint64_t now_ns);

/* ---- state ---- */

pid_t rec_pyproc_pid(const rec_pyproc *p);
rec_py_state rec_pyproc_state(const rec_pyproc *p);
/* 1 once the process was seen gone; rec_pyproc_ended(): 1 once ended (no more reads). */
int rec_pyproc_gone(const rec_pyproc *p);
int rec_pyproc_ended(const rec_pyproc *p);
/* Mark the process as ended (exited, exec'd into another image, or past the cap): no more
 * reads. State READING stays READING (it was read); a search cut short ends as NOT_FOUND or
 * REFUSED. */
void rec_pyproc_end(rec_pyproc *p, int gone);
/* After rec_pyproc_end(): free what reading needed, keeping counters and outcome.
 * rec_pyproc_release() by the thread that ended it, when no stack pass or look can run on it;
 * rec_pyproc_release_gil() (the GIL poll's reader) where the poll cannot be polling it (with
 * pyreader.c's table lock held). Not ended: nothing. */
void rec_pyproc_release(rec_pyproc *p);
void rec_pyproc_release_gil(rec_pyproc *p);
/* One-line status ("python 3.12.1: 1234 stacks ..."), as rec_py_status() describes. */
void rec_pyproc_status(rec_pyproc *p, char *buf, size_t len);
/* Counters for the reader's summary. */
typedef struct rec_pyproc_stats {
	uint64_t stacks, frames, failed, torn, passes, syscalls, reads, read_ns;
	uint64_t polls, gil_changes, names;
} rec_pyproc_stats;
void rec_pyproc_stats_get(const rec_pyproc *p, rec_pyproc_stats *s);
/* The end: write the NOTE that says how reading this process went (text as rec_py_result's). */
void rec_pyproc_finish(rec_pyproc *p, char *text, size_t len);

#endif
