/* input.h — what gt-render reads: a .gtt trace (through libana's model) or folded stacks
 * (a file or stdin), told apart by the trace magic. */
#ifndef REN_INPUT_H
#define REN_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "fold.h"
#include "model.h"

typedef struct ren_input {
	ana_model *model;      /* a trace: the loaded model; NULL for folded input */
	ana_folded folded;     /* folded input: its lines (empty for a trace) */
	size_t n_bad;          /* folded lines that did not parse */
	size_t first_bad_line;
	char *tmp_path;        /* a trace read from stdin is spooled here (removed on close) */
} ren_input;

/* Open path ("-" = stdin). 0, or <0 with a one-line reason in err:
 * GTT_EEMPTY (empty input), GTT_EFORMAT (neither a trace nor folded stacks),
 * GTT_EIO, GTT_ENOMEM, or the model loader's failure (a corrupt trace). */
int ren_input_open(ren_input *in, const char *path, const ana_opts *opts, char *err,
                   size_t errlen);
/* Free what the input holds. NULL ok. */
void ren_input_close(ren_input *in);

/* Folded stacks of a trace with per-class lines: each line's cls_mask has one bit, so the
 * renderer can colour by GIL class. sel->gil filters classes as in ana_fold.
 * 0 or <0 (GTT_ENOMEM). */
int ren_input_fold_classes(const ana_model *m, const ana_fold_opts *sel, ana_folded *out);

/* Folded lines for a flame chart: per thread (busiest first, a root frame "name tid"), the
 * samples in time order, adjacent equal stacks merged; lines stay in that order. tid_filter
 * (comma list), gil (class mask, -1 all) and [from_ns, to_ns) (relative to the trace start,
 * 0 = open) select samples. 0 or <0 (GTT_ENOMEM). */
int ren_flamechart_fold(const ana_model *m, const char *tid_filter, int gil, uint64_t from_ns,
                        uint64_t to_ns, ana_folded *out);

/* Parse folded text from memory with ana_fold_parse ("stack count" lines, sorted and
 * merged). Bad lines are counted (and the first one's number kept); blank lines are
 * skipped. 0 or <0 (GTT_ENOMEM). Free with ana_folded_free. */
int ren_fold_parse_mem(const char *buf, size_t len, ana_folded *out, size_t *n_bad,
                       size_t *first_bad_line);

#endif
