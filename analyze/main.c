/* main.c — gt-analyze: option parsing and subcommand dispatch; the work lives in the modules. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "fold.h"
#include "model.h"
#include "report.h"

/* The subcommands: X(name, function, one-line help). Adding one is one line here plus its
 * function `int FN(int argc, char **argv)` in its own file (see cli.h for shared helpers). */
#define ANA_COMMANDS(X)                                                                                \
	X("report", ana_cmd_report, "summary: threads, top functions, sampler health, Python and GPU")   \
	X("fold", ana_cmd_fold, "folded stacks (\"root;...;leaf COUNT\"), the input of flame graph tools")   \
	X("export", ana_cmd_export, "the trace as folded, speedscope, Chrome/Perfetto JSON or pprof")    \
	X("import-perf", ana_cmd_import_perf, "`perf script` text to folded stacks (stackcollapse-perf.pl)") \
	X("diff", ana_cmd_diff, "per-function share changes between two profiles, with significance")   \
	X("check", ana_cmd_check, "CI gate: fail when the profile moved beyond tolerance vs a golden one")

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

/* ---- report ---- */

static void report_usage(FILE *out)
{
	fprintf(out, "usage: gt-analyze report [OPTIONS] TRACE\n\n"
	             "Recording summary, per-thread CPU (from samples, /proc and context switches), top\n"
	             "self and total functions, sampler health (intended vs received samples, lost,\n"
	             "throttled, lateness, lag windows), then Python/GIL and GPU sections.\n\n"
	             "  --top N          rows in the function tables (default 20)\n" ANA_CLI_OPTS_HELP
	             "  -h, --help       this help\n");
}

int ana_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		ANA_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	ana_opts o;
	ana_report_opts ro;
	ana_opts_init(&o);
	ana_report_opts_init(&ro);
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hn:", longopts, NULL)) != -1) {
		if (ana_cli_opt(c, optarg, &o))
			continue;
		switch (c) {
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v <= 0 || v > 100000)
				return ana_cli_usage_error("report", "--top wants a positive number, not '%s'", optarg);
			ro.top_n = (int)v;
			break;
		}
		case 'h':
			report_usage(stdout);
			return GT_EXIT_OK;
		default:
			return ana_cli_usage_error("report", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ana_cli_usage_error("report", optind == argc ? "missing TRACE" : "one TRACE only");
	ana_model *m = ana_cli_load(argv[optind], &o, &rc);
	if (!m)
		return rc;
	if (ana_report(m, &ro, stdout) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "gt-analyze: writing the report failed: %s\n", strerror(errno));
		rc = GT_EXIT_BROKEN;
	}
	ana_model_free(m);
	return rc;
}

/* ---- fold ---- */

static void fold_usage(FILE *out)
{
	fprintf(out,
	        "usage: gt-analyze fold [OPTIONS] TRACE\n\n"
	        "Folded stacks, one \"root;...;leaf COUNT\" line per distinct stack, sorted: the input of\n"
	        "FlameGraph's flamegraph.pl, speedscope and gt-render.\n\n"
	        "  --threads        start each stack with \"PROCESS PID;THREAD TID\"\n"
	        "  --gil WHICH      only samples of these GIL classes: " ANA_GIL_WORDS "\n"
	        "                   (held = python,native-gil; released = nogil,wait; any = every sample)\n"
	        "  --python-only    keep only Python frames\n"
	        "  --annotate       suffix leaf frames with the sample's class (_[py] _[gil] _[nogil] _[wait])\n"
	        "  --tid LIST       only these threads (comma-separated tids)\n"
	        "  --from S, --to S only samples in this window, seconds from the start of the recording\n"
	        "  -o FILE          write to FILE instead of stdout\n" ANA_CLI_OPTS_HELP
	        "  -h, --help       this help\n");
}

int ana_cmd_fold(int argc, char **argv)
{
	enum { O_THREADS = 1, O_GIL, O_PYONLY, O_TID, O_FROM, O_TO, O_ANNOTATE };
	static const struct option longopts[] = {
		{ "threads", no_argument, NULL, O_THREADS },
		{ "gil", required_argument, NULL, O_GIL },
		{ "python-only", no_argument, NULL, O_PYONLY },
		{ "annotate", no_argument, NULL, O_ANNOTATE },
		{ "tid", required_argument, NULL, O_TID },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "help", no_argument, NULL, 'h' },
		ANA_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	ana_opts o;
	ana_fold_opts fo;
	ana_opts_init(&o);
	ana_fold_opts_init(&fo);
	const char *outpath = NULL;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		if (ana_cli_opt(c, optarg, &o))
			continue;
		switch (c) {
		case O_THREADS: fo.threads = 1; break;
		case O_PYONLY: fo.python_only = o.python_only = 1; break;
		case O_ANNOTATE: fo.annotate_class = 1; break;
		case O_GIL:
			if ((fo.gil = ana_gil_parse(optarg)) < -1)
				return ana_cli_usage_error("fold", "--gil wants " ANA_GIL_WORDS ", not '%s'", optarg);
			break;
		case O_TID:
			if (!optarg[0] || strspn(optarg, "0123456789,") != strlen(optarg) || strstr(optarg, ",,") ||
			    optarg[0] == ',' || optarg[strlen(optarg) - 1] == ',')
				return ana_cli_usage_error("fold", "--tid wants a comma-separated list of thread ids, not '%s'",
				                           optarg);
			fo.tid_filter = optarg;
			break;
		case O_FROM:
		case O_TO: {
			uint64_t ns;
			if (ana_cli_seconds(optarg, &ns) < 0)
				return ana_cli_usage_error("fold", "--%s wants seconds (e.g. 1.5), not '%s'",
				                           c == O_FROM ? "from" : "to", optarg);
			if (c == O_FROM)
				fo.from_ns = ns;
			else
				fo.to_ns = ns ? ns : 1;
			break;
		}
		case 'o': outpath = optarg; break;
		case 'h':
			fold_usage(stdout);
			return GT_EXIT_OK;
		default:
			return ana_cli_usage_error("fold", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ana_cli_usage_error("fold", optind == argc ? "missing TRACE" : "one TRACE only");
	if (fo.to_ns && fo.to_ns <= fo.from_ns)
		return ana_cli_usage_error("fold", "--to must be after --from");
	ana_model *m = ana_cli_load(argv[optind], &o, &rc);
	if (!m)
		return rc;
	ana_folded fd;
	FILE *out = stdout;
	if (outpath && !(out = fopen(outpath, "w"))) {
		fprintf(stderr, "gt-analyze: %s: %s\n", outpath, strerror(errno));
		ana_model_free(m);
		return GT_EXIT_BROKEN;
	}
	if (ana_fold(m, &fo, &fd) < 0) {
		fprintf(stderr, "gt-analyze: out of memory while folding\n");
		rc = GT_EXIT_BROKEN;
	} else {
		if (ana_fold_write(&fd, out) < 0 || fflush(out) != 0) {
			fprintf(stderr, "gt-analyze: writing folded stacks failed: %s\n", strerror(errno));
			rc = GT_EXIT_BROKEN;
		}
		ana_folded_free(&fd);
	}
	if (out != stdout && fclose(out) != 0 && rc != GT_EXIT_BROKEN) {
		fprintf(stderr, "gt-analyze: %s: %s\n", outpath, strerror(errno));
		rc = GT_EXIT_BROKEN;
	}
	ana_model_free(m);
	return rc;
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "gt-analyze: unknown command '%s' (see 'gt-analyze --help')\n", argv[1]);
	return GT_EXIT_USAGE;
}
