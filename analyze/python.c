/* python.c — splices Python frames (from the recorder's memory reads) into native stacks at
 * the eval-loop frames and classifies every sample by GIL state (the report section:
 * python_report.c). */
#include "gt_util.h"
#include "python.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "model_priv.h"

#define MAX_MERGED 4096

/* Native functions that mean "this thread is waiting to take the GIL". take_gil is where the
 * wait happens (PyCOND_WAIT inside it); the others are the public ways into it. */
static const char *const wait_names[] = {
	"take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock",
	"_PyEval_AcquireLock", "_PyThreadState_Attach", "PyGILState_Ensure", "_PyEval_ReInitThreads",
	NULL,
};

/* Modules whose frames belong to whoever called them (the classification looks past them). */
static int is_system_module(const char *mod)
{
	static const char *const sys[] = { "libc.so", "libc-", "libm.so", "libm-", "libpthread", "ld-linux",
	                                   "ld-musl", "libdl", "librt", "linux-vdso", "[vdso]", "[kernel", NULL };
	const char *b;
	int i;

	if (!mod)
		return 1;
	b = strrchr(mod, '/');
	b = b ? b + 1 : mod;
	for (i = 0; sys[i]; i++)
		if (strncmp(b, sys[i], strlen(sys[i])) == 0)
			return 1;
	return 0;
}

static int is_eval_frame(const ana_frame *f)
{
	return f->kind == ANA_FRAME_NATIVE && f->name && !f->inlined && strcmp(f->name, "_PyEval_EvalFrameDefault") == 0;
}

static int is_wait_frame(const ana_frame *f)
{
	int i;

	if (f->kind != ANA_FRAME_NATIVE || !f->name)
		return 0;
	for (i = 0; wait_names[i]; i++)
		if (strcmp(f->name, wait_names[i]) == 0)
			return 1;
	return 0;
}

/* ---- names of Python frames ---- */

/* Where a Python file is, short: the part after site-packages/ or dist-packages/ or
 * lib/pythonX.Y/ (a package path), else the file name (with its directory for __init__.py and
 * __main__.py, which name nothing alone). */
static const char *short_path(const char *path, char *buf, size_t cap)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/", NULL };
	const char *b, *p;
	int i;

	if (!path || !path[0])
		return "?";
	for (i = 0; roots[i]; i++)
		if ((p = strstr(path, roots[i])) != NULL)
			return p + strlen(roots[i]);
	if ((p = strstr(path, "/lib/python3.")) != NULL && (p = strchr(p + 13, '/')) != NULL)
		return p + 1;
	b = strrchr(path, '/');
	if (!b)
		return path;
	if (strcmp(b + 1, "__init__.py") == 0 || strcmp(b + 1, "__main__.py") == 0) {
		const char *d = b;
		while (d > path && d[-1] != '/')
			d--;
		snprintf(buf, cap, "%.*s", (int)(strlen(d)), d);
		return buf;
	}
	return b + 1;
}

const char *ana_python_frame_name(int mode, const char *name, const char *file, int line, char *buf, size_t cap)
{
	char tmp[512];
	const char *last;
	int ambiguous;

	if (!name)
		name = "?";
	/* <module>, <lambda>, <listcomp>, <genexpr>, f.<locals>.<lambda>: one name for many
	 * places in the code (a <locals> inside a qualname is not: main.<locals>.worker is one) */
	last = strrchr(name, '.');
	last = last ? last + 1 : name;
	ambiguous = last[0] == '<';
	if (mode == ANA_PYFRAMES_FUNCTION || (mode != ANA_PYFRAMES_LINE && !ambiguous))
		return name;
	if (line > 0)
		snprintf(buf, cap, "%s (%s:%d)", name, short_path(file, tmp, sizeof(tmp)), line);
	else
		snprintf(buf, cap, "%s (%s)", name, short_path(file, tmp, sizeof(tmp)));
	return buf;
}

/* ---- lookup tables ---- */

typedef struct code_ref { uint32_t pid; uint64_t id; uint32_t idx; } code_ref;
typedef struct pyframe_key { uint64_t key; uint32_t frame; } pyframe_key;

/* A thread's Python reads in time order: q.v[head..n) (the ones a sample still to come may use). */
typedef struct rthread {
	uint32_t pid, tid;
	ANA_VEC(ana_pystack) q;
	size_t head;
} rthread;
/* A process's GIL records in time order: q.v[head..n). */
typedef struct gpid {
	uint32_t pid;
	ANA_VEC(gtt_gil) q;
	size_t head;
} gpid;
/* A sample waiting for what comes after it (reads within the bound, the next GIL record). */
typedef struct pend { ana_sample s; size_t tag; } pend;

