/* top_view.c — gt-record --top's terminal: plain ANSI on the controlling terminal (alternate
 * screen, no curses), redrawn once a second by its own thread, which also classifies the
 * queued samples and reads the keys; the whole-recording table at the end. */
#include "top.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "gt_termsafe.h"
#include "gt_util.h"
#include "procfs.h"
#include "procthread.h"

#define MAX_ROWS 4096
#define FRAME_BYTES (256 * 1024)
#define MAX_PIDS 64

typedef struct cpu_prev {
	pid_t pid, tid;
	uint64_t ns, first_ns;        /* CPU time at the last draw, and at the first sight */
	double pct;                   /* over the last interval */
	int seen;                     /* listed at the last draw */
} cpu_prev;

struct rec_top {
	rec_top_model *m;
	pid_t pid;
	double freq_hz;
	char command[200];
	int tty;
	struct termios saved;
	int have_saved;
	pthread_t thr;
	int started;
	atomic_int stop;
	int show_total;
	int quit_sent;
	uint64_t t0_ns, last_draw_ns;
	cpu_prev *cpu;
	size_t n_cpu, cap_cpu;
	rec_top_row *rows;
	char *frame;
	size_t frame_len;
};

/* ---- output buffer ---- */

static void put(rec_top *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->frame_len >= FRAME_BYTES - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->frame + t->frame_len, FRAME_BYTES - t->frame_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->frame_len += (size_t)n < FRAME_BYTES - t->frame_len ? (size_t)n : FRAME_BYTES - 1 - t->frame_len;
}

/* Thread names, the command and function names come from the target (a thread names itself):
 * gt_termsafe_scrub turns their control characters into '?' before they are shown, not the
 * view's own lines, which carry its escape sequences. */
/* One screen line: at most width columns (UTF-8 kept whole), then clear to its end. */
static void line(rec_top *t, int width, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int cols = 0;
	size_t i, cut = 0;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (i = 0; buf[i]; i++) {
		if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			if (cols == width)
				break;
			cols++;
		}
		cut = i + 1;
	}
	buf[cut] = 0;
	put(t, "%s\033[K\r\n", buf);
}

