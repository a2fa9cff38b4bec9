/* layout.c — the display list shared by the SVG and Cairo backends, plus text, colour and
 * axis helpers used by every view. */
#include "layout.h"
#include "gt_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define ARENA_BLOCK (256u << 10)

typedef struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	char data[];
} arena_block;

typedef struct scene_kv {
	char *key, *value;
} scene_kv;

struct ren_scene {
	double width, height;
	int doc;
	ren_item *items;
	size_t n, cap;
	arena_block *arena;
	scene_kv *kv;
	size_t n_kv, cap_kv;
};

const char *ren_strerror(int rc)
{
	switch (rc) {
	case REN_OK: return "ok";
	case REN_ENOMEM: return "out of memory";
	case REN_EEMPTY: return "nothing to draw";
	case REN_EIO: return "cannot write the output";
	case REN_EINVAL: return "invalid argument";
	}
	return "unknown error";
}

ren_scene *ren_scene_create(double width, double height, int doc_kind)
{
	ren_scene *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->width = width;
	s->height = height;
	s->doc = doc_kind;
	return s;
}

void ren_scene_destroy(ren_scene *s)
{
	if (!s)
		return;
	arena_block *b = s->arena;
	while (b) {
		arena_block *next = b->next;
		free(b);
		b = next;
	}
	for (size_t i = 0; i < s->n_kv; i++) {
		free(s->kv[i].key);
		free(s->kv[i].value);
	}
	free(s->kv);
	free(s->items);
	free(s);
}

static char *arena_alloc(ren_scene *s, size_t len);
static char *clean_dup(ren_scene *s, const char *str, size_t len);

ren_item *ren_scene_add(ren_scene *s, const ren_item *it)
{
	ren_item stored = *it;
	/* the one place where text enters a scene: what a backend would refuse is replaced */
	if (it->text && !ren_text_clean(it->text, strlen(it->text)) &&
	    !(stored.text = clean_dup(s, it->text, strlen(it->text))))
		return NULL;
	if (it->tip && !ren_text_clean(it->tip, strlen(it->tip)) && !(stored.tip = clean_dup(s, it->tip, strlen(it->tip))))
		return NULL;
	if (GT_GROW(s->items, s->cap, s->n + 1) < 0)
		return NULL;
	s->items[s->n] = stored;
	return &s->items[s->n++];
}

static char *arena_alloc(ren_scene *s, size_t len)
{
	arena_block *b = s->arena;
	if (!b || b->cap - b->used < len) {
		size_t cap = len > ARENA_BLOCK / 4 ? len : ARENA_BLOCK;
		arena_block *nb = malloc(sizeof(*nb) + cap);
		if (!nb)
			return NULL;
		nb->used = 0;
		nb->cap = cap;
		if (b && cap != ARENA_BLOCK) {
			/* a big one-off string: keep the current block as the one to fill */
			nb->next = b->next;
			b->next = nb;
			nb->used = cap;
			return nb->data;
		}
		nb->next = b;
		s->arena = nb;
		b = nb;
	}
	char *p = b->data + b->used;
	b->used += len;
	return p;
}

char *ren_scene_strndup(ren_scene *s, const char *str, size_t len)
{
	char *p = arena_alloc(s, len + 1);
	if (!p)
		return NULL;
	memcpy(p, str, len);
	p[len] = 0;
	return p;
}

char *ren_scene_strdup(ren_scene *s, const char *str)
{
	return ren_scene_strndup(s, str, strlen(str));
}

