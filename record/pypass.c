/* pypass.c — the stack pass of one process: a snapshot of what the last pass read (each
 * thread's leaf words read first and again at the end, then the GIL, in one system call),
 * every thread walked from it in place, the code objects of its frames checked against reuse,
 * the threads it cannot vouch for checked in one batched read, the code objects met for the
 * first time read together, OS tids of 3.10 threads, names and PY_STACK records. */
#include "pyproc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_util.h"
#include "procfs.h"
#include "pyproc_priv.h"

/* ---- threads and their OS tids ---- */

/* OS tids of 3.10 threads: glibc's pthread_t is the address of its struct pthread, whose tid
 * field offset pyreader.c found in its own threads; a tid is accepted only when the TCB points
 * to itself (x86-64 tcbhead_t) and /proc lists the tid as a thread of the target. The reads go
 * through the pass's snapshot like the thread states'. */
static void tids_310(rec_pyproc *p, thread_read *th, size_t n)
{
	size_t i, j, slot;

	if (p->tcb_tid_off < 0 || !p->tcb)
		return;
	for (i = 0; i < n; i++) {
		thread_read *t = &th[i];
		uint32_t tid;

		t->tid = 0;
		if (rec_procmem_read(p->mem, t->t.thread_id, &t->tcb_self, 8) < 0 ||
		    rec_procmem_read(p->mem, t->t.thread_id + (uint64_t)p->tcb_tid_off, &t->tcb_tid_raw, 4) < 0)
			continue;
		tid = t->tcb_tid_raw;
		if (t->tcb_self != t->t.thread_id || !tid)
			continue;
		/* /proc confirms a (pthread, tid) pair once; a pthread_t reused by a new thread comes
		 * with a new tid and is checked again */
		slot = (size_t)((t->t.thread_id >> 4) ^ tid) % TCB_SEEN;
		for (j = 0; j < 4; j++) {
			tcb_seen *e = &p->tcb[(slot + j) % TCB_SEEN];
			if (e->pthread == t->t.thread_id && e->tid == tid) {
				t->tid = tid;
				break;
			}
		}
		if (t->tid)
			continue;
		if (rec_procfs_has_thread(p->pid, (pid_t)tid)) {
			t->tid = tid;
			p->tcb[(slot + p->tcb_rr++ % 4) % TCB_SEEN] = (tcb_seen){ t->t.thread_id, tid };
		}
	}
}

/* A native tid is this process's: after a fork without exec the child's thread list still
 * holds its parent's threads (until the child runs Python again), with the parent's tids. */
static int tid_is_mine(rec_pyproc *p, uint32_t tid)
{
	size_t slot = (size_t)(tid * 2654435761u) % TIDS_SEEN;

	if (p->root || !tid || !p->tids_ok)
		return tid != 0 && (p->root || rec_procfs_has_thread(p->pid, (pid_t)tid));
	if (p->tids_ok[slot] == tid)
		return 1;
	if (!rec_procfs_has_thread(p->pid, (pid_t)tid))
		return 0;
	p->tids_ok[slot] = tid;
	return 1;
}

/* Walk all interpreters' thread lists. Returns the number of threads read, -errno when the
 * interpreter list itself is unreadable. */
static int read_threads(rec_pyproc *p, thread_read *th, size_t cap, uint64_t now)
{
	uint64_t interp = 0, ts;
	size_t n = 0;
	int k, rc;

	/* the interpreters change only when subinterpreters come and go: their list is read
	 * again every INTERPS_PERIOD_NS, the threads of each every pass */
	if (now >= p->interps_next_ns || !p->n_interps) {
		p->n_interps = 0;
		if ((rc = rec_procmem_read(p->mem, p->py.runtime + (uint64_t)p->py.off.rt_interp_head, &interp, 8)) < 0)
			return rc;
		for (k = 0; interp && k < MAX_INTERPS; k++) {
			p->interps[p->n_interps++] = interp;
			if (rec_procmem_read(p->mem, interp + (uint64_t)p->py.off.is_next, &interp, 8) < 0)
				break;
		}
		p->interps_next_ns = now + INTERPS_PERIOD_NS;
	}
	for (k = 0; k < (int)p->n_interps; k++) {
		interp = p->interps[k];
		if ((rc = rec_procmem_read(p->mem, interp + (uint64_t)p->py.off.is_threads_head, &ts, 8)) < 0) {
			p->interps_next_ns = 0;
			return rc;
		}
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
	}
	return (int)n;
}

