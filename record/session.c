/* session.c — gt-record's recording flow: launch/attach, drain loop, side loops, archive, end. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gt_util.h"
#include "session_priv.h"

#ifndef GT_VERSION
#define GT_VERSION "0"
#endif

#define TERM_GRACE_NS (3 * GT_NS_PER_SEC)  /* a launched command's time to exit after SIGTERM */
#define SIGINT_WAIT_NS GT_NS_PER_SEC       /* after Ctrl-C, the command's time to exit by itself */
#define STACK_SLACK_BYTES 512              /* kept above the outermost return address */
#define DRAIN_HZ 40                        /* ring-buffer drains per second (docs/RECORD.md) */
#define FLUSH_NS GT_NS_PER_SEC             /* the trace is flushed this often */
#define ATTACH_CHECK_NS (100 * GT_NS_PER_MS) /* attach mode: how often the target's life is checked */

/* The shell's statuses for a command that could not be run. */
enum { REC_EXIT_NOT_EXEC = 126, REC_EXIT_NOT_FOUND = 127 };

static volatile sig_atomic_t g_signal, g_n_signals;

static void on_signal(int sig)
{
	g_signal = sig;
	g_n_signals++;
}

void rec_opts_init(rec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "gt.gtt";
	o->freq_hz = 99;
	o->dwarf = 1;          /* see docs/RECORD.md: targets without frame pointers are the norm */
	o->stack_bytes = 8192;
	o->python = REC_PY_AUTO;
	o->procstat_hz = 10;
	o->drain_hz = DRAIN_HZ;
	o->switches = REC_SW_AUTO;
	o->switch_limit = REC_SWGATE_LIMIT;
}

void rec_sess_say(const char *fmt, ...)
{
	va_list ap;
	char line[1200];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gt-record: %s\n", line);
}

void rec_sess_meta(sess *s, const char *key, const char *fmt, ...)
{
	va_list ap;
	char value[4096];
	gtt_record r;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_META;
	r.u.meta.key = key;
	r.u.meta.value = value;
	gtt_write(s->w, &r);
}

void rec_sess_note(sess *s, uint32_t source, const char *text)
{
	gtt_write_note(s->w, source, gtt_now_ns(), 0, 0, text);
}

/* DWARF stack copies end a little above the outermost return address. */
static uint32_t trim_stack(void *ctx, uint32_t pid, const uint8_t *stack, uint32_t len)
{
	sess *s = ctx;
	return rec_archive_stack_extent(s->arch, pid, stack, len, STACK_SLACK_BYTES);
}

/* Every record the sampler or the /proc synthesis writes passes here. */
static void observe(void *ctx, const gtt_record *r)
{
	sess *s = ctx;

	rec_top_model_observe(rec_top_model_of(s->top), r);
	rec_sess_job_observe(s, r);
	switch (r->tag) {
	case GTT_REC_SAMPLE:
		rec_archive_hit_sample(s->arch, &r->u.sample);
		break;
	case GTT_REC_CUDA_CALLSTACK: /* merged from the agent's side files */
		rec_archive_hit_ips(s->arch, r->u.callstack.pid, r->u.callstack.ips, r->u.callstack.n_native);
		break;
	case GTT_REC_MAPPING:
		rec_archive_add(s->arch, &r->u.mapping);
		rec_py_mapped(s->py, (pid_t)r->u.mapping.pid); /* libpython may have come */
		break;
	case GTT_REC_PROCESS:
		/* the Python reader follows the tree too (a NULL reader ignores it) */
		if (r->u.process.event == GTT_PROC_FORK) {
			rec_archive_fork(s->arch, r->u.process.ppid, r->u.process.pid, r->u.process.time_ns, s->w);
			rec_procstat_add(s->ps, (pid_t)r->u.process.pid);
			rec_py_fork(s->py, (pid_t)r->u.process.ppid, (pid_t)r->u.process.pid, r->u.process.time_ns);
		} else if (r->u.process.event == GTT_PROC_EXEC) {
			rec_archive_exec(s->arch, r->u.process.pid);
			rec_py_exec(s->py, (pid_t)r->u.process.pid, r->u.process.time_ns, r->u.process.comm);
		} else if (r->u.process.event == GTT_PROC_EXIT) {
			rec_procstat_remove(s->ps, (pid_t)r->u.process.pid);
			rec_py_exit(s->py, (pid_t)r->u.process.pid);
		}
		break;
	case GTT_REC_THREAD:
		if (r->u.thread.event != GTT_THREAD_EXIT)
			rec_perf_note_name(s->perf, (pid_t)r->u.thread.tid, r->u.thread.name);
		break;
	default:
		break;
	}
}

/* System-wide, after lost records: a process of the tree whose FORK record was among them
 * (rec_perf_found_fn). Without a process record the analyzer has no name, parent or mappings
 * for its samples, and the Python reader never learns of it: both come from /proc now, as for
 * an attached process, dated at its first record decoded. */
