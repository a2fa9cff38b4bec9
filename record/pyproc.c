/* pyproc.c — one process of the Python reader: discovery steps, the stack pass (a snapshot of
 * what the last pass read, then one batched read that checks every thread, its code objects
 * and the GIL), OS tids of 3.10 threads, the shared GIL state, thread names, counters. */
#include "pyproc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_util.h"
#include "procfs.h"
#include "pythreads.h"

#define MAX_INTERPS 16
#define MAX_THREADS 4096
#define POOL_FRAMES (64 * 1024)  /* raw frames held for one pass; threads beyond wait for the next */
#define TCB_SEEN 1024
#define TIDS_SEEN 1024
#define FAST_LOOK_NS (2 * GT_NS_PER_SEC)          /* looking for the interpreter: at first ... */
#define FAST_LOOK_PERIOD_NS (10 * GT_NS_PER_MS)   /* ... every 10 ms, */
#define SLOW_LOOK_PERIOD_NS (250 * GT_NS_PER_MS)  /* then every 250 ms (the recorded process) */
#define CHILD_LOOK_NS (200 * GT_NS_PER_MS)        /* a child without python in its name: this long */
#define READY_PERIOD_NS (5 * GT_NS_PER_MS)        /* waiting for its initialization */
#define HEALTH_INTERVAL_NS GT_NS_PER_SEC          /* READ_ERRORS records cover 1 s each */
#define GIL_IDLE_NS (100 * GT_NS_PER_MS)          /* the GIL poll stops after this long without a change */
#define NAMES_PERIOD_NS GT_NS_PER_SEC             /* thread names looked at this often */
#define INTERPS_PERIOD_NS (250 * GT_NS_PER_MS)    /* the list of interpreters read this often */

typedef struct tcb_seen {
	uint64_t pthread;
	uint32_t tid;
} tcb_seen;

typedef struct tid_entry {
	uint64_t tstate;
	uint32_t tid;
} tid_entry;

/* One thread of a pass. */
typedef struct thread_read {
	rec_pythread t;
	uint32_t tid;
	uint32_t tcb_tid_raw;   /* 3.10 */
	uint64_t tcb_self;
	size_t raw_at;          /* its frames in the pass's pool */
	int nf;                 /* frames read; -1 not read yet (pool full) */
	int torn;
	int keep_from;          /* the thread returned from raw[0..keep_from) while it was read */
	size_t rq;              /* its check requests in the batch */
	int n_rq;
	uint64_t chk_cframe, chk_leaf, chk_code;
	uint64_t time_ns;       /* when its frames were read */
	int checked;            /* consistent by the snapshot's brackets */
	long pred;              /* its entry in pred[] (the last pass), -1 none */
} thread_read;

/* A thread as the last pass found it, and the words that bracket this pass's snapshot. */
typedef struct pred {
	uint64_t tstate, cframe;
	int has_frame;
	size_t raw_at;          /* its frames in prev_pool */
	int nf;
	uint64_t t_cframe, t_leaf;
	size_t tq;              /* its requests in tail[] */
} pred;

#define CODE_REQS 1024          /* code objects checked per thread and pass at most */

/* Lines of (code object, instruction) pairs seen before: a frame that sits at one instruction
 * pass after pass (every caller frame does) costs no line-table decode. */
#define LINE_CACHE 2048
typedef struct line_ent {
	uint64_t code_id;
	int64_t index;
	int32_t line;
} line_ent;

typedef struct named {
	uint32_t tid;
	char name[REC_PYNAME_MAX];
} named;

struct rec_pyproc {
	pid_t pid;
	int root;
	const rec_pysink *sink;
	atomic_int state;       /* rec_py_state */
	atomic_int gone;
	atomic_int ended;
	uint64_t image_ns;      /* see rec_pyproc_image_ns() */
	pthread_mutex_t lock;   /* reason, version, tids[] */
	char reason[320];
	char version[32];
	uint64_t look_start_ns, next_look_ns;
	int found;              /* discovery found the interpreter, waiting for its initialization */
	int inherited;          /* layout taken from the parent (fork without exec) */

