/* fold.h — folded stacks ("root;...;leaf COUNT") from a model: the form FlameGraph reads,
 * and the input of the flame graph renderer, exports and diff.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_FOLD_H
#define ANA_FOLD_H

#include <stdio.h>
#include "model.h"

typedef struct ana_fold_opts {
	int threads;          /* --threads: prefix each stack with "process;thread-name tid" roots */
	int gil;              /* -1 any, else only samples of these classes: bit (1 << ANA_CLASS_*) */
	int annotate_class;   /* append "_[py]", "_[gil]" ... class suffix to leaf frames (render colours) */
	int python_only;
	const char *tid_filter;   /* NULL, or comma list of tids (ana_fold_tids_check) */
	uint64_t from_ns, to_ns;  /* window as offsets from model->start_ns; 0 = from the start / to the end
	                           * (not on a model that streamed its samples: the loader's window is) */
	int weight;           /* ANA_WEIGHT_*: what a line counts */
	int python_frames;    /* ANA_WEIGHT_WALL: how Python frames are named (enum ana_pyframes) */
} ana_fold_opts;
/* --weight: CPU samples (each line's count is samples), or the device time of GPU work, in ns,
 * under the launch stack of the call that started it (launch.h's estimator): stacks are launch
 * site + "[kernel NAME]" (or "[memcpy HtoD]" and the other directions, "[memset]"), work no stack stands for under
 * "[no launch stack]"; --threads roots name the launching thread; --tid and the window select
 * by launching thread and work start; gil and annotate_class do not apply. */
/* --weight wall: the Python threads' wall time by Python stack, from the Python reader's stack
 * reads (every thread at every pass, on the CPU or blocked: a py-spy/Austin view, where CPU
 * samples see only running threads); a line counts reads, its weight_ns the reader's period per
 * read; reads without a frame (idle) are left out; --threads, --tid and the window select by the
 * read's thread and time, --gil held|released by whether the thread held the GIL at the read
 * (held = python,native-gil; released = nogil,wait); annotate_class does not apply. A model that
 * streamed its reads (ana_fold_load_opts) folds their counts by (stack, thread, GIL held); one
 * that streamed its CUDA records folds the launch groups the loader joined (ANA_STREAM_CUDA_LAUNCHES);
 * on both, a window is the loader's (from_ns/to_ns: GTT_EINVAL). */
enum { ANA_WEIGHT_SAMPLES = 0, ANA_WEIGHT_GPU_TIME = 1, ANA_WEIGHT_WALL = 2 };
/* "samples", "gpu-time" or "wall" as ANA_WEIGHT_*, -1 for another word. */
int ana_fold_weight_parse(const char *word);
/* Set o for loading a trace to fold by weight, so that the loader keeps only what that fold
 * needs: the CUDA records counted by name (ANA_STREAM_CUDA_TABLES, as diff does), and for GPU
 * time joined to their launch stacks as they are read again (ANA_STREAM_CUDA_LAUNCHES). Unless
 * each_sample (the caller walks samples one by one, as a flame chart or an export of samples
 * does) no sample, Python read or GIL record is kept either: they are merged and counted by
 * (stack, thread, class) as they stream (ana_opts.stream_samples), the reads also by (Python
 * stack, thread, GIL held) for wall time (ana_opts.sum_reads), and ana_fold folds those counts.
 * So the memory follows distinct stacks, threads and launch sites, not the length of the trace. */
void ana_fold_load_opts(ana_opts *o, int weight, int each_sample);
void ana_fold_opts_init(ana_fold_opts *o);
/* The leaf suffix annotate_class appends for a class: "_[py]", "_[gil]", "_[nogil]", "_[wait]";
 * "" for ANA_CLASS_NONPY. */
const char *ana_fold_class_suffix(int cls);

/* The frame that truncated stacks (enum ana_unwind) hang under: a stack that did not reach
 * its root does not pose as a root of its own. */
#define ANA_TRUNCATED_FRAME "[truncated]"

typedef struct ana_folded_line {
	char *stack;          /* "a;b;c" */
	uint64_t count;       /* samples */
	uint64_t base_count;  /* the first count of FlameGraph's difference format (two_counts), else 0 */
	uint64_t weight_ns;
	uint32_t cls_mask;    /* classes of the samples in this line */
} ana_folded_line;

typedef struct ana_folded {
	ana_folded_line *lines;   /* sorted by stack (byte order) */
	size_t n;
	uint64_t total;           /* sum of the counts (fits: a larger sum is refused when parsing) */
	int two_counts;           /* parsed from FlameGraph's difference format "STACK BEFORE AFTER":
	                           * count is AFTER, base_count BEFORE, base_total their sum */
	uint64_t base_total;
} ana_folded;

/* Fold the model's samples (or, for a model that streamed them, their sums' rows). 0 or <0
 * (GTT_ENOMEM; GTT_EINVAL for a from_ns/to_ns window on a model that streamed its samples). */
int ana_fold(const ana_model *m, const ana_fold_opts *o, ana_folded *out);
/* What parsing folded text found besides the lines. */
typedef struct ana_fold_parse_info {
	size_t n_bad;             /* lines that are not "stack count" (skipped) */
	size_t first_bad_line;    /* 1-based number of the first of them, 0 when none */
	char why[200];            /* why the text was refused (GTT_EFORMAT), "" otherwise */
} ana_fold_parse_info;

/* Parse folded text (FlameGraph format; lines "stack count"), read through textin.h's rules:
 * LF, CR LF or CR line ends, no NUL byte, bounded lines, counts that fit in 64 bits (a larger
 * one makes a bad line). Equal stacks merge as they are read (memory follows distinct stacks,
 * not the input's size); lines stay in the order of their first appearance (use
 * ana_fold_sort_merge for the sorted form); blank lines and zero counts are skipped;
 * blanks around the count are dropped, spaces inside the stack kept. When every line has two
 * counts it is FlameGraph's difference format (out->two_counts). 0, GTT_ENOMEM, GTT_EIO, or
 * GTT_EFORMAT with info->why (binary data, an over-long line, counts summing past 2^64 - 1). */
int ana_fold_parse(FILE *f, ana_folded *out, ana_fold_parse_info *info);
/* The same for head[0..head_len) followed by the rest of a stream (rest may be NULL): input
 * whose first bytes were read to tell a trace from text. */
int ana_fold_parse_stream(const void *head, size_t head_len, FILE *rest, ana_folded *out, ana_fold_parse_info *info);
/* Sort lines by stack (byte order) and merge equal stacks, as ana_fold() returns them. 0. */
int ana_fold_sort_merge(ana_folded *fd);
/* Write "stack count\n" lines ("stack before after\n" for the difference format). */
int ana_fold_write(const ana_folded *fd, FILE *out);
void ana_folded_free(ana_folded *fd);

/* `gt-analyze fold [OPTIONS] TRACE`: the command (parses its options, prints, returns the exit
 * status). */
int ana_cmd_fold(int argc, char **argv);

/* 0 when list is a comma-separated list of thread ids (decimal, each below 2^32), else
 * GTT_EINVAL: what --tid takes, checked before any work (not found out as ENOMEM later). */
int ana_fold_tids_check(const char *list);

#endif
