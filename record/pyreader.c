/* pyreader.c — reads the target's CPython thread stacks and GIL state on two background
 * threads with absolute schedules (process_vm_readv; the target never stops), once
 * pydiscover.c has found the interpreter; pycode.c names the frames. */
#include "pyreader.h"

#include <errno.h>
#include <limits.h>
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
#include "pycode.h"
#include "pydiscover.h"
#include "pyoffsets.h"
#include "ticker.h"

#define MAX_INTERPS 16
#define MAX_THREADS 4096
#define TID_MAP_CAP 8192        /* PyThreadState -> tid, shared with the GIL loop */
#define FAST_LOOK_NS (2 * GT_NS_PER_SEC)          /* looking for the interpreter: at first ... */
#define FAST_LOOK_PERIOD_NS (10 * GT_NS_PER_MS)   /* ... every 10 ms, */
#define SLOW_LOOK_PERIOD_NS (250 * GT_NS_PER_MS)  /* then every 250 ms */
#define READY_PERIOD_NS (5 * GT_NS_PER_MS)        /* waiting for its initialization */
#define HEALTH_INTERVAL_NS GT_NS_PER_SEC          /* READ_ERRORS records cover 1 s each */

#define TCB_SEEN 4096
typedef struct tcb_seen {
	uint64_t pthread;
	uint32_t tid;
} tcb_seen;

typedef struct tid_entry {
	uint64_t tstate;
	uint32_t tid;
} tid_entry;

struct rec_py {
	pid_t pid;
	gtt_writer *w;
	rec_py_opts opts;
	pthread_t stack_thr, gil_thr;
	int have_stack_thr, have_gil_thr;
	atomic_int stop;
	atomic_int state;       /* rec_py_state */
	atomic_int gone;        /* the target exited */

	pthread_mutex_t lock;   /* guards reason, version, tids[] */
	char reason[320];
	char version[32];       /* "3.12.1", once found */

	/* found at discovery, read-only afterwards (the stack loop's until then) */
	rec_pyinterp py;
	atomic_uint_fast64_t gil_addr;
	int32_t tcb_tid_off;    /* 3.10: offset of the tid in glibc's struct pthread, -1 unknown */
	int32_t tcb_cands[64];  /* candidates from the starting thread */
	int n_tcb_cands;
	tcb_seen tcb_seen[TCB_SEEN]; /* (pthread, tid) pairs /proc confirmed */
	unsigned tcb_seen_rr;
	int noted_no_tids;

	/* stack loop state */
	rec_procmem *mem;
	rec_pycache *codes;
	uint64_t pass_no;       /* stack passes started, from 1 */

	/* tid map for the GIL loop: a snapshot written by the stack loop */
	tid_entry tids[TID_MAP_CAP];
	size_t n_tids;

	/* counters (the stack loop's; read for status) */
	atomic_uint_fast64_t n_passes, n_stacks, n_frames, n_failed, n_torn, n_codes, read_ns, n_reads;
	atomic_uint_fast64_t n_polls, n_gil_changes, n_gil_failed;
	int gil_rt, stack_rt;   /* the loops run SCHED_FIFO */
	uint64_t iv_start_ns, iv_failed, iv_torn, iv_reads;   /* current 1 s health interval */
	uint64_t giv_start_ns, giv_failed, giv_reads;
};

/* ---- small helpers ---- */

static void set_reason(rec_py *p, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&p->lock);
	snprintf(p->reason, sizeof(p->reason), fmt, a ? a : "", b ? b : "");
	pthread_mutex_unlock(&p->lock);
}

static void put_rec(rec_py *p, const gtt_record *r);

/* The code cache's PY_CODE records take the same way as the reader's own. */
static void emit_code(void *ctx, const gtt_record *r)
{
	put_rec(ctx, r);
}

static void put_rec(rec_py *p, const gtt_record *r)
{
	if (p->w)
		gtt_write(p->w, r);
	if (p->opts.observe)
		p->opts.observe(p->opts.observe_ctx, r);
}

/* A READ_ERRORS record over [t0, t1): count failures, value[0..2] failed reads, torn
 * stacks, reads (docs/FORMAT.md). */