static void found_proc(void *ctx, gtt_writer *w, pid_t pid, uint64_t time_ns)
{
	sess *s = ctx;
	char cmd[512] = "", text[700];
	int n = rec_procfs_synth(pid, time_ns, w, observe, s);

	s->n_found++;
	if (n >= 0) {
		rec_procstat_add(s->ps, pid);
		rec_procfs_cmdline(pid, cmd, sizeof(cmd));
		rec_py_exec(s->py, pid, time_ns, cmd);
	}
	if (s->n_found > 8)
		return;
	if (n >= 0)
		snprintf(text, sizeof(text), "pid %d (%.200s): its fork record was among the lost records; "
		         "its name, threads and mappings were read from /proc at its first record%s", (int)pid,
		         cmd[0] ? cmd : "?", s->n_found == 8 ? " (further processes found so are not named)" : "");
	else
		snprintf(text, sizeof(text), "pid %d: its fork record was among the lost records and it exited before "
		         "/proc could be read: its samples have no name or mappings%s", (int)pid,
		         s->n_found == 8 ? " (further processes found so are not named)" : "");
	gtt_write_note(w, GTT_SRC_PERF, time_ns, (uint32_t)pid, 0, text);
}

static void join_args(char **argv, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; argv[i] && n + 1 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", argv[i]);
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * GT_NS_PER_SEC + (uint64_t)t->tv_nsec;
}

static void write_meta(sess *s, const char *command)
{
	struct utsname u;
	char host[256] = "", boot_id[64];
	struct timespec a, rt, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &b);
	s->start_ns = (ts_ns(&a) + ts_ns(&b)) / 2;
	gethostname(host, sizeof(host) - 1);
	if (uname(&u) != 0)
		strcpy(u.release, "?");
	rec_sess_meta(s, "command", "%s", command);
	rec_sess_meta(s, "hostname", "%s", host);
	rec_sess_meta(s, "kernel", "%s", u.release);
	rec_sess_meta(s, "recorder", "gt-record %s", GT_VERSION);
	rec_sess_meta(s, "frequency_hz", "%g", s->o->freq_hz);
	rec_sess_meta(s, "call_graph", "%s", s->o->dwarf ? "dwarf" : "fp");
	rec_sess_meta(s, "stack_bytes", "%u", s->o->dwarf ? s->o->stack_bytes : 0);
	rec_sess_meta(s, "python", "%s", s->o->python == REC_PY_OFF ? "off" : s->o->python == REC_PY_ON ? "on" : "auto");
	rec_sess_meta(s, "clock", "CLOCK_MONOTONIC");
	rec_sess_meta(s, "start_ns", "%llu", (unsigned long long)s->start_ns);
	rec_sess_meta(s, "start_realtime_ns", "%llu",
	     (unsigned long long)ts_ns(&rt));
	rec_sess_meta(s, "nr_cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	rec_sess_meta(s, "mode", "%s", s->launch ? "launch" : "attach");
	rec_sess_meta(s, "pid", "%d", (int)s->target);
	/* kernel addresses mean something only on the boot that recorded them */
	if (rec_procfs_boot_id(boot_id, sizeof(boot_id)) == 0 && boot_id[0])
		rec_sess_meta(s, "boot_id", "%s", boot_id);
	rec_sess_capture_meta(s);
	rec_sess_job_start(s);
}

static void process_record(sess *s, uint32_t event, pid_t pid, pid_t ppid, int status, const char *comm)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_PROCESS;
	r.u.process.time_ns = gtt_now_ns();
	r.u.process.pid = (uint32_t)pid;
	r.u.process.ppid = (uint32_t)ppid;
	r.u.process.event = event;
	r.u.process.status = status;
	r.u.process.comm = comm;
	gtt_write(s->w, &r);
}

static void fmt_bytes(uint64_t n, char *buf, size_t len)
{
	if (n >= (10ull << 20))
		snprintf(buf, len, "%.0f MiB", (double)n / (1 << 20));
	else if (n >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, len, "%.0f KiB", (double)n / 1024);
}

static void status_line(sess *s, uint64_t now)
{
	rec_perf_stats st;
	char size[32];
	double dt = gt_ns_to_s(now - s->status_ns);
	uint64_t lag = rec_ticker_last_late_ns(s->drain);

	if (!s->tty || s->o->quiet || dt < 0.25)
		return;
	rec_perf_get_stats(s->perf, &st);
	fmt_bytes(gtt_writer_bytes(s->w), size, sizeof(size));
	fprintf(stderr, "\r\033[Kgt-record: %.1f s%s  %llu samples (%.0f/s)  lost %llu  lag %.1f ms  %u threads  %s",
	        gt_ns_to_s(now - s->start_ns), rec_capture_is_on(s->cap) ? "" : " (not sampling)",
	        (unsigned long long)st.samples,
	        (double)(st.samples - s->status_samples) / dt, (unsigned long long)st.lost,
	        (double)lag / (double)GT_NS_PER_MS,
	        rec_procstat_threads(s->ps), size);
	s->status_ns = now;
	s->status_samples = st.samples;
}

