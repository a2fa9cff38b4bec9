/* session.h — one recording from start to end: launch or attach, the drain loop, the /proc,
 * Python and CUDA side loops, the symbol archive, and the exit status (gt-record's fileio.c).
 * Return rule: rec_session_run returns gt-record's exit status (lib/gt_util.h GT_EXIT_*, or
 * the launched command's); it is the one place besides main.c that prints. */
#ifndef REC_SESSION_H
#define REC_SESSION_H

#include <stdint.h>
#include <sys/types.h>
#include "capture.h"
#include "swgate.h"

enum { REC_PY_AUTO = 0, REC_PY_ON = 1, REC_PY_OFF = 2 };
/* --scope: system-wide when permitted (auto), or forced either way. */
enum { REC_SCOPE_AUTO = 0, REC_SCOPE_PROCESS = 1, REC_SCOPE_SYSTEM = 2 };

typedef struct rec_opts {
	const char *output;      /* trace path ("gt.gtt") */
	double freq_hz;          /* samples per second of on-CPU time (99) */
	double duration_s;       /* 0: until the target exits or SIGINT/SIGTERM */
	pid_t pid;               /* > 0: attach mode */
	int dwarf;               /* call-graph mode: 1 dwarf, 0 fp */
	int scope;               /* REC_SCOPE_* */
	int switches;            /* --switch-events: rec_sw_mode (swgate.h) */
	uint64_t switch_limit;   /* auto: switches a second per busy CPU (REC_SWGATE_LIMIT) */
	uint32_t stack_bytes;    /* dwarf stack copy size */
	int no_archive;
	int python;              /* REC_PY_* */
	int no_cuda;
	int prepare;             /* exec COMMAND with the CUDA agent dormant; no recording */
	int quiet;
	int top;                 /* --top: the live per-thread view on the terminal */
	double procstat_hz;      /* /proc thread-stat loop rate (10) */
	double drain_hz;         /* ring-buffer drain rate (40: every 25 ms) */
	rec_capture_opts capture; /* --delay, --capture-range, --ring, --max-size (capture.h) */
	char **argv;             /* launch mode: COMMAND ARGS..., NULL-terminated */
	const char *argv0;       /* gt-record's own argv[0] (locates the CUDA agent) */
} rec_opts;

/* Defaults for every field. */
void rec_opts_init(rec_opts *o);
/* Record as o says. Prints one-line errors and the summary on stderr, returns the exit status:
 * launch mode the command's (128+signal when killed), 127 command not found, 126 not
 * executable, GT_EXIT_BROKEN (2: permission, bad PID, write error), attach mode GT_EXIT_OK,
 * or GT_EXIT_PARTIAL (1) when the target exited early. */
int rec_session_run(const rec_opts *o);

#endif
