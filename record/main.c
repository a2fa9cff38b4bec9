/* main.c — gt-record's command line: parses options into rec_opts; session.c does the work.
 * Helpers return 0 or a negative errno (record/'s rule, rec_err.h); main returns GT_EXIT_*. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "dump.h"
#include "gt_util.h"
#include "session.h"

/* the highest -F with DWARF stack copies (main() says why) */
#define REC_DWARF_MAX_HZ 20000
#define REC_DWARF_MAX_HZ_STR "20000"

#ifndef GT_VERSION
#define GT_VERSION "0"
#endif

#define MAX_DURATION_S 1e9 /* -d: about 30 years, and still a valid ns count */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gt-record [options] -- COMMAND [ARGS...]   record a command (and its threads and children)\n"
	        "       gt-record [options] -p PID                 attach to a running process\n"
	        "       gt-record --prepare -- COMMAND [ARGS...]   run COMMAND with the CUDA agent dormant, for a later -p\n"
	        "       gt-record --dump -p PID [--children] [--json | -o FILE]   what every thread does now\n"
	        "\n"
	        "options:\n"
	        "  -o, --output FILE        trace file (default gt.gtt; created 0600; an existing FILE is\n"
	        "                           kept as FILE.old; never written through a symbolic link)\n"
	        "  -F, --freq HZ            samples per second of on-CPU time, per thread (default 99; at\n"
        "                           most 100000, and " REC_DWARF_MAX_HZ_STR " with --call-graph dwarf)\n"
	        "  -d, --duration SECONDS   stop after this long (launch mode: the command gets SIGTERM)\n"
	        "  -p, --pid PID            attach to a running process; Ctrl-C or -d ends the recording\n"
	        "  --call-graph fp|dwarf[,BYTES]\n"
	        "                           fp: frame-pointer callchains; dwarf: registers + a copy of BYTES\n"
	        "                           of user stack (default 8192) unwound offline, and the fp chain\n"
	        "                           for callers above the copy (default: dwarf)\n"
	        "  --scope process|system   system: one event per CPU for every task, keeping only the\n"
	        "                           target's process tree (no cost per context switch; needs root\n"
	        "                           or perf_event_paranoid <= 0); process: events on the target's\n"
	        "                           tasks (default: system when permitted, else process, with a note)\n"
	        "  --switch-events=auto[,RATE]|on|off\n"
	        "                           context-switch records (on/off-CPU time, the timeline's gaps):\n"
	        "                           auto (default): all of them while the tree switches at most\n"
	        "                           RATE times a second per CPU it keeps busy (default %u), else\n"
	        "                           0.2 s of every 4 s (on-CPU time then from /proc); on: every\n"
	        "                           switch, whatever it costs; off: none\n"
	        "  --no-stack-copy          keep no bytes of thread stacks in the trace (they can hold\n"
	        "                           secrets): frame-pointer callchains only, as --call-graph fp\n"
	        "  --no-archive             do not embed the symbols of the binaries that samples hit\n"
	        "  --python[=auto|on|off]   read CPython stacks and GIL state (default auto; on: fail if none)\n"
	        "  --no-cuda                do not inject the CUDA agent\n"
	        "  --dump                   print each thread's state, GIL state and Python + native stack now\n"
	        "                           (each thread stopped alone, for microseconds; see docs/DUMP.md);\n"
	        "                           with -o FILE: a one-snapshot trace for gt-analyze instead\n"
	        "  --children               --dump: also every descendant process\n"
	        "  --json                   --dump: JSON on stdout\n"
	        "  --all-frames             --dump: do not fold interpreter frames between Python frames\n"
	        "  --top                    while recording, a live per-thread view on the terminal: CPU %%,\n"
	        "                           GIL classes, hottest function, lost samples (q quits, t: totals)\n"
	        "  --cuda-stacks=on|off     stacks at sampled CUDA API calls (default on; docs/CUDA.md)\n"
	        "\n"
	        "capture control (docs/RECORD.md, \"Capture\"; outside capture the events are off):\n"
	        "  --delay SECONDS          start sampling SECONDS after the recording starts (perf -D,\n"
	        "                           nsys --delay); with --capture-range, the range waits for it\n"
	        "  --capture-range=signal   sample only between SIGUSR1 (start) and SIGUSR2 (stop) sent to\n"
	        "                           gt-record; repeatable\n"
	        "  --capture-range=nvtx:NAME\n"
	        "                           sample only inside NVTX ranges named NAME (needs the CUDA agent;\n"
	        "                           CPU sampling follows the ranges ~0.1-1 s late, see the docs)\n"
	        "  --ring SECONDS           flight recorder: keep only the last SECONDS (segments on disk:\n"
	        "                           -o FILE holds the last complete window if gt-record is killed);\n"
	        "                           the window is written to FILE at the end, and to FILE-stem.N.gtt\n"
	        "                           on each SIGUSR2 while recording goes on\n"
	        "  --max-size SIZE          stop recording cleanly when the trace reaches SIZE (K, M, G\n"
	        "                           suffixes: powers of 1024); a launched command runs on\n"
	        "  -q, --quiet              no status line, no summary\n"
	        "  -h, --help               this text\n"
	        "  -V, --version            print the version\n"
	        "\n"
	        "Exit status: the command's (128+N when killed by signal N); 127 command not found;\n"
	        "2 fatal (perf_event_open not permitted, no such PID, write error); 64 usage;\n"
	        "attach mode: 0, or 1 when the process exited during the recording.\n"
	        "See docs/RECORD.md.\n", REC_SWGATE_LIMIT);
}

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "gt-record: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see gt-record --help)\n");
	return GT_EXIT_USAGE;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_call_graph(const char *s, rec_opts *o)
{
	if (strcmp(s, "fp") == 0) {
		o->dwarf = 0;
		return 0;
	}
	if (strncmp(s, "dwarf", 5) == 0 && (s[5] == 0 || s[5] == ',')) {
		o->dwarf = 1;
		if (s[5] == ',') {
			double b;
			if (parse_double(s + 6, 8, 65528, &b) < 0 || b != (double)(uint32_t)b)
				return -EINVAL;
			o->stack_bytes = ((uint32_t)b + 7) & ~7u;
		}
		return 0;
	}
	return -EINVAL;
}