/* ---- attach ---- */

/* Attach every thread of the target; rescans for threads born meanwhile. GT_EXIT_OK,
 * GT_EXIT_PARTIAL when the target exited during the attach, GT_EXIT_BROKEN on an error. */
static int attach_all(sess *s)
{
	char err[512] = "";
	int round, n_ok = 0, rc = GT_EXIT_OK;

	for (round = 0; round < 3 && rc == GT_EXIT_OK; round++) {
		pid_t *tids = NULL;
		int n = rec_procfs_tids(s->target, &tids), i, added = 0;

		if (n < 0) {
			free(tids);
			break;
		}
		for (i = 0; i < n; i++) {
			int arc;
			if (round > 0 && rec_perf_saw_thread(s->perf, tids[i]))
				continue; /* born after its creator was attached: inherit covers it */
			arc = rec_perf_attach_thread(s->perf, tids[i], err, sizeof(err));
			if (arc == 0) {
				n_ok++;
				added++;
			} else if (arc < 0 && arc != -ESRCH) {
				rec_sess_say("%s", err);
				rc = GT_EXIT_BROKEN;
				break;
			}
		}
		free(tids);
		if (rc != GT_EXIT_OK || (round > 0 && added == 0))
			break;
		if (rec_perf_drain(s->perf, 1) < 0) /* all of it: FORK records decide the next round */
			break;
	}
	if (rc == GT_EXIT_OK && n_ok == 0) {
		rec_sess_say("process %d exited during attach", (int)s->target);
		rc = GT_EXIT_PARTIAL;
	}
	return rc;
}

static int target_gone(sess *s)
{
	char st = rec_procfs_state(s->target, NULL);
	return st == 0 || st == 'Z' || st == 'X';
}

/* ---- the end ---- */

static void write_end(sess *s, int status)
{
	gtt_record r;
	rec_perf_stats st;

	rec_perf_get_stats(s->perf, &st);
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_END;
	r.u.end.time_ns = gtt_now_ns();
	r.u.end.reason = s->end_reason;
	r.u.end.status = status;
	/* a ring window holds fewer samples than were taken */
	r.u.end.n_samples = s->have_end_samples ? s->end_samples : st.samples;
	r.u.end.n_records = gtt_writer_records(s->w);
	gtt_write(s->w, &r);
}

static void summary(sess *s, const rec_archive_stats *as, uint64_t end_ns)
{
	rec_perf_stats st;
	char size[32], arch[96] = "";
	double secs = gt_ns_to_s(end_ns - s->start_ns);

	if (s->o->quiet)
		return;
	rec_perf_get_stats(s->perf, &st);
	if (s->w) {
		fmt_bytes(gtt_writer_bytes(s->w), size, sizeof(size));
	} else { /* the ring's window, closed and in place */
		struct stat fst;
		fmt_bytes(stat(s->o->output, &fst) == 0 ? (uint64_t)fst.st_size : 0, size, sizeof(size));
	}
	if (!s->o->no_archive) {
		char ab[32];
		fmt_bytes(as->bytes, ab, sizeof(ab));
		snprintf(arch, sizeof(arch), ", archive %u binaries %s", as->n_embedded, ab);
	}
	if (s->tty)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr, "gt-record: %s: %.2f s, %llu samples (%.1f/s), %llu lost, lag max %.1f ms%s, %s\n",
	        rec_out_name(s->out), secs, (unsigned long long)st.samples,
	        secs > 0 ? (double)st.samples / secs : 0.0, (unsigned long long)st.lost,
	        (double)rec_ticker_late_max_ns(s->drain) / (double)GT_NS_PER_MS, arch, size);
	if (s->out_note[0])
		fprintf(stderr, "gt-record: %s\n", s->out_note);
	if (st.rearms)
		fprintf(stderr, "gt-record: a CPU's sampling event stopped on its own and was re-armed (%llu time%s): "
		        "samples are missing there (the report's health section says where)\n",
		        (unsigned long long)st.rearms, st.rearms == 1 ? "" : "s");
	if (s->py_note[0] && !s->py_failed)
		fprintf(stderr, "gt-record: %s\n", s->py_note);
	rec_sess_gate_summary(s, end_ns);
}