static void publish_tids(rec_pyproc *p, const thread_read *th, size_t n)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	if (GT_GROW(p->tids, p->cap_tids, n ? n : 1) == 0) {
		p->n_tids = 0;
		for (i = 0; i < n; i++)
			if (th[i].tid)
				p->tids[p->n_tids++] = (tid_entry){ th[i].t.addr, th[i].tid };
	}
	pthread_mutex_unlock(&p->lock);
}

uint32_t rec_pyproc_tid_of(rec_pyproc *p, uint64_t tstate)
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

/* ---- checks: is what was walked still the thread's stack? ---- */

/* The requests that re-read a thread's leaf frame pointer (through the cframe on 3.11/3.12)
 * and the leaf's code, appended to req. */
static int check_reqs(rec_pyproc *p, thread_read *t, rec_procmem_req *req)
{
	int k = 0;

	if (!t->t.frame)
		return 0;
	if (p->py.off.ts_cframe >= 0) {
		req[k++] = (rec_procmem_req){ t->t.addr + (uint64_t)p->py.off.ts_cframe, &t->chk_cframe, 8, 0 };
		req[k++] = (rec_procmem_req){ t->t.cframe + (uint64_t)p->py.off.cf_current_frame, &t->chk_leaf, 8, 0 };
	} else {
		req[k++] = (rec_procmem_req){ t->t.addr + (uint64_t)p->py.off.ts_frame, &t->chk_leaf, 8, 0 };
	}
	req[k++] = (rec_procmem_req){ t->t.frame + (uint64_t)p->py.off.fr_code, &t->chk_code, 8, 0 };
	return k;
}

/* After the check requests of t (req[0..n)) were read: the same leaf, consistent (0); a leaf
 * that is one of the frames walked (the thread only returned while we read), consistent from
 * there (t->keep_from = its index); anything else torn (1). */
static int check_result(rec_pyproc *p, thread_read *t, const rec_pyframe_raw *raw, int nf,
                        const rec_procmem_req *req, int n)
{
	int i;

	t->keep_from = 0;
	if (!t->t.frame)
		return 0;
	for (i = 0; i < n; i++)
		if (!req[i].ok)
			return 1;
	if (p->py.off.ts_cframe >= 0 && t->chk_cframe != t->t.cframe)
		return 1;
	if (t->chk_leaf == t->t.frame)
		return nf > 0 && t->chk_code != raw[0].code;
	for (i = 1; i < nf; i++) {
		if (raw[i].addr == t->chk_leaf) {
			t->keep_from = i;
			return 0;
		}
	}
	return 1;
}

static size_t gil_len(const rec_pyoff *o)
{
	int32_t m = o->gil_holder;

	if (o->gil_locked > m)
		m = o->gil_locked;
	if (o->gil_switches > m)
		m = o->gil_switches;
	return (size_t)m + 8;
}

static void gil_decode(const rec_pyoff *o, const uint8_t *g, rec_pygil *gil)
{
	memcpy(&gil->holder, g + o->gil_holder, 8);
	memcpy(&gil->locked, g + o->gil_locked, 4);
	gil->switches = 0;
	if (o->gil_switches >= 0)
		memcpy(&gil->switches, g + o->gil_switches, 8);
}

/* Room for n more requests in p->req; 0 or -ENOMEM. */
static int reserve_reqs(rec_pyproc *p, size_t n)
{
	return GT_GROW(p->req, p->cap_req, n);
}

/* ---- the stack pass ---- */

/* Walk thread t's frames into the pool at p->pool[at..]: reads come from the snapshot or the
 * process. Sets t->nf and t->torn. */
