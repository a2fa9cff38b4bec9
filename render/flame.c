/* flame.c — builds the frame tree of a flame graph (or flame chart) from folded stacks,
 * colours it (palettes, GIL classes, differences to a base) and lays it out into a scene. */
#include "flame.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt.h"
#include "model.h"

typedef struct fnode {
	const char *name;
	uint32_t name_len;
	uint32_t depth;
	uint32_t size;        /* nodes in this subtree, itself included (pre-order layout) */
	uint32_t parent;
	uint64_t count;       /* inclusive */
	uint64_t self;
	uint64_t start;       /* offset from the left in counts */
	uint64_t path_hash;
} fnode;

struct ren_flame {
	fnode *nodes;         /* pre-order; nodes[0] is the root "all" */
	size_t n, cap, cap_cls;
	uint64_t (*cls)[ANA_CLASS_COUNT]; /* per node class counts, NULL when unknown */
	double *delta;        /* per node, points of percent vs base; NULL without --diff */
	double *base_pct;
	double max_abs_delta;
	char *buf;            /* every stack string, owned */
	uint32_t max_depth;
	uint64_t total;
};

static const char *const pal_names[REN_PAL_COUNT] = {
	"hot", "mem", "io", "red", "green", "blue", "aqua", "yellow", "purple", "orange",
	"python", "gil",
};

int ren_palette_find(const char *name)
{
	for (int i = 0; i < REN_PAL_COUNT; i++)
		if (strcmp(pal_names[i], name) == 0)
			return i;
	return -1;
}

const char *ren_palette_names(void)
{
	return "hot, mem, io, red, green, blue, aqua, yellow, purple, orange, python, gil";
}

uint32_t ren_class_color(int cls)
{
	switch (cls) {
	case ANA_CLASS_PY_GIL: return 0x4c8ed9;       /* blue: Python holding the GIL */
	case ANA_CLASS_NATIVE_GIL: return 0xf29a38;   /* orange: C code that kept the GIL */
	case ANA_CLASS_NATIVE_NOGIL: return 0x5cb85c; /* green: C/CUDA that released it */
	case ANA_CLASS_WAIT_GIL: return 0xe05252;     /* red: waiting for the GIL */
	default: return 0x8c9bb0;                     /* slate: not a Python thread */
	}
}

static const struct { const char *suffix; int cls; } cls_suffix[] = {
	{"_[py]", ANA_CLASS_PY_GIL}, {"_[gil]", ANA_CLASS_NATIVE_GIL},
	{"_[nogil]", ANA_CLASS_NATIVE_NOGIL}, {"_[wait]", ANA_CLASS_WAIT_GIL},
	{"_[nopy]", ANA_CLASS_NONPY},
};

/* one input stack as seen by the builder */
typedef struct sline {
	const char *s;
	uint32_t len;
	int cls;           /* -1 unknown */
	uint64_t count;
} sline;

/* Frame-wise order: ';' sorts before every other byte, so that stacks sharing a frame
 * prefix are adjacent (plain byte order would put "a;b!x" between "a;b" and "a;b;c"). */
static int sline_cmp(const void *pa, const void *pb)
{
	const sline *a = pa, *b = pb;
	uint32_t n = a->len < b->len ? a->len : b->len;
	for (uint32_t i = 0; i < n; i++) {
		unsigned ca = (unsigned char)a->s[i], cb = (unsigned char)b->s[i];
		if (ca == cb)
			continue;
		ca = ca == ';' ? 0 : ca + 1;
		cb = cb == ';' ? 0 : cb + 1;
		return ca < cb ? -1 : 1;
	}
	return a->len < b->len ? -1 : a->len > b->len;
}

static int cls_of_mask(uint32_t mask)
{
	if (mask == 0 || (mask & (mask - 1)))
		return -1;
	return __builtin_ctz(mask);
}

static uint64_t hash_step(uint64_t h, const char *s, size_t len)
{
	h ^= 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h * 0xff51afd7ed558ccdull;
}

