/* cupti_py.c — the CUDA agent's in-process Python stack reader: finds the interpreter the agent
 * was loaded into, and reads the calling thread's frame chain with the recorder's CPython offset
 * tables (record/pyoffsets.c), through process_vm_readv on ourselves so that a layout we got
 * wrong costs a failed read, never a crash of the training job. Code objects are cached by
 * address (checked against reuse on every stack) and described once through a sink. */
#include "cupti_py.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CODES_MAX (1u << 16)   /* cached code objects; beyond this the cache starts over */
#define LINE_CACHE 4           /* (instruction index -> line) pairs kept per code object */

typedef struct code_ent {
	uint64_t addr;            /* 0 = empty slot */
	uint64_t code_id;         /* 0 = not read (yet, or the read failed) */
	uint64_t stamp;           /* the capture that last found it unchanged */
	rec_pycode c;
	int64_t line_index[LINE_CACHE];   /* a caller's frame sits at the same call on every stack: */
	int32_t line[LINE_CACHE];         /* its line is looked up in the table once */
} code_ent;

struct ag_pythr {
	rec_procmem *m;
	pid_t pid;
	uint64_t tstate_ok;       /* the thread state we checked belongs to this thread */
	rec_pyframe_raw *raw;
	size_t raw_cap;
};

static struct {
	pthread_once_t once;
	int state;                /* 1 readable, 0 none, -1 unsupported */
	char why[200];
	char version[16];
	pid_t pid;                /* ours (ag_py_set_pid after fork) */
	void *interp;             /* a function of the interpreter (names its object) */
	rec_pyoff off;
	uint64_t code_type;
	int (*is_initialized)(void);
	void *(*this_tstate)(void);
	pthread_mutex_t lock;     /* the code cache and the counters */
	code_ent *codes;
	size_t cap, n;
	uint64_t gen, stamp;
	ag_py_stats st;
} P = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

typedef struct lib_find {
	char path[512];
} lib_find;

