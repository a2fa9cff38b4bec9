/* import_perf.h — `perf script` text to folded stacks, with the semantics of FlameGraph's
 * stackcollapse-perf.pl (process-name root, offsets stripped, names tidied, counts summed
 * from the sample period), so perf users can feed gt-render, diff and check.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_IMPORT_PERF_H
#define ANA_IMPORT_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ana_perf_opts {
	int pid;                  /* root frame "comm-PID" */
	int tid;                  /* root frame "comm-PID/TID" ("?" for an unknown PID) */
	int kernel;               /* append "_[k]" to kernel frames */
	int jit;                  /* append "_[j]" to frames from /tmp/perf-PID.map */
	int addrs;                /* "[module <ADDR>]" for frames without a symbol */
	const char *event_filter; /* keep only this event; NULL = the first event seen */
} ana_perf_opts;
void ana_perf_opts_init(ana_perf_opts *o);

typedef struct ana_perf_import ana_perf_import;

/* A parser with its own stack table. NULL on ENOMEM. */
ana_perf_import *ana_perf_import_create(const ana_perf_opts *o);
void ana_perf_import_destroy(ana_perf_import *pi);
/* Feed input text in pieces of any size (lines may straddle calls), read with textin.h's rules
 * (LF, CR LF or CR line ends; no NUL byte; bounded lines). 0, GTT_ENOMEM, or GTT_EFORMAT for
 * input that is refused (binary data, an over-long line or sample, periods summing past
 * 2^64 - 1): ana_perf_import_why() says why. A period that does not fit in 64 bits makes its
 * header a bad line and its sample is left out. */
int ana_perf_import_feed(ana_perf_import *pi, const char *buf, size_t len);
/* Read a whole stream through feed(). 0, GTT_EIO, GTT_ENOMEM or GTT_EFORMAT. */
int ana_perf_import_read(ana_perf_import *pi, FILE *in);
/* End of input: parse a last unterminated line and keep a last sample that had no blank
 * line after it. 0, GTT_ENOMEM or GTT_EFORMAT. Call once, before the results below. */
int ana_perf_import_finish(ana_perf_import *pi);
/* Why the input was refused (GTT_EFORMAT), "" when it was not. */
const char *ana_perf_import_why(const ana_perf_import *pi);

/* Write "stack count\n" lines sorted by stack (byte order), like the Perl script. */
int ana_perf_import_write(const ana_perf_import *pi, FILE *out);
/* Number of distinct stacks, and the i-th of them in sorted order (valid until destroy;
 * i < ana_perf_import_nstacks). */
size_t ana_perf_import_nstacks(const ana_perf_import *pi);
const char *ana_perf_import_stack(const ana_perf_import *pi, size_t i, uint64_t *count);

typedef struct ana_perf_stats {
	uint64_t lines;           /* lines read */
	uint64_t samples;         /* samples kept */
	uint64_t filtered;        /* samples of another event, skipped */
	uint64_t bad_lines;       /* lines that are neither a sample header nor a frame */
	uint64_t first_bad_line;  /* 1-based number of the first of them, 0 when none */
	char event[64];           /* the event kept ("" when no header named one) */
	char other_event[64];     /* the first event filtered out, "" when none */
} ana_perf_stats;
void ana_perf_import_stats(const ana_perf_import *pi, ana_perf_stats *st);
/* The i-th remembered bad line (the first 10 are kept): its number and text. 0 or -1. */
int ana_perf_import_bad(const ana_perf_import *pi, size_t i, uint64_t *lineno, const char **text);

/* `gt-analyze import-perf [options] [FILE]`: the command (prints, returns the exit status). */
int ana_cmd_import_perf(int argc, char **argv);

#endif
