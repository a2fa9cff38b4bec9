/* tracestop.c — brief, one-thread-at-a-time ptrace stops (SEIZE, INTERRUPT, GETREGSET, DETACH)
 * and the diagnosis of a refused ptrace. */
#include "tracestop.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <sys/user.h>
#endif

#include "gtt.h"
#include "procfs.h"

#define MAX_LATE 256
#define CAP_SYS_PTRACE_BIT 19

struct rec_ts {
	pid_t late[MAX_LATE];    /* seized, interrupted, not yet stopped */
	int n_late;
};

rec_ts *rec_ts_create(void)
{
	return calloc(1, sizeof(rec_ts));
}

static void nap_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };
	nanosleep(&ts, NULL);
}

/* Wait up to timeout_ms for tid's next stop. 1 stopped (*sig: a signal to re-inject, 0 for
 * the interrupt or a group stop), 0 not yet, -1 gone. */
static int wait_stop(pid_t tid, unsigned timeout_ms, int *sig)
{
	uint64_t until = gtt_now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned nap = 20;

	*sig = 0;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);

		if (r == tid) {
			if (WIFEXITED(st) || WIFSIGNALED(st))
				return -1;
			if (WIFSTOPPED(st)) {
				/* PTRACE_EVENT_STOP: our interrupt, or a group stop (kept at detach);
				 * otherwise a signal arrived first: it is delivered at detach */
				if ((st >> 16) != PTRACE_EVENT_STOP)
					*sig = WSTOPSIG(st);
				return 1;
			}
			continue;
		}
		if (r < 0 && errno != EINTR)
			return -1;
		if (gtt_now_ns() >= until)
			return 0;
		nap_us(nap);
		if (nap < 1000)
			nap *= 2;
	}
}

#if defined(__x86_64__)
static int get_regs(pid_t tid, rec_ts_regs *out)
{
	struct user_regs_struct u;
	struct iovec iov = { &u, sizeof(u) };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) < 0)
		return -1;
	out->ax = u.rax; out->bx = u.rbx; out->cx = u.rcx; out->dx = u.rdx;
	out->si = u.rsi; out->di = u.rdi; out->bp = u.rbp; out->sp = u.rsp; out->ip = u.rip;
	out->r8 = u.r8; out->r9 = u.r9; out->r10 = u.r10; out->r11 = u.r11;
	out->r12 = u.r12; out->r13 = u.r13; out->r14 = u.r14; out->r15 = u.r15;
	out->orig_ax = u.orig_rax;
	out->fs_base = u.fs_base;
	out->flags = u.eflags;
	return 0;
}
#endif

int rec_ts_stop_thread(rec_ts *t, pid_t tid, unsigned timeout_ms, rec_ts_fn fn, void *ctx, int *err)
{
#if defined(__x86_64__)
	rec_ts_regs regs;
	int sig = 0, rc;

	*err = 0;
	/* no PTRACE_O_EXITKILL: if we die, the thread must live on */
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		*err = errno;
		if (errno == ESRCH)
			return REC_TS_GONE;
		if (errno == EPERM)
			return rec_ts_tracer_of(tid, tid) > 0 && rec_ts_tracer_of(tid, tid) != getpid() ? REC_TS_TRACED
			                                                                                  : REC_TS_PERM;
		return REC_TS_ERROR;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
		/* seized but not interruptible: it is exiting; the kernel drops the link */
		*err = errno;
		return REC_TS_GONE;
	}
	rc = wait_stop(tid, timeout_ms, &sig);
	if (rc < 0)
		return REC_TS_GONE;
	if (rc == 0) {
		if (t && t->n_late < MAX_LATE)
			t->late[t->n_late++] = tid;
		return REC_TS_TIMEOUT;
	}
	rc = REC_TS_OK;
	if (get_regs(tid, &regs) < 0) {
		*err = errno;
		rc = errno == ESRCH ? REC_TS_GONE : REC_TS_ERROR;
	} else if (fn) {
		fn(ctx, tid, &regs);
	}
	/* detach at once; a signal that arrived in between goes in with it */
	if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)sig) < 0 && errno != ESRCH && rc == REC_TS_OK) {
		*err = errno;
		rc = REC_TS_ERROR;
	}
	return rc;
#else
	(void)t;
	(void)tid;
	(void)timeout_ms;
	(void)fn;
	(void)ctx;
	*err = ENOSYS;
	return REC_TS_UNSUPPORTED;
#endif
}

