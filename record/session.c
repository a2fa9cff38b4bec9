/* session.c — gt-record's recording flow: launch/attach, drain loop, side loops, archive, end. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
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

#include "archive.h"
#include "cuda_inject.h"
#include "gtt.h"
#include "perf_sampler.h"
#include "procfs.h"
#include "pyreader.h"
#include "ticker.h"
#include "top.h"

#ifndef GT_VERSION
#define GT_VERSION "0"
#endif

#define TERM_GRACE_NS 3000000000ull   /* a launched command's time to exit after SIGTERM */
#define STACK_SLACK_BYTES 512           /* kept above the outermost return address */
#define SIGINT_WAIT_NS 1000000000ull  /* after Ctrl-C, the command's time to exit by itself */

static volatile sig_atomic_t g_signal, g_n_signals;

static void on_signal(int sig)
{
	g_signal = sig;
	g_n_signals++;
}

typedef struct sess {
	const rec_opts *o;
	gtt_writer *w;
	rec_perf *perf;
	rec_archive *arch;
	rec_procstat *ps;
	rec_cuda *cuda;
	rec_py *py;
	rec_ticker *drain;
	rec_top *top;            /* --top, NULL without */
	pid_t target;
	int launch;
	int child_alive;        /* launch mode: the command has not been reaped */
	int wait_status;        /* launch mode: the command's wait status */
	uint64_t start_ns;
	uint32_t end_reason;
	int write_rc;
	int tty;
	uint64_t status_ns, status_samples;
	uint64_t py_failed;     /* --python=on and no interpreter found */
	char py_note[1024];
} sess;

void rec_opts_init(rec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "gt.gtt";
	o->freq_hz = 99;
	o->dwarf = 1;          /* see docs/RECORD.md: targets without frame pointers are the norm */
	o->stack_bytes = 8192;
	o->python = REC_PY_AUTO;
	o->procstat_hz = 10;
	o->drain_hz = 40;
}

static void say(const char *fmt, ...)
{
	va_list ap;
	char line[1200];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gt-record: %s\n", line);
}

static void meta(sess *s, const char *key, const char *fmt, ...)
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

