/* test_render_flame.c — the flame-graph tree (merging, frame-wise order, reverse, flame-chart
 * order), widths proportional to counts, pruning, diff deltas, and the folded-text parser. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "input.h"
#include "layout.h"
#include "testhelp.h"

static int parse(const char *text, ana_folded *fd)
{
	ana_fold_parse_info info;
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int rc = f ? ana_fold_parse(f, fd, &info) : GTT_ENOMEM;
	if (f)
		fclose(f);
	return rc < 0 ? rc : (int)info.n_bad;
}

/* the frame rect whose tip starts with "name (" */
static const ren_item *find_frame(const ren_scene *s, const char *name)
{
	const ren_item *it = ren_scene_items(s);
	size_t nl = strlen(name);
	for (size_t i = 0; i < ren_scene_count(s); i++)
		if (it[i].kind == REN_RECT && (it[i].flags & REN_F_FRAME) && it[i].tip &&
		    strncmp(it[i].tip, name, nl) == 0 && strncmp(it[i].tip + nl, " (", 2) == 0)
			return &it[i];
	return NULL;
}

static size_t count_frames(const ren_scene *s)
{
	size_t n = 0;
	const ren_item *it = ren_scene_items(s);
	for (size_t i = 0; i < ren_scene_count(s); i++)
		n += it[i].kind == REN_RECT && (it[i].flags & REN_F_FRAME);
	return n;
}

