/* svg.c — the SVG backend: writes a scene as a self-contained SVG with its script embedded,
 * every string XML-escaped (C++ templates bring '<', '>' and '&'; traces may bring bytes
 * that are not UTF-8). */
#include "svg.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt.h"

typedef struct wbuf {
	FILE *f;
	char *p;
	size_t n, cap;
	int err;
} wbuf;

static void w_flush(wbuf *w)
{
	if (w->n && !w->err && fwrite(w->p, 1, w->n, w->f) != w->n)
		w->err = REN_EIO;
	w->n = 0;
}

static void w_raw(wbuf *w, const char *s, size_t len)
{
	if (w->n + len > w->cap) {
		w_flush(w);
		if (len > w->cap) {
			if (!w->err && fwrite(s, 1, len, w->f) != len)
				w->err = REN_EIO;
			return;
		}
	}
	memcpy(w->p + w->n, s, len);
	w->n += len;
}

static void w_str(wbuf *w, const char *s)
{
	w_raw(w, s, strlen(s));
}

/* A number with at most dec decimals (2 or 4), trailing zeros dropped. */
static void w_numd(wbuf *w, double v, int dec)
{
	static const long long scale[] = {1, 10, 100, 1000, 10000};
	char b[48];
	int neg = v < 0;
	if (!isfinite(v))
		v = 0;
	if (dec < 0 || dec > 4)
		dec = 2;
	long long c = llround(fabs(v) * (double)scale[dec]);
	if (c == 0)
		neg = 0;
	long long ip = c / scale[dec], fp = c % scale[dec];
	while (dec > 0 && fp % 10 == 0) {
		fp /= 10;
		dec--;
	}
	int n = dec ? snprintf(b, sizeof(b), "%s%lld.%0*lld", neg ? "-" : "", ip, dec, fp)
	            : snprintf(b, sizeof(b), "%s%lld", neg ? "-" : "", ip);
	w_raw(w, b, (size_t)n);
}

static void w_num(wbuf *w, double v)
{
	w_numd(w, v, 2);
}

static void w_attr_numd(wbuf *w, const char *name, double v, int dec)
{
	w_raw(w, " ", 1);
	w_str(w, name);
	w_raw(w, "=\"", 2);
	w_numd(w, v, dec);
	w_raw(w, "\"", 1);
}

static void w_attr_num(wbuf *w, const char *name, double v)
{
	w_raw(w, " ", 1);
	w_str(w, name);
	w_raw(w, "=\"", 2);
	w_num(w, v);
	w_raw(w, "\"", 1);
}

static void w_color(wbuf *w, uint32_t c)
{
	static const char hex[] = "0123456789abcdef";
	char b[7] = {'#'};
	for (int i = 0; i < 6; i++)
		b[1 + i] = hex[(c >> (20 - 4 * i)) & 0xf];
	w_raw(w, b, 7);
}

/* Escaped text; the escaping itself lives in one loop shared with ren_xml_escape. */
typedef void (*emit_fn)(void *ctx, const char *s, size_t len);

static void escape_to(const char *s, size_t len, emit_fn emit, void *ctx)
{
	static const char fffd[] = "\xef\xbf\xbd";
	size_t run = 0, i = 0; /* s[i - run .. i) is a run of bytes copied as they are */
	while (i < len) {
		const char *rep = NULL;
		int ok;
		size_t adv = ren_text_char((const unsigned char *)s + i, len - i, &ok);
		switch (s[i]) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		default:
			if (!ok) /* the scene's own policy (layout.h), for strings that did not pass through it */
				rep = fffd;
		}
		if (rep) {
			if (run)
				emit(ctx, s + i - run, run);
			emit(ctx, rep, strlen(rep));
			run = 0;
		} else {
			run += adv;
		}
		i += adv;
	}
	if (run)
		emit(ctx, s + len - run, run);
}

static void emit_w(void *ctx, const char *s, size_t len)
{
	w_raw(ctx, s, len);
}

static void w_esc(wbuf *w, const char *s)
{
	escape_to(s, strlen(s), emit_w, w);
}

typedef struct mbuf {
	char *p;
	size_t n, cap;
	int err;
} mbuf;

static void emit_m(void *ctx, const char *s, size_t len)
{
	mbuf *m = ctx;
	if (m->err)
		return;
	if (GT_GROW(m->p, m->cap, m->n + len + 1) < 0) {
		m->err = 1;
		return;
	}
	memcpy(m->p + m->n, s, len);
	m->n += len;
	m->p[m->n] = 0;
}

