/* perf_sampler.h — cpu-clock sampling through perf_event_open: per-CPU ring buffers that follow
 * a launched process tree (inherit) or every thread of a running process, drained into the trace.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno; the open
 * functions return NULL with a one-line reason in err. */
#ifndef REC_PERF_SAMPLER_H
#define REC_PERF_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"

typedef struct rec_perf rec_perf;

typedef struct rec_perf_opts {
	double freq_hz;          /* samples per second of on-CPU time, per thread */
	int dwarf;               /* 1: user regs + stack copy (+ the fp callchain); 0: fp callchains only */
	uint32_t stack_bytes;    /* dwarf: bytes of user stack to copy (rounded to 8, capped at 65528) */
	size_t ring_bytes;       /* data area per CPU, a power of two; 0 = choose from mode and CPUs */
	int user_only;           /* exclude kernel samples/frames (retried automatically on EACCES) */
	int capture;             /* capture control: sampling starts off and is switched by
	                          * rec_perf_sampling; a dummy event per CPU (per task: per thread
	                          * and CPU) keeps the mapping, name, fork and exit records coming */
	int switches;            /* rec_sw_mode (swgate.h): REC_SW_ON records every context switch;
	                          * REC_SW_OFF none; REC_SW_AUTO (0), system-wide: the switches on an
	                          * event per CPU of their own, which rec_perf_switches closes and opens
	                          * again (the switch gate; open at the start; under capture control
	                          * open only while sampling too); per task AUTO is ON */
} rec_perf_opts;

/* Called for every record the sampler writes (and for nothing else), after it was written;
 * pointers inside rec are valid only during the call. */
typedef void (*rec_perf_observer)(void *ctx, const gtt_record *rec);

/* Returns how many leading bytes of a DWARF sample's stack copy (len bytes from the stack
 * pointer up) are worth keeping for pid; called before the sample is written. */
typedef uint32_t (*rec_perf_stack_trim)(void *ctx, uint32_t pid, const uint8_t *stack, uint32_t len);

/* Open disabled events on every CPU that follow pid and all the threads and processes it
 * creates (inherit), enabled when pid calls exec (launch mode). NULL on failure with a
 * one-line reason in err. */
rec_perf *rec_perf_open_launch(pid_t pid, const rec_perf_opts *o, gtt_writer *w,
                               rec_perf_observer obs, void *ctx, char *err, size_t errlen);
/* System-wide: one event per online CPU for every task (pid = -1; no cost on context
 * switches), keeping only the records of root's process tree (perf_tree.h) — root from its
 * first exec when wait_exec (a launched command). Enabled at once. 0, or -errno with a
 * one-line reason in err (-EACCES/-EPERM: needs root, CAP_PERFMON or perf_event_paranoid
 * <= 0). */
int rec_perf_open_system(pid_t root, int wait_exec, const rec_perf_opts *o, gtt_writer *w,
                         rec_perf_observer obs, void *ctx, rec_perf **out, char *err, size_t errlen);
/* Prepare per-CPU ring buffers for attach mode; threads are added with rec_perf_attach_thread. */
rec_perf *rec_perf_open_attach(const rec_perf_opts *o, gtt_writer *w, rec_perf_observer obs,
                               void *ctx, char *err, size_t errlen);
/* Attach mode: sample thread tid (and threads it creates later) on every CPU, enabled at once.
 * 0 on success, 1 when already attached, <0 (-errno) on failure with a reason in err. */
int rec_perf_attach_thread(rec_perf *p, pid_t tid, char *err, size_t errlen);
/* Remember tid's current name (from /proc), so a thread it creates starts with that name. */
void rec_perf_note_name(rec_perf *p, pid_t tid, const char *name);
/* 1 when a FORK record for tid has been seen (so inherit already covers it). */
int rec_perf_saw_thread(const rec_perf *p, pid_t tid);
/* Read every ring buffer up to its head and write the records in time order across CPUs: a
 * record waits for the next call until it is older than this call's start minus a few ms (it
 * could still have older company in flight in another ring); final writes everything.
 * Returns records read, or -EIO (a trace write error). */
int rec_perf_drain(rec_perf *p, int final);
/* The trace time up to which the last (non-final) drain decoded every record: what a count of
 * decoded records covers. 0 before the first. */
uint64_t rec_perf_decoded_to(const rec_perf *p);
/* Install a stack-copy trimmer (NULL: keep what the kernel copied). */
/* Our CLOCK_MONOTONIC minus perf's timestamps (non-zero inside a time namespace, clock.h):
 * records are written on our clock. Before the first drain. */