static void put_read_errors(rec_py *p, uint32_t source, uint64_t t0, uint64_t t1, uint64_t failed,
                            uint64_t torn, uint64_t reads)
{
	gtt_health h = { .time_ns = t0, .end_ns = t1, .source = source, .kind = GTT_HEALTH_READ_ERRORS,
	                 .pid = (uint32_t)p->pid, .count = failed + torn, .value = { failed, torn, reads } };

	if (p->w)
		gtt_write_health(p->w, &h);
}

static void put_note(rec_py *p, uint32_t source, uint64_t time_ns, const char *text)
{
	if (p->w)
		gtt_write_note(p->w, source, time_ns, (uint32_t)p->pid, 0, text);
}

static void put_meta(rec_py *p, const char *key, const char *value)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_META;
	r.u.meta.key = key;
	r.u.meta.value = value;
	put_rec(p, &r);
}

static int sleep_ns(rec_py *p, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / GT_NS_PER_SEC), (long)(ns % GT_NS_PER_SEC) };

	if (atomic_load(&p->stop))
		return -ECANCELED;
	nanosleep(&ts, NULL);
	return atomic_load(&p->stop) ? -ECANCELED : 0;
}

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

/* ---- stack pass ---- */

typedef struct thread_read {
	rec_pythread t;
	uint32_t tid;
	uint64_t tcb_tid_raw;   /* 3.10 */
	uint64_t tcb_self;
} thread_read;

/* OS tids of 3.10 threads: glibc's pthread_t is the address of its struct pthread, whose tid
 * field offset we found in our own threads; a tid is accepted only when the TCB points to
 * itself (x86-64 tcbhead_t) and /proc lists the tid as a thread of the target. */
static void tids_310(rec_py *p, thread_read *th, size_t n)
{
	rec_procmem_req req[2 * 64];
	size_t at, i;

	for (at = 0; at < n; at += 64) {
		size_t k = n - at < 64 ? n - at : 64;

		for (i = 0; i < k; i++) {
			thread_read *t = &th[at + i];
			t->tcb_tid_raw = t->tcb_self = 0;
			req[2 * i] = (rec_procmem_req){ t->t.thread_id, &t->tcb_self, 8, 0 };
			req[2 * i + 1] = (rec_procmem_req){ p->tcb_tid_off >= 0 ? t->t.thread_id + (uint64_t)p->tcb_tid_off : 0,
			                                     &t->tcb_tid_raw, 4, 0 };
		}
		if (p->tcb_tid_off < 0 || rec_procmem_readv(p->mem, req, 2 * k) < 0)
			continue;
		for (i = 0; i < k; i++) {
			thread_read *t = &th[at + i];
			uint32_t tid = (uint32_t)t->tcb_tid_raw;
			size_t j, slot;
			if (!req[2 * i].ok || !req[2 * i + 1].ok || t->tcb_self != t->t.thread_id || !tid)
				continue;
			/* /proc confirms a (pthread, tid) pair once; a pthread_t reused by a new
			 * thread comes with a new tid and is checked again */
			slot = (size_t)((t->t.thread_id >> 4) ^ tid) % TCB_SEEN;
			for (j = 0; j < 4; j++) {
				tcb_seen *e = &p->tcb_seen[(slot + j) % TCB_SEEN];
				if (e->pthread == t->t.thread_id && e->tid == tid) {
					t->tid = tid;
					break;
				}
			}
			if (t->tid)
				continue;
			if (rec_procfs_has_thread(p->pid, (pid_t)tid)) {
				t->tid = tid;
				p->tcb_seen[(slot + p->tcb_seen_rr++ % 4) % TCB_SEEN] = (tcb_seen){ t->t.thread_id, tid };
			}
		}
	}
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

/* Walk all interpreters' thread lists. Returns the number of threads read, -errno when the
 * interpreter list itself is unreadable. */
static int read_threads(rec_py *p, thread_read *th, size_t cap)
{
	uint64_t interp = 0, ts;
	size_t n = 0;
	int k, rc;

	if ((rc = rec_procmem_read(p->mem, p->py.runtime + (uint64_t)p->py.off.rt_interp_head, &interp, 8)) < 0)
		return rc;
	for (k = 0; interp && k < MAX_INTERPS; k++) {
		if ((rc = rec_procmem_read(p->mem, interp + (uint64_t)p->py.off.is_threads_head, &ts, 8)) < 0)
			return rc;
		while (ts && n < cap) {
			thread_read *t = &th[n];
			memset(t, 0, sizeof(*t));
			if (rec_py_read_thread(p->mem, &p->py.off, ts, &t->t) < 0)
				break;
			t->tid = (uint32_t)t->t.native_tid;
			n++;
			if (t->t.next == ts)
				break;
			ts = t->t.next;
		}
		if (rec_procmem_read(p->mem, interp + (uint64_t)p->py.off.is_next, &interp, 8) < 0)
			break;
	}
	return (int)n;
}

static void publish_tids(rec_py *p, const thread_read *th, size_t n)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	p->n_tids = 0;
	for (i = 0; i < n && p->n_tids < TID_MAP_CAP; i++)
		if (th[i].tid)
			p->tids[p->n_tids++] = (tid_entry){ th[i].t.addr, th[i].tid };
	pthread_mutex_unlock(&p->lock);
}

