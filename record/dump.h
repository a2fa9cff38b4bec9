/* dump.h — gt-record --dump: what every thread of a process is doing right now (state, system
 * call, GIL, merged Python + native stack, in-flight CUDA call), printed as text or JSON or
 * written as a one-snapshot trace for gt-analyze. Threads are stopped one at a time, for
 * microseconds each (record/tracestop.c). */
#ifndef REC_DUMP_H
#define REC_DUMP_H

#include <sys/types.h>

typedef struct rec_dump_opts {
	pid_t pid;
	int children;            /* also every descendant process */
	int json;                /* JSON on stdout instead of text */
	int all_frames;          /* text: do not fold interpreter frames between Python frames */
	const char *output;      /* write a .gtt snapshot here instead of printing (NULL: print) */
	int no_archive;          /* -o: do not embed the binaries' symbols */
	int quiet;
} rec_dump_opts;

/* Dump as o says. Prints the result on stdout and one-line errors on stderr; returns the exit
 * status: GT_EXIT_OK, GT_EXIT_PARTIAL (some thread or process could not be read whole: gone
 * mid-dump, held by another tracer, did not stop in time), GT_EXIT_BROKEN (no such process,
 * ptrace refused, a write error). */
int rec_dump_run(const rec_dump_opts *o);

#endif