char *ren_scene_printf(ren_scene *s, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	if ((size_t)n < sizeof(small))
		return ren_scene_strndup(s, small, (size_t)n);
	char *p = arena_alloc(s, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

ren_item *ren_rect(ren_scene *s, double x, double y, double w, double h, uint32_t fill,
                   const char *tip)
{
	ren_item it = {.kind = REN_RECT, .alpha = 255, .x = x, .y = y, .w = w, .h = h,
	               .fill = fill, .stroke = REN_NONE, .tip = tip};
	return ren_scene_add(s, &it);
}

ren_item *ren_text(ren_scene *s, double x, double y, const char *text, double size_px,
                   int anchor, uint32_t color)
{
	ren_item it = {.kind = REN_TEXT, .alpha = 255, .anchor = (uint8_t)anchor,
	               .size_px = (float)size_px, .x = x, .y = y, .fill = color,
	               .stroke = REN_NONE, .text = text};
	return ren_scene_add(s, &it);
}

ren_item *ren_line(ren_scene *s, double x1, double y1, double x2, double y2, uint32_t color,
                   double width)
{
	ren_item it = {.kind = REN_LINE, .alpha = 255, .size_px = (float)width, .x = x1,
	               .y = y1, .w = x2 - x1, .h = y2 - y1, .fill = REN_NONE, .stroke = color};
	return ren_scene_add(s, &it);
}

ren_item *ren_scene_at(ren_scene *s, size_t i) { return i < s->n ? &s->items[i] : NULL; }
size_t ren_scene_count(const ren_scene *s) { return s->n; }
const ren_item *ren_scene_items(const ren_scene *s) { return s->items; }
double ren_scene_width(const ren_scene *s) { return s->width; }
double ren_scene_height(const ren_scene *s) { return s->height; }
void ren_scene_set_height(ren_scene *s, double height) { s->height = height; }
int ren_scene_doc(const ren_scene *s) { return s->doc; }

int ren_scene_set(ren_scene *s, const char *key, const char *value)
{
	if (!ren_text_clean(value, strlen(value)) && !(value = clean_dup(s, value, strlen(value))))
		return REN_ENOMEM;
	for (size_t i = 0; i < s->n_kv; i++) {
		if (strcmp(s->kv[i].key, key) == 0) {
			char *v = strdup(value);
			if (!v)
				return REN_ENOMEM;
			free(s->kv[i].value);
			s->kv[i].value = v;
			return 0;
		}
	}
	if (GT_GROW(s->kv, s->cap_kv, s->n_kv + 1) < 0)
		return REN_ENOMEM;
	char *k = strdup(key), *v = strdup(value);
	if (!k || !v) {
		free(k);
		free(v);
		return REN_ENOMEM;
	}
	s->kv[s->n_kv].key = k;
	s->kv[s->n_kv].value = v;
	s->n_kv++;
	return 0;
}

size_t ren_scene_nkv(const ren_scene *s) { return s->n_kv; }

void ren_scene_kv(const ren_scene *s, size_t i, const char **key, const char **value)
{
	*key = s->kv[i].key;
	*value = s->kv[i].value;
}

const char *ren_scene_get(const ren_scene *s, const char *key)
{
	for (size_t i = 0; i < s->n_kv; i++)
		if (strcmp(s->kv[i].key, key) == 0)
			return s->kv[i].value;
	return NULL;
}

size_t ren_utf8_seq(const unsigned char *s, size_t left)
{
	unsigned c = s[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (c < 0x80)
		return 1;
	else if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n > left || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

size_t ren_text_char(const unsigned char *s, size_t left, int *ok)
{
	size_t n = ren_utf8_seq(s, left);
	if (n == 0) {
		*ok = 0;
		return 1;
	}
	if (n == 1) {
		*ok = !(s[0] < 0x20 && s[0] != '\t' && s[0] != '\n' && s[0] != '\r') && s[0] != 0x7f;
		return 1;
	}
	uint32_t cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	*ok = !(cp >= 0xfdd0 && cp <= 0xfdef) && (cp & 0xfffe) != 0xfffe;
	return n;
}

int ren_text_clean(const char *s, size_t len)
{
	int ok = 1;
	for (size_t i = 0; i < len && ok;)
		i += ren_text_char((const unsigned char *)s + i, len - i, &ok);
	return ok;
}

/* A copy of s[0..len) in the arena with what ren_text_char refuses as U+FFFD. NULL on ENOMEM. */
static char *clean_dup(ren_scene *s, const char *str, size_t len)
{
	size_t out = 0;
	int ok;
	for (size_t i = 0, k; i < len; i += k) {
		k = ren_text_char((const unsigned char *)str + i, len - i, &ok);
		out += ok ? k : 3;
	}
	char *p = arena_alloc(s, out + 1), *o = p;
	if (!p)
		return NULL;
	for (size_t i = 0, k; i < len; i += k) {
		k = ren_text_char((const unsigned char *)str + i, len - i, &ok);
		memcpy(o, ok ? str + i : "\xef\xbf\xbd", ok ? k : 3);
		o += ok ? k : 3;
	}
	*o = 0;
	return p;
}

static size_t utf8_step(const unsigned char *s, size_t left)
{
	size_t n = ren_utf8_seq(s, left);
	return n ? n : 1;
}

size_t ren_utf8_chars(const char *s, size_t len)
{
	size_t n = 0, i = 0;
	while (i < len) {
		i += utf8_step((const unsigned char *)s + i, len - i);
		n++;
	}
	return n;
}

size_t ren_utf8_prefix(const char *s, size_t len, size_t n)
{
	size_t i = 0;
	while (i < len && n > 0) {
		i += utf8_step((const unsigned char *)s + i, len - i);
		n--;
	}
	return i;
}

double ren_text_width(size_t n_chars, double size_px)
{
	return (double)n_chars * REN_CHAR_W * size_px;
}

const char *ren_fit_label(ren_scene *s, const char *text, size_t len, double width_px,
                          double size_px)
{
	double cw = REN_CHAR_W * size_px;
	size_t fit = width_px > 0 ? (size_t)(width_px / cw) : 0;
	if (fit < 3)
		return NULL;
	/* cheap bound first: a long name never needs a full character count */
	if (len <= fit || ren_utf8_chars(text, len) <= fit)
		return ren_scene_strndup(s, text, len);
	size_t cut = ren_utf8_prefix(text, len, fit - 2);
	char *p = arena_alloc(s, cut + 3);
	if (!p)
		return NULL;
	memcpy(p, text, cut);
	memcpy(p + cut, "..", 3);
	return p;
}

uint32_t ren_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

uint32_t ren_mix(uint32_t a, uint32_t b, double t)
{
	if (t < 0)
		t = 0;
	if (t > 1)
		t = 1;
	uint32_t out = 0;
	for (int sh = 0; sh <= 16; sh += 8) {
		double ca = (a >> sh) & 0xff, cb = (b >> sh) & 0xff;
		uint32_t c = (uint32_t)lround(ca + (cb - ca) * t);
		out |= (c & 0xff) << sh;
	}
	return out;
}

double ren_nice_step(double span, int max_ticks)
{
	if (max_ticks < 1)
		max_ticks = 1;
	double raw = span / max_ticks;
	double p = pow(10, floor(log10(raw)));
	double m = raw / p;
	double step = m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10;
	return step * p;
}

void ren_fmt_time(char *buf, size_t len, double t_ns, double step_ns, double max_ns)
{
	static const struct { double div; const char *unit; } units[] = {
		{(double)GT_NS_PER_SEC, "s"}, {(double)GT_NS_PER_MS, "ms"}, {(double)GT_NS_PER_US, "us"}, {1, "ns"},
	};
	size_t u = 0;
	while (u + 1 < sizeof(units) / sizeof(units[0]) && fabs(max_ns) < units[u].div)
		u++;
	double v = t_ns / units[u].div, st = step_ns / units[u].div;
	int dec = 0;
	while (dec < 6 && fabs(st - round(st)) > 1e-9 * (st > 1 ? st : 1)) {
		st *= 10;
		dec++;
	}
	if (fabs(v) < 1e-12)
		v = 0;
	snprintf(buf, len, "%.*f %s", dec, v, units[u].unit);
}
