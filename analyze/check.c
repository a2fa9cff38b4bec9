/* check.c — the CI gate: which functions, GIL classes and kernels moved beyond the tolerance
 * (and beyond sampling noise), told in a few lines and as JUnit XML. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli.h"
#include "gt_util.h"
#include "gtt.h"
#include "outfile.h"
#include "gt_termsafe.h"

void ana_check_opts_init(ana_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->tolerance_pts = 2.0;
	o->alpha = 0.001;
}

static int add_move(ana_check_result *r, size_t *cap, int kind, const char *name, double b, double n, double z)
{
	if (GT_GROW(r->moves, *cap, r->n_moves + 1) < 0)
		return GTT_ENOMEM;
	ana_check_move *m = &r->moves[r->n_moves++];
	m->kind = kind;
	m->name = name;
	m->base_pct = b;
	m->new_pct = n;
	m->d = n - b;
	m->z = z;
	return 0;
}

int ana_check_run(const ana_profile *golden, const ana_profile *cur, const ana_check_opts *o, ana_check_result *r)
{
	size_t cap = 0;
	int rc;
	memset(r, 0, sizeof(*r));
	if ((rc = ana_diff_compute(golden, cur, o->alpha, &r->diff)) < 0)
		return rc;
	/* Bonferroni over what --only keeps, so a narrow check is not held to the full family. */
	size_t n = 0;
	for (size_t i = 0; i < r->diff.n; i++)
		if (!o->only || regexec(o->only, r->diff.rows[i].name, 0, NULL, 0) == 0)
			n++;
	r->n_funcs = n;
	double z_crit = ana_z_critical(r->diff.alpha / (double)(2 * (n ? n : 1) + ANA_CLASS_COUNT));
	for (size_t i = 0; i < r->diff.n; i++) {
		const ana_diff_row *d = &r->diff.rows[i];
		if (o->only && regexec(o->only, d->name, 0, NULL, 0) != 0)
			continue;
		int self = fabs(d->d_self) > o->tolerance_pts && fabs(d->z_self) > z_crit;
		int total = fabs(d->d_total) > o->tolerance_pts && fabs(d->z_total) > z_crit;
		/* The larger of the two moves tells the story; total alone when self did not move. */
		if (self && (!total || fabs(d->d_self) >= fabs(d->d_total)))
			rc = add_move(r, &cap, ANA_CHECK_FUNC_SELF, d->name, d->base_self_pct, d->new_self_pct, d->z_self);
		else if (total)
			rc = add_move(r, &cap, ANA_CHECK_FUNC_TOTAL, d->name, d->base_total_pct, d->new_total_pct, d->z_total);
		if (rc < 0)
			goto fail;
		r->n_func_moves += self || total;
	}
	if (ana_profile_has_gil(golden) || ana_profile_has_gil(cur)) {
		r->gil_compared = 1;
		ana_diff_gil(golden, cur, z_crit, r->gil);
		for (int c = 0; c < ANA_CLASS_COUNT; c++) {
			const ana_share_row *g = &r->gil[c];
			if (fabs(g->d) > o->tolerance_pts && g->sig) {
				if ((rc = add_move(r, &cap, ANA_CHECK_GIL, g->name, g->base_pct, g->new_pct, g->z)) < 0)
					goto fail;
				r->n_gil_moves++;
			}
		}
	}
	if (ana_profile_has_gpu(golden) && ana_profile_has_gpu(cur)) {
		r->gpu_compared = 1;
		if ((rc = ana_diff_kernels(golden, cur, &r->kernels, &r->n_kernels)) < 0)
			goto fail;
		for (size_t i = 0; i < r->n_kernels; i++) {
			const ana_share_row *k = &r->kernels[i];
			if (fabs(k->d) > o->tolerance_pts) {
				if ((rc = add_move(r, &cap, ANA_CHECK_KERNEL, k->name, k->base_pct, k->new_pct, 0)) < 0)
					goto fail;
				r->n_kernel_moves++;
			}
		}
	}
	return 0;