typedef struct merger {
	ana_model *m;
	const ana_opts *o;
	code_ref *codes;
	size_t n_codes;
	ANA_VEC(rthread) rts;   /* the threads with Python reads */
	ana_idtable rt_table;
	ANA_VEC(gpid) gps;      /* the processes with GIL records */
	ana_idtable gp_table;
	ANA_VEC(pend) fifo;     /* samples in time order, fifo.v[fhead..n) not handed on yet */
	size_t fhead;
	uint64_t w;             /* every read, GIL record and sample before w is in */
	int keep_all;           /* the arrays' merge: everything is in, in no particular sample order */
	ana_pymerge_sink sink;
	void *sink_ctx;
	pyframe_key *pf;        /* (code index, line) -> frame id */
	size_t pf_cap, pf_n;
	uint64_t bound_ns;      /* farthest a Python read may be from a sample */
	uint64_t gil_window_ns; /* how long before a recorded GIL change it may have happened */
	const char **interp_mods; /* modules holding _PyEval_EvalFrameDefault */
	size_t n_interp_mods, cap_interp_mods;
	uint32_t merged[MAX_MERGED];
	uint32_t native[MAX_MERGED];
	uint64_t n_py_samples, n_no_read, n_merged, n_no_eval;
	uint64_t n_gil_contradicted; /* samples whose GIL record a later read of theirs contradicted */
	uint64_t n_held, peak_held;  /* reads, GIL records and samples held now, and at most */
	uint64_t peak_phys;          /* the longest of the arrays holding them (compaction lets them grow
	                              * to twice what they hold) */
} merger;

static int cmp_code(const void *a, const void *b)
{
	const code_ref *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The last PY_CODE record for (pid, id), or -1. */
static long code_find(const merger *M, uint32_t pid, uint64_t id)
{
	size_t lo = 0, hi = M->n_codes;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const code_ref *c = &M->codes[mid];
		if (c->pid < pid || (c->pid == pid && c->id <= id))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || M->codes[lo - 1].pid != pid || M->codes[lo - 1].id != id)
		return -1;
	return (long)M->codes[lo - 1].idx;
}

static int rt_eq(uint32_t id, const void *key, void *ctx)
{
	const rthread *t = &((const merger *)ctx)->rts.v[id];
	const uint32_t *k = key;
	return t->pid == k[0] && t->tid == k[1];
}

/* The thread's reads, made when add (else NULL: a thread never read). NULL also on ENOMEM when
 * adding (*nomem set). */
static rthread *thread_reads(merger *M, uint32_t pid, uint32_t tid, int add, int *nomem)
{
	uint32_t key[2] = { pid, tid };
	uint32_t *slot = ana_idtable_slot(&M->rt_table, ana_hash_u64((uint64_t)pid << 32 | tid), rt_eq, key, M);
	if (!slot || (!*slot && !add)) {
		*nomem = !slot;
		return NULL;
	}
	if (!*slot) {
		rthread *t = ana_vec_push(M->rts);
		if (!t) {
			*nomem = 1;
			return NULL;
		}
		t->pid = pid;
		t->tid = tid;
		*slot = (uint32_t)M->rts.n;
		M->rt_table.n++;
	}
	return &M->rts.v[*slot - 1];
}

static int gp_eq(uint32_t id, const void *key, void *ctx)
{
	return ((const merger *)ctx)->gps.v[id].pid == *(const uint32_t *)key;
}

/* The process's GIL records (made when add, else NULL when it has none). */
static gpid *pid_gil(merger *M, uint32_t pid, int add, int *nomem)
{
	uint32_t *slot = ana_idtable_slot(&M->gp_table, ana_hash_u64(pid), gp_eq, &pid, M);
	if (!slot || (!*slot && !add)) {
		*nomem = !slot;
		return NULL;
	}
	if (!*slot) {
		gpid *g = ana_vec_push(M->gps);
		if (!g) {
			*nomem = 1;
			return NULL;
		}
		g->pid = pid;
		*slot = (uint32_t)M->gps.n;
		M->gp_table.n++;
	}
	return &M->gps.v[*slot - 1];
}

/* The time no sample still to come is before: the first one waiting, else the watermark. */
static uint64_t samples_from(const merger *M)
{
	return M->fhead < M->fifo.n ? M->fifo.v[M->fhead].s.time_ns : M->w;
}

/* Drop the reads no sample from t on can use: those with four later ones before t (outside the
 * few looked at either side), and those farther than the bound before t. */