static fnode *push_node(ren_flame *f)
{
	if (GT_GROW(f->nodes, f->cap, f->n + 1) < 0 || (f->cls && GT_GROW(f->cls, f->cap_cls, f->n + 1) < 0))
		return NULL;
	fnode *nd = &f->nodes[f->n];
	memset(nd, 0, sizeof(*nd));
	if (f->cls)
		memset(f->cls[f->n], 0, sizeof(*f->cls));
	f->n++;
	return nd;
}

/* Copy the stacks into f->buf (reversed when asked) and describe them in lines[]. */
static int copy_lines(ren_flame *f, const ana_folded *in, unsigned flags, sline *lines,
                      size_t *n_out, int *any_cls)
{
	size_t bytes = 0, n = 0;
	for (size_t i = 0; i < in->n; i++)
		bytes += strlen(in->lines[i].stack) + 1;
	f->buf = malloc(bytes + 1);
	if (!f->buf)
		return REN_ENOMEM;
	char *p = f->buf;
	for (size_t i = 0; i < in->n; i++) {
		const ana_folded_line *l = &in->lines[i];
		size_t len = strlen(l->stack);
		if (l->count == 0 || len == 0 || len > UINT32_MAX)
			continue;
		int cls = cls_of_mask(l->cls_mask);
		/* a class suffix on the leaf frame */
		for (size_t k = 0; k < sizeof(cls_suffix) / sizeof(cls_suffix[0]); k++) {
			size_t sl = strlen(cls_suffix[k].suffix);
			if (len > sl && memcmp(l->stack + len - sl, cls_suffix[k].suffix, sl) == 0) {
				cls = cls_suffix[k].cls;
				len -= sl;
				break;
			}
		}
		if (flags & REN_FLAME_REVERSE) {
			/* frames in reverse order: copy each frame from the end */
			size_t end = len, o = 0;
			while (end > 0) {
				size_t b = end;
				while (b > 0 && l->stack[b - 1] != ';')
					b--;
				if (o)
					p[o++] = ';';
				memcpy(p + o, l->stack + b, end - b);
				o += end - b;
				end = b ? b - 1 : 0;
				if (b == 0)
					break;
			}
			len = o;
		} else {
			memcpy(p, l->stack, len);
		}
		p[len] = 0;
		lines[n] = (sline){.s = p, .len = (uint32_t)len, .cls = cls, .count = l->count};
		if (cls >= 0)
			*any_cls = 1;
		p += len + 1;
		n++;
	}
	*n_out = n;
	return 0;
}