static int setup_signals(const rec_opts *o)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
		return -errno;
	/* SIGHUP too: a closed terminal (a dropped ssh session) ends the recording cleanly, with
	 * its END record, instead of killing gt-record mid-write; under nohup it stays ignored */
	struct sigaction hup;
	if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN && sigaction(SIGHUP, &sa, NULL) < 0)
		return -errno;
	/* --capture-range=signal and --ring: SIGUSR1 and SIGUSR2 go to capture control (without
	 * them, their default action still ends gt-record, as for any program) */
	sa.sa_handler = rec_capture_signal;
	if ((o->capture.range == REC_CAP_SIGNAL || o->capture.ring_s > 0) &&
	    (sigaction(SIGUSR1, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0))
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

/* The drain loop: until the target exits, the duration ends, a signal, or a write error. */
static void run_loop(sess *s)
{
	uint64_t flush_ns = s->start_ns, check_ns = 0, deadline = 0;

	if (s->o->duration_s > 0)
		deadline = s->start_ns + gt_s_to_ns(s->o->duration_s);
	for (;;) {
		uint64_t now = rec_sess_capture_wait(s);
		int rc = rec_perf_drain(s->perf, 0);

		if (rc < 0) {
			s->write_rc = rc;
			s->end_reason = GTT_END_ERROR;
			return;
		}
		rec_sess_gate_step(s, now);
		if ((rc = rec_perf_watch(s->perf, now)) < 0) {
			s->write_rc = rc;
			s->end_reason = GTT_END_ERROR;
			return;
		}
		if (g_n_signals > 0) {
			s->end_reason = GTT_END_SIGNAL;
			return;
		}
		if (s->launch) {
			if (rec_child_reap(&s->child, 0)) {
				s->end_reason = GTT_END_TARGET_EXIT;
				return;
			}
		} else if (now >= check_ns) {
			check_ns = now + ATTACH_CHECK_NS;
			if (target_gone(s)) {
				s->end_reason = GTT_END_TARGET_EXIT;
				return;
			}
		}
		if (deadline && now >= deadline) {
			s->end_reason = GTT_END_DURATION;
			return;
		}
		if ((rc = rec_sess_capture_step(s, now)) != 0)
			return; /* --max-size reached, or a write error (end_reason set) */
		rec_sess_job_step(s, now);
		if (now >= flush_ns + FLUSH_NS) {
			flush_ns = now;
			if (s->cuda)
				rec_cuda_merge(s->cuda, s->w);
			if (s->counters && rec_counters_merge(s->counters, s->w) == -EIO)
				s->write_rc = -EIO;
			if (gtt_writer_flush(s->w) < 0) {
				s->write_rc = -EIO;
				s->end_reason = GTT_END_ERROR;
				return;
			}
		}
		status_line(s, now);
	}
}

/* --top: the view starts before the events, so it sees the first samples. 0, or
 * GT_EXIT_BROKEN with one line said. */
static int top_start(sess *s, const char *command)
{
	rec_top_opts to = { s->target, s->o->freq_hz, command };
	char err[512] = "";

	if (!s->o->top)
		return 0;
	if (!(s->top = rec_top_start(&to, err, sizeof(err)))) {
		rec_sess_say("%s", err);
		return GT_EXIT_BROKEN;
	}
	return 0;
}

/* Python: the reader starts once the target exists (it waits for the interpreter itself). */
static void python_start(sess *s)
{
	rec_py_opts po;
	char err[512] = "";

	if (s->o->python == REC_PY_OFF)
		return;
	memset(&po, 0, sizeof(po));
	po.stack_hz = s->o->freq_hz;
	po.observe = s->top ? rec_top_model_observe : NULL;
	po.observe_ctx = rec_top_model_of(s->top);
	s->py = rec_py_start(s->target, s->w, &po, err, sizeof(err));
	if (!s->py && s->o->python == REC_PY_ON) {
		snprintf(s->py_note, sizeof(s->py_note), "--python=on: %s", err);
		s->py_failed = 1;
	} else if (!s->py) {
		rec_sess_note(s, GTT_SRC_PYSTACK, err);
	}
}

static void python_stop(sess *s)
{
	rec_py_result res;

	if (!s->py)
		return;
	rec_py_stop(s->py, &res);
	s->py = NULL;
	if (s->o->python == REC_PY_ON && res.state != REC_PY_READING) {
		snprintf(s->py_note, sizeof(s->py_note), "--python: %s", res.text);
		s->py_failed = 1;
	} else if (res.state == REC_PY_READING) {
		snprintf(s->py_note, sizeof(s->py_note), "%s", res.text);
	} else if (res.state != REC_PY_NOT_FOUND) {
		/* a Python it had to refuse (unsupported, stripped): the user hears of it now, not
		 * only from the trace's note; no Python at all is not worth a word */
		snprintf(s->py_note, sizeof(s->py_note), "python: %s", res.text);
	}
}

/* ---- start: launch or attach, then the side loops ---- */

/* The exit status of a command that could not be executed (the shell's convention). */
static int exec_failure_status(int e)
{
	return e == ENOENT ? REC_EXIT_NOT_FOUND : REC_EXIT_NOT_EXEC;
}

/* In the launched child, between fork and exec. */
static void child_env(const void *ctx)
{
	const sess *s = ctx;
	rec_cuda_child_env(s->cuda);
	rec_counters_child_env(s->counters);
}

/* --prepare: no recording, just exec the command with the CUDA agent dormant. */
static int prepare_exec(const rec_opts *o)
{
	char err[512] = "";
	rec_cuda *cuda = rec_cuda_prepare(o->argv0, 1, err, sizeof(err));
	int e;

	if (!cuda)
		rec_sess_say("--prepare: %s; running the command without the CUDA agent", err);
	rec_cuda_child_env(cuda);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGXFSZ, SIG_DFL);
	execvp(o->argv[0], o->argv);
	e = errno;
	rec_sess_say("%s: %s", o->argv[0], e == ENOENT ? "command not found" : strerror(e));
	rec_cuda_finish(cuda, NULL);
	return exec_failure_status(e);
}

