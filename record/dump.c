/* dump.c — gt-record --dump: for each thread, /proc state first, then a brief ptrace stop of
 * that thread alone during which its native stack is unwound and its Python stack read; then
 * names, the merge of both stacks, and the output (text, JSON, or a trace). */
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dump_priv.h"
#include "gt_util.h"
#include "procfs.h"

#define MAX_NATIVE 512           /* native frames per thread */
#define MAX_KSTACK 32
#define STOP_TIMEOUT_MS 250      /* a thread that does not stop by then is in uninterruptible sleep */
#define STACK_COPY_SLACK 4096    /* -o: bytes kept above the outermost frame's stack pointer */
#define STACK_COPY_MAX (1u << 20)
#define MAX_PROCS 4096

/* Native functions that mean "waiting to take the GIL" (the analyzer's list, analyze/python.c). */
static const char *const gil_wait_fns[] = {
	"take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyEval_AcquireLock",
	"_PyEval_AcquireLock", "_PyThreadState_Attach", "PyGILState_Ensure",
};

/* A test hook: hold each stopped thread this long, so a test can kill gt-record mid-stop. */
static long g_hold_ms = -1;

static char *keep_str(dproc *p, const char *s)
{
	char *c;

	if (p->n_strs == p->cap_strs && GT_GROW(p->strs, p->cap_strs, p->n_strs + 1) < 0)
		return NULL;
	c = strdup(s);
	if (c)
		p->strs[p->n_strs++] = c;
	return c;
}

/* "name" or "name.cold" / "name.constprop.0" equals base */
static int same_function(const char *name, const char *base)
{
	size_t n = strlen(base);
	return name && strncmp(name, base, n) == 0 && (name[n] == 0 || name[n] == '.');
}

static int read_cached(void *ctx, uint64_t addr, uint64_t *val)
{
	return rec_procmem_read_cached(ctx, addr, val, 8);
}

static rec_unw_regs unw_regs_of(const rec_ts_regs *r)
{
	rec_unw_regs u;

	memset(&u, 0, sizeof(u));
	u.r[0] = r->ax; u.r[1] = r->dx; u.r[2] = r->cx; u.r[3] = r->bx;
	u.r[4] = r->si; u.r[5] = r->di; u.r[6] = r->bp; u.r[7] = r->sp;
	u.r[8] = r->r8; u.r[9] = r->r9; u.r[10] = r->r10; u.r[11] = r->r11;
	u.r[12] = r->r12; u.r[13] = r->r13; u.r[14] = r->r14; u.r[15] = r->r15;
	u.r[16] = r->ip;
	u.valid = (1u << REC_UNW_NREGS) - 1;
	return u;
}

/* ---- while a thread is stopped ---- */

typedef struct stop_ctx {
	dproc *p;
	dthr *t;
	int want_stack;
} stop_ctx;

/* -o: copy the user stack from sp to a little above the outermost frame, for gt-analyze's own
 * unwinder; shorter where the stack mapping ends sooner. */
static void copy_stack(dproc *p, dthr *t)
{
	uint64_t sp = t->regs.sp, top = t->n_nat ? t->nat[t->n_nat - 1].sp : sp;
	uint64_t len = top - sp + STACK_COPY_SLACK;

	if (top < sp)
		len = STACK_COPY_SLACK;
	if (len > STACK_COPY_MAX)
		len = STACK_COPY_MAX;
	len = (len + 7) & ~7ull;
	if (!(t->stack = malloc(len)))
		return;
	while (len >= 64 && rec_procmem_read(p->mem, sp, t->stack, len) < 0) {
		/* down to the end of the page the top lies in, then halve */
		uint64_t end = (sp + len - 1) & ~4095ull;
		len = end > sp && end - sp < len ? end - sp : len / 2;
		len &= ~7ull;
	}
	if (len < 64) {
		free(t->stack);
		t->stack = NULL;
		return;
	}
	t->stack_len = (uint32_t)len;
}