static int find_libpython(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	lib_find *f = arg;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (base && strncmp(base + 1, "libpython3", 10) == 0) {
		snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* A symbol of the interpreter: the global scope (a python3 executable, or a libpython it links),
 * else a libpython loaded privately (an embedding program's dlopen). */
static void *py_sym(void *lib, const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	return p ? p : lib ? dlsym(lib, name) : NULL;
}

/* fork() while another thread holds the code cache's lock: the child gets it unlocked */
static void fork_prepare(void)
{
	pthread_mutex_lock(&P.lock);
}

static void fork_after(void)
{
	pthread_mutex_unlock(&P.lock);
}

static void discover(void)
{
	void *lib = NULL;
	pthread_atfork(fork_prepare, fork_after, fork_after);
	lib_find f = { "" };
	P.state = 0;
	snprintf(P.why, sizeof(P.why), "no Python interpreter in this process");
	if (!dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState") && dl_iterate_phdr(find_libpython, &f))
		lib = dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD);
	P.this_tstate = (void *(*)(void))py_sym(lib, "PyGILState_GetThisThreadState");
	P.is_initialized = (int (*)(void))py_sym(lib, "Py_IsInitialized");
	uint8_t *runtime = py_sym(lib, "_PyRuntime");
	const unsigned long *py_version = py_sym(lib, "Py_Version");
	const char *(*get_version)(void) = (const char *(*)(void))py_sym(lib, "Py_GetVersion");
	P.code_type = (uint64_t)(uintptr_t)py_sym(lib, "PyCode_Type");
	P.interp = py_sym(lib, "PyEval_EvalCode");
	if (!P.this_tstate || !P.is_initialized || !runtime || !P.code_type || !P.interp)
		return;
	int major = 0, minor = 0;
	if (py_version) {
		major = (int)(*py_version >> 24);
		minor = (int)((*py_version >> 16) & 0xff);
	} else if (!get_version || sscanf(get_version(), "%d.%d", &major, &minor) != 2) {
		major = 0;
	}
	P.state = -1;
	snprintf(P.version, sizeof(P.version), "%d.%d", major, minor);
	if (major != 3 || minor < 10) {
		snprintf(P.why, sizeof(P.why), "Python %d.%d: launch stacks read CPython 3.10 and later", major, minor);
		return;
	}
	if (minor <= 12) {
		P.off = *rec_pyoff_table(minor);
	} else {
		/* 3.13+: the interpreter describes its own layout at the start of _PyRuntime */
		uint8_t buf[REC_PY_DEBUG_OFFSETS_LEN];
		char err[160] = "";
		rec_procmem *m = rec_procmem_open(getpid());
		int ok = m && rec_procmem_read(m, (uint64_t)(uintptr_t)runtime, buf, sizeof(buf)) == 0 &&
		         rec_pyoff_from_debug(buf, sizeof(buf), &P.off, err, sizeof(err)) == 0;
		rec_procmem_close(m);
		if (!ok) {
			snprintf(P.why, sizeof(P.why), "Python %d.%d: %s", major, minor, err[0] ? err : "_PyRuntime unreadable");
			return;
		}
	}
	P.state = 1;
	P.why[0] = 0;
}

int ag_py_init(char *why, size_t whylen)
{
	pthread_once(&P.once, discover);
	if (why && whylen)
		snprintf(why, whylen, "%s", P.why);
	return P.state;
}

const void *ag_py_interpreter(void)
{
	pthread_once(&P.once, discover);
	return P.state == 1 ? P.interp : NULL;
}

const char *ag_py_version(void)
{
	pthread_once(&P.once, discover);
	return P.version;
}

void ag_pythr_free(ag_pythr *t)
{
	if (!t)
		return;
	rec_procmem_close(t->m);
	free(t->raw);
	free(t);
}

void ag_py_set_pid(pid_t pid)
{
	__atomic_store_n(&P.pid, pid, __ATOMIC_RELAXED);
}

static ag_pythr *thr_get(ag_pythr **tp, size_t cap)
{
	ag_pythr *t = *tp;
	pid_t pid = __atomic_load_n(&P.pid, __ATOMIC_RELAXED);
	if (!pid)
		pid = getpid();
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		*tp = t;
	}
	if (!t->m || t->pid != pid) {
		/* first use, or a fork()ed child: read our own memory, not the parent's */
		rec_procmem_close(t->m);
		t->m = rec_procmem_open(pid);
		t->pid = pid;
		t->tstate_ok = 0;
	}
	if (t->raw_cap < cap) {
		rec_pyframe_raw *r = realloc(t->raw, cap * sizeof(*r));
		if (!r)
			return NULL;
		t->raw = r;
		t->raw_cap = cap;
	}
	return t->m ? t : NULL;
}

static size_t code_home(uint64_t addr, size_t cap)
{
	return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static code_ent *code_slot(uint64_t addr)
{
	size_t i = code_home(addr, P.cap);
	while (P.codes[i].addr && P.codes[i].addr != addr)
		i = (i + 1) & (P.cap - 1);
	return &P.codes[i];
}

static void codes_clear(void)
{
	for (size_t i = 0; i < P.cap; i++)
		rec_pycode_clear(&P.codes[i].c);
	memset(P.codes, 0, P.cap * sizeof(*P.codes));
	P.n = 0;
	P.gen++;    /* what is read again gets new ids: the old ones stay described */
}

/* Room for `more` new entries; the cache starts over when it would pass CODES_MAX. */
static int codes_reserve(size_t more)
{
	if ((P.n + more) * 2 <= P.cap)
		return 0;
	size_t cap = P.cap ? P.cap : 1024;
	while ((P.n + more) * 2 > cap)
		cap *= 2;
	if (cap > CODES_MAX) {
		if (P.cap < CODES_MAX || more * 2 > P.cap)
			return -1;
		codes_clear();
		return 0;
	}
	code_ent *old = P.codes;
	size_t old_cap = P.cap;
	P.codes = calloc(cap, sizeof(*P.codes));
	if (!P.codes) {
		P.codes = old;
		return -1;
	}
	P.cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].addr)
			*code_slot(old[i].addr) = old[i];
	free(old);
	return 0;
}

/* (Re)read the code object of e and describe it. 0, -1 unreadable, -2 the sink refused. */
static int code_read(rec_procmem *m, code_ent *e, ag_py_code_sink sink, void *ctx)
{
	rec_pycode_clear(&e->c);
	e->code_id = 0;
	memset(e->line_index, 0, sizeof(e->line_index));
	if (rec_py_read_code(m, &P.off, e->addr, P.code_type, &e->c) < 0) {
		P.st.n_read_fail++;
		return -1;
	}
	uint64_t id = (e->addr & 0xffffffffffffull) | AG_PY_CODE_ID_BIT | (P.gen & 0xffff) << 48;
	if (sink(ctx, id, &e->c) < 0) {
		rec_pycode_clear(&e->c);
		return -2;
	}
	e->code_id = id;
	P.st.n_codes++;
	return 0;
}

/* Check the cached entries of this stack against the code objects now at their addresses; an
 * address that holds another code object (the old one freed, its memory reused) is read afresh
 * under a new id. Read in place, without a system call: each address is the code object of one
 * of this thread's live frames (which holds a reference to it), and was verified as a code object
 * when it was cached; the type is checked before any other field. */
static void codes_check(code_ent **es, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		code_ent *e = es[i];
		if (!e->code_id || e->stamp == P.stamp)
			continue;    /* unread, or checked for this stack already (recursion) */
		e->stamp = P.stamp;
		const uint8_t *obj = (const uint8_t *)(uintptr_t)e->addr;
		uint64_t type, name, file;
		int32_t first;
		memcpy(&type, obj + P.off.ob_type, 8);
		int same = type == P.code_type;
		if (same) {
			memcpy(&name, obj + P.off.co_name, 8);
			memcpy(&file, obj + P.off.co_filename, 8);
			memcpy(&first, obj + P.off.co_firstlineno, 4);
			same = name == e->c.name_ptr && file == e->c.filename_ptr && first == e->c.firstlineno;
		}
		if (!same) {
			e->code_id = 0;    /* read again below */
			P.gen++;
			P.st.n_reused++;
		}
	}
}