static void prune_reads(merger *M, rthread *tr, uint64_t t)
{
	if (M->keep_all)
		return;
	while (tr->head < tr->q.n && ((tr->head + 4 < tr->q.n && tr->q.v[tr->head + 4].time_ns < t) ||
	                              ana_sat_add(tr->q.v[tr->head].time_ns, M->bound_ns) < t)) {
		tr->head++;
		M->n_held--;
	}
	if (tr->head > 64 && tr->head * 2 > tr->q.n) {
		memmove(tr->q.v, tr->q.v + tr->head, (tr->q.n - tr->head) * sizeof(*tr->q.v));
		tr->q.n -= tr->head;
		tr->head = 0;
	}
}

/* Drop the GIL records that a later one at or before t replaced for every sample from t on. */
static void prune_gil(merger *M, gpid *g, uint64_t t)
{
	if (M->keep_all)
		return;
	while (g->head + 1 < g->q.n && g->q.v[g->head + 1].time_ns <= t) {
		g->head++;
		M->n_held--;
	}
	if (g->head > 64 && g->head * 2 > g->q.n) {
		memmove(g->q.v, g->q.v + g->head, (g->q.n - g->head) * sizeof(*g->q.v));
		g->q.n -= g->head;
		g->head = 0;
	}
}

/* One more held; n_phys: the length of the array it went into (its consumed head included: what
 * the memory holds until it is compacted). */
static void count_held(merger *M, size_t n_phys)
{
	if (++M->n_held > M->peak_held)
		M->peak_held = M->n_held;
	if (n_phys > M->peak_phys)
		M->peak_phys = n_phys;
}

/* The Python read of the thread nearest to t within the bound, preferring untorn reads.
 * NULL when none. *n_after: how many reads at or after t were looked at. */
static const ana_pystack *nearest_read(const merger *M, const rthread *tr, uint64_t t, size_t *n_after)
{
	const ana_pystack *r = tr->q.v + tr->head;
	size_t n = tr->q.n - tr->head, lo = 0, hi = n, i;
	const ana_pystack *best = NULL, *best_torn = NULL;
	uint64_t best_d = UINT64_MAX, best_torn_d = UINT64_MAX;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r[mid].time_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*n_after = n - lo < 4 ? n - lo : 4;
	/* look a few reads either side: a torn nearest read yields to an untorn one in bound */
	for (i = lo >= 4 ? lo - 4 : 0; i < n && i < lo + 4; i++) {
		uint64_t d = r[i].time_ns > t ? r[i].time_ns - t : t - r[i].time_ns;
		const ana_pystack *s = &r[i];
		if (d > M->bound_ns)
			continue;
		if (!(s->flags & GTT_PYSTACK_TORN)) {
			if (d < best_d) {
				best_d = d;
				best = s;
			}
		} else if (d < best_torn_d) {
			best_torn_d = d;
			best_torn = s;
		}
	}
	return best ? best : best_torn;
}

/* The thread's latest read at or before t that read the GIL too (GTT_PYSTACK_GIL_READ), within
 * the reads' bound of t; NULL when none. */
static const ana_pystack *gil_read_before(const merger *M, const rthread *tr, uint64_t t)
{
	const ana_pystack *r = tr->q.v + tr->head;
	size_t lo = 0, hi = tr->q.n - tr->head;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a few back: the latest ones may be torn or have no GIL read */
	for (size_t k = 0; k < 4 && lo > 0; k++, lo--) {
		const ana_pystack *s = &r[lo - 1];
		if (t - s->time_ns > M->bound_ns)
			break;
		if (s->flags & GTT_PYSTACK_GIL_READ)
			return s;
	}
	return NULL;
}

/* Whether t lies where the GIL may already have been in next's state: a change is seen at the
 * first read after it happened, so between the read before (next->prev_ns, recorded since
 * format 1.1) and next; in older traces within the loop's window before next. */
static int before_change(const merger *M, const gtt_gil *next, uint64_t t)
{
	if (next->prev_ns && next->prev_ns < next->time_ns)
		return t > next->prev_ns;
	return next->time_ns - t <= M->gil_window_ns;
}

/* GIL state of pid at t from the GIL records: 1 held by tid, 0 not, -1 unknown (no record).
 * Where the state may already be the next record's (before_change), *maybe is set when that
 * side is "held by tid", or whatever it is when the holder changed more than once there (the
 * interpreter's switch counter moved by two or more: any thread may have held it). *has_next:
 * the record after t is in (without it *maybe may still become 1). */
