/* child.h — the command gt-record launches: forked and held before its exec until the events
 * exist, released, told apart from a failed exec, reaped, its status in the shell's terms.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_CHILD_H
#define REC_CHILD_H

#include <stdint.h>
#include <sys/types.h>

typedef struct rec_child {
	pid_t pid;              /* 0 before the fork */
	int alive;              /* forked and not reaped */
	int wait_status;        /* once reaped */
	int exec_errno;         /* its exec failed with this (ENOENT: not found), else 0 */
	int go_fd, exec_fd;     /* the pipes that hold it and report its exec */
} rec_child;

/* Fork argv[0] (PATH search) with default signal dispositions and an empty signal mask; the
 * child waits for rec_child_release, then calls before_exec(ctx) (may be NULL; it must be
 * fork-safe: the CUDA agent's environment) and execs. 0 or -errno (c->pid 0). */
int rec_child_spawn(rec_child *c, char *const *argv, void (*before_exec)(const void *ctx), const void *ctx);
/* Let it exec: 0 when the exec worked; -errno when it did not (c->exec_errno set: the exec's
 * own error) or when the child could not be told to go (c->exec_errno 0). Closes the pipes. */
int rec_child_release(rec_child *c);
/* Reap it once it has exited, waiting up to wait_ns for that: 1 reaped (or never there), 0
 * still running. */
int rec_child_reap(rec_child *c, uint64_t wait_ns);
/* Close the pipes (a child still held reads EOF and exits 127). */
void rec_child_close(rec_child *c);
/* gt-record's exit status for a wait status: the code, or 128 + the signal. */
int rec_child_exit_code(int wait_status);
/* The recorder's own threads (the calling one and those it creates later) leave the CPU to the
 * command's: SCHED_BATCH, so that the recorder's wake-ups do not preempt a running thread of
 * the command (one holding the GIL, say: every other thread then waits on the recorder). Called
 * after the fork, so that the command keeps its scheduling. GT_RECORD_SCHED=normal keeps the
 * recorder as it was started. 1 set, 0 not (the knob, or the kernel refused). */
int rec_child_sched_recorder(void);

#endif
