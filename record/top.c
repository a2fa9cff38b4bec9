/* top.c — the model behind gt-record --top: takes note of the records the recording writes,
 * unwinds DWARF samples with record/unwind.c on the view's thread, and classifies each sample
 * into the five GIL classes by the rules gt-analyze applies (analyze/python.c, docs/PYTHON.md):
 * a wait frame -> waiting; GIL records (the poll's window included) or the nearest Python
 * read -> held or not; held with extension code leafward of the innermost eval frame ->
 * native+GIL, else python+GIL. */
#include "top.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "addrspace.h"
#include "gt_util.h"
#include "procmem.h"

#define QUEUE_MAX 8192            /* samples waiting for the view thread; more are skipped */
#define GIL_RING 16384            /* GIL changes kept (the poll writes one per change) */
#define READS_PER_THREAD 64       /* Python reads kept per thread */
#define MAX_FRAMES 256
#define PC_CACHE 8192
#define HOT_SLOTS 24              /* functions counted per thread and interval */
#define MAX_LABELS 65536
#define GIL_WINDOW_NS (2 * GT_NS_PER_MS) /* two polls of the 1 kHz GIL loop */
#define REFRESH_NS (200 * GT_NS_PER_MS)

/* Native functions that mean "waiting to take the GIL" (analyze/python.c's list). */
static const char *const wait_names[] = {
	"take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock",
	"_PyEval_AcquireLock", "_PyThreadState_Attach", "PyGILState_Ensure", "_PyEval_ReInitThreads",
};
/* Modules whose frames belong to whoever called them (analyze/python.c's list). */
static const char *const sys_mods[] = { "libc.so", "libc-", "libm.so", "libm-", "libpthread", "ld-linux",
                                        "ld-musl", "libdl", "librt", "linux-vdso", "[vdso]" };

typedef struct qsample {
	uint32_t pid, tid, flags, n_regs, n_user, stack_len;
	uint64_t time_ns, regs_mask;
	uint64_t regs[24];
	uint64_t *ips;            /* user callchain, leaf first */
	uint8_t *stack;
} qsample;

typedef struct gil_ev {
	uint64_t time_ns;
	uint32_t pid, holder, locked;
} gil_ev;

typedef struct pyread {
	uint64_t time_ns, leaf_code;
	int32_t leaf_line;
	uint32_t flags, n_frames;
} pyread;

typedef struct pythr {
	uint32_t pid, tid;
	pyread r[READS_PER_THREAD];   /* ring, in time order */
	unsigned head, n;
} pythr;

typedef struct codename {
	uint32_t pid;
	uint64_t id;
	char *name, *file;            /* file: the base name */
} codename;

typedef struct hot {
	uint32_t label;
	uint64_t n;
} hot;

typedef struct tstat {
	uint32_t pid, tid;
	char name[32];
	uint64_t iv[REC_TOP_NCLASS], all[REC_TOP_NCLASS];
	hot hot_iv[HOT_SLOTS], hot_all[HOT_SLOTS];
} tstat;

typedef struct space {
	pid_t pid;
	rec_procmem *mem;
	rec_as *as;
	uint64_t refreshed_ns;
	int stale;                    /* a mapping appeared since the last read of the maps */
} space;

enum { PCF_EVAL = 1, PCF_WAIT = 2, PCF_SYSTEM = 4, PCF_MAPPED = 8 };
typedef struct pcinfo {
	uint64_t key;                 /* pc << 1 | exact, 0 = empty */
	uint32_t pid;
	uint32_t flags;
	uint32_t module;              /* label id of the module path */
	uint32_t name;                /* label id of "function" or "[module]" */
} pcinfo;