static int gil_held_by(const merger *M, const gpid *gp, uint32_t tid, uint64_t t, int *maybe, uint64_t *since,
                       int *has_next)
{
	const gtt_gil *v = gp ? gp->q.v + gp->head : NULL, *g, *next;
	size_t lo = 0, hi = gp ? gp->q.n - gp->head : 0, n = hi;
	int held;

	*maybe = 0;
	*since = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	next = lo < n ? &v[lo] : NULL;
	*has_next = next != NULL;
	if (lo == 0) {
		if (next && before_change(M, next, t) && next->locked && next->holder_tid == tid)
			*maybe = 1;
		return -1;
	}
	g = &v[lo - 1];
	held = g->locked && g->holder_tid == tid;
	*since = g->time_ns;
	if (next && before_change(M, next, t)) {
		if (!held && next->locked && next->holder_tid == tid)
			*maybe = 1;
		if (next->switches && g->switches && next->switches >= g->switches + 2)
			*maybe = 1; /* hand-offs unseen between two reads: nobody's for sure */
	}
	return held;
}

/* Period of a loop (GTT_SRC_*) from its whole-recording TICKS record, else dflt. */
static uint64_t loop_period(const ana_model *m, uint32_t source, uint64_t dflt)
{
	size_t i;

	for (i = 0; i < m->ticks.n; i++)
		if (m->ticks.v[i].source == source && (m->ticks.v[i].flags & GTT_TICKS_WHOLE) &&
		    m->ticks.v[i].period_ns)
			return m->ticks.v[i].period_ns;
	return dflt;
}

/* The py_code records by (pid, id). 0 or -1 on ENOMEM. */
static int build_codes(merger *M)
{
	ana_model *m = M->m;
	size_t i;

	M->codes = malloc((m->pycodes.n ? m->pycodes.n : 1) * sizeof(*M->codes));
	if (!M->codes)
		return -1;
	for (i = 0; i < m->pycodes.n; i++)
		M->codes[i] = (code_ref){ m->pycodes.v[i].pid, m->pycodes.v[i].code_id, (uint32_t)i };
	M->n_codes = m->pycodes.n;
	qsort(M->codes, M->n_codes, sizeof(*M->codes), cmp_code);
	return 0;
}

/* What does not depend on the reads: codes, bounds, the interpreter's modules. */
static int build_tables(merger *M)
{
	ana_model *m = M->m;
	size_t i;

	if (build_codes(M) < 0)
		return -1;
	/* one period either side: reads on schedule are at most half a period away, and one
	 * late or missed read is tolerated; farther reads describe another moment */
	M->bound_ns = loop_period(m, GTT_SRC_PYSTACK, 10000000u);
	/* one poll period, plus as much again for a late poll */
	M->gil_window_ns = 2 * loop_period(m, GTT_SRC_GIL, GT_NS_PER_MS);
	for (i = 0; i < m->frames.n; i++) {
		const ana_frame *f = &m->frames.v[i];
		size_t k;
		int seen = 0;
		if (!is_eval_frame(f))
			continue;
		for (k = 0; k < M->n_interp_mods; k++)
			if (M->interp_mods[k] == f->module)
				seen = 1;
		if (!seen) {
			if (GT_GROW(M->interp_mods, M->cap_interp_mods, M->n_interp_mods + 1) < 0)
				return -1;
			M->interp_mods[M->n_interp_mods++] = f->module;
		}
	}
	return 0;
}

static int is_interp_module(const merger *M, const char *mod)
{
	size_t k;

	if (!mod)
		return 0;
	for (k = 0; k < M->n_interp_mods; k++)
		if (M->interp_mods[k] && strcmp(M->interp_mods[k], mod) == 0)
			return 1;
	/* no eval frame seen anywhere: go by the name */
	if (M->n_interp_mods == 0) {
		const char *b = strrchr(mod, '/');
		b = b ? b + 1 : mod;
		return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
	}
	return 0;
}

/* Frame id of a Python frame, through a (code, line) cache. ANA_NO_ID on ENOMEM. */
static uint32_t python_frame(merger *M, uint32_t pid, const gtt_py_frame *pf)
{
	long ci = code_find(M, pid, pf->code_id);
	uint64_t key = ((uint64_t)(ci + 1) << 32) | (uint32_t)pf->line;
	size_t i, mask;
	ana_frame f;
	uint32_t id;
	char buf[1024]; /* the name, until it is interned */

	if (M->pf_n * 2 >= M->pf_cap) {
		size_t cap = M->pf_cap ? M->pf_cap * 2 : 1024, k;
		pyframe_key *n = calloc(cap, sizeof(*n));
		if (!n)
			return ANA_NO_ID;
		for (k = 0; k < M->pf_cap; k++) {
			if (!M->pf[k].key)
				continue;
			for (i = (size_t)(ana_hash_u64(M->pf[k].key) & (cap - 1)); n[i].key; i = (i + 1) & (cap - 1))
				;
			n[i] = M->pf[k];
		}
		free(M->pf);
		M->pf = n;
		M->pf_cap = cap;
	}
	mask = M->pf_cap - 1;
	for (i = (size_t)(ana_hash_u64(key) & mask); M->pf[i].key; i = (i + 1) & mask)
		if (M->pf[i].key == key)
			return M->pf[i].frame;
	memset(&f, 0, sizeof(f));
	f.kind = ANA_FRAME_PYTHON;
	f.line = pf->line > 0 ? pf->line : 0;
	if (ci >= 0) {
		const ana_pycode *c = &M->m->pycodes.v[ci];
		f.name = ana_python_frame_name(M->o ? M->o->python_frames : ANA_PYFRAMES_AUTO,
		                               c->qualname && c->qualname[0] ? c->qualname : c->name, c->filename,
		                               f.line, buf, sizeof(buf));
		f.module = c->filename;
		f.file = c->filename;
	} else {
		/* a stack naming a code object whose PY_CODE record is missing (cut-off trace) */
		f.name = "[unknown python code]";
	}
	id = ana_frame_intern(M->m, &f);
	if (id == ANA_NO_ID)
		return id;
	M->pf[i].key = key;
	M->pf[i].frame = id;
	M->pf_n++;
	return id;
}