static void walk(rec_pyproc *p, thread_read *t, size_t at)
{
	int tr = 0;

	t->raw_at = at;
	rec_procmem_cache_clear(p->mem);
	t->nf = t->t.frame ? rec_py_read_frames(p->mem, &p->py.off, t->t.frame, p->pool + at, REC_PY_MAX_FRAMES, &tr) : 0;
	if (t->nf < 0) {
		t->nf = 0;
		tr = 1;
	}
	t->torn = tr;
}

/* 3.11+: frames live on the thread's data stack and a call pushes the next one right above
 * the leaf. The next snapshot takes that room too (to the end of the leaf's page, which is
 * mapped: the leaf was read from it), so a stack one or two calls deeper than in this pass
 * is still read in the snapshot's one system call rather than in another. */
static void grow_room(rec_pyproc *p, uint64_t leaf)
{
	uint64_t end = leaf + STACK_ROOM, page_end = (leaf | (PAGE_BYTES - 1)) + 1;

	rec_procmem_note(p->mem, leaf, (size_t)((end < page_end ? end : page_end) - leaf));
}

/* A thread whose first read was torn (or that did not fit the pool), read alone again from
 * the process, at most twice more, each read checked at once. Its frames go to p->pool[at..]. */
static void reread(rec_pyproc *p, thread_read *t, size_t at)
{
	int attempt;
	rec_procmem_req req[4];

	for (attempt = 0; attempt < 2; attempt++) {
		int n;
		if (rec_py_read_thread(p->mem, &p->py.off, t->t.addr, &t->t) < 0)
			break;
		walk(p, t, at);
		rec_pycache_check_used(p->codes, p->pool + at, t->nf);
		n = check_reqs(p, t, req);
		if (n && rec_procmem_readv(p->mem, req, (size_t)n) < 0) {
			t->torn = 1;
			break;
		}
		t->time_ns = gtt_now_ns();
		if (check_result(p, t, p->pool + at, t->nf, req, n))
			t->torn = 1;
		if (!t->torn)
			break;
	}
}

/* The source line of instruction index in the code object of entry e: a two-way set of the
 * line cache (the newest first), hashed on both (the table's own low bits of addresses and
 * indexes alone put a deep stack's callers on few sets, each decoded again every pass). */
static int32_t line_of(rec_pyproc *p, const rec_pycache_entry *e, int64_t index)
{
	uint64_t h = (e->code_id ^ ((uint64_t)index << 40) ^ (uint64_t)index) * 0x9e3779b97f4a7c15ull;
	line_ent *l = &p->lines[(size_t)(h >> 40) % (LINE_CACHE / 2) * 2], t;

	if (l[0].code_id == e->code_id && l[0].index == index)
		return l[0].line;
	if (l[1].code_id == e->code_id && l[1].index == index) {
		t = l[1];
		l[1] = l[0];
		l[0] = t;
		return l[0].line;
	}
	l[1] = l[0];
	l[0] = (line_ent){ e->code_id, index,
	                   rec_py_line(p->py.off.line_format, e->c.linetable, e->c.linetable_len, e->c.firstlineno, index) };
	return l[0].line;
}

