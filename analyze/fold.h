/* fold.h — folded stacks ("root;...;leaf COUNT") from a model: the form FlameGraph reads,
 * and the input of the flame graph renderer, exports and diff. */
#ifndef ANA_FOLD_H
#define ANA_FOLD_H

#include <stdio.h>
#include "model.h"

typedef struct ana_fold_opts {
	int threads;          /* --threads: prefix each stack with "process;thread-name tid" roots */
	int gil;              /* -1 any, else only samples of these classes: bit (1 << ANA_CLASS_*) */
	int annotate_class;   /* append "_[py]", "_[gil]" ... class suffix to leaf frames (render colours) */
	int python_only;
	const char *tid_filter;   /* NULL, or comma list of tids */
	uint64_t from_ns, to_ns;  /* window as offsets from model->start_ns; 0 = from the start / to the end */
} ana_fold_opts;
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
	uint64_t weight_ns;
	uint32_t cls_mask;    /* classes of the samples in this line */
} ana_folded_line;

typedef struct ana_folded {
	ana_folded_line *lines;   /* sorted by stack (byte order) */
	size_t n;
	uint64_t total;
} ana_folded;

/* Fold the model's samples. 0 or <0 (GTT_ENOMEM). */
int ana_fold(const ana_model *m, const ana_fold_opts *o, ana_folded *out);
/* Parse folded text (FlameGraph format; lines "stack count"). Bad lines are counted in
 * *bad and the first one's number stored in *first_bad_line. 0 or <0.
 * Lines stay in file order and are not merged (a flame chart needs the order; use
 * ana_fold_sort_merge for the sorted form); blank lines and zero counts are skipped; blanks
 * around the count are dropped, spaces inside the stack kept. */
int ana_fold_parse(FILE *f, ana_folded *out, size_t *bad, size_t *first_bad_line);
/* Sort lines by stack (byte order) and merge equal stacks, as ana_fold() returns them. 0. */
int ana_fold_sort_merge(ana_folded *fd);
/* Write "stack count\n" lines. */
int ana_fold_write(const ana_folded *fd, FILE *out);
void ana_folded_free(ana_folded *fd);

#endif
