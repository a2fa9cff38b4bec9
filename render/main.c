/* main.c — gt-render's command line: parses options, then hands the work to input.c,
 * flame.c, timeline.c and the backends (svg.c, cairo_out.c). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cairo_out.h"
#include "cli.h"
#include "fold.h"
#include "outfile.h"
#include "gt_termsafe.h"
#include "flame.h"
#include "gt_util.h"
#include "gtt.h"
#include "input.h"
#include "source.h"
#include "svg.h"
#include "timeline.h"


static const char usage_text[] =
	"usage: gt-render flame INPUT [-o OUT.svg|.png|.pdf] [options]\n"
	"       gt-render timeline TRACE -o OUT.svg|.png|.pdf [--from S] [--to S] [--threads REGEX]\n"
	"\n"
	"INPUT is a .gtt trace, a folded-stacks file (\"root;...;leaf COUNT\" lines, as from\n"
	"gt-analyze fold or FlameGraph's stackcollapse scripts), or - for stdin. Folded text with two\n"
	"counts per line (FlameGraph's difference format) is drawn as a differential flame graph.\n"
	"The output format follows OUT's extension (default: SVG on stdout).\n"
	"\n"
	"flame options:\n"
	"  -o, --output FILE     output file (.svg, .png or .pdf)\n"
	"      --title TEXT      title (default \"Flame Graph\", \"Flame Chart\" with --flamechart)\n"
	"      --subtitle TEXT   second line under the title\n"
	"      --width PX        image width (1200)\n"
	"      --height PX       frame height (16)\n"
	"      --fontsize PX     label size (12)\n"
	"      --minwidth PX|N%%  leave out frames narrower than this (0.1 px)\n"
	"      --colors NAME     palette: %s\n"
	"                        (default hot; gil for a trace with Python threads)\n"
	"      --inverted        icicle graph: roots at the top\n"
	"      --reverse         reverse each stack: leaves become roots\n"
	"      --diff BASE       differential: widths from INPUT, colour from the change of each\n"
	"                        frame's share against BASE (red grew, blue shrank)\n"
	"      --flamechart      stacks in time order instead of merged (trace input)\n"
	"      --gil WHICH       only samples of these GIL classes (trace input): held, released,\n"
	"                        python, native-gil, nogil, wait, native, nopy, any; a comma list\n"
	"                        (held = python,native-gil; released = nogil,wait)\n"
	"      --threads         a root frame per thread (trace input)\n"
	"      --tid LIST        only these threads (comma list, trace input)\n"
	"      --from S, --to S  only samples in this window, seconds from the trace start (only\n"
	"                        the window's chunks are read)\n"
	"      --search REGEX    highlight matching frames (and show the matched share)\n"
	"      --countname WORD  what the counts are (\"samples\"; \"ns GPU time\" with gpu-time)\n"
	"      --weight WHAT     samples (default), or gpu-time (trace input): the device time of\n"
	"                        each kernel, copy and memset under the launch stack of the call that\n"
	"                        started it, [kernel NAME] as leaf, [no launch stack] for work no\n"
	"                        captured stack stands for (gt-analyze fold --weight gpu-time); or\n"
	"                        wall: the Python threads' wall time by Python stack from the Python\n"
	"                        reader's reads, running or blocked (gt-analyze fold --weight wall)\n"
	"      --python-frames function|line  Python frames by name only, or each as\n"
	"                        \"function (file:line)\" (default: the place where a name is\n"
	"                        ambiguous: <module>, <lambda>, ...; trace input)\n"
	"\n"
	"timeline options:\n"
	"  -o, --output FILE     output file (.svg, .png or .pdf)\n"
	"      --from S, --to S  time window, seconds from the trace start (only its chunks are read);\n"
	"                        a trace over 256 MiB needs one (--from 0: all of it)\n"
	"      --threads REGEX   only threads whose \"name tid\" matches\n"
	"      --width PX        image width (1400)\n"
	"      --title TEXT      title\n"
	"      --max-spans N     over N CUDA, API, NVTX and GIL spans (200000), those narrower than a\n"
	"                        pixel are merged per pixel column, with a tooltip saying how many;\n"
	"                        0: never (a long recording's SVG can then reach gigabytes)\n"
	"\n"
	"  -h, --help            this text\n"
	"  -V, --version         version\n"
	"\n"
	"Exit status: 0 ok, 1 drawn from a trace whose END record disagrees with its contents\n"
	"(partial), 2 unreadable or broken input (or output not writable), 64 usage.\n";

enum {
	OPT_TITLE = 256, OPT_SUBTITLE, OPT_WIDTH, OPT_HEIGHT, OPT_FONTSIZE, OPT_MINWIDTH,
	OPT_COLORS, OPT_INVERTED, OPT_REVERSE, OPT_DIFF, OPT_FLAMECHART, OPT_GIL, OPT_THREADS,
	OPT_TID, OPT_FROM, OPT_TO, OPT_SEARCH, OPT_COUNTNAME, OPT_FORMAT, OPT_WEIGHT, OPT_PYFRAMES,
	OPT_MAXSPANS,
};

static const struct option long_opts[] = {
	{"output", required_argument, 0, 'o'},
	{"title", required_argument, 0, OPT_TITLE},
	{"subtitle", required_argument, 0, OPT_SUBTITLE},
	{"width", required_argument, 0, OPT_WIDTH},
	{"height", required_argument, 0, OPT_HEIGHT},
	{"fontsize", required_argument, 0, OPT_FONTSIZE},
	{"minwidth", required_argument, 0, OPT_MINWIDTH},
	{"colors", required_argument, 0, OPT_COLORS},
	{"colours", required_argument, 0, OPT_COLORS},
	{"inverted", no_argument, 0, OPT_INVERTED},
	{"reverse", no_argument, 0, OPT_REVERSE},
	{"diff", required_argument, 0, OPT_DIFF},
	{"flamechart", no_argument, 0, OPT_FLAMECHART},
	{"gil", required_argument, 0, OPT_GIL},
	{"threads", optional_argument, 0, OPT_THREADS},
	{"tid", required_argument, 0, OPT_TID},
	{"from", required_argument, 0, OPT_FROM},
	{"to", required_argument, 0, OPT_TO},
	{"search", required_argument, 0, OPT_SEARCH},
	{"countname", required_argument, 0, OPT_COUNTNAME},
	{"format", required_argument, 0, OPT_FORMAT},
	{"weight", required_argument, 0, OPT_WEIGHT},
	{"python-frames", required_argument, 0, OPT_PYFRAMES},
	{"max-spans", required_argument, 0, OPT_MAXSPANS},
	{"help", no_argument, 0, 'h'},
	{"version", no_argument, 0, 'V'},
	{0, 0, 0, 0},
};

typedef struct cli {
	const char *cmd, *input, *output, *title, *subtitle, *colors, *diff, *gil, *tid;
	const char *threads_re, *search, *countname, *format;
	double width, height, fontsize, minwidth, minwidth_pct, from_s, to_s, max_spans;
	int have_max_spans;
	int inverted, reverse, flamechart, threads, have_from, have_to;
	int weight;   /* ANA_WEIGHT_* */
	int python_frames;      /* enum ana_pyframes */
} cli;

