/* test_pyreader.c — record/pyreader.c against real CPythons running tests/progs/gilmix.py:
 * stacks (names, files, lines), thread ids, GIL state, schedules; and its bad-input paths. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gtt.h"
#include "pyreader.h"
#include "testhelp.h"

static char tmpdir[] = "/tmp/gt-pyreader.XXXXXX";
static const char *gilmix = "tests/progs/gilmix.py";

/* Lines marked "# line:NAME" in gilmix.py. */
static int marked_line(const char *name)
{
	char line[512], want[64];
	FILE *f = fopen(gilmix, "r");
	int n = 0, found = -1;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "# line:%s", name);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want) && strcspn(strstr(line, want) + strlen(want), " \n") == 0) {
			found = n;
			break;
		}
	}
	fclose(f);
	return found;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", 1);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

typedef struct roles { uint32_t pyloop, native, sleeper, main; } roles;

static int read_roles(const char *path, roles *r, int wait_ms)
{
	int waited;

	memset(r, 0, sizeof(*r));
	for (waited = 0; waited < wait_ms; waited += 20) {
		FILE *f = fopen(path, "r");
		char role[32];
		unsigned tid;
		if (f) {
			while (fscanf(f, "%31s %u", role, &tid) == 2) {
				if (!strcmp(role, "pyloop")) r->pyloop = tid;
				if (!strcmp(role, "native")) r->native = tid;
				if (!strcmp(role, "sleeper")) r->sleeper = tid;
				if (!strcmp(role, "main")) r->main = tid;
			}
			fclose(f);
			return r->pyloop && r->native && r->sleeper && r->main ? 0 : -1;
		}
		sleep_ms(20);
	}
	return -1;
}

#define MAX_CODES 4096
typedef struct code { uint64_t id; char name[128], qualname[256], file[512]; } code;
typedef struct role_stats {
	uint64_t n, held, torn, idle, leaf_ok, line_ok, caller_ok;
	char wrong[96]; /* the last read's leaf that was not the right one: "file:name" */
} role_stats;

typedef struct trace_facts {
	code codes[MAX_CODES];
	int n_codes;
	role_stats st[4];
	uint64_t n_gil, gil_pyloop, ticks_whole_stack, ticks_whole_gil, stack_done;
	int meta_version;
	uint64_t notes;
} trace_facts;

