/* cairo_out.h — the Cairo backend: draws a scene (layout.h) into a PNG or PDF file. The only
 * file in render/ that talks to Cairo.
 * Return rule: render/'s (layout.h): 0 or a negative REN_E* code, NULL + *err for objects. */
#ifndef REN_CAIRO_OUT_H
#define REN_CAIRO_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "layout.h"

enum { REN_CAIRO_PNG = 1, REN_CAIRO_PDF = 2 };

/* Draw the scene (without its SVG-only items) into path as PNG or PDF, through our own writes
 * (every one checked, then flush and close). 0, or REN_EIO for a file that cannot be written,
 * REN_ENOMEM, REN_EINVAL for a size Cairo refuses; the reason in why (strerror for a failed
 * write, Cairo's own words otherwise). */
int ren_cairo_write(const ren_scene *s, const char *path, int format, char *why, size_t whylen);
/* The same into an open stream (flushed, not closed: the caller owns f and its fate). */
int ren_cairo_write_stream(const ren_scene *s, FILE *f, int format, char *why, size_t whylen);

#endif