struct rec_top_model {
	pid_t pid;
	double freq_hz;
	uint64_t bound_ns;            /* farthest a Python read may be from a sample */
	pthread_mutex_t lock;         /* guards everything observe() touches */
	qsample *q;
	size_t n_q, cap_q;
	gil_ev *gil;                  /* ring */
	size_t gil_head, gil_n;
	pythr *py;
	size_t n_py, cap_py;
	codename *codes;
	size_t n_codes, cap_codes;
	tstat *ts;
	size_t n_ts, cap_ts;
	pid_t *pids;
	size_t n_pids, cap_pids;
	rec_top_stats st_iv, st_all;
	uint64_t iv_start_ns;
	/* the view thread's own */
	space *sp;
	size_t n_sp, cap_sp;
	pcinfo *pcs;
	char **labels;
	size_t n_labels, cap_labels;
	uint32_t *label_hash;         /* open addressing over labels, 0 = empty, else id + 1 */
	size_t label_hash_cap;
	uint32_t *interp;             /* label ids of modules holding _PyEval_EvalFrameDefault */
	size_t n_interp, cap_interp;
};

/* ---- small tables ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The id of label s (interned). UINT32_MAX when the table is full or memory short. */
static uint32_t label_id(rec_top_model *m, const char *s)
{
	size_t mask, i;

	if (m->n_labels * 2 >= m->label_hash_cap) {
		size_t ncap = m->label_hash_cap ? m->label_hash_cap * 2 : 4096, k;
		uint32_t *h;
		if (m->n_labels >= MAX_LABELS || !(h = calloc(ncap, sizeof(*h))))
			return UINT32_MAX;
		for (k = 0; k < m->n_labels; k++) {
			size_t j = (size_t)hash_str(m->labels[k]) & (ncap - 1);
			while (h[j])
				j = (j + 1) & (ncap - 1);
			h[j] = (uint32_t)k + 1;
		}
		free(m->label_hash);
		m->label_hash = h;
		m->label_hash_cap = ncap;
	}
	mask = m->label_hash_cap - 1;
	for (i = (size_t)hash_str(s) & mask; m->label_hash[i]; i = (i + 1) & mask)
		if (strcmp(m->labels[m->label_hash[i] - 1], s) == 0)
			return m->label_hash[i] - 1;
	if (GT_GROW(m->labels, m->cap_labels, m->n_labels + 1) < 0 || !(m->labels[m->n_labels] = strdup(s)))
		return UINT32_MAX;
	m->label_hash[i] = (uint32_t)m->n_labels + 1;
	return (uint32_t)m->n_labels++;
}

static const char *label(const rec_top_model *m, uint32_t id)
{
	return id < m->n_labels ? m->labels[id] : "?";
}

static tstat *tstat_of(rec_top_model *m, uint32_t pid, uint32_t tid)
{
	size_t i;

	for (i = m->n_ts; i > 0; i--)
		if (m->ts[i - 1].tid == tid && m->ts[i - 1].pid == pid)
			return &m->ts[i - 1];
	if (GT_GROW(m->ts, m->cap_ts, m->n_ts + 1) < 0)
		return NULL;
	memset(&m->ts[m->n_ts], 0, sizeof(tstat));
	m->ts[m->n_ts].pid = pid;
	m->ts[m->n_ts].tid = tid;
	return &m->ts[m->n_ts++];
}

static pythr *pythr_of(rec_top_model *m, uint32_t pid, uint32_t tid, int create)
{
	size_t i;

	for (i = 0; i < m->n_py; i++)
		if (m->py[i].tid == tid && m->py[i].pid == pid)
			return &m->py[i];
	if (!create || GT_GROW(m->py, m->cap_py, m->n_py + 1) < 0)
		return NULL;
	memset(&m->py[m->n_py], 0, sizeof(pythr));
	m->py[m->n_py].pid = pid;
	m->py[m->n_py].tid = tid;
	return &m->py[m->n_py++];
}

static void note_pid(rec_top_model *m, uint32_t pid)
{
	size_t i;

	for (i = 0; i < m->n_pids; i++)
		if (m->pids[i] == (pid_t)pid)
			return;
	if (GT_GROW(m->pids, m->cap_pids, m->n_pids + 1) == 0)
		m->pids[m->n_pids++] = (pid_t)pid;
}

/* ---- create / destroy ---- */