/* Class of a sample of a Python thread from its native frames (root first) and GIL state;
 * maybe_held: the GIL records cannot tell (a change around this time) whether it was held. */
static int classify(const merger *M, const uint32_t *fr, uint32_t n, int held, int maybe_held)
{
	const ana_frame *F = M->m->frames.v;
	uint32_t i;
	int last_eval = -1, native = 0, any_user = 0, other = 0;

	for (i = 0; i < n; i++) {
		if (is_wait_frame(&F[fr[i]]))
			return ANA_CLASS_WAIT_GIL;
		if (is_eval_frame(&F[fr[i]]))
			last_eval = (int)i;
	}
	/* past the innermost eval loop: extension code (native), or nothing but the
	 * interpreter itself (kernel frames aside), which means it is running bytecode */
	for (i = last_eval < 0 ? 0 : (uint32_t)last_eval + 1; i < n; i++) {
		const ana_frame *f = &F[fr[i]];
		if (f->kind != ANA_FRAME_NATIVE)
			continue;
		any_user = 1;
		if (!is_interp_module(M, f->module)) {
			other = 1;
			if (!is_system_module(f->module))
				native = 1;
		}
	}
	/* bytecode runs only with the GIL: trust the stack when the records are ambiguous */
	if (!held && maybe_held && last_eval >= 0 && !other)
		held = 1;
	if (!held)
		return ANA_CLASS_NATIVE_NOGIL;
	if (last_eval < 0 && !any_user)
		return ANA_CLASS_PY_GIL;
	return native ? ANA_CLASS_NATIVE_GIL : ANA_CLASS_PY_GIL;
}

/* Build the merged stack of one sample into M->merged. Returns its length, -1 on ENOMEM. */
static int splice(merger *M, const ana_sample *s, const uint32_t *nat, uint32_t n_nat, const ana_pystack *ps)
{
	const ana_frame *F;
	uint32_t seg_start[MAX_MERGED], n_seg = 0, py_root[MAX_MERGED], n_py = 0, out = 0, i, k;
	uint32_t evals = 0, e_seen = 0;

	/* Python frames root first, cut into eval-loop segments at entry frames */
	for (i = ps->n_frames; i > 0 && n_py < MAX_MERGED / 2; i--) {
		const gtt_py_frame *pf = &ps->frames[i - 1];
		uint32_t id = python_frame(M, s->pid, pf);
		if (id == ANA_NO_ID)
			return -1;
		if (n_py == 0 || (pf->flags & GTT_PYFRAME_ENTRY))
			seg_start[n_seg++] = n_py;
		py_root[n_py++] = id;
	}
	seg_start[n_seg] = n_py;
	F = M->m->frames.v; /* only now: interning Python frames may have moved the array */
	for (i = 0; i < n_nat; i++)
		if (is_eval_frame(&F[nat[i]]))
			evals++;
	if (M->o && M->o->python_only) {
		for (i = 0; i < n_py; i++)
			M->merged[out++] = py_root[i];
		return (int)out;
	}
	if (evals == 0) {
		/* no eval loop in the native stack: when the unwinder stopped early the Python
		 * frames are the missing root side; otherwise the thread is outside Python */
		M->n_no_eval++;
		if (!s->unwind_ok)
			for (i = 0; i < n_py && out < MAX_MERGED; i++)
				M->merged[out++] = py_root[i];
		for (i = 0; i < n_nat && out < MAX_MERGED; i++)
			M->merged[out++] = nat[i];
		return (int)out;
	}
	/* eval frame j (root first) takes segment j; the innermost one also takes any extra
	 * segments; eval frames without a segment stay as they are */
	for (i = 0; i < n_nat && out < MAX_MERGED; i++) {
		if (!is_eval_frame(&F[nat[i]]) || e_seen >= n_seg) {
			if (is_eval_frame(&F[nat[i]]))
				e_seen++;
			M->merged[out++] = nat[i];
			continue;
		}
		{
			uint32_t a = seg_start[e_seen], b = e_seen + 1 == evals ? n_py : seg_start[e_seen + 1];
			for (k = a; k < b && out < MAX_MERGED; k++)
				M->merged[out++] = py_root[k];
		}
		e_seen++;
	}
	return (int)out;
}

