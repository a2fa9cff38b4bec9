/* pyproc.c — one process of the Python reader: its records, life (create, discovery, end),
 * the names of its threads, and its outcome; the stack pass is pypass.c, the GIL pygil.c. */
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

/* ---- records ---- */

void rec_pyproc_put(rec_pyproc *p, const gtt_record *r)
{
	if (p->sink->w)
		gtt_write(p->sink->w, r);
	if (p->sink->observe)
		p->sink->observe(p->sink->observe_ctx, r);
}

static void emit_code(void *ctx, const gtt_record *r)
{
	rec_pyproc_put(ctx, r);
}

void rec_pyproc_note(rec_pyproc *p, uint64_t time_ns, const char *text)
{
	if (p->sink->w)
		gtt_write_note(p->sink->w, GTT_SRC_PYSTACK, time_ns, (uint32_t)p->pid, 0, text);
}

static void put_meta(rec_pyproc *p, const char *key, const char *value)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_META;
	r.u.meta.key = key;
	r.u.meta.value = value;
	rec_pyproc_put(p, &r);
}

/* A READ_ERRORS record over [t0, t1): count failures, value[0..2] failed reads, torn
 * stacks, reads (docs/FORMAT.md). */
void rec_pyproc_read_errors(rec_pyproc *p, uint32_t source, uint64_t t0, uint64_t t1, uint64_t failed,
                            uint64_t torn, uint64_t reads)
{
	gtt_health h = { .time_ns = t0, .end_ns = t1, .source = source, .kind = GTT_HEALTH_READ_ERRORS,
	                 .pid = (uint32_t)p->pid, .count = failed + torn, .value = { failed, torn, reads } };

	if (p->sink->w)
		gtt_write_health(p->sink->w, &h);
}

static void set_reason(rec_pyproc *p, const char *text)
{
	pthread_mutex_lock(&p->lock);
	snprintf(p->reason, sizeof(p->reason), "%s", text);
	pthread_mutex_unlock(&p->lock);
}

/* ---- create ---- */

rec_pyproc *rec_pyproc_create(pid_t pid, int root, const rec_pysink *sink, int32_t tcb_tid_off)
{
	rec_pyproc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->root = root;
	p->sink = sink;
	p->tcb_tid_off = tcb_tid_off;
	p->gil_last.locked = -3; /* nothing read yet: the first read is a change */
	atomic_store(&p->gil_fast, 1);
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->gil_lock, NULL);
	p->mem = rec_procmem_open(pid);
	p->gil_mem = rec_procmem_open(pid);
	if (!p->mem || !p->gil_mem) {
		rec_pyproc_destroy(p);
		return NULL;
	}
	return p;
}

/* The pass's buffers, the code cache and the stack loop's reader: what a process that is read
 * no more does not need (its counters and outcome stay). */
static void release_pass(rec_pyproc *p)
{
	rec_pycache_destroy(p->codes);
	rec_pynames_destroy(p->names);
	rec_procmem_close(p->mem);
	free(p->tids);
	free(p->th);
	free(p->pool);
	free(p->frames);
	free(p->req);
	free(p->named);
	free(p->lines);
	free(p->pred);
	free(p->first);
	free(p->tail);
	free(p->creq);
	free(p->cmiss);
	free(p->fill);
	free(p->recent);
	free(p->recent_live);
	free(p->tcb);
	free(p->tids_ok);
	p->codes = NULL;
	p->names = NULL;
	p->mem = NULL;
	p->tids = NULL;
	p->n_tids = p->cap_tids = 0;
	p->th = NULL;
	p->pool = NULL;
	p->cap_pool = 0;
	p->frames = NULL;
	p->req = NULL;
	p->cap_req = 0;
	p->named = NULL;
	p->n_named = p->cap_named = 0;
	p->lines = NULL;
	p->pred = NULL;
	p->n_pred = 0;
	p->first = NULL;
	p->tail = NULL;
	p->creq = NULL;
	p->cmiss = NULL;
	p->fill = NULL;
	p->n_fill = p->cap_fill = 0;
	p->recent = NULL;
	p->recent_live = NULL;
	p->n_recent_live = 0;
	p->tcb = NULL;
	p->tids_ok = NULL;
}