static void usage(FILE *f)
{
	fprintf(f, usage_text, ren_palette_names());
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "gt-render: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see gt-render --help)\n");
	return GT_EXIT_USAGE;
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

/* Output format from --format or the extension: 's'vg, 'p'ng, 'd' pdf; 0 unknown. */
static int out_format(const cli *c)
{
	const char *f = c->format;
	if (!f) {
		if (!c->output || strcmp(c->output, "-") == 0)
			return 's';
		f = strrchr(c->output, '.');
		if (!f)
			return 's';
		f++;
	}
	if (strcasecmp(f, "svg") == 0)
		return 's';
	if (strcasecmp(f, "png") == 0)
		return 'p';
	if (strcasecmp(f, "pdf") == 0)
		return 'd';
	return 0;
}

static int write_scene(const cli *c, const ren_scene *sc)
{
	int fmt = out_format(c), rc;
	char err[512] = "", oerr[512] = "";
	if ((fmt == 'p' || fmt == 'd') && (!c->output || strcmp(c->output, "-") == 0)) {
		fprintf(stderr, "gt-render: PNG and PDF need -o FILE\n");
		return GT_EXIT_USAGE;
	}
	const char *inputs[] = { c->input, c->diff, NULL };
	ana_out *o = ana_out_open(c->output, inputs, oerr, sizeof(oerr));
	if (!o) {
		fprintf(stderr, "gt-render: %s\n", oerr);
		return GT_EXIT_BROKEN;
	}
	if (fmt == 'p' || fmt == 'd')
		rc = ren_cairo_write_stream(sc, ana_out_stream(o), fmt == 'p' ? REN_CAIRO_PNG : REN_CAIRO_PDF, err,
		                            sizeof(err));
	else if ((rc = ren_svg_write(sc, ana_out_stream(o))) < 0)
		snprintf(err, sizeof(err), "%s", rc == REN_ENOMEM ? "out of memory" : strerror(errno));
	/* a failed write leaves no file of ours and whatever was at the output's name as it was */
	if (rc < 0) {
		ana_out_close(o, 0, oerr, sizeof(oerr));
		fprintf(stderr, "gt-render: %s: write failed: %s\n", c->output ? c->output : "stdout",
		        err[0] ? err : ren_strerror(rc));
		return GT_EXIT_BROKEN;
	}
	if (ana_out_close(o, 1, oerr, sizeof(oerr)) < 0) {
		fprintf(stderr, "gt-render: %s\n", oerr);
		return GT_EXIT_BROKEN;
	}
	return 0;
}