/* The merge of one sample s of a Python thread (its reads tr): class, and stack with the Python
 * frames spliced in. 0 done, 1 not yet (what comes after it may still change it), <0 ENOMEM. */
static int merge_one(merger *M, ana_sample *s, const rthread *tr)
{
	const ana_opts *o = M->o;
	ana_model *m = M->m;
	const ana_pystack *ps;
	const ana_stack *st;
	uint32_t n_nat;
	int held, maybe, n_out, has_next, nomem = 0, contradicted = 0, cls;
	uint64_t since;
	size_t n_after;

	/* the reads up to one bound after it (or the four looked at after it) and the GIL records up
	 * to it must be in */
	ps = nearest_read(M, tr, s->time_ns, &n_after);
	if (M->w != UINT64_MAX &&
	    (M->w <= s->time_ns || (n_after < 4 && M->w <= ana_sat_add(s->time_ns, M->bound_ns))))
		return 1;
	st = &m->stacks.v[s->stack_id];
	n_nat = st->n < MAX_MERGED ? st->n : MAX_MERGED;
	memcpy(M->native, st->frames, n_nat * sizeof(uint32_t)); /* interning may move stacks */
	held = gil_held_by(M, pid_gil(M, s->pid, 0, &nomem), s->tid, s->time_ns, &maybe, &since, &has_next);
	if (nomem)
		return GTT_ENOMEM;
	if (held < 0) {
		held = ps && (ps->flags & GTT_PYSTACK_HOLDS_GIL);
	} else {
		/* A GIL record holds until the next one only while the GIL poll keeps up: one
		 * starved of CPU misses changes. A read of this thread's stack after the record
		 * that saw the GIL otherwise is the newer observation: it wins, as a maybe. */
		const ana_pystack *gr = gil_read_before(M, tr, s->time_ns);
		if (gr && gr->time_ns > since && !(gr->flags & GTT_PYSTACK_HOLDS_GIL) != !held) {
			held = (gr->flags & GTT_PYSTACK_HOLDS_GIL) != 0;
			maybe = 1;
			contradicted = 1;
		}
	}
	cls = classify(M, M->native, n_nat, held, maybe);
	/* the next GIL record of the process (not in yet) can only add a maybe: wait for it where
	 * that would change the class */
	if (!has_next && !maybe && M->w != UINT64_MAX && classify(M, M->native, n_nat, held, 1) != cls)
		return 1;
	M->n_py_samples++;
	M->n_gil_contradicted += contradicted;
	s->cls = (uint8_t)cls;
	if (!ps) {
		M->n_no_read++;
		if (o && o->python_only) {
			ana_frame f = { .name = "[no python read]", .kind = ANA_FRAME_NATIVE };
			uint32_t id = ana_frame_intern(m, &f);
			if (id == ANA_NO_ID || (s->stack_id = ana_stack_intern(m, &id, 1)) == ANA_NO_ID)
				return GTT_ENOMEM;
		}
		return 0;
	}
	if (o && o->no_python_merge)
		return 0;
	n_out = splice(M, s, M->native, n_nat, ps);
	if (n_out < 0)
		return GTT_ENOMEM;
	if (n_out == 0 && o && o->python_only) {
		ana_frame f = { .name = "[no python frames]", .kind = ANA_FRAME_NATIVE };
		M->merged[0] = ana_frame_intern(m, &f);
		if (M->merged[0] == ANA_NO_ID)
			return GTT_ENOMEM;
		n_out = 1;
	}
	s->stack_id = ana_stack_intern(m, M->merged, (uint32_t)n_out);
	if (s->stack_id == ANA_NO_ID)
		return GTT_ENOMEM;
	M->n_merged++;
	return 0;
}

