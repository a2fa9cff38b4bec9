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
typedef struct read_ref { uint32_t pid, tid; uint64_t time_ns; uint32_t idx; } read_ref;
typedef struct thread_range { uint32_t pid, tid; size_t first, n; } thread_range;
typedef struct pyframe_key { uint64_t key; uint32_t frame; } pyframe_key;

typedef struct merger {
	ana_model *m;
	const ana_opts *o;
	code_ref *codes;
	size_t n_codes;
	read_ref *reads;        /* sorted by (pid, tid, time) */
	size_t n_reads;
	thread_range *threads;
	size_t n_threads;
	uint32_t *gil_idx;      /* m->gil indexes sorted by (pid, time) */
	size_t n_gil;
	pyframe_key *pf;        /* (code index, line) -> frame id */
	size_t pf_cap, pf_n;
	uint64_t bound_ns;      /* farthest a Python read may be from a sample */
	uint64_t gil_window_ns; /* how long before a recorded GIL change it may have happened */
	const char **interp_mods; /* modules holding _PyEval_EvalFrameDefault */
	size_t n_interp_mods, cap_interp_mods;
	uint32_t merged[MAX_MERGED];
	uint32_t native[MAX_MERGED];
	uint64_t n_no_read, n_merged, n_no_eval;
	uint64_t n_gil_contradicted; /* samples whose GIL record a later read of theirs contradicted */
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

static int cmp_read(const void *a, const void *b)
{
	const read_ref *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
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

static const thread_range *thread_reads(const merger *M, uint32_t pid, uint32_t tid)
{
	size_t lo = 0, hi = M->n_threads;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const thread_range *t = &M->threads[mid];
		if (t->pid == pid && t->tid == tid)
			return t;
		if (t->pid < pid || (t->pid == pid && t->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The Python read of the thread nearest to t within the bound, preferring untorn reads.
 * NULL when none. */
static const ana_pystack *nearest_read(const merger *M, const thread_range *tr, uint64_t t)
{
	const read_ref *r = M->reads + tr->first;
	size_t lo = 0, hi = tr->n, i;
	const ana_pystack *best = NULL, *best_torn = NULL;
	uint64_t best_d = UINT64_MAX, best_torn_d = UINT64_MAX;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r[mid].time_ns < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* look a few reads either side: a torn nearest read yields to an untorn one in bound */
	for (i = lo >= 4 ? lo - 4 : 0; i < tr->n && i < lo + 4; i++) {
		uint64_t d = r[i].time_ns > t ? r[i].time_ns - t : t - r[i].time_ns;
		const ana_pystack *s = &M->m->pystacks.v[r[i].idx];
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
static const ana_pystack *gil_read_before(const merger *M, const thread_range *tr, uint64_t t)
{
	const read_ref *r = M->reads + tr->first;
	size_t lo = 0, hi = tr->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a few back: the latest ones may be torn or have no GIL read */
	for (size_t k = 0; k < 4 && lo > 0; k++, lo--) {
		const ana_pystack *s = &M->m->pystacks.v[r[lo - 1].idx];
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
 * interpreter's switch counter moved by two or more: any thread may have held it). */
static int gil_held_by(const merger *M, uint32_t pid, uint32_t tid, uint64_t t, int *maybe, uint64_t *since)
{
	size_t lo = 0, hi = M->n_gil;
	const gtt_gil *g, *next;
	int held;

	*maybe = 0;
	*since = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const gtt_gil *x = &M->m->gil.v[M->gil_idx[mid]];
		if (x->pid < pid || (x->pid == pid && x->time_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	next = lo < M->n_gil ? &M->m->gil.v[M->gil_idx[lo]] : NULL;
	if (next && next->pid != pid)
		next = NULL;
	if (lo == 0 || M->m->gil.v[M->gil_idx[lo - 1]].pid != pid) {
		if (next && before_change(M, next, t) && next->locked && next->holder_tid == tid)
			*maybe = 1;
		return -1;
	}
	g = &M->m->gil.v[M->gil_idx[lo - 1]];
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

typedef struct gil_ref { uint32_t pid; uint64_t time_ns; uint32_t idx; } gil_ref;

static int cmp_gil(const void *a, const void *b)
{
	const gil_ref *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* GIL record indexes ordered by (pid, time). */
static int build_gil_index(merger *M)
{
	ana_model *m = M->m;
	gil_ref *g = malloc((m->gil.n ? m->gil.n : 1) * sizeof(*g));
	size_t i;

	M->gil_idx = malloc((m->gil.n ? m->gil.n : 1) * sizeof(uint32_t));
	if (!g || !M->gil_idx) {
		free(g);
		return -1;
	}
	for (i = 0; i < m->gil.n; i++)
		g[i] = (gil_ref){ m->gil.v[i].pid, m->gil.v[i].time_ns, (uint32_t)i };
	qsort(g, m->gil.n, sizeof(*g), cmp_gil);
	for (i = 0; i < m->gil.n; i++)
		M->gil_idx[i] = g[i].idx;
	M->n_gil = m->gil.n;
	free(g);
	return 0;
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

static int build_tables(merger *M)
{
	ana_model *m = M->m;
	size_t i, j;

	M->reads = malloc((m->pystacks.n ? m->pystacks.n : 1) * sizeof(*M->reads));
	M->threads = malloc((m->pystacks.n ? m->pystacks.n : 1) * sizeof(*M->threads));
	if (build_codes(M) < 0 || !M->reads || !M->threads)
		return -1;
	for (i = 0; i < m->pystacks.n; i++)
		M->reads[i] = (read_ref){ m->pystacks.v[i].pid, m->pystacks.v[i].tid, m->pystacks.v[i].time_ns, (uint32_t)i };
	M->n_reads = m->pystacks.n;
	qsort(M->reads, M->n_reads, sizeof(*M->reads), cmp_read);
	for (i = 0; i < M->n_reads; i = j) {
		for (j = i; j < M->n_reads && M->reads[j].pid == M->reads[i].pid && M->reads[j].tid == M->reads[i].tid; j++)
			;
		M->threads[M->n_threads++] = (thread_range){ M->reads[i].pid, M->reads[i].tid, i, j - i };
	}
	if (build_gil_index(M) < 0)
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

int ana_python_merge(ana_model *m, const ana_opts *o)
{
	merger *M;
	size_t i;
	int rc = GTT_ENOMEM;
	uint64_t n_py_samples = 0;

	if (!m || m->pystacks.n == 0)
		return 0;
	M = calloc(1, sizeof(*M));
	if (!M)
		return GTT_ENOMEM;
	M->m = m;
	M->o = o;
	if (build_tables(M) < 0)
		goto out;
	for (i = 0; i < m->samples.n; i++) {
		ana_sample *s = &m->samples.v[i];
		const thread_range *tr = thread_reads(M, s->pid, s->tid);
		const ana_pystack *ps;
		const ana_stack *st;
		uint32_t n_nat;
		int held, maybe, n_out;
		uint64_t since;

		if (!tr)
			continue; /* never seen in a Python read: stays ANA_CLASS_NONPY */
		n_py_samples++;
		st = &m->stacks.v[s->stack_id];
		n_nat = st->n < MAX_MERGED ? st->n : MAX_MERGED;
		memcpy(M->native, st->frames, n_nat * sizeof(uint32_t)); /* interning may move stacks */
		ps = nearest_read(M, tr, s->time_ns);
		held = gil_held_by(M, s->pid, s->tid, s->time_ns, &maybe, &since);
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
				M->n_gil_contradicted++;
			}
		}
		s->cls = (uint8_t)classify(M, M->native, n_nat, held, maybe);
		if (!ps) {
			M->n_no_read++;
			if (o && o->python_only) {
				ana_frame f = { .name = "[no python read]", .kind = ANA_FRAME_NATIVE };
				uint32_t id = ana_frame_intern(m, &f);
				if (id == ANA_NO_ID || (s->stack_id = ana_stack_intern(m, &id, 1)) == ANA_NO_ID)
					goto out;
			}
			continue;
		}
		if (o && o->no_python_merge)
			continue;
		n_out = splice(M, s, M->native, n_nat, ps);
		if (n_out < 0)
			goto out;
		if (n_out == 0 && o && o->python_only) {
			ana_frame f = { .name = "[no python frames]", .kind = ANA_FRAME_NATIVE };
			M->merged[0] = ana_frame_intern(m, &f);
			if (M->merged[0] == ANA_NO_ID)
				goto out;
			n_out = 1;
		}
		s->stack_id = ana_stack_intern(m, M->merged, (uint32_t)n_out);
		if (s->stack_id == ANA_NO_ID)
			goto out;
		M->n_merged++;
	}
	if (n_py_samples && M->n_no_read * 20 > n_py_samples)
		ana_warn(m, "python: %" PRIu64 " of %" PRIu64 " samples of Python threads had no Python read within "
		         "%.1f ms (reader behind or stopped): kept native only", M->n_no_read, n_py_samples,
		         (double)M->bound_ns / (double)GT_NS_PER_MS);
	if (n_py_samples && M->n_gil_contradicted * 20 > n_py_samples)
		ana_warn(m, "python: %" PRIu64 " of %" PRIu64 " samples of Python threads came after a GIL record that a later "
		         "stack read contradicted (the GIL poll fell behind): the read's view was used, as uncertain",
		         M->n_gil_contradicted, n_py_samples);
	rc = 0;
out:
	free(M->codes);
	free(M->reads);
	free(M->threads);
	free(M->gil_idx);
	free(M->pf);
	free(M->interp_mods);
	free(M);
	return rc;
}

/* ---- Python frames for other stacks (launch stacks, launch.c) ---- */

struct ana_pynamer { merger M; };

ana_pynamer *ana_pynamer_create(ana_model *m)
{
	ana_pynamer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->M.m = m;
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