static void print_warnings(const ana_source *in, const char *path)
{
	if (in->info.n_bad)
		fprintf(stderr, "gt-render: warning: %s: %zu line%s not \"stack COUNT\" (first: line "
		                "%zu), skipped\n", path, in->info.n_bad, in->info.n_bad == 1 ? " is" : "s are",
		        in->info.first_bad_line);
	if (in->model) {
		size_t n = 0;
		const char *const *w = ana_model_warnings(in->model, &n);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "gt-render: warning: %s\n", w[i]);
	}
}

/* FlameGraph's difference format ("STACK BEFORE AFTER"): the AFTER counts (which==1) or the
 * BEFORE ones (0) as folded lines of their own, lines without samples on that side left out.
 * The stacks are borrowed from two: free with free(out->lines) only. */
static int split_difference(const ana_folded *two, int which, ana_folded *out)
{
	memset(out, 0, sizeof(*out));
	out->lines = malloc((two->n ? two->n : 1) * sizeof(*out->lines));
	if (!out->lines)
		return REN_ENOMEM;
	for (size_t i = 0; i < two->n; i++) {
		uint64_t c = which ? two->lines[i].count : two->lines[i].base_count;
		if (!c)
			continue;
		out->lines[out->n] = two->lines[i];
		out->lines[out->n].count = c;
		out->lines[out->n++].base_count = 0;
		out->total += c; /* fits: the parser refused sums past 2^64 - 1 on each side */
	}
	return 0;
}

/* Folded stacks of one input: the file's lines, or a trace folded per class. */
/* --from/--to go to the loader: it reads only the chunks of the window (the trace's chunk
 * index), so a window of a long recording costs what the window holds. */
static void window_opts(const cli *c, ana_opts *o)
{
	o->has_from = c->have_from;
	o->has_to = c->have_to;
	if (c->have_from)
		o->from_ns = gt_s_to_ns(c->from_s);
	if (c->have_to)
		o->to_ns = gt_s_to_ns(c->to_s);
}

static int input_folded(const cli *c, const ana_source *in, ana_folded *out, int *owned)
{
	*owned = 0;
	if (!in->model) {
		*out = in->folded;
		return 0;
	}
	ana_fold_opts o;
	ana_fold_opts_init(&o);
	o.threads = c->threads;
	o.gil = c->gil ? ana_gil_parse(c->gil) : -1;
	o.tid_filter = c->tid;
	/* --from/--to: the loader read only the window (window_opts), nothing to cut here */
	*owned = 1;
	if (c->weight == ANA_WEIGHT_GPU_TIME || c->weight == ANA_WEIGHT_WALL) {
		o.weight = c->weight;
		o.python_frames = c->python_frames;
		return ana_fold(in->model, &o, out) < 0 ? REN_ENOMEM : 0; /* fails for memory only */
	}
	return ren_input_fold_classes(in->model, &o, out);
}

