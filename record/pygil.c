/* pygil.c — the GIL state of one process, shared by the GIL poll and the stack pass: a
 * record on each change (and when hand-offs went unseen), the poll's idle and churn states. */
#include "pyproc.h"

#include <errno.h>
#include <string.h>

#include "pyproc_priv.h"

/* ---- the GIL ---- */

int rec_pyproc_gil_fast(const rec_pyproc *p)
{
	return atomic_load(&p->gil_fast);
}

int rec_pyproc_gil_churn(const rec_pyproc *p)
{
	return __builtin_popcount(p->gil_hist) >= 24;
}

/* A GIL record for state g read at now (gil_lock held); prev_ns: the read before. */
static void put_gil(rec_pyproc *p, const rec_pygil *g, uint32_t tid, uint64_t now)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_GIL;
	r.u.gil.time_ns = now;
	r.u.gil.pid = (uint32_t)p->pid;
	r.u.gil.holder_tid = g->locked == 1 ? tid : 0;
	r.u.gil.locked = g->locked == 1;
	r.u.gil.switches = g->switches;
	r.u.gil.prev_ns = p->gil_known ? p->gil_last_ns : 0;
	rec_pyproc_put(p, &r);
}

/* The OS tid of the GIL holder tstate; mem: the caller's reader. */
static uint32_t holder_tid(rec_pyproc *p, rec_procmem *mem, uint64_t holder)
{
	uint32_t tid = holder == p->gil_last.holder && p->gil_known ? p->gil_last_tid : rec_pyproc_tid_of(p, holder);

	if (!tid && holder && p->py.off.ts_native_tid >= 0) {
		/* a thread newer than the last stack pass */
		uint64_t v = 0;
		if (rec_procmem_read(mem, holder + (uint64_t)p->py.off.ts_native_tid, &v, 8) == 0)
			tid = (uint32_t)v;
	}
	return tid;
}

/* A read g of the GIL at now, by the poll or by the stack pass (gil_lock held): a record when
 * the holder or the locked flag changed. Returns 1 when anything moved (switches included). */
static int gil_seen(rec_pyproc *p, rec_procmem *mem, const rec_pygil *g, uint64_t now)
{
	/* a record too when the holder left and came back unseen (the counter moved by two or
	 * more): the analysis then knows nobody's hold there is certain */
	int changed = !p->gil_known || g->holder != p->gil_last.holder || g->locked != p->gil_last.locked ||
	              (g->switches && g->switches >= p->gil_rec_switches + 2);
	int moved = changed || g->switches != p->gil_last.switches;

	if (changed) {
		uint32_t tid = holder_tid(p, mem, g->holder);
		put_gil(p, g, tid, now);
		atomic_fetch_add(&p->n_gil_changes, 1);
		p->gil_last_tid = tid;
		p->gil_rec_switches = g->switches;
	}
	if (moved || !p->gil_known)
		p->gil_still_ns = now;
	p->gil_last = *g;
	p->gil_last_ns = now;
	p->gil_known = 1;
	return moved;
}

/* The stack pass read the GIL: while the poll sleeps, this is the GIL's only reader; the
 * first movement wakes the poll up. */
void rec_pyproc_gil_from_pass(rec_pyproc *p, const rec_pygil *g, uint64_t now)
{
	int wake = 0;

	if (atomic_load(&p->gil_fast))
		return; /* the poll reads it, more often */
	pthread_mutex_lock(&p->gil_lock);
	if (!atomic_load(&p->gil_fast) && gil_seen(p, p->mem, g, now)) {
		atomic_store(&p->gil_fast, 1);
		wake = 1;
	}
	pthread_mutex_unlock(&p->gil_lock);
	if (wake && p->sink->gil_wake)
		p->sink->gil_wake(p->sink->wake_ctx);
}

int rec_pyproc_gil_poll(rec_pyproc *p, uint64_t now)
{
	uint64_t gil_addr = atomic_load(&p->gil_addr), f0 = rec_procmem_failures(p->gil_mem);
	rec_pygil g;
	int rc = 0;

	atomic_fetch_add(&p->n_polls, 1);
	p->giv_reads++;
	if (gil_addr && rec_py_read_gil(p->gil_mem, &p->py.off, gil_addr, &g) == 0) {
		uint64_t n0 = atomic_load(&p->n_gil_changes);
		pthread_mutex_lock(&p->gil_lock);
		gil_seen(p, p->gil_mem, &g, now);
		p->gil_hist = p->gil_hist << 1 | (atomic_load(&p->n_gil_changes) != n0);
		/* nothing moved for a while: the stack pass watches it from now on */
		if (now - p->gil_still_ns >= GIL_IDLE_NS)
			atomic_store(&p->gil_fast, 0);
		pthread_mutex_unlock(&p->gil_lock);
	} else if (rec_procmem_gone(p->gil_mem)) {
		rc = -ESRCH;
	}
	if (rec_procmem_failures(p->gil_mem) != f0) {
		p->giv_failed += rec_procmem_failures(p->gil_mem) - f0;
		atomic_fetch_add(&p->n_gil_failed, rec_procmem_failures(p->gil_mem) - f0);
	}
	if (now - p->giv_start_ns >= HEALTH_INTERVAL_NS || rc < 0) {
		if (p->giv_failed)
			rec_pyproc_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, now, p->giv_failed, 0, p->giv_reads);
		p->giv_start_ns = now;
		p->giv_failed = p->giv_reads = 0;
	}
	return rc;
}
