/* cli.h — what every gt-analyze subcommand shares: loading a trace with the standard options
 * and messages, usage errors, exit codes. Subcommands are `int ana_cmd_NAME(int argc, char
 * **argv)` (argv[0] is the subcommand's name) listed once in analyze/main.c's ANA_COMMANDS.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_CLI_H
#define ANA_CLI_H

#include <getopt.h>

#include "gt_util.h" /* GT_EXIT_*: the exit codes of every tool */
#include "model.h"

/* Options every trace-reading subcommand accepts; ANA_CLI_LONGOPTS goes into its getopt_long
 * table and ana_cli_opt() handles them (returns 1 when it took the option). */
#define ANA_CLI_OPT_SYMFS 0x1001
#define ANA_CLI_OPT_NO_ARCHIVE 0x1002
#define ANA_CLI_OPT_NO_KERNEL 0x1003
#define ANA_CLI_OPT_SKIP_CORRUPT 0x1004
#define ANA_CLI_OPT_FROM 0x1005
#define ANA_CLI_OPT_TO 0x1006
#define ANA_CLI_OPT_PYTHON_FRAMES 0x1007
#define ANA_CLI_LONGOPTS                                            \
	{ "symfs", required_argument, NULL, ANA_CLI_OPT_SYMFS },    \
	{ "no-archive", no_argument, NULL, ANA_CLI_OPT_NO_ARCHIVE }, \
	{ "no-kernel", no_argument, NULL, ANA_CLI_OPT_NO_KERNEL },  \
	{ "skip-corrupt", no_argument, NULL, ANA_CLI_OPT_SKIP_CORRUPT }, \
	{ "from", required_argument, NULL, ANA_CLI_OPT_FROM },      \
	{ "to", required_argument, NULL, ANA_CLI_OPT_TO }, \
	{ "python-frames", required_argument, NULL, ANA_CLI_OPT_PYTHON_FRAMES }
/* Usage text of those options, for a subcommand's --help. */
#define ANA_CLI_OPTS_HELP                                                                   \
	"  --from S, --to S analyze only this window, seconds from the recording's start (reads only\n" \
	"                   the chunks that hold it; records filtered to it exactly)\n"               \
	"  --symfs DIR      look for binaries under DIR (after the trace's embedded archive)\n" \
	"  --no-archive     ignore the symbol archive embedded in the trace\n"                 \
	"  --no-kernel      drop kernel frames\n"                                               \
	"  --skip-corrupt   analyze around corrupt chunks instead of stopping\n"             \
	"  --python-frames function|line\n"                                                   \
	"                   Python frames by function name only, or each as\n"              \
	"                   \"function (file:line)\"; default: the place only where a name\n" \
	"                   is ambiguous (<module>, <lambda>, <listcomp>, ...)\n"
/* Returns 1 when it took the option, 0 when it is not one of these, -1 after printing a usage
 * error for command cmd (a bad number of seconds, --to not after --from, an unknown
 * --python-frames word): exit GT_EXIT_USAGE. */
int ana_cli_opt(const char *cmd, int opt, const char *arg, ana_opts *o);
/* --python-frames WORD into *mode (enum ana_pyframes): 0, or -1 for an unknown word. */
int ana_cli_python_frames(const char *arg, int *mode);

/* Load TRACE, print its warnings on stderr ("gt-analyze: warning: ..."); on failure print the
 * one-line reason and return NULL with *rc = GT_EXIT_BROKEN. On success *rc is GT_EXIT_OK, or
 * GT_EXIT_PARTIAL when the trace disagrees with its own END record (the command's status unless
 * it fails otherwise). Progress shows when stderr is a terminal. */
ana_model *ana_cli_load(const char *path, ana_opts *o, int *rc);
/* The same, its warnings left for ana_cli_warnings (a command that may load the trace again
 * before it says anything). */
ana_model *ana_cli_load_quiet(const char *path, ana_opts *o, int *rc);
void ana_cli_warnings(const ana_model *m);

/* Turn SIGBUS (a mapped input file shrinking under the reader) into one line on stderr and exit
 * status 2 (gt-analyze's and gt-render's main call it first). */
void ana_cli_catch_sigbus(void);

/* Print "gt-analyze CMD: MESSAGE" and a hint to --help on stderr; returns GT_EXIT_USAGE. */
int ana_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse seconds ("1.5") into ns; 0 or -1 when not a non-negative number. */
int ana_cli_seconds(const char *s, uint64_t *ns);

#endif
