/* test_diff.c — proportion test numbers, diff of folded profiles (self/total, sorting,
 * significance, perf-period scaling), check's tolerance/significance/--only, JUnit text, and
 * loading both sides on two threads. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "diff.h"
#include "testhelp.h"

static ana_profile *folded(const char *text, const char *path)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	ana_folded fd;
	ana_fold_parse_info info;
	ana_fold_parse(f, &fd, &info);
	fclose(f);
	ana_profile *p = ana_profile_from_folded(&fd, path);
	ana_folded_free(&fd);
	return p;
}

static const ana_diff_row *row(const ana_diff *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->rows[i].name, name) == 0)
			return &d->rows[i];
	return NULL;
}

static void test_stats(void)
{
	th_check(ana_prop_z(50, 100, 50, 100) == 0, "equal proportions: z = 0");
	th_check(fabs(ana_prop_z(10, 100, 30, 100) - 3.5355339) < 1e-6, "z(10/100 vs 30/100) = 3.5355 (%f)",
	         ana_prop_z(10, 100, 30, 100));
	th_check(ana_prop_z(30, 100, 10, 100) < 0, "a drop has negative z");
	th_check(ana_prop_z(0, 100, 0, 100) == 0 && ana_prop_z(1, 0, 1, 10) == 0, "undefined cases give 0");
	th_check(fabs(ana_z_critical(0.05) - 1.959964) < 1e-5 && fabs(ana_z_critical(0.001) - 3.290527) < 1e-5,
	         "critical z for 0.05 and 0.001 (%f, %f)", ana_z_critical(0.05), ana_z_critical(0.001));
}

/* base: a;b 600, a;c 400; new: the other way round; same: a 0.2-point wobble. */
static const char base_txt[] = "a;b 600\na;c 400\n";
static const char same_txt[] = "a;b 598\na;c 402\n";
static const char moved_txt[] = "a;b 400\na;c 600\n";

static void test_diff(void)
{
	ana_profile *b = folded(base_txt, "base"), *s = folded(same_txt, "same"), *mv = folded(moved_txt, "moved");
	ana_profile *per = folded("x;y 6006006\nx;z 5005005\n", "perf");
	th_check(ana_profile_samples(b) == 1000 && ana_profile_samples(per) == 11,
	         "sample counts kept; a perf period common to all lines divided out (%llu, %llu)",
	         (unsigned long long)ana_profile_samples(b), (unsigned long long)ana_profile_samples(per));
	ana_profile_free(per);
	ana_diff d;
	th_check(ana_diff_compute(b, mv, 0, &d) == 0 && d.n == 3, "three functions in the union");
	const ana_diff_row *rb = row(&d, "b"), *ra = row(&d, "a");
	th_check(rb && fabs(rb->base_self_pct - 60) < 1e-9 && fabs(rb->new_self_pct - 40) < 1e-9 && fabs(rb->d_self + 20) < 1e-9,
	         "b: self 60%% -> 40%%, -20 points");
	th_check(rb && rb->sig_self, "a 20-point move over 1000 samples is significant (z = %.2f)", rb ? rb->z_self : 0);
	th_check(ra && ra->base_self == 0 && fabs(ra->base_total_pct - 100) < 1e-9 && !ra->sig_total,
	         "a: no self, total 100%% on both sides, not significant");
	th_check(strcmp(d.rows[2].name, "a") == 0, "sorted by size of change (a, unchanged, last)");
	ana_diff_free(&d);
	ana_diff_compute(b, s, 0, &d);
	int any = 0;
	for (size_t i = 0; i < d.n; i++)
		any |= d.rows[i].sig_self || d.rows[i].sig_total;
	th_check(!any, "a 0.2-point wobble is not significant");
	ana_diff_free(&d);

	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	ana_diff_compute(b, mv, 0, &d);
	ana_diff_write_json(&d, "base", "moved", f);
	fclose(f);
	th_check(strstr(txt, "\"name\":\"b\",\"base_self\":600,\"new_self\":400,\"base_self_pct\":60,\"new_self_pct\":40,"
	                     "\"self_change_pts\":-20") != NULL,
	         "JSON row for b");
	free(txt);
	ana_diff_free(&d);

	/* check: the 20-point move fails at tolerance 2 and passes at 25; --only narrows. */
	ana_check_opts o;
	ana_check_result r;
	ana_check_opts_init(&o);
	ana_check_run(b, mv, &o, &r);
	th_check(r.n_moves == 2 && r.n_func_moves == 2, "check: b and c moved (%zu)", r.n_moves);
	f = open_memstream(&txt, &len);
	ana_check_write_text(&r, &o, f);
	fclose(f);
	th_check(strstr(txt, "REGRESSION: 2 functions") && strstr(txt, "self         60.0% ->  40.0%  (-20.0 points"),
	         "explanation names the move: %s", txt);
	free(txt);
	f = open_memstream(&txt, &len);
	ana_check_write_junit(&r, &o, "g<1>", "n&2", f);
	fclose(f);
	th_check(strstr(txt, "<testsuite name=\"profile: n&amp;2 against g&lt;1&gt;\" tests=\"3\" failures=\"1\" skipped=\"2\">") &&
	             strstr(txt, "<failure message=\"2 moved beyond the tolerance\""),
	         "JUnit: escaped names, one failing case, two skipped");
	free(txt);
	ana_check_result_free(&r);
	o.tolerance_pts = 25;
	ana_check_run(b, mv, &o, &r);
	th_check(r.n_moves == 0, "tolerance 25 points: nothing moved");
	ana_check_result_free(&r);
	regex_t re;
	regcomp(&re, "^c$", REG_EXTENDED | REG_NOSUB);
	o.tolerance_pts = 2;
	o.only = &re;
	ana_check_run(b, mv, &o, &r);
	th_check(r.n_moves == 1 && strcmp(r.moves[0].name, "c") == 0 && r.n_funcs == 1, "--only ^c$ checks c alone");
	ana_check_result_free(&r);
	regfree(&re);
	ana_check_opts_init(&o);
	ana_check_run(b, s, &o, &r);
	th_check(r.n_moves == 0, "same profile within noise passes");
	ana_check_result_free(&r);

	char msg[300];
	th_check(ana_profile_match(b, mv, msg, sizeof(msg)) == 0, "folded profiles do not name a program: no mismatch");
	ana_profile_free(b);
	ana_profile_free(s);
	ana_profile_free(mv);
}