char *ren_xml_escape(const char *s, size_t len, size_t *out_len)
{
	mbuf m = {0};
	emit_m(&m, "", 0);
	escape_to(s, len, emit_m, &m);
	if (m.err) {
		free(m.p);
		return NULL;
	}
	if (out_len)
		*out_len = m.n;
	return m.p;
}

static void w_rect(wbuf *w, const ren_item *it)
{
	w_str(w, "<rect");
	if (it->id) {
		w_str(w, " id=\"");
		w_esc(w, it->id);
		w_str(w, "\"");
	}
	if (it->flags & REN_F_DATA) {
		/* timeline spans: precise enough to zoom 1000x; a span under half a pixel is drawn
		 * half a pixel wide and keeps its true width for the script */
		w_attr_numd(w, "x", it->x, 4);
		w_attr_num(w, "y", it->y);
		w_attr_numd(w, "width", it->w < 0.5 ? 0.5 : it->w, 4);
		if (it->w < 0.5)
			w_attr_numd(w, "data-w", it->w, 4);
	} else {
		w_attr_num(w, "x", it->x);
		w_attr_num(w, "y", it->y);
		w_attr_num(w, "width", it->w);
	}
	w_attr_num(w, "height", it->h);
	if (it->fill == REN_NONE) {
		w_str(w, " fill=\"none\"");
	} else {
		w_str(w, " fill=\"");
		w_color(w, it->fill);
		w_str(w, "\"");
		if (it->alpha != 255)
			w_attr_num(w, "fill-opacity", it->alpha / 255.0);
	}
	if (it->stroke != REN_NONE) {
		w_str(w, " stroke=\"");
		w_color(w, it->stroke);
		w_str(w, "\"");
		w_attr_num(w, "stroke-width", it->size_px > 0 ? it->size_px : 1);
	}
	w_str(w, "/>");
}

static void w_text(wbuf *w, const ren_item *it, double default_px, int bare)
{
	static const char *const anchors[] = {"start", "middle", "end"};
	w_str(w, "<text");
	if (it->id) {
		w_str(w, " id=\"");
		w_esc(w, it->id);
		w_str(w, "\"");
	}
	w_attr_num(w, "x", it->x);
	w_attr_num(w, "y", it->y);
	if (!bare) {
		if (it->anchor && it->anchor <= REN_ANCHOR_END) {
			w_str(w, " text-anchor=\"");
			w_str(w, anchors[it->anchor]);
			w_str(w, "\"");
		}
		if (fabs(it->size_px - default_px) > 0.01)
			w_attr_num(w, "font-size", it->size_px);
		if (it->fill != 0 && it->fill != REN_NONE) {
			w_str(w, " fill=\"");
			w_color(w, it->fill);
			w_str(w, "\"");
		}
		if (it->flags & REN_F_BOLD)
			w_str(w, " font-weight=\"bold\"");
	}
	w_str(w, ">");
	if (it->text)
		w_esc(w, it->text);
	w_str(w, "</text>");
}

static void w_line(wbuf *w, const ren_item *it)
{
	w_str(w, "<line");
	w_attr_num(w, "x1", it->x);
	w_attr_num(w, "y1", it->y);
	w_attr_num(w, "x2", it->x + it->w);
	w_attr_num(w, "y2", it->y + it->h);
	w_str(w, " stroke=\"");
	w_color(w, it->stroke == REN_NONE ? 0 : it->stroke);
	w_str(w, "\"");
	w_attr_num(w, "stroke-width", it->size_px > 0 ? it->size_px : 1);
	w_str(w, "/>");
}

static void w_item(wbuf *w, const ren_item *it, double fs, int bare)
{
	switch (it->kind) {
	case REN_RECT: w_rect(w, it); break;
	case REN_TEXT: w_text(w, it, fs, bare); break;
	case REN_LINE: w_line(w, it); break;
	}
}