static void flush_frame(rec_top *t)
{
	size_t off = 0;

	while (off < t->frame_len) {
		ssize_t n = write(t->tty, t->frame + off, t->frame_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	t->frame_len = 0;
}

/* ---- CPU from /proc ---- */

static cpu_prev *cpu_of(rec_top *t, pid_t pid, pid_t tid)
{
	size_t i;

	for (i = 0; i < t->n_cpu; i++)
		if (t->cpu[i].tid == tid && t->cpu[i].pid == pid)
			return &t->cpu[i];
	if (GT_GROW(t->cpu, t->cap_cpu, t->n_cpu + 1) < 0)
		return NULL;
	memset(&t->cpu[t->n_cpu], 0, sizeof(cpu_prev));
	t->cpu[t->n_cpu].pid = pid;
	t->cpu[t->n_cpu].tid = tid;
	t->cpu[t->n_cpu].ns = UINT64_MAX;
	return &t->cpu[t->n_cpu++];
}

/* CPU % of every thread of the recorded processes over the last interval of dt_ns. */
static void read_cpu(rec_top *t, uint64_t dt_ns)
{
	pid_t pids[MAX_PIDS];
	size_t n_pids = rec_top_model_pids(t->m, pids, MAX_PIDS), i;
	int k, n;

	for (i = 0; i < t->n_cpu; i++)
		t->cpu[i].seen = 0;
	for (i = 0; i < n_pids && i < MAX_PIDS; i++) {
		pid_t *tids = NULL;
		n = rec_procfs_tids(pids[i], &tids);
		for (k = 0; k < n; k++) {
			cpu_prev *c = cpu_of(t, pids[i], tids[k]);
			uint64_t ns;
			if (!c || rec_pt_cpu_ns(pids[i], tids[k], &ns) < 0)
				continue;
			c->pct = c->ns != UINT64_MAX && dt_ns ? 100.0 * (double)(ns - c->ns) / (double)dt_ns : 0;
			if (c->ns == UINT64_MAX)
				c->first_ns = ns;
			c->ns = ns;
			c->seen = 1;
		}
		free(tids);
	}
}

/* ---- drawing ---- */

static int term_size(rec_top *t, int *rows)
{
	struct winsize ws;

	if (ioctl(t->tty, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		*rows = ws.ws_row > 0 ? ws.ws_row : 24;
		return ws.ws_col;
	}
	*rows = 24;
	return 80;
}

static int cmp_rows(const void *a, const void *b)
{
	const rec_top_row *x = a, *y = b;

	/* the busiest first */
	if (x->cpu_pct != y->cpu_pct)
		return x->cpu_pct > y->cpu_pct ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void pct_cols(char *out, size_t len, const rec_top_row *r)
{
	size_t k, at = 0;

	out[0] = 0;
	for (k = 0; k < REC_TOP_NCLASS && at < len; k++) {
		if (r->samples)
			at += (size_t)snprintf(out + at, len - at, " %4.0f", 100.0 * (double)r->n[k] / (double)r->samples);
		else
			at += (size_t)snprintf(out + at, len - at, "    -");
	}
}

static void draw(rec_top *t, uint64_t now, uint64_t dt_ns)
{
	int height, width = term_size(t, &height), used = 0;
	size_t n, i, shown = 0;
	rec_top_stats st;
	double secs = gt_ns_to_s(now - t->t0_ns), over = t->show_total ? secs : gt_ns_to_s(dt_ns);
	char cls[64];

	rec_top_model_stats(t->m, t->show_total, &st);
	n = rec_top_model_rows(t->m, t->show_total, t->rows, MAX_ROWS);
	if (n > MAX_ROWS)
		n = MAX_ROWS;
	/* threads that ran without samples, from /proc, get a row too */
	for (i = 0; i < t->n_cpu && n < MAX_ROWS; i++) {
		size_t k;
		double pct = t->show_total ? (secs > 0 ? 100.0 * gt_ns_to_s(t->cpu[i].ns - t->cpu[i].first_ns) / secs : 0)
		                           : t->cpu[i].pct;
		for (k = 0; k < n && !(t->rows[k].tid == (uint32_t)t->cpu[i].tid && t->rows[k].pid == (uint32_t)t->cpu[i].pid); k++)
			;
		if (k == n) {
			if (!t->cpu[i].seen)
				continue;
			memset(&t->rows[n], 0, sizeof(t->rows[n]));
			t->rows[n].pid = (uint32_t)t->cpu[i].pid;
			t->rows[n].tid = (uint32_t)t->cpu[i].tid;
			rec_procfs_comm(t->cpu[i].pid, t->cpu[i].tid, t->rows[n].name, sizeof(t->rows[n].name));
			n++;
		}
		t->rows[k].cpu_pct = pct;
	}
	qsort(t->rows, n, sizeof(*t->rows), cmp_rows);
	for (i = 0; i < n; i++) {
		gt_termsafe_scrub(t->rows[i].name);
		gt_termsafe_scrub(t->rows[i].hottest);
	}

	put(t, "\033[H");
	line(t, width, "gt-record --top  pid %d  %s", (int)t->pid, t->command);
	line(t, width, "%.0f s recorded; %s; q quits, t toggles", secs,
	     t->show_total ? "whole recording" : "last second");
	line(t, width, "samples %llu (%.0f/s)  lost %llu  throttled %llu  lag windows %llu%s",
	     (unsigned long long)st.samples, over > 0 ? (double)st.samples / over : 0.0, (unsigned long long)st.lost,
	     (unsigned long long)st.throttled, (unsigned long long)st.lag_windows,
	     st.skipped ? "  (view skipped some)" : "");
	if (!st.python)
		line(t, width, "no Python stacks (yet): every sample is \"not python\"");
	else if (t->show_total && st.gil_span_ns)
		line(t, width, "GIL held %.0f%%, %llu changes seen; Python reads: %llu failed, %llu torn",
		     100.0 * (double)st.gil_held_ns / (double)st.gil_span_ns, (unsigned long long)st.gil_changes,
		     (unsigned long long)st.py_failed, (unsigned long long)st.py_torn);
	else if (st.gil_span_ns)
		line(t, width, "GIL held %.0f%%, %llu changes seen; Python reads: %llu failed, %llu torn",
		     100.0 * (double)st.gil_held_ns / (double)st.gil_span_ns, (unsigned long long)st.gil_changes,
		     (unsigned long long)st.py_failed, (unsigned long long)st.py_torn);
	else
		line(t, width, "GIL state unknown (no GIL poll yet)");
	line(t, width, "");
	line(t, width, "\033[7m    TID NAME        CPU%% SMPL PY+G NATG NOGL WAIT NOPY  HOTTEST%s\033[0m",
	     t->show_total ? "" : " (last 1 s)");
	used = 6;
	for (i = 0; i < n; i++) {
		const rec_top_row *r = &t->rows[i];
		if (used >= height - 1)
			break;
		pct_cols(cls, sizeof(cls), r);
		line(t, width, "%7u %-10.10s %5.1f %4llu%s  %s", r->tid, r->name[0] ? r->name : "?", r->cpu_pct,
		     (unsigned long long)r->samples, cls, r->hottest);
		used++;
		shown++;
	}
	if (shown < n)
		line(t, width, "(%zu more threads)", n - shown);
	put(t, "\033[J");
	flush_frame(t);
}

/* ---- the thread ---- */

static void *view_main(void *arg)
{
	rec_top *t = arg;

	put(t, "\033[H\033[Jgt-record --top: recording pid %d, first numbers in a second...\r\n", (int)t->pid);
	flush_frame(t);
	read_cpu(t, 0);
	while (!atomic_load(&t->stop)) {
		struct pollfd p = { t->tty, POLLIN, 0 };
		uint64_t now;

		if (poll(&p, 1, 50) > 0 && (p.revents & POLLIN)) {
			char keys[32];
			ssize_t n = read(t->tty, keys, sizeof(keys)), i;
			for (i = 0; i < n; i++) {
				if ((keys[i] == 'q' || keys[i] == 'Q') && !t->quit_sent) {
					/* end the recording the way Ctrl-C aimed at gt-record alone does */
					t->quit_sent = 1;
					kill(getpid(), SIGINT);
				} else if (keys[i] == 't' || keys[i] == 'T') {
					t->show_total = !t->show_total;
					t->last_draw_ns = 0; /* redraw now (the interval goes on) */
				}
			}
		}
		rec_top_model_process(t->m);
		now = gtt_now_ns();
		if (now - t->last_draw_ns >= GT_NS_PER_SEC || t->last_draw_ns == 0) {
			uint64_t dt = t->last_draw_ns ? now - t->last_draw_ns : now - t->t0_ns;
			int new_interval = now - t->last_draw_ns >= GT_NS_PER_SEC;
			if (new_interval)
				read_cpu(t, dt);
			draw(t, now, dt);
			if (new_interval)
				rec_top_model_next_interval(t->m);
			t->last_draw_ns = now;
		}
	}
	return NULL;
}

rec_top *rec_top_start(const rec_top_opts *o, char *err, size_t errlen)
{
	rec_top *t = calloc(1, sizeof(*t));
	struct termios raw;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (t->tty < 0) {
		snprintf(err, errlen, "--top needs a terminal (/dev/tty: %s)", strerror(errno));
		free(t);
		return NULL;
	}
	t->pid = o->pid;
	t->freq_hz = o->freq_hz;
	snprintf(t->command, sizeof(t->command), "%s", o->command ? o->command : "");
	gt_termsafe_scrub(t->command);
	t->m = rec_top_model_create(o->pid, o->freq_hz);
	t->rows = calloc(MAX_ROWS, sizeof(*t->rows));
	t->frame = malloc(FRAME_BYTES);
	if (!t->m || !t->rows || !t->frame) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* keys without echo or line editing; Ctrl-C still signals */
	if (tcgetattr(t->tty, &t->saved) == 0) {
		t->have_saved = 1;
		raw = t->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(t->tty, TCSANOW, &raw);
	}
	put(t, "\033[?1049h\033[?25l");
	flush_frame(t);
	t->t0_ns = gtt_now_ns();
	if (pthread_create(&t->thr, NULL, view_main, t) != 0) {
		snprintf(err, errlen, "cannot start the --top thread: %s", strerror(errno));
		goto fail;
	}
	t->started = 1;
	return t;
fail:
	rec_top_stop(t, NULL);
	return NULL;
}

rec_top_model *rec_top_model_of(rec_top *t)
{
	return t ? t->m : NULL;
}

static int cmp_total(const void *a, const void *b)
{
	const rec_top_row *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The classes over the whole recording, in gt-analyze report's units, in 80 columns: one
 * line of numbers per thread and its hottest function under it. */
static void final_table(rec_top *t, FILE *f)
{
	size_t n = rec_top_model_rows(t->m, 1, t->rows, MAX_ROWS), i, k;
	uint64_t all[REC_TOP_NCLASS] = { 0 }, sum = 0;
	rec_top_stats st;

	rec_top_model_stats(t->m, 1, &st);
	if (n > MAX_ROWS)
		n = MAX_ROWS;
	qsort(t->rows, n, sizeof(*t->rows), cmp_total);
	for (i = 0; i < n; i++) {
		gt_termsafe_scrub(t->rows[i].name);
		gt_termsafe_scrub(t->rows[i].hottest);
	}
	fprintf(f, "gt-record --top: GIL classes over the whole recording (%llu samples%s)\n",
	        (unsigned long long)st.samples, st.skipped ? ", some not classified" : "");
	fprintf(f, "    TID NAME          SAMPLES  PY+GIL NAT+GIL  NO GIL WAITING  NOT PY\n");
	for (i = 0; i < n; i++) {
		const rec_top_row *r = &t->rows[i];
		fprintf(f, "%7u %-12.12s %8llu", r->tid, r->name[0] ? r->name : "?", (unsigned long long)r->samples);
		for (k = 0; k < REC_TOP_NCLASS; k++) {
			fprintf(f, " %6.1f%%", 100.0 * (double)r->n[k] / (double)r->samples);
			all[k] += r->n[k];
		}
		sum += r->samples;
		fprintf(f, "\n          %.70s\n", r->hottest);
	}
	if (sum) {
		fprintf(f, "%7s %-12s %8llu", "", "(all)", (unsigned long long)sum);
		for (k = 0; k < REC_TOP_NCLASS; k++)
			fprintf(f, " %6.1f%%", 100.0 * (double)all[k] / (double)sum);
		fputc('\n', f);
	}
	if (st.skipped)
		fprintf(f, "(%llu samples came faster than the view could classify them: counted, not classified)\n",
		        (unsigned long long)st.skipped);
}

void rec_top_stop(rec_top *t, FILE *f)
{
	if (!t)
		return;
	atomic_store(&t->stop, 1);
	if (t->started)
		pthread_join(t->thr, NULL);
	if (t->m)
		rec_top_model_process(t->m); /* what the last drain brought */
	if (t->tty >= 0) {
		if (t->frame) {
			put(t, "\033[?25h\033[?1049l");
			flush_frame(t);
		}
		if (t->have_saved)
			tcsetattr(t->tty, TCSANOW, &t->saved);
		close(t->tty);
	}
	if (f && t->m && t->rows)
		final_table(t, f);
	rec_top_model_destroy(t->m);
	free(t->cpu);
	free(t->rows);
	free(t->frame);
	free(t);
}