static uint32_t tid_of(rec_py *p, uint64_t tstate)
{
	uint32_t tid = 0;
	size_t i;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < p->n_tids; i++)
		if (p->tids[i].tstate == tstate) {
			tid = p->tids[i].tid;
			break;
		}
	pthread_mutex_unlock(&p->lock);
	return tid;
}

/* After walking a thread's chain (raw[0..nf)): re-read its leaf frame pointer (through the
 * cframe on 3.11/3.12) and the leaf's code in one batch together with the GIL state. The same
 * leaf: consistent. A leaf that is one of the frames walked (the thread only returned while
 * we read): consistent from there, *keep_from = its index. Anything else: torn (1).
 * gil->locked = -2 when the GIL was unreadable. */
static int recheck(rec_py *p, const thread_read *t, const rec_pyframe_raw *raw, int nf,
                   uint64_t gil_addr, rec_pygil *gil, int *keep_from)
{
	rec_procmem_req req[4];
	uint64_t cframe = 0, leaf = 0, code = 0;
	uint8_t g[320];
	size_t glen = 0, k = 0, n_frame_reqs;
	int32_t m = p->py.off.gil_holder;
	int i;

	*keep_from = 0;
	if (p->py.off.gil_locked > m)
		m = p->py.off.gil_locked;
	if (p->py.off.gil_switches > m)
		m = p->py.off.gil_switches;
	glen = (size_t)m + 8;
	gil->locked = -2;
	if (t->t.frame) {
		if (p->py.off.ts_cframe >= 0) {
			req[k++] = (rec_procmem_req){ t->t.addr + (uint64_t)p->py.off.ts_cframe, &cframe, 8, 0 };
			req[k++] = (rec_procmem_req){ t->t.cframe + (uint64_t)p->py.off.cf_current_frame, &leaf, 8, 0 };
		} else {
			req[k++] = (rec_procmem_req){ t->t.addr + (uint64_t)p->py.off.ts_frame, &leaf, 8, 0 };
		}
		req[k++] = (rec_procmem_req){ t->t.frame + (uint64_t)p->py.off.fr_code, &code, 8, 0 };
	}
	n_frame_reqs = k;
	if (gil_addr && glen <= sizeof(g))
		req[k++] = (rec_procmem_req){ gil_addr, g, glen, 0 };
	if (k == 0 || rec_procmem_readv(p->mem, req, k) < 0)
		return t->t.frame != 0;
	if (k > n_frame_reqs && req[k - 1].ok) {
		memcpy(&gil->holder, g + p->py.off.gil_holder, 8);
		memcpy(&gil->locked, g + p->py.off.gil_locked, 4);
	}
	if (!t->t.frame)
		return 0;
	for (i = 0; i < (int)n_frame_reqs; i++)
		if (!req[i].ok)
			return 1;
	if (p->py.off.ts_cframe >= 0 && cframe != t->t.cframe)
		return 1;
	if (leaf == t->t.frame)
		return nf > 0 && code != raw[0].code;
	for (i = 1; i < nf; i++) {
		if (raw[i].addr == leaf) {
			*keep_from = i;
			return 0;
		}
	}
	return 1;
}

