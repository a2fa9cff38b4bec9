/* dump_out.c — gt-record --dump's output: the text view (80 columns, innermost frame first,
 * interpreter plumbing between Python frames folded) and the JSON document (everything). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dump_priv.h"
#include "gt_termsafe.h"
#include "gt_util.h"

const char *rec_dump_gil_word(int gil)
{
	switch (gil) {
	case DG_HOLDS: return "holds";
	case DG_WAITING: return "waiting";
	case DG_RELEASED: return "released";
	case DG_UNKNOWN: return "unknown";
	case DG_NOT_HELD: return "not held";
	default: return NULL;
	}
}

/* The system call a thread sits in: /proc's, else the one its stopped registers show. */
static const char *syscall_of(const dthr *t, long *nr)
{
	*nr = -1;
	if (t->st.syscall >= 0)
		*nr = t->st.syscall;
	else if (t->stopped && (int64_t)t->regs.orig_ax >= 0 && t->st.state != 'R')
		*nr = (long)t->regs.orig_ax;
	return *nr >= 0 ? rec_syscall_name(*nr) : NULL;
}

void rec_dump_state_text(const dthr *t, char *buf, size_t len)
{
	char w[32];
	long nr;
	const char *sc = syscall_of(t, &nr);
	size_t k;

	switch (t->st.state) {
	case 'S': k = (size_t)snprintf(buf, len, "sleeping"); break;
	case 'D': k = (size_t)snprintf(buf, len, "in uninterruptible sleep"); break;
	case 'T': k = (size_t)snprintf(buf, len, "stopped (job control)"); break;
	case 't': k = (size_t)snprintf(buf, len, "stopped by a tracer"); break;
	default: k = (size_t)snprintf(buf, len, "%s", rec_pt_state_word(t->st.state, w, sizeof(w))); break;
	}
	if (k >= len || t->st.state == 'R' || t->st.state == 'Z')
		return;
	if (sc)
		k += (size_t)snprintf(buf + k, len - k, " in %s", sc);
	else if (nr >= 0)
		k += (size_t)snprintf(buf + k, len - k, " in system call %ld", nr);
	if (k < len && t->st.wchan[0] && (!sc || strcmp(sc, t->st.wchan) != 0))
		snprintf(buf + k, len - k, " (%s)", t->st.wchan);
}

static void fmt_dur(uint64_t ns, char *buf, size_t len)
{
	if (ns >= GT_NS_PER_SEC)
		snprintf(buf, len, "%.2f s", gt_ns_to_s(ns));
	else if (ns >= GT_NS_PER_MS)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
}

static const char *ts_word(int rc)
{
	switch (rc) {
	case -1: return "not tried";
	case REC_TS_OK: return "ok";
	case REC_TS_GONE: return "gone";
	case REC_TS_PERM: return "refused";
	case REC_TS_TRACED: return "traced by another process";
	case REC_TS_TIMEOUT: return "did not stop";
	case REC_TS_UNSUPPORTED: return "unsupported";
	default: return "error";
	}
}

/* ---- text ---- */

static void print_frame(FILE *f, const dframe *d)
{
	if (d->kind == DF_PYTHON) {
		if (d->line >= 0)
			fprintf(f, "    %s (%s:%d)\n", d->name ? d->name : "?", d->where ? d->where : "?", d->line);
		else
			fprintf(f, "    %s (%s)\n", d->name ? d->name : "?", d->where ? d->where : "?");
		return;
	}
	if (d->trampoline)
		fprintf(f, "    <signal handler called>\n");
	else if (d->name)
		fprintf(f, "    %s (%s)%s\n", d->name, d->where ? d->where : "?", d->fp ? " [frame-pointer guess]" : "");
	else if (d->where)
		fprintf(f, "    [%s+0x%" PRIx64 "]%s\n", d->where, d->offset, d->fp ? " [frame-pointer guess]" : "");
	else
		fprintf(f, "    [0x%" PRIx64 "]\n", d->addr);
}

