/* fuzz_render.c — libFuzzer target: gt-render's views over mutated traces whose CRCs are valid
 * (trace_mut.h): the timeline layout (thread rows, GIL, CUDA API spans, NVTX lanes, GPU streams,
 * counters, lag windows, the time axis) with a window and a thread filter chosen from the input,
 * the flame graph of the trace folded per GIL class, the flame chart in time order, each written
 * as SVG; now and then a PNG or PDF through Cairo. Every SVG must be XML-clean text (valid UTF-8,
 * no character XML 1.0 forbids) and every layout coordinate finite.
 * Seeds: .gtt in testdata build/fuzz/seeds
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairo_out.h"
#include "flame.h"
#include "fold.h"
#include "input.h"
#include "layout.h"
#include "svg.h"
#include "timeline.h"
#include "trace_mut.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Characters XML 1.0 allows, in valid UTF-8: what every SVG we write must hold. */
static void check_xml_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		uint32_t cp;
		size_t k;
		if (c < 0x80) {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				abort();
			i++;
			continue;
		}
		k = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (!k || n - i < k)
			abort();
		cp = c & (0x7f >> k);
		for (size_t j = 1; j < k; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				abort();
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
			abort();
		i += k;
	}
}

static void check_scene(const ren_scene *sc)
{
	const ren_item *it = ren_scene_items(sc);
	for (size_t i = 0; i < ren_scene_count(sc); i++)
		if (!isfinite(it[i].x) || !isfinite(it[i].y) || !isfinite(it[i].w) || !isfinite(it[i].h))
			abort(); /* a coordinate from a time that overflowed */
	if (!isfinite(ren_scene_width(sc)) || !isfinite(ren_scene_height(sc)))
		abort();
}

static void write_scene(const ren_scene *sc, uint32_t h)
{
	check_scene(sc);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	int rc = ren_svg_write(sc, f);
	fclose(f);
	if (rc == 0)
		check_xml_text((const unsigned char *)buf, len);
	free(buf);
	if ((h & 0x1f) == 7) {
		/* Cairo is slow: one input in 32 is drawn, into a memfd */
		static int fd = -1;
		static char path[64];
		if (fd < 0) {
			fd = memfd_create("fuzz-cairo", MFD_CLOEXEC);
			if (fd < 0)
				abort();
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		}
		char err[256];
		ren_cairo_write(sc, path, h & 0x20 ? REN_CAIRO_PDF : REN_CAIRO_PNG, err, sizeof(err));
	}
}

static void run_timeline(const ana_model *m, uint32_t h)
{
	ren_timeline_opts o;
	ren_timeline_opts_init(&o);
	o.width_px = 200 + (h >> 8 & 0x3ff);
	if (h >> 18 & 1) {
		o.has_from = 1;
		o.from_ns = (int64_t)(h >> 19 & 0x1f) * 10000000;
	}
	if (h >> 24 & 1) {
		o.has_to = 1;
		o.to_ns = o.from_ns + 1 + (int64_t)(h >> 25 & 0x7f) * 1000000;
	}
	if (h >> 20 & 1)
		o.threads_re = "[0-9]";
	char why[256];
	int err;
	ren_scene *sc = ren_timeline_layout(m, &o, &err, why, sizeof(why));
	if (!sc) {
		if (!why[0] || err >= 0)
			abort(); /* a refusal has a code and names its reason */
		return;
	}
	write_scene(sc, h);
	ren_scene_destroy(sc);
}

static void run_flame(const ana_folded *fd, unsigned flags, uint32_t h)
{
	int err = 0;
	ren_flame *f = ren_flame_build(fd, flags, &err);
	if (!f) {
		if (err != REN_EEMPTY && err != REN_ENOMEM)
			abort();
		return;
	}
	if (ren_flame_total(f) != fd->total && !(flags & REN_FLAME_ORDERED) && fd->total != UINT64_MAX)
		abort(); /* the root is as wide as all samples */
	ren_flame_opts o;
	ren_flame_opts_init(&o);
	o.width_px = 200 + (h >> 4 & 0x7ff);
	o.palette = (int)(h >> 15) % REN_PAL_COUNT;
	o.inverted = h >> 3 & 1;
	o.flamechart = (flags & REN_FLAME_ORDERED) != 0;
	o.search = h >> 2 & 1 ? "a|b" : NULL;
	ren_flame *base = NULL;
	if (h >> 1 & 1 && (base = ren_flame_build(fd, flags & REN_FLAME_REVERSE, &err)) && ren_flame_diff(f, base) < 0) {
		ren_flame_destroy(base);
		ren_flame_destroy(f);
		return;
	}
	ren_scene *sc = ren_flame_layout(f, &o, &err);
	if (sc) {
		write_scene(sc, h);
		ren_scene_destroy(sc);
	}
	ren_flame_destroy(base);
	ren_flame_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t len;
	uint8_t *img = tm_image(data, size, &len);
	uint32_t h = tm_hash(img, len);
	ana_opts o;
	ana_opts_init(&o);
	o.skip_corrupt = 1;
	char err[512];
	ana_model *m = tm_load(img, len, &o, err, sizeof(err));
	free(img);
	if (!m)
		return 0;
	run_timeline(m, h);
	ana_fold_opts fo;
	ana_folded fd;
	ana_fold_opts_init(&fo);
	fo.threads = h & 1;
	if (ren_input_fold_classes(m, &fo, &fd) == 0) {
		run_flame(&fd, h >> 29 & 1 ? REN_FLAME_REVERSE : 0, h);
		ana_folded_free(&fd);
	}
	if (ren_flamechart_fold(m, NULL, -1, 0, 0, &fd) == 0) {
		run_flame(&fd, REN_FLAME_ORDERED, h >> 7);
		ana_folded_free(&fd);
	}
	ana_model_free(m);
	return 0;
}