/* Hand on the samples at the head of the queue that can be merged now, in order. 0 or <0. */
static int drain(merger *M)
{
	int rc = 0;
	while (M->fhead < M->fifo.n) {
		pend *p = &M->fifo.v[M->fhead];
		int nomem = 0;
		rthread *tr = thread_reads(M, p->s.pid, p->s.tid, 0, &nomem);
		if (nomem) {
			rc = GTT_ENOMEM;
			break;
		}
		/* a thread never seen in a Python read stays ANA_CLASS_NONPY, its stack native */
		if (tr && (rc = merge_one(M, &p->s, tr)) != 0) {
			rc = rc < 0 ? rc : 0;
			break;
		}
		M->fhead++;
		M->n_held--;
		if ((rc = M->sink(M->sink_ctx, &p->s, p->tag)) < 0)
			break;
		if (tr)
			prune_reads(M, tr, samples_from(M));
		gpid *g = pid_gil(M, p->s.pid, 0, &nomem);
		if (g)
			prune_gil(M, g, samples_from(M));
	}
	/* the samples handed on leave the queue's memory too (also when its head waits) */
	if (M->fhead > 64 && M->fhead * 2 > M->fifo.n) {
		memmove(M->fifo.v, M->fifo.v + M->fhead, (M->fifo.n - M->fhead) * sizeof(*M->fifo.v));
		M->fifo.n -= M->fhead;
		M->fhead = 0;
	}
	return rc;
}

static void merger_free(merger *M)
{
	if (!M)
		return;
	free(M->codes);
	for (size_t i = 0; i < M->rts.n; i++)
		free(M->rts.v[i].q.v);
	free(M->rts.v);
	ana_idtable_free(&M->rt_table);
	for (size_t i = 0; i < M->gps.n; i++)
		free(M->gps.v[i].q.v);
	free(M->gps.v);
	ana_idtable_free(&M->gp_table);
	free(M->fifo.v);
	free(M->pf);
	free(M->interp_mods);
	free(M);
}

static merger *merger_new(ana_model *m, const ana_opts *o, ana_pymerge_sink sink, void *ctx)
{
	merger *M = calloc(1, sizeof(*M));
	if (!M)
		return NULL;
	M->m = m;
	M->o = o;
	M->sink = sink;
	M->sink_ctx = ctx;
	if (build_tables(M) < 0) {
		merger_free(M);
		return NULL;
	}
	return M;
}

ana_pymerge *ana_pymerge_new(ana_model *m, const ana_opts *o, ana_pymerge_sink sink, void *ctx)
{
	merger *M = merger_new(m, o, sink, ctx);
	int nomem = 0;
	/* the threads that have Python reads are known before the reads come (pass 1 marked them) */
	for (size_t i = 0; M && i < m->threads.n; i++)
		if (m->threads.v[i].is_python && !thread_reads(M, m->threads.v[i].pid, m->threads.v[i].tid, 1, &nomem)) {
			merger_free(M);
			M = NULL;
		}
	return (ana_pymerge *)M;
}

int ana_pymerge_read(ana_pymerge *P, const ana_pystack *r)
{
	merger *M = (merger *)P;
	int nomem = 0;
	rthread *tr = thread_reads(M, r->pid, r->tid, 1, &nomem);
	ana_pystack *e = tr ? ana_vec_push(tr->q) : NULL;
	if (!e)
		return GTT_ENOMEM;
	*e = *r;
	count_held(M, tr->q.n);
	prune_reads(M, tr, samples_from(M));
	return 0;
}

int ana_pymerge_gil(ana_pymerge *P, const gtt_gil *g)
{
	merger *M = (merger *)P;
	int nomem = 0;
	gpid *gp = pid_gil(M, g->pid, 1, &nomem);
	gtt_gil *e = gp ? ana_vec_push(gp->q) : NULL;
	if (!e)
		return GTT_ENOMEM;
	*e = *g;
	count_held(M, gp->q.n);
	prune_gil(M, gp, samples_from(M));
	return 0;
}

int ana_pymerge_sample(ana_pymerge *P, const ana_sample *s, size_t tag)
{
	merger *M = (merger *)P;
	pend *p = ana_vec_push(M->fifo);
	if (!p)
		return GTT_ENOMEM;
	p->s = *s;
	p->tag = tag;
	count_held(M, M->fifo.n);
	return drain(M);
}

int ana_pymerge_advance(ana_pymerge *P, uint64_t w)
{
	merger *M = (merger *)P;
	M->w = w;
	return drain(M);
}

uint64_t ana_pymerge_waiting(const ana_pymerge *P)
{
	const merger *M = (const merger *)P;
	return M->fhead < M->fifo.n ? M->fifo.v[M->fhead].s.time_ns : UINT64_MAX;
}

uint64_t ana_pymerge_peak(const ana_pymerge *P)
{
	const merger *M = (const merger *)P;
	return M->peak_held > M->peak_phys ? M->peak_held : M->peak_phys;
}