/* bad() for a helper that must return -EINVAL. */
static int refuse(const char *why)
{
	bad("%s", why);
	return -EINVAL;
}

/* Capture options that cannot go together, each refused with one line. 0 or -EINVAL. */
static int capture_conflict(const rec_opts *o, int want_dump)
{
	const rec_capture_opts *c = &o->capture;
	int any = c->delay_s > 0 || c->range != REC_CAP_ALWAYS || c->ring_s > 0 || c->max_size;

	if (any && (o->prepare || want_dump))
		return refuse("--delay, --capture-range, --ring and --max-size go with a recording (not --prepare "
		              "or --dump)");
	if (c->ring_s > 0 && c->range == REC_CAP_SIGNAL)
		return refuse("--ring and --capture-range=signal both use SIGUSR2 (for the ring it writes the "
		              "window): choose one");
	if (c->ring_s > 0 && c->max_size)
		return refuse("--ring and --max-size exclude each other (the ring's size follows its SECONDS)");
	if (c->range == REC_CAP_NVTX && o->no_cuda)
		return refuse("--capture-range=nvtx needs the CUDA agent, which --no-cuda leaves out");
	if (c->delay_s > 0 && o->duration_s > 0 && o->duration_s <= c->delay_s)
		return refuse("-d ends the recording before --delay starts sampling");
	return 0;
}

/* --switch-events=auto[,RATE]|on|off into o. 0, or -1 when malformed. */
static int parse_switch_events(const char *arg, rec_opts *o)
{
	double v;
	if (strcmp(arg, "on") == 0) {
		o->switches = REC_SW_ON;
	} else if (strcmp(arg, "off") == 0) {
		o->switches = REC_SW_OFF;
	} else if (strcmp(arg, "auto") == 0) {
		o->switches = REC_SW_AUTO;
	} else if (strncmp(arg, "auto,", 5) == 0 && parse_double(arg + 5, 1, 1e8, &v) == 0 && v == (double)(uint64_t)v) {
		o->switches = REC_SW_AUTO;
		o->switch_limit = (uint64_t)v;
	} else {
		return -1;
	}
	return 0;
}

/* The command line as parsed, before the checks that look at options together. */
typedef struct {
	rec_opts o;
	rec_dump_opts dump;
	char **argv;
	int want_dump, output_given, no_stack_copy, asked_dwarf;
} cli;

