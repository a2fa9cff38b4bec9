/* pyreader.c — the Python reader of a recording: every process of the recorded tree that runs
 * CPython, served by three threads whatever their number (a look thread finds interpreters, a
 * stack loop and a GIL poll on absolute schedules read them); process_vm_readv only, the
 * targets never stop. pyproc.c reads one process; pydiscover.c finds interpreters. */
#include "pyreader.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gt_util.h"
#include "procfs.h"
#include "procmem.h"
#include "pydiscover.h"
#include "pyproc.h"
#include "ticker.h"

#define IDLE_WAIT_NS (100 * GT_NS_PER_MS) /* the look thread and the idle GIL poll re-check this often */
#define CHURN_STRIDE 8 /* the GIL poll reads every 8th tick while every GIL it reads churns */

struct rec_py {
	pid_t pid;              /* the recorded process */
	rec_pysink sink;
	rec_py_opts opts;
	pthread_t look_thr, stack_thr, gil_thr;
	int have_look, have_stack, have_gil;
	atomic_int stop;

	/* procs[]: the processes being looked at or read, and those found not to be Python (a
	 * child they fork is not either) until they exit; done[]: the ones whose reading or search
	 * ended with something to say (their notes are written at the end). Each holds only its
	 * counters and outcome once retired. The lock guards both arrays and want_end[], and wakes
	 * the look thread and the poll. */
	pthread_mutex_t lock;
	pthread_cond_t look_cv, gil_cv, stack_cv;
	rec_pyproc **procs;
	uint8_t *want_end;      /* 1: exited, 2: exec'd into a new image (per procs[] entry) */
	size_t n_procs, cap_procs, cap_want;
	rec_pyproc **done;
	size_t n_done, cap_done;
	rec_pyproc *root;       /* the recorded process's first entry (the outcome) */
	uint64_t n_capped;      /* processes not read: over REC_PY_MAX_PROCS */
	int gil_wake;

	int32_t tcb_tid_off;    /* 3.10: offset of the tid in glibc's struct pthread, -1 unknown */
	int32_t tcb_cands[64];  /* candidates from the starting thread */
	int n_tcb_cands;
	int calibrated;         /* the look thread has set tcb_tid_off (lock, look_cv) */
	int gil_rt, stack_rt;   /* the loops run SCHED_FIFO */
	atomic_uint_fast64_t stack_cpu_ns, gil_cpu_ns, look_cpu_ns;
};

/* ---- 3.10 thread ids ---- */

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Offsets (4-byte steps) where this thread's glibc struct pthread holds its tid. The struct
 * may end right at the top of a thread stack mapping, so it is read with process_vm_readv on
 * ourselves (a fault is an error, never a crash), first 2 KiB, then 1 KiB. */
static int tcb_candidates(int32_t *out, int cap)
{
	uint64_t self = (uint64_t)(uintptr_t)pthread_self();
	rec_procmem *m = rec_procmem_open(getpid());
	uint8_t buf[2048];
	size_t len = sizeof(buf);
	pid_t tid = my_tid();
	int n = 0;
	int32_t off;

	if (!m)
		return 0;
	if (rec_procmem_read(m, self, buf, len) < 0) {
		len = 1024;
		if (rec_procmem_read(m, self, buf, len) < 0)
			len = 0;
	}
	rec_procmem_close(m);
	for (off = 16; off + 4 <= (int32_t)len && n < cap; off += 4) {
		pid_t v;
		memcpy(&v, buf + off, sizeof(v));
		if (v == tid)
			out[n++] = off;
	}
	return n;
}

/* Pick the TCB tid offset for 3.10 targets: the candidates of the thread that started us and
 * of this thread must agree (glibc puts the tid at one fixed offset). */
static void tcb_calibrate(rec_py *p)
{
	int32_t mine[64];
	int n = tcb_candidates(mine, 64), i, j;

	p->tcb_tid_off = -1;
	for (i = 0; i < p->n_tcb_cands && p->tcb_tid_off < 0; i++)
		for (j = 0; j < n; j++)
			if (p->tcb_cands[i] == mine[j]) {
				p->tcb_tid_off = mine[j];
				break;
			}
}