static const code *find_code(const trace_facts *t, uint64_t id)
{
	int i;

	for (i = 0; i < t->n_codes; i++)
		if (t->codes[i].id == id)
			return &t->codes[i];
	return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* What each role's leaf Python frame must be: qualname and allowed lines. */
static void check_stack(trace_facts *t, const gtt_py_stack *s, int role, int lines[4][3])
{
	static const char *leaf_name[4] = { "py_inner", "native_work", "Sleeper.run", "main" };
	role_stats *st = &t->st[role];
	const code *c;
	int k;

	st->n++;
	if (s->flags & GTT_PYSTACK_HOLDS_GIL) st->held++;
	if (s->flags & GTT_PYSTACK_TORN) st->torn++;
	if (s->flags & GTT_PYSTACK_IDLE) st->idle++;
	if (s->n_frames == 0)
		return;
	c = find_code(t, s->frames[0].code_id);
	/* The sleeper between two sleeps checks its Event: a read taken there (more of them on a
	 * loaded machine, where it waits for the GIL inside is_set) is right when its caller is
	 * the sleeper's loop. */
	if (c && role == 2 && ends_with(c->file, "threading.py") && strcmp(c->name, "is_set") == 0 && s->n_frames > 1) {
		const code *caller = find_code(t, s->frames[1].code_id);
		if (caller && ends_with(caller->file, "gilmix.py") && strcmp(caller->name, "run") == 0) {
			st->leaf_ok++;
			st->line_ok++;
		}
		return;
	}
	/* 3.10 has no co_qualname: the reader gives co_name there */
	if (!c || !ends_with(c->file, "gilmix.py") ||
	    (strcmp(c->qualname, leaf_name[role]) != 0 && !(role == 2 && strcmp(c->qualname, "run") == 0))) {
		snprintf(st->wrong, sizeof(st->wrong), "%s:%s", c ? c->file : "?", c ? c->qualname : "?");
		return;
	}
	st->leaf_ok++;
	for (k = 0; k < 3; k++)
		if (lines[role][k] > 0 && s->frames[0].line == lines[role][k])
			st->line_ok++;
	if (role == 0 && s->n_frames > 1) {
		const code *caller = find_code(t, s->frames[1].code_id);
		if (caller && !strcmp(caller->name, "py_spin") && s->frames[1].line == marked_line("spin_call"))
			st->caller_ok++;
	}
}

static int scan_trace(const char *path, const roles *r, trace_facts *t)
{
	int err = 0, rc;
	gtt_reader *rd = gtt_reader_open(path, &err);
	gtt_record rec;
	int lines[4][3] = {
		{ marked_line("inner_loop"), marked_line("inner_body"), -1 },
		{ marked_line("native_zlib"), marked_line("native_hash"), -1 },
		{ marked_line("sleep"), -1, -1 },
		{ marked_line("main_sleep"), -1, -1 },
	};

	memset(t, 0, sizeof(*t));
	if (!rd)
		return -1;
	while ((rc = gtt_reader_next(rd, &rec)) > 0) {
		if (rec.tag == GTT_REC_PY_CODE && t->n_codes < MAX_CODES) {
			code *c = &t->codes[t->n_codes++];
			c->id = rec.u.py_code.code_id;
			snprintf(c->name, sizeof(c->name), "%s", rec.u.py_code.name);
			snprintf(c->qualname, sizeof(c->qualname), "%s", rec.u.py_code.qualname);
			snprintf(c->file, sizeof(c->file), "%s", rec.u.py_code.filename);
		} else if (rec.tag == GTT_REC_PY_STACK) {
			uint32_t tid = rec.u.py_stack.tid;
			int role = tid == r->pyloop ? 0 : tid == r->native ? 1 : tid == r->sleeper ? 2 : tid == r->main ? 3 : -1;
			if (role >= 0)
				check_stack(t, &rec.u.py_stack, role, lines);
		} else if (rec.tag == GTT_REC_GIL) {
			t->n_gil++;
			if (rec.u.gil.holder_tid == r->pyloop)
				t->gil_pyloop++;
		} else if (rec.tag == GTT_REC_TICKS && (rec.u.ticks.flags & GTT_TICKS_WHOLE)) {
			if (rec.u.ticks.source == GTT_SRC_PYSTACK) {
				t->ticks_whole_stack++;
				t->stack_done = rec.u.ticks.done;
			}
			if (rec.u.ticks.source == GTT_SRC_GIL)
				t->ticks_whole_gil++;
		} else if (rec.tag == GTT_REC_META && !strcmp(rec.u.meta.key, "python_version")) {
			t->meta_version = 1;
		} else if (rec.tag == GTT_REC_HEALTH && rec.u.health.kind == GTT_HEALTH_NOTE) {
			t->notes++;
		}
	}
	gtt_reader_close(rd);
	return rc < 0 ? -1 : 0;
}

static void one_python(const char *python)
{
	char ready[512], trace[512], err[256] = "", status[512];
	char *argv[] = { (char *)python, (char *)gilmix, "4", ready, NULL };
	rec_py_result res;
	roles r;
	trace_facts *t = calloc(1, sizeof(*t));
	rec_py_opts o = { .stack_hz = 200, .gil_hz = 1000 };
	gtt_writer *w;
	rec_py *p;
	pid_t pid;
	int rc, wst = 0, i;
	static const char *role_name[4] = { "pyloop", "native", "sleeper", "main" };

	snprintf(ready, sizeof(ready), "%s/ready", tmpdir);
	snprintf(trace, sizeof(trace), "%s/py.gtt", tmpdir);
	unlink(ready);
	pid = spawn(argv);
	if (pid < 0 || read_roles(ready, &r, 8000) < 0) {
		th_check(0, "%s: gilmix.py started and reported its threads", python);
		goto out;
	}
	w = gtt_writer_open(trace, &rc);
	p = rec_py_start(pid, w, &o, err, sizeof(err));
	th_check(p != NULL, "%s: reader starts (%s)", python, err);
	sleep_ms(1000);
	rec_py_status(p, status, sizeof(status));
	rec_py_stop(p, &res);
	gtt_writer_close(w);
	kill(pid, SIGTERM);
	waitpid(pid, &wst, 0);
	th_check(res.state == REC_PY_READING && !res.target_gone && strstr(res.text, " stacks ("),
	         "%s: reader stops cleanly, state reading (%s)", python, res.text);
	if (scan_trace(trace, &r, t) < 0) {
		th_check(0, "%s: trace reads back", python);
		goto out;
	}
	printf("# %s: %s\n", python, status);
	for (i = 0; i < 4; i++)
		printf("#   %-8s stacks %" PRIu64 " held %" PRIu64 " torn %" PRIu64 " idle %" PRIu64
		       " leaf %" PRIu64 " line %" PRIu64 " caller %" PRIu64 "%s%s\n", role_name[i], t->st[i].n,
		       t->st[i].held, t->st[i].torn, t->st[i].idle, t->st[i].leaf_ok, t->st[i].line_ok,
		       t->st[i].caller_ok, t->st[i].wrong[0] ? " last wrong leaf " : "", t->st[i].wrong);
	/* 1 s at 200 Hz is 200 reads; a loaded 2-core box may lose some, never most */
	th_check(t->st[0].n >= 100 && t->st[1].n >= 100 && t->st[3].n >= 100,
	         "%s: every thread read at the stack rate (%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")",
	         python, t->st[0].n, t->st[1].n, t->st[2].n, t->st[3].n);
	for (i = 0; i < 4; i++) {
		role_stats *s = &t->st[i];
		th_check(s->n && s->leaf_ok * 100 >= s->n * 90,
		         "%s: %s thread's leaf frame is the right function in >= 90%% of reads (%" PRIu64 "/%" PRIu64 ")",
		         python, role_name[i], s->leaf_ok, s->n);
		th_check(s->leaf_ok && s->line_ok * 100 >= s->leaf_ok * 90,
		         "%s: %s thread's leaf line is a marked line in >= 90%% of reads (%" PRIu64 "/%" PRIu64 ")",
		         python, role_name[i], s->line_ok, s->leaf_ok);
	}
	th_check(t->st[0].leaf_ok && t->st[0].caller_ok * 100 >= t->st[0].leaf_ok * 90,
	         "%s: py_inner's caller is py_spin at the call line (%" PRIu64 "/%" PRIu64 ")", python,
	         t->st[0].caller_ok, t->st[0].leaf_ok);
	th_check(t->st[0].held * 100 >= t->st[0].n * 50 && t->st[1].held * 100 <= t->st[1].n * 30 &&
	         t->st[2].held * 100 <= t->st[2].n * 10,
	         "%s: GIL held at read time: pyloop %" PRIu64 "/%" PRIu64 ", native %" PRIu64 "/%" PRIu64
	         ", sleeper %" PRIu64 "/%" PRIu64, python, t->st[0].held, t->st[0].n, t->st[1].held,
	         t->st[1].n, t->st[2].held, t->st[2].n);
	th_check(t->n_gil >= 2 && t->gil_pyloop >= 1, "%s: GIL records name the pyloop thread (%" PRIu64 " of %" PRIu64 ")",
	         python, t->gil_pyloop, t->n_gil);
	th_check(t->ticks_whole_stack == 1 && t->ticks_whole_gil == 1 && t->meta_version,
	         "%s: whole-recording TICKS for both loops and the python_version meta", python);
out:
	free(t);
}