enum { OPT_CALL_GRAPH = 256, OPT_NO_ARCHIVE, OPT_PYTHON, OPT_NO_CUDA, OPT_PREPARE, OPT_DUMP, OPT_CHILDREN,
       OPT_JSON, OPT_ALL_FRAMES, OPT_TOP, OPT_CUDA_STACKS, OPT_NO_STACK_COPY, OPT_SCOPE, OPT_DELAY,
       OPT_CAPTURE_RANGE, OPT_RING, OPT_MAX_SIZE, OPT_SWITCH_EVENTS };

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "freq", required_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "pid", required_argument, NULL, 'p' },
	{ "call-graph", required_argument, NULL, OPT_CALL_GRAPH },
	{ "no-stack-copy", no_argument, NULL, OPT_NO_STACK_COPY },
	{ "scope", required_argument, NULL, OPT_SCOPE },
	{ "switch-events", required_argument, NULL, OPT_SWITCH_EVENTS },
	{ "no-archive", no_argument, NULL, OPT_NO_ARCHIVE },
	{ "python", optional_argument, NULL, OPT_PYTHON },
	{ "no-cuda", no_argument, NULL, OPT_NO_CUDA },
	{ "cuda-stacks", required_argument, NULL, OPT_CUDA_STACKS },
	{ "prepare", no_argument, NULL, OPT_PREPARE },
	{ "dump", no_argument, NULL, OPT_DUMP },
	{ "children", no_argument, NULL, OPT_CHILDREN },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "all-frames", no_argument, NULL, OPT_ALL_FRAMES },
	{ "top", no_argument, NULL, OPT_TOP },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "capture-range", required_argument, NULL, OPT_CAPTURE_RANGE },
	{ "ring", required_argument, NULL, OPT_RING },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* One option c (getopt_long's answer) into k. -1 to go on, or the exit code (help, version,
 * usage errors said with one line). */
static int take_opt(int c, cli *k)
{
	double v;

	switch (c) {
	case 'o':
		if (!optarg[0])
			return bad("%s-o needs a file name", "");
		k->o.output = optarg;
		k->output_given = 1;
		break;
	case 'F':
		if (parse_double(optarg, 0.001, 100000, &v) < 0)
			return bad("-F %s: not a rate in Hz between 0.001 and 100000", optarg);
		k->o.freq_hz = v;
		break;
	case 'd':
		if (parse_double(optarg, 0.001, MAX_DURATION_S, &v) < 0)
			return bad("-d %s: not a positive number of seconds", optarg);
		k->o.duration_s = v;
		break;
	case 'p':
		if (parse_double(optarg, 1, INT_MAX, &v) < 0 || v != (double)(int)v)
			return bad("-p %s: not a process id", optarg);
		k->o.pid = (pid_t)v;
		break;
	case OPT_CALL_GRAPH:
		if (parse_call_graph(optarg, &k->o) < 0)
			return bad("--call-graph %s: expected fp, dwarf or dwarf,BYTES (8..65528)", optarg);
		k->asked_dwarf = k->o.dwarf;
		break;
	case OPT_NO_STACK_COPY:
		k->no_stack_copy = 1;
		break;
	case OPT_SCOPE:
		if (strcmp(optarg, "process") == 0)
			k->o.scope = REC_SCOPE_PROCESS;
		else if (strcmp(optarg, "system") == 0)
			k->o.scope = REC_SCOPE_SYSTEM;
		else
			return bad("--scope %s: expected process or system", optarg);
		break;
	case OPT_SWITCH_EVENTS:
		if (parse_switch_events(optarg, &k->o) < 0)
			return bad("--switch-events=%s: expected auto, auto,RATE (switches a second per busy CPU, "
			           "1..100000000), on or off", optarg);
		break;
	case OPT_NO_ARCHIVE:
		k->o.no_archive = 1;
		break;
	case OPT_PYTHON:
		if (!optarg || strcmp(optarg, "on") == 0)
			k->o.python = REC_PY_ON;
		else if (strcmp(optarg, "auto") == 0)
			k->o.python = REC_PY_AUTO;
		else if (strcmp(optarg, "off") == 0)
			k->o.python = REC_PY_OFF;
		else
			return bad("--python=%s: expected auto, on or off", optarg);
		break;
	case OPT_NO_CUDA:
		k->o.no_cuda = 1;
		break;
	case OPT_CUDA_STACKS:
		/* the agent reads it from the command's environment (cuda_inject.c passes it on) */
		if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
			return bad("--cuda-stacks=%s: expected on or off", optarg);
		setenv("GT_CUPTI_STACKS", strcmp(optarg, "on") == 0 ? "1" : "0", 1);
		break;
	case OPT_PREPARE:
		k->o.prepare = 1;
		break;
	case OPT_DUMP:
		k->want_dump = 1;
		break;
	case OPT_CHILDREN:
		k->dump.children = 1;
		break;
	case OPT_JSON:
		k->dump.json = 1;
		break;
	case OPT_ALL_FRAMES:
		k->dump.all_frames = 1;
		break;
	case OPT_TOP:
		k->o.top = 1;
		break;
	case OPT_DELAY:
		if (parse_double(optarg, 0.001, MAX_DURATION_S, &v) < 0)
			return bad("--delay %s: not a positive number of seconds", optarg);
		k->o.capture.delay_s = v;
		break;
	case OPT_CAPTURE_RANGE:
		if (strcmp(optarg, "signal") == 0) {
			k->o.capture.range = REC_CAP_SIGNAL;
		} else if (strncmp(optarg, "nvtx:", 5) == 0 && optarg[5]) {
			k->o.capture.range = REC_CAP_NVTX;
			k->o.capture.nvtx_name = optarg + 5;
		} else {
			return bad("--capture-range=%s: expected signal or nvtx:NAME", optarg);
		}
		break;
	case OPT_RING:
		if (parse_double(optarg, 1, MAX_DURATION_S, &v) < 0)
			return bad("--ring %s: not a number of seconds (at least 1)", optarg);
		k->o.capture.ring_s = v;
		break;
	case OPT_MAX_SIZE:
		if (rec_capture_parse_size(optarg, &k->o.capture.max_size) < 0 || k->o.capture.max_size < (64u << 10))
			return bad("--max-size %s: expected a size of at least 64K (K, M, G suffixes)", optarg);
		break;
	case 'q':
		k->o.quiet = 1;
		break;
	case 'h':
		usage(stdout);
		return GT_EXIT_OK;
	case 'V':
		printf("gt-record %s\n", GT_VERSION);
		return GT_EXIT_OK;
	case ':':
		return bad("%s needs an argument", k->argv[optind - 1]);
	default:
		return bad("unknown option %s", k->argv[optind - 1]);
	}
	return -1;
}