static void print_thread(FILE *f, const dproc *p, const dthr *t, int all_frames)
{
	char state[256], dur[32];
	const char *gil = rec_dump_gil_word(t->gil);
	size_t i, innermost_py = t->n_frames;

	rec_dump_state_text(t, state, sizeof(state));
	fprintf(f, "\nThread %d \"%s\"%s: %s", (int)t->tid, t->st.name, t->tid == p->pid ? " (main)" : "", state);
	if (gil)
		fprintf(f, ", GIL %s", gil);
	if (t->cuda) {
		fmt_dur(t->time_ns > t->cuda->start_ns ? t->time_ns - t->cuda->start_ns : 0, dur, sizeof(dur));
		fprintf(f, ", CUDA %s for %s", t->cuda->name[0] ? t->cuda->name : "API call", dur);
	}
	fputc('\n', f);
	/* a running thread's kernel stack is whatever it was doing at that instant */
	if (t->n_kstack > 0 && t->st.state != 'R') {
		int k;
		fprintf(f, "    kernel: ");
		for (k = 0; k < t->n_kstack; k++)
			fprintf(f, "%s%s", k ? " < " : "", t->kstack[k]);
		fputc('\n', f);
	}
	/* interpreter plumbing rootward of the innermost Python frame folds into one line */
	for (i = 0; i < t->n_frames; i++)
		if (t->frames[i].kind == DF_PYTHON) {
			innermost_py = i;
			break;
		}
	for (i = 0; i < t->n_frames; i++) {
		size_t run = 0;
		while (!all_frames && i + run < t->n_frames && i > innermost_py && t->frames[i + run].kind == DF_NATIVE &&
		       t->frames[i + run].interp)
			run++;
		if (run >= 2) {
			fprintf(f, "    ... %zu interpreter frames\n", run);
			i += run - 1;
			continue;
		}
		print_frame(f, &t->frames[i]);
	}
	/* what is missing, and why */
	if (t->ts_rc == REC_TS_TRACED)
		fprintf(f, "    (not stopped: thread held by tracer %d%s)\n", (int)rec_ts_tracer_of(p->pid, t->tid),
		        t->from_proc ? "; native stack from /proc, stack pointer and pc only" : "");
	else if (t->ts_rc == REC_TS_TIMEOUT)
		fprintf(f, "    (did not stop within 250 ms%s)\n",
		        t->from_proc ? "; native stack from /proc, stack pointer and pc only" : "");
	else if (t->ts_rc == REC_TS_PERM)
		fprintf(f, "    (no registers: ptrace refused)\n");
	else if (t->st.state == 'D')
		fprintf(f, "    (not stopped: uninterruptible sleep%s)\n",
		        t->from_proc ? "; native stack from /proc, stack pointer and pc only" : "");
	else if (t->ts_rc == REC_TS_UNSUPPORTED)
		fprintf(f, "    (no native stack: the unwinder is x86-64 only)\n");
	if ((t->stopped || t->from_proc) && t->nat_end != REC_AS_END_ROOT && t->n_nat)
		fprintf(f, "    (native stack ends: %s)\n", rec_as_end_name(t->nat_end));
	if (t->py_read && t->py.torn)
		fprintf(f, "    (Python stack incomplete: a frame was unreadable)\n");
	else if (t->py_unstopped && t->py.n)
		fprintf(f, "    (Python stack read while the thread ran)\n");
}