int rec_ts_release_late(rec_ts *t, unsigned timeout_ms)
{
	uint64_t until = gtt_now_ns() + (uint64_t)timeout_ms * 1000000u;
	int i, k;

	if (!t)
		return 0;
	do {
		for (i = 0, k = 0; i < t->n_late; i++) {
			int sig = 0, rc = wait_stop(t->late[i], 0, &sig);
			if (rc > 0)
				ptrace(PTRACE_DETACH, t->late[i], NULL, (void *)(uintptr_t)sig);
			if (rc == 0)
				t->late[k++] = t->late[i];
		}
		t->n_late = k;
		if (k && gtt_now_ns() < until)
			nap_us(1000);
	} while (k && gtt_now_ns() < until);
	return t->n_late;
}

void rec_ts_destroy(rec_ts *t)
{
	rec_ts_release_late(t, 0);
	free(t);
}

/* ---- why ptrace was refused ---- */

pid_t rec_ts_tracer_of(pid_t pid, pid_t tid)
{
	long long v = rec_procfs_status_field(pid, tid, "TracerPid", 0);

	return v > 0 ? (pid_t)v : 0;
}

static int is_ancestor_of(pid_t pid)
{
	pid_t me = getpid();
	int depth;

	for (depth = 0; depth < 64 && pid > 1; depth++) {
		long long pp = rec_procfs_status_field(pid, 0, "PPid", 0);
		if (pp == me)
			return 1;
		if (pp <= 0)
			return 0;
		pid = (pid_t)pp;
	}
	return 0;
}

void rec_ts_explain(const rec_ts_facts *f, char *buf, size_t len)
{
	if (f->tracer > 0 && f->tracer != f->self) {
		snprintf(buf, len, "thread %d of process %d is already traced by process %d (%s): a thread has one "
		         "tracer at a time; detach the debugger or strace first", (int)f->tid, (int)f->pid,
		         (int)f->tracer, f->tracer_comm[0] ? f->tracer_comm : "?");
	} else if (f->yama_scope == 3) {
		snprintf(buf, len, "ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3, until reboot): "
		         "--dump cannot stop threads");
	} else if (f->yama_scope == 2 && !f->have_cap) {
		snprintf(buf, len, "ptrace needs CAP_SYS_PTRACE here (kernel.yama.ptrace_scope = 2): run gt-record as root");
	} else if (f->yama_scope == 1 && !f->have_cap && !f->is_ancestor) {
		snprintf(buf, len, "ptrace of a process that is not our child is refused (kernel.yama.ptrace_scope = 1): "
		         "run gt-record as root, or allow it with: sudo sysctl kernel.yama.ptrace_scope=0");
	} else if (!f->have_cap && f->target_uid >= 0 && (uid_t)f->target_uid != f->uid) {
		snprintf(buf, len, "process %d belongs to uid %lld: run gt-record as that user or as root", (int)f->pid,
		         f->target_uid);
	} else if (!f->have_cap && f->uid == 0) {
		snprintf(buf, len, "ptrace refused: this root has no CAP_SYS_PTRACE (a container?): add it "
		         "(docker run --cap-add=SYS_PTRACE; Kubernetes securityContext.capabilities.add: [\"SYS_PTRACE\"])");
	} else {
		snprintf(buf, len, "ptrace of process %d refused (not dumpable, or a seccomp/LSM policy): run gt-record as "
		         "root with CAP_SYS_PTRACE (containers: --cap-add=SYS_PTRACE)", (int)f->pid);
	}
}

void rec_ts_why_refused(pid_t pid, pid_t tid, char *buf, size_t len)
{
	long long caps = rec_procfs_status_field(0, 0, "CapEff", 1);
	rec_ts_facts f = { .pid = pid, .tid = tid, .self = getpid(), .uid = getuid() };

	f.have_cap = caps >= 0 && (caps >> CAP_SYS_PTRACE_BIT & 1);
	f.tracer = rec_ts_tracer_of(pid, tid);
	if (f.tracer > 0 && rec_procfs_comm(f.tracer, f.tracer, f.tracer_comm, sizeof(f.tracer_comm)) < 0)
		f.tracer_comm[0] = 0;
	f.yama_scope = rec_procfs_ptrace_scope();
	f.is_ancestor = f.yama_scope == 1 && is_ancestor_of(pid);
	f.target_uid = rec_procfs_status_field(pid, 0, "Uid", 0);
	rec_ts_explain(&f, buf, len);
}