int ana_pymerge_finish(ana_pymerge *P)
{
	merger *M = (merger *)P;
	int rc = ana_pymerge_advance(P, UINT64_MAX);
	ana_model *m = M->m;
	if (rc == 0 && M->n_py_samples && M->n_no_read * 20 > M->n_py_samples)
		ana_warn(m, "python: %" PRIu64 " of %" PRIu64 " samples of Python threads had no Python read within "
		         "%.1f ms (reader behind or stopped): kept native only", M->n_no_read, M->n_py_samples,
		         (double)M->bound_ns / (double)GT_NS_PER_MS);
	if (rc == 0 && M->n_py_samples && M->n_gil_contradicted * 20 > M->n_py_samples)
		ana_warn(m, "python: %" PRIu64 " of %" PRIu64 " samples of Python threads came after a GIL record that a later "
		         "stack read contradicted (the GIL poll fell behind): the read's view was used, as uncertain",
		         M->n_gil_contradicted, M->n_py_samples);
	merger_free(M);
	return rc;
}

void ana_pymerge_free(ana_pymerge *P)
{
	merger_free((merger *)P);
}

/* ---- the merge of a model's arrays ---- */

typedef struct ord { uint32_t pid, tid; uint64_t time_ns; size_t idx; } ord;

static int cmp_ord(const void *a, const void *b)
{
	const ord *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* A merged sample goes back where it came from. */
static int to_array(void *ctx, ana_sample *s, size_t tag)
{
	((ana_model *)ctx)->samples.v[tag] = *s;
	return 0;
}

int ana_python_merge(ana_model *m, const ana_opts *o)
{
	merger *M;
	ord *v = NULL;
	size_t n = m ? (m->pystacks.n > m->gil.n ? m->pystacks.n : m->gil.n) : 0, i;
	int rc = GTT_ENOMEM;

	if (!m || m->pystacks.n == 0)
		return 0;
	if (!(M = merger_new(m, o, to_array, m)) || !(v = malloc(n * sizeof(*v))))
		goto out;
	M->keep_all = 1;
	/* each thread's reads and each process's GIL records in time order (equal times: as they
	 * lie in the arrays), all of them in before the first sample */
	for (i = 0; i < m->pystacks.n; i++)
		v[i] = (ord){ m->pystacks.v[i].pid, m->pystacks.v[i].tid, m->pystacks.v[i].time_ns, i };
	qsort(v, m->pystacks.n, sizeof(*v), cmp_ord);
	for (i = 0; i < m->pystacks.n; i++)
		if ((rc = ana_pymerge_read((ana_pymerge *)M, &m->pystacks.v[v[i].idx])) < 0)
			goto out;
	for (i = 0; i < m->gil.n; i++)
		v[i] = (ord){ m->gil.v[i].pid, 0, m->gil.v[i].time_ns, i };
	qsort(v, m->gil.n, sizeof(*v), cmp_ord);
	for (i = 0; i < m->gil.n; i++)
		if ((rc = ana_pymerge_gil((ana_pymerge *)M, &m->gil.v[v[i].idx])) < 0)
			goto out;
	M->w = UINT64_MAX;
	for (i = 0; i < m->samples.n; i++) {
		int nomem = 0;
		if (!thread_reads(M, m->samples.v[i].pid, m->samples.v[i].tid, 0, &nomem) && !nomem)
			continue; /* never seen in a Python read: stays ANA_CLASS_NONPY */
		if (nomem || (rc = ana_pymerge_sample((ana_pymerge *)M, &m->samples.v[i], i)) < 0) {
			rc = GTT_ENOMEM;
			goto out;
		}
	}
	free(v);
	return ana_pymerge_finish((ana_pymerge *)M);
out:
	free(v);
	merger_free(M);
	return rc < 0 ? rc : GTT_ENOMEM;
}

/* ---- Python frames for other stacks (launch stacks, launch.c) ---- */

struct ana_pynamer { merger M; ana_opts o; };

ana_pynamer *ana_pynamer_create(ana_model *m)
{
	return ana_pynamer_create_mode(m, ANA_PYFRAMES_AUTO);
}

ana_pynamer *ana_pynamer_create_mode(ana_model *m, int python_frames)
{
	ana_pynamer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->M.m = m;
	ana_opts_init(&p->o);
	p->o.python_frames = python_frames;
	p->M.o = &p->o;
	if (build_codes(&p->M) < 0) {
		ana_pynamer_destroy(p);
		return NULL;
	}
	return p;
}

uint32_t ana_pynamer_id(ana_pynamer *p, uint32_t pid, const gtt_py_frame *pf)
{
	return python_frame(&p->M, pid, pf);
}

void ana_pynamer_destroy(ana_pynamer *p)
{
	if (!p)
		return;
	free(p->M.codes);
	free(p->M.pf);
	free(p);
}
