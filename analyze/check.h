/* check.h — `gt-analyze check`: a CI gate comparing a new profile with a golden one. A move
 * counts when it is beyond the tolerance (in points of the total) and significant given the
 * sample counts; functions, the GIL split and (both with GPU data) kernel time shares.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_CHECK_H
#define ANA_CHECK_H

#include <regex.h>
#include <stdio.h>

#include "diff.h"

typedef struct ana_check_opts {
	double tolerance_pts;     /* default 2 points */
	double alpha;             /* family-wide significance level, default 0.001 */
	const regex_t *only;      /* NULL, or compare only functions whose name matches */
} ana_check_opts;
void ana_check_opts_init(ana_check_opts *o);

enum { ANA_CHECK_FUNC_SELF = 0, ANA_CHECK_FUNC_TOTAL = 1, ANA_CHECK_GIL = 2, ANA_CHECK_KERNEL = 3 };

typedef struct ana_check_move {
	int kind;                 /* ANA_CHECK_* */
	const char *name;         /* points into the result's diff or the profiles */
	double base_pct, new_pct, d, z;
} ana_check_move;

typedef struct ana_check_result {
	ana_diff diff;
	size_t n_funcs;           /* functions compared (after --only) */
	int gil_compared, gpu_compared;
	ana_share_row gil[ANA_CLASS_COUNT];
	ana_share_row *kernels;
	size_t n_kernels;
	ana_check_move *moves;    /* what failed, in the order above, larger moves first */
	size_t n_moves;
	size_t n_func_moves, n_gil_moves, n_kernel_moves;
} ana_check_result;

/* Compare cur against golden. 0 or GTT_ENOMEM; r->n_moves > 0 means a regression. */
int ana_check_run(const ana_profile *golden, const ana_profile *cur, const ana_check_opts *o,
                  ana_check_result *r);
void ana_check_result_free(ana_check_result *r);
/* The short readable explanation (one line when nothing moved). */
void ana_check_write_text(const ana_check_result *r, const ana_check_opts *o, FILE *out);
/* A JUnit XML report: one test case each for functions, GIL split and kernel shares
 * (skipped when not compared). 0 or GTT_EIO. */
int ana_check_write_junit(const ana_check_result *r, const ana_check_opts *o, const char *golden_path,
                          const char *new_path, FILE *out);

/* `gt-analyze check NEW --golden BASE [--tolerance PCT] [--only REGEX] [--junit FILE]`:
 * 0 nothing moved, 1 regression, 2 broken input, 64 usage. */
int ana_cmd_check(int argc, char **argv);

#endif