void rec_pyproc_release(rec_pyproc *p)
{
	if (!p || !atomic_load(&p->ended))
		return;
	pthread_mutex_lock(&p->lock); /* the tid map is the GIL poll's too */
	release_pass(p);
	pthread_mutex_unlock(&p->lock);
}

void rec_pyproc_release_gil(rec_pyproc *p)
{
	if (!p || !atomic_load(&p->ended))
		return;
	rec_procmem_close(p->gil_mem);
	p->gil_mem = NULL;
}

void rec_pyproc_destroy(rec_pyproc *p)
{
	if (!p)
		return;
	release_pass(p);
	rec_procmem_close(p->gil_mem);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->gil_lock);
	free(p);
}

/* ---- discovery ---- */

void rec_pyproc_inherit(rec_pyproc *p, const rec_pyproc *parent, uint64_t fork_ns)
{
	p->py = parent->py;
	p->py.tentative[0] = '\0'; /* what the parent's search once saw is not this process's */
	p->found = 1;
	p->inherited = 1;
	p->image_ns = fork_ns;
	pthread_mutex_lock(&p->lock);
	snprintf(p->version, sizeof(p->version), "%s", p->py.version);
	pthread_mutex_unlock(&p->lock);
}

void rec_pyproc_maps_moved(rec_pyproc *p)
{
	atomic_store(&p->maps_moved, 1);
}

uint64_t rec_pyproc_next_look(const rec_pyproc *p)
{
	return p->next_look_ns;
}

uint64_t rec_pyproc_image_ns(const rec_pyproc *p)
{
	return p->found ? p->image_ns : 0;
}

static int name_is_python(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strstr(b, "python") != NULL;
}

/* The buffers and the code cache a reading process needs; 0 or -ENOMEM. */
static int start_reading(rec_pyproc *p)
{
	p->th = calloc(MAX_THREADS, sizeof(*p->th));
	p->frames = calloc(REC_PY_MAX_FRAMES, sizeof(*p->frames));
	p->lines = calloc(LINE_CACHE, sizeof(*p->lines));
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ)
		p->tcb = calloc(TCB_SEEN, sizeof(*p->tcb));
	if (!p->root)
		p->tids_ok = calloc(TIDS_SEEN, sizeof(*p->tids_ok));
	p->pred = calloc(MAX_THREADS, sizeof(*p->pred));
	p->first = calloc(2 * MAX_THREADS, sizeof(*p->first));
	p->tail = calloc(2 * MAX_THREADS + 1 + REC_PYCACHE_REVALIDATE, sizeof(*p->tail));
	p->creq = calloc(CODE_REQS, sizeof(*p->creq));
	p->cmiss = calloc(CODE_REQS, sizeof(*p->cmiss));
	p->recent = calloc(RECENT_CODES, sizeof(*p->recent));
	p->recent_live = calloc(RECENT_CODES, sizeof(*p->recent_live));
	p->codes = rec_pycache_create(p->pid, p->mem, &p->py.off, p->py.code_type, emit_code, p);
	p->names = rec_pynames_create(&p->py.off, p->py.dict_type);
	if (!p->th || !p->frames || !p->lines || !p->pred || !p->first || !p->tail || !p->creq || !p->cmiss || !p->recent || !p->recent_live || !p->codes ||
	    !p->names || (p->py.off.frame_kind == REC_PY_FRAMEOBJ && !p->tcb) || (!p->root && !p->tids_ok))
		return -ENOMEM;
	atomic_store(&p->gil_addr, rec_py_gil_addr(p->mem, &p->py.off, p->py.runtime));
	return 0;
}

/* What was found, into the trace: the recorded process's as META keys (the report's header),
 * a child's as a NOTE naming it. */
