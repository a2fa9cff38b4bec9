/* cairo_out.c — the Cairo backend: PNG and PDF from the same scene the SVG writer draws. */
#include "cairo_out.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"

/* PNG surfaces are limited by memory; Cairo itself refuses sides over 32767. */
#define PNG_MAX_SIDE 32767

static void set_rgb(cairo_t *cr, uint32_t c, double alpha)
{
	cairo_set_source_rgba(cr, ((c >> 16) & 0xff) / 255.0, ((c >> 8) & 0xff) / 255.0,
	                      (c & 0xff) / 255.0, alpha);
}

static void draw_text(cairo_t *cr, const ren_item *it)
{
	/* the scene holds only text Cairo takes (layout.h: ren_text_char), so a name from the trace
	 * cannot put the surface into an error state */
	const char *text = it->text;
	if (!text || !text[0])
		return;
	cairo_select_font_face(cr, REN_CAIRO_FONT, CAIRO_FONT_SLANT_NORMAL,
	                       (it->flags & REN_F_BOLD) ? CAIRO_FONT_WEIGHT_BOLD
	                                                : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, it->size_px > 0 ? it->size_px : 12);
	double x = it->x;
	if (it->anchor != REN_ANCHOR_START) {
		cairo_text_extents_t ext;
		cairo_text_extents(cr, text, &ext);
		x -= it->anchor == REN_ANCHOR_MIDDLE ? ext.x_advance / 2 : ext.x_advance;
	}
	set_rgb(cr, it->fill == REN_NONE ? 0 : it->fill, it->alpha / 255.0);
	cairo_move_to(cr, x, it->y);
	cairo_show_text(cr, text);
}

static void draw(cairo_t *cr, const ren_scene *s)
{
	const ren_item *items = ren_scene_items(s);
	size_t n = ren_scene_count(s);
	const char *plot = ren_scene_get(s, "plot");
	double px = 0, py = 0, pw = 0, ph = 0;
	int clip = plot && sscanf(plot, "%lf %lf %lf %lf", &px, &py, &pw, &ph) == 4;
	for (size_t i = 0; i < n; i++) {
		const ren_item *it = &items[i];
		if (it->flags & REN_F_SVGONLY)
			continue;
		int clipped = clip && (it->flags & REN_F_DATA);
		if (clipped) {
			cairo_save(cr);
			cairo_rectangle(cr, px, py, pw, ph);
			cairo_clip(cr);
		}
		switch (it->kind) {
		case REN_RECT:
			/* as in the SVG: timeline spans are at least half a pixel wide */
			cairo_rectangle(cr, it->x, it->y,
			                (it->flags & REN_F_DATA) && it->w < 0.5 ? 0.5 : it->w, it->h);
			if (it->fill != REN_NONE) {
				set_rgb(cr, it->fill, it->alpha / 255.0);
				if (it->stroke != REN_NONE)
					cairo_fill_preserve(cr);
				else
					cairo_fill(cr);
			}
			if (it->stroke != REN_NONE) {
				set_rgb(cr, it->stroke, 1);
				cairo_set_line_width(cr, it->size_px > 0 ? it->size_px : 1);
				cairo_stroke(cr);
			} else if (it->flags & REN_F_FRAME) {
				/* the thin gap between frames the SVG draws with a stroke */
				set_rgb(cr, 0xf8f8f4, 1);
				cairo_set_line_width(cr, 0.5);
				cairo_rectangle(cr, it->x, it->y, it->w, it->h);
				cairo_stroke(cr);
			}
			cairo_new_path(cr);
			break;
		case REN_TEXT:
			draw_text(cr, it);
			break;
		case REN_LINE:
			set_rgb(cr, it->stroke == REN_NONE ? 0 : it->stroke, it->alpha / 255.0);
			cairo_set_line_width(cr, it->size_px > 0 ? it->size_px : 1);
			cairo_move_to(cr, it->x, it->y);
			cairo_line_to(cr, it->x + it->w, it->y + it->h);
			cairo_stroke(cr);
			break;
		}
		if (clipped)
			cairo_restore(cr);
	}
}

/* Cairo writes through this, so that a failed write (a full disk) is ours to see: Cairo's own
 * file output left a PDF cut at the disk's limit and reported success. */
typedef struct sink { FILE *f; int err; } sink;

static cairo_status_t sink_write(void *ctx, const unsigned char *data, unsigned int len)
{
	sink *k = ctx;
	if (k->err)
		return CAIRO_STATUS_WRITE_ERROR;
	if (fwrite(data, 1, len, k->f) != len) {
		k->err = errno ? errno : EIO;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	return CAIRO_STATUS_SUCCESS;
}

/* why from a Cairo status, or from the sink's errno when the write failed */
static int cairo_failed(cairo_status_t st, const sink *k, char *why, size_t whylen)
{
	if (k->err) {
		snprintf(why, whylen, "%s", strerror(k->err));
		return REN_EIO;
	}
	snprintf(why, whylen, "%s", cairo_status_to_string(st));
	return st == CAIRO_STATUS_NO_MEMORY ? REN_ENOMEM : REN_EIO;
}

int ren_cairo_write(const ren_scene *s, const char *path, int format, char *why, size_t whylen)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(why, whylen, "%s", strerror(errno));
		return REN_EIO;
	}
	int rc = ren_cairo_write_stream(s, f, format, why, whylen);
	if (fclose(f) != 0 && !rc) {
		snprintf(why, whylen, "%s", strerror(errno));
		rc = REN_EIO;
	}
	return rc;
}

int ren_cairo_write_stream(const ren_scene *s, FILE *f, int format, char *why, size_t whylen)
{
	double W = ceil(ren_scene_width(s)), H = ceil(ren_scene_height(s));
	cairo_surface_t *surf = NULL;
	cairo_t *cr = NULL;
	int rc = 0;
	cairo_status_t st;
	sink k = {0};
	why[0] = 0;
	if (format == REN_CAIRO_PNG && (W > PNG_MAX_SIDE || H > PNG_MAX_SIDE)) {
		snprintf(why, whylen, "image of %.0fx%.0f px is too large for PNG (max %d per "
		                      "side); use .svg or .pdf", W, H, PNG_MAX_SIDE);
		return REN_EINVAL;
	}
	k.f = f;
	if (format == REN_CAIRO_PNG)
		surf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)W, (int)H);
	else
		surf = cairo_pdf_surface_create_for_stream(sink_write, &k, W, H);
	if ((st = cairo_surface_status(surf)) != CAIRO_STATUS_SUCCESS) {
		rc = cairo_failed(st, &k, why, whylen);
		goto out;
	}
	cr = cairo_create(surf);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	draw(cr, s);
	if ((st = cairo_status(cr)) != CAIRO_STATUS_SUCCESS) {
		rc = cairo_failed(st, &k, why, whylen);
		goto out;
	}
	if (format == REN_CAIRO_PNG) {
		st = cairo_surface_write_to_png_stream(surf, sink_write, &k);
	} else {
		cairo_surface_finish(surf);
		st = cairo_surface_status(surf);
	}
	if (st != CAIRO_STATUS_SUCCESS || k.err)
		rc = cairo_failed(st, &k, why, whylen);
out:
	if (cr)
		cairo_destroy(cr);
	if (surf)
		cairo_surface_destroy(surf);
	if (!rc && fflush(k.f) != 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		rc = REN_EIO;
	}
	return rc;
}
