/* tracestop.h — a brief ptrace stop of ONE thread (PTRACE_SEIZE + PTRACE_INTERRUPT, registers
 * through PTRACE_GETREGSET, detach at once): the only user of ptrace in gt-record (--dump).
 * SEIZE queues no SIGSTOP, so if gt-record dies at any point the kernel detaches the thread
 * and it runs on (a process the user had stopped stays stopped). Return rule: REC_TS_* (0 ok). */
#ifndef REC_TRACESTOP_H
#define REC_TRACESTOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The registers of a stopped thread (x86-64 user_regs_struct fields). */
typedef struct rec_ts_regs {
	uint64_t ax, bx, cx, dx, si, di, bp, sp, ip;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t orig_ax;        /* the system call number while in one, else -1 */
	uint64_t fs_base;        /* the thread pointer: glibc's struct pthread, i.e. its pthread_t */
	uint64_t flags;
} rec_ts_regs;

enum {
	REC_TS_OK = 0,
	REC_TS_GONE = 1,         /* the thread exited (or never was) */
	REC_TS_PERM = 2,         /* ptrace refused (EPERM): see rec_ts_why_refused() */
	REC_TS_TRACED = 3,       /* another tracer (a debugger, strace) holds the thread */
	REC_TS_TIMEOUT = 4,      /* no stop within the time given (uninterruptible sleep); the thread is
	                          * left seized but running: rec_ts_release_late() detaches it */
	REC_TS_ERROR = 5,        /* any other failure (errno kept) */
	REC_TS_UNSUPPORTED = 6,  /* not x86-64 */
};

/* Called while the thread is stopped; must be quick (the thread is frozen meanwhile). */
typedef void (*rec_ts_fn)(void *ctx, pid_t tid, const rec_ts_regs *regs);

/* A tracer: remembers threads that did not stop in time, to release them later. */
typedef struct rec_ts rec_ts;
/* NULL on ENOMEM. */
rec_ts *rec_ts_create(void);
/* Seize tid, interrupt it, wait up to timeout_ms for the stop, read its registers, call fn,
 * detach (re-injecting a signal that arrived meanwhile). Never leaves the thread stopped:
 * a thread that does not stop in time stays seized but running, and is released by
 * rec_ts_release_late(), rec_ts_destroy(), or the kernel when this process exits.
 * *err gets errno on REC_TS_ERROR/REC_TS_PERM. */
int rec_ts_stop_thread(rec_ts *t, pid_t tid, unsigned timeout_ms, rec_ts_fn fn, void *ctx, int *err);
/* Threads left seized after REC_TS_TIMEOUT: wait up to timeout_ms for their stops and detach
 * them. Returns how many are still seized. */
int rec_ts_release_late(rec_ts *t, unsigned timeout_ms);
/* Release what can be released (without waiting) and free. NULL ok. */
void rec_ts_destroy(rec_ts *t);

/* Why ptrace of pid was refused, as one line with the fix (yama ptrace_scope, another
 * tracer, CAP_SYS_PTRACE in a container, another user). tracer_pid is the TracerPid of the
 * refusing thread, or 0. */
void rec_ts_why_refused(pid_t pid, pid_t tid, char *buf, size_t len);
/* What rec_ts_why_refused found out, and the sentence it makes of it (apart, so that every branch
 * is tested, Yama's included, on machines without Yama). */
typedef struct rec_ts_facts {
	pid_t pid, tid, self;
	pid_t tracer;            /* TracerPid of the thread, 0 when none */
	char tracer_comm[64];
	int yama_scope;          /* kernel.yama.ptrace_scope, -1 without Yama */
	int have_cap;            /* CAP_SYS_PTRACE in our effective set */
	int is_ancestor;         /* we are an ancestor of pid (what Yama's scope 1 allows) */
	long long target_uid;    /* pid's real uid, -1 unknown */
	uid_t uid;               /* ours */
} rec_ts_facts;
void rec_ts_explain(const rec_ts_facts *f, char *buf, size_t len);
/* TracerPid of a thread of pid, 0 when none or unreadable. */
pid_t rec_ts_tracer_of(pid_t pid, pid_t tid);

#endif