	rec_pyinterp py;
	rec_procmem *mem;       /* the stack loop's */
	rec_procmem *gil_mem;   /* the GIL poll's */
	rec_pycache *codes;
	rec_pynames *names;
	uint64_t pass_no;
	atomic_uint_fast64_t gil_addr;
	uint64_t interps[MAX_INTERPS];
	size_t n_interps;
	uint64_t interps_next_ns;

	int32_t tcb_tid_off;    /* 3.10: offset of the tid in glibc's struct pthread, -1 unknown */
	tcb_seen tcb[TCB_SEEN]; /* (pthread, tid) pairs /proc confirmed */
	unsigned tcb_rr;
	uint32_t tids_ok[TIDS_SEEN]; /* 3.11+: native tids /proc confirmed as this process's */
	int noted_no_tids;

	/* tid map for the GIL poll: a snapshot written by the stack pass */
	tid_entry *tids;
	size_t n_tids, cap_tids;

	/* pass buffers */
	thread_read *th;
	rec_pyframe_raw *pool, *prev_pool; /* this pass's frames, the last pass's */
	size_t cap_pool, cap_prev;
	gtt_py_frame *frames;
	rec_procmem_req *req;
	size_t cap_req;
	pred *pred;             /* MAX_THREADS */
	size_t n_pred, n_first;
	uint64_t *first;        /* 2 x MAX_THREADS: words whose ranges are read first */
	rec_procmem_req *tail;  /* 2 x MAX_THREADS + REC_PYCACHE_REVALIDATE + 1 */
	long gil_tail;          /* the GIL's request in tail[], -1 none */
	rec_procmem_req *creq;  /* CODE_REQS */
	uint8_t gil_buf[320];
	uint64_t last_pass_ns;
	line_ent *lines;        /* LINE_CACHE entries */

	/* the GIL state, shared by the poll and the stack pass (gil_lock) */
	pthread_mutex_t gil_lock;
	atomic_int gil_fast;    /* the poll reads it; else the stack pass watches it */
	rec_pygil gil_last;
	uint32_t gil_last_tid;
	uint64_t gil_last_ns;   /* the last read of it */
	uint64_t gil_still_ns;  /* since when it has not changed */
	uint64_t gil_rec_switches; /* the switch counter in the last GIL record */
	int gil_known;
	uint32_t gil_hist;      /* the poll's last 32 reads: bit set for each that wrote a record */

	/* thread names */
	uint64_t names_next_ns;
	named *named;
	size_t n_named, cap_named;

	/* counters (the stack loop's unless said; read for status) */
	atomic_uint_fast64_t n_passes, n_stacks, n_frames, n_failed, n_torn, n_codes, read_ns, n_reads, n_calls;
	atomic_uint_fast64_t n_polls, n_gil_changes, n_gil_failed, n_names; /* the poll's, n_names the pass's */
	uint64_t iv_start_ns, iv_failed, iv_torn, iv_reads;   /* current 1 s health interval */
	uint64_t giv_start_ns, giv_failed, giv_reads;
};

/* ---- records ---- */

static void put_rec(rec_pyproc *p, const gtt_record *r)
{
	if (p->sink->w)
		gtt_write(p->sink->w, r);
	if (p->sink->observe)
		p->sink->observe(p->sink->observe_ctx, r);
}

static void emit_code(void *ctx, const gtt_record *r)
{
	put_rec(ctx, r);
}

static void put_note(rec_pyproc *p, uint64_t time_ns, const char *text)
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
	put_rec(p, &r);
}

/* A READ_ERRORS record over [t0, t1): count failures, value[0..2] failed reads, torn
 * stacks, reads (docs/FORMAT.md). */
static void put_read_errors(rec_pyproc *p, uint32_t source, uint64_t t0, uint64_t t1, uint64_t failed,
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

void rec_pyproc_destroy(rec_pyproc *p)
{
	if (!p)
		return;
	rec_pycache_destroy(p->codes);
	rec_pynames_destroy(p->names);
	rec_procmem_close(p->mem);
	rec_procmem_close(p->gil_mem);
	free(p->tids);
	free(p->th);
	free(p->pool);
	free(p->prev_pool);
	free(p->frames);
	free(p->req);
	free(p->named);
	free(p->lines);
	free(p->pred);
	free(p->first);
	free(p->tail);
	free(p->creq);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->gil_lock);
	free(p);
}

/* ---- discovery ---- */