rec_top_model *rec_top_model_create(pid_t pid, double freq_hz)
{
	rec_top_model *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->pid = pid;
	m->freq_hz = freq_hz > 0 ? freq_hz : 99;
	m->bound_ns = gt_hz_to_period_ns(m->freq_hz);
	pthread_mutex_init(&m->lock, NULL);
	m->gil = calloc(GIL_RING, sizeof(*m->gil));
	m->pcs = calloc(PC_CACHE, sizeof(*m->pcs));
	if (!m->gil || !m->pcs) {
		rec_top_model_destroy(m);
		return NULL;
	}
	note_pid(m, (uint32_t)pid);
	m->iv_start_ns = gtt_now_ns();
	return m;
}

static void free_sample(qsample *s)
{
	free(s->ips);
	free(s->stack);
}

void rec_top_model_destroy(rec_top_model *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n_q; i++)
		free_sample(&m->q[i]);
	free(m->q);
	for (i = 0; i < m->n_codes; i++) {
		free(m->codes[i].name);
		free(m->codes[i].file);
	}
	free(m->codes);
	for (i = 0; i < m->n_sp; i++) {
		rec_as_close(m->sp[i].as);
		rec_procmem_close(m->sp[i].mem);
	}
	free(m->sp);
	for (i = 0; i < m->n_labels; i++)
		free(m->labels[i]);
	free(m->labels);
	free(m->label_hash);
	free(m->interp);
	free(m->pcs);
	free(m->gil);
	free(m->py);
	free(m->ts);
	free(m->pids);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---- observing (any thread) ---- */

static void observe_sample(rec_top_model *m, const gtt_sample *s)
{
	qsample q;

	memset(&q, 0, sizeof(q));
	q.pid = s->pid;
	q.tid = s->tid;
	q.time_ns = s->time_ns;
	q.flags = s->flags;
	if ((s->flags & GTT_SAMPLE_REGS) && s->n_regs <= 24) {
		q.n_regs = s->n_regs;
		q.regs_mask = s->regs_mask;
		memcpy(q.regs, s->regs, s->n_regs * sizeof(uint64_t));
	}
	if (s->n_user && (q.ips = malloc(s->n_user * sizeof(uint64_t)))) {
		memcpy(q.ips, s->ips + s->n_kernel, s->n_user * sizeof(uint64_t));
		q.n_user = s->n_user;
	}
	if ((s->flags & GTT_SAMPLE_STACK) && s->stack_len && (q.stack = malloc(s->stack_len))) {
		memcpy(q.stack, s->stack, s->stack_len);
		q.stack_len = s->stack_len;
	}
	pthread_mutex_lock(&m->lock);
	m->st_iv.samples++;
	m->st_all.samples++;
	if (m->n_q >= QUEUE_MAX || GT_GROW(m->q, m->cap_q, m->n_q + 1) < 0) {
		m->st_iv.skipped++;
		m->st_all.skipped++;
		pthread_mutex_unlock(&m->lock);
		free_sample(&q);
		return;
	}
	m->q[m->n_q++] = q;
	pthread_mutex_unlock(&m->lock);
}

static void observe_code(rec_top_model *m, const gtt_py_code *c)
{
	const char *nm = c->qualname && c->qualname[0] ? c->qualname : c->name;
	const char *f = c->filename ? strrchr(c->filename, '/') : NULL;
	codename e = { c->pid, c->code_id, strdup(nm ? nm : "?"), strdup(f ? f + 1 : c->filename ? c->filename : "?") };

	if (!e.name || !e.file || GT_GROW(m->codes, m->cap_codes, m->n_codes + 1) < 0) {
		free(e.name);
		free(e.file);
		return;
	}
	m->codes[m->n_codes++] = e;
}

