/* test_svg_escape.c — XML escaping of names (C++ templates, quotes, "]]>", bytes that are not
 * UTF-8, control characters, 64 KB names) and label fitting in the SVG writer. */
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "layout.h"
#include "svg.h"
#include "testhelp.h"

static int esc_is(const char *in, size_t len, const char *want)
{
	size_t n = 0;
	char *out = ren_xml_escape(in, len, &n);
	int ok = out && strcmp(out, want) == 0 && n == strlen(want);
	if (!ok)
		printf("  escape got '%s', want '%s'\n", out ? out : "(null)", want);
	free(out);
	return ok;
}

/* Write a scene with one frame named name through the SVG writer; return the file's text. */
static char *svg_of_name(const char *name, size_t len, size_t *out_len)
{
	ren_scene *s = ren_scene_create(400, 100, REN_DOC_FLAME);
	char *tip = ren_scene_strndup(s, name, len);
	ren_item *r = ren_rect(s, 10, 10, 300, 15, 0xff8000, tip);
	r->flags |= REN_F_FRAME;
	const char *label = ren_fit_label(s, name, len, 294, 12);
	ren_item *t = ren_text(s, 13, 20, label, 12, REN_ANCHOR_START, 0);
	t->flags |= REN_F_FRAME;
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	int rc = ren_svg_write(s, f);
	fclose(f);
	ren_scene_destroy(s);
	*out_len = blen;
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The document must not hold a raw '<' or '&' outside markup in text: check that every '&'
 * starts one of the five entities and that no text node holds '<'. */
static int well_escaped(const char *doc)
{
	const char *p = strstr(doc, "<g id=\"frames\">");
	if (!p)
		return 0;
	for (; *p; p++) {
		if (*p == '&' && strncmp(p, "&amp;", 5) && strncmp(p, "&lt;", 4) &&
		    strncmp(p, "&gt;", 4) && strncmp(p, "&quot;", 6) && strncmp(p, "&apos;", 6))
			return 0;
	}
	return 1;
}

int main(void)
{
	th_check(esc_is("plain", 5, "plain"), "plain text unchanged");
	th_check(esc_is("a<b>&c", 6, "a&lt;b&gt;&amp;c"), "< > & become entities");
	th_check(esc_is("\"q\" 'a'", 7, "&quot;q&quot; &apos;a&apos;"), "quotes become entities");
	th_check(esc_is("x]]>y", 5, "x]]&gt;y"), "]]> cannot end a section");
	th_check(esc_is("std::map<int, std::vector<T&>>", 30,
	                "std::map&lt;int, std::vector&lt;T&amp;&gt;&gt;"), "a C++ template name");
	th_check(esc_is("caf\xc3\xa9 \xe2\x86\x92", 9, "caf\xc3\xa9 \xe2\x86\x92"),
	         "valid UTF-8 kept");
	th_check(esc_is("a\xff" "b", 3, "a\xef\xbf\xbd" "b"), "an invalid byte becomes U+FFFD");
	th_check(esc_is("a\xc3", 2, "a\xef\xbf\xbd"), "a cut-off sequence becomes U+FFFD");
	th_check(esc_is("\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
	         "an encoded surrogate is not UTF-8");
	th_check(esc_is("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"), "an overlong form is rejected");
	th_check(esc_is("a\x01\tb\x1f", 5, "a\xef\xbf\xbd\tb\xef\xbf\xbd"),
	         "control characters XML forbids become U+FFFD, tab stays");
	th_check(esc_is("a\0b", 3, "a\xef\xbf\xbd" "b"), "a NUL byte becomes U+FFFD");
	th_check(esc_is("\xef\xbf\xbe", 3, "\xef\xbf\xbd"), "U+FFFE is not an XML character");

	/* label fitting counts characters, not bytes, and never splits a sequence */
	ren_scene *s = ren_scene_create(100, 100, REN_DOC_STATIC);
	const char *l = ren_fit_label(s, "abcdefghij", 10, 10 * 7.2, 12);
	th_check(l && strcmp(l, "abcdefghij") == 0, "a label that fits is whole (%s)", l ? l : "-");
	l = ren_fit_label(s, "abcdefghij", 10, 6 * 7.2, 12);
	th_check(l && strcmp(l, "abcd..") == 0, "a long label is cut to the width (%s)", l ? l : "-");
	l = ren_fit_label(s, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10, 4 * 7.2, 12);
	th_check(l && strcmp(l, "\xc3\xa9\xc3\xa9..") == 0, "multi-byte characters are not split");
	th_check(ren_fit_label(s, "abcdef", 6, 2 * 7.2, 12) == NULL,
	         "no label when fewer than 3 characters fit");
	ren_scene_destroy(s);

	/* whole documents */
	static const char *const names[] = {
		"operator<<(std::ostream&, Foo<\"x\">)", "]]></script><script>alert(1)</script>",
		"bad\xff\xfe utf8 \x01\x02", "<![CDATA[ x ]]>",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = 0;
		char *doc = svg_of_name(names[i], strlen(names[i]), &n);
		th_check(doc && well_escaped(doc), "document with name %zu is escaped", i);
		th_check(doc && !strstr(strstr(doc, "<g id=\"frames\">"), "<script"),
		         "name %zu cannot inject markup", i);
		free(doc);
	}
	size_t big = 64 * 1024;
	char *name = malloc(big);
	for (size_t i = 0; i < big; i++)
		name[i] = "a<&>\"b"[i % 6];
	size_t n = 0;
	char *doc = svg_of_name(name, big, &n);
	th_check(doc && well_escaped(doc), "a 64 KB name is escaped");
	/* the label was cut to the frame, so the document stays small apart from the tooltip */
	const char *text = doc ? strstr(doc, "<text x=\"13\"") : NULL;
	th_check(text && strlen(text) < 200, "the 64 KB name's label is truncated");
	free(doc);
	free(name);
	return th_report();
}