/* One read of every thread's stack; writes PY_STACK records. 0, or -ESRCH when the target is gone. */
static int stack_pass(rec_py *p, thread_read *th, rec_pyframe_raw *raw, gtt_py_frame *frames)
{
	uint64_t t0 = gtt_now_ns(), gil_addr = atomic_load(&p->gil_addr);
	uint64_t failed0 = rec_procmem_failures(p->mem), reads0 = rec_procmem_reads(p->mem);
	uint64_t refused0 = rec_pycache_refused(p->codes), refused;
	int n, i;

	p->pass_no++;
	rec_pycache_begin_pass(p->codes, p->pass_no);
	n = read_threads(p, th, MAX_THREADS);
	if (n < 0)
		goto done;
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ) {
		int any = 0;
		tids_310(p, th, (size_t)n);
		for (i = 0; i < n; i++)
			any |= th[i].tid != 0;
		if (n > 0 && !any && !p->noted_no_tids) {
			p->noted_no_tids = 1;
			put_note(p, GTT_SRC_PYSTACK, t0,
			         "CPython 3.10: no thread state maps to an OS tid (another libc in the target?): "
			           "its threads are not read");
		}
	}
	publish_tids(p, th, (size_t)n);
	for (i = 0; i < n; i++) {
		thread_read *t = &th[i];
		int nf = 0, tr = 0, k, out_n = 0, attempt, keep_from = 0;
		rec_pygil gil = { 0, -2, 0 };
		gtt_record r;

		if (!t->tid)
			continue; /* no OS thread behind it (or an unknown tid on 3.10) */
		for (attempt = 0; attempt < 3; attempt++) {
			if (attempt && rec_py_read_thread(p->mem, &p->py.off, t->t.addr, &t->t) < 0)
				break;
			tr = 0;
			rec_procmem_cache_clear(p->mem);
			nf = t->t.frame ? rec_py_read_frames(p->mem, &p->py.off, t->t.frame, raw, REC_PY_MAX_FRAMES, &tr) : 0;
			if (nf < 0) {
				nf = 0;
				tr = 1;
			}
			out_n = 0;
			rec_pycache_check_used(p->codes, raw, nf);
			for (k = 0; k < nf; k++) {
				const rec_pycache_entry *e = rec_pycache_get(p->codes, raw[k].code);
				if (!e) {
					/* not a readable code object: stop here rather than invent a frame */
					tr = 1;
					break;
				}
				frames[out_n].code_id = e->code_id;
				frames[out_n].line = rec_py_line(p->py.off.line_format, e->c.linetable,
				                                 e->c.linetable_len, e->c.firstlineno, raw[k].index);
				frames[out_n].flags = raw[k].flags;
				out_n++;
			}
			if (recheck(p, t, raw, out_n, gil_addr, &gil, &keep_from))
				tr = 1;
			if (!tr)
				break; /* consistent; else read the thread again */
		}
		if (!tr && keep_from > 0) {
			/* the thread returned from the leaf frames while we read: drop them */
			memmove(frames, frames + keep_from, (size_t)(out_n - keep_from) * sizeof(*frames));
			out_n -= keep_from;
		}
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_PY_STACK;
		r.u.py_stack.time_ns = gtt_now_ns();
		r.u.py_stack.pid = (uint32_t)p->pid;
		r.u.py_stack.tid = t->tid;
		r.u.py_stack.thread_id = t->t.addr;
		if (gil.locked == 1 && gil.holder == t->t.addr)
			r.u.py_stack.flags |= GTT_PYSTACK_HOLDS_GIL;
		if (tr) {
			r.u.py_stack.flags |= GTT_PYSTACK_TORN;
			atomic_fetch_add(&p->n_torn, 1);
			p->iv_torn++;
		}
		if (!t->t.frame)
			r.u.py_stack.flags |= GTT_PYSTACK_IDLE;
		r.u.py_stack.n_frames = (uint32_t)out_n;
		r.u.py_stack.frames = frames;
		put_rec(p, &r);
		atomic_fetch_add(&p->n_stacks, 1);
		atomic_fetch_add(&p->n_frames, (uint64_t)out_n);
	}
	rec_pycache_revalidate(p->codes);
done:
	/* a line table too large to read counts as a failed read */
	refused = rec_pycache_refused(p->codes) - refused0;
	p->iv_failed += refused;
	atomic_fetch_add(&p->n_failed, refused);
	atomic_store(&p->n_codes, rec_pycache_reads(p->codes));
	p->iv_failed += rec_procmem_failures(p->mem) - failed0;
	p->iv_reads += rec_procmem_reads(p->mem) - reads0;
	atomic_fetch_add(&p->n_reads, rec_procmem_reads(p->mem) - reads0);
	atomic_fetch_add(&p->n_failed, rec_procmem_failures(p->mem) - failed0);
	atomic_fetch_add(&p->read_ns, gtt_now_ns() - t0);
	atomic_fetch_add(&p->n_passes, 1);
	return rec_procmem_gone(p->mem) ? -ESRCH : 0;
}