fail:
	ana_check_result_free(r);
	return rc;
}

void ana_check_result_free(ana_check_result *r)
{
	ana_diff_free(&r->diff);
	free(r->kernels);
	free(r->moves);
	memset(r, 0, sizeof(*r));
}

static const char *kind_word(int kind)
{
	switch (kind) {
	case ANA_CHECK_FUNC_SELF: return "self";
	case ANA_CHECK_FUNC_TOTAL: return "total";
	case ANA_CHECK_GIL: return "GIL";
	}
	return "kernel time";
}

static void move_line(const ana_check_move *m, FILE *out)
{
	fprintf(out, "  %-11s %5.1f%% -> %5.1f%%  (%+.1f points", kind_word(m->kind), m->base_pct, m->new_pct, m->d);
	if (m->kind != ANA_CHECK_KERNEL)
		fprintf(out, ", z = %+.1f", m->z);
	fprintf(out, ")  %s\n", m->name);
}

void ana_check_write_text(const ana_check_result *r, const ana_check_opts *o, FILE *out)
{
	if (!r->n_moves) {
		fprintf(out, "check: OK: nothing moved more than %.1f points significantly (%zu functions%s%s; "
		             "golden %llu samples, new %llu)\n",
		        o->tolerance_pts, r->n_funcs, r->gil_compared ? ", GIL split" : "",
		        r->gpu_compared ? ", kernel time shares" : "", (unsigned long long)r->diff.base_n,
		        (unsigned long long)r->diff.new_n);
		return;
	}
	fprintf(out, "check: REGRESSION: %zu function%s, %zu GIL class%s, %zu kernel%s moved more than %.1f points "
	             "(golden %llu samples, new %llu):\n",
	        r->n_func_moves, r->n_func_moves == 1 ? "" : "s", r->n_gil_moves, r->n_gil_moves == 1 ? "" : "es",
	        r->n_kernel_moves, r->n_kernel_moves == 1 ? "" : "s", o->tolerance_pts,
	        (unsigned long long)r->diff.base_n, (unsigned long long)r->diff.new_n);
	for (size_t i = 0; i < r->n_moves && i < 20; i++)
		move_line(&r->moves[i], out);
	if (r->n_moves > 20)
		fprintf(out, "  ... and %zu more (gt-analyze diff shows all)\n", r->n_moves - 20);
}

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		switch (c) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			/* XML 1.0 forbids most control characters even as references */
			if (c < 0x20 && c != '\n' && c != '\t')
				putc('?', out);
			else
				putc(c, out);
		}
	}
}

static void junit_case(FILE *out, const ana_check_result *r, const char *name, int compared, int kind_lo,
                       int kind_hi, size_t n_fail, const char *skip_why)
{
	fprintf(out, "    <testcase classname=\"gt-analyze.check\" name=\"%s\">\n", name);
	if (!compared) {
		fprintf(out, "      <skipped message=\"%s\"/>\n", skip_why);
	} else if (n_fail) {
		fprintf(out, "      <failure message=\"%zu moved beyond the tolerance\" type=\"regression\">", n_fail);
		for (size_t i = 0; i < r->n_moves; i++) {
			const ana_check_move *m = &r->moves[i];
			if (m->kind < kind_lo || m->kind > kind_hi)
				continue;
			char line[128];
			snprintf(line, sizeof(line), "%s %.1f%% -> %.1f%% (%+.1f points) ", kind_word(m->kind), m->base_pct,
			         m->new_pct, m->d);
			xml_text(out, line);
			xml_text(out, m->name);
			fputc('\n', out);
		}
		fputs("</failure>\n", out);
	}
	fputs("    </testcase>\n", out);
}