ren_flame *ren_flame_build(const ana_folded *in, unsigned flags, int *err)
{
	ren_flame *f = calloc(1, sizeof(*f));
	sline *lines = NULL;
	uint32_t *path = NULL;
	size_t path_cap = 0, n_lines = 0;
	int any_cls = 0, rc = REN_ENOMEM;
	if (!f)
		goto out;
	lines = malloc((in->n ? in->n : 1) * sizeof(*lines));
	if (!lines)
		goto out;
	if ((rc = copy_lines(f, in, flags, lines, &n_lines, &any_cls)) < 0)
		goto out;
	rc = REN_EEMPTY;
	if (n_lines == 0)
		goto out;
	rc = REN_ENOMEM;
	if (!(flags & REN_FLAME_ORDERED))
		qsort(lines, n_lines, sizeof(*lines), sline_cmp);
	if (any_cls && GT_GROW(f->cls, f->cap_cls, 1) < 0)
		goto out;
	fnode *root = push_node(f);
	if (!root)
		goto out;
	root->name = "all";
	root->name_len = 3;
	root->path_hash = hash_step(0, "", 0);

	/* path[d] = index of the open node at depth d (path[0] = root) */
	size_t depth = 0;
	if (GT_GROW(path, path_cap, 64) < 0)
		goto out;
	path[0] = 0;
	for (size_t i = 0; i < n_lines; i++) {
		const sline *l = &lines[i];
		const char *s = l->s, *end = l->s + l->len;
		size_t d = 0;
		/* walk the frames shared with the open path */
		while (s <= end) {
			const char *e = memchr(s, ';', (size_t)(end - s));
			if (!e)
				e = end;
			size_t flen = (size_t)(e - s);
			if (d + 1 <= depth) {
				const fnode *o = &f->nodes[path[d + 1]];
				if (o->name_len == flen && memcmp(o->name, s, flen) == 0) {
					d++;
					s = e + 1;
					continue;
				}
			}
			/* a new node at depth d+1 */
			if (flen > UINT32_MAX - 1)
				flen = UINT32_MAX - 1;
			uint32_t parent = path[d];
			fnode *nd = push_node(f);
			if (!nd)
				goto out;
			nd->name = s;
			nd->name_len = (uint32_t)flen;
			nd->depth = (uint32_t)(d + 1);
			nd->parent = parent;
			nd->path_hash = hash_step(f->nodes[parent].path_hash, s, flen);
			if (GT_GROW(path, path_cap, d + 2) < 0)
				goto out;
			d++;
			path[d] = (uint32_t)(f->n - 1);
			depth = d;
			if (d > f->max_depth)
				f->max_depth = (uint32_t)d;
			s = e + 1;
		}
		depth = d;
		/* counts along the path */
		for (size_t k = 0; k <= d; k++) {
			fnode *nd = &f->nodes[path[k]];
			nd->count += l->count;
			if (f->cls && l->cls >= 0 && l->cls < ANA_CLASS_COUNT)
				f->cls[path[k]][l->cls] += l->count;
		}
		f->nodes[path[d]].self += l->count;
	}
	f->total = f->nodes[0].count;
	if (f->cls && f->cls[0][ANA_CLASS_NONPY] == f->total) {
		/* nothing but non-Python samples: class shares would only repeat "not python" */
		free(f->cls);
		f->cls = NULL;
	}

	/* subtree sizes (children follow their parent in pre-order) and start offsets */
	for (size_t i = f->n; i-- > 1;)
		f->nodes[i].size += 1;
	f->nodes[0].size += 1;
	for (size_t i = f->n; i-- > 1;)
		f->nodes[f->nodes[i].parent].size += f->nodes[i].size;
	{
		uint64_t *next = calloc(f->max_depth + 2, sizeof(*next));
		if (!next)
			goto out;
		for (size_t i = 0; i < f->n; i++) {
			fnode *nd = &f->nodes[i];
			nd->start = next[nd->depth];
			next[nd->depth] += nd->count;
			next[nd->depth + 1] = nd->start;
		}
		free(next);
	}
	rc = 0;
out:
	free(lines);
	free(path);
	if (rc < 0) {
		ren_flame_destroy(f);
		f = NULL;
	}
	if (err)
		*err = rc;
	return f;
}

void ren_flame_destroy(ren_flame *f)
{
	if (!f)
		return;
	free(f->nodes);
	free(f->cls);
	free(f->delta);
	free(f->base_pct);
	free(f->buf);
	free(f);
}

uint64_t ren_flame_total(const ren_flame *f) { return f->total; }
size_t ren_flame_nodes(const ren_flame *f) { return f->n; }
uint32_t ren_flame_depth(const ren_flame *f) { return f->max_depth; }

uint64_t ren_flame_lookup(const ren_flame *f, const char *path)
{
	size_t i = 0; /* current node */
	const char *s = path, *end = path + strlen(path);
	while (s <= end && *path) {
		const char *e = memchr(s, ';', (size_t)(end - s));
		if (!e)
			e = end;
		size_t flen = (size_t)(e - s);
		/* search the children of node i */
		size_t c = i + 1, stop = i + f->nodes[i].size, found = 0;
		while (c < stop) {
			const fnode *nd = &f->nodes[c];
			if (nd->name_len == flen && memcmp(nd->name, s, flen) == 0) {
				found = c;
				break;
			}
			c += nd->size;
		}
		if (!found)
			return 0;
		i = found;
		s = e + 1;
	}
	return f->nodes[i].count;
}

/* open-addressing table path_hash -> count for the base profile */
typedef struct hslot { uint64_t key, count; } hslot;