/* Name thread t's frames and write its PY_STACK record. */
static void put_stack(rec_pyproc *p, thread_read *t, const rec_pygil *gil)
{
	const rec_pyframe_raw *raw = p->pool + t->raw_at;
	gtt_py_frame *frames = p->frames;
	int k, out_n = 0, tr = t->torn;
	gtt_record r;

	for (k = 0; k < t->nf; k++) {
		const rec_pycache_entry *e = rec_pycache_get_at(p->codes, raw[k].code, raw[k].slot);
		if (!e) {
			/* not a readable code object: stop here rather than invent a frame */
			tr = 1;
			break;
		}
		frames[out_n].code_id = e->code_id;
		frames[out_n].line = line_of(p, e, raw[k].index);
		frames[out_n].flags = raw[k].flags;
		out_n++;
	}
	if (!tr && t->keep_from > 0 && t->keep_from <= out_n) {
		/* the thread returned from the leaf frames while we read: drop them */
		memmove(frames, frames + t->keep_from, (size_t)(out_n - t->keep_from) * sizeof(*frames));
		out_n -= t->keep_from;
	}
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_PY_STACK;
	r.u.py_stack.time_ns = t->time_ns;
	r.u.py_stack.pid = (uint32_t)p->pid;
	r.u.py_stack.tid = t->tid;
	r.u.py_stack.thread_id = t->t.addr;
	if (gil->locked == 1 && gil->holder == t->t.addr)
		r.u.py_stack.flags |= GTT_PYSTACK_HOLDS_GIL;
	if (gil->locked != -2)
		r.u.py_stack.flags |= GTT_PYSTACK_GIL_READ; /* the pass read the GIL (-2: it did not) */
	if (tr) {
		r.u.py_stack.flags |= GTT_PYSTACK_TORN;
		atomic_fetch_add(&p->n_torn, 1);
		p->iv_torn++;
	}
	if (!t->t.frame)
		r.u.py_stack.flags |= GTT_PYSTACK_IDLE;
	r.u.py_stack.n_frames = (uint32_t)out_n;
	r.u.py_stack.frames = frames;
	rec_pyproc_put(p, &r);
	atomic_fetch_add(&p->n_stacks, 1);
	atomic_fetch_add(&p->n_frames, (uint64_t)out_n);
}


/* The threads of this pass whose OS tid is known; n of them read into p->th. */
static int pass_threads(rec_pyproc *p, uint64_t t0)
{
	int n = read_threads(p, p->th, MAX_THREADS, t0), i, any = 0;

	if (n <= 0)
		return n;
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ) {
		tids_310(p, p->th, (size_t)n);
		for (i = 0; i < n; i++)
			any |= p->th[i].tid != 0;
		if (!any && !p->noted_no_tids && p->tcb_tid_off >= 0) {
			p->noted_no_tids = 1;
			rec_pyproc_note(p, t0, "CPython 3.10: no thread state maps to an OS tid (another libc in the target?): "
			                "its threads are not read");
		}
	} else {
		for (i = 0; i < n; i++)
			if (!tid_is_mine(p, p->th[i].tid))
				p->th[i].tid = 0;
	}
	publish_tids(p, p->th, (size_t)n);
	return n;
}

/* Brackets for the snapshot from what the last pass found: for each thread, the words that
 * lead to its leaf frame (tstate->cframe and cframe->current_frame on 3.11/3.12, else the
 * tstate's frame pointer) go into the ranges read first, and are read again after all the
 * others; then a few code objects to re-check, and the GIL. Returns the tail's length. */
static size_t plan_brackets(rec_pyproc *p, uint64_t gil_addr, size_t glen)
{
	const rec_pyoff *o = &p->py.off;
	size_t k, nf = 0, nt = 0;

	for (k = 0; k < p->n_pred; k++) {
		pred *e = &p->pred[k];
		if (!e->has_frame)
			continue; /* idle last time: nothing to bracket */
		e->tq = nt;
		if (o->ts_cframe >= 0) {
			p->first[nf++] = e->tstate + (uint64_t)o->ts_cframe;
			p->first[nf++] = e->cframe + (uint64_t)o->cf_current_frame;
			p->tail[nt++] = (rec_procmem_req){ e->tstate + (uint64_t)o->ts_cframe, &e->t_cframe, 8, 0 };
			p->tail[nt++] = (rec_procmem_req){ e->cframe + (uint64_t)o->cf_current_frame, &e->t_leaf, 8, 0 };
		} else {
			p->first[nf++] = e->tstate + (uint64_t)o->ts_frame;
			p->tail[nt++] = (rec_procmem_req){ e->tstate + (uint64_t)o->ts_frame, &e->t_leaf, 8, 0 };
		}
	}
	p->n_first = nf;
	rec_pycache_revalidate_reqs(p->codes, p->tail, &nt, 2 * MAX_THREADS + REC_PYCACHE_REVALIDATE);
	p->gil_tail = -1;
	if (gil_addr && glen <= sizeof(p->gil_buf)) {
		p->gil_tail = (long)nt;
		p->tail[nt++] = (rec_procmem_req){ gil_addr, p->gil_buf, glen, 0 };
	}
	return nt;
}