/* Interpreters on this machine: pyenv's 3.10+ and the system's. */
static int find_pythons(char paths[][512], int cap)
{
	const char *root = getenv("PYENV_ROOT");
	char pat[600];
	glob_t g;
	int n = 0;
	size_t i;

	snprintf(pat, sizeof(pat), "%s/versions/3.1[0-9]*/bin/python3.1[0-9]", root ? root : "/root/.pyenv");
	if (glob(pat, 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc && n < cap; i++)
			snprintf(paths[n++], 512, "%s", g.gl_pathv[i]);
		globfree(&g);
	}
	if (glob("/usr/bin/python3.1[0-9]", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc && n < cap; i++)
			snprintf(paths[n++], 512, "%s", g.gl_pathv[i]);
		globfree(&g);
	}
	return n;
}

static void not_python(void)
{
	char *argv[] = { "/bin/sleep", "5", NULL };
	char err[256] = "", status[256];
	rec_py_opts o = { .stack_hz = 100, .gil_hz = 1000 };
	pid_t pid = spawn(argv);
	rec_py *p = rec_py_start(pid, NULL, &o, err, sizeof(err));
	rec_py_result res;

	sleep_ms(300);
	rec_py_status(p, status, sizeof(status));
	th_check(strstr(status, "looking for CPython") != NULL, "/bin/sleep: still looking while it runs (%s)", status);
	rec_py_stop(p, &res);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	th_check(res.state == REC_PY_NOT_FOUND && !res.target_gone && strstr(res.text, "no CPython interpreter found"),
	         "/bin/sleep: stop says not found (%d: %s)", (int)res.state, res.text);
	/* the target exits while the reader looks: not found, and gone */
	pid = spawn(argv);
	p = rec_py_start(pid, NULL, &o, err, sizeof(err));
	sleep_ms(100);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	sleep_ms(400);
	rec_py_stop(p, &res);
	th_check(res.state == REC_PY_NOT_FOUND && res.target_gone && strstr(res.text, "before it exited"),
	         "/bin/sleep killed: stop says not found, target gone (%d: %s)", (int)res.state, res.text);
	rec_py_stop(NULL, &res);
	th_check(res.state == REC_PY_LOOKING && res.text[0] == 0, "stop(NULL) zeroes the result");
}