/* Write a READ_ERRORS health record for the interval ending at now when it had failures. */
static void stack_health_interval(rec_py *p, uint64_t now, int force)
{
	if (!force && now - p->iv_start_ns < HEALTH_INTERVAL_NS)
		return;
	if (p->iv_failed || p->iv_torn)
		put_read_errors(p, GTT_SRC_PYSTACK, p->iv_start_ns, now, p->iv_failed, p->iv_torn, p->iv_reads);
	p->iv_start_ns = now;
	p->iv_failed = p->iv_torn = p->iv_reads = 0;
}

/* ---- the GIL loop ---- */

static void *gil_main(void *arg)
{
	rec_py *p = arg;
	rec_procmem *mem = rec_procmem_open(p->pid);
	rec_ticker *tk = NULL;
	rec_pygil last = { 0, -3, 0 };
	uint32_t last_tid = 0;
	uint64_t period = gt_hz_to_period_ns(p->opts.gil_hz);

	if (!mem)
		return NULL;
	/* A 1 kHz poll on a busy box is late by whole scheduler slices under CFS, which turns
	 * into wrong GIL holders; a low real-time priority keeps it on time (it sleeps between
	 * polls and each poll is one system call). Without the privilege it stays as it is. */
	{
		struct sched_param sp = { .sched_priority = 2 };
		p->gil_rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	}
	tk = rec_ticker_create(GTT_SRC_GIL, period, 0, p->w);
	if (!tk)
		goto out;
	p->giv_start_ns = gtt_now_ns();
	while (!atomic_load(&p->stop)) {
		uint64_t now = rec_ticker_wait(tk), gil_addr = atomic_load(&p->gil_addr);
		rec_pygil g;
		uint64_t f0 = rec_procmem_failures(mem);

		if (atomic_load(&p->stop))
			break;
		if (!gil_addr) {
			/* 3.12+: the interpreter's GIL pointer is set during initialization */
			gil_addr = rec_py_gil_addr(mem, &p->py.off, p->py.runtime);
			if (gil_addr)
				atomic_store(&p->gil_addr, gil_addr);
		}
		atomic_fetch_add(&p->n_polls, 1);
		p->giv_reads++;
		if (gil_addr && rec_py_read_gil(mem, &p->py.off, gil_addr, &g) == 0) {
			if (g.holder != last.holder || g.locked != last.locked) {
				gtt_record r;
				uint32_t tid = g.holder == last.holder ? last_tid : tid_of(p, g.holder);

				if (!tid && g.holder && p->py.off.ts_native_tid >= 0) {
					/* a thread newer than the last stack pass */
					uint64_t v = 0;
					if (rec_procmem_read(mem, g.holder + (uint64_t)p->py.off.ts_native_tid, &v, 8) == 0)
						tid = (uint32_t)v;
				}
				memset(&r, 0, sizeof(r));
				r.tag = GTT_REC_GIL;
				r.u.gil.time_ns = now;
				r.u.gil.pid = (uint32_t)p->pid;
				r.u.gil.holder_tid = g.locked == 1 ? tid : 0;
				r.u.gil.locked = g.locked == 1;
				r.u.gil.switches = g.switches;
				put_rec(p, &r);
				atomic_fetch_add(&p->n_gil_changes, 1);
				last = g;
				last_tid = tid;
			}
		} else if (rec_procmem_gone(mem)) {
			break;
		}
		if (rec_procmem_failures(mem) != f0) {
			p->giv_failed += rec_procmem_failures(mem) - f0;
			atomic_fetch_add(&p->n_gil_failed, rec_procmem_failures(mem) - f0);
		}
		if (now - p->giv_start_ns >= HEALTH_INTERVAL_NS) {
			if (p->giv_failed)
				put_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, now, p->giv_failed, 0, p->giv_reads);
			p->giv_start_ns = now;
			p->giv_failed = p->giv_reads = 0;
		}
	}
	if (p->giv_failed)
		put_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, gtt_now_ns(), p->giv_failed, 0, p->giv_reads);
	rec_ticker_finish(tk, 0);
