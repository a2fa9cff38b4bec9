/* svg.h — writes a scene (layout.h) as one self-contained SVG file: XML-escaped text, the
 * interactive script embedded, no external scripts or fonts.
 * Return rule: render/'s (layout.h): 0 or a negative REN_E* code, NULL + *err for objects. */
#ifndef REN_SVG_H
#define REN_SVG_H

#include <stddef.h>
#include <stdio.h>

#include "layout.h"

/* Write the scene as SVG to out. 0, or REN_EIO when a write failed (errno kept), REN_ENOMEM. */
int ren_svg_write(const ren_scene *s, FILE *out);

/* XML-escape s[0..len) for text and attribute values: & < > " ' become entities; what a scene
 * may not hold (layout.h, ren_text_char: bytes that are not UTF-8, controls, noncharacters
 * such as U+FFFE) becomes U+FFFD. Returns a malloc'd NUL-terminated string (NULL on ENOMEM);
 * *out_len gets its length when out_len is not NULL. */
char *ren_xml_escape(const char *s, size_t len, size_t *out_len);

/* The embedded scripts (svg_script.c). */
extern const char ren_js_common[];
extern const char ren_js_flame[];
extern const char ren_js_timeline[];

#endif