void rec_top_model_observe(void *ctx, const gtt_record *r)
{
	rec_top_model *m = ctx;

	if (!m)
		return;
	if (r->tag == GTT_REC_SAMPLE) {
		observe_sample(m, &r->u.sample);
		return;
	}
	pthread_mutex_lock(&m->lock);
	switch (r->tag) {
	case GTT_REC_GIL: {
		gil_ev *e = &m->gil[(m->gil_head + m->gil_n) % GIL_RING];
		*e = (gil_ev){ r->u.gil.time_ns, r->u.gil.pid, r->u.gil.holder_tid, r->u.gil.locked };
		if (m->gil_n < GIL_RING)
			m->gil_n++;
		else
			m->gil_head = (m->gil_head + 1) % GIL_RING;
		m->st_iv.gil_changes++;
		m->st_all.gil_changes++;
		break;
	}
	case GTT_REC_PY_STACK: {
		pythr *t = pythr_of(m, r->u.py_stack.pid, r->u.py_stack.tid, 1);
		const gtt_py_stack *ps = &r->u.py_stack;
		if (t) {
			pyread *e = &t->r[(t->head + t->n) % READS_PER_THREAD];
			*e = (pyread){ ps->time_ns, ps->n_frames ? ps->frames[0].code_id : 0,
			               ps->n_frames ? ps->frames[0].line : -1, ps->flags, ps->n_frames };
			if (t->n < READS_PER_THREAD)
				t->n++;
			else
				t->head = (t->head + 1) % READS_PER_THREAD;
		}
		m->st_iv.python = m->st_all.python = 1;
		break;
	}
	case GTT_REC_PY_CODE:
		observe_code(m, &r->u.py_code);
		break;
	case GTT_REC_THREAD:
		if (r->u.thread.event != GTT_THREAD_EXIT && r->u.thread.name) {
			tstat *t = tstat_of(m, r->u.thread.pid, r->u.thread.tid);
			if (t)
				snprintf(t->name, sizeof(t->name), "%s", r->u.thread.name);
		}
		break;
	case GTT_REC_PROCESS:
		note_pid(m, r->u.process.pid);
		break;
	case GTT_REC_MAPPING: {
		size_t i;
		for (i = 0; i < m->n_sp; i++)
			if (m->sp[i].pid == (pid_t)r->u.mapping.pid)
				m->sp[i].stale = 1;
		break;
	}
	case GTT_REC_HEALTH: {
		const gtt_health *h = &r->u.health;
		rec_top_stats *st[2] = { &m->st_iv, &m->st_all };
		int k;
		for (k = 0; k < 2; k++) {
			if (h->kind == GTT_HEALTH_LOST)
				st[k]->lost += h->count;
			else if (h->kind == GTT_HEALTH_THROTTLE)
				st[k]->throttled++;
			else if (h->kind == GTT_HEALTH_LAG_WINDOW)
				st[k]->lag_windows++;
			else if (h->kind == GTT_HEALTH_READ_ERRORS && h->source == GTT_SRC_PYSTACK) {
				st[k]->py_failed += h->value[0];
				st[k]->py_torn += h->value[1];
			}
		}
		break;
	}
	default:
		break;
	}
	pthread_mutex_unlock(&m->lock);
}

/* ---- classification (the view thread) ---- */

static space *space_of(rec_top_model *m, uint32_t pid)
{
	size_t i;
	space *s;
	int err;

	for (i = 0; i < m->n_sp; i++)
		if (m->sp[i].pid == (pid_t)pid)
			return m->sp[i].as ? &m->sp[i] : NULL;
	if (GT_GROW(m->sp, m->cap_sp, m->n_sp + 1) < 0)
		return NULL;
	s = &m->sp[m->n_sp++];
	memset(s, 0, sizeof(*s));
	s->pid = (pid_t)pid;
	s->mem = rec_procmem_open((pid_t)pid);
	s->as = s->mem ? rec_as_open((pid_t)pid, s->mem, &err) : NULL;
	s->refreshed_ns = gtt_now_ns();
	return s->as ? s : NULL;
}

static int is_system(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t i;

	b = b ? b + 1 : path;
	for (i = 0; i < sizeof(sys_mods) / sizeof(sys_mods[0]); i++)
		if (strncmp(b, sys_mods[i], strlen(sys_mods[i])) == 0)
			return 1;
	return 0;
}

static int is_interp(const rec_top_model *m, uint32_t module)
{
	size_t k;
	const char *b;

	for (k = 0; k < m->n_interp; k++)
		if (m->interp[k] == module)
			return 1;
	if (m->n_interp)
		return 0;
	/* no eval frame seen anywhere yet: go by the name, as gt-analyze does */
	b = strrchr(label(m, module), '/');
	b = b ? b + 1 : label(m, module);
	return strncmp(b, "libpython", 9) == 0 || strncmp(b, "python", 6) == 0;
}

