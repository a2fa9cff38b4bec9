/* procfs.h — what the recorder reads from /proc: a process's threads, names and executable
 * mappings (synthesized into the trace at attach), and a per-thread CPU stats loop.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PROCFS_H
#define REC_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"

/* Called for each record the synthesis writes, after writing it (like rec_perf_observer). */
typedef void (*rec_procfs_observer)(void *ctx, const gtt_record *rec);

/* Thread ids of pid (from /proc/PID/task) into a malloc'ed array; returns the count, or -errno
 * (-ESRCH when the process is gone). */
int rec_procfs_tids(pid_t pid, pid_t **tids);
/* Command line of pid, arguments joined by spaces ("" when unreadable). */
void rec_procfs_cmdline(pid_t pid, char *buf, size_t len);
/* Name (comm) of thread tid of pid; 0 or -errno. */
int rec_procfs_comm(pid_t pid, pid_t tid, char *buf, size_t len);
/* State letter of pid from /proc/PID/stat, and its parent; 0 when gone. */
char rec_procfs_state(pid_t pid, pid_t *ppid);

/* Write what an attach needs to know about a running pid at time_ns: a PROCESS start record
 * (command line), a THREAD start record per thread (with its name), and a MAPPING record per
 * executable mapping with its build-id (read through /proc/PID/map_files when possible).
 * Returns the number of mappings, or -errno when pid cannot be read. */
int rec_procfs_synth(pid_t pid, uint64_t time_ns, gtt_writer *w, rec_procfs_observer obs, void *ctx);

/* The per-thread CPU loop: a background thread that, on an absolute schedule of hz, reads
 * /proc/PID/task/TID/stat (and status once a second) for every pid in its set and writes
 * THREAD_CPU records when a thread's numbers change, THREAD name records on renames, and its
 * schedule as TICKS/LAG_WINDOW (source GTT_SRC_PROCSTAT). */
typedef struct rec_procstat rec_procstat;
/* Start the loop. NULL with a reason in err on failure. */
rec_procstat *rec_procstat_start(gtt_writer *w, double hz, char *err, size_t errlen);
/* Add / remove a process to watch (thread-safe). */
void rec_procstat_add(rec_procstat *s, pid_t pid);
void rec_procstat_remove(rec_procstat *s, pid_t pid);
/* Threads currently watched, and the loop's worst lateness so far (for the status line). */
uint32_t rec_procstat_threads(rec_procstat *s);
uint64_t rec_procstat_late_max_ns(rec_procstat *s);
/* Take a last reading of every thread, finish the schedule, stop the thread, free. NULL ok. */
void rec_procstat_stop(rec_procstat *s);

#endif