int main(int argc, char **argv)
{
	cli k = { .argv = argv };
	rec_opts *o = &k.o;
	int c, rc;

	rec_opts_init(o);
	o->argv0 = argv[0];
	opterr = 0;
	/* '+': stop at the first non-option, so the command's own options stay its own */
	while ((c = getopt_long(argc, argv, "+:o:F:d:p:qhV", longopts, NULL)) != -1)
		if ((rc = take_opt(c, &k)) >= 0)
			return rc;
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0 && argv[optind][0] == '-')
		return bad("unknown option %s", argv[optind]);
	if (k.no_stack_copy && k.asked_dwarf)
		return bad("%s--no-stack-copy and --call-graph dwarf exclude each other (dwarf unwinding needs the copy)", "");
	if (k.no_stack_copy)
		o->dwarf = 0;
	/* each DWARF sample copies the stack inside the kernel, on the target's own CPU time: at
	 * 100 kHz the copy outlasted the 10 us period and the target stopped making progress (a
	 * 0.15 s loop ran 100 s, 0 of 1.4 M samples arrived); 20 kHz kept 100 % of them */
	if (o->dwarf && !k.want_dump && o->freq_hz > REC_DWARF_MAX_HZ)
		return bad("-F above %s Hz with --call-graph dwarf: each sample copies the stack in the kernel, on "
		           "the target's CPU time, and faster sampling stops the target; use a lower -F or "
		           "--call-graph fp (up to 100000 Hz)", REC_DWARF_MAX_HZ_STR);
	if (capture_conflict(o, k.want_dump) < 0)
		return GT_EXIT_USAGE;
	o->argv = argv + optind;
	if (o->top && (k.want_dump || o->prepare))
		return bad("%s--top goes with a recording (a COMMAND or -p PID), not --dump or --prepare", "");
	if (k.want_dump) {
		if (o->pid <= 0 || optind < argc)
			return bad("%s--dump takes -p PID (and no command)", "");
		if (k.dump.json && k.output_given)
			return bad("%s--json prints; -o writes a trace: choose one", "");
		k.dump.pid = o->pid;
		k.dump.output = k.output_given ? o->output : NULL;
		k.dump.no_archive = o->no_archive;
		k.dump.quiet = o->quiet;
		return rec_dump_run(&k.dump);
	}
	if (k.dump.children || k.dump.json || k.dump.all_frames)
		return bad("%s--children, --json and --all-frames go with --dump", "");
	if (o->pid > 0 && optind < argc)
		return bad("%s-p PID and a COMMAND exclude each other", "");
	if (o->pid > 0 && o->prepare)
		return bad("%s--prepare launches a COMMAND; it does not take -p", "");
	if (o->pid <= 0 && optind >= argc)
		return bad("%sno command to record: gt-record [options] -- COMMAND [ARGS...], or -p PID", "");
	return rec_session_run(o);
}
