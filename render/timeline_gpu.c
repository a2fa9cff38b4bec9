/* timeline_gpu.c — the timeline's GPU stream rows (kernels, copies, memsets, syncs) and
 * counter rows (a step function binned per pixel column). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "gtt.h"
#include "timeline_priv.h"

/* ---- GPU streams ---- */

typedef struct stream_key { uint32_t pid, device, stream; } stream_key;

static int cmp_stream(const void *pa, const void *pb)
{
	const stream_key *a = pa, *b = pb;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->stream < b->stream ? -1 : a->stream > b->stream;
}

static int add_stream(stream_key **v, size_t *n, size_t *cap, uint32_t pid, uint32_t dev,
                      uint32_t stream)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].pid == pid && (*v)[i].device == dev && (*v)[i].stream == stream)
			return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		stream_key *p = realloc(*v, c * sizeof(*p));
		if (!p)
			return -1;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = (stream_key){pid, dev, stream};
	return 0;
}

/* a kernel's display name (demangled C++, or plain C) up to its parameter list */
static const char *short_kernel(ren_tl *t, const char *name)
{
	size_t len = ana_name_without_params(name);
	if (name[len] == 0)
		return name;
	char *s = ren_scene_strndup(t->sc, name, len);
	if (!s)
		t->oom = 1;
	return s ? s : name;
}

static const char *copy_kind(uint32_t k)
{
	switch (k) {
	case GTT_MEMCPY_HTOD: return "HtoD";
	case GTT_MEMCPY_DTOH: return "DtoH";
	case GTT_MEMCPY_DTOD: return "DtoD";
	case GTT_MEMCPY_HTOH: return "HtoH";
	case GTT_MEMCPY_PTOP: return "PtoP";
	}
	return "copy";
}

static uint32_t copy_color(uint32_t k)
{
	return k == GTT_MEMCPY_HTOD ? C_HTOD : k == GTT_MEMCPY_DTOH ? C_DTOH
	       : k == GTT_MEMCPY_DTOD ? C_DTOD : C_COPY;
}

