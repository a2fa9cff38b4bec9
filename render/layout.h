/* layout.h — the display list that every view (flame graph, timeline) is laid out into, and
 * that both backends draw: svg.c (interactive SVG) and cairo_out.c (PNG/PDF). Also the small
 * helpers all views share: colours, monospace text fitting, UTF-8 cleaning, time-axis ticks,
 * and render/'s error codes.
 *
 * Return rule for all of render/: a function returns 0 or a negative REN_E* code, and one that
 * makes an object returns it, or NULL with the code in *err. The code says what failed
 * (ren_strerror names it); where a person needs more words (Cairo's own, the window of a
 * timeline that holds nothing) the function also writes one line into why[whylen]. Nothing in
 * render/ but main.c prints or picks an exit status. */
#ifndef REN_LAYOUT_H
#define REN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

enum {
	REN_OK = 0,
	REN_ENOMEM = -1,  /* out of memory */
	REN_EEMPTY = -2,  /* nothing to draw (no samples, nothing in the window or selection) */
	REN_EIO = -3,     /* an output that cannot be written (errno kept) */
	REN_EINVAL = -4,  /* an argument or size a backend refuses */
};
/* Words for a REN_E* code: "out of memory", "nothing to draw", ... */
const char *ren_strerror(int rc);

/* Every label uses one monospace font so that width = chars * REN_CHAR_W * size, the same
 * in the browser and in Cairo; labels are truncated in the layout, never by a backend. */
#define REN_FONT_FAMILY "DejaVu Sans Mono, Menlo, Consolas, monospace"
#define REN_CAIRO_FONT "DejaVu Sans Mono"
#define REN_CHAR_W 0.6
#define REN_NONE 0xff000000u /* "no fill" / "no stroke" colour */

enum ren_item_kind {
	REN_RECT = 0,  /* x, y, w, h; fill, stroke; optional tip */
	REN_TEXT = 1,  /* text at (x, y) baseline; anchor; size_px; fill = text colour */
	REN_LINE = 2,  /* from (x, y) to (x + w, y + h); stroke */
};
enum { REN_ANCHOR_START = 0, REN_ANCHOR_MIDDLE = 1, REN_ANCHOR_END = 2 };

/* Item flags */
#define REN_F_FRAME 0x01u   /* a flame-graph frame: rect + label form one zoomable unit */
#define REN_F_SVGONLY 0x02u /* interactive chrome (buttons, details line): not drawn by Cairo */
#define REN_F_BOLD 0x04u
#define REN_F_DATA 0x08u    /* a timeline data item: zoomed by the SVG script */
#define REN_F_MATCH 0x10u   /* drawn highlighted (a search match in static output) */
#define REN_F_AXIS 0x20u    /* time axis and grid: redrawn by the SVG script on zoom */

typedef struct ren_item {
	uint8_t kind;        /* enum ren_item_kind */
	uint8_t anchor;      /* REN_ANCHOR_* for text */
	uint8_t flags;       /* REN_F_* */
	uint8_t alpha;       /* fill opacity 0..255 (255 = opaque) */
	float size_px;       /* font size for text, stroke width for lines/rect outlines */
	double x, y, w, h;
	uint32_t fill;       /* 0xRRGGBB or REN_NONE */
	uint32_t stroke;     /* 0xRRGGBB or REN_NONE */
	const char *text;    /* label (already truncated to fit), NULL when none; scene-owned */
	const char *tip;     /* tooltip text, NULL when none; scene-owned */
	const char *id;      /* SVG id, NULL when none; scene-owned */
} ren_item;

typedef struct ren_scene ren_scene;

/* kind of document: tells svg.c which script to embed */
enum { REN_DOC_FLAME = 1, REN_DOC_TIMELINE = 2, REN_DOC_STATIC = 3 };

/* New empty scene of the given size in pixels. NULL on ENOMEM. */
ren_scene *ren_scene_create(double width, double height, int doc_kind);
/* Free the scene and every string it owns. NULL ok. */
void ren_scene_destroy(ren_scene *s);
/* Append an item (copied); its text/tip/id must already be scene-owned (ren_scene_strdup)
 * or static. Returns the stored item or NULL on ENOMEM. The pointer is good until the next
 * item is added (the items are one array that may move); adjust an item later through
 * ren_scene_at. */