static void *cands_thread(void *arg)
{
	rec_py *p = arg;

	tcb_calibrate(p);
	return NULL;
}

int32_t rec_py_tcb_tid_offset(void)
{
	rec_py tmp;
	pthread_t t;

	memset(&tmp, 0, sizeof(tmp));
	tmp.tcb_tid_off = -1;
	tmp.n_tcb_cands = tcb_candidates(tmp.tcb_cands, 64);
	if (pthread_create(&t, NULL, cands_thread, &tmp) != 0)
		return -1;
	pthread_join(t, NULL);
	return tmp.tcb_tid_off;
}

/* Wait on cv (lock held) for at most ns, or until signalled. */
static void wait_for(pthread_cond_t *cv, pthread_mutex_t *lock, uint64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ns / GT_NS_PER_SEC);
	ts.tv_nsec += (long)(ns % GT_NS_PER_SEC);
	if (ts.tv_nsec >= (long)GT_NS_PER_SEC) {
		ts.tv_sec++;
		ts.tv_nsec -= (long)GT_NS_PER_SEC;
	}
	pthread_cond_timedwait(cv, lock, &ts);
}

/* ---- the process table ---- */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * GT_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static size_t n_active(const rec_py *p)
{
	size_t i, n = 0;

	for (i = 0; i < p->n_procs; i++)
		if (!p->want_end[i] && !rec_pyproc_gone(p->procs[i]) &&
		    (rec_pyproc_state(p->procs[i]) == REC_PY_LOOKING || rec_pyproc_state(p->procs[i]) == REC_PY_READING))
			n++;
	return n;
}

/* The live entry of pid (not ended), -1 when none; lock held. */
static long find_live(const rec_py *p, pid_t pid)
{
	size_t i;

	for (i = p->n_procs; i-- > 0;)
		if (rec_pyproc_pid(p->procs[i]) == pid && !p->want_end[i])
			return (long)i;
	return -1;
}

static void note(rec_py *p, pid_t pid, const char *text)
{
	if (p->sink.w)
		gtt_write_note(p->sink.w, GTT_SRC_PYSTACK, gtt_now_ns(), (uint32_t)pid, 0, text);
}

/* Take c out of procs[] (lock held); keep it in done[] for its note, or destroy it when it has
 * nothing to say (a child that is not Python). */
static void retire(rec_py *p, rec_pyproc *c, int keep)
{
	size_t i;

	for (i = 0; i < p->n_procs && p->procs[i] != c; i++)
		;
	if (i == p->n_procs)
		return;
	rec_pyproc_release_gil(c);
	if (keep && GT_GROW(p->done, p->cap_done, p->n_done + 1) < 0)
		return; /* out of memory: it stays where it is */
	memmove(p->procs + i, p->procs + i + 1, (p->n_procs - i - 1) * sizeof(*p->procs));
	memmove(p->want_end + i, p->want_end + i + 1, p->n_procs - i - 1);
	p->n_procs--;
	if (keep)
		p->done[p->n_done++] = c;
	else if (c != p->root)
		rec_pyproc_destroy(c);
}

/* A new entry for pid (lock held); parent: a process forked without exec runs its parent's
 * interpreter. NULL when over the cap (a note says so) or out of memory. */
static rec_pyproc *add_proc(rec_py *p, pid_t pid, int root, const rec_pyproc *parent, uint64_t fork_ns)
{
	rec_pyproc *c;

	if (!root && n_active(p) >= REC_PY_MAX_PROCS) {
		char text[200];
		if (p->n_capped++ < 8) {
			snprintf(text, sizeof(text), "python: %d processes are read already (the most at once): pid %d is not read",
			         REC_PY_MAX_PROCS, (int)pid);
			note(p, pid, text);
		}
		return NULL;
	}
	if (GT_GROW(p->procs, p->cap_procs, p->n_procs + 1) < 0 ||
	    GT_GROW(p->want_end, p->cap_want, p->n_procs + 1) < 0)
		return NULL;
	c = rec_pyproc_create(pid, root, &p->sink, p->tcb_tid_off);
	if (!c)
		return NULL;
	if (parent)
		rec_pyproc_inherit(c, parent, fork_ns);
	p->procs[p->n_procs] = c;
	p->want_end[p->n_procs] = 0;
	p->n_procs++;
	if (!p->root)
		p->root = c;
	pthread_cond_signal(&p->look_cv);
	return c;
}