/* What matters of the frame at pc in pid: its function and module, eval, wait, system. */
static const pcinfo *pc_info(rec_top_model *m, space *sp, uint32_t pid, uint64_t pc, int exact)
{
	uint64_t key = pc << 1 | (exact ? 1 : 0);
	pcinfo *e = &m->pcs[(size_t)((key ^ pid) * 0x9e3779b97f4a7c15ull >> 51) & (PC_CACHE - 1)];
	rec_as_sym s;
	char name[512];
	size_t i;

	if (e->key == key && e->pid == pid)
		return e;
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->pid = pid;
	e->name = e->module = UINT32_MAX;
	if (rec_as_symbolize(sp->as, pc, exact, &s, name, sizeof(name)) < 0)
		return e;
	e->flags = PCF_MAPPED;
	e->module = label_id(m, s.path && s.path[0] ? s.path : s.module);
	if (is_system(s.module))
		e->flags |= PCF_SYSTEM;
	if (s.name) {
		/* exact names, as gt-analyze compares them */
		if (strcmp(s.name, "_PyEval_EvalFrameDefault") == 0) {
			e->flags |= PCF_EVAL;
			for (i = 0; i < m->n_interp && m->interp[i] != e->module; i++)
				;
			if (i == m->n_interp && GT_GROW(m->interp, m->cap_interp, m->n_interp + 1) == 0)
				m->interp[m->n_interp++] = e->module;
		}
		for (i = 0; i < sizeof(wait_names) / sizeof(wait_names[0]); i++)
			if (strcmp(s.name, wait_names[i]) == 0)
				e->flags |= PCF_WAIT;
		e->name = label_id(m, s.name);
	} else {
		/* "[libz.so]": the version suffix makes the line longer, not clearer */
		char b[300];
		const char *so = strstr(s.module, ".so");
		int len = so ? (int)(so - s.module) + 3 : (int)strlen(s.module);
		snprintf(b, sizeof(b), "[%.*s]", len, s.module);
		e->name = label_id(m, b);
	}
	return e;
}

/* Read 8 bytes of a sample's stack copy. */
typedef struct stack_view {
	uint64_t sp;
	const uint8_t *data;
	uint32_t len;
} stack_view;

static int read_copy(void *ctx, uint64_t addr, uint64_t *val)
{
	const stack_view *v = ctx;

	if (addr < v->sp || addr - v->sp + 8 > v->len)
		return -1;
	memcpy(val, v->data + (addr - v->sp), 8);
	return 0;
}

/* perf's x86-64 register numbers to DWARF's (-1 unused; 16 = rip). */
static const int8_t perf_to_dwarf[24] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, -1, -1, -1, -1, -1, -1, -1,
                                          8, 9, 10, 11, 12, 13, 14, 15 };

/* The user frames of a sample, leaf first: pcs and whether each is exact. */
static size_t sample_pcs(space *sp, const qsample *q, uint64_t *pcs, uint8_t *exact)
{
	size_t n = 0, i;

	if ((q->flags & GTT_SAMPLE_REGS) && (q->flags & GTT_SAMPLE_STACK) && q->n_regs) {
		rec_unw_regs u;
		rec_as_frame fr[MAX_FRAMES];
		stack_view v;
		unsigned idx = 0, r;
		int end, tries;

		memset(&u, 0, sizeof(u));
		for (r = 0; r < 24 && idx < q->n_regs; r++) {
			if (!(q->regs_mask >> r & 1))
				continue;
			if (perf_to_dwarf[r] >= 0) {
				u.r[perf_to_dwarf[r]] = q->regs[idx];
				u.valid |= 1u << perf_to_dwarf[r];
			}
			idx++;
		}
		v = (stack_view){ u.r[REC_UNW_SP], q->stack, q->stack_len };
		for (tries = 0; tries < 2; tries++) {
			n = rec_as_unwind(sp->as, &u, read_copy, &v, fr, MAX_FRAMES, &end);
			/* a pc in no known mapping: a library loaded since (at most every 200 ms) */
			if (end != REC_AS_END_NOMAP || tries || gtt_now_ns() - sp->refreshed_ns < REFRESH_NS)
				break;
			sp->refreshed_ns = gtt_now_ns();
			rec_as_refresh(sp->as);
		}
		for (i = 0; i < n; i++) {
			pcs[i] = fr[i].pc;
			exact[i] = (uint8_t)fr[i].exact;
		}
		return n;
	}
	for (i = 0; i < q->n_user && i < MAX_FRAMES; i++) {
		if (q->ips[i] >= 0xfffffffffffff000ull)
			continue; /* a context marker */
		pcs[n] = q->ips[i];
		exact[n++] = i == 0;
	}
	return n;
}

