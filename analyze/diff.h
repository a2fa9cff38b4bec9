/* diff.h — comparing two profiles (traces or folded stacks): per-function self and total
 * shares, their change in points, and a two-proportion z-test that tells real moves from
 * sampling noise. Also what `check` compares: the GIL split and GPU kernel time shares.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_DIFF_H
#define ANA_DIFF_H

#include <stdint.h>
#include <stdio.h>

#include "fold.h"
#include "model.h"

/* One side of a comparison, summarized (the model or folded text is not kept). */
typedef struct ana_profile ana_profile;

/* Summarize a loaded model: functions by frame name, GIL classes, kernel time by name. */
ana_profile *ana_profile_from_model(const ana_model *m);
/* Summarize folded stacks. Counts that all share a factor of 1000 or more (perf periods, as
 * import-perf writes them) are divided by it, so the test sees sample counts. */
ana_profile *ana_profile_from_folded(const ana_folded *fd, const char *path);
/* Load PATH: a .gtt trace (by its magic) or folded text. NULL with a one-line reason in err
 * (unreadable, newer format version, not a trace nor folded stacks, no samples). */
ana_profile *ana_profile_load(const char *path, ana_opts *o, char *err, size_t errlen);
/* Load BASE and NEW (as ana_profile_load), on two threads: each model has its own reader and
 * symbolizer. 0, or -1 with both NULL and the reason of the first failing side (BASE's when
 * both fail) in err. o->progress is shown for BASE only. */
int ana_profile_load2(const char *pa, const char *pb, ana_opts *o, ana_profile **a, ana_profile **b, char *err,
                      size_t errlen);
void ana_profile_free(ana_profile *p);
/* A trace's load warnings (none for folded input), and whether the trace disagrees with its
 * END record (then a command's status is GT_EXIT_PARTIAL unless it fails otherwise). */
const char *const *ana_profile_warnings(const ana_profile *p, size_t *n);
int ana_profile_partial(const ana_profile *p);
/* Print the warnings on stderr as "gt-analyze CMD: warning: ...", at most 8 lines. */
void ana_profile_print_warnings(const ana_profile *p, const char *cmd);

uint64_t ana_profile_samples(const ana_profile *p);
/* What program the profile is of ("gt-pipeline", "python3 gilmix.py"), NULL for folded input. */
const char *ana_profile_program(const ana_profile *p);
/* 1 when the profile has Python threads (the GIL split is meaningful), resp. kernel times. */
int ana_profile_has_gil(const ana_profile *p);
int ana_profile_has_gpu(const ana_profile *p);

/* 0 when a and b profile the same program (or either is folded text, which does not say);
 * else -1 with a one-line reason in msg: comparing different programs means nothing. */
int ana_profile_match(const ana_profile *a, const ana_profile *b, char *msg, size_t len);

/* Two-proportion z statistic for x1 of n1 against x2 of n2 (pooled); 0 when undefined. */
double ana_prop_z(uint64_t x1, uint64_t n1, uint64_t x2, uint64_t n2);
/* The two-sided critical |z| for significance level alpha (0 < alpha < 1). */
double ana_z_critical(double alpha);

typedef struct ana_diff_row {
	const char *name;                 /* the function (owned by the diff) */
	uint64_t base_self, new_self, base_total, new_total;   /* samples */
	double base_self_pct, new_self_pct, d_self;             /* % of all samples; change in points */
	double base_total_pct, new_total_pct, d_total;
	double z_self, z_total;
	int sig_self, sig_total;          /* |z| beyond the critical value */
} ana_diff_row;

typedef struct ana_diff {
	ana_diff_row *rows;               /* sorted by the larger |change| (self or total), then name */
	size_t n;
	uint64_t base_n, new_n;           /* samples on each side */
	double alpha;                     /* family-wide significance level used */
	double z_crit;                    /* |z| needed: Bonferroni over the functions compared */
	char **names;                     /* owned strings */
} ana_diff;

/* Compare every function of either side. alpha is the family-wide level (default 0.001 when
 * <= 0), split over the functions (Bonferroni), so unchanged programs are not flagged.
 * 0 or GTT_ENOMEM. */
int ana_diff_compute(const ana_profile *base, const ana_profile *cur, double alpha, ana_diff *out);
void ana_diff_free(ana_diff *d);

/* A class or kernel share compared the same way (for check). */
typedef struct ana_share_row {
	const char *name;
	double base_pct, new_pct, d;      /* % and change in points */
	double z;                         /* 0 when there is no sample count (GPU times) */
	int sig;
} ana_share_row;
/* GIL classes (5 rows, class order). rows must hold ANA_CLASS_COUNT. */
void ana_diff_gil(const ana_profile *base, const ana_profile *cur, double z_crit, ana_share_row *rows);
/* Kernel time shares by kernel name, union of both sides, sorted by |change|; *rows malloc'd
 * (names point into the profiles). 0 or GTT_ENOMEM. */
int ana_diff_kernels(const ana_profile *base, const ana_profile *cur, ana_share_row **rows, size_t *n);

/* The text table (top rows; 0 = all) and the JSON document. 0 or GTT_EIO. */
int ana_diff_write_text(const ana_diff *d, const char *base_path, const char *new_path, int top, FILE *out);
int ana_diff_write_json(const ana_diff *d, const char *base_path, const char *new_path, FILE *out);

/* `gt-analyze diff BASE NEW [--json] [--top N] [--alpha A]`. */
int ana_cmd_diff(int argc, char **argv);

#endif
