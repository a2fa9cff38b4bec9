/* main.c — gt-analyze: subcommand dispatch. Each command parses its own options in its own
 * file (ana_cmd_report in report.c, ana_cmd_fold in fold.c, ...); the work lives in the modules. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "model.h"
#include "gt_termsafe.h"

/* The subcommands: X(name, function, one-line help). Adding one is one line here plus its
 * function `int FN(int argc, char **argv)` in its module's file, which parses the command's
 * options (see cli.h for the shared ones). */
#define ANA_COMMANDS(X)                                                                                \
	X("report", ana_cmd_report, "summary: threads, top functions, sampler health, Python and GPU")   \
	X("fold", ana_cmd_fold, "folded stacks (\"root;...;leaf COUNT\"), the input of flame graph tools")   \
	X("export", ana_cmd_export, "the trace as folded, speedscope, Chrome/Perfetto JSON or pprof")    \
	X("import-perf", ana_cmd_import_perf, "`perf script` text to folded stacks (stackcollapse-perf.pl)") \
	X("diff", ana_cmd_diff, "per-function share changes between two profiles, with significance")   \
	X("check", ana_cmd_check, "CI gate: fail when the profile moved beyond tolerance vs a golden one") \
	X("merge", ana_cmd_merge, "several traces (processes, hosts) into one on one clock, error stated")

#define ANA_CMD_DECL(name, fn, help) int fn(int argc, char **argv);
ANA_COMMANDS(ANA_CMD_DECL)

typedef struct ana_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} ana_cmd;
#define ANA_CMD_ENTRY(name, fn, help) { name, fn, help },
static const ana_cmd commands[] = { ANA_COMMANDS(ANA_CMD_ENTRY) };

static void usage(FILE *out)
{
	fprintf(out, "usage: gt-analyze COMMAND [OPTIONS] TRACE\n\n"
	             "Analyze a groundtruth trace (.gtt) recorded by gt-record.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'gt-analyze COMMAND --help' gives each command's options.\n"
	             "exit status: 0 ok, 1 partial result or regression, 2 broken input, 64 usage error\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return GT_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("gt-analyze %s (trace format %d.%d)\n", GT_VERSION, GTT_VERSION_MAJOR, GTT_VERSION_MINOR);
		return GT_EXIT_OK;
	}
	/* every address space keeps its binaries open: allow as many files as the system lets us */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	gt_termsafe_stderr(); /* warnings quote names from the trace */
	ana_cli_catch_sigbus();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "gt-analyze: unknown command '%s' (see 'gt-analyze --help')\n", argv[1]);
	return GT_EXIT_USAGE;
}