static void announce(rec_pyproc *p, uint64_t now)
{
	char text[4400];

	if (p->root) {
		put_meta(p, "python_version", p->py.version);
		put_meta(p, "python_interpreter", p->py.path);
	} else {
		snprintf(text, sizeof(text), "python %s in pid %d (%s)%s", p->py.version, (int)p->pid, p->py.path,
		         p->inherited ? ", forked" : "");
		rec_pyproc_note(p, now, text);
	}
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ && p->tcb_tid_off < 0)
		rec_pyproc_note(p, now, "CPython 3.10: cannot map threads to OS tids (glibc struct pthread layout not found)");
}

void rec_pyproc_exec_cmd(rec_pyproc *p, const char *cmdline)
{
	char v[sizeof(p->name_verdict)] = "";

	rec_pydisc_name_verdict(cmdline, v, sizeof(v));
	pthread_mutex_lock(&p->lock);
	snprintf(p->name_verdict, sizeof(p->name_verdict), "%s", v);
	/* the record came a drain after the look that found the process gone without a clue */
	if (v[0] && atomic_load(&p->state) == REC_PY_NOT_FOUND) {
		atomic_store(&p->state, REC_PY_REFUSED);
		snprintf(p->reason, sizeof(p->reason), "%s", v);
	}
	pthread_mutex_unlock(&p->lock);
}

/* Nothing was found and the process is gone: what its exec'd name says, into reason (1), or
 * nothing (0). */
static int verdict_by_name(rec_pyproc *p, char *reason, size_t len)
{
	int k;

	pthread_mutex_lock(&p->lock);
	k = p->name_verdict[0] != '\0';
	if (k)
		snprintf(reason, len, "%s", p->name_verdict);
	pthread_mutex_unlock(&p->lock);
	return k;
}

int rec_pyproc_look(rec_pyproc *p, uint64_t now)
{
	char reason[sizeof(p->reason)] = "";
	int rc;

	if (!p->look_start_ns)
		p->look_start_ns = now;
	/* fast looks while the process starts (ld.so mapping its libraries after an exec); once its
	 * candidates stayed the same over a few looks (a process attached to, long started) or
	 * after the first seconds, only a new mapping or the quiet period brings another */
	int settled = now - p->look_start_ns >= FAST_LOOK_NS || p->py.same_looks >= SETTLED_LOOKS;
	if (!p->found && settled && p->py.have_nothing_sig && now - p->maps_read_ns < QUIET_LOOK_NS &&
	    !atomic_exchange(&p->maps_moved, 0) && (kill(p->pid, 0) == 0 || errno != ESRCH)) {
		/* nothing mapped since a look that found nothing: nothing to find */
		p->next_look_ns = now + SLOW_LOOK_PERIOD_NS;
		return 0;
	}
	if (!p->found) {
		p->maps_read_ns = now;
		rc = rec_pydisc_find(p->pid, p->mem, &p->py, reason, sizeof(reason));
		if (rc == 0) {
			uint64_t waited = now - p->look_start_ns;
			char exe[PATH_MAX] = "";
			/* a child is looked at for a short while after its exec: long enough for ld.so
			 * to map libpython, not forever for every program the tree runs */
			if (!p->root && waited > (p->py.tentative[0] || (rec_procfs_exe(p->pid, exe, sizeof(exe)) == 0 &&
			                                                 name_is_python(exe)) ? FAST_LOOK_NS : CHILD_LOOK_NS)) {
				rc = -ESRCH;
				snprintf(reason, sizeof(reason), "%s", p->py.tentative[0] ? p->py.tentative : "");
			} else {
				p->next_look_ns = now + (waited < FAST_LOOK_NS ? FAST_LOOK_PERIOD_NS : SLOW_LOOK_PERIOD_NS);
				return 0;
			}
		}
		if (rc < 0) {
			int by_name = 0;
			if (rc == -ESRCH && kill(p->pid, 0) < 0)
				atomic_store(&p->gone, 1);
			/* gone before any look saw it mapped: a short-lived python3.9 says what it was */
			if (rc == -ESRCH && !p->py.tentative[0])
				by_name = verdict_by_name(p, reason, sizeof(reason));
			atomic_store(&p->state, rc == -ESRCH && !p->py.tentative[0] && !by_name ? REC_PY_NOT_FOUND : REC_PY_REFUSED);
			if (!reason[0])
				snprintf(reason, sizeof(reason), "no CPython interpreter found in pid %d (no libpython or "
				         "_PyRuntime symbol)", (int)p->pid);
			set_reason(p, reason);
			return -1;
		}
		p->found = 1;
		p->image_ns = now; /* the maps read at now showed this interpreter */
		pthread_mutex_lock(&p->lock);
		snprintf(p->version, sizeof(p->version), "%s", p->py.version);
		pthread_mutex_unlock(&p->lock);
	}
	rc = rec_pydisc_ready(p->mem, &p->py);
	if (rc == 0) {
		p->next_look_ns = now + READY_PERIOD_NS;
		return 0;
	}
	if (rc < 0) {
		atomic_store(&p->gone, 1);
		atomic_store(&p->state, REC_PY_EXITED_EARLY);
		set_reason(p, "target exited before the interpreter was initialized");
		return -1;
	}
	if (start_reading(p) < 0) {
		atomic_store(&p->state, REC_PY_FAILED);
		set_reason(p, "out of memory");
		return -1;
	}
	announce(p, now);
	p->iv_start_ns = p->giv_start_ns = now;
	atomic_store(&p->state, REC_PY_READING);
	return 1;
}