/* GIL state of (pid, tid) at t from the GIL changes: 1 held, 0 not, -1 unknown. *maybe: a
 * change to "held by tid" follows within the poll window (call with the lock held). */
static int gil_held_by(const rec_top_model *m, uint32_t pid, uint32_t tid, uint64_t t, int *maybe)
{
	size_t lo = 0, hi = m->gil_n;
	const gil_ev *g = NULL, *next = NULL;

	*maybe = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->gil[(m->gil_head + mid) % GIL_RING].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the events of pid around t */
	for (hi = lo; hi < m->gil_n && !next; hi++)
		if (m->gil[(m->gil_head + hi) % GIL_RING].pid == pid)
			next = &m->gil[(m->gil_head + hi) % GIL_RING];
	for (; lo > 0 && !g; lo--)
		if (m->gil[(m->gil_head + lo - 1) % GIL_RING].pid == pid)
			g = &m->gil[(m->gil_head + lo - 1) % GIL_RING];
	if (next && next->time_ns - t <= GIL_WINDOW_NS && next->locked && next->holder == tid)
		*maybe = 1;
	if (!g)
		return -1;
	if (g->locked && g->holder == tid) {
		*maybe = 0;
		return 1;
	}
	return 0;
}

/* The Python read of (pid, tid) nearest to t within the bound, an untorn one preferred (lock
 * held). NULL when none. */
static const pyread *nearest_read(const rec_top_model *m, const pythr *pt, uint64_t t)
{
	const pyread *best = NULL, *best_torn = NULL;
	uint64_t bd = UINT64_MAX, btd = UINT64_MAX;
	unsigned i;

	for (i = 0; i < pt->n; i++) {
		const pyread *r = &pt->r[(pt->head + i) % READS_PER_THREAD];
		uint64_t d = r->time_ns > t ? r->time_ns - t : t - r->time_ns;
		if (d > m->bound_ns)
			continue;
		if (!(r->flags & GTT_PYSTACK_TORN) && d < bd) {
			bd = d;
			best = r;
		} else if ((r->flags & GTT_PYSTACK_TORN) && d < btd) {
			btd = d;
			best_torn = r;
		}
	}
	return best ? best : best_torn;
}

static const codename *code_of(const rec_top_model *m, uint32_t pid, uint64_t id)
{
	size_t i;

	for (i = m->n_codes; i > 0; i--)
		if (m->codes[i - 1].id == id && m->codes[i - 1].pid == pid)
			return &m->codes[i - 1];
	return NULL;
}

static void count_hot(hot *h, uint32_t lab)
{
	size_t i, low = 0;

	for (i = 0; i < HOT_SLOTS; i++) {
		if (h[i].n && h[i].label == lab) {
			h[i].n++;
			return;
		}
		if (h[i].n < h[low].n)
			low = i;
	}
	/* a new function takes the least counted slot (an approximate top list, like
	 * space-saving counters: the hottest functions stay) */
	h[low].label = lab;
	h[low].n = h[low].n + 1;
}