/* Thread t's entry in the last pass (pred[]), -1 when it is new; i: its place in this one
 * (threads keep their order in the list from pass to pass). */
static long find_pred(const rec_pyproc *p, const thread_read *t, size_t i)
{
	size_t k;

	if (i < p->n_pred && p->pred[i].tstate == t->t.addr)
		return (long)i;
	for (k = 0; k < p->n_pred; k++)
		if (p->pred[k].tstate == t->t.addr)
			return (long)k;
	return -1;
}

static int bracketed(rec_pyproc *p, const thread_read *t)
{
	const pred *e = NULL;
	size_t k, n = p->py.off.ts_cframe >= 0 ? 2 : 1;

	if (t->pred >= 0)
		e = &p->pred[t->pred];
	if (!e || !t->t.frame || !e->has_frame)
		return 0;
	for (k = 0; k < n; k++)
		if (!p->tail[e->tq + k].ok)
			return 0;
	/* the walk read the leaf words from the ranges read first: the same after all others */
	return e->t_leaf == t->t.frame && (n == 1 || e->t_cframe == t->t.cframe);
}

/* The threads of this pass as the next pass's brackets. */
static void save_pred(rec_pyproc *p, thread_read *th, int n)
{
	int i;

	p->n_pred = 0;
	for (i = 0; i < n; i++)
		p->pred[p->n_pred++] = (pred){ .tstate = th[i].t.addr, .cframe = th[i].t.cframe,
		                               .has_frame = th[i].tid && th[i].t.frame };
}

/* Code objects of thread t's frames not checked in this pass yet: queued for check_codes().
 * Every frame's code, every pass: a frame at the same address with the same code pointer as in
 * the last pass may be a new one running a new code object at a freed one's address (a second
 * module imported at the same depth as the first: the same interned name, another file). Those
 * the cache does not hold yet (met for the first time) go to p->fill, read together before the
 * stacks are named. */
static void queue_codes(rec_pyproc *p, const thread_read *t)
{
	size_t cap_miss = GT_GROW(p->fill, p->cap_fill, p->n_fill + (size_t)t->nf) == 0 ? p->cap_fill : p->n_fill;

	rec_pycache_check_reqs(p->codes, p->pool + t->raw_at, t->nf, p->creq, &p->n_creq, CODE_REQS, p->fill, &p->n_fill,
	                       cap_miss);
}

/* The queued code checks: their headers read through the snapshot (a header read in the same
 * system call as the frame that points to the code is as good as one read after it); those it
 * does not hold (code objects first seen in the last pass) read together in one batched read,
 * not one system call each, and noted for the next snapshot. */