/* ---- thread names ---- */

/* The names the registry gives, to the OS threads of this pass (ident = pthread_t =
 * PyThreadState.thread_id): a py_thread record for each new or changed one. */
void rec_pyproc_names_from_pass(rec_pyproc *p, const thread_read *th, size_t n, uint64_t now)
{
	const rec_pyname *nm;
	size_t n_nm = 0, i, j, k;
	uint64_t interp = 0;

	if (rec_procmem_read(p->mem, p->py.runtime + (uint64_t)p->py.off.rt_interp_head + 8, &interp, 8) < 0 ||
	    !interp || rec_pynames_poll(p->names, p->mem, interp, now, &nm, &n_nm) != 1)
		return;
	for (i = 0; i < n_nm; i++) {
		for (j = 0; j < n; j++)
			if (th[j].tid && th[j].t.thread_id == nm[i].ident)
				break;
		if (j == n)
			continue; /* not a thread with a state (yet) */
		for (k = 0; k < p->n_named; k++)
			if (p->named[k].tid == th[j].tid)
				break;
		if (k < p->n_named && strcmp(p->named[k].name, nm[i].name) == 0)
			continue;
		if (k == p->n_named) {
			if (GT_GROW(p->named, p->cap_named, p->n_named + 1) < 0)
				return;
			p->n_named++;
			p->named[k].tid = th[j].tid;
		}
		snprintf(p->named[k].name, sizeof(p->named[k].name), "%s", nm[i].name);
		{
			gtt_record r;
			memset(&r, 0, sizeof(r));
			r.tag = GTT_REC_PY_THREAD;
			r.u.py_thread.time_ns = now;
			r.u.py_thread.pid = (uint32_t)p->pid;
			r.u.py_thread.tid = th[j].tid;
			r.u.py_thread.ident = nm[i].ident;
			r.u.py_thread.name = p->named[k].name;
			rec_pyproc_put(p, &r);
			atomic_fetch_add(&p->n_names, 1);
		}
	}
}

/* ---- state ---- */

pid_t rec_pyproc_pid(const rec_pyproc *p)
{
	return p->pid;
}

rec_py_state rec_pyproc_state(const rec_pyproc *p)
{
	return (rec_py_state)atomic_load(&p->state);
}

int rec_pyproc_gone(const rec_pyproc *p)
{
	return atomic_load(&p->gone);
}

int rec_pyproc_ended(const rec_pyproc *p)
{
	return atomic_load(&p->ended);
}