static void on_stopped(void *ctx, pid_t tid, const rec_ts_regs *regs)
{
	stop_ctx *c = ctx;
	dthr *t = c->t;
	dproc *p = c->p;
	uint64_t t0 = gtt_now_ns();
	rec_unw_regs u = unw_regs_of(regs);

	(void)tid;
	t->time_ns = t0;
	t->regs = *regs;
	t->stopped = 1;
	rec_procmem_cache_clear(p->mem);
	t->nat = malloc(MAX_NATIVE * sizeof(*t->nat));
	if (t->nat)
		t->n_nat = rec_as_unwind(p->as, &u, read_cached, p->mem, t->nat, MAX_NATIVE, &t->nat_end);
	if (p->dpy) {
		t->tstate = rec_dpy_tstate_of(p->dpy, t->tid, regs->fs_base);
		if (t->tstate && rec_dpy_read_stack(p->dpy, t->tstate, &t->py) == 0)
			t->py_read = 1;
	}
	if (c->want_stack)
		copy_stack(p, t);
	if (g_hold_ms > 0) {
		struct timespec ts = { g_hold_ms / 1000, (g_hold_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	t->stop_ns = gtt_now_ns() - t0;
}

/* A thread we could not stop: what can be read while it runs. Its registers from /proc when
 * it is blocked in a system call (only sp and pc: CFI that needs another register stops). */
static void read_unstopped(dproc *p, dthr *t, int want_stack)
{
	if (t->st.sp && t->st.pc && t->st.state != 'R') {
		rec_unw_regs u;
		memset(&u, 0, sizeof(u));
		u.r[REC_UNW_SP] = t->st.sp;
		u.r[REC_UNW_IP] = t->st.pc;
		u.valid = 1u << REC_UNW_SP | 1u << REC_UNW_IP;
		t->from_proc = 1;
		t->regs.sp = t->st.sp;
		t->regs.ip = t->st.pc;
		rec_procmem_cache_clear(p->mem);
		t->nat = malloc(MAX_NATIVE * sizeof(*t->nat));
		if (t->nat)
			t->n_nat = rec_as_unwind(p->as, &u, read_cached, p->mem, t->nat, MAX_NATIVE, &t->nat_end);
		if (want_stack)
			copy_stack(p, t);
	}
	if (p->dpy) {
		t->tstate = rec_dpy_tstate_of(p->dpy, t->tid, 0);
		if (t->tstate && rec_dpy_read_stack(p->dpy, t->tstate, &t->py) == 0) {
			t->py_read = 1;
			t->py_unstopped = 1;
		}
	}
	t->time_ns = gtt_now_ns();
}

/* ---- one process ---- */

static void find_python(dproc *p)
{
	char err[400] = "";
	uint64_t probe;
	const char *path;
	int rc;

	/* memory we may not read says nothing about Python: say that instead */
	if (rec_as_find_module(p->as, "", &probe, &path) && rec_procmem_read(p->mem, probe, &probe, 8) < 0 &&
	    (errno == EPERM || errno == EACCES)) {
		snprintf(p->py_note, sizeof(p->py_note), "memory not readable (permission): no Python stacks");
		return;
	}
	rc = rec_py_find(p->pid, &p->pyf, err, sizeof(err));

	if (rc == 1) {
		p->dpy = rec_dpy_open(p->mem, &p->pyf);
		if (p->dpy && rec_dpy_read_threads(p->dpy) > 0) {
			p->py = 1;
			p->gil_waits_known = rec_as_has_function(p->as, p->pyf.path, "take_gil");
			return;
		}
		snprintf(p->py_note, sizeof(p->py_note), "CPython %s found, but no thread state is readable "
		         "(not initialized yet, or finalizing): native stacks only", p->pyf.version);
		rec_dpy_close(p->dpy);
		p->dpy = NULL;
		return;
	}
	if (rc == 0) {
		snprintf(p->py_note, sizeof(p->py_note), "not a Python process (no CPython interpreter found): "
		         "native stacks only");
		return;
	}
	/* the reader's reasons end in what the recording keeps; a dump keeps native stacks */
	{
		const char *tail = ": CPU samples only";
		size_t n = strlen(err), k = strlen(tail);
		char *paren = n > k ? strstr(err, tail) : NULL;
		if (paren)
			memmove(paren, paren + k, strlen(paren + k) + 1);
	}
	snprintf(p->py_note, sizeof(p->py_note), "%s: native stacks only", err);
}

static void classify_gil(dproc *p, dthr *t)
{
	size_t i, k;

	if (!t->tstate) {
		t->gil = DG_NONE;
		return;
	}
	if (t->py_read && t->py.gil == 1) {
		t->gil = DG_HOLDS;
		return;
	}
	for (i = 0; i < t->n_frames; i++)
		for (k = 0; k < sizeof(gil_wait_fns) / sizeof(gil_wait_fns[0]); k++)
			if (t->frames[i].kind == DF_NATIVE && same_function(t->frames[i].name, gil_wait_fns[k])) {
				t->gil = DG_WAITING;
				return;
			}
	if (!t->py_read || t->py.gil < 0)
		t->gil = DG_UNKNOWN;
	else
		t->gil = p->gil_waits_known ? DG_RELEASED : DG_NOT_HELD;
}

/* Name the native frames and splice the Python ones in, as gt-analyze does (docs/PYTHON.md,
 * "Splice"): the Python frames (root first) are cut into segments at entry frames; eval frame
 * i is replaced by segment i, the innermost eval frame takes the rest. */
static void build_frames(dproc *p, dthr *t)
{
	size_t n_nat = t->n_nat, n_py = t->py_read ? (size_t)t->py.n : 0, i, n = 0;
	dframe *nat = calloc(n_nat + 1, sizeof(*nat)), *py = calloc(n_py + 1, sizeof(*py));
	size_t *seg_start = calloc(n_py + 2, sizeof(*seg_start)), n_seg = 0, n_eval = 0, e_seen = 0;
	int *is_entry = calloc(n_py + 1, sizeof(*is_entry));

	t->frames = calloc(n_nat + n_py + 1, sizeof(*t->frames));
	if (!nat || !py || !seg_start || !is_entry || !t->frames)
		goto out;
	/* native, root first */
	for (i = 0; i < n_nat; i++) {
		const rec_as_frame *f = &t->nat[n_nat - 1 - i];
		dframe *d = &nat[i];
		rec_as_sym s;
		char name[1024];

		d->kind = DF_NATIVE;
		d->addr = f->pc;
		d->trampoline = f->trampoline;
		d->fp = f->how == REC_AS_FRAME_FP;
		if (rec_as_symbolize(p->as, f->pc, f->exact, &s, name, sizeof(name)) == 0) {
			d->where = s.module;
			d->name = s.name ? keep_str(p, s.name) : NULL;
			d->offset = s.offset;
			d->interp = p->py && s.path && strcmp(s.path, p->pyf.path) == 0;
		}
		if (same_function(d->name, "_PyEval_EvalFrameDefault"))
			n_eval++;
	}
	/* Python, root first, and its segments */
	for (i = 0; i < n_py; i++) {
		const rec_pyframe_raw *r = &t->py.frames[n_py - 1 - i];
		const rec_pycode *c = rec_dpy_code(p->dpy, r->code);
		dframe *d = &py[i];

		d->kind = DF_PYTHON;
		d->line = -1;
		if (c) {
			d->name = c->qualname && c->qualname[0] ? c->qualname : c->name;
			d->where = c->filename;
			d->line = rec_dpy_line(p->dpy, c, r->index);
		}
		is_entry[i] = (r->flags & GTT_PYFRAME_ENTRY) != 0;
		if (i == 0 || is_entry[i])
			seg_start[n_seg++] = i;
	}
	seg_start[n_seg] = n_py;
	if (n_eval == 0) {
		/* no eval frame to anchor them (no symbols for the interpreter, a broken unwind):
		 * the Python frames go on the root side */
		for (i = 0; i < n_py; i++)
			t->frames[n++] = py[i];
		for (i = 0; i < n_nat; i++)
			t->frames[n++] = nat[i];
	} else {
		size_t seg = 0, j, last;
		for (i = 0; i < n_nat; i++) {
			int eval = same_function(nat[i].name, "_PyEval_EvalFrameDefault");
			if (eval)
				e_seen++;
			if (!eval || seg >= n_seg) {
				t->frames[n++] = nat[i]; /* eval frames beyond the segments stay */
				continue;
			}
			last = e_seen == n_eval ? n_seg : seg + 1;
			for (j = seg_start[seg]; j < seg_start[last]; j++)
				t->frames[n++] = py[j];
			seg = last;
		}
	}
	/* leaf first */
	for (i = 0; i < n / 2; i++) {
		dframe tmp = t->frames[i];
		t->frames[i] = t->frames[n - 1 - i];
		t->frames[n - 1 - i] = tmp;
	}
	t->n_frames = n;
out:
	free(nat);
	free(py);
	free(seg_start);
	free(is_entry);
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return x < y ? -1 : x > y;
}

/* Everything about process p->pid. 0, or -ESRCH when it is gone before anything was read. */
static int collect(dproc *p, rec_ts *ts, int want_stack)
{
	pid_t *tids = NULL;
	int n, i, err;
	size_t k;

	p->t0_ns = gtt_now_ns();
	rec_procfs_cmdline(p->pid, p->command, sizeof(p->command));
	n = rec_procfs_tids(p->pid, &tids);
	if (n <= 0) {
		free(tids);
		return -ESRCH;
	}
	/* the main thread first, then by tid */
	qsort(tids, (size_t)n, sizeof(*tids), cmp_tid);
	p->mem = rec_procmem_open(p->pid);
	p->as = p->mem ? rec_as_open(p->pid, p->mem, &err) : NULL;
	p->th = calloc((size_t)n, sizeof(*p->th));
	if (!p->mem || !p->as || !p->th) {
		free(tids);
		if (p->mem && !p->as && (err == ESRCH || err == EACCES || err == EPERM))
			return -err;
		return -ENOMEM;
	}
	find_python(p);
	for (i = 0; i < n; i++) {
		dthr *t = &p->th[p->n_th];
		stop_ctx c = { p, t, want_stack };

		memset(t, 0, sizeof(*t));
		t->tid = tids[i];
		t->ts_rc = -1;
		if (rec_pt_read(p->pid, t->tid, &t->st) < 0) {
			p->n_gone_threads++;
			continue; /* exited since the list was read */
		}
		t->kstack = calloc(MAX_KSTACK, sizeof(*t->kstack));
		t->n_kstack = t->kstack ? rec_pt_kernel_stack(p->pid, t->tid, t->kstack, MAX_KSTACK) : -ENOMEM;
		/* a thread in uninterruptible sleep would not stop until it wakes: read it from /proc */
		if (t->st.state != 'D' && t->st.state != 'Z' && t->st.state != 'X') {
			t->ts_rc = rec_ts_stop_thread(ts, t->tid, STOP_TIMEOUT_MS, on_stopped, &c, &t->ts_err);
			if (t->ts_rc == REC_TS_GONE) {
				p->n_gone_threads++;
				free(t->kstack);
				free(t->nat);
				rec_dpy_stack_free(&t->py);
				free(t->stack);
				continue;
			}
			if (t->ts_rc == REC_TS_PERM && !p->perm_note[0])
				rec_ts_why_refused(p->pid, t->tid, p->perm_note, sizeof(p->perm_note));
		}
		if (!t->stopped)
			read_unstopped(p, t, want_stack);
		if (t->stop_ns > p->max_stop_ns)
			p->max_stop_ns = t->stop_ns;
		p->n_th++;
	}
	free(tids);
	rec_ts_release_late(ts, 100);
	p->cuda_rc = rec_dcuda_read(p->pid, p->as, p->mem, &p->cuda, &p->cuda_res_ns);
	if (p->py) {
		uint64_t holder;
		p->gil_locked = rec_dpy_gil(p->dpy, &holder);
		for (k = 0; p->gil_locked == 1 && k < p->n_th; k++)
			if (p->th[k].tstate == holder)
				p->gil_tid = p->th[k].tid;
	} else {
		p->gil_locked = -1;
	}
	p->t1_ns = gtt_now_ns();
	{
		char st = rec_procfs_state(p->pid, NULL);
		p->gone = st == 0 || st == 'Z' || st == 'X';
	}
	for (k = 0; k < p->n_th; k++) {
		dthr *t = &p->th[k];
		build_frames(p, t);
		classify_gil(p, t);
		for (i = 0; i < p->cuda_rc; i++)
			if (p->cuda[i].tid == (uint32_t)t->tid)
				t->cuda = &p->cuda[i];
	}
	return 0;
}

static void release(dproc *p)
{
	size_t i;

	for (i = 0; i < p->n_th; i++) {
		dthr *t = &p->th[i];
		free(t->kstack);
		free(t->nat);
		rec_dpy_stack_free(&t->py);
		free(t->stack);
		free(t->frames);
	}
	for (i = 0; i < p->n_strs; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p->th);
	free(p->cuda);
	rec_dpy_close(p->dpy);
	rec_as_close(p->as);
	rec_procmem_close(p->mem);
}

/* ---- which processes ---- */

/* pid and, with children, its descendants (from every /proc/N/stat's parent). */
static size_t process_list(pid_t pid, int children, pid_t *out, size_t cap)
{
	typedef struct pp { pid_t pid, ppid; } pp;
	size_t n = 0, scan, n_all = 0, cap_all = 0;
	pp *all = NULL;
	DIR *d;
	struct dirent *e;

	out[n++] = pid;
	if (!children || !(d = opendir("/proc")))
		return n;
	while ((e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		pid_t parent = 0;
		if (*end || v <= 0 || !rec_procfs_state((pid_t)v, &parent))
			continue;
		if (GT_GROW(all, cap_all, n_all + 1) < 0)
			break;
		all[n_all++] = (pp){ (pid_t)v, parent };
	}
	closedir(d);
	/* breadth first from pid */
	for (scan = 0; scan < n; scan++) {
		size_t i;
		for (i = 0; i < n_all && n < cap; i++)
			if (all[i].ppid == out[scan])
				out[n++] = all[i].pid;
	}
	free(all);
	return n;
}

int rec_dump_run(const rec_dump_opts *o)
{
	pid_t pids[MAX_PROCS];
	dproc *ps = NULL;
	rec_ts *ts = NULL;
	size_t n_pids, n = 0, i;
	int rc = GT_EXIT_OK, any_stack = 0, perm = 0;
	const char *hold = getenv("GT_DUMP_TEST_HOLD_MS");

	g_hold_ms = hold ? atol(hold) : -1;
	if (kill(o->pid, 0) < 0 && errno == ESRCH) {
		fprintf(stderr, "gt-record: no process with PID %d\n", (int)o->pid);
		return GT_EXIT_BROKEN;
	}
	n_pids = process_list(o->pid, o->children, pids, MAX_PROCS);
	ps = calloc(n_pids, sizeof(*ps));
	ts = rec_ts_create();
	if (!ps || !ts) {
		fprintf(stderr, "gt-record: out of memory\n");
		rc = GT_EXIT_BROKEN;
		goto out;
	}
	for (i = 0; i < n_pids; i++) {
		dproc *p = &ps[n];
		int crc;

		p->pid = pids[i];
		crc = collect(p, ts, o->output != NULL);
		if (crc < 0) {
			release(p);
			memset(p, 0, sizeof(*p));
			if (i == 0) {
				char why[512];
				if (crc == -EACCES || crc == -EPERM)
					rec_ts_why_refused(pids[i], pids[i], why, sizeof(why));
				else
					snprintf(why, sizeof(why), "%s", crc == -ESRCH ? "the process exited before it could be dumped"
					                                              : "out of memory");
				fprintf(stderr, "gt-record: %s\n", why);
				rc = GT_EXIT_BROKEN;
				goto out;
			}
			continue; /* a child that exited meanwhile */
		}
		n++;
	}
	for (i = 0; i < n; i++) {
		size_t k;
		for (k = 0; k < ps[i].n_th; k++) {
			const dthr *t = &ps[i].th[k];
			any_stack |= t->n_frames > 0;
			if (t->ts_rc == REC_TS_TRACED || t->ts_rc == REC_TS_TIMEOUT || t->ts_rc == REC_TS_ERROR)
				rc = GT_EXIT_PARTIAL;
			perm |= t->ts_rc == REC_TS_PERM;
		}
		if (ps[i].gone)
			rc = GT_EXIT_PARTIAL;
	}
	if (o->output) {
		char err[512];
		if (rec_dump_write_gtt(o->output, ps, n, o->no_archive, err, sizeof(err)) < 0) {
			fprintf(stderr, "gt-record: %s\n", err);
			rc = GT_EXIT_BROKEN;
			goto out;
		}
		if (!o->quiet) {
			size_t n_th = 0;
			for (i = 0; i < n; i++)
				n_th += ps[i].n_th;
			fprintf(stderr, "gt-record: %s: %zu process%s, %zu threads (gt-analyze report %s)\n", o->output, n,
			        n == 1 ? "" : "es", n_th, o->output);
		}
	} else if (o->json) {
		rec_dump_print_json(stdout, ps, n);
	} else {
		for (i = 0; i < n; i++)
			rec_dump_print_text(stdout, &ps[i], o->all_frames);
	}
	fflush(stdout);
	/* the errors users must act on, once, after the output */
	for (i = 0; i < n; i++) {
		if (ps[i].perm_note[0])
			fprintf(stderr, "gt-record: %s\n", ps[i].perm_note);
		if (ps[i].gone)
			fprintf(stderr, "gt-record: process %d exited during the dump: what was read is shown\n", (int)ps[i].pid);
	}
	if (perm && !any_stack)
		rc = GT_EXIT_BROKEN;
	else if (perm)
		rc = GT_EXIT_PARTIAL;
out:
	for (i = 0; i < n; i++)
		release(&ps[i]);
	free(ps);
	rec_ts_destroy(ts);
	return rc;
}