ren_item *ren_scene_add(ren_scene *s, const ren_item *it);
/* Copy a string into the scene's arena (len bytes, NUL added). NULL on ENOMEM. */
char *ren_scene_strndup(ren_scene *s, const char *str, size_t len);
char *ren_scene_strdup(ren_scene *s, const char *str);
/* printf into the scene's arena. NULL on ENOMEM. */
char *ren_scene_printf(ren_scene *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Convenience adders; return the item or NULL on ENOMEM. */
ren_item *ren_rect(ren_scene *s, double x, double y, double w, double h, uint32_t fill,
                   const char *tip);
ren_item *ren_text(ren_scene *s, double x, double y, const char *text, double size_px,
                   int anchor, uint32_t color);
ren_item *ren_line(ren_scene *s, double x1, double y1, double x2, double y2, uint32_t color,
                   double width);

/* Item i, to adjust it after later items were laid out (e.g. a background's height). */
ren_item *ren_scene_at(ren_scene *s, size_t i);
/* Accessors for the backends. */
size_t ren_scene_count(const ren_scene *s);
const ren_item *ren_scene_items(const ren_scene *s);
double ren_scene_width(const ren_scene *s);
double ren_scene_height(const ren_scene *s);
void ren_scene_set_height(ren_scene *s, double height);
int ren_scene_doc(const ren_scene *s);
/* Free-form key/value settings a backend may read (e.g. "title", "total", "unit"). The value
 * is copied. 0 or REN_ENOMEM. */
int ren_scene_set(ren_scene *s, const char *key, const char *value);
const char *ren_scene_get(const ren_scene *s, const char *key); /* NULL when unset */
/* Iterate the settings: i in [0, ren_scene_nkv()). */
size_t ren_scene_nkv(const ren_scene *s);
void ren_scene_kv(const ren_scene *s, size_t i, const char **key, const char **value);

/* ---- text ----
 * What a scene may hold is decided in one place, ren_text_char(): names come from traces and
 * folded files and can hold any bytes, and XML (the SVG) and Cairo (PNG, PDF) each refuse some.
 * ren_scene_add() and ren_scene_set() store every string cleaned, so the backends draw the same
 * text and never fail on it. */
/* Length of the valid UTF-8 sequence at s (left bytes available), 0 when invalid (bad lead
 * byte, truncated, overlong, surrogate, above U+10FFFF). */
size_t ren_utf8_seq(const unsigned char *s, size_t left);
/* Length of the character at s (left > 0 bytes available; 1 for an invalid byte), and whether
 * a view may draw it (*ok): not for bytes that are not UTF-8, C0 controls other than tab, LF
 * and CR, DEL, and Unicode noncharacters (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF), which Cairo
 * refuses and XML 1.0 forbids in part. Those are drawn as U+FFFD. */
size_t ren_text_char(const unsigned char *s, size_t left, int *ok);
/* 1 when every character of s[0..len) may be drawn as it is. */
int ren_text_clean(const char *s, size_t len);
/* Number of UTF-8 characters in s[0..len). Invalid bytes count as one character each. */
size_t ren_utf8_chars(const char *s, size_t len);
/* Byte length of the first n characters of s[0..len). */
size_t ren_utf8_prefix(const char *s, size_t len, size_t n);
/* Fit text into width_px at size_px: the whole text, or a prefix ending in "..", or NULL when
 * not even 3 characters fit. Result is scene-owned. */
const char *ren_fit_label(ren_scene *s, const char *text, size_t len, double width_px,
                          double size_px);
/* Text width in pixels of n characters at size_px. */
double ren_text_width(size_t n_chars, double size_px);

/* ---- colours ---- */
/* 32-bit FNV-1a hash of a name, to pick stable colours. */
uint32_t ren_hash(const char *s, size_t len);
/* Blend colour a towards b by t in [0,1]. */
uint32_t ren_mix(uint32_t a, uint32_t b, double t);

/* ---- axis ---- */
/* A "nice" tick step (1, 2 or 5 times a power of ten) so that span / step is about
 * max_ticks or fewer. span > 0. */
double ren_nice_step(double span, int max_ticks);
/* Format an axis time in ns: the unit from max_ns (the largest value on the axis, so all
 * labels share it), the decimals from step_ns ("1.5 s", "250 ms", "20 us"). */
void ren_fmt_time(char *buf, size_t len, double t_ns, double step_ns, double max_ns);

#endif