static int cmd_flame(cli *c)
{
	ana_source in = {0}, base = {0};
	ren_flame *f = NULL, *bf = NULL;
	ren_scene *sc = NULL;
	ana_folded fd = {0}, bfd = {0};
	int owned = 0, bowned = 0, rc, status = GT_EXIT_BROKEN;
	char err[512] = "";
	ana_opts aopts;
	ana_opts_init(&aopts);
	aopts.progress = isatty(2);
	aopts.python_frames = c->python_frames;
	window_opts(c, &aopts);
	ana_fold_load_opts(&aopts, c->weight, c->flamechart);

	ren_flame_opts o;
	ren_flame_opts_init(&o);
	if (c->width)
		o.width_px = c->width;
	if (c->height)
		o.frame_h = c->height;
	if (c->fontsize)
		o.font_px = c->fontsize;
	if (c->minwidth >= 0)
		o.minwidth_px = c->minwidth;
	if (c->minwidth_pct >= 0)
		o.minwidth_px = (o.width_px - 20) * c->minwidth_pct / 100.0;
	o.title = c->title ? c->title : c->flamechart ? "Flame Chart" : c->diff ? "Differential "
	          "Flame Graph" : c->weight == ANA_WEIGHT_GPU_TIME ? "GPU time by launch site"
	          : c->weight == ANA_WEIGHT_WALL ? "Python wall time (every thread, running or not)" : "Flame Graph";
	o.subtitle = c->subtitle;
	o.inverted = c->inverted;
	o.flamechart = c->flamechart;
	o.unit = c->countname ? c->countname : c->weight == ANA_WEIGHT_GPU_TIME ? "ns GPU time"
	         : c->weight == ANA_WEIGHT_WALL ? "Python stack reads" : "samples";
	if (c->colors)
		o.palette = ren_palette_find(c->colors);

	if ((rc = ana_source_open(&in, c->input, &aopts, err, sizeof(err))) < 0) {
		fprintf(stderr, "gt-render: %s\n", err);
		goto out;
	}
	print_warnings(&in, c->input);
	if (in.folded.two_counts && !c->title)
		o.title = "Differential Flame Graph";
	if (in.folded.two_counts && c->diff) {
		fprintf(stderr, "gt-render: %s is already a difference (FlameGraph's two counts per line): "
		                "--diff would compare it again\n", c->input);
		status = GT_EXIT_USAGE;
		goto out;
	}
	if ((c->flamechart || c->gil || c->threads || c->tid || c->have_from || c->have_to || c->weight) &&
	    !in.model) {
		fprintf(stderr, "gt-render: --flamechart, --gil, --threads, --tid, --from, --to and --weight "
		                "need a trace, and %s is folded stacks\n", c->input);
		status = GT_EXIT_USAGE;
		goto out;
	}
	if (c->flamechart) {
		rc = ren_flamechart_fold(in.model, c->tid, c->gil ? ana_gil_parse(c->gil) : -1, 0, 0, &fd);
		owned = 1;
	} else if (in.folded.two_counts) {
		/* the widths from the second counts, the colours from the change against the first */
		if ((rc = split_difference(&in.folded, 1, &fd)) == 0 && (rc = split_difference(&in.folded, 0, &bfd)) == 0)
			owned = bowned = 2;
	} else {
		rc = input_folded(c, &in, &fd, &owned);
	}
	if (rc < 0) {
		fprintf(stderr, "gt-render: %s: %s\n", c->input, ren_strerror(rc));
		goto out;
	}
	if (!c->colors && in.model && !c->diff && c->weight == ANA_WEIGHT_SAMPLES)
		for (size_t i = 0; i < in.model->threads.n; i++)
			if (in.model->threads.v[i].is_python)
				o.palette = REN_PAL_GIL;
	unsigned flags = (c->reverse ? REN_FLAME_REVERSE : 0) |
	                 (c->flamechart ? REN_FLAME_ORDERED : 0);
	if (!(f = ren_flame_build(&fd, flags, &rc))) {
		if (rc == REN_EEMPTY)
			fprintf(stderr, "gt-render: %s: %s%s\n", c->input,
			        c->weight == ANA_WEIGHT_GPU_TIME ? "no GPU work to draw"
			        : c->weight == ANA_WEIGHT_WALL ? "no Python stack reads to draw" : "no samples to draw",
			        in.model ? " (in the selected threads, classes and time window)" : "");
		else
			fprintf(stderr, "gt-render: %s\n", ren_strerror(rc));
		goto out;
	}
	if (in.folded.two_counts) {
		if (!(bf = ren_flame_build(&bfd, flags & REN_FLAME_REVERSE, &rc)) && rc != REN_EEMPTY) {
			fprintf(stderr, "gt-render: %s\n", ren_strerror(rc));
			goto out;
		}
		/* nothing before: every frame is new (empty base) */
		if ((rc = ren_flame_diff(f, bf)) < 0) {
			fprintf(stderr, "gt-render: %s\n", ren_strerror(rc));
			goto out;
		}
	}
	if (c->diff) {
		if ((rc = ana_source_open(&base, c->diff, &aopts, err, sizeof(err))) < 0) {
			fprintf(stderr, "gt-render: %s\n", err);
			goto out;
		}
		print_warnings(&base, c->diff);
		if (base.folded.two_counts) {
			fprintf(stderr, "gt-render: --diff %s is a difference itself (FlameGraph's two counts per "
			                "line); give the profile it was made from\n", c->diff);
			status = GT_EXIT_USAGE;
			goto out;
		}
		if ((rc = input_folded(c, &base, &bfd, &bowned)) < 0 ||
		    !(bf = ren_flame_build(&bfd, flags & REN_FLAME_REVERSE, &rc))) {
			fprintf(stderr, "gt-render: %s: %s\n", c->diff,
			        rc == REN_EEMPTY ? "no samples to compare with" : ren_strerror(rc));
			goto out;
		}
		if ((rc = ren_flame_diff(f, bf)) < 0) {
			fprintf(stderr, "gt-render: %s\n", ren_strerror(rc));
			goto out;
		}
	}
	int fmt = out_format(c);
	if (fmt != 's')
		o.search = c->search;
	if (!(sc = ren_flame_layout(f, &o, &rc))) {
		fprintf(stderr, "gt-render: %s\n", ren_strerror(rc));
		goto out;
	}
	if (fmt == 's' && c->search && ren_scene_set(sc, "search", c->search) < 0)
		goto out;
	status = write_scene(c, sc);
	/* a trace that disagrees with its END record: drawn, but partial */
	/* drawn from less than the input held: lines skipped, or samples the END record counts missing */
	if (status == GT_EXIT_OK && ((in.model && in.model->end_mismatch) || (base.model && base.model->end_mismatch) ||
	                             in.info.n_bad || base.info.n_bad))
		status = GT_EXIT_PARTIAL;
out:
	ren_scene_destroy(sc);
	ren_flame_destroy(f);
	ren_flame_destroy(bf);
	if (owned == 2)
		free(fd.lines); /* the stacks are the input's */
	else if (owned)
		ana_folded_free(&fd);
	if (bowned == 2)
		free(bfd.lines);
	else if (bowned)
		ana_folded_free(&bfd);
	ana_source_close(&in);
	ana_source_close(&base);
	return status;
}