static void classify_one(rec_top_model *m, const qsample *q)
{
	uint64_t pcs[MAX_FRAMES];
	uint8_t exact[MAX_FRAMES];
	const pcinfo *pi[MAX_FRAMES];
	space *sp = space_of(m, q->pid);
	size_t n = 0, i;
	int cls, last_eval = -1, native = 0, other = 0, any_user = 0, held = 0, maybe = 0, wait = 0;
	uint32_t lab = UINT32_MAX;
	const pyread *rd = NULL;
	pythr *pt;
	tstat *ts;
	char buf[400];

	if (sp && sp->stale && gtt_now_ns() - sp->refreshed_ns >= REFRESH_NS) {
		sp->stale = 0;
		sp->refreshed_ns = gtt_now_ns();
		rec_as_refresh(sp->as);
	}
	if (sp)
		n = sample_pcs(sp, q, pcs, exact);
	for (i = 0; i < n; i++) {
		pi[i] = pc_info(m, sp, q->pid, pcs[i], exact[i]);
		if (pi[i]->flags & PCF_WAIT)
			wait = 1;
		if ((pi[i]->flags & PCF_EVAL) && last_eval < 0)
			last_eval = (int)i; /* leaf first: the first one is the innermost */
	}
	/* leafward of the innermost eval loop: extension code (native), or only the interpreter */
	for (i = 0; i < (last_eval < 0 ? n : (size_t)last_eval); i++) {
		any_user = 1;
		if (!(pi[i]->flags & PCF_MAPPED) || !is_interp(m, pi[i]->module)) {
			other = 1;
			if (!(pi[i]->flags & PCF_SYSTEM))
				native = 1;
		}
	}
	pthread_mutex_lock(&m->lock);
	pt = pythr_of(m, q->pid, q->tid, 0);
	if (!pt) {
		cls = REC_TOP_NONPY;
	} else {
		rd = nearest_read(m, pt, q->time_ns);
		held = gil_held_by(m, q->pid, q->tid, q->time_ns, &maybe);
		if (held < 0)
			held = rd && (rd->flags & GTT_PYSTACK_HOLDS_GIL);
		if (wait)
			cls = REC_TOP_WAIT_GIL;
		else {
			/* bytecode runs only with the GIL: trust the stack when the records are ambiguous */
			if (!held && maybe && last_eval >= 0 && !other)
				held = 1;
			if (!held)
				cls = REC_TOP_NATIVE_NOGIL;
			else if (last_eval < 0 && !any_user)
				cls = REC_TOP_PY_GIL;
			else
				cls = native ? REC_TOP_NATIVE_GIL : REC_TOP_PY_GIL;
		}
	}
	/* the function to show, short enough for 80 columns: the innermost Python one with its
	 * line for python+GIL, else the native leaf and the Python function it runs under */
	{
		const codename *c = rd && rd->n_frames ? code_of(m, q->pid, rd->leaf_code) : NULL;
		char py[200] = "";
		if (c) {
			if (rd->leaf_line >= 0)
				snprintf(py, sizeof(py), "%s (%s:%d)", c->name, c->file, rd->leaf_line);
			else
				snprintf(py, sizeof(py), "%s (%s)", c->name, c->file);
		}
		if (cls == REC_TOP_PY_GIL && py[0])
			snprintf(buf, sizeof(buf), "%s", py);
		else if (n && c)
			snprintf(buf, sizeof(buf), "%s <- %s", label(m, pi[0]->name), c->name);
		else if (n)
			snprintf(buf, sizeof(buf), "%s", label(m, pi[0]->name));
		else
			snprintf(buf, sizeof(buf), "%s", q->flags & GTT_SAMPLE_KERNEL ? "[kernel]" : "[no stack]");
	}
	pthread_mutex_unlock(&m->lock);
	lab = label_id(m, buf);
	pthread_mutex_lock(&m->lock);
	ts = tstat_of(m, q->pid, q->tid);
	if (ts) {
		ts->iv[cls]++;
		ts->all[cls]++;
		if (lab != UINT32_MAX) {
			count_hot(ts->hot_iv, lab);
			count_hot(ts->hot_all, lab);
		}
	}
	note_pid(m, q->pid);
	pthread_mutex_unlock(&m->lock);
}