void rec_perf_set_clock_offset(rec_perf *p, int64_t offset_ns);
void rec_perf_set_stack_trim(rec_perf *p, rec_perf_stack_trim fn, void *ctx);
/* System-wide: a process of the tree whose FORK record was lost (found through /proc when
 * one of its records came): fn writes what the trace needs of it to w at time_ns (trace
 * clock), before that record is decoded. */
typedef void (*rec_perf_found_fn)(void *ctx, gtt_writer *w, pid_t pid, uint64_t time_ns);
void rec_perf_set_found(rec_perf *p, rec_perf_found_fn fn, void *ctx);
/* Stop sampling (the buffers can still be drained). */
void rec_perf_disable(rec_perf *p);
/* o.capture: switch the sampling events on or off (PERF_EVENT_IOC_ENABLE/DISABLE; inherited
 * events follow); the tracking events stay on. Records already in the rings are drained as
 * usual. 0, -EINVAL without o.capture, or the first ioctl's -errno. */
int rec_perf_sampling(rec_perf *p, int on);

/* REC_SW_AUTO, system-wide: 1 when the switch events can be closed and opened again
 * (rec_perf_switches), else 0. */
int rec_perf_switch_gateable(const rec_perf *p);
/* Close (on = 0) or open again (on = 1) the switch events of every CPU (a gateable sampler). The
 * records already in the rings are drained as usual; after an opening each CPU's switch pairs
 * start afresh. *when_ns gets the trace-clock time from which the new state holds whole: for a
 * close, taken after the last event was closed (no switch record is later); for an opening,
 * after the last was opened (every switch from then on is recorded; a few of the CPUs opened
 * first may have written some before). 0, -EINVAL when not gateable, or -errno of the first open
 * that failed (the events opened are closed again: the switches stay off). */
int rec_perf_switches(rec_perf *p, int on, uint64_t *when_ns);
/* Gateable under capture control: the -errno of the switch events' last failed opening at a
 * start of sampling (rec_perf_sampling, which then leaves the gate closed), cleared by the call;
 * 0 when none failed. */
int rec_perf_take_switch_error(rec_perf *p);

typedef struct rec_perf_stats {
	uint64_t samples;        /* samples written */
	uint64_t lost;           /* records the kernel could not write (LOST + LOST_SAMPLES) */
	uint64_t throttled;      /* THROTTLE events */
	uint64_t switches;       /* context switch records */
	uint64_t switch_outs;    /* of them, switch-outs (the tree's context switches) */
	uint64_t sample_bytes;   /* perf bytes of sample records read */
	uint64_t stack_bytes;    /* user stack bytes kept (dwarf) */
	uint64_t foreign;        /* system-wide: records of other processes, dropped unwritten */
	uint64_t rearms;         /* system-wide: sampling events the stall watch restarted */
	size_t ring_bytes;       /* data area per CPU */
	uint32_t n_cpus;
	uint32_t n_fds;
	int user_only;           /* kernel frames excluded (permission) */
	int system;              /* system-wide events (rec_perf_open_system) */
	int kernel_build_ids;    /* MMAP2 carries build-ids */
} rec_perf_stats;
void rec_perf_get_stats(const rec_perf *p, rec_perf_stats *s);
/* The stall watch, system-wide (called from the drain loop; judges windows of REC_PERF_WATCH_NS,
 * or of REC_PERF_WATCH_PERIODS sampling periods where that is longer): a CPU busy for at least
 * REC_PERF_WATCH_MIN samples' worth of time (/proc/stat) that delivered under a tenth of them,
 * with nothing lost or throttled, has its sampling event switched off and on again, and a health
 * note says so. 0, or the writer's error. */
#define REC_PERF_WATCH_NS (250 * GT_NS_PER_MS) /* short: a stall costs up to two windows of samples */
#define REC_PERF_WATCH_PERIODS 40
#define REC_PERF_WATCH_MIN 20
int rec_perf_watch(rec_perf *p, uint64_t now_ns);
/* Write a GTT_HEALTH_CONFIG record describing the buffers (ring bytes, period, stack bytes).
 * 0 or -EIO. */
int rec_perf_write_config(rec_perf *p, uint64_t time_ns);
/* Close every event and unmap the buffers. NULL ok. */
void rec_perf_close(rec_perf *p);

#endif
