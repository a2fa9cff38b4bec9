/* gt_counters.h — emit counters (queue depths, watermarks, any number that changes over time)
 * onto a groundtruth trace's clock from a C or C++ program: header-only, libc only.
 *
 * Under `gt-record -- CMD`, the environment holds GT_COUNTERS_DIR; each process appends
 * text lines to DIR/counters.PID (one write(2) per line, O_APPEND: atomic between threads and
 * processes), and gt-record turns them into counter records (docs/COUNTERS.md has the line
 * format). Without GT_COUNTERS_DIR every call is a no-op costing one load and a branch.
 * Times are CLOCK_MONOTONIC nanoseconds, the trace clock. Return: nothing; a failed write is
 * dropped (a profiler must never break the program it watches). */
#ifndef GT_COUNTERS_H
#define GT_COUNTERS_H

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Per translation unit: 0 not yet looked, 1 off (no GT_COUNTERS_DIR), 2 on (fd open). A forked
 * child starts over (pthread_atfork), so each process writes its own counters.PID. */
static int gt_counters_state_;
static int gt_counters_fd_ = -1;
static pthread_mutex_t gt_counters_mu_ = PTHREAD_MUTEX_INITIALIZER;

static void gt_counters_atfork_child_(void)
{
	if (gt_counters_fd_ >= 0)
		close(gt_counters_fd_);
	gt_counters_fd_ = -1;
	gt_counters_state_ = 0;
	pthread_mutex_init(&gt_counters_mu_, NULL);
}

static inline int gt_counters_fd(void)
{
	int st = __atomic_load_n(&gt_counters_state_, __ATOMIC_ACQUIRE);
	if (st == 2)
		return gt_counters_fd_;
	if (st == 1)
		return -1;
	pthread_mutex_lock(&gt_counters_mu_);
	if (gt_counters_state_ == 0) {
		const char *dir = getenv("GT_COUNTERS_DIR");
		char path[4096];
		int fd = -1;
		if (dir && *dir &&
		    snprintf(path, sizeof(path), "%s/counters.%ld", dir, (long)getpid()) < (int)sizeof(path))
			fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		static int registered;
		if (fd >= 0 && !registered) {
			registered = 1;
			pthread_atfork(NULL, NULL, gt_counters_atfork_child_);
		}
		gt_counters_fd_ = fd;
		__atomic_store_n(&gt_counters_state_, fd >= 0 ? 2 : 1, __ATOMIC_RELEASE);
	}
	int fd = gt_counters_fd_;
	pthread_mutex_unlock(&gt_counters_mu_);
	return fd;
}

/* Append one line. Names are 1..128 bytes of [A-Za-z0-9_.:/-] (others are refused by
 * gt-record and counted as bad lines). */
static inline void gt_counters_line_(const char *line, int n)
{
	int fd = gt_counters_fd();
	if (fd >= 0 && n > 0)
		(void)!write(fd, line, (size_t)n);
}

/* The value of counter `name` at time t_ns (CLOCK_MONOTONIC). */
static inline void gt_counter_at(const char *name, uint64_t t_ns, double value)
{
	if (__atomic_load_n(&gt_counters_state_, __ATOMIC_RELAXED) == 1)
		return;
	char line[256];
	int n = snprintf(line, sizeof(line), "c %llu %s %.17g\n", (unsigned long long)t_ns, name, value);
	if (n > 0 && n < (int)sizeof(line))
		gt_counters_line_(line, n);
}

/* The value of counter `name` now. */
static inline void gt_counter(const char *name, double value)
{
	if (__atomic_load_n(&gt_counters_state_, __ATOMIC_RELAXED) == 1)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	gt_counter_at(name, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, value);
}

/* A threshold that belongs to counter `name` (a queue's min_ready watermark): drawn as a line
 * on the counter's timeline row; the report gives the time the counter spent at or below it. */
static inline void gt_counter_watermark(const char *name, double value)
{
	if (__atomic_load_n(&gt_counters_state_, __ATOMIC_RELAXED) == 1)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char line[256];
	int n = snprintf(line, sizeof(line), "w %llu %s %.17g\n",
	                 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec, name, value);
	if (n > 0 && n < (int)sizeof(line))
		gt_counters_line_(line, n);
}

#endif