static void w_head(wbuf *w, const ren_scene *s, double fs)
{
	double W = ren_scene_width(s), H = ren_scene_height(s);
	int doc = ren_scene_doc(s);
	w_str(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	         "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\"");
	w_attr_num(w, "width", W);
	w_attr_num(w, "height", H);
	w_str(w, " viewBox=\"0 0 ");
	w_num(w, W);
	w_str(w, " ");
	w_num(w, H);
	w_str(w, "\">\n<style>text{font-family:" REN_FONT_FAMILY ";font-size:");
	w_num(w, fs);
	w_str(w, "px}\n#frames text,.data text{pointer-events:none}\n"
	         "#frames rect{stroke:#f8f8f4;stroke-width:.5}\n"
	         "#frames g:hover rect,.data g:hover rect{stroke:#000;stroke-width:.7}\n"
	         "#unzoom,#search{cursor:pointer}\n#frames{cursor:pointer}</style>\n");
	const char *title = ren_scene_get(s, "title");
	if (title) {
		w_str(w, "<title>");
		w_esc(w, title);
		w_str(w, "</title>\n");
	}
	/* settings for the script, as data attributes: no JS quoting to get wrong */
	w_str(w, "<g id=\"cfg\"");
	for (size_t i = 0; i < ren_scene_nkv(s); i++) {
		const char *k, *v;
		ren_scene_kv(s, i, &k, &v);
		w_str(w, " data-");
		w_str(w, k);
		w_str(w, "=\"");
		w_esc(w, v);
		w_str(w, "\"");
	}
	w_str(w, "/>\n");
	const char *plot = ren_scene_get(s, "plot");
	if (plot) {
		double px, py, pw, ph;
		if (sscanf(plot, "%lf %lf %lf %lf", &px, &py, &pw, &ph) == 4) {
			w_str(w, "<defs><clipPath id=\"clip\"><rect");
			w_attr_num(w, "x", px);
			w_attr_num(w, "y", py);
			w_attr_num(w, "width", pw);
			w_attr_num(w, "height", ph);
			w_str(w, "/></clipPath></defs>\n");
		}
	}
	if (doc == REN_DOC_FLAME || doc == REN_DOC_TIMELINE) {
		w_str(w, "<script type=\"text/ecmascript\"><![CDATA[\n");
		w_str(w, ren_js_common);
		w_str(w, doc == REN_DOC_FLAME ? ren_js_flame : ren_js_timeline);
		w_str(w, "]]></script>\n");
	}
}

int ren_svg_write(const ren_scene *s, FILE *out)
{
	wbuf w = {.f = out, .cap = 1u << 16};
	if (!(w.p = malloc(w.cap)))
		return REN_ENOMEM;
	const char *fsv = ren_scene_get(s, "fontpx");
	double fs = fsv ? atof(fsv) : 12;
	if (fs <= 0)
		fs = 12;
	w_head(&w, s, fs);

	const ren_item *items = ren_scene_items(s);
	size_t n = ren_scene_count(s);
	unsigned open = 0; /* REN_F_FRAME, _DATA or _AXIS while inside that container */
	for (size_t i = 0; i < n; i++) {
		const ren_item *it = &items[i];
		unsigned grp = it->flags & (REN_F_FRAME | REN_F_DATA | REN_F_AXIS);
		if (grp != open) {
			if (open)
				w_str(&w, "</g>\n");
			if (grp == REN_F_FRAME)
				w_str(&w, "<g id=\"frames\">\n");
			else if (grp == REN_F_DATA)
				w_str(&w, ren_scene_get(s, "plot") ? "<g class=\"data\" clip-path=\"url(#clip)\">\n"
				                                     : "<g class=\"data\">\n");
			else if (grp == REN_F_AXIS)
				w_str(&w, "<g class=\"axis\" pointer-events=\"none\">\n");
			open = grp;
		}
		grp &= REN_F_FRAME | REN_F_DATA;
		if (grp && it->kind == REN_RECT) {
			/* one zoomable unit: <g><title/><rect/><text/></g> */
			w_str(&w, "<g>");
			if (it->tip) {
				w_str(&w, "<title>");
				w_esc(&w, it->tip);
				w_str(&w, "</title>");
			}
			w_rect(&w, it);
			if (i + 1 < n && items[i + 1].kind == REN_TEXT &&
			    (items[i + 1].flags & (REN_F_FRAME | REN_F_DATA | REN_F_AXIS)) == grp) {
				i++;
				w_text(&w, &items[i], fs, grp == REN_F_FRAME);
			}
			w_str(&w, "</g>\n");
			continue;
		}
		if (it->tip) {
			w_str(&w, "<g><title>");
			w_esc(&w, it->tip);
			w_str(&w, "</title>");
			w_item(&w, it, fs, 0);
			w_str(&w, "</g>\n");
		} else {
			w_item(&w, it, fs, 0);
			w_str(&w, "\n");
		}
	}
	if (open)
		w_str(&w, "</g>\n");
	w_str(&w, "</svg>\n");
	w_flush(&w);
	free(w.p);
	if (!w.err && fflush(out) != 0)
		w.err = REN_EIO;
	return w.err;
}