int main(void)
{
	ana_folded fd;
	int err;

	/* parser */
	int bad = parse("a;b;c 10\n\n a b;c  5 \r\nno-count\nx;y 3x\nz 0\nlast 7", &fd);
	th_check(bad == 2, "two bad lines counted (%d)", bad);
	th_check(fd.n == 3, "three lines with counts kept, zero-count skipped (%zu)", fd.n);
	th_check(fd.n == 3 && strcmp(fd.lines[1].stack, " a b;c") == 0 && fd.lines[1].count == 5,
	         "spaces inside a stack are kept, the last field is the count");
	th_check(fd.total == 22, "total of the counts (%llu)", (unsigned long long)fd.total);
	ana_folded_free(&fd);

	/* merging: "a;b!x" must not split the a;b subtree (plain byte order would) */
	parse("a;b;c 10\na;b!x 4\na;b 6\na;b;d 5\nq 25\na;b;c 5\n", &fd);
	ren_flame *f = ren_flame_build(&fd, 0, &err);
	ana_folded_free(&fd);
	th_check(f != NULL, "tree built");
	th_check(ren_flame_total(f) == 55, "total 55 (%llu)", (unsigned long long)ren_flame_total(f));
	th_check(ren_flame_lookup(f, "a") == 30, "a = 30 (%llu)", (unsigned long long)ren_flame_lookup(f, "a"));
	th_check(ren_flame_lookup(f, "a;b") == 26, "a;b = 26 merged across the input");
	th_check(ren_flame_lookup(f, "a;b;c") == 15, "a;b;c = 15 (duplicate lines add up)");
	th_check(ren_flame_lookup(f, "a;b!x") == 4, "a;b!x is its own frame");
	th_check(ren_flame_lookup(f, "b") == 0, "absent path is 0");
	th_check(ren_flame_nodes(f) == 7, "7 frames with the root (%zu)", ren_flame_nodes(f));
	th_check(ren_flame_depth(f) == 3, "depth 3");

	/* layout: widths proportional to counts */
	ren_flame_opts o;
	ren_flame_opts_init(&o);
	o.width_px = 1020; /* 1000 px of plot */
	ren_scene *s = ren_flame_layout(f, &o, &err);
	const ren_item *ra = find_frame(s, "a"), *rq = find_frame(s, "q"),
	               *rc = find_frame(s, "c"), *rall = find_frame(s, "all");
	th_check(ra && rq && rc && rall, "frames a, q, c and all are laid out");
	if (ra && rq && rc && rall) {
		th_check(fabs(rall->w - 1000) < 0.01, "root spans the plot (%.2f)", rall->w);
		th_check(fabs(ra->w - 1000.0 * 30 / 55) < 0.01, "width of a is 30/55 (%.2f)", ra->w);
		th_check(fabs(rc->w - 1000.0 * 15 / 55) < 0.01, "width of c is 15/55 (%.2f)", rc->w);
		th_check(ra->y > rc->y, "children above parents in a flame graph");
		th_check(fabs(rq->x - (ra->x + ra->w)) < 0.01, "siblings are adjacent");
		th_check(strstr(rc->tip, "(15 samples, 27.27%)") != NULL, "tooltip: %s", rc->tip);
	}
	ren_scene_destroy(s);

	o.inverted = 1;
	s = ren_flame_layout(f, &o, &err);
	ra = find_frame(s, "a");
	rc = find_frame(s, "c");
	th_check(ra && rc && ra->y < rc->y, "inverted: children below parents");
	ren_scene_destroy(s);

	/* pruning below --minwidth takes the subtree along */
	o.inverted = 0;
	o.minwidth_px = 1000.0 * 5 / 55 + 0.5; /* drops b!x (4) and d (5), keeps c (15) */
	s = ren_flame_layout(f, &o, &err);
	th_check(count_frames(s) == 5 && !find_frame(s, "d") && find_frame(s, "c"),
	         "frames under --minwidth pruned (%zu left)", count_frames(s));
	ren_scene_destroy(s);

	/* search highlight for static output */
	ren_flame_opts_init(&o);
	o.search = "^(c|d)$";
	s = ren_flame_layout(f, &o, &err);
	int matched_text = 0;
	for (size_t i = 0; i < ren_scene_count(s); i++) {
		const ren_item *it = &ren_scene_items(s)[i];
		if (it->kind == REN_TEXT && it->text && strcmp(it->text, "Matched: 36.36%") == 0)
			matched_text = 1;
	}
	th_check(matched_text, "static search shows the matched share (20 of 55)");
	rc = find_frame(s, "c");
	th_check(rc && (rc->flags & REN_F_MATCH), "matching frame highlighted");
	ren_scene_destroy(s);

	/* diff: share of new minus share of base, in points */
	ana_folded bfd;
	parse("a;b;c 5\na;b 5\nq 40\n", &bfd);
	ren_flame *base = ren_flame_build(&bfd, 0, &err);
	ana_folded_free(&bfd);
	th_check(base && ren_flame_diff(f, base) == 0, "diff computed");
	ren_flame_opts_init(&o);
	s = ren_flame_layout(f, &o, &err);
	rq = find_frame(s, "q");
	rc = find_frame(s, "c");
	/* q: 25/55 = 45.45% vs 40/50 = 80% -> -34.55 pts; c: 27.27% vs 10% -> +17.27 */
	th_check(rq && strstr(rq->tip, "-34.55 pts"), "q shrank: %s", rq ? rq->tip : "-");
	th_check(rc && strstr(rc->tip, "+17.27 pts"), "c grew: %s", rc ? rc->tip : "-");
	th_check(rq && rc && (rq->fill & 0xff) > (rq->fill >> 16), "shrank is blue (%06x)", rq ? rq->fill : 0);
	th_check(rc && ((rc->fill >> 16) & 0xff) > (rc->fill & 0xff), "grew is red (%06x)", rc ? rc->fill : 0);
	ren_scene_destroy(s);
	ren_flame_destroy(base);
	ren_flame_destroy(f);

	/* reverse: leaves become roots */
	parse("a;b;c 3\nx;c 2\n", &fd);
	f = ren_flame_build(&fd, REN_FLAME_REVERSE, &err);
	th_check(f && ren_flame_lookup(f, "c") == 5 && ren_flame_lookup(f, "c;b;a") == 3,
	         "reversed stacks merge at the leaf");
	ren_flame_destroy(f);
	ana_folded_free(&fd);

	/* flame chart order: only adjacent stacks merge (lines as a trace's flame chart makes them;
	 * parsed text merges equal stacks) */
	{
		static char a1[] = "t;a", b1[] = "t;b", a2[] = "t;a";
		ana_folded_line lines[] = { { .stack = a1, .count = 1 }, { .stack = b1, .count = 1 }, { .stack = a2, .count = 1 } };
		ana_folded chart = { .lines = lines, .n = 3, .total = 3 };
		f = ren_flame_build(&chart, REN_FLAME_ORDERED, &err);
	}
	th_check(f && ren_flame_nodes(f) == 5, "time order keeps a, b, a apart (%zu frames)",
	         f ? ren_flame_nodes(f) : 0);
	ren_flame_destroy(f);

	/* class suffixes on the leaf */
	parse("a;b_[py] 3\na;b_[nogil] 1\n", &fd);
	f = ren_flame_build(&fd, 0, &err);
	th_check(f && ren_flame_lookup(f, "a;b") == 4, "class suffix stripped, frames merged");
	ren_flame_opts_init(&o);
	o.palette = REN_PAL_GIL;
	s = f ? ren_flame_layout(f, &o, &err) : NULL;
	const ren_item *rb = s ? find_frame(s, "b") : NULL;
	th_check(rb && strstr(rb->tip, "75%"), "class shares in the tooltip: %s", rb ? rb->tip : "-");
	ren_scene_destroy(s);
	ren_flame_destroy(f);
	ana_folded_free(&fd);

	/* nothing to draw */
	memset(&fd, 0, sizeof(fd));
	f = ren_flame_build(&fd, 0, &err);
	th_check(!f && err == REN_EEMPTY, "empty input is REN_EEMPTY (%s)", ren_strerror(err));
	return th_report();
}