out:
	rec_ticker_destroy(tk);
	rec_procmem_close(mem);
	return NULL;
}

/* ---- the stack loop (discovery first) ---- */

/* Look for the interpreter until it is found and initialized (in launch mode the target may
 * not have exec'd or initialized yet), then write what was found. 0 ready to read,
 * -ECANCELED the reader was stopped, or the -errno of rec_pydisc_* with state and reason set. */
static int find_interpreter(rec_py *p)
{
	uint64_t t_start = gtt_now_ns();
	char reason[sizeof(p->reason)];
	int rc;

	for (;;) {
		rc = rec_pydisc_find(p->pid, p->mem, &p->py, reason, sizeof(reason));
		if (rc != 0)
			break;
		/* often at first (an exec, a start-up), then rarely */
		if ((rc = sleep_ns(p, gtt_now_ns() - t_start < FAST_LOOK_NS ? FAST_LOOK_PERIOD_NS : SLOW_LOOK_PERIOD_NS)) < 0)
			return rc;
	}
	if (rc < 0) {
		if (rc == -ESRCH)
			atomic_store(&p->gone, 1);
		atomic_store(&p->state, rc == -ESRCH && !p->py.tentative[0] ? REC_PY_NOT_FOUND : REC_PY_REFUSED);
		set_reason(p, "%s%s", reason, NULL);
		return rc;
	}
	pthread_mutex_lock(&p->lock);
	snprintf(p->version, sizeof(p->version), "%s", p->py.version);
	pthread_mutex_unlock(&p->lock);
	while ((rc = rec_pydisc_ready(p->mem, &p->py)) == 0)
		if ((rc = sleep_ns(p, READY_PERIOD_NS)) < 0)
			return rc;
	if (rc < 0) {
		atomic_store(&p->gone, 1);
		atomic_store(&p->state, REC_PY_EXITED_EARLY);
		set_reason(p, "target exited before the interpreter was initialized%s%s", NULL, NULL);
		return rc;
	}
	atomic_store(&p->gil_addr, rec_py_gil_addr(p->mem, &p->py.off, p->py.runtime));
	put_meta(p, "python_version", p->py.version);
	put_meta(p, "python_interpreter", p->py.path);
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ && p->tcb_tid_off < 0)
		put_note(p, GTT_SRC_PYSTACK, gtt_now_ns(),
		         "CPython 3.10: cannot map threads to OS tids (glibc struct pthread layout not found)");
	return 0;
}

static void *stack_main(void *arg)
{
	rec_py *p = arg;
	rec_ticker *tk = NULL;
	thread_read *th = NULL;
	rec_pyframe_raw *raw = NULL;
	gtt_py_frame *frames = NULL;
	uint64_t period = gt_hz_to_period_ns(p->opts.stack_hz);
	int n_long = 0;

	tcb_calibrate(p);
	if (find_interpreter(p) < 0)
		goto out;
	th = calloc(MAX_THREADS, sizeof(*th));
	raw = calloc(REC_PY_MAX_FRAMES, sizeof(*raw));
	frames = calloc(REC_PY_MAX_FRAMES, sizeof(*frames));
	tk = rec_ticker_create(GTT_SRC_PYSTACK, period, 0, p->w);
	p->codes = rec_pycache_create(p->pid, p->mem, &p->py.off, p->py.code_type, emit_code, p);
	if (!th || !raw || !frames || !tk || !p->codes) {
		set_reason(p, "out of memory%s%s", NULL, NULL);
		atomic_store(&p->state, REC_PY_FAILED);
		goto out;
	}
	atomic_store(&p->state, REC_PY_READING);
	/* the same for the stack loop, below the GIL poll so that a long pass never delays it */
	{
		struct sched_param sp = { .sched_priority = 1 };
		p->stack_rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	}
	if (pthread_create(&p->gil_thr, NULL, gil_main, p) == 0)
		p->have_gil_thr = 1;
	p->iv_start_ns = gtt_now_ns();
	while (!atomic_load(&p->stop)) {
		uint64_t now = rec_ticker_wait(tk);

		if (atomic_load(&p->stop))
			break;
		if (stack_pass(p, th, raw, frames) < 0) {
			atomic_store(&p->gone, 1);
			break;
		}
		/* a real-time loop must not take most of a CPU: passes that need more than half
		 * the period (thousands of threads) go back to normal scheduling */
		if (p->stack_rt && gtt_now_ns() - now > period / 2 && ++n_long >= 3) {
			struct sched_param sp = { .sched_priority = 0 };
			pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
			p->stack_rt = 0;
			put_note(p, GTT_SRC_PYSTACK, now,
			         "Python stack passes take over half the read period: reader left real-time scheduling");
		} else if (gtt_now_ns() - now <= period / 2) {
			n_long = 0;
		}
		stack_health_interval(p, now, 0);
	}
	stack_health_interval(p, gtt_now_ns(), 1);
	rec_ticker_finish(tk, 0);
out:
	rec_ticker_destroy(tk);
	free(th);
	free(raw);
	free(frames);
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
	p->w = w;
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
	pthread_mutex_init(&p->lock, NULL);
	p->n_tcb_cands = tcb_candidates(p->tcb_cands, 64);
	p->mem = rec_procmem_open(pid);
	if (!p->mem) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (pthread_create(&p->stack_thr, NULL, stack_main, p) != 0) {
		snprintf(err, errlen, "cannot start the Python reader thread: %s", strerror(errno));
		goto fail;
	}
	p->have_stack_thr = 1;
	return p;
fail:
	rec_procmem_close(p->mem);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return NULL;
}

