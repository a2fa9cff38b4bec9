/* dump_gtt.c — gt-record --dump -o FILE: the snapshot as a trace gt-analyze reads like any
 * other: one SAMPLE per thread (registers + a copy of its user stack, unwound there with libdw),
 * its PY_STACK read at the same stop, the mappings, thread names and states, and the symbol
 * archive of the binaries the stacks touch. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "archive.h"
#include "dump_priv.h"
#include "gt_util.h"
#include "procfs.h"

#ifndef GT_VERSION
#define GT_VERSION "0"
#endif

#define DUMP_WEIGHT_NS GT_NS_PER_MS /* nominal weight of a snapshot sample: each thread counts once */

/* perf's x86-64 user register set (PERF_REG_X86_AX..IP, R8..R15), the order of regs[] */
#define PERF_REGS_MASK (0x1ffull | 0xff0000ull)
#define PERF_REGS_ABI_64 2

typedef struct wctx {
	gtt_writer *w;
	rec_archive *arch;
} wctx;

static void observe(void *ctx, const gtt_record *r)
{
	wctx *c = ctx;

	if (r->tag == GTT_REC_MAPPING)
		rec_archive_add(c->arch, &r->u.mapping);
}

static int meta(gtt_writer *w, const char *key, const char *value)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_META;
	r.u.meta.key = key;
	r.u.meta.value = value;
	return gtt_write(w, &r);
}

static void write_meta(gtt_writer *w, const dproc *p)
{
	struct utsname u;
	char buf[64], host[256] = "";

	meta(w, "command", p->command);
	gethostname(host, sizeof(host) - 1);
	meta(w, "hostname", host);
	if (uname(&u) == 0)
		meta(w, "kernel", u.release);
	meta(w, "recorder", "gt-record " GT_VERSION " --dump");
	meta(w, "mode", "dump");
	meta(w, "call_graph", "dwarf");
	meta(w, "clock", "CLOCK_MONOTONIC");
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)p->t0_ns);
	meta(w, "start_ns", buf);
	snprintf(buf, sizeof(buf), "%d", (int)p->pid);
	meta(w, "pid", buf);
	if (p->py) {
		meta(w, "python_version", p->pyf.version);
		meta(w, "python_interpreter", p->pyf.path);
	}
}

static uint64_t perf_regs(const dthr *t, uint64_t *regs, uint64_t *mask)
{
	const rec_ts_regs *r = &t->regs;
	uint64_t all[17] = { r->ax, r->bx, r->cx, r->dx, r->si, r->di, r->bp, r->sp, r->ip,
	                     r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15 };

	if (t->stopped) {
		memcpy(regs, all, sizeof(all));
		*mask = PERF_REGS_MASK;
		return 17;
	}
	/* from /proc: the stack pointer and pc only */
	regs[0] = r->sp;
	regs[1] = r->ip;
	*mask = 1ull << 7 | 1ull << 8;
	return 2;
}

static void write_thread(gtt_writer *w, rec_archive *arch, const dproc *p, const dthr *t, uint64_t *n_samples)
{
	gtt_record r;
	uint64_t regs[17], mask = 0;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_THREAD_CPU;
	r.u.thread_cpu.time_ns = t->time_ns;
	r.u.thread_cpu.pid = (uint32_t)p->pid;
	r.u.thread_cpu.tid = (uint32_t)t->tid;
	r.u.thread_cpu.utime_ns = t->st.utime_ns;
	r.u.thread_cpu.stime_ns = t->st.stime_ns;
	r.u.thread_cpu.nvcsw = t->st.nvcsw;
	r.u.thread_cpu.nivcsw = t->st.nivcsw;
	r.u.thread_cpu.state = (uint32_t)(unsigned char)t->st.state;
	gtt_write(w, &r);
	if (t->stopped || t->from_proc) {
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_SAMPLE;
		r.u.sample.time_ns = t->time_ns;
		r.u.sample.pid = (uint32_t)p->pid;
		r.u.sample.tid = (uint32_t)t->tid;
		r.u.sample.period_ns = DUMP_WEIGHT_NS;
		r.u.sample.flags = GTT_SAMPLE_REGS | (t->stack ? GTT_SAMPLE_STACK : 0);
		r.u.sample.regs_abi = PERF_REGS_ABI_64;
		r.u.sample.n_regs = (uint32_t)perf_regs(t, regs, &mask);
		r.u.sample.regs_mask = mask;
		r.u.sample.regs = regs;
		r.u.sample.stack_len = t->stack ? t->stack_len : 0;
		r.u.sample.stack = t->stack;
		rec_archive_hit_sample(arch, &r.u.sample);
		if (gtt_write(w, &r) == 0)
			(*n_samples)++;
	}
	if (t->py_read && t->tstate) {
		gtt_py_frame fr[REC_PY_MAX_FRAMES];
		int i;

		for (i = 0; i < t->py.n && i < REC_PY_MAX_FRAMES; i++) {
			const rec_pycode *c = rec_dpy_code(p->dpy, t->py.frames[i].code);
			fr[i].code_id = t->py.frames[i].code;
			fr[i].line = c ? rec_dpy_line(p->dpy, c, t->py.frames[i].index) : -1;
			fr[i].flags = t->py.frames[i].flags;
		}
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_PY_STACK;
		r.u.py_stack.time_ns = t->time_ns;
		r.u.py_stack.pid = (uint32_t)p->pid;
		r.u.py_stack.tid = (uint32_t)t->tid;
		r.u.py_stack.thread_id = t->tstate;
		r.u.py_stack.flags = (t->py.gil == 1 ? GTT_PYSTACK_HOLDS_GIL : 0) | (t->py.gil >= 0 ? GTT_PYSTACK_GIL_READ : 0) |
		                     (t->py.torn ? GTT_PYSTACK_TORN : 0) | (t->py.idle ? GTT_PYSTACK_IDLE : 0);
		r.u.py_stack.n_frames = (uint32_t)i;
		r.u.py_stack.frames = fr;
		gtt_write(w, &r);
	}
	if (!t->stopped) {
		char text[256], state[160];
		rec_dump_state_text(t, state, sizeof(state));
		snprintf(text, sizeof(text), "--dump: thread %d (%s) was not stopped: %s", (int)t->tid, state,
		         t->from_proc ? "stack pointer and pc from /proc only" : "no registers");
		gtt_write_note(w, GTT_SRC_PERF, t->time_ns, (uint32_t)p->pid, (uint32_t)t->tid, text);
	}
}