/* ana_profile_load2 (BASE and NEW on two threads) gives what two ana_profile_load calls give,
 * and reports the failing side's reason (BASE's when both fail). */
static void test_load2(void)
{
	char dir[] = "/tmp/test_diff.XXXXXX", pa[64], pb[64], pm[64], err[600], err1[600];
	th_check(mkdtemp(dir) != NULL, "temporary directory");
	snprintf(pa, sizeof(pa), "%s/a.fold", dir);
	snprintf(pb, sizeof(pb), "%s/b.fold", dir);
	snprintf(pm, sizeof(pm), "%s/missing.fold", dir);
	FILE *f = fopen(pa, "w");
	fputs(base_txt, f);
	fclose(f);
	f = fopen(pb, "w");
	fputs(moved_txt, f);
	fclose(f);
	ana_opts o;
	ana_opts_init(&o);
	ana_profile *a = NULL, *b = NULL;
	th_check(ana_profile_load2(pa, pb, &o, &a, &b, err, sizeof(err)) == 0 && a && b, "load2 loads both sides");
	ana_profile *a1 = ana_profile_load(pa, &o, err1, sizeof(err1)), *b1 = ana_profile_load(pb, &o, err1, sizeof(err1));
	ana_diff d2, d1;
	th_check(a && b && a1 && b1 && ana_diff_compute(a, b, 0.001, &d2) == 0 && ana_diff_compute(a1, b1, 0.001, &d1) == 0,
	         "both ways compare");
	int same = a && b && a1 && b1 && d1.n == d2.n && d1.base_n == d2.base_n && d1.new_n == d2.new_n;
	for (size_t i = 0; same && i < d1.n; i++)
		same = strcmp(d1.rows[i].name, d2.rows[i].name) == 0 && d1.rows[i].base_self == d2.rows[i].base_self &&
		       d1.rows[i].new_self == d2.rows[i].new_self && d1.rows[i].new_total == d2.rows[i].new_total;
	th_check(same, "load2 and two sequential loads give the same diff (%zu rows)", d1.n);
	if (a && b && a1 && b1) {
		ana_diff_free(&d1);
		ana_diff_free(&d2);
	}
	ana_profile_free(a);
	ana_profile_free(b);
	ana_profile_free(a1);
	ana_profile_free(b1);

	th_check(ana_profile_load2(pa, pm, &o, &a, &b, err, sizeof(err)) < 0 && !a && !b && strstr(err, "missing.fold"),
	         "NEW unreadable: fails naming NEW (%s)", err);
	th_check(ana_profile_load2(pm, pb, &o, &a, &b, err, sizeof(err)) < 0 && !a && !b && strstr(err, "missing.fold"),
	         "BASE unreadable: fails naming BASE (%s)", err);
	char pm2[80];
	snprintf(pm2, sizeof(pm2), "%s/other.fold", dir);
	th_check(ana_profile_load2(pm, pm2, &o, &a, &b, err, sizeof(err)) < 0 && strstr(err, "missing.fold") &&
	         !strstr(err, "other.fold"), "both unreadable: BASE's reason (%s)", err);
	unlink(pa);
	unlink(pb);
	rmdir(dir);
}

int main(void)
{
	test_stats();
	test_diff();
	test_load2();
	return th_report();
}