int ana_check_write_junit(const ana_check_result *r, const ana_check_opts *o, const char *golden_path,
                          const char *new_path, FILE *out)
{
	size_t fails = (r->n_func_moves > 0) + (r->n_gil_moves > 0) + (r->n_kernel_moves > 0);
	size_t skipped = !r->gil_compared + !r->gpu_compared;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	fprintf(out, "<testsuites name=\"gt-analyze check\" tests=\"3\" failures=\"%zu\">\n", fails);
	fputs("  <testsuite name=\"profile: ", out);
	xml_text(out, new_path);
	fputs(" against ", out);
	xml_text(out, golden_path);
	fprintf(out, "\" tests=\"3\" failures=\"%zu\" skipped=\"%zu\">\n", fails, skipped);
	fprintf(out, "    <properties><property name=\"tolerance_points\" value=\"%.3f\"/>"
	             "<property name=\"golden_samples\" value=\"%llu\"/><property name=\"new_samples\" value=\"%llu\"/>"
	             "</properties>\n",
	        o->tolerance_pts, (unsigned long long)r->diff.base_n, (unsigned long long)r->diff.new_n);
	junit_case(out, r, "function shares", 1, ANA_CHECK_FUNC_SELF, ANA_CHECK_FUNC_TOTAL, r->n_func_moves, "");
	junit_case(out, r, "GIL split", r->gil_compared, ANA_CHECK_GIL, ANA_CHECK_GIL, r->n_gil_moves,
	           "no Python threads in either profile");
	junit_case(out, r, "GPU kernel time shares", r->gpu_compared, ANA_CHECK_KERNEL, ANA_CHECK_KERNEL,
	           r->n_kernel_moves, "GPU data missing on one side");
	fputs("  </testsuite>\n</testsuites>\n", out);
	return ferror(out) ? GTT_EIO : 0;
}

/* ---- the command ---- */

static void check_usage(FILE *f)
{
	fputs("usage: gt-analyze check NEW --golden BASE [--tolerance PCT] [--only REGEX] [--junit FILE]\n\n"
	      "Fails (exit 1) when a function's self or total share, a GIL class share, or (both with GPU\n"
	      "data) a kernel's share of GPU time moved by more than PCT points and, for sampled shares,\n"
	      "more than sampling noise explains. NEW and BASE are .gtt traces or folded stacks.\n\n"
	      "  --golden BASE      the reference profile (required)\n"
	      "  --tolerance PCT    allowed move in points of the total (default 2)\n"
	      "  --only REGEX       compare only functions matching this extended regex\n"
	      "  --alpha A          family-wide significance level (default 0.001)\n"
	      "  --junit FILE       also write a JUnit XML report\n"
	      "  --force            compare even when the traces are of different programs\n" ANA_CLI_OPTS_HELP
	      "  -h, --help         this help\n"
	      "exit status: 0 nothing moved, 1 regression, 2 broken input, 64 usage\n", f);
}