int ren_flame_diff(ren_flame *f, const ren_flame *base)
{
	size_t cap = 16, base_n = base ? base->n : 0;
	uint64_t base_total = base ? base->total : 0;
	while (cap < base_n * 2)
		cap *= 2;
	hslot *tab = calloc(cap, sizeof(*tab));
	double *delta = malloc(f->n * sizeof(*delta));
	double *bpct = malloc(f->n * sizeof(*bpct));
	if (!tab || !delta || !bpct) {
		free(tab);
		free(delta);
		free(bpct);
		return REN_ENOMEM;
	}
	for (size_t i = 0; i < base_n; i++) {
		uint64_t k = base->nodes[i].path_hash | 1; /* 0 marks an empty slot */
		size_t j = k & (cap - 1);
		while (tab[j].key && tab[j].key != k)
			j = (j + 1) & (cap - 1);
		tab[j].key = k;
		tab[j].count += base->nodes[i].count;
	}
	double maxabs = 0;
	for (size_t i = 0; i < f->n; i++) {
		uint64_t k = f->nodes[i].path_hash | 1, bc = 0;
		size_t j = k & (cap - 1);
		while (tab[j].key) {
			if (tab[j].key == k) {
				bc = tab[j].count;
				break;
			}
			j = (j + 1) & (cap - 1);
		}
		double pn = 100.0 * (double)f->nodes[i].count / (double)f->total;
		double pb = base_total ? 100.0 * (double)bc / (double)base_total : 0;
		delta[i] = pn - pb;
		bpct[i] = pb;
		if (fabs(delta[i]) > maxabs)
			maxabs = fabs(delta[i]);
	}
	free(tab);
	free(f->delta);
	free(f->base_pct);
	f->delta = delta;
	f->base_pct = bpct;
	f->max_abs_delta = maxabs;
	return 0;
}

void ren_flame_opts_init(ren_flame_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->width_px = 1200;
	o->minwidth_px = 0.1;
	o->frame_h = 16;
	o->font_px = 12;
	o->title = "Flame Graph";
	o->unit = "samples";
	o->palette = REN_PAL_HOT;
}

/* HSL (h in degrees, s and l in 0..1) to 0xRRGGBB */
static uint32_t hsl(double h, double s, double l)
{
	double c = (1 - fabs(2 * l - 1)) * s;
	double hp = fmod(h, 360) / 60;
	double x = c * (1 - fabs(fmod(hp, 2) - 1));
	double r = 0, g = 0, b = 0;
	if (hp < 1) { r = c; g = x; }
	else if (hp < 2) { r = x; g = c; }
	else if (hp < 3) { g = c; b = x; }
	else if (hp < 4) { g = x; b = c; }
	else if (hp < 5) { r = x; b = c; }
	else { r = c; b = x; }
	double m = l - c / 2;
	uint32_t R = (uint32_t)lround((r + m) * 255), G = (uint32_t)lround((g + m) * 255),
	         B = (uint32_t)lround((b + m) * 255);
	return R << 16 | G << 8 | B;
}

static int name_contains(const fnode *nd, const char *needle)
{
	size_t nl = strlen(needle);
	if (nl > nd->name_len)
		return 0;
	for (size_t i = 0; i + nl <= nd->name_len; i++)
		if (memcmp(nd->name + i, needle, nl) == 0)
			return 1;
	return 0;
}