void rec_pyproc_inherit(rec_pyproc *p, const rec_pyproc *parent, uint64_t fork_ns)
{
	p->py = parent->py;
	p->found = 1;
	p->inherited = 1;
	p->image_ns = fork_ns;
	pthread_mutex_lock(&p->lock);
	snprintf(p->version, sizeof(p->version), "%s", p->py.version);
	pthread_mutex_unlock(&p->lock);
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
	p->pred = calloc(MAX_THREADS, sizeof(*p->pred));
	p->first = calloc(2 * MAX_THREADS, sizeof(*p->first));
	p->tail = calloc(2 * MAX_THREADS + 1 + REC_PYCACHE_REVALIDATE, sizeof(*p->tail));
	p->creq = calloc(CODE_REQS, sizeof(*p->creq));
	p->codes = rec_pycache_create(p->pid, p->mem, &p->py.off, p->py.code_type, emit_code, p);
	p->names = rec_pynames_create(&p->py.off, p->py.dict_type);
	if (!p->th || !p->frames || !p->lines || !p->pred || !p->first || !p->tail || !p->creq || !p->codes ||
	    !p->names)
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
		put_note(p, now, text);
	}
	if (p->py.off.frame_kind == REC_PY_FRAMEOBJ && p->tcb_tid_off < 0)
		put_note(p, now, "CPython 3.10: cannot map threads to OS tids (glibc struct pthread layout not found)");
}