static void perf_opts(const rec_opts *o, rec_perf_opts *po)
{
	memset(po, 0, sizeof(*po));
	po->freq_hz = o->freq_hz;
	po->dwarf = o->dwarf;
	po->stack_bytes = o->stack_bytes;
	po->switches = o->switches;
}

/* Open the events in the scope asked for: system-wide (per-CPU events filtered to the
 * target's tree, no cost on context switches) when permitted, else per task; write the
 * scope meta key, and a note when system-wide was wanted but not possible. 0, or
 * GT_EXIT_BROKEN with one line said. */
static int open_sampler(sess *s)
{
	rec_perf_opts po;
	rec_perf_stats st;
	char err[1024] = "", why[1200];
	int rc;

	perf_opts(s->o, &po);
	po.capture = rec_capture_switchable(s->cap);
	if (s->o->scope != REC_SCOPE_PROCESS) {
		/* a launched command is kept from its exec on, as enable_on_exec does per task */
		rc = rec_perf_open_system(s->target, s->launch, &po, s->w, observe, s, &s->perf, err, sizeof(err));
		if (rc < 0 && s->o->scope == REC_SCOPE_SYSTEM) {
			rec_sess_say("--scope system: %s", err);
			return GT_EXIT_BROKEN;
		}
		if (rc < 0) {
			if (rc == -EACCES || rc == -EPERM)
				snprintf(why, sizeof(why), "system-wide sampling needs root or perf_event_paranoid <= 0; "
				         "using per-task events");
			else
				snprintf(why, sizeof(why), "system-wide sampling failed (%s); using per-task events", err);
			rec_sess_note(s, GTT_SRC_PERF, why);
			if (!s->o->quiet)
				rec_sess_say("%s", why);
		}
	}
	if (!s->perf) {
		err[0] = 0;
		s->perf = s->launch ? rec_perf_open_launch(s->target, &po, s->w, observe, s, err, sizeof(err))
		                    : rec_perf_open_attach(&po, s->w, observe, s, err, sizeof(err));
		if (!s->perf) {
			rec_sess_say("%s", err);
			return GT_EXIT_BROKEN;
		}
	}
	rec_perf_get_stats(s->perf, &st);
	rec_sess_meta(s, "scope", "%s", st.system ? "system" : "process");
	if (st.system)
		rec_perf_set_found(s->perf, found_proc, s);
	return 0;
}

/* Launch mode: fork the command (held on a pipe), open the events on it, write the
 * metadata, release it and learn whether its exec worked. 0, or the exit status of a
 * recording that never began. */
static int start_launch(sess *s, const char *command)
{
	const rec_opts *o = s->o;
	char err[1024] = "";
	int rc;

	if (!o->no_cuda) {
		s->cuda = rec_cuda_prepare(o->argv0, 0, err, sizeof(err));
		if (!s->cuda && err[0])
			rec_sess_note(s, GTT_SRC_CUPTI, err);
		rec_cuda_set_observer(s->cuda, observe, s);
		rec_sess_job_cuda(s);
	}
	if (!s->cuda && rec_sess_capture_need_agent(s, err) != 0)
		return GT_EXIT_BROKEN;
	if (rec_sess_capture_agent_rule(s) != 0)
		return GT_EXIT_BROKEN;
	if (!(s->counters = rec_counters_create(&rc)))
		rec_sess_note(s, GTT_SRC_WRITER, "counters: no directory for GT_COUNTERS_DIR; program counters are not recorded");
	if ((rc = rec_child_spawn(&s->child, o->argv, child_env, s)) < 0) {
		rec_sess_say("fork: %s", strerror(-rc));
		return GT_EXIT_BROKEN;
	}
	s->target = s->child.pid;
	rec_child_sched_recorder();
	write_meta(s, command);
	if (top_start(s, command) != 0 || open_sampler(s) != 0)
		goto fail;
	rec_sess_job_sampler(s);
	rec_sess_gate_start(s);
	rec_perf_set_stack_trim(s->perf, trim_stack, s);
	rec_perf_write_config(s->perf, s->start_ns);
	process_record(s, GTT_PROC_START, s->target, getpid(), 0, command);
	if ((rc = rec_child_release(&s->child)) == 0)
		return 0;
	if (s->child.exec_errno) {
		int e = s->child.exec_errno;
		rec_sess_say("%s: %s", o->argv[0], e == ENOENT ? "command not found" : strerror(e));
		rec_child_reap(&s->child, TERM_GRACE_NS);
		return exec_failure_status(e);
	}
	rec_sess_say("cannot start the command: %s", strerror(-rc));
fail:
	rec_child_close(&s->child); /* a child still held reads EOF and exits 127 */
	rec_child_reap(&s->child, TERM_GRACE_NS);
	return GT_EXIT_BROKEN;
}