static uint32_t frame_color(const ren_flame *f, size_t i, int palette)
{
	const fnode *nd = &f->nodes[i];
	uint32_t h = ren_hash(nd->name, nd->name_len);
	double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0;
	if (f->delta) {
		double t = f->max_abs_delta > 0 ? fabs(f->delta[i]) / f->max_abs_delta : 0;
		t = sqrt(t); /* small changes stay visible */
		if (f->delta[i] > 0)
			return ren_mix(0xf2f2f2, 0xd62728, t);
		if (f->delta[i] < 0)
			return ren_mix(0xf2f2f2, 0x1f5fd6, t);
		return 0xf2f2f2;
	}
	switch (palette) {
	case REN_PAL_MEM: return hsl(95 + 50 * v1, 0.45 + 0.2 * v2, 0.52);
	case REN_PAL_IO: return hsl(195 + 40 * v1, 0.5 + 0.2 * v2, 0.6);
	case REN_PAL_RED: return hsl(0 + 12 * v1, 0.7, 0.55 + 0.1 * v2);
	case REN_PAL_GREEN: return hsl(110 + 20 * v1, 0.5, 0.5 + 0.1 * v2);
	case REN_PAL_BLUE: return hsl(210 + 15 * v1, 0.6, 0.58 + 0.1 * v2);
	case REN_PAL_AQUA: return hsl(175 + 15 * v1, 0.5, 0.55 + 0.1 * v2);
	case REN_PAL_YELLOW: return hsl(50 + 10 * v1, 0.75, 0.5 + 0.1 * v2);
	case REN_PAL_PURPLE: return hsl(270 + 20 * v1, 0.45, 0.6 + 0.1 * v2);
	case REN_PAL_ORANGE: return hsl(25 + 12 * v1, 0.85, 0.55 + 0.08 * v2);
	case REN_PAL_PYTHON:
		if (i == 0)
			return 0xc8c8c8;
		if (name_contains(nd, ".py") || name_contains(nd, "[py]"))
			return hsl(205 + 15 * v1, 0.55, 0.6 + 0.08 * v2);
		if (name_contains(nd, "_[k]") || name_contains(nd, "[kernel"))
			return hsl(0, 0, 0.62 + 0.1 * v1);
		return hsl(20 + 25 * v1, 0.8, 0.56 + 0.06 * v2);
	case REN_PAL_GIL:
		if (f->cls) {
			int best = -1;
			uint64_t bc = 0;
			for (int c = 0; c < ANA_CLASS_COUNT; c++)
				if (f->cls[i][c] > bc) {
					bc = f->cls[i][c];
					best = c;
				}
			if (best >= 0)
				return ren_mix(ren_class_color(best), 0xffffff, 0.12 * v1);
		}
		return hsl(0, 0, 0.75 + 0.08 * v1);
	case REN_PAL_HOT:
	default:
		return hsl(5 + 45 * v1, 0.8 + 0.15 * v2, 0.52 + 0.1 * v1 * v2);
	}
}

/* "name (12 samples, 1.20%)" plus class shares or a diff delta */
static char *frame_tip(ren_scene *sc, const ren_flame *f, size_t i, const char *unit)
{
	const fnode *nd = &f->nodes[i];
	/* very long names keep their start in the tooltip; the DOM stays bounded */
	int nlen = nd->name_len > 4000 ? 4000 : (int)nd->name_len;
	const char *more = nd->name_len > 4000 ? "..." : "";
	double pct = 100.0 * (double)nd->count / (double)f->total;
	if (f->delta)
		return ren_scene_printf(sc, "%.*s%s (%llu %s, %.2f%%; base %.2f%%, %+.2f pts)", nlen,
		                        nd->name, more, (unsigned long long)nd->count, unit, pct,
		                        f->base_pct[i], f->delta[i]);
	if (f->cls) {
		char cbuf[256];
		size_t o = 0;
		for (int c = 0; c < ANA_CLASS_COUNT && o < sizeof(cbuf) - 40; c++) {
			if (!f->cls[i][c] || !nd->count)
				continue;
			o += (size_t)snprintf(cbuf + o, sizeof(cbuf) - o, "%s%s %.0f%%", o ? ", " : "; ",
			                      ana_class_name(c),
			                      100.0 * (double)f->cls[i][c] / (double)nd->count);
		}
		cbuf[o] = 0;
		return ren_scene_printf(sc, "%.*s%s (%llu %s, %.2f%%%s)", nlen, nd->name, more,
		                        (unsigned long long)nd->count, unit, pct, cbuf);
	}
	return ren_scene_printf(sc, "%.*s%s (%llu %s, %.2f%%)", nlen, nd->name, more,
	                        (unsigned long long)nd->count, unit, pct);
}