static void fmt_bytes(char *buf, size_t len, double b)
{
	if (b >= 1 << 30)
		snprintf(buf, len, "%.2f GiB", b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, len, "%.2f MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, len, "%.1f KiB", b / (1 << 10));
	else
		snprintf(buf, len, "%.0f B", b);
}

int ren_tl_streams(ren_tl *t)
{
	const ana_model *m = t->m;
	stream_key *sk = NULL;
	size_t ns = 0, cap = 0;
	for (size_t i = 0; i < m->kernels.n; i++)
		if (add_stream(&sk, &ns, &cap, m->kernels.v[i].pid, m->kernels.v[i].device,
		               m->kernels.v[i].stream) < 0)
			goto oom;
	for (size_t i = 0; i < m->memcpys.n; i++)
		if (add_stream(&sk, &ns, &cap, m->memcpys.v[i].pid, m->memcpys.v[i].device,
		               m->memcpys.v[i].stream) < 0)
			goto oom;
	for (size_t i = 0; i < m->memsets.n; i++)
		if (add_stream(&sk, &ns, &cap, m->memsets.v[i].pid, m->memsets.v[i].device,
		               m->memsets.v[i].stream) < 0)
			goto oom;
	if (!ns) {
		free(sk);
		return 0;
	}
	qsort(sk, ns, sizeof(*sk), cmp_stream);
	ren_tl_header(t, "GPU streams");
	for (size_t s = 0; s < ns; s++) {
		const stream_key *k = &sk[s];
		double y = t->y;
		uint64_t busy = 0;
		size_t nk = 0;
		ren_tl_stripe(t, y, ROW_STREAM, (int)(s % 2));
		for (size_t i = 0; i < m->kernels.n; i++) {
			const gtt_cuda_kernel *kr = &m->kernels.v[i];
			if (kr->pid != k->pid || kr->device != k->device || kr->stream != k->stream)
				continue;
			const char *name = ana_kernel_name(m, kr->pid, kr->name_id);
			const char *sn = short_kernel(t, name);
			char d[32];
			double dur = (double)(kr->end_ns - kr->start_ns);
			ren_tl_fmt_dur(d, sizeof(d), dur);
			if (kr->end_ns >= t->t0 && kr->start_ns <= t->t1) {
				busy += kr->end_ns - kr->start_ns;
				nk++;
			}
			uint32_t h = ren_hash(sn, strlen(sn));
			uint32_t c = ren_mix(0x17becf, 0x1f77b4, (h & 0xff) / 255.0);
			ren_tl_span(t, kr->start_ns, kr->end_ns, y + 3, ROW_STREAM - 6, ren_mix(c, 0xffffff, 0.25), sn,
			     ren_tl_tipf(t, "%s\nkernel %s, grid %ux%ux%u block %ux%ux%u, %u regs, %u B shared\n"
			             "%.6f - %.6f s", name, d, kr->grid[0], kr->grid[1], kr->grid[2],
			          kr->block[0], kr->block[1], kr->block[2], kr->registers, kr->shared_bytes,
			          ren_tl_rel_s(t, kr->start_ns), ren_tl_rel_s(t, kr->end_ns)));
		}
		for (size_t i = 0; i < m->memcpys.n; i++) {
			const gtt_cuda_memcpy *c = &m->memcpys.v[i];
			if (c->pid != k->pid || c->device != k->device || c->stream != k->stream)
				continue;
			char d[32], b[32];
			double dur = (double)(c->end_ns - c->start_ns);
			ren_tl_fmt_dur(d, sizeof(d), dur);
			fmt_bytes(b, sizeof(b), (double)c->bytes);
			ren_tl_span(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, copy_color(c->kind),
			     copy_kind(c->kind),
			     ren_tl_tipf(t, "%s\nmemcpy %s %s, %.2f GB/s%s, at %.6f s", copy_kind(c->kind), b, d,
			          dur > 0 ? (double)c->bytes / dur : 0, c->flags & 1 ? ", async" : "",
			          ren_tl_rel_s(t, c->start_ns)));
		}
		for (size_t i = 0; i < m->memsets.n; i++) {
			const gtt_cuda_memset *c = &m->memsets.v[i];
			if (c->pid != k->pid || c->device != k->device || c->stream != k->stream)
				continue;
			char d[32], b[32];
			ren_tl_fmt_dur(d, sizeof(d), (double)(c->end_ns - c->start_ns));
			fmt_bytes(b, sizeof(b), (double)c->bytes);
			ren_tl_span(t, c->start_ns, c->end_ns, y + 3, ROW_STREAM - 6, C_MEMSET, "memset",
			     ren_tl_tipf(t, "memset\n%s %s, at %.6f s", b, d, ren_tl_rel_s(t, c->start_ns)));
		}
		for (size_t i = 0; i < m->syncs.n; i++) {
			const gtt_cuda_sync *c = &m->syncs.v[i];
			if (c->pid != k->pid || c->stream != k->stream)
				continue;
			char d[32];
			ren_tl_fmt_dur(d, sizeof(d), (double)(c->end_ns - c->start_ns));
			ren_tl_span(t, c->start_ns, c->end_ns, y + ROW_STREAM - 3, 3, C_SYNC, NULL,
			     ren_tl_tipf(t, "synchronize %s\n%.6f s", d, ren_tl_rel_s(t, c->start_ns)));
		}
		char name[96], busy_s[32];
		snprintf(name, sizeof(name), "GPU %u stream %u", k->device, k->stream);
		ren_tl_fmt_dur(busy_s, sizeof(busy_s), (double)busy);
		double win = (double)(t->t1 - t->t0);
		ren_tl_row_label(t, y, ROW_STREAM, name,
		          ren_tl_tipf(t, "%s (pid %u)\n%zu kernels, busy %s = %.1f%% of the window", name, k->pid,
		               nk, busy_s, win > 0 ? 100.0 * (double)busy / win : 0),
		          0, 0);
		t->y += ROW_STREAM;
		if (t->oom)
			goto oom;
	}
	free(sk);
	return 0;
oom:
	free(sk);
	return -1;
}

/* ---- counters ---- */

int ren_tl_counters(ren_tl *t)
{
	const ana_model *m = t->m;
	stream_key *ck = NULL; /* (pid, name_id, -) */
	size_t nc = 0, cap = 0;
	for (size_t i = 0; i < m->counters.n; i++)
		if (add_stream(&ck, &nc, &cap, m->counters.v[i].pid, m->counters.v[i].name_id, 0) < 0)
			return -1;
	if (!nc)
		return 0;
	ren_tl_header(t, "Counters");
	int ncols = (int)ceil(t->x1 - t->x0);
	double *vmax = malloc((size_t)ncols * sizeof(*vmax));
	if (!vmax) {
		free(ck);
		return -1;
	}
	for (size_t c = 0; c < nc; c++) {
		const char *name = ana_string_get(m, ck[c].pid, ck[c].device);
		double lo = INFINITY, hi = -INFINITY, last = NAN;
		uint64_t last_t = 0;
		for (int k = 0; k < ncols; k++)
			vmax[k] = NAN;
		/* a step function: each value holds until the next one */
		for (size_t i = 0; i <= m->counters.n; i++) {
			const gtt_counter *v = i < m->counters.n ? &m->counters.v[i] : NULL;
			if (v && (v->pid != ck[c].pid || v->name_id != ck[c].device))
				continue;
			uint64_t now = v ? v->time_ns : t->t1;
			if (!isnan(last) && now >= t->t0 && last_t <= t->t1) {
				uint64_t a = last_t < t->t0 ? t->t0 : last_t, b = now > t->t1 ? t->t1 : now;
				int ka = (int)floor(ren_tl_x(t, a) - t->x0), kb = (int)floor(ren_tl_x(t, b) - t->x0);
				if (kb >= ncols)
					kb = ncols - 1;
				for (int k = ka < 0 ? 0 : ka; k <= kb; k++)
					if (isnan(vmax[k]) || last > vmax[k])
						vmax[k] = last;
				if (last < lo)
					lo = last;
				if (last > hi)
					hi = last;
			}
			if (!v)
				break;
			last = v->value;
			last_t = v->time_ns;
		}
		double y = t->y, h = ROW_COUNTER;
		ren_tl_stripe(t, y, h, (int)(c % 2));
		if (isinf(lo)) {
			lo = 0;
			hi = 0;
		}
		double base = lo > 0 ? 0 : lo, span_v = hi - base > 0 ? hi - base : 1;
		char lbl[200];
		snprintf(lbl, sizeof(lbl), "%s", name);
		ren_tl_row_label(t, y, h - 14, lbl,
		          ren_tl_tipf(t, "counter %s (pid %u)\nmin %g, max %g in the window", name, ck[c].pid, lo, hi),
		          0, 0);
		char *range = ren_tl_tipf(t, "0 .. %g", hi);
		if (range)
			ren_text(t->sc, 8, y + h - 6, range, FS - 2, REN_ANCHOR_START, 0x777777);
		/* one bar per run of pixel columns with the same value */
		for (int k = 0; k < ncols;) {
			if (isnan(vmax[k])) {
				k++;
				continue;
			}
			int e = k + 1;
			while (e < ncols && vmax[e] == vmax[k])
				e++;
			double bh = (vmax[k] - base) / span_v * (h - 8);
			if (bh < 1)
				bh = 1;
			double a_ns = (double)k / t->px_per_ns, b_ns = (double)e / t->px_per_ns;
			uint64_t a = t->t0 + (uint64_t)a_ns, b = t->t0 + (uint64_t)b_ns;
			ren_item *it = ren_tl_span(t, a, b, y + h - 4 - bh, bh, C_COUNTER,
			                    NULL, ren_tl_tipf(t, "%s = %g\n%.3f - %.3f s", name, vmax[k], ren_tl_rel_s(t, a),
			                               ren_tl_rel_s(t, b)));
			if (it)
				it->alpha = 170;
			k = e;
		}
		t->y += h;
		if (t->oom)
			break;
	}
	free(vmax);
	free(ck);
	return t->oom ? -1 : 0;
}

