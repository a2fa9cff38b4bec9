/* procfs.h — everything the recorder reads from /proc (and /sys; no other file parses them):
 * a process's threads, names and mappings (synthesized into the trace at attach), kernel
 * settings, and a per-thread CPU stats loop.
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
/* The executable of pid (/proc/PID/exe) into buf; 0 or -errno ("" then). */
int rec_procfs_exe(pid_t pid, char *buf, size_t len);
/* 1 when tid is a thread of pid now, else 0. */
int rec_procfs_has_thread(pid_t pid, pid_t tid);
/* The path under which the recorder opens a file the target sees as path (/proc/PID/root/...:
 * the target's mount namespace, e.g. inside a container). */
void rec_procfs_root_path(pid_t pid, const char *path, char *buf, size_t len);

/* The /proc/PID/map_files link of the mapping [start, end): the very file mapped, even deleted
 * or in another mount namespace. */
void rec_procfs_map_file(pid_t pid, uint64_t start, uint64_t end, char *buf, size_t len);
/* A numeric field "KEY:" of /proc/PID/task/TID/status (tid 0: /proc/PID/status; pid 0: this
 * process), decimal or hex; -1 when missing or unreadable. */
long long rec_procfs_status_field(pid_t pid, pid_t tid, const char *key, int hex);
/* kernel.yama.ptrace_scope (0-3), or -1 where Yama is absent. */
int rec_procfs_ptrace_scope(void);

/* One line of /proc/PID/maps. */
typedef struct rec_procfs_map {
	uint64_t start, end, offset, inode;
	int prot;               /* PROT_READ | PROT_WRITE | PROT_EXEC */
	char dev[16];           /* "fd:01" */
	char *path;             /* "" for anonymous memory, "[vdso]", a file path */
} rec_procfs_map;
/* Called for every mapping, in address order; a negative return stops the walk with it. */
typedef int (*rec_procfs_map_fn)(void *ctx, const rec_procfs_map *m);
/* Walk pid's mappings: the number of mappings, the callback's negative return, or -errno
 * (-ESRCH: pid is gone). */
int rec_procfs_maps(pid_t pid, rec_procfs_map_fn fn, void *ctx);

/* The kernel's boot id (/proc/sys/kernel/random/boot_id) into buf; 0 or -errno. */
int rec_procfs_boot_id(char *buf, size_t len);
/* The CLOCK_MONOTONIC offset of pid's time namespace (0: ours) against the host's, in ns
 * (/proc/PID/timens_offsets, which shows the namespace the process's children get: its own
 * after its exec); 0 or -errno (-ENOENT: a kernel without time namespaces, or pid gone). */
int rec_procfs_timens_monotonic(pid_t pid, int64_t *offset_ns);
/* Called with each NAME=VALUE of pid's environment whose NAME is one of keys[0..n_keys). */
typedef void (*rec_procfs_env_fn)(void *ctx, const char *key, const char *value);
/* Read pid's environment as it was at its exec (/proc/PID/environ, its first 256 KiB; a
 * process that changes its own variables later is not seen). The number of keys found, or
 * -errno (-EACCES: another user's process; -ESRCH: gone). */
int rec_procfs_environ(pid_t pid, const char *const *keys, size_t n_keys, rec_procfs_env_fn fn, void *ctx);
/* kernel.perf_event_paranoid into *level; 0 or -errno. */
int rec_procfs_perf_paranoid(int *level);
/* The online CPU numbers (/sys/devices/system/cpu/online; every configured CPU when that
 * cannot be read) into a malloc'ed array; their count, or -ENOMEM. */
int rec_procfs_online_cpus(int **cpus);

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