static int add_legend(ren_scene *sc, const ren_flame *f, const ren_flame_opts *o, double y)
{
	double x = 10;
	double fs = o->font_px;
	if (f->delta) {
		static const struct { double t; const char *label; uint32_t c; } key[] = {
			{1, "grew", 0xd62728}, {0, "same", 0xf2f2f2}, {1, "shrank", 0x1f5fd6},
		};
		for (size_t k = 0; k < 3; k++) {
			uint32_t c = ren_mix(0xf2f2f2, key[k].c, key[k].t);
			ren_item *r = ren_rect(sc, x, y - fs + 2, fs, fs, c, NULL);
			if (!r)
				return REN_ENOMEM;
			r->stroke = 0x808080;
			r->size_px = 0.5;
			if (!ren_text(sc, x + fs + 4, y, key[k].label, fs, REN_ANCHOR_START, 0))
				return REN_ENOMEM;
			x += fs + 4 + ren_text_width(strlen(key[k].label), fs) + 14;
		}
		char *note = ren_scene_printf(sc, "(colour: change of share vs base, full scale "
		                                  "%.2f pts)", f->max_abs_delta);
		if (!note || !ren_text(sc, x, y, note, fs, REN_ANCHOR_START, 0x555555))
			return REN_ENOMEM;
		return 0;
	}
	if (o->palette != REN_PAL_GIL || !f->cls)
		return 0;
	for (int c = 0; c < ANA_CLASS_COUNT; c++) {
		if (!f->cls[0][c])
			continue;
		const char *label = ana_class_name(c);
		char *t = ren_scene_printf(sc, "%s %.1f%%", label,
		                           100.0 * (double)f->cls[0][c] / (double)f->total);
		ren_item *r = ren_rect(sc, x, y - fs + 2, fs, fs, ren_class_color(c), NULL);
		if (!t || !r || !ren_text(sc, x + fs + 4, y, t, fs, REN_ANCHOR_START, 0))
			return REN_ENOMEM;
		x += fs + 4 + ren_text_width(strlen(t), fs) + 14;
	}
	return 0;
}

/* the regex wants a NUL-terminated name */
static int name_matches(const regex_t *re, const fnode *nd, char **tmp, size_t *cap)
{
	if (GT_GROW(*tmp, *cap, (size_t)nd->name_len + 1) < 0)
		return 0;
	memcpy(*tmp, nd->name, nd->name_len);
	(*tmp)[nd->name_len] = 0;
	return regexec(re, *tmp, 0, NULL, 0) == 0;
}