size_t rec_top_model_process(rec_top_model *m)
{
	qsample *batch;
	size_t n, i;

	pthread_mutex_lock(&m->lock);
	batch = m->q;
	n = m->n_q;
	m->q = NULL;
	m->n_q = m->cap_q = 0;
	pthread_mutex_unlock(&m->lock);
	for (i = 0; i < n; i++) {
		classify_one(m, &batch[i]);
		free_sample(&batch[i]);
	}
	free(batch);
	return n;
}

/* ---- what the view shows ---- */

static uint32_t hottest(const hot *h)
{
	size_t i, best = 0;

	for (i = 1; i < HOT_SLOTS; i++)
		if (h[i].n > h[best].n)
			best = i;
	return h[best].n ? h[best].label : UINT32_MAX;
}

size_t rec_top_model_rows(rec_top_model *m, int total, rec_top_row *out, size_t cap)
{
	size_t i, k, n = 0;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->n_ts; i++) {
		const tstat *t = &m->ts[i];
		const uint64_t *c = total ? t->all : t->iv;
		uint64_t sum = 0;
		uint32_t lab;

		for (k = 0; k < REC_TOP_NCLASS; k++)
			sum += c[k];
		if (!sum)
			continue;
		if (n < cap) {
			rec_top_row *r = &out[n];
			memset(r, 0, sizeof(*r));
			r->pid = t->pid;
			r->tid = t->tid;
			snprintf(r->name, sizeof(r->name), "%s", t->name);
			memcpy(r->n, c, sizeof(r->n));
			r->samples = sum;
			lab = hottest(total ? t->hot_all : t->hot_iv);
			snprintf(r->hottest, sizeof(r->hottest), "%s", lab == UINT32_MAX ? "" : label(m, lab));
		}
		n++;
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* GIL held time of the target over [from, to) from the GIL changes (lock held). */
static uint64_t gil_held_ns(const rec_top_model *m, uint64_t from, uint64_t to, uint64_t *span)
{
	uint64_t held = 0, t_prev = from;
	int locked = -1;
	size_t i;

	*span = 0;
	for (i = 0; i < m->gil_n; i++) {
		const gil_ev *e = &m->gil[(m->gil_head + i) % GIL_RING];
		if (e->pid != (uint32_t)m->pid)
			continue;
		if (e->time_ns <= from) {
			locked = (int)e->locked;
			continue;
		}
		if (e->time_ns >= to)
			break;
		if (locked >= 0) {
			*span += e->time_ns - t_prev;
			if (locked)
				held += e->time_ns - t_prev;
		}
		t_prev = e->time_ns;
		locked = (int)e->locked;
	}
	if (locked >= 0 && to > t_prev) {
		*span += to - t_prev;
		if (locked)
			held += to - t_prev;
	}
	return held;
}

void rec_top_model_stats(rec_top_model *m, int total, rec_top_stats *st)
{
	pthread_mutex_lock(&m->lock);
	*st = total ? m->st_all : m->st_iv;
	if (!total)
		st->gil_held_ns = gil_held_ns(m, m->iv_start_ns, gtt_now_ns(), &st->gil_span_ns);
	pthread_mutex_unlock(&m->lock);
}

void rec_top_model_next_interval(rec_top_model *m)
{
	size_t i;
	uint64_t now = gtt_now_ns(), span;

	pthread_mutex_lock(&m->lock);
	m->st_all.gil_held_ns += gil_held_ns(m, m->iv_start_ns, now, &span);
	m->st_all.gil_span_ns += span;
	memset(&m->st_iv, 0, sizeof(m->st_iv));
	m->st_iv.python = m->st_all.python;
	m->iv_start_ns = now;
	for (i = 0; i < m->n_ts; i++) {
		memset(m->ts[i].iv, 0, sizeof(m->ts[i].iv));
		memset(m->ts[i].hot_iv, 0, sizeof(m->ts[i].hot_iv));
	}
	pthread_mutex_unlock(&m->lock);
}

size_t rec_top_model_pids(rec_top_model *m, pid_t *out, size_t cap)
{
	size_t i, n;

	pthread_mutex_lock(&m->lock);
	n = m->n_pids;
	for (i = 0; i < n && i < cap; i++)
		out[i] = m->pids[i];
	pthread_mutex_unlock(&m->lock);
	return n;
}