int rec_pyproc_look(rec_pyproc *p, uint64_t now)
{
	char reason[sizeof(p->reason)] = "";
	int rc;

	if (!p->look_start_ns)
		p->look_start_ns = now;
	if (!p->found) {
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
			if (rc == -ESRCH && kill(p->pid, 0) < 0)
				atomic_store(&p->gone, 1);
			atomic_store(&p->state, rc == -ESRCH && !p->py.tentative[0] ? REC_PY_NOT_FOUND : REC_PY_REFUSED);
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

/* ---- threads and their OS tids ---- */

/* OS tids of 3.10 threads: glibc's pthread_t is the address of its struct pthread, whose tid
 * field offset pyreader.c found in its own threads; a tid is accepted only when the TCB points
 * to itself (x86-64 tcbhead_t) and /proc lists the tid as a thread of the target. The reads go
 * through the pass's snapshot like the thread states'. */
static void tids_310(rec_pyproc *p, thread_read *th, size_t n)
{
	size_t i, j, slot;

	if (p->tcb_tid_off < 0)
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

	if (p->root || !tid)
		return tid != 0;
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

static uint32_t tid_of(rec_pyproc *p, uint64_t tstate)
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

/* The source line of instruction index in the code object of entry e. */
static int32_t line_of(rec_pyproc *p, const rec_pycache_entry *e, int64_t index)
{
	line_ent *l = &p->lines[(size_t)((e->code_id >> 4) * 31 + (uint64_t)index) % LINE_CACHE];

	if (l->code_id != e->code_id || l->index != index) {
		l->code_id = e->code_id;
		l->index = index;
		l->line = rec_py_line(p->py.off.line_format, e->c.linetable, e->c.linetable_len, e->c.firstlineno, index);
	}
	return l->line;
}

/* Name thread t's frames and write its PY_STACK record. */
static void put_stack(rec_pyproc *p, thread_read *t, const rec_pygil *gil)
{
	const rec_pyframe_raw *raw = p->pool + t->raw_at;
	gtt_py_frame *frames = p->frames;
	int k, out_n = 0, tr = t->torn;
	gtt_record r;

	for (k = 0; k < t->nf; k++) {
		const rec_pycache_entry *e = rec_pycache_get(p->codes, raw[k].code);
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

static void gil_from_pass(rec_pyproc *p, const rec_pygil *g, uint64_t now);
static void names_from_pass(rec_pyproc *p, const thread_read *th, size_t n, uint64_t now);

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
			put_note(p, t0, "CPython 3.10: no thread state maps to an OS tid (another libc in the target?): "
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

	rec_pyframe_raw *swap = p->prev_pool;
	size_t cap = p->cap_prev;

	p->n_pred = 0;
	for (i = 0; i < n; i++)
		p->pred[p->n_pred++] = (pred){ .tstate = th[i].t.addr, .cframe = th[i].t.cframe,
		                               .has_frame = th[i].tid && th[i].t.frame, .raw_at = th[i].raw_at,
		                               .nf = th[i].tid && th[i].nf > 0 ? th[i].nf : 0 };
	/* this pass's frames are the next one's previous */
	p->prev_pool = p->pool;
	p->cap_prev = p->cap_pool;
	p->pool = swap;
	p->cap_pool = cap;
}

/* Code objects of thread t's frames not checked in this pass yet: their headers read through
 * the snapshot (a header read in the same system call as the frame that points to the code is
 * as good as one read after it), a miss read now and noted for the next snapshot. */
static void check_codes(rec_pyproc *p, const thread_read *t)
{
	const rec_pyframe_raw *cur = p->pool + t->raw_at;
	size_t n = 0, i;
	int nf = t->nf;

	/* the caller frames this thread had in the last pass too, at the same addresses with the
	 * same code (the root end of the chain): a live frame keeps its code object alive, so
	 * only the frames that came and went since can have a reused address */
	if (t->pred >= 0 && p->prev_pool) {
		const pred *e = &p->pred[t->pred];
		const rec_pyframe_raw *old = p->prev_pool + e->raw_at;
		int k = 0;
		while (k < nf && k < e->nf && cur[nf - 1 - k].addr == old[e->nf - 1 - k].addr &&
		       cur[nf - 1 - k].code == old[e->nf - 1 - k].code)
			k++;
		nf -= k;
	}
	rec_pycache_check_reqs(p->codes, cur, nf, p->creq, &n, CODE_REQS);
	for (i = 0; i < n; i++)
		p->creq[i].ok = rec_procmem_read(p->mem, p->creq[i].addr, p->creq[i].buf, p->creq[i].len) == 0;
	rec_pycache_check_apply(p->codes, p->creq);
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
		used += (size_t)t->nf;
		/* read from the snapshot alone and bracketed: consistent without another read */
		t->checked = !t->torn && rec_procmem_syscalls(p->mem) == c0 && (bracketed(p, t) || !t->t.frame);
		if (!t->torn)
			check_codes(p, t);
	}
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
		gil_from_pass(p, &gil, t_snap);
	if (n > 0 && t0 >= p->names_next_ns) {
		p->names_next_ns = t0 + NAMES_PERIOD_NS;
		names_from_pass(p, p->th, (size_t)n, t0);
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
		put_read_errors(p, GTT_SRC_PYSTACK, p->iv_start_ns, now, p->iv_failed, p->iv_torn, p->iv_reads);
	p->iv_start_ns = now;
	p->iv_failed = p->iv_torn = p->iv_reads = 0;
}

/* ---- thread names ---- */

/* The names the registry gives, to the OS threads of this pass (ident = pthread_t =
 * PyThreadState.thread_id): a py_thread record for each new or changed one. */
static void names_from_pass(rec_pyproc *p, const thread_read *th, size_t n, uint64_t now)
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
			put_rec(p, &r);
			atomic_fetch_add(&p->n_names, 1);
		}
	}
}

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
	put_rec(p, &r);
}

/* The OS tid of the GIL holder tstate; mem: the caller's reader. */
static uint32_t holder_tid(rec_pyproc *p, rec_procmem *mem, uint64_t holder)
{
	uint32_t tid = holder == p->gil_last.holder && p->gil_known ? p->gil_last_tid : tid_of(p, holder);

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
static void gil_from_pass(rec_pyproc *p, const rec_pygil *g, uint64_t now)
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
			put_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, now, p->giv_failed, 0, p->giv_reads);
		p->giv_start_ns = now;
		p->giv_failed = p->giv_reads = 0;
	}
	return rc;
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
			put_read_errors(p, GTT_SRC_GIL, p->giv_start_ns, gtt_now_ns(), p->giv_failed, 0, p->giv_reads);
		p->giv_failed = 0;
		rec_pyproc_status(p, text, len);
		put_note(p, gtt_now_ns(), text);
		return;
	}
	pthread_mutex_lock(&p->lock);
	snprintf(text, len, "%s", p->reason);
	pthread_mutex_unlock(&p->lock);
	/* a process of the tree that simply is not Python is not worth a note */
	if (p->root || st != REC_PY_NOT_FOUND)
		put_note(p, gtt_now_ns(), text);
}