/* Attach mode: events on every thread of the running target, then what /proc knows of it.
 * 0 (s->ended set when the target exited during the attach), or the exit status of a
 * recording that never began. */
static int start_attach(sess *s, const char *command)
{
	const rec_opts *o = s->o;
	char err[1024] = "";
	rec_perf_stats st;
	pid_t *tids = NULL;
	int n, i, rc;

	rec_child_sched_recorder();
	write_meta(s, command);
	if (top_start(s, command) != 0 || open_sampler(s) != 0)
		return GT_EXIT_BROKEN;
	rec_sess_job_sampler(s);
	rec_sess_gate_start(s);
	rec_perf_get_stats(s->perf, &st);
	/* names first, so threads created from now on inherit them (nothing is decoded before
	 * the first drain) */
	n = rec_procfs_tids(o->pid, &tids);
	for (i = 0; i < n; i++) {
		char name[64];
		if (rec_procfs_comm(o->pid, tids[i], name, sizeof(name)) == 0)
			rec_perf_note_name(s->perf, tids[i], name);
	}
	free(tids);
	if (!st.system) {
		rc = attach_all(s);
	} else if (target_gone(s)) {
		rec_sess_say("process %d exited during attach", (int)s->target);
		rc = GT_EXIT_PARTIAL;
	} else {
		rc = GT_EXIT_OK; /* its threads, and the processes it creates, are in the tree */
	}
	if (rc == GT_EXIT_BROKEN)
		return rc;
	rec_perf_write_config(s->perf, s->start_ns);
	/* mappings after the events exist: later mmaps arrive as MMAP2 records */
	rec_procfs_synth(o->pid, gtt_now_ns(), s->w, observe, s);
	rec_perf_set_stack_trim(s->perf, trim_stack, s);
	if (rc != 0) {
		s->end_reason = GTT_END_TARGET_EXIT;
		s->ended = 1;
		return 0;
	}
	if (!o->no_cuda) {
		err[0] = 0;
		s->cuda = rec_cuda_prepare(o->argv0, 0, err, sizeof(err));
		rec_cuda_set_observer(s->cuda, observe, s);
		rec_sess_job_cuda(s);
		if (rec_sess_capture_agent_rule(s) != 0)
			return GT_EXIT_BROKEN;
		if (s->cuda && (rc = rec_cuda_attach(s->cuda, o->pid, 1, err, sizeof(err))) <= 0 && err[0])
			rec_sess_note(s, GTT_SRC_CUPTI, err);
		else if (!s->cuda && err[0])
			rec_sess_note(s, GTT_SRC_CUPTI, err);
		if ((!s->cuda || rc <= 0) && rec_sess_capture_need_agent(s, err) != 0)
			return GT_EXIT_BROKEN;
	}
	return 0;
}

/* Create the trace file (outfile.h: private, locked, never through a link) and its writer.
 * 0, or GT_EXIT_BROKEN with one line said. */
static int open_output(sess *s)
{
	char err[PATH_MAX + 200];
	int fd, werr = 0;

	s->out = rec_out_open(s->o->output, err, sizeof(err));
	if (!s->out) {
		rec_sess_say("%s", err);
		return GT_EXIT_BROKEN;
	}
	s->discard = 1; /* until the recording has begun */
	fd = dup(rec_out_fd(s->out));
	s->w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &werr) : NULL;
	if (!s->w) {
		int e = fd < 0 || werr == GTT_EIO ? errno : ENOMEM;
		rec_sess_say("cannot write %s: %s", rec_out_name(s->out), strerror(e));
		if (fd >= 0)
			close(fd);
		return GT_EXIT_BROKEN;
	}
	return 0;
}

/* Check the target and open the trace, then launch or attach, then start the side loops
 * (/proc, Python) and the drain schedule. 0, or the exit status of a recording that never
 * began (its trace file, if one was created, is then removed). */