ren_scene *ren_flame_layout(const ren_flame *f, const ren_flame_opts *o, int *err)
{
	int rc = REN_ENOMEM;
	regex_t re;
	int have_re = 0;
	char *tmp = NULL, num[64];
	size_t tmp_cap = 0;
	double fs = o->font_px, fh = o->frame_h, xpad = 10;
	int legend = f->delta || (o->palette == REN_PAL_GIL && f->cls);
	double y_sub = fs * 2 + fs * 1.5, y_legend = (o->subtitle ? y_sub : fs * 2) + fs * 1.8;
	double ytop = (legend ? y_legend : o->subtitle ? y_sub : fs * 2) + fs;
	double ybottom = fs * 2 + 10;
	double height = ytop + ybottom + (f->max_depth + 1) * fh;
	double width = o->width_px;
	double plot_w = width - 2 * xpad;
	double scale = plot_w / (double)f->total;
	uint64_t matched = 0;
	ren_item *it;
	ren_scene *sc = ren_scene_create(width, height, REN_DOC_FLAME);
	if (!sc)
		goto out;
	if (o->search && *o->search) {
		if (regcomp(&re, o->search, REG_EXTENDED | REG_NOSUB) != 0) {
			rc = REN_EINVAL;
			goto out;
		}
		have_re = 1;
	}
	snprintf(num, sizeof(num), "%g", xpad);
	if (ren_scene_set(sc, "xpad", num) < 0)
		goto out;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)f->total);
	if (ren_scene_set(sc, "total", num) < 0)
		goto out;
	snprintf(num, sizeof(num), "%g", fs);
	if (ren_scene_set(sc, "fontpx", num) < 0 || ren_scene_set(sc, "unit", o->unit) < 0 ||
	    ren_scene_set(sc, "inverted", o->inverted ? "1" : "0") < 0 ||
	    ren_scene_set(sc, "title", o->title) < 0)
		goto out;

	/* background and chrome */
	if (!(it = ren_rect(sc, 0, 0, width, height, 0xf8f8f4, NULL)))
		goto out;
	it->id = "background";
	if (!(it = ren_text(sc, width / 2, fs * 2, o->title, fs + 5, REN_ANCHOR_MIDDLE, 0)))
		goto out;
	it->flags |= REN_F_BOLD;
	if (o->subtitle &&
	    !ren_text(sc, width / 2, y_sub, o->subtitle, fs, REN_ANCHOR_MIDDLE, 0x505050))
		goto out;
	if (legend && add_legend(sc, f, o, y_legend) < 0)
		goto out;
	if (!(it = ren_text(sc, xpad, fs * 2, "Reset Zoom", fs, REN_ANCHOR_START, 0)))
		goto out;
	it->id = "unzoom";
	it->flags |= REN_F_SVGONLY;
	if (!(it = ren_text(sc, width - xpad, fs * 2, "Search", fs, REN_ANCHOR_END, 0)))
		goto out;
	it->id = "search";
	it->flags |= REN_F_SVGONLY;
	if (!(it = ren_text(sc, xpad, height - ybottom / 2, " ", fs, REN_ANCHOR_START, 0)))
		goto out;
	it->id = "details";
	it->flags |= REN_F_SVGONLY;

	/* frames, pre-order; a pruned frame takes its subtree with it */
	for (size_t i = 0; i < f->n;) {
		const fnode *nd = &f->nodes[i];
		double w = (double)nd->count * scale;
		if (w < o->minwidth_px) {
			i += nd->size;
			continue;
		}
		double x = xpad + (double)nd->start * scale;
		double y = o->inverted ? ytop + nd->depth * fh
		                       : height - ybottom - (nd->depth + 1) * fh;
		char *tip = frame_tip(sc, f, i, o->unit);
		if (!tip || !(it = ren_rect(sc, x, y, w, fh - 1, frame_color(f, i, o->palette), tip)))
			goto out;
		it->flags |= REN_F_FRAME;
		if (have_re && name_matches(&re, nd, &tmp, &tmp_cap)) {
			it->fill = 0xe040e0;
			it->flags |= REN_F_MATCH;
		}
		const char *label = ren_fit_label(sc, nd->name, nd->name_len, w - 6, fs);
		if (label) {
			if (!(it = ren_text(sc, x + 3, y + (fh - 1) / 2 + fs * 0.36, label, fs,
			                    REN_ANCHOR_START, 0)))
				goto out;
			it->flags |= REN_F_FRAME;
		}
		i++;
	}
	if (have_re) {
		for (size_t i = 1; i < f->n;) {
			if (name_matches(&re, &f->nodes[i], &tmp, &tmp_cap)) {
				matched += f->nodes[i].count;
				i += f->nodes[i].size;
			} else {
				i++;
			}
		}
		char *m = ren_scene_printf(sc, "Matched: %.2f%%",
		                           100.0 * (double)matched / (double)f->total);
		if (!m || !ren_text(sc, width - xpad, height - ybottom / 2, m, fs, REN_ANCHOR_END, 0))
			goto out;
	} else {
		if (!(it = ren_text(sc, width - xpad, height - ybottom / 2, " ", fs, REN_ANCHOR_END, 0)))
			goto out;
		it->id = "matched";
		it->flags |= REN_F_SVGONLY;
	}
	rc = 0;
out:
	if (have_re)
		regfree(&re);
	free(tmp);
	if (rc < 0) {
		ren_scene_destroy(sc);
		sc = NULL;
	}
	if (err)
		*err = rc;
	return sc;
}
