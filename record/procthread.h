/* procthread.h — what /proc says about one thread right now, for gt-record --dump: its state,
 * the system call it is blocked in (with its user stack and instruction pointers), its wait
 * channel and kernel stack (when readable: root), its name and CPU times.
 * Return rule: 0 or -errno (-ESRCH when the thread is gone); counts. */
#ifndef REC_PROCTHREAD_H
#define REC_PROCTHREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum { REC_PT_SC_NONE = -1 /* running in user space */, REC_PT_SC_UNKNOWN = -2 /* unreadable */ };

typedef struct rec_pt_state {
	char state;              /* R, S, D, T, t, Z, X, I ... from stat */
	char name[64];           /* comm */
	char wchan[64];          /* "" when unknown or running */
	long syscall;            /* the call it is in (blocked threads), or REC_PT_SC_* */
	uint64_t args[6];
	uint64_t sp, pc;         /* user stack and instruction pointers, when in a call */
	uint64_t utime_ns, stime_ns;
	uint64_t nvcsw, nivcsw;  /* voluntary and involuntary context switches */
} rec_pt_state;

/* Read stat, comm, wchan and syscall of thread tid of pid. 0, or -ESRCH when gone. Fields
 * that were refused stay unknown ("" / REC_PT_SC_UNKNOWN). */
int rec_pt_read(pid_t pid, pid_t tid, rec_pt_state *out);
/* Only the CPU time (utime + stime) of tid, from stat: the cheap read for a live view. 0, or
 * -ESRCH when gone. */
int rec_pt_cpu_ns(pid_t pid, pid_t tid, uint64_t *ns);
/* The kernel functions of tid's kernel stack, innermost first ("futex_wait_queue") into
 * names[0..cap), each at most 64 bytes. Returns the count, or -errno (-EACCES without root). */
int rec_pt_kernel_stack(pid_t pid, pid_t tid, char (*names)[64], int cap);
/* A word for the state letter: "running", "sleeping", "disk sleep", "stopped", "traced",
 * "zombie", "idle", or "state X". */
const char *rec_pt_state_word(char state, char *buf, size_t len);

/* The name of x86-64 system call nr, NULL when unknown (syscall_names.c). */
const char *rec_syscall_name(long nr);

#endif