void rec_py_status(rec_py *p, char *buf, size_t len)
{
	int st, gone;
	uint64_t n_st, ns;

	if (!p) {
		snprintf(buf, len, "python: off");
		return;
	}
	st = atomic_load(&p->state);
	gone = atomic_load(&p->gone);
	n_st = atomic_load(&p->n_stacks);
	ns = atomic_load(&p->read_ns);
	pthread_mutex_lock(&p->lock);
	if (st == REC_PY_LOOKING)
		snprintf(buf, len, "python: looking for CPython in pid %d", (int)p->pid);
	else if (st != REC_PY_READING)
		snprintf(buf, len, "python: %s", p->reason);
	else
		snprintf(buf, len, "python %s: %llu stacks (%llu failed reads, %llu torn), %llu GIL polls, "
		         "%llu GIL changes, %.1f us and %.1f reads per stack%s",
		         p->version, (unsigned long long)n_st, (unsigned long long)atomic_load(&p->n_failed),
		         (unsigned long long)atomic_load(&p->n_torn), (unsigned long long)atomic_load(&p->n_polls),
		         (unsigned long long)atomic_load(&p->n_gil_changes),
		         n_st ? (double)ns / (double)n_st / (double)GT_NS_PER_US : 0.0,
		         n_st ? (double)atomic_load(&p->n_reads) / (double)n_st : 0.0, gone ? " (target exited)" : "");
	pthread_mutex_unlock(&p->lock);
}

void rec_py_stop(rec_py *p, rec_py_result *res)
{
	char text[sizeof(res->text)];
	int st;

	if (res)
		memset(res, 0, sizeof(*res));
	if (!p)
		return;
	atomic_store(&p->stop, 1);
	if (p->have_stack_thr)
		pthread_join(p->stack_thr, NULL);
	if (p->have_gil_thr)
		pthread_join(p->gil_thr, NULL);
	st = atomic_load(&p->state);
	if (st == REC_PY_LOOKING) {
		/* the recording ended before an interpreter was found */
		if (p->py.tentative[0]) {
			st = REC_PY_REFUSED;
			snprintf(p->reason, sizeof(p->reason), "%s", p->py.tentative);
		} else {
			st = REC_PY_NOT_FOUND;
			snprintf(p->reason, sizeof(p->reason),
			         "no CPython interpreter found in pid %d (no libpython or _PyRuntime symbol)", (int)p->pid);
		}
		atomic_store(&p->state, st);
	}
	if (st == REC_PY_READING) {
		rec_py_status(p, text, sizeof(text));
		put_note(p, GTT_SRC_PYSTACK, gtt_now_ns(), text);
	} else {
		snprintf(text, sizeof(text), "%s", p->reason);
		put_note(p, GTT_SRC_PYSTACK, gtt_now_ns(), p->reason);
	}
	if (res) {
		res->state = (rec_py_state)st;
		res->target_gone = atomic_load(&p->gone);
		snprintf(res->text, sizeof(res->text), "%s", text);
	}
	rec_pycache_destroy(p->codes);
	rec_procmem_close(p->mem);
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