static void note(sess *s, uint32_t source, const char *text)
{
	gtt_record r;

	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_HEALTH;
	r.u.health.time_ns = gtt_now_ns();
	r.u.health.end_ns = r.u.health.time_ns;
	r.u.health.source = source;
	r.u.health.kind = GTT_HEALTH_NOTE;
	r.u.health.text = text;
	gtt_write(s->w, &r);
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
	switch (r->tag) {
	case GTT_REC_SAMPLE:
		rec_archive_hit_sample(s->arch, &r->u.sample);
		break;
	case GTT_REC_MAPPING:
		rec_archive_add(s->arch, &r->u.mapping);
		break;
	case GTT_REC_PROCESS:
		if (r->u.process.event == GTT_PROC_FORK) {
			rec_archive_fork(s->arch, r->u.process.ppid, r->u.process.pid, r->u.process.time_ns, s->w);
			rec_procstat_add(s->ps, (pid_t)r->u.process.pid);
		} else if (r->u.process.event == GTT_PROC_EXEC) {
			rec_archive_exec(s->arch, r->u.process.pid);
		} else if (r->u.process.event == GTT_PROC_EXIT) {
			rec_procstat_remove(s->ps, (pid_t)r->u.process.pid);
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

static void join_args(char **argv, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; argv[i] && n + 1 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " " : "", argv[i]);
}

static void write_meta(sess *s, const char *command)
{
	struct utsname u;
	char host[256] = "";
	struct timespec a, rt, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &b);
	s->start_ns = ((uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec +
	               (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec) / 2;
	gethostname(host, sizeof(host) - 1);
	if (uname(&u) != 0)
		strcpy(u.release, "?");
	meta(s, "command", "%s", command);
	meta(s, "hostname", "%s", host);
	meta(s, "kernel", "%s", u.release);
	meta(s, "recorder", "gt-record %s", GT_VERSION);
	meta(s, "frequency_hz", "%g", s->o->freq_hz);
	meta(s, "call_graph", "%s", s->o->dwarf ? "dwarf" : "fp");
	meta(s, "stack_bytes", "%u", s->o->dwarf ? s->o->stack_bytes : 0);
	meta(s, "clock", "CLOCK_MONOTONIC");
	meta(s, "start_ns", "%llu", (unsigned long long)s->start_ns);
	meta(s, "start_realtime_ns", "%llu",
	     (unsigned long long)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec));
	meta(s, "nr_cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	meta(s, "mode", "%s", s->launch ? "launch" : "attach");
	meta(s, "pid", "%d", (int)s->target);
	/* kernel addresses mean something only on the boot that recorded them */
	char boot_id[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (fgets(boot_id, sizeof(boot_id), f))
			boot_id[strcspn(boot_id, "\n")] = 0;
		fclose(f);
	}
	if (boot_id[0])
		meta(s, "boot_id", "%s", boot_id);
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
	double dt = (double)(now - s->status_ns) / 1e9;
	uint64_t lag = rec_ticker_last_late_ns(s->drain);

	if (!s->tty || s->o->quiet || dt < 0.25)
		return;
	rec_perf_get_stats(s->perf, &st);
	fmt_bytes(gtt_writer_bytes(s->w), size, sizeof(size));
	fprintf(stderr, "\r\033[Kgt-record: %.1f s  %llu samples (%.0f/s)  lost %llu  lag %.1f ms  %u threads  %s",
	        (double)(now - s->start_ns) / 1e9, (unsigned long long)st.samples,
	        (double)(st.samples - s->status_samples) / dt, (unsigned long long)st.lost, (double)lag / 1e6,
	        rec_procstat_threads(s->ps), size);
	s->status_ns = now;
	s->status_samples = st.samples;
}

/* ---- launch ---- */

/* Fork the command; it waits on a pipe until the events exist. Returns its pid, or -1. */
static pid_t spawn(sess *s, int *go_fd, int *exec_fd)
{
	int go[2], ex[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(ex, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(go[0]);
		close(go[1]);
		close(ex[0]);
		close(ex[1]);
		return -1;
	}
	if (pid == 0) {
		char c;
		int e;
		sigset_t none;

		close(go[1]);
		close(ex[0]);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		rec_cuda_child_env(s->cuda);
		execvp(s->o->argv[0], s->o->argv);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	*go_fd = go[1];
	*exec_fd = ex[0];
	return pid;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Reap the command when it has exited (or wait up to wait_ns for it). 1 when reaped. */
static int reap(sess *s, uint64_t wait_ns)
{
	uint64_t until = gtt_now_ns() + wait_ns;

	if (!s->child_alive)
		return 1;
	for (;;) {
		int st;
		pid_t r = waitpid(s->target, &st, WNOHANG);
		if (r == s->target) {
			s->child_alive = 0;
			s->wait_status = st;
			return 1;
		}
		if (r < 0 && errno != EINTR) {
			s->child_alive = 0;
			s->wait_status = 0;
			return 1;
		}
		if (gtt_now_ns() >= until)
			return 0;
		usleep(10000);
	}
}

/* ---- attach ---- */

/* Attach every thread of the target; rescans for threads born meanwhile. 0, or an exit status. */
static int attach_all(sess *s)
{
	char err[512] = "";
	int round, n_ok = 0;

	for (round = 0; round < 3; round++) {
		pid_t *tids = NULL;
		int n = rec_procfs_tids(s->target, &tids), i, added = 0;

		if (n < 0) {
			free(tids);
			break;
		}
		for (i = 0; i < n; i++) {
			int rc;
			if (round > 0 && rec_perf_saw_thread(s->perf, tids[i]))
				continue; /* born after its creator was attached: inherit covers it */
			rc = rec_perf_attach_thread(s->perf, tids[i], err, sizeof(err));
			if (rc == 0) {
				n_ok++;
				added++;
			} else if (rc == -EACCES || rc == -EPERM) {
				free(tids);
				say("%s", err);
				return 2;
			} else if (rc < 0 && rc != -ESRCH) {
				free(tids);
				say("%s", err);
				return 2;
			}
		}
		free(tids);
		if (round > 0 && added == 0)
			break;
		if (rec_perf_drain(s->perf, 1) < 0) /* all of it: FORK records decide the next round */
			break;
	}
	if (n_ok == 0) {
		say("process %d exited during attach", (int)s->target);
		return 1;
	}
	return 0;
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
	r.u.end.n_samples = st.samples;
	r.u.end.n_records = gtt_writer_records(s->w);
	gtt_write(s->w, &r);
}

static void summary(sess *s, const rec_archive_stats *as, uint64_t end_ns)
{
	rec_perf_stats st;
	char size[32], arch[96] = "";
	double secs = (double)(end_ns - s->start_ns) / 1e9;

	if (s->o->quiet)
		return;
	rec_perf_get_stats(s->perf, &st);
	fmt_bytes(gtt_writer_bytes(s->w), size, sizeof(size));
	if (!s->o->no_archive) {
		char ab[32];
		fmt_bytes(as->bytes, ab, sizeof(ab));
		snprintf(arch, sizeof(arch), ", archive %u binaries %s", as->n_embedded, ab);
	}
	if (s->tty)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr, "gt-record: %s: %.2f s, %llu samples (%.1f/s), %llu lost, lag max %.1f ms%s, %s\n",
	        s->o->output, secs, (unsigned long long)st.samples, secs > 0 ? (double)st.samples / secs : 0.0,
	        (unsigned long long)st.lost, (double)rec_ticker_late_max_ns(s->drain) / 1e6, arch, size);
	if (s->py_note[0] && !s->py_failed)
		fprintf(stderr, "gt-record: %s\n", s->py_note);
}

static int setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	return 0;
}

/* The drain loop: until the target exits, the duration ends, a signal, or a write error. */
static void run_loop(sess *s)
{
	uint64_t flush_ns = s->start_ns, check_ns = 0, deadline = 0;

	if (s->o->duration_s > 0)
		deadline = s->start_ns + (uint64_t)(s->o->duration_s * 1e9);
	for (;;) {
		uint64_t now = rec_ticker_wait(s->drain);
		int rc = rec_perf_drain(s->perf, 0);

		if (rc < 0) {
			s->write_rc = rc;
			s->end_reason = GTT_END_ERROR;
			return;
		}
		if (g_n_signals > 0) {
			s->end_reason = GTT_END_SIGNAL;
			return;
		}
		if (s->launch) {
			if (reap(s, 0)) {
				s->end_reason = GTT_END_TARGET_EXIT;
				return;
			}
		} else if (now >= check_ns) {
			check_ns = now + 100000000ull;
			if (target_gone(s)) {
				s->end_reason = GTT_END_TARGET_EXIT;
				return;
			}
		}
		if (deadline && now >= deadline) {
			s->end_reason = GTT_END_DURATION;
			return;
		}
		if (now >= flush_ns + 1000000000ull) {
			flush_ns = now;
			if (s->cuda)
				rec_cuda_merge(s->cuda, s->w);
			if (gtt_writer_flush(s->w) < 0) {
				s->write_rc = GTT_EIO;
				s->end_reason = GTT_END_ERROR;
				return;
			}
		}
		status_line(s, now);
	}
}

/* --top: the view starts before the events, so it sees the first samples. */
static rec_top *top_start(sess *s, const char *command, char *err, size_t errlen)
{
	rec_top_opts to = { s->target, s->o->freq_hz, command };

	return rec_top_start(&to, err, errlen);
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
	po.forced = s->o->python == REC_PY_ON;
	po.observe = s->top ? rec_top_model_observe : NULL;
	po.observe_ctx = rec_top_model_of(s->top);
	s->py = rec_py_start(s->target, s->w, &po, err, sizeof(err));
	if (!s->py && po.forced) {
		snprintf(s->py_note, sizeof(s->py_note), "--python=on: %s", err);
		s->py_failed = 1;
	} else if (!s->py) {
		note(s, GTT_SRC_PYSTACK, err);
	}
}

static void python_stop(sess *s)
{
	char status[sizeof(s->py_note)], err[512] = "";

	if (!s->py)
		return;
	rec_py_status(s->py, status, sizeof(status));
	if (rec_py_stop(s->py, err, sizeof(err)) != 0) {
		snprintf(s->py_note, sizeof(s->py_note), "%s", err);
		s->py_failed = 1;
	} else if (strncmp(status, "python 3", 8) == 0 ||
	           (strncmp(status, "python: ", 8) == 0 && !strstr(status, "no CPython interpreter found") &&
	            !strstr(status, "looking for CPython"))) {
		/* a reader that ran, or a Python it had to refuse (unsupported, stripped):
		 * the user hears of it now, not only from the trace's note */
		snprintf(s->py_note, sizeof(s->py_note), "%s", status);
	}
	s->py = NULL;
}

int rec_session_run(const rec_opts *o)
{
	sess s;
	char err[1024] = "", command[4096];
	int rc = 2, why = 0, go_fd = -1, exec_fd = -1, werr = 0, status = 0;
	rec_perf_opts po;
	rec_archive_stats as;
	uint64_t end_ns;

	memset(&s, 0, sizeof(s));
	memset(&as, 0, sizeof(as));
	s.o = o;
	s.launch = o->pid <= 0;
	s.tty = isatty(2) && !o->top; /* --top owns the terminal: no status line */
	s.end_reason = GTT_END_ERROR;
	if (setup_signals() < 0) {
		say("cannot install signal handlers: %s", strerror(errno));
		return 2;
	}

	if (o->prepare) {
		s.cuda = rec_cuda_prepare(o->argv0, 1, err, sizeof(err));
		if (!s.cuda)
			say("--prepare: %s; running the command without the CUDA agent", err);
		rec_cuda_child_env(s.cuda);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL);
		execvp(o->argv[0], o->argv);
		say("%s: %s", o->argv[0], errno == ENOENT ? "command not found" : strerror(errno));
		return errno == ENOENT ? 127 : 126;
	}

	if (!s.launch) {
		if (kill(o->pid, 0) < 0 && errno == ESRCH) {
			say("no process with PID %d", (int)o->pid);
			return 2;
		}
		if (kill(o->pid, 0) < 0 && errno == EPERM) {
			say("process %d belongs to another user: permission denied (run as that user or as root)",
			    (int)o->pid);
			return 2;
		}
		s.target = o->pid;
		rec_procfs_cmdline(o->pid, command, sizeof(command));
	} else {
		join_args(o->argv, command, sizeof(command));
	}

	memset(&po, 0, sizeof(po));
	po.freq_hz = o->freq_hz;
	po.dwarf = o->dwarf;
	po.stack_bytes = o->stack_bytes;
	s.arch = rec_archive_create();
	s.drain = NULL;
	s.w = gtt_writer_open(o->output, &werr);
	if (!s.w || !s.arch) {
		say("cannot create %s: %s", o->output, s.w ? strerror(ENOMEM) : strerror(errno));
		goto out;
	}

	if (s.launch) {
		char cerr[512] = "";
		if (!o->no_cuda) {
			s.cuda = rec_cuda_prepare(o->argv0, 0, cerr, sizeof(cerr));
			if (!s.cuda && cerr[0])
				note(&s, GTT_SRC_CUPTI, cerr);
		}
		s.target = spawn(&s, &go_fd, &exec_fd);
		if (s.target < 0) {
			say("fork: %s", strerror(errno));
			goto fail_unlink;
		}
		s.child_alive = 1;
		write_meta(&s, command);
		if (o->top && !(s.top = top_start(&s, command, err, sizeof(err)))) {
			say("%s", err);
			close(go_fd);
			go_fd = -1;
			reap(&s, TERM_GRACE_NS);
			goto fail_unlink;
		}
		s.perf = rec_perf_open_launch(s.target, &po, s.w, observe, &s, err, sizeof(err), &why);
		if (!s.perf) {
			say("%s", err);
			close(go_fd);
			go_fd = -1;
			reap(&s, TERM_GRACE_NS);
			goto fail_unlink;
		}
		rec_perf_set_stack_trim(s.perf, trim_stack, &s);
		rec_perf_write_config(s.perf, s.start_ns);
		process_record(&s, GTT_PROC_START, s.target, getpid(), 0, command);
		if (write(go_fd, "g", 1) != 1) {
			say("cannot start the command: %s", strerror(errno));
			goto fail_unlink;
		}
		close(go_fd);
		go_fd = -1;
		{
			int e = 0;
			ssize_t n = read(exec_fd, &e, sizeof(e));
			close(exec_fd);
			exec_fd = -1;
			if (n == (ssize_t)sizeof(e)) {
				say("%s: %s", o->argv[0], e == ENOENT ? "command not found" : strerror(e));
				reap(&s, TERM_GRACE_NS);
				rc = e == ENOENT ? 127 : 126;
				goto fail_unlink_rc;
			}
		}
	} else {
		write_meta(&s, command);
		if (o->top && !(s.top = top_start(&s, command, err, sizeof(err)))) {
			say("%s", err);
			goto fail_unlink;
		}
		s.perf = rec_perf_open_attach(&po, s.w, observe, &s, err, sizeof(err), &why);
		if (!s.perf) {
			say("%s", err);
			goto fail_unlink;
		}
		/* names first, so threads created from now on inherit them */
		{
			pid_t *tids = NULL;
			int n = rec_procfs_tids(o->pid, &tids), i;
			for (i = 0; i < n; i++) {
				char name[64];
				if (rec_procfs_comm(o->pid, tids[i], name, sizeof(name)) == 0)
					rec_perf_note_name(s.perf, tids[i], name);
			}
			free(tids);
		}
		rc = attach_all(&s);
		if (rc == 2) {
			goto fail_unlink;
		}
		rec_perf_write_config(s.perf, s.start_ns);
		/* mappings after the events exist: later mmaps arrive as MMAP2 records */
		rec_procfs_synth(o->pid, gtt_now_ns(), s.w, observe, &s);
		rec_perf_set_stack_trim(s.perf, trim_stack, &s);
		if (rc == 1) {
			s.end_reason = GTT_END_TARGET_EXIT;
			goto finish;
		}
		if (!o->no_cuda) {
			char cerr[512] = "";
			s.cuda = rec_cuda_prepare(o->argv0, 0, cerr, sizeof(cerr));
			if (s.cuda && rec_cuda_attach(s.cuda, o->pid, 1, cerr, sizeof(cerr)) <= 0 && cerr[0])
				note(&s, GTT_SRC_CUPTI, cerr);
			else if (!s.cuda && cerr[0])
				note(&s, GTT_SRC_CUPTI, cerr);
		}
	}
	{
		rec_perf_stats st;
		rec_perf_get_stats(s.perf, &st);
		if (st.user_only)
			note(&s, GTT_SRC_PERF, "kernel samples not permitted (kernel.perf_event_paranoid): user space only");
	}

	s.ps = rec_procstat_start(s.w, o->procstat_hz, err, sizeof(err));
	if (!s.ps)
		note(&s, GTT_SRC_PROCSTAT, err);
	rec_procstat_add(s.ps, s.target);
	python_start(&s);

	s.drain = rec_ticker_create(GTT_SRC_PERF, (uint64_t)(1e9 / (o->drain_hz > 0 ? o->drain_hz : 100)), 0, s.w);
	s.status_ns = gtt_now_ns();
	if (!s.drain) {
		say("out of memory");
		goto finish;
	}
	run_loop(&s);

finish:
	end_ns = gtt_now_ns();
	rec_perf_disable(s.perf);
	if (s.write_rc == 0 && rec_perf_drain(s.perf, 1) < 0)
		s.write_rc = GTT_EIO;
	rec_ticker_finish(s.drain, end_ns);
	rec_procstat_stop(s.ps);
	s.ps = NULL;
	python_stop(&s);
	rec_top_stop(s.top, stderr); /* the terminal back, and the classes of the whole recording */
	s.top = NULL;
	if (s.launch && s.child_alive && s.write_rc == 0) {
		/* Ctrl-C reached the command too: let it exit by itself; a signal aimed at
		 * gt-record alone, or the end of -d, is passed on (SIGTERM for -d) */
		int sig = s.end_reason == GTT_END_SIGNAL ? (int)g_signal : SIGTERM;
		if (s.end_reason != GTT_END_SIGNAL || !reap(&s, SIGINT_WAIT_NS)) {
			/* the agent flushes its last GPU records before the command is ended */
			rec_cuda_switch_off(s.cuda);
			kill(s.target, sig);
			if (!reap(&s, TERM_GRACE_NS)) {
				kill(s.target, SIGKILL);
				reap(&s, TERM_GRACE_NS);
			}
		}
	}
	if (s.launch && !s.child_alive)
		process_record(&s, GTT_PROC_EXIT, s.target, getpid(), s.wait_status, "");
	if (s.cuda) {
		rec_cuda_finish(s.cuda, s.w);
		s.cuda = NULL;
	}
	if (!o->no_archive && s.write_rc == 0) {
		if (s.tty && !o->quiet)
			fprintf(stderr, "\r\033[Kgt-record: writing the symbol archive...");
		if (rec_archive_write(s.arch, s.w, &as) < 0)
			s.write_rc = GTT_EIO;
	}
	if (s.launch)
		status = s.wait_status;
	write_end(&s, status);
	if (gtt_writer_flush(s.w) < 0 && s.write_rc == 0)
		s.write_rc = GTT_EIO;
	summary(&s, &as, end_ns);
	if (s.write_rc < 0) {
		int e = gtt_writer_errno(s.w);
		struct stat fst;
		say("writing %s: %s; the trace is readable up to its last whole chunk (%lld bytes on disk)",
		    o->output, e ? strerror(e) : gtt_strerror(s.write_rc),
		    stat(o->output, &fst) == 0 ? (long long)fst.st_size : -1ll);
		if (s.launch && s.child_alive) {
			say("the command keeps running, unrecorded");
			rec_perf_close(s.perf);
			s.perf = NULL;
			while (!reap(&s, 1000000000ull))
				;
		}
		rc = 2;
	} else if (s.py_failed) {
		say("%s", s.py_note);
		rc = 2;
	} else if (s.launch) {
		rc = exit_code(s.wait_status);
	} else if (s.end_reason == GTT_END_TARGET_EXIT) {
		say("process %d exited during the recording", (int)s.target);
		rc = 1;
	} else {
		rc = 0;
	}
	goto out;

fail_unlink:
	rc = 2;
fail_unlink_rc:
	gtt_writer_close(s.w);
	s.w = NULL;
	unlink(o->output);
out:
	if (go_fd >= 0)
		close(go_fd);
	if (exec_fd >= 0)
		close(exec_fd);
	if (s.launch && s.child_alive && s.target > 0) {
		kill(s.target, SIGKILL);
		reap(&s, TERM_GRACE_NS);
	}
	rec_procstat_stop(s.ps);
	rec_py_stop(s.py, err, sizeof(err));
	rec_top_stop(s.top, NULL);
	rec_cuda_finish(s.cuda, NULL);
	rec_perf_close(s.perf);
	rec_ticker_destroy(s.drain);
	rec_archive_destroy(s.arch);
	if (s.w && gtt_writer_close(s.w) < 0 && rc == 0)
		rc = 2;
	return rc;
}