static void check_codes(rec_pyproc *p)
{
	size_t i, n_miss = 0;
	rec_procmem_walk w;

	rec_procmem_walk_begin(&w);
	for (i = 0; i < p->n_creq; i++) {
		rec_procmem_req *q = &p->creq[i];
		const uint8_t *h = rec_procmem_walk_peek(p->mem, &w, q->addr, q->len);
		if (h) {
			memcpy(q->buf, h, q->len);
			q->ok = 1;
		} else {
			p->cmiss[n_miss++] = *q;
			q->ok = -1; /* in the batch */
		}
	}
	rec_procmem_walk_end(p->mem, &w);
	if (n_miss && rec_procmem_readv(p->mem, p->cmiss, n_miss) >= 0) {
		for (i = 0; i < n_miss; i++)
			if (p->cmiss[i].ok)
				rec_procmem_note(p->mem, p->cmiss[i].addr, p->cmiss[i].len);
	}
	for (i = 0, n_miss = 0; i < p->n_creq; i++) {
		rec_procmem_req *q = &p->creq[i];
		recent_code *r = &p->recent[(size_t)(((q->addr >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - RECENT_BITS))];
		if (q->ok == -1)
			q->ok = p->cmiss[n_miss++].ok;
		if (!q->ok)
			continue;
		if (!r->addr)
			p->recent_live[p->n_recent_live++] = (uint16_t)(r - p->recent);
		*r = (recent_code){ q->addr, p->pass_no, (uint32_t)q->len };
	}
	rec_pycache_check_apply(p->codes, p->creq);
	p->n_creq = 0;
}

/* The headers of the code objects checked in recent passes but not in this one, noted for the
 * next snapshot (those checked in this pass were noted by their read). One that this pass's
 * snapshot, which had it noted, could not read (freed, its arena unmapped) is forgotten: a
 * faulting range costs the snapshot another system call. */
static void note_recent_codes(rec_pyproc *p)
{
	size_t i;

	/* the slots in use only (a single thread's pass uses a handful of the table) */
	for (i = 0; i < p->n_recent_live;) {
		recent_code *r = &p->recent[p->recent_live[i]];
		if (r->pass == p->pass_no) {
			i++;
			continue;
		}
		if (p->pass_no - r->pass > RECENT_PASSES || !rec_procmem_snap_has(p->mem, r->addr, r->len)) {
			r->addr = 0;
			p->recent_live[i] = p->recent_live[--p->n_recent_live];
			continue;
		}
		rec_procmem_note(p->mem, r->addr, r->len);
		i++;
	}
}

int rec_pyproc_pass(rec_pyproc *p)
{
	uint64_t t0 = gtt_now_ns(), t_snap, gil_addr = atomic_load(&p->gil_addr);
	uint64_t reads0 = rec_procmem_reads(p->mem), failed0 = rec_procmem_failures(p->mem);
	uint64_t calls0 = rec_procmem_syscalls(p->mem), refused0 = rec_pycache_refused(p->codes);
	size_t n_req = 0, used = 0, glen = gil_len(&p->py.off), n_tail;
	rec_pygil gil = { 0, -2, 0 };
	int n, i;

	rec_pycache_begin_pass(p->codes, ++p->pass_no);
	p->n_fill = 0;
	if (!gil_addr) {
		/* 3.12+: the interpreter's GIL pointer is set during initialization */
		gil_addr = rec_py_gil_addr(p->mem, &p->py.off, p->py.runtime);
		atomic_store(&p->gil_addr, gil_addr);
	}
	/* 1. one system call: what the last pass read, each thread's leaf words first and again
	 * at the end, then the GIL; then walk every thread from it */
	n_tail = plan_brackets(p, gil_addr, glen);
	if (rec_procmem_snap_begin(p->mem, p->first, p->n_first, p->tail, n_tail) == -ESRCH) {
		rec_procmem_snap_end(p->mem);
		goto done;
	}
	t_snap = gtt_now_ns();
	rec_pycache_revalidate_apply(p->codes, p->tail);
	if (p->gil_tail >= 0 && p->tail[p->gil_tail].ok)
		gil_decode(&p->py.off, p->gil_buf, &gil);
	n = pass_threads(p, t0);
	if (n > 0 && GT_GROW(p->pool, p->cap_pool, (size_t)REC_PY_MAX_FRAMES) < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		thread_read *t = &p->th[i];
		uint64_t c0 = rec_procmem_syscalls(p->mem);
		t->nf = 0;
		t->time_ns = t_snap;
		t->checked = 0;
		t->pred = find_pred(p, t, (size_t)i);
		if (!t->tid)
			continue; /* no OS thread behind it (or an unknown tid on 3.10) */
		if (used + REC_PY_MAX_FRAMES > p->cap_pool &&
		    (p->cap_pool >= POOL_FRAMES || GT_GROW(p->pool, p->cap_pool, used + REC_PY_MAX_FRAMES) < 0)) {
			t->nf = -1; /* read alone after the batch */
			continue;
		}
		walk(p, t, used);
		if (p->py.off.frame_kind != REC_PY_FRAMEOBJ && t->t.frame)
			grow_room(p, t->t.frame);
		used += (size_t)t->nf;
		/* read from the snapshot alone and bracketed: consistent without another read */
		t->checked = !t->torn && rec_procmem_syscalls(p->mem) == c0 && (bracketed(p, t) || !t->t.frame);
		if (!t->torn)
			queue_codes(p, t);
	}
	check_codes(p);
	if (n > 0)
		note_recent_codes(p);
	rec_procmem_snap_end(p->mem);
	if (n < 0)
		goto done;
	/* 2. the threads the brackets could not vouch for: one batched read of their leaves */
	if (reserve_reqs(p, 1 + 3 * (size_t)n) < 0)
		goto done;
	for (i = 0; i < n; i++) {
		thread_read *t = &p->th[i];
		if (!t->tid || t->nf < 0 || t->torn || t->checked)
			continue;
		t->rq = n_req;
		t->n_rq = check_reqs(p, t, p->req + n_req);
		n_req += (size_t)t->n_rq;
	}
	if (n_req && rec_procmem_readv(p->mem, p->req, n_req) == -ESRCH)
		goto done;
	if (p->n_fill)
		rec_pycache_fill(p->codes, p->fill, p->n_fill);
	p->n_fill = 0;
	/* 3. torn threads read again alone, then names and records */
	for (i = 0; i < n; i++) {
		thread_read *t = &p->th[i];
		if (!t->tid)
			continue;
		if (t->nf >= 0 && !t->torn &&
		    (t->checked || check_result(p, t, p->pool + t->raw_at, t->nf, p->req + t->rq, t->n_rq) == 0)) {
			put_stack(p, t, &gil);
			continue;
		}
		/* the pool's tail is free once the batch is checked: rereads go there */
		if (used + REC_PY_MAX_FRAMES > p->cap_pool && GT_GROW(p->pool, p->cap_pool, used + REC_PY_MAX_FRAMES) < 0)
			continue;
		reread(p, t, used);
		used += (size_t)(t->nf > 0 ? t->nf : 0);
		put_stack(p, t, &gil);
	}
	save_pred(p, p->th, n);
	if (gil.locked != -2)
		rec_pyproc_gil_from_pass(p, &gil, t_snap);
	if (n > 0 && t0 >= p->names_next_ns) {
		p->names_next_ns = t0 + NAMES_PERIOD_NS;
		rec_pyproc_names_from_pass(p, p->th, (size_t)n, t0);
	}
done:
	/* a line table too large to read counts as a failed read */
	{
		uint64_t refused = rec_pycache_refused(p->codes) - refused0;
		uint64_t failed = rec_procmem_failures(p->mem) - failed0, reads = rec_procmem_reads(p->mem) - reads0;
		p->iv_failed += refused + failed;
		p->iv_reads += reads;
		atomic_fetch_add(&p->n_failed, refused + failed);
		atomic_fetch_add(&p->n_reads, reads);
		atomic_fetch_add(&p->n_calls, rec_procmem_syscalls(p->mem) - calls0);
	}
	atomic_store(&p->n_codes, rec_pycache_reads(p->codes));
	p->last_pass_ns = gtt_now_ns() - t0;
	atomic_fetch_add(&p->read_ns, p->last_pass_ns);
	atomic_fetch_add(&p->n_passes, 1);
	if (rec_procmem_gone(p->mem)) {
		atomic_store(&p->gone, 1);
		return -ESRCH;
	}
	return 0;
}

uint64_t rec_pyproc_last_pass_ns(const rec_pyproc *p)
{
	return p->last_pass_ns;
}

void rec_pyproc_health(rec_pyproc *p, uint64_t now, int force)
{
	if (!force && now - p->iv_start_ns < HEALTH_INTERVAL_NS)
		return;
	if (p->iv_failed || p->iv_torn)
		rec_pyproc_read_errors(p, GTT_SRC_PYSTACK, p->iv_start_ns, now, p->iv_failed, p->iv_torn, p->iv_reads);
	p->iv_start_ns = now;
	p->iv_failed = p->iv_torn = p->iv_reads = 0;
}