/* The target exits while being read: the reader notices, keeps what it read, no crash. */
static void exits_mid_read(const char *python)
{
	char ready[512], trace[512], err[256] = "", status[512];
	char *argv[] = { (char *)python, (char *)gilmix, "0.4", ready, NULL };
	rec_py_opts o = { .stack_hz = 200, .gil_hz = 1000 };
	rec_py_result res;
	roles r;
	gtt_writer *w;
	rec_py *p;
	pid_t pid;
	int rc;

	snprintf(ready, sizeof(ready), "%s/ready2", tmpdir);
	snprintf(trace, sizeof(trace), "%s/exit.gtt", tmpdir);
	pid = spawn(argv);
	if (read_roles(ready, &r, 8000) < 0) {
		th_check(0, "gilmix.py started");
		return;
	}
	w = gtt_writer_open(trace, &rc);
	p = rec_py_start(pid, w, &o, err, sizeof(err));
	waitpid(pid, NULL, 0);
	sleep_ms(200);
	rec_py_status(p, status, sizeof(status));
	rec_py_stop(p, &res);
	gtt_writer_close(w);
	th_check(strstr(status, "target exited") && strstr(status, "stacks") && res.state == REC_PY_READING &&
	         res.target_gone, "target exits mid-read: status '%s', state %d, gone %d", status, (int)res.state,
	         res.target_gone);
}

int main(void)
{
	char pythons[16][512];
	int n, i;
	struct stat st;

	if (stat(gilmix, &st) < 0) {
		printf("SKIP: %s not found (run from the repository root)\n", gilmix);
		return 0;
	}
	if (!mkdtemp(tmpdir)) {
		th_check(0, "mkdtemp");
		return th_report();
	}
	n = find_pythons(pythons, 16);
	if (n == 0)
		printf("SKIP: no CPython 3.10+ on this machine\n");
	for (i = 0; i < n; i++)
		one_python(pythons[i]);
	not_python();
	if (n > 0)
		exits_mid_read(pythons[0]);
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return th_report();
}
