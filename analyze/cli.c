/* cli.c — shared pieces of the gt-analyze subcommands: trace loading with messages, common
 * options, usage errors. The one place in analyze/ besides main.c that prints. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"

/* --from S / --to S into the loader's window. */
static int window_opt(const char *cmd, int opt, const char *arg, ana_opts *o)
{
	uint64_t ns;
	const char *name = opt == ANA_CLI_OPT_FROM ? "from" : "to";
	if (ana_cli_seconds(arg, &ns) < 0) {
		ana_cli_usage_error(cmd, "--%s wants seconds (e.g. 1.5), not '%s'", name, arg);
		return -1;
	}
	if (opt == ANA_CLI_OPT_FROM) {
		o->has_from = 1;
		o->from_ns = ns;
	} else {
		o->has_to = 1;
		o->to_ns = ns;
	}
	if (o->has_to && o->to_ns <= (o->has_from ? o->from_ns : 0)) {
		ana_cli_usage_error(cmd, "--to must be after --from");
		return -1;
	}
	return 1;
}

int ana_cli_opt(const char *cmd, int opt, const char *arg, ana_opts *o)
{
	switch (opt) {
	case ANA_CLI_OPT_FROM:
	case ANA_CLI_OPT_TO: return window_opt(cmd, opt, arg, o);
	case ANA_CLI_OPT_SYMFS: o->symfs = arg; return 1;
	case ANA_CLI_OPT_NO_ARCHIVE: o->no_archive = 1; return 1;
	case ANA_CLI_OPT_NO_KERNEL: o->kernel = 0; return 1;
	case ANA_CLI_OPT_SKIP_CORRUPT: o->skip_corrupt = 1; return 1;
	case ANA_CLI_OPT_PYTHON_FRAMES:
		if (ana_cli_python_frames(arg, &o->python_frames) < 0) {
			ana_cli_usage_error(cmd, "--python-frames %s: expected function or line (or auto)", arg);
			return -1;
		}
		return 1;
	}
	return 0;
}

int ana_cli_python_frames(const char *arg, int *mode)
{
	if (strcmp(arg, "function") == 0)
		*mode = ANA_PYFRAMES_FUNCTION;
	else if (strcmp(arg, "line") == 0)
		*mode = ANA_PYFRAMES_LINE;
	else if (strcmp(arg, "auto") == 0)
		*mode = ANA_PYFRAMES_AUTO;
	else
		return -1;
	return 0;
}

ana_model *ana_cli_load(const char *path, ana_opts *o, int *rc)
{
	ana_model *m = ana_cli_load_quiet(path, o, rc);
	if (m)
		ana_cli_warnings(m);
	return m;
}

ana_model *ana_cli_load_quiet(const char *path, ana_opts *o, int *rc)
{
	char err[1024];
	if (o->python_frames < 0) { /* ana_cli_opt said why */
		*rc = GT_EXIT_USAGE;
		return NULL;
	}
	o->progress = isatty(STDERR_FILENO);
	ana_model *m = ana_model_load(path, o, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "gt-analyze: %s\n", err);
		*rc = GT_EXIT_BROKEN;
		return NULL;
	}
	/* the analysis goes on, but the status says it is partial */
	*rc = m->end_mismatch ? GT_EXIT_PARTIAL : GT_EXIT_OK;
	return m;
}

void ana_cli_warnings(const ana_model *m)
{
	size_t n;
	const char *const *w = ana_model_warnings(m, &n);
	/* a few lines, not a flood: a trace of a big process can miss symbols for many binaries */
	for (size_t i = 0; i < n && i < 8; i++)
		fprintf(stderr, "gt-analyze: warning: %s\n", w[i]);
	if (n > 8)
		fprintf(stderr, "gt-analyze: warning: %zu more warnings\n", n - 8);
}

/* A mapped file that shrinks under the reader (the trace, or a binary mapped for its symbols,
 * truncated or rewritten in place by another program) faults with SIGBUS on the first page past
 * its new end: say so in one line and exit 2 instead of dying of the signal. */
static void on_sigbus(int sig)
{
	static const char msg[] = ": a file being read shrank while it was read (the trace or a binary "
	                          "read for symbols, truncated or rewritten in place by another program?); "
	                          "stopped (output files are not put in place)\n";
	const char *prog = program_invocation_short_name;
	(void)sig;
	ana_out_signal_cleanup();
	if (write(STDERR_FILENO, prog, strlen(prog)) < 0 || write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(GT_EXIT_BROKEN);
	_exit(GT_EXIT_BROKEN);
}

void ana_cli_catch_sigbus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

int ana_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gt-analyze %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'gt-analyze %s --help')\n", cmd);
	return GT_EXIT_USAGE;
}

int ana_cli_seconds(const char *s, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e9) /* at most 31 years */
		return -1;
	*ns = gt_s_to_ns(v);
	return 0;
}