static void print_text(FILE *f, const dproc *p, int all_frames)
{
	char d1[32], d2[32];
	size_t i;

	fprintf(f, "Process %d: %s\n", (int)p->pid, p->command[0] ? p->command : "?");
	if (p->py) {
		fprintf(f, "Python %s (%s)", p->pyf.version, p->pyf.path);
		if (p->gil_locked == 1 && p->gil_tid)
			fprintf(f, ", GIL held by thread %d\n", (int)p->gil_tid);
		else if (p->gil_locked == 1)
			fprintf(f, ", GIL held\n");
		else if (p->gil_locked == 0)
			fprintf(f, ", GIL free\n");
		else
			fprintf(f, ", GIL state unreadable\n");
		if (!p->gil_waits_known)
			fprintf(f, "%s has no take_gil symbol: threads waiting for the GIL show as \"not held\"\n",
			        p->pyf.path);
	} else {
		fprintf(f, "%s\n", p->py_note);
	}
	if (p->cuda_rc == REC_DCUDA_NO_AGENT)
		fprintf(f, "CUDA is loaded but not the groundtruth agent: start the program with gt-record --prepare "
		           "(or under gt-record) to see in-flight CUDA calls\n");
	else if (p->cuda_rc == REC_DCUDA_INACTIVE)
		fprintf(f, "CUDA agent loaded but not receiving API callbacks: no in-flight CUDA calls to show\n");
	else if (p->cuda_rc == REC_DCUDA_BAD)
		fprintf(f, "CUDA agent loaded, its in-flight table unreadable (another agent version?)\n");
	fmt_dur(p->max_stop_ns, d1, sizeof(d1));
	fmt_dur(p->t1_ns - p->t0_ns, d2, sizeof(d2));
	for (i = 0; i < p->n_th && !p->th[i].stopped; i++)
		;
	if (i < p->n_th)
		fprintf(f, "%zu threads, each stopped alone for at most %s; dump took %s\n", p->n_th, d1, d2);
	else
		fprintf(f, "%zu threads, none stopped; dump took %s\n", p->n_th, d2);
	for (i = 0; i < p->n_th; i++)
		print_thread(f, p, &p->th[i], all_frames);
	fputc('\n', f);
}

/* ---- JSON ---- */