static int start(sess *s)
{
	const rec_opts *o = s->o;
	char err[512] = "", command[4096];
	int rc;
	rec_perf_stats st;

	if (!s->launch) {
		if (kill(o->pid, 0) < 0 && errno == ESRCH) {
			rec_sess_say("no process with PID %d", (int)o->pid);
			return GT_EXIT_BROKEN;
		}
		if (kill(o->pid, 0) < 0 && errno == EPERM) {
			rec_sess_say("process %d belongs to another user: permission denied (run as that user or as root)",
			    (int)o->pid);
			return GT_EXIT_BROKEN;
		}
		s->target = o->pid;
		rec_procfs_cmdline(o->pid, command, sizeof(command));
	} else {
		join_args(o->argv, command, sizeof(command));
	}
	s->arch = rec_archive_create();
	if (!s->arch) {
		rec_sess_say("out of memory");
		return GT_EXIT_BROKEN;
	}
	if ((rc = open_output(s)) != 0 || (rc = rec_sess_capture_open(s)) != 0)
		return rc;
	rc = s->launch ? start_launch(s, command) : start_attach(s, command);
	if (rc != 0)
		return rc;
	/* the recording has begun: from here on the trace is at -o (an existing file becomes
	 * FILE.old), so a recorder killed from now on leaves it there, readable */
	s->discard = 0;
	if (rec_out_commit(s->out, s->out_note, sizeof(s->out_note)) < 0)
		rec_sess_say("%s", s->out_note);
	rec_ring_committed(s->ring, strcmp(rec_out_name(s->out), o->output) == 0);
	if (s->ended)
		return 0;
	rec_perf_get_stats(s->perf, &st);
	if (st.user_only)
		rec_sess_note(s, GTT_SRC_PERF, "kernel samples not permitted (kernel.perf_event_paranoid): user space only");
	s->drain = rec_ticker_create(GTT_SRC_PERF, gt_hz_to_period_ns(o->drain_hz > 0 ? o->drain_hz : DRAIN_HZ), 0, s->w);
	if (!s->drain) {
		rec_sess_say("out of memory");
		s->ended = 1;
		return 0;
	}
	rec_sess_capture_begin(s); /* sampling off at first: the side loops start paused */
	s->ps = rec_procstat_start(s->w, o->procstat_hz, err, sizeof(err));
	if (!s->ps)
		rec_sess_note(s, GTT_SRC_PROCSTAT, err);
	rec_procstat_add(s->ps, s->target);
	python_start(s);
	s->status_ns = gtt_now_ns();
	return 0;
}

/* ---- finish: stop sampling, end the command, write the archive and the END record ---- */

/* A launched command still running when the recording ends: Ctrl-C reached it too, so it has
 * a moment to exit by itself; a signal aimed at gt-record alone, or the end of -d, is passed
 * on (SIGTERM for -d), then SIGKILL. */
static void end_command(sess *s)
{
	int sig = s->end_reason == GTT_END_SIGNAL ? (int)g_signal : SIGTERM;

	if (s->end_reason == GTT_END_SIGNAL && rec_child_reap(&s->child, SIGINT_WAIT_NS))
		return;
	/* the agent flushes its last GPU records before the command is ended */
	rec_cuda_switch_off(s->cuda);
	kill(s->target, sig);
	if (!rec_child_reap(&s->child, TERM_GRACE_NS)) {
		kill(s->target, SIGKILL);
		rec_child_reap(&s->child, TERM_GRACE_NS);
	}
}

/* The exit status of a recording that ran (see session.h), with its last words on stderr. */
static int exit_status(sess *s)
{
	if (s->write_rc < 0) {
		int e = gtt_writer_errno(s->w);
		struct stat fst;
		rec_sess_say("writing %s: %s; the trace is readable up to its last whole chunk (%lld bytes on disk)",
		    rec_out_name(s->out), strerror(e ? e : -s->write_rc),
		    fstat(rec_out_fd(s->out), &fst) == 0 ? (long long)fst.st_size : -1ll);
		if (s->launch && s->child.alive) {
			rec_sess_say("the command keeps running, unrecorded");
			rec_perf_close(s->perf);
			s->perf = NULL;
			while (!rec_child_reap(&s->child, GT_NS_PER_SEC))
				;
		}
		return GT_EXIT_BROKEN;
	}
	if (s->py_failed) {
		rec_sess_say("%s", s->py_note);
		return GT_EXIT_BROKEN;
	}
	if (s->capture_ended && s->launch && s->child.alive) {
		int n_sig = g_n_signals;
		rec_sess_say("the command keeps running, unrecorded; gt-record exits with its status when it ends");
		rec_perf_close(s->perf);
		s->perf = NULL;
		while (!rec_child_reap(&s->child, GT_NS_PER_SEC / 10))
			if (g_n_signals != n_sig) { /* passed on: gt-record stays until the command ends */
				n_sig = g_n_signals;
				kill(s->target, g_signal);
			}
	}
	if (s->launch)
		return rec_child_exit_code(s->child.wait_status);
	if (s->end_reason == GTT_END_TARGET_EXIT) {
		rec_sess_say("process %d exited during the recording", (int)s->target);
		return GT_EXIT_PARTIAL;
	}
	return GT_EXIT_OK;
}