void rec_py_fork(rec_py *p, pid_t parent, pid_t child, uint64_t time_ns)
{
	long i;
	const rec_pyproc *par = NULL;

	if (!p || child <= 0)
		return;
	pthread_mutex_lock(&p->lock);
	if (find_live(p, child) < 0) {
		i = find_live(p, parent);
		if (i >= 0) {
			int st = rec_pyproc_state(p->procs[i]);
			/* a parent that is not Python has a child that is not either, until it execs */
			if (st == REC_PY_NOT_FOUND) {
				pthread_mutex_unlock(&p->lock);
				return;
			}
			if (st == REC_PY_READING)
				par = p->procs[i];
		}
		add_proc(p, child, 0, par, time_ns);
	}
	pthread_mutex_unlock(&p->lock);
}

void rec_py_exec(rec_py *p, pid_t pid, uint64_t time_ns, const char *cmdline)
{
	long i;
	rec_pyproc *c;

	if (!p || pid <= 0)
		return;
	pthread_mutex_lock(&p->lock);
	i = find_live(p, pid);
	if (i >= 0) {
		uint64_t image = rec_pyproc_image_ns(p->procs[i]);
		/* what was found after the exec is of the new image already (records reach us a
		 * drain later); the recorded process is looked at across its exec anyway */
		if ((image && image > time_ns) || (!image && pid == p->pid)) {
			if (!image)
				rec_pyproc_exec_cmd(p->procs[i], cmdline);
			pthread_mutex_unlock(&p->lock);
			return;
		}
		p->want_end[i] = 2;
	}
	if ((c = add_proc(p, pid, pid == p->pid, NULL, 0)) != NULL)
		rec_pyproc_exec_cmd(c, cmdline);
	pthread_mutex_unlock(&p->lock);
}

void rec_py_mapped(rec_py *p, pid_t pid)
{
	long i;

	if (!p || pid <= 0)
		return;
	pthread_mutex_lock(&p->lock);
	if ((i = find_live(p, pid)) >= 0 && rec_pyproc_state(p->procs[i]) == REC_PY_LOOKING)
		rec_pyproc_maps_moved(p->procs[i]);
	pthread_mutex_unlock(&p->lock);
}

void rec_py_exit(rec_py *p, pid_t pid)
{
	long i;

	if (!p || pid <= 0)
		return;
	pthread_mutex_lock(&p->lock);
	if ((i = find_live(p, pid)) >= 0)
		p->want_end[i] = 1;
	pthread_mutex_unlock(&p->lock);
}

/* ---- the look thread: interpreters of processes in LOOKING ---- */