void rec_pyproc_end(rec_pyproc *p, int gone)
{
	int st = atomic_load(&p->state);

	atomic_store(&p->ended, 1);
	if (gone)
		atomic_store(&p->gone, 1);
	if (st != REC_PY_LOOKING)
		return;
	/* the search was cut short */
	if (p->py.tentative[0]) {
		atomic_store(&p->state, REC_PY_REFUSED);
		set_reason(p, p->py.tentative);
	} else if (verdict_by_name(p, p->py.tentative, sizeof(p->py.tentative))) {
		atomic_store(&p->state, REC_PY_REFUSED);
		set_reason(p, p->py.tentative);
	} else {
		char text[160];
		atomic_store(&p->state, REC_PY_NOT_FOUND);
		snprintf(text, sizeof(text), "no CPython interpreter found in pid %d (no libpython or _PyRuntime symbol)",
		         (int)p->pid);
		set_reason(p, text);
	}
}

void rec_pyproc_status(rec_pyproc *p, char *buf, size_t len)
{
	int st = atomic_load(&p->state), gone = atomic_load(&p->gone);
	uint64_t n_st = atomic_load(&p->n_stacks), ns = atomic_load(&p->read_ns);

	pthread_mutex_lock(&p->lock);
	if (st == REC_PY_LOOKING)
		snprintf(buf, len, "python: looking for CPython in pid %d", (int)p->pid);
	else if (st != REC_PY_READING)
		snprintf(buf, len, "python: %s", p->reason);
	else
		snprintf(buf, len, "python %s: %llu stacks (%llu failed reads, %llu torn), %llu GIL polls, "
		         "%llu GIL changes, %.1f us and %.2f reads (process_vm_readv calls) per stack%s",
		         p->version, (unsigned long long)n_st, (unsigned long long)atomic_load(&p->n_failed),
		         (unsigned long long)atomic_load(&p->n_torn), (unsigned long long)atomic_load(&p->n_polls),
		         (unsigned long long)atomic_load(&p->n_gil_changes),
		         n_st ? (double)ns / (double)n_st / (double)GT_NS_PER_US : 0.0,
		         n_st ? (double)atomic_load(&p->n_calls) / (double)n_st : 0.0, gone ? " (target exited)" : "");
	pthread_mutex_unlock(&p->lock);
}

void rec_pyproc_stats_get(const rec_pyproc *p, rec_pyproc_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->stacks = atomic_load(&p->n_stacks);
	s->frames = atomic_load(&p->n_frames);
	s->failed = atomic_load(&p->n_failed);
	s->torn = atomic_load(&p->n_torn);
	s->passes = atomic_load(&p->n_passes);
	s->syscalls = atomic_load(&p->n_calls);
	s->reads = atomic_load(&p->n_reads);
	s->read_ns = atomic_load(&p->read_ns);
	s->polls = atomic_load(&p->n_polls);
	s->gil_changes = atomic_load(&p->n_gil_changes);
	s->names = atomic_load(&p->n_names);
}

void rec_pyproc_finish(rec_pyproc *p, char *text, size_t len)
{
	int st = atomic_load(&p->state);

	if (st == REC_PY_READING) {
		rec_pyproc_health(p, gtt_now_ns(), 1);
		if (p->giv_failed)
			rec_pyproc_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, gtt_now_ns(), p->giv_failed, 0, p->giv_reads);
		p->giv_failed = 0;
		rec_pyproc_status(p, text, len);
		rec_pyproc_note(p, gtt_now_ns(), text);
		return;
	}
	pthread_mutex_lock(&p->lock);
	snprintf(text, len, "%s", p->reason);
	pthread_mutex_unlock(&p->lock);
	/* a process of the tree that is not Python, or that was gone (or exec'd) before its
	 * interpreter was up, is not worth a note; one that is Python and was not read is */
	if (p->root || st == REC_PY_REFUSED || st == REC_PY_FAILED)
		rec_pyproc_note(p, gtt_now_ns(), text);
}
