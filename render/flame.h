/* flame.h — flame graphs: the frame tree built from folded stacks (merged, or in time order
 * for a flame chart), differential colouring against a base profile, and the layout of the
 * tree into a display list (layout.h) that svg.c and cairo_out.c draw.
 * Return rule: render/'s (layout.h): 0 or a negative REN_E* code, NULL + *err for objects. */
#ifndef REN_FLAME_H
#define REN_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "fold.h"
#include "layout.h"

/* Colour schemes (--colors) */
enum ren_palette {
	REN_PAL_HOT = 0,    /* red to yellow, by name */
	REN_PAL_MEM,        /* greens */
	REN_PAL_IO,         /* blues */
	REN_PAL_RED, REN_PAL_GREEN, REN_PAL_BLUE, REN_PAL_AQUA, REN_PAL_YELLOW, REN_PAL_PURPLE,
	REN_PAL_ORANGE,
	REN_PAL_PYTHON,     /* Python frames blue, native orange, kernel grey (by name shape) */
	REN_PAL_GIL,        /* by GIL class of the frame's samples (majority), with a legend */
	REN_PAL_COUNT,
};
/* Palette by name ("hot", "gil", ...); -1 when unknown. */
int ren_palette_find(const char *name);
/* Comma-separated list of palette names, for --help. */
const char *ren_palette_names(void);
/* Fill colour of class c (enum ana_class) used by every view, and its legend words. */
uint32_t ren_class_color(int cls);

/* Build flags */
#define REN_FLAME_REVERSE 0x1u /* reverse each stack (leaf becomes root) */
#define REN_FLAME_ORDERED 0x2u /* keep input order, merge only adjacent stacks (flame chart) */

typedef struct ren_flame ren_flame;

/* Build the frame tree from folded lines (copied: the input may be freed afterwards).
 * A line's cls_mask with exactly one bit gives the class of its samples; a leaf frame
 * ending in a class suffix "_[py]", "_[gil]", "_[nogil]", "_[wait]" or "_[nopy]" gives it
 * too (the suffix is removed). NULL on ENOMEM or when there is nothing to draw
 * (*err = REN_ENOMEM or REN_EEMPTY). */
ren_flame *ren_flame_build(const ana_folded *in, unsigned flags, int *err);
/* Free. NULL ok. */
void ren_flame_destroy(ren_flame *f);
/* Total count (the root's width) and the number of frames (root included). */
uint64_t ren_flame_total(const ren_flame *f);
size_t ren_flame_nodes(const ren_flame *f);
/* Maximum stack depth (root excluded). */
uint32_t ren_flame_depth(const ren_flame *f);
/* Count of the frame reached by the path "a;b;c" from the root, 0 when absent. */
uint64_t ren_flame_lookup(const ren_flame *f, const char *path);
/* Colour by difference to base: each frame's share of f's total minus the same path's share
 * of base's total, in points of percent (base NULL: an empty profile, every frame new).
 * Switches layout to the red/blue diff palette. 0 or REN_ENOMEM. */
int ren_flame_diff(ren_flame *f, const ren_flame *base);

typedef struct ren_flame_opts {
	double width_px;      /* image width (1200) */
	double minwidth_px;   /* frames narrower than this are left out with their children (0.1) */
	double frame_h;       /* frame height in px (16) */
	double font_px;       /* label size (12) */
	const char *title;    /* "Flame Graph" */
	const char *subtitle; /* NULL for none */
	const char *unit;     /* word for counts in tooltips ("samples") */
	int palette;          /* enum ren_palette */
	int inverted;         /* icicle: root at the top */
	int flamechart;       /* x is time order: adds an axis note instead of "merged" */
	const char *search;   /* regex to highlight in static outputs (PNG/PDF), NULL none */
} ren_flame_opts;
void ren_flame_opts_init(ren_flame_opts *o);

/* Lay the tree out into a new scene (REN_DOC_FLAME). NULL with *err (REN_ENOMEM, REN_EINVAL for
 * a bad search expression) on failure. The scene's
 * settings hold what the SVG script needs ("xpad", "total", "unit", "fontpx", ...). */
ren_scene *ren_flame_layout(const ren_flame *f, const ren_flame_opts *o, int *err);

#endif