static void *look_main(void *arg)
{
	rec_py *p = arg;

	tcb_calibrate(p);
	pthread_mutex_lock(&p->lock);
	p->calibrated = 1;
	pthread_cond_broadcast(&p->look_cv);
	pthread_mutex_unlock(&p->lock);
	while (!atomic_load(&p->stop)) {
		uint64_t now = gtt_now_ns(), next = now + IDLE_WAIT_NS;
		size_t i;

		for (i = 0; !atomic_load(&p->stop); i++) {
			rec_pyproc *c;
			int end, st;
			pthread_mutex_lock(&p->lock);
			if (i >= p->n_procs) {
				pthread_mutex_unlock(&p->lock);
				break;
			}
			c = p->procs[i];
			end = p->want_end[i];
			st = rec_pyproc_state(c);
			if (st != REC_PY_LOOKING && st != REC_PY_READING && c != p->root) {
				/* a search that ended: its readers go at once; it keeps what it has to say
				 * (refused, exited early), and a process that is not Python is forgotten
				 * once gone (until then its children are known not to be Python either) */
				if (!rec_pyproc_ended(c)) {
					rec_pyproc_end(c, end == 1);
					rec_pyproc_release(c);
					rec_pyproc_release_gil(c);
				}
				if (end || st != REC_PY_NOT_FOUND) {
					retire(p, c, st != REC_PY_NOT_FOUND);
					i--;
				}
				pthread_mutex_unlock(&p->lock);
				continue;
			}
			pthread_mutex_unlock(&p->lock);
			if (st != REC_PY_LOOKING || rec_pyproc_ended(c))
				continue;
			if (end) {
				rec_pyproc_end(c, end == 1);
				continue; /* retired on the next round */
			}
			now = gtt_now_ns();
			if (rec_pyproc_next_look(c) > now) {
				if (rec_pyproc_next_look(c) < next)
					next = rec_pyproc_next_look(c);
				continue;
			}
			if (rec_pyproc_look(c, now) == 0 && rec_pyproc_next_look(c) < next)
				next = rec_pyproc_next_look(c);
			else if (rec_pyproc_state(c) != REC_PY_LOOKING)
				next = now; /* retire or start reading it at once */
			if (rec_pyproc_state(c) == REC_PY_READING) { /* the stack loop has one to read */
				pthread_mutex_lock(&p->lock);
				pthread_cond_signal(&p->stack_cv);
				pthread_mutex_unlock(&p->lock);
			}
		}
		atomic_store(&p->look_cpu_ns, thread_cpu_ns());
		pthread_mutex_lock(&p->lock);
		now = gtt_now_ns();
		if (!atomic_load(&p->stop) && next > now) {
			wait_for(&p->look_cv, &p->lock, next - now);
		}
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* ---- the stack loop ---- */

/* Some process is being read (lock held). */
static int any_reading(const rec_py *p)
{
	for (size_t i = 0; i < p->n_procs; i++)
		if (rec_pyproc_state(p->procs[i]) == REC_PY_READING && !rec_pyproc_ended(p->procs[i]))
			return 1;
	return 0;
}

static void *stack_main(void *arg)
{
	rec_py *p = arg;
	uint64_t period = gt_hz_to_period_ns(p->opts.stack_hz);
	rec_ticker *tk = rec_ticker_create(GTT_SRC_PYSTACK, period, 0, p->sink.w);
	rec_pyproc **pending = NULL;
	uint8_t *ends = NULL;
	size_t cap_pending = 0, cap_ends = 0;
	int n_long = 0;

	if (!tk)
		return NULL;
	/* the same for the stack loop, below the GIL poll so that a long pass never delays it */
	{
		struct sched_param sp = { .sched_priority = 1 }, sp0 = { .sched_priority = 0 };
		p->stack_rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
		if (!p->stack_rt) /* not SCHED_BATCH as the rest of the recorder (child.h): on time */
			pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp0);
	}
	while (!atomic_load(&p->stop)) {
		uint64_t now = rec_ticker_wait(tk);
		size_t i, n;

		if (atomic_load(&p->stop))
			break;
		/* the processes being read (entries the look thread may free are never in READING) */
		pthread_mutex_lock(&p->lock);
		n = 0;
		if (GT_GROW(pending, cap_pending, p->n_procs ? p->n_procs : 1) == 0 &&
		    GT_GROW(ends, cap_ends, p->n_procs ? p->n_procs : 1) == 0) {
			for (i = 0; i < p->n_procs; i++) {
				if (rec_pyproc_state(p->procs[i]) != REC_PY_READING || rec_pyproc_ended(p->procs[i]))
					continue;
				pending[n] = p->procs[i];
				ends[n++] = p->want_end[i];
			}
		}
		if (!n) {
			/* nothing to read (no interpreter found yet, or none in the tree): no wake-ups at
			 * the stack rate; the ticks that fall due meanwhile are not intended. The look
			 * thread signals a process it starts reading; a timeout is the backstop. */
			rec_ticker_pause(tk, now);
			while (!atomic_load(&p->stop) && !any_reading(p)) {
				wait_for(&p->stack_cv, &p->lock, IDLE_WAIT_NS);
			}
			pthread_mutex_unlock(&p->lock);
			rec_ticker_resume(tk, gtt_now_ns());
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		for (i = 0; i < n; i++) {
			rec_pyproc *c = pending[i];
			if (!ends[i] && !rec_pyproc_gone(c) && rec_pyproc_pass(c) == 0) {
				rec_pyproc_health(c, now, 0);
				continue;
			}
			/* exited, exec'd into another image, or found gone: its reading is over */
			rec_pyproc_end(c, ends[i] == 1 || rec_pyproc_gone(c));
			rec_pyproc_release(c);
			pthread_mutex_lock(&p->lock);
			retire(p, c, 1);
			pthread_mutex_unlock(&p->lock);
		}
		atomic_store(&p->stack_cpu_ns, thread_cpu_ns());
		/* a real-time loop must not take most of a CPU: passes that need more than half
		 * the period (thousands of threads) go back to normal scheduling */
		if (p->stack_rt && gtt_now_ns() - now > period / 2 && ++n_long >= 3) {
			struct sched_param sp = { .sched_priority = 0 };
			pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
			p->stack_rt = 0;
			note(p, p->pid, "Python stack passes take over half the read period: reader left real-time scheduling");
		} else if (gtt_now_ns() - now <= period / 2) {
			n_long = 0;
		}
	}
	rec_ticker_finish(tk, 0);
	rec_ticker_destroy(tk);
	free(pending);
	free(ends);
	return NULL;
}

/* ---- the GIL poll: only while some process's GIL state moves ---- */

static void gil_wake(void *ctx)
{
	rec_py *p = ctx;

	pthread_mutex_lock(&p->lock);
	p->gil_wake = 1;
	pthread_cond_signal(&p->gil_cv);
	pthread_mutex_unlock(&p->lock);
}

static void *gil_main(void *arg)
{
	rec_py *p = arg;
	rec_ticker *tk = rec_ticker_create(GTT_SRC_GIL, gt_hz_to_period_ns(p->opts.gil_hz), 0, p->sink.w);

	if (!tk)
		return NULL;
	/* A 1 kHz poll on a busy box is late by whole scheduler slices under CFS, which turns
	 * into wrong GIL holders; a low real-time priority keeps it on time (it sleeps between
	 * polls and each poll is one system call). Without the privilege: normal scheduling, not the
	 * SCHED_BATCH of the rest of the recorder (child.h). */
	{
		struct sched_param sp = { .sched_priority = 2 }, sp0 = { .sched_priority = 0 };
		p->gil_rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
		if (!p->gil_rt)
			pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp0);
	}
	while (!atomic_load(&p->stop)) {
		uint64_t now = rec_ticker_wait(tk);
		size_t i;
		int any = 0, calm = 0;

		if (atomic_load(&p->stop))
			break;
		/* the lock keeps the table still; each poll is one short system call */
		pthread_mutex_lock(&p->lock);
		for (i = 0; i < p->n_procs; i++) {
			rec_pyproc *c = p->procs[i];
			if (p->want_end[i] || rec_pyproc_state(c) != REC_PY_READING || rec_pyproc_gone(c) ||
			    rec_pyproc_ended(c) || !rec_pyproc_gil_fast(c))
				continue;
			rec_pyproc_gil_poll(c, now);
			any |= rec_pyproc_gil_fast(c);
			calm |= rec_pyproc_gil_fast(c) && !rec_pyproc_gil_churn(c);
		}
		atomic_store(&p->gil_cpu_ns, thread_cpu_ns());
		if (!any) {
			/* every GIL stands still: sleep until a stack pass sees one move */
			rec_ticker_pause(tk, now);
			p->gil_wake = 0;
			while (!p->gil_wake && !atomic_load(&p->stop)) {
				wait_for(&p->gil_cv, &p->lock, IDLE_WAIT_NS);
				/* a process found meanwhile starts out in the poll */
				for (i = 0; i < p->n_procs && !p->gil_wake; i++)
					if (!p->want_end[i] && rec_pyproc_state(p->procs[i]) == REC_PY_READING &&
					    !rec_pyproc_gone(p->procs[i]) && !rec_pyproc_ended(p->procs[i]) &&
					    rec_pyproc_gil_fast(p->procs[i]))
						p->gil_wake = 1;
			}
			rec_ticker_resume(tk, gtt_now_ns());
		} else if (!calm) {
			/* every GIL polled changes hands between polls: reading it more often would not
			 * tell more (the records say how many hand-offs each gap hid), so fewer reads */
			struct timespec ts;
			uint64_t until = now + (CHURN_STRIDE - 1) * gt_hz_to_period_ns(p->opts.gil_hz);
			pthread_mutex_unlock(&p->lock);
			rec_ticker_pause(tk, now);
			ts.tv_sec = (time_t)(until / GT_NS_PER_SEC);
			ts.tv_nsec = (long)(until % GT_NS_PER_SEC);
			while (!atomic_load(&p->stop) && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			rec_ticker_resume(tk, gtt_now_ns());
			continue;
		}
		pthread_mutex_unlock(&p->lock);
	}
	rec_ticker_finish(tk, 0);
	rec_ticker_destroy(tk);
	return NULL;
}

/* ---- API ---- */

rec_py *rec_py_start(pid_t pid, gtt_writer *w, const rec_py_opts *opts, char *err, size_t errlen)
{
	rec_py *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->pid = pid;
	if (opts)
		p->opts = *opts;
	if (!(p->opts.stack_hz > 0))
		p->opts.stack_hz = 99;
	if (!(p->opts.gil_hz > 0))
		p->opts.gil_hz = 1000;
	if (p->opts.stack_hz > 10000)
		p->opts.stack_hz = 10000;
	if (p->opts.gil_hz > 100000)
		p->opts.gil_hz = 100000;
	p->sink = (rec_pysink){ w, p->opts.observe, p->opts.observe_ctx, gil_wake, p };
	p->tcb_tid_off = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->look_cv, NULL);
	pthread_cond_init(&p->gil_cv, NULL);
	pthread_cond_init(&p->stack_cv, NULL);
	p->n_tcb_cands = tcb_candidates(p->tcb_cands, 64);
	/* the look thread calibrates the 3.10 tid offset before anything is read */
	if (pthread_create(&p->look_thr, NULL, look_main, p) != 0) {
		snprintf(err, errlen, "cannot start the Python reader thread: %s", strerror(errno));
		goto fail;
	}
	p->have_look = 1;
	pthread_mutex_lock(&p->lock);
	while (!p->calibrated)
		pthread_cond_wait(&p->look_cv, &p->lock);
	if (!add_proc(p, pid, 1, NULL, 0)) {
		pthread_mutex_unlock(&p->lock);
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	pthread_mutex_unlock(&p->lock);
	if (pthread_create(&p->stack_thr, NULL, stack_main, p) == 0)
		p->have_stack = 1;
	if (pthread_create(&p->gil_thr, NULL, gil_main, p) == 0)
		p->have_gil = 1;
	if (!p->have_stack || !p->have_gil) {
		snprintf(err, errlen, "cannot start the Python reader threads: %s", strerror(errno));
		goto fail;
	}
	return p;
fail:
	rec_py_stop(p, NULL);
	return NULL;
}

void rec_py_status(rec_py *p, char *buf, size_t len)
{
	size_t i, n_read = 0;

	if (!p) {
		snprintf(buf, len, "python: off");
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->root) {
		pthread_mutex_unlock(&p->lock);
		snprintf(buf, len, "python: off");
		return;
	}
	rec_pyproc_status(p->root, buf, len);
	for (i = 0; i < p->n_procs; i++)
		n_read += p->procs[i] != p->root && rec_pyproc_state(p->procs[i]) == REC_PY_READING;
	for (i = 0; i < p->n_done; i++)
		n_read += p->done[i] != p->root && rec_pyproc_state(p->done[i]) == REC_PY_READING;
	pthread_mutex_unlock(&p->lock);
	if (n_read) {
		size_t k = strlen(buf);
		snprintf(buf + k, len - k, "; %zu more process%s read", n_read, n_read == 1 ? "" : "es");
	}
}

/* The reader's own cost, for the end note. */
static void cost_note(rec_py *p)
{
	rec_pyproc_stats st, tot;
	size_t i, n_read = 0;
	char text[400];

	memset(&tot, 0, sizeof(tot));
	for (i = 0; i < p->n_procs + p->n_done; i++) {
		rec_pyproc_stats_get(i < p->n_procs ? p->procs[i] : p->done[i - p->n_procs], &st);
		tot.stacks += st.stacks;
		tot.passes += st.passes;
		tot.syscalls += st.syscalls;
		tot.read_ns += st.read_ns;
		tot.polls += st.polls;
		n_read += st.passes > 0;
	}
	if (!tot.passes)
		return;
	snprintf(text, sizeof(text),
	         "python reader: %zu process%s, %llu passes, %llu stacks, %.2f process_vm_readv calls and %.1f us per stack; "
	         "%llu GIL polls; reader CPU: stacks %.3f s, GIL poll %.3f s, discovery %.3f s",
	         n_read, n_read == 1 ? "" : "es", (unsigned long long)tot.passes, (unsigned long long)tot.stacks,
	         tot.stacks ? (double)tot.syscalls / (double)tot.stacks : 0.0,
	         tot.stacks ? (double)tot.read_ns / (double)tot.stacks / 1e3 : 0.0, (unsigned long long)tot.polls,
	         gt_ns_to_s(atomic_load(&p->stack_cpu_ns)), gt_ns_to_s(atomic_load(&p->gil_cpu_ns)),
	         gt_ns_to_s(atomic_load(&p->look_cpu_ns)));
	note(p, p->pid, text);
}

void rec_py_stop(rec_py *p, rec_py_result *res)
{
	char text[sizeof(res->text)];
	size_t i;

	if (res)
		memset(res, 0, sizeof(*res));
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	pthread_mutex_lock(&p->lock);
	pthread_cond_broadcast(&p->look_cv);
	pthread_cond_broadcast(&p->gil_cv);
	pthread_cond_broadcast(&p->stack_cv);
	pthread_mutex_unlock(&p->lock);
	if (p->have_look)
		pthread_join(p->look_thr, NULL);
	if (p->have_stack)
		pthread_join(p->stack_thr, NULL);
	if (p->have_gil)
		pthread_join(p->gil_thr, NULL);
	/* the notes in the order the processes were met: the recorded process first */
	for (i = 0; i < p->n_done + p->n_procs; i++) {
		rec_pyproc *c = i < p->n_done ? p->done[i] : p->procs[i - p->n_done];
		rec_pyproc_end(c, i >= p->n_done && p->want_end[i - p->n_done] == 1);
		rec_pyproc_finish(c, text, sizeof(text));
		if (c == p->root && res) {
			res->state = rec_pyproc_state(c);
			res->target_gone = rec_pyproc_gone(c);
			snprintf(res->text, sizeof(res->text), "%s", text);
		}
	}
	if (p->root)
		cost_note(p);
	for (i = 0; i < p->n_procs; i++)
		rec_pyproc_destroy(p->procs[i]);
	for (i = 0; i < p->n_done; i++)
		rec_pyproc_destroy(p->done[i]);
	free(p->procs);
	free(p->done);
	free(p->want_end);
	pthread_cond_destroy(&p->look_cv);
	pthread_cond_destroy(&p->gil_cv);
	pthread_cond_destroy(&p->stack_cv);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int rec_py_find(pid_t pid, rec_py_found *out, char *err, size_t errlen)
{
	rec_pyinterp py;
	rec_procmem *mem = rec_procmem_open(pid);
	int rc;

	if (!mem) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memset(&py, 0, sizeof(py));
	err[0] = '\0';
	rc = rec_pydisc_find(pid, mem, &py, err, errlen);
	rec_procmem_close(mem);
	if (rc == 1) {
		memset(out, 0, sizeof(*out));
		out->off = py.off;
		out->runtime = py.runtime;
		out->code_type = py.code_type;
		snprintf(out->version, sizeof(out->version), "%s", py.version);
		snprintf(out->path, sizeof(out->path), "%s", py.path);
		return 1;
	}
	if (rc == -ENOTSUP) { /* a CPython it cannot read: the reason is in err */
		if (!err[0])
			snprintf(err, errlen, "unsupported CPython");
		return -1;
	}
	if (py.tentative[0]) { /* named like an interpreter, but unreadable (stripped) */
		snprintf(err, errlen, "%s", py.tentative);
		return -1;
	}
	if (rc == -ESRCH && kill(pid, 0) < 0 && errno == ESRCH) {
		snprintf(err, errlen, "process %d is gone", (int)pid);
		return -1;
	}
	snprintf(err, errlen, "no CPython interpreter found in pid %d (no libpython or _PyRuntime symbol)", (int)pid);
	return 0;
}