/* The line of instruction index in e, through its small cache. */
static int code_line(code_ent *e, int64_t index)
{
	unsigned k = (unsigned)((uint64_t)index * 0x9e3779b1u >> 8) % LINE_CACHE;
	if (e->line_index[k] == index + 1)
		return e->line[k];
	int line = rec_py_line(P.off.line_format, e->c.linetable, e->c.linetable_len, e->c.firstlineno, index);
	e->line_index[k] = index + 1;    /* +1: zeroed slots never match */
	e->line[k] = line;
	return line;
}

/* Frames raw[0..n) to out: code ids and lines. Returns frames resolved (stops at an unreadable
 * code object, setting TRUNC), or -1 when the sink refused a description. */
static int resolve(ag_pythr *t, size_t n, gtt_py_frame *out, uint32_t *flags, ag_py_code_sink sink, void *ctx)
{
	code_ent *es[AG_PY_MAX_DEPTH];
	int rc = 0;
	pthread_mutex_lock(&P.lock);
	P.stamp++;
	if (codes_reserve(n) < 0) {
		*flags |= GTT_CALLSTACK_PY_FAIL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		es[i] = code_slot(t->raw[i].code);
		if (!es[i]->addr) {
			es[i]->addr = t->raw[i].code;
			P.n++;
		}
	}
	codes_check(es, n);
	for (size_t i = 0; i < n; i++) {
		code_ent *e = es[i];
		if (!e->code_id) {
			int r = code_read(t->m, e, sink, ctx);
			if (r == -2) {
				rc = -1;
				goto out;
			}
			if (r < 0) {
				*flags |= GTT_CALLSTACK_PY_TRUNC;
				break;
			}
			e->stamp = P.stamp;
		}
		out[i].code_id = e->code_id;
		out[i].line = code_line(e, t->raw[i].index);
		out[i].flags = t->raw[i].flags;
		rc = (int)i + 1;
	}
out:
	pthread_mutex_unlock(&P.lock);
	return rc;
}

int ag_py_stack(ag_pythr **tp, gtt_py_frame *out, int cap, uint32_t *flags, ag_py_code_sink sink, void *ctx)
{
	rec_pythread thr;
	int torn = 0;
	pthread_once(&P.once, discover);
	if (P.state != 1) {
		*flags |= P.state == 0 ? GTT_CALLSTACK_PY_NONE : GTT_CALLSTACK_PY_FAIL;
		return 0;
	}
	if (cap > AG_PY_MAX_DEPTH)
		cap = AG_PY_MAX_DEPTH;
	void *ts = P.is_initialized() ? P.this_tstate() : NULL;
	if (!ts) {
		*flags |= GTT_CALLSTACK_PY_NONE;
		return 0;
	}
	ag_pythr *t = thr_get(tp, (size_t)cap);
	if (!t) {
		*flags |= GTT_CALLSTACK_PY_FAIL;
		return 0;
	}
	rec_procmem_cache_clear(t->m);
	if (rec_py_read_thread(t->m, &P.off, (uint64_t)(uintptr_t)ts, &thr) < 0) {
		*flags |= GTT_CALLSTACK_PY_FAIL;
		return 0;
	}
	if ((uint64_t)(uintptr_t)ts != t->tstate_ok) {
		/* the layout is right if the thread state we read names this very thread */
		if (thr.thread_id != (uint64_t)pthread_self()) {
			*flags |= GTT_CALLSTACK_PY_FAIL;
			return 0;
		}
		t->tstate_ok = (uint64_t)(uintptr_t)ts;
	}
	if (!thr.frame) {
		*flags |= GTT_CALLSTACK_PY_NONE;    /* a Python thread with no Python code running */
		return 0;
	}
	int n = rec_py_read_frames(t->m, &P.off, thr.frame, t->raw, (size_t)cap, &torn);
	if (n < 0) {
		*flags |= GTT_CALLSTACK_PY_FAIL;
		return 0;
	}
	if (torn)
		*flags |= GTT_CALLSTACK_PY_TRUNC;
	return resolve(t, (size_t)n, out, flags, sink, ctx);
}

void ag_py_stats_get(ag_py_stats *st)
{
	pthread_mutex_lock(&P.lock);
	*st = P.st;
	pthread_mutex_unlock(&P.lock);
}