int ana_cmd_check(int argc, char **argv)
{
	enum { O_GOLDEN = 1, O_TOL, O_ONLY, O_JUNIT, O_ALPHA, O_FORCE };
	static const struct option lopts[] = {
		{"golden", required_argument, NULL, O_GOLDEN}, {"tolerance", required_argument, NULL, O_TOL},
		{"only", required_argument, NULL, O_ONLY},     {"junit", required_argument, NULL, O_JUNIT},
		{"alpha", required_argument, NULL, O_ALPHA},   {"force", no_argument, NULL, O_FORCE},
		{"help", no_argument, NULL, 'h'},              ANA_CLI_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	ana_opts ao;
	ana_check_opts co;
	const char *golden = NULL, *junit = NULL, *only = NULL;
	int c, rc, force = 0, status = GT_EXIT_BROKEN, have_re = 0;
	char err[600], *end;
	regex_t re;
	ana_profile *g = NULL, *n = NULL;
	ana_check_result r;
	memset(&r, 0, sizeof(r));
	ana_opts_init(&ao);
	ao.stream_cuda = ANA_STREAM_CUDA_TABLES; /* kernel time by name: all check reads of them */
	ao.stream_samples = 1; /* and samples counted by stack and class: none kept */
	ana_check_opts_init(&co);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		if ((rc = ana_cli_opt("check", c, optarg, &ao)) != 0) {
			if (rc < 0)
				return GT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case O_GOLDEN: golden = optarg; break;
		case O_JUNIT: junit = optarg; break;
		case O_ONLY: only = optarg; break;
		case O_FORCE: force = 1; break;
		case O_TOL:
			co.tolerance_pts = strtod(optarg, &end);
			if (*end || end == optarg || !(co.tolerance_pts >= 0 && co.tolerance_pts <= 100))
				return ana_cli_usage_error("check", "--tolerance wants points between 0 and 100, not '%s'", optarg);
			break;
		case O_ALPHA:
			co.alpha = strtod(optarg, &end);
			if (*end || end == optarg || !(co.alpha > 0 && co.alpha < 1))
				return ana_cli_usage_error("check", "--alpha wants a level between 0 and 1, not '%s'", optarg);
			break;
		case 'h': check_usage(stdout); return GT_EXIT_OK;
		default: return ana_cli_usage_error("check", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	if (!golden)
		return ana_cli_usage_error("check", "--golden BASE is required");
	if (argc - optind != 1)
		return ana_cli_usage_error("check", optind == argc ? "missing NEW" : "one NEW profile only");
	if (only) {
		int rrc = regcomp(&re, only, REG_EXTENDED | REG_NOSUB);
		if (rrc) {
			char msg[200];
			regerror(rrc, &re, msg, sizeof(msg));
			return ana_cli_usage_error("check", "--only '%s': %s", only, msg);
		}
		have_re = 1;
		co.only = &re;
	}
	const char *np = argv[optind];
	if (ana_profile_load2(golden, np, &ao, &g, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "gt-analyze check: %s\n", err);
		goto out;
	}
	ana_profile_print_warnings(g, "check");
	ana_profile_print_warnings(n, "check");
	if (!force && ana_profile_match(g, n, err, sizeof(err)) < 0) {
		fprintf(stderr, "gt-analyze check: %s\n", err);
		goto out;
	}
	if (ana_check_run(g, n, &co, &r) < 0) {
		fprintf(stderr, "gt-analyze check: out of memory\n");
		goto out;
	}
	FILE *text = gt_termsafe_open(stdout); /* function names come from the target */
	ana_check_write_text(&r, &co, text ? text : stdout);
	gt_termsafe_close(text);
	if (junit) {
		char oerr[512];
		const char *inputs[] = { golden, np, NULL };
		ana_out *jo = ana_out_open(junit, inputs, oerr, sizeof(oerr));
		int wrc = jo ? ana_check_write_junit(&r, &co, golden, np, ana_out_stream(jo)) : -1;
		if (wrc < 0 && jo)
			snprintf(oerr, sizeof(oerr), "writing %s: %s", junit, strerror(errno));
		if (jo && ana_out_close(jo, wrc == 0, oerr, sizeof(oerr)) < 0)
			wrc = -1;
		if (wrc < 0) {
			fprintf(stderr, "gt-analyze check: %s\n", oerr);
			goto out;
		}
	}
	/* 1 both for a regression and for a trace that disagrees with its END record (partial);
	 * the output and the warning say which */
	status = r.n_moves ? GT_EXIT_REGRESSION : ana_profile_partial(g) || ana_profile_partial(n) ? GT_EXIT_PARTIAL
	                                                                                          : GT_EXIT_OK;
out:
	fflush(stdout);
	ana_check_result_free(&r);
	ana_profile_free(g);
	ana_profile_free(n);
	if (have_re)
		regfree(&re);
	return status;
}