static void jstr(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_frame(FILE *f, const dframe *d)
{
	if (d->kind == DF_PYTHON) {
		fputs("{\"kind\":\"python\",\"function\":", f);
		jstr(f, d->name);
		fputs(",\"file\":", f);
		jstr(f, d->where);
		fprintf(f, ",\"line\":%d}", d->line);
		return;
	}
	fputs("{\"kind\":\"native\",\"function\":", f);
	jstr(f, d->trampoline ? "<signal handler called>" : d->name);
	fputs(",\"module\":", f);
	jstr(f, d->where);
	fprintf(f, ",\"address\":\"0x%" PRIx64 "\",\"offset\":%" PRIu64 ",\"interpreter\":%s,\"frame_pointer_guess\":%s}",
	        d->addr, d->offset, d->interp ? "true" : "false", d->fp ? "true" : "false");
}

static void json_thread(FILE *f, const dproc *p, const dthr *t)
{
	char state[256];
	long nr;
	const char *sc = syscall_of(t, &nr);
	size_t i;

	rec_dump_state_text(t, state, sizeof(state));
	fprintf(f, "{\"tid\":%d,\"name\":", (int)t->tid);
	jstr(f, t->st.name);
	fprintf(f, ",\"state\":\"%c\",\"state_text\":", t->st.state ? t->st.state : '?');
	jstr(f, state);
	fputs(",\"syscall\":", f);
	jstr(f, sc);
	fprintf(f, ",\"syscall_nr\":%ld,\"wchan\":", nr);
	jstr(f, t->st.wchan[0] ? t->st.wchan : NULL);
	fputs(",\"gil\":", f);
	jstr(f, rec_dump_gil_word(t->gil));
	fprintf(f, ",\"ptrace\":\"%s\",\"registers\":\"%s\",\"stop_ns\":%" PRIu64 ",\"time_ns\":%" PRIu64,
	        ts_word(t->ts_rc), t->stopped ? "ptrace" : t->from_proc ? "proc" : "none", t->stop_ns, t->time_ns);
	fprintf(f, ",\"native_end\":\"%s\",\"python_torn\":%s,\"python_unstopped\":%s",
	        t->n_nat ? rec_as_end_name(t->nat_end) : "none", t->py_read && t->py.torn ? "true" : "false",
	        t->py_unstopped ? "true" : "false");
	fputs(",\"cuda\":", f);
	if (t->cuda) {
		fputs("{\"api\":", f);
		jstr(f, t->cuda->name);
		fprintf(f, ",\"cbid\":%u,\"domain\":\"%s\",\"correlation\":%u,\"depth\":%u,\"n_calls\":%" PRIu64
		        ",\"start_ns\":%" PRIu64 ",\"elapsed_ns\":%" PRIu64 ",\"resolution_ns\":%" PRIu64 "}",
		        t->cuda->cbid, t->cuda->domain == 2 ? "driver" : "runtime", t->cuda->correlation, t->cuda->depth,
		        t->cuda->n_calls, t->cuda->start_ns,
		        t->time_ns > t->cuda->start_ns ? t->time_ns - t->cuda->start_ns : 0, p->cuda_res_ns);
	} else {
		fputs("null", f);
	}
	fputs(",\"kernel\":", f);
	if (t->n_kstack >= 0) {
		int k;
		fputc('[', f);
		for (k = 0; k < t->n_kstack; k++) {
			if (k)
				fputc(',', f);
			jstr(f, t->kstack[k]);
		}
		fputc(']', f);
	} else {
		fputs("null", f);
	}
	/* the native unwind as it came, before the Python frames replaced the eval frames */
	fputs(",\"native_pcs\":[", f);
	for (i = 0; i < t->n_nat; i++)
		fprintf(f, "%s\"0x%" PRIx64 "\"", i ? "," : "", t->nat[i].pc);
	fputs("],\"frames\":[", f);
	for (i = 0; i < t->n_frames; i++) {
		if (i)
			fputc(',', f);
		json_frame(f, &t->frames[i]);
	}
	fputs("]}", f);
}

void rec_dump_print_json(FILE *f, const dproc *ps, size_t n)
{
	size_t i, k;

	fputs("{\"processes\":[", f);
	for (i = 0; i < n; i++) {
		const dproc *p = &ps[i];
		if (i)
			fputc(',', f);
		fprintf(f, "{\"pid\":%d,\"command\":", (int)p->pid);
		jstr(f, p->command);
		fprintf(f, ",\"gone\":%s,\"python\":", p->gone ? "true" : "false");
		if (p->py) {
			fputs("{\"version\":", f);
			jstr(f, p->pyf.version);
			fputs(",\"interpreter\":", f);
			jstr(f, p->pyf.path);
			fprintf(f, ",\"gil_locked\":%s,\"gil_holder_tid\":%d}",
			        p->gil_locked == 1 ? "true" : p->gil_locked == 0 ? "false" : "null", (int)p->gil_tid);
		} else {
			fputs("null", f);
		}
		fputs(",\"python_note\":", f);
		jstr(f, p->py ? NULL : p->py_note);
		fputs(",\"ptrace_note\":", f);
		jstr(f, p->perm_note[0] ? p->perm_note : NULL);
		fprintf(f, ",\"cuda\":\"%s\"", p->cuda_rc >= 0 ? "agent" : p->cuda_rc == REC_DCUDA_NO_CUDA ? "none"
		                                : p->cuda_rc == REC_DCUDA_NO_AGENT ? "no agent"
		                                : p->cuda_rc == REC_DCUDA_INACTIVE ? "agent inactive" : "agent unreadable");
		fprintf(f, ",\"elapsed_ns\":%" PRIu64 ",\"max_stop_ns\":%" PRIu64 ",\"threads_gone\":%zu,\"threads\":[",
		        p->t1_ns - p->t0_ns, p->max_stop_ns, p->n_gone_threads);
		for (k = 0; k < p->n_th; k++) {
			if (k)
				fputc(',', f);
			json_thread(f, p, &p->th[k]);
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
}

/* Thread names, the command line and Python and native function names come from the target:
 * their control characters reach the terminal as '?' (gt_termsafe.h). */
void rec_dump_print_text(FILE *f, const dproc *p, int all_frames)
{
	FILE *safe = gt_termsafe_open(f);
	print_text(safe ? safe : f, p, all_frames);
	gt_termsafe_close(safe);
}