static void write_process(gtt_writer *w, rec_archive *arch, const dproc *p, uint64_t *n_samples)
{
	wctx c = { w, arch };
	size_t i;
	char text[256];

	rec_procfs_synth(p->pid, p->t0_ns, w, observe, &c);
	if (p->py) {
		/* every code object the stacks name, before the stacks */
		for (i = 0; ; i++) {
			uint64_t addr;
			const rec_pycode *pc = rec_dpy_code_at(p->dpy, i, &addr);
			gtt_record r;
			if (!pc)
				break;
			memset(&r, 0, sizeof(r));
			r.tag = GTT_REC_PY_CODE;
			r.u.py_code.pid = (uint32_t)p->pid;
			r.u.py_code.code_id = addr;
			r.u.py_code.first_line = pc->firstlineno;
			r.u.py_code.name = pc->name;
			r.u.py_code.qualname = pc->qualname;
			r.u.py_code.filename = pc->filename;
			gtt_write(w, &r);
		}
	} else if (p->py_note[0]) {
		gtt_write_note(w, GTT_SRC_PYSTACK, p->t0_ns, (uint32_t)p->pid, 0, p->py_note);
	}
	for (i = 0; i < p->n_th; i++)
		write_thread(w, arch, p, &p->th[i], n_samples);
	snprintf(text, sizeof(text), "--dump: %zu threads, each stopped alone for at most %.3f ms; the dump took %.3f ms",
	         p->n_th, (double)p->max_stop_ns / 1e6, (double)(p->t1_ns - p->t0_ns) / 1e6);
	gtt_write_note(w, GTT_SRC_PERF, p->t1_ns, (uint32_t)p->pid, 0, text);
}

int rec_dump_write_gtt(const char *path, const dproc *ps, size_t n, int no_archive, char *err, size_t errlen)
{
	int fd, werr = 0, rc = -1;
	gtt_writer *w = NULL;
	rec_archive *arch = rec_archive_create();
	rec_archive_stats as;
	uint64_t n_samples = 0;
	gtt_record r;
	size_t i;

	/* a dump never replaces a file */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s%s", path, strerror(errno),
		         errno == EEXIST ? " (a dump never replaces a file: choose another name)" : "");
		goto out;
	}
	w = gtt_writer_fdopen(fd, 0, &werr);
	if (!w || !arch) {
		if (!w)
			close(fd);
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(w ? ENOMEM : errno));
		goto fail_unlink;
	}
	write_meta(w, &ps[0]);
	for (i = 0; i < n; i++)
		write_process(w, arch, &ps[i], &n_samples);
	if (!no_archive && rec_archive_write(arch, w, &as) < 0) {
		snprintf(err, errlen, "writing %s: %s", path, strerror(gtt_writer_errno(w) ? gtt_writer_errno(w) : EIO));
		goto fail_unlink;
	}
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_END;
	r.u.end.time_ns = gtt_now_ns();
	r.u.end.reason = GTT_END_DETACH;
	r.u.end.n_samples = n_samples;
	r.u.end.n_records = gtt_writer_records(w);
	gtt_write(w, &r);
	if (gtt_writer_close(w) < 0) {
		w = NULL;
		snprintf(err, errlen, "writing %s: %s", path, strerror(EIO));
		goto fail_unlink;
	}
	w = NULL;
	rc = 0;
	goto out;
fail_unlink:
	gtt_writer_close(w);
	w = NULL;
	unlink(path);
out:
	rec_archive_destroy(arch);
	return rc;
}