static int cmd_timeline(cli *c)
{
	ana_source in = {0};
	ren_scene *sc = NULL;
	int rc, status = GT_EXIT_BROKEN;
	char err[512] = "";
	/* the timeline keeps every record it draws (~15 bytes of memory per byte of a GPU trace):
	 * past a bounded size it wants a window (even --from 0 says so), as the Chrome export does */
	struct stat st;
	if (!c->have_from && !c->have_to && stat(c->input, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > REN_TL_MAX_BYTES) {
		fprintf(stderr, "gt-render: %s: a timeline of %.0f MiB of trace keeps every record it draws (about "
		        "%.0f GiB of memory for a GPU trace); give a window with --from S --to S (or --from 0 for all "
		        "of it)\n", c->input, (double)st.st_size / 1048576.0, 15.0 * (double)st.st_size / 1073741824.0);
		return GT_EXIT_USAGE;
	}
	ana_opts aopts;
	ana_opts_init(&aopts);
	aopts.progress = isatty(2);
	aopts.keep_switches = 1; /* the on-CPU lanes */
	aopts.python_frames = c->python_frames;
	window_opts(c, &aopts);
	aopts.window_whole = 1; /* spans crossing the window's edges: clipped by the drawing, their
	                           tooltips give their real length */
	if ((rc = ana_source_open(&in, c->input, &aopts, err, sizeof(err))) < 0) {
		fprintf(stderr, "gt-render: %s\n", err);
		goto out;
	}
	if (!in.model) {
		fprintf(stderr, "gt-render: %s: a timeline needs a .gtt trace, not folded stacks\n",
		        c->input);
		goto out;
	}
	print_warnings(&in, c->input);
	ren_timeline_opts o;
	ren_timeline_opts_init(&o);
	if (c->width)
		o.width_px = c->width;
	if (c->title)
		o.title = c->title;
	o.threads_re = c->threads_re;
	if (c->have_max_spans)
		o.max_spans = (uint64_t)c->max_spans;
	uint64_t n_spans = ren_timeline_spans(in.model);
	if (o.max_spans && n_spans > o.max_spans)
		fprintf(stderr, "gt-render: %s: %" PRIu64 " CUDA, API, NVTX and GIL spans (over --max-spans %" PRIu64
		        "): those narrower than a pixel are merged per pixel column; --from/--to draws a window span "
		        "by span\n", c->input, n_spans, o.max_spans);
	if (!(sc = ren_timeline_layout(in.model, &o, &rc, err, sizeof(err)))) {
		fprintf(stderr, "gt-render: %s: %s\n", c->input, err[0] ? err : "cannot lay out");
		goto out;
	}
	status = write_scene(c, sc);
	if (status == GT_EXIT_OK && in.model->end_mismatch)
		status = GT_EXIT_PARTIAL;
out:
	ren_scene_destroy(sc);
	ana_source_close(&in);
	return status;
}

int main(int argc, char **argv)
{
	cli c = {.minwidth = -1, .minwidth_pct = -1};
	int opt;
	gt_termsafe_stderr(); /* warnings quote names from the trace */
	ana_cli_catch_sigbus();
	if (argc < 2) {
		usage(stderr);
		return GT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("gt-render %s\n", GT_VERSION);
		return 0;
	}
	c.cmd = argv[1];
	if (strcmp(c.cmd, "flame") != 0 && strcmp(c.cmd, "timeline") != 0)
		return usage_error("unknown command '%s'; use flame or timeline", c.cmd);
	optind = 2;
	while ((opt = getopt_long(argc, argv, "o:hV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'o': c.output = optarg; break;
		case OPT_TITLE: c.title = optarg; break;
		case OPT_SUBTITLE: c.subtitle = optarg; break;
		case OPT_WIDTH:
			if (parse_num(optarg, 200, 100000, &c.width) < 0)
				return usage_error("--width wants pixels between 200 and 100000, not '%s'", optarg);
			if (strcmp(c.cmd, "timeline") == 0 && c.width < REN_TL_MIN_WIDTH)
				return usage_error("timeline --width wants at least 400 px (the thread labels take "
				                   "230), not '%s'", optarg);
			break;
		case OPT_HEIGHT:
			if (parse_num(optarg, 4, 200, &c.height) < 0)
				return usage_error("--height wants a frame height of 4 to 200 px, not '%s'", optarg);
			break;
		case OPT_FONTSIZE:
			if (parse_num(optarg, 4, 100, &c.fontsize) < 0)
				return usage_error("--fontsize wants 4 to 100 px, not '%s'", optarg);
			break;
		case OPT_MINWIDTH: {
			size_t l = strlen(optarg);
			char tmp[64];
			if (l && l < sizeof(tmp) && optarg[l - 1] == '%') {
				memcpy(tmp, optarg, l - 1);
				tmp[l - 1] = 0;
				if (parse_num(tmp, 0, 100, &c.minwidth_pct) < 0)
					return usage_error("--minwidth wants pixels or a percentage, not '%s'", optarg);
			} else if (parse_num(optarg, 0, 100000, &c.minwidth) < 0) {
				return usage_error("--minwidth wants pixels or a percentage, not '%s'", optarg);
			}
			break;
		}
		case OPT_COLORS:
			if (ren_palette_find(optarg) < 0)
				return usage_error("unknown palette '%s' for --colors", optarg);
			c.colors = optarg;
			break;
		case OPT_INVERTED: c.inverted = 1; break;
		case OPT_REVERSE: c.reverse = 1; break;
		case OPT_DIFF: c.diff = optarg; break;
		case OPT_FLAMECHART: c.flamechart = 1; break;
		case OPT_GIL:
			if (ana_gil_parse(optarg) < -1)
				return usage_error("--gil wants " ANA_GIL_WORDS ", not '%s'", optarg);
			c.gil = optarg;
			break;
		case OPT_THREADS:
			c.threads = 1;
			if (optarg)
				c.threads_re = optarg;
			else if (strcmp(c.cmd, "timeline") == 0 && optind < argc && argv[optind][0] != '-')
				c.threads_re = argv[optind++];
			break;
		case OPT_TID:
			if (!optarg[0] || strspn(optarg, "0123456789,") != strlen(optarg) || strstr(optarg, ",,") ||
			    optarg[0] == ',' ||
			    optarg[strlen(optarg) - 1] == ',' || ana_fold_tids_check(optarg) < 0)
				return usage_error("--tid wants a comma-separated list of thread ids, not '%s'", optarg);
			c.tid = optarg;
			break;
		case OPT_FROM:
			if (parse_num(optarg, 0, 1e9, &c.from_s) < 0) /* seconds: at most 31 years */
				return usage_error("--from wants seconds from the trace start, not '%s'", optarg);
			c.have_from = 1;
			break;
		case OPT_TO:
			if (parse_num(optarg, 0, 1e9, &c.to_s) < 0)
				return usage_error("--to wants seconds from the trace start, not '%s'", optarg);
			c.have_to = 1;
			break;
		case OPT_PYFRAMES:
			if (ana_cli_python_frames(optarg, &c.python_frames) < 0)
				return usage_error("--python-frames wants function or line, not '%s'", optarg);
			break;
		case OPT_SEARCH: c.search = optarg; break;
		case OPT_COUNTNAME: c.countname = optarg; break;
		case OPT_WEIGHT:
			if ((c.weight = ana_fold_weight_parse(optarg)) < 0)
				return usage_error("--weight wants samples, gpu-time or wall, not '%s'", optarg);
			break;
		case OPT_FORMAT: c.format = optarg; break;
		case OPT_MAXSPANS:
			if (strcmp(c.cmd, "timeline") != 0)
				return usage_error("--max-spans is a timeline option%s", "");
			if (parse_num(optarg, 0, 1e15, &c.max_spans) < 0 || c.max_spans != floor(c.max_spans))
				return usage_error("--max-spans wants a whole number of spans (0: never merge), not '%s'", optarg);
			c.have_max_spans = 1;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("gt-render %s\n", GT_VERSION); return 0;
		default: return usage_error("%s", "bad option");
		}
	}
	if (optind >= argc)
		return usage_error("%s: missing INPUT", c.cmd);
	c.input = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!out_format(&c))
		return usage_error("cannot tell the output format of '%s'; use .svg, .png or .pdf",
		                   c.output);
	if (c.have_from && c.have_to && c.to_s <= c.from_s)
		return usage_error("--to must be after --from%s", "");
	if (c.weight == ANA_WEIGHT_GPU_TIME && (c.gil || c.flamechart || c.diff || strcmp(c.cmd, "flame") != 0))
		return usage_error("--weight gpu-time is for flame graphs of a trace, without --gil, --flamechart "
		                   "or --diff%s", "");
	if (c.weight == ANA_WEIGHT_WALL && (c.flamechart || c.diff || strcmp(c.cmd, "flame") != 0))
		return usage_error("--weight wall is for flame graphs of a trace, without --flamechart or --diff%s", "");
	if (c.search) {
		regex_t re;
		if (regcomp(&re, c.search, REG_EXTENDED | REG_NOSUB) != 0)
			return usage_error("--search: bad regular expression '%s'", c.search);
		regfree(&re);
	}
	if (c.threads_re) {
		regex_t re;
		if (regcomp(&re, c.threads_re, REG_EXTENDED | REG_NOSUB) != 0)
			return usage_error("--threads: bad regular expression '%s'", c.threads_re);
		regfree(&re);
	}
	if (strcmp(c.cmd, "flame") == 0)
		return cmd_flame(&c);
	return cmd_timeline(&c);
}