/* System-wide: say in the trace that other processes' records were dropped unwritten. */
static void system_note(sess *s)
{
	rec_perf_stats st;
	char text[160];

	rec_perf_get_stats(s->perf, &st);
	if (!st.system)
		return;
	snprintf(text, sizeof(text), "system-wide sampling: %llu records of other processes dropped before writing",
	         (unsigned long long)st.foreign);
	rec_sess_note(s, GTT_SRC_PERF, text);
}

static int finish(sess *s)
{
	rec_archive_stats as;
	uint64_t end_ns = gtt_now_ns();

	memset(&as, 0, sizeof(as));
	rec_perf_disable(s->perf);
	if (s->write_rc == 0 && rec_perf_drain(s->perf, 1) < 0)
		s->write_rc = -EIO;
	system_note(s);
	rec_ticker_finish(s->drain, end_ns);
	rec_sess_capture_release(s); /* loops paused outside capture must see their stop */
	rec_procstat_stop(s->ps);
	s->ps = NULL;
	python_stop(s);
	rec_top_stop(s->top, stderr); /* the terminal back, and the classes of the whole recording */
	s->top = NULL;
	/* --max-size ends the recording, not the command: it runs on, unrecorded */
	if (s->launch && s->child.alive && s->write_rc == 0 && !s->capture_ended)
		end_command(s);
	if (s->launch && !s->child.alive)
		process_record(s, GTT_PROC_EXIT, s->target, getpid(), s->child.wait_status, "");
	if (s->cuda) {
		rec_cuda_finish(s->cuda, s->w);
		s->cuda = NULL;
	}
	if (s->counters) {
		if (rec_counters_finish(s->counters, s->write_rc == 0 ? s->w : NULL) == -EIO)
			s->write_rc = -EIO;
		s->counters = NULL;
	}
	rec_sess_job_finish(s); /* the last clock pair, inside a ring's window */
	if (s->ring && s->write_rc == 0)
		rec_sess_capture_ring_final(s, end_ns); /* the window's own writer from here on */
	if (!s->o->no_archive && s->write_rc == 0) {
		if (s->tty && !s->o->quiet)
			fprintf(stderr, "\r\033[Kgt-record: writing the symbol archive...");
		if (rec_archive_write(s->arch, s->w, &as) < 0)
			s->write_rc = -EIO;
	}
	write_end(s, s->launch && !s->child.alive ? s->child.wait_status : 0);
	if (gtt_writer_flush(s->w) < 0 && s->write_rc == 0)
		s->write_rc = -EIO;
	rec_sess_capture_ring_commit(s);
	summary(s, &as, end_ns);
	rec_sess_capture_summary(s, end_ns);
	return exit_status(s);
}

/* Release everything; a launched command still alive is killed (a recording that failed). */
static int cleanup(sess *s, int rc)
{
	if (s->launch && s->child.alive && s->target > 0) {
		kill(s->target, SIGKILL);
		rec_child_reap(&s->child, TERM_GRACE_NS);
	}
	rec_sess_capture_release(s); /* a loop paused by the gate must see its stop */
	rec_procstat_stop(s->ps);
	rec_py_stop(s->py, NULL);
	rec_top_stop(s->top, NULL);
	rec_procid_destroy(s->ids); /* finish() did not run */
	s->ids = NULL;
	rec_cuda_finish(s->cuda, NULL);
	rec_counters_finish(s->counters, NULL);
	rec_perf_close(s->perf);
	rec_sess_gate_close(s);
	rec_ticker_destroy(s->drain);
	rec_archive_destroy(s->arch);
	if (s->w && gtt_writer_close(s->w) < 0 && rc == GT_EXIT_OK)
		rc = GT_EXIT_BROKEN;
	s->w = NULL;
	rec_sess_capture_close(s);
	if (s->discard)
		rec_out_discard(s->out); /* a recording that never began leaves no file of its own */
	rec_out_close(s->out);
	return rc;
}

int rec_session_run(const rec_opts *o)
{
	sess s;
	int rc;

	if ((rc = setup_signals(o)) < 0) {
		rec_sess_say("cannot install signal handlers: %s", strerror(-rc));
		return GT_EXIT_BROKEN;
	}
	if (o->prepare)
		return prepare_exec(o);
	memset(&s, 0, sizeof(s));
	s.o = o;
	s.launch = o->pid <= 0;
	s.tty = isatty(2) && !o->top; /* --top owns the terminal: no status line */
	s.end_reason = GTT_END_ERROR;
	rc = start(&s);
	if (rc == 0) {
		if (!s.ended)
			run_loop(&s);
		rc = finish(&s);
	}
	return cleanup(&s, rc);
}
