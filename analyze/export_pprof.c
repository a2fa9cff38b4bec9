/* export_pprof.c — the model as a pprof profile (profile.proto, gzipped): functions per
 * (name, file), one location per physical frame with its inlined calls as extra lines,
 * mappings with build-ids, samples aggregated per (stack, thread, GIL class) and labelled. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "bounds.h"
#include "export.h"
#include "gt_util.h"
#include "gtt.h"
#include "pb.h"
#include "sample_sum.h"

/* profile.proto field numbers */
enum {
	P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5,
	P_STRING_TABLE = 6, P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11,
	P_PERIOD = 12, P_COMMENT = 13, P_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1, VT_UNIT = 2,
	S_LOCATION_ID = 1, S_VALUE = 2, S_LABEL = 3,
	L_KEY = 1, L_STR = 2, L_NUM = 3, L_NUM_UNIT = 4,
	M_ID = 1, M_START = 2, M_LIMIT = 3, M_OFFSET = 4, M_FILENAME = 5, M_BUILD_ID = 6,
	M_HAS_FUNCTIONS = 7, M_HAS_FILENAMES = 8, M_HAS_LINE_NUMBERS = 9, M_HAS_INLINE_FRAMES = 10,
	LOC_ID = 1, LOC_MAPPING_ID = 2, LOC_ADDRESS = 3, LOC_LINE = 4,
	LN_FUNCTION_ID = 1, LN_LINE = 2,
	F_ID = 1, F_NAME = 2, F_SYSTEM_NAME = 3, F_FILENAME = 4, F_START_LINE = 5,
};

typedef struct pprof_ctx {
	const ana_model *m;
	ana_keymap *strings;      /* string -> string table index */
	ANA_VEC(const char *) strtab;
	ana_keymap *funcs;        /* (name idx, file idx) -> function id - 1 */
	ana_keymap *locs;         /* frame ids of one physical frame -> location id - 1 */
	ana_pb funcs_pb, locs_pb;
	uint32_t *frame_func;     /* frame id -> function id (0 = not yet) */
	ana_keymap *mod_names;    /* module basename -> index into mod_map */
	ANA_VEC(uint32_t) mod_map;  /* mapping id per module name index */
	ANA_VEC(char *) owned;      /* strings made here (build-ids, comment) */
	int oom;
} pprof_ctx;

/* A copy of s that lives until the profile is built; NULL on ENOMEM. */
static const char *own(pprof_ctx *c, const char *s)
{
	char *d = strdup(s);
	char **slot = d ? ana_vec_push(c->owned) : NULL;
	if (!slot) {
		free(d);
		c->oom = 1;
		return NULL;
	}
	*slot = d;
	return d;
}

static int64_t str_idx(pprof_ctx *c, const char *s)
{
	int is_new = 0;
	if (!s)
		s = "";
	int64_t id = ana_keymap_str(c->strings, s, &is_new);
	if (id < 0) {
		c->oom = 1;
		return 0;
	}
	if (is_new) {
		/* a copy: callers pass stack buffers too */
		const char *kept = own(c, s);
		const char **p = kept ? ana_vec_push(c->strtab) : NULL;
		if (!p) {
			c->oom = 1;
			return 0;
		}
		*p = kept;
	}
	return id;
}

static void append(ana_pb *out, const ana_pb *part)
{
	if (part->failed)
		out->failed = 1;
	else if (part->n)
		ana_pb_raw(out, part->p, part->n);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : (path ? path : "");
}

/* A function's system_name. pprof takes a name equal to its system_name for one it may tidy:
 * with '<' or "::" in it, it cuts out what it takes for C++ template or parameter lists, and
 * Python's "<module>", "<lambda>", "<listcomp>" became empty, shown as "<unknown>". A Python
 * function's system name is "file:name" (what the interpreter calls it), so the name is kept as
 * it is; native names are the demangled symbol, tidied by pprof's own rules. */
static int64_t system_name(pprof_ctx *c, const ana_frame *f, const char *name)
{
	if (f->kind != ANA_FRAME_PYTHON)
		return str_idx(c, name);
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s:%s", base_name(f->file ? f->file : f->module), name);
	if (!strcmp(buf, name)) /* never equal, even for a file named like the function */
		snprintf(buf, sizeof(buf), "python:%s", name);
	return str_idx(c, buf);
}

static uint32_t func_id(pprof_ctx *c, uint32_t frame)
{
	if (c->frame_func[frame])
		return c->frame_func[frame];
	const ana_frame *f = &c->m->frames.v[frame];
	const char *file = f->file && f->file[0] ? f->file : (f->module ? f->module : "");
	const char *name = f->name ? f->name : "?";
	uint32_t key[2] = {(uint32_t)str_idx(c, name), (uint32_t)str_idx(c, file)};
	int is_new = 0;
	int64_t id = ana_keymap_get(c->funcs, key, 2, &is_new);
	if (id < 0) {
		c->oom = 1;
		return 0;
	}
	if (is_new) {
		size_t mk = ana_pb_begin(&c->funcs_pb, P_FUNCTION);
		ana_pb_uint(&c->funcs_pb, F_ID, (uint64_t)id + 1);
		ana_pb_int_opt(&c->funcs_pb, F_NAME, key[0]);
		ana_pb_int_opt(&c->funcs_pb, F_SYSTEM_NAME, system_name(c, f, name));
		ana_pb_int_opt(&c->funcs_pb, F_FILENAME, key[1]);
		ana_pb_end(&c->funcs_pb, mk);
	}
	c->frame_func[frame] = (uint32_t)id + 1;
	return (uint32_t)id + 1;
}

/* The mapping id of a native frame's module (matched by the mapped file's basename). */
static uint32_t mapping_of(pprof_ctx *c, const ana_frame *f)
{
	if (f->kind != ANA_FRAME_NATIVE || !f->module)
		return 0;
	int is_new = 0;
	int64_t k = ana_keymap_str(c->mod_names, f->module, &is_new);
	if (k < 0 || (size_t)k >= c->mod_map.n)
		return 0;
	return c->mod_map.v[k];
}

/* Location for frames[0..n): a physical frame followed (leafwards) by its inlined calls.
 * pprof lists a location's lines leaf first, the caller that holds the code last. */
static uint32_t loc_id(pprof_ctx *c, const uint32_t *frames, uint32_t n)
{
	int is_new = 0;
	int64_t id = ana_keymap_get(c->locs, frames, n, &is_new);
	if (id < 0) {
		c->oom = 1;
		return 0;
	}
	if (is_new) {
		ana_pb *b = &c->locs_pb;
		uint32_t fids[64];
		uint32_t nl = n < 64 ? n : 64;
		for (uint32_t i = 0; i < nl; i++)
			fids[i] = func_id(c, frames[i]);
		size_t mk = ana_pb_begin(b, P_LOCATION);
		ana_pb_uint(b, LOC_ID, (uint64_t)id + 1);
		ana_pb_uint_opt(b, LOC_MAPPING_ID, mapping_of(c, &c->m->frames.v[frames[0]]));
		for (uint32_t i = nl; i-- > 0;) {
			size_t ml = ana_pb_begin(b, LOC_LINE);
			ana_pb_uint(b, LN_FUNCTION_ID, fids[i]);
			ana_pb_int_opt(b, LN_LINE, c->m->frames.v[frames[i]].line > 0 ? c->m->frames.v[frames[i]].line : 0);
			ana_pb_end(b, ml);
		}
		ana_pb_end(b, mk);
	}
	return (uint32_t)id + 1;
}

static void value_type(pprof_ctx *c, ana_pb *b, uint32_t field, const char *type, const char *unit)
{
	size_t mk = ana_pb_begin(b, field);
	ana_pb_int_opt(b, VT_TYPE, str_idx(c, type));
	ana_pb_int_opt(b, VT_UNIT, str_idx(c, unit));
	ana_pb_end(b, mk);
}

static void label_str(pprof_ctx *c, ana_pb *b, const char *key, const char *val)
{
	size_t mk = ana_pb_begin(b, S_LABEL);
	ana_pb_int_opt(b, L_KEY, str_idx(c, key));
	ana_pb_int_opt(b, L_STR, str_idx(c, val));
	ana_pb_end(b, mk);
}

static void label_num(pprof_ctx *c, ana_pb *b, const char *key, int64_t v)
{
	size_t mk = ana_pb_begin(b, S_LABEL);
	ana_pb_int_opt(b, L_KEY, str_idx(c, key));
	ana_pb_int(b, L_NUM, v);
	ana_pb_end(b, mk);
}

typedef struct agg { uint64_t count, weight_ns; uint32_t stack_id, thread_idx, cls; } agg;

/* pprof's values are int64: a count or time past that is written as the largest one */
static int64_t pb_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Sample and period types, times, the command as a comment. 0 or GTT_ENOMEM. */
static int header_fields(pprof_ctx *c, const ana_model *m, ana_pb *out)
{
	/* Header fields first (pprof readers accept any order; keeping one makes output stable). */
	value_type(c, out, P_SAMPLE_TYPE, "samples", "count");
	value_type(c, out, P_SAMPLE_TYPE, "cpu", "nanoseconds");
	uint64_t period = 0;
	const char *hz = ana_meta_get(m, "frequency_hz");
	if (hz && strtoull(hz, NULL, 10) > 0)
		period = gt_hz_to_period_ns(strtod(hz, NULL)); /* as the report's sampling period */
	else if (m->samples.n)
		period = m->samples.v[0].weight_ns;
	else if (m->samples_streamed && ana_sample_sum_of(m) && ana_sample_sum_of(m)->rows.n) {
		const ana_ssum_row *r = &ana_sample_sum_of(m)->rows.v[0]; /* its first sample's, on average */
		period = r->n ? r->weight_ns / r->n : 0;
	}
	value_type(c, out, P_PERIOD_TYPE, "cpu", "nanoseconds");
	ana_pb_int_opt(out, P_PERIOD, pb_i64(period));
	const char *rt = ana_meta_get(m, "start_realtime_ns"), *mt = ana_meta_get(m, "start_ns");
	if (rt && mt) {
		uint64_t real0 = strtoull(rt, NULL, 10), mono0 = strtoull(mt, NULL, 10);
		ana_pb_int_opt(out, P_TIME_NANOS, pb_i64(ana_sat_add(real0, ana_span(mono0, m->start_ns))));
	}
	ana_pb_int_opt(out, P_DURATION_NANOS, pb_i64(ana_span(m->start_ns, m->end_ns)));
	const char *cmd = ana_meta_get(m, "command");
	if (cmd) {
		char *s = malloc(strlen(cmd) + 10);
		if (!s)
			return GTT_ENOMEM;
		sprintf(s, "command: %s", cmd);
		const char *kept = own(c, s);
		free(s);
		if (!kept)
			return GTT_ENOMEM;
		ana_pb_int(out, P_COMMENT, str_idx(c, kept));
	}
	ana_pb_int(out, P_DEFAULT_SAMPLE_TYPE, str_idx(c, "cpu"));
	return 0;
}

/* Mappings: one per mapped file (first mapping of it), keyed by basename for frames. */
static int mappings(pprof_ctx *c, const ana_model *m, ana_pb *maps_pb)
{
	for (size_t i = 0; i < m->mappings.n; i++) {
		const gtt_mapping *mp = &m->mappings.v[i].m;
		if (!mp->path || !mp->path[0])
			continue;
		int is_new = 0;
		int64_t k = ana_keymap_str(c->mod_names, base_name(mp->path), &is_new);
		if (k < 0)
			return GTT_ENOMEM;
		if (!is_new)
			continue;
		uint32_t *slot = ana_vec_push(c->mod_map);
		if (!slot)
			return GTT_ENOMEM;
		*slot = (uint32_t)c->mod_map.n;
		char bid[2 * GTT_BUILD_ID_MAX + 1];
		for (uint32_t b = 0; b < mp->build_id_len && b < GTT_BUILD_ID_MAX; b++)
			sprintf(bid + 2 * b, "%02x", mp->build_id[b]);
		bid[2 * (mp->build_id_len < GTT_BUILD_ID_MAX ? mp->build_id_len : GTT_BUILD_ID_MAX)] = 0;
		size_t mk = ana_pb_begin(maps_pb, P_MAPPING);
		ana_pb_uint(maps_pb, M_ID, c->mod_map.n);
		ana_pb_uint_opt(maps_pb, M_START, mp->start);
		ana_pb_uint_opt(maps_pb, M_LIMIT, mp->end);
		ana_pb_uint_opt(maps_pb, M_OFFSET, mp->pgoff);
		ana_pb_int_opt(maps_pb, M_FILENAME, str_idx(c, mp->path));
		if (bid[0]) {
			const char *kept = own(c, bid);
			if (!kept)
				return GTT_ENOMEM;
			ana_pb_int_opt(maps_pb, M_BUILD_ID, str_idx(c, kept));
		}
		ana_pb_uint(maps_pb, M_HAS_FUNCTIONS, 1);
		ana_pb_uint(maps_pb, M_HAS_FILENAMES, 1);
		ana_pb_uint(maps_pb, M_HAS_LINE_NUMBERS, 1);
		ana_pb_uint(maps_pb, M_HAS_INLINE_FRAMES, 1);
		ana_pb_end(maps_pb, mk);
	}
	return 0;
}

/* One more (stack, thread, class) of count samples weighing weight_ns into the aggregates. */
static int agg_add(ana_keymap *skeys, agg **aggs, size_t *n_aggs, size_t *cap_aggs, uint32_t stack_id,
                   uint32_t thread_idx, uint32_t cls, uint64_t count, uint64_t weight_ns)
{
	uint32_t key[3] = {stack_id, thread_idx, cls};
	int is_new = 0;
	int64_t k = ana_keymap_get(skeys, key, 3, &is_new);
	if (k < 0 || (is_new && GT_GROW(*aggs, *cap_aggs, *n_aggs + 1) < 0))
		return GTT_ENOMEM;
	if (is_new)
		(*aggs)[(*n_aggs)++] = (agg){.stack_id = stack_id, .thread_idx = thread_idx, .cls = cls};
	(*aggs)[k].count = ana_sat_add((*aggs)[k].count, count);
	(*aggs)[k].weight_ns = ana_sat_add((*aggs)[k].weight_ns, weight_ns);
	return 0;
}

/* The samples aggregated per (stack, thread, class), in order of first appearance; counts and
 * times saturate. From the samples, or from the loader's sums of them where it kept none (their
 * rows, by (thread, stack, class, cut short), come in order of first appearance too). *n_out
 * aggregates in *out (the caller frees). 0 or GTT_ENOMEM. */
static int aggregate(const ana_model *m, int gil, agg **out, size_t *n_out)
{
	ana_keymap *skeys = ana_keymap_create();
	agg *aggs = NULL;
	size_t n_aggs = 0, cap_aggs = 0;
	int rc = skeys ? 0 : GTT_ENOMEM;
	const ana_sample_sum *ss = m->samples_streamed ? ana_sample_sum_of(m) : NULL;
	for (size_t i = 0; !rc && ss && i < ss->rows.n; i++) {
		const ana_ssum_row *r = &ss->rows.v[i];
		if (r->stack_id < m->stacks.n && r->thread_idx < m->threads.n && (gil < 0 || (gil & 1 << r->cls)))
			rc = agg_add(skeys, &aggs, &n_aggs, &cap_aggs, r->stack_id, r->thread_idx, r->cls, r->n, r->weight_ns);
	}
	for (size_t i = 0; !rc && i < m->samples.n; i++) {
		const ana_sample *s = &m->samples.v[i];
		if (s->stack_id < m->stacks.n && s->thread_idx < m->threads.n && (gil < 0 || (gil & 1 << s->cls)))
			rc = agg_add(skeys, &aggs, &n_aggs, &cap_aggs, s->stack_id, s->thread_idx, s->cls, 1, s->weight_ns);
	}
	ana_keymap_destroy(skeys);
	if (rc)
		free(aggs);
	*out = rc ? NULL : aggs;
	*n_out = rc ? 0 : n_aggs;
	return rc;
}

/* One pprof sample per aggregate, with its locations and thread/tid/pid/gil labels. */
static int samples(pprof_ctx *c, const ana_model *m, const agg *aggs, size_t n_aggs, ana_pb *samples_pb)
{
	size_t max_depth = 1;
	for (size_t i = 0; i < m->stacks.n; i++)
		if (m->stacks.v[i].n > max_depth)
			max_depth = m->stacks.v[i].n;
	uint64_t *locbuf = malloc(max_depth * sizeof(*locbuf));
	if (!locbuf)
		return GTT_ENOMEM;
	for (size_t k = 0; k < n_aggs; k++) {
		const ana_stack *st = &m->stacks.v[aggs[k].stack_id];
		size_t nl = 0;
		/* Walk leaf to root; a run of inlined frames belongs to the physical frame above it. */
		uint32_t end = st->n;
		while (end > 0) {
			uint32_t begin = end - 1;
			while (begin > 0 && m->frames.v[st->frames[begin]].inlined)
				begin--;
			locbuf[nl++] = loc_id(c, st->frames + begin, end - begin);
			end = begin;
		}
		const ana_thread *th = &m->threads.v[aggs[k].thread_idx];
		int64_t vals[2] = {pb_i64(aggs[k].count), pb_i64(aggs[k].weight_ns)};
		size_t mk = ana_pb_begin(samples_pb, P_SAMPLE);
		ana_pb_packed_uint(samples_pb, S_LOCATION_ID, locbuf, nl);
		ana_pb_packed_int(samples_pb, S_VALUE, vals, 2);
		char tn[256];
		label_str(c, samples_pb, "thread", ana_export_thread_name(m, th, tn, sizeof(tn)));
		label_num(c, samples_pb, "tid", th->tid);
		label_num(c, samples_pb, "pid", th->pid);
		label_str(c, samples_pb, "gil", ana_class_name(aggs[k].cls));
		ana_pb_end(samples_pb, mk);
	}
	free(locbuf);
	return 0;
}

static int build(const ana_model *m, int gil, ana_pb *out)
{
	pprof_ctx c = {.m = m};
	ana_pb samples_pb, maps_pb;
	agg *aggs = NULL;
	size_t n_aggs = 0;
	int rc = GTT_ENOMEM;
	ana_pb_init(&samples_pb);
	ana_pb_init(&maps_pb);
	ana_pb_init(&c.funcs_pb);
	ana_pb_init(&c.locs_pb);
	c.strings = ana_keymap_create();
	c.funcs = ana_keymap_create();
	c.locs = ana_keymap_create();
	c.mod_names = ana_keymap_create();
	c.frame_func = calloc(m->frames.n + 1, sizeof(*c.frame_func));
	if (!c.strings || !c.funcs || !c.locs || !c.mod_names || !c.frame_func)
		goto out;
	str_idx(&c, "");
	if (header_fields(&c, m, out) < 0 || mappings(&c, m, &maps_pb) < 0 ||
	    aggregate(m, gil, &aggs, &n_aggs) < 0 || samples(&c, m, aggs, n_aggs, &samples_pb) < 0 || c.oom)
		goto out;
	/* Field order: samples, mappings, locations, functions, string table. */
	append(out, &samples_pb);
	append(out, &maps_pb);
	append(out, &c.locs_pb);
	append(out, &c.funcs_pb);
	for (size_t i = 0; i < c.strtab.n; i++)
		ana_pb_string(out, P_STRING_TABLE, c.strtab.v[i]);
	rc = ana_pb_failed(out) || ana_pb_failed(&samples_pb) || ana_pb_failed(&maps_pb) ||
	     ana_pb_failed(&c.locs_pb) || ana_pb_failed(&c.funcs_pb) ? GTT_ENOMEM : 0;
out:
	for (size_t i = 0; i < c.owned.n; i++)
		free(c.owned.v[i]);
	free(c.owned.v);
	ana_pb_free(&samples_pb);
	ana_pb_free(&maps_pb);
	ana_pb_free(&c.funcs_pb);
	ana_pb_free(&c.locs_pb);
	ana_keymap_destroy(c.strings);
	ana_keymap_destroy(c.funcs);
	ana_keymap_destroy(c.locs);
	ana_keymap_destroy(c.mod_names);
	free(c.frame_func);
	free(c.strtab.v);
	free(c.mod_map.v);
	free(aggs);
	return rc;
}

int ana_export_pprof_raw(const ana_model *m, const ana_export_opts *o, uint8_t **buf, size_t *len)
{
	ana_pb b;
	ana_pb_init(&b);
	int rc = build(m, o ? o->gil : -1, &b);
	if (rc < 0) {
		ana_pb_free(&b);
		return rc;
	}
	*buf = b.p;
	*len = b.n;
	return 0;
}

/* gzip through zlib: no file name, mtime 0, so equal models give equal bytes. */
int ana_export_pprof(const ana_model *m, const ana_export_opts *o, FILE *out)
{
	uint8_t *raw = NULL;
	size_t len = 0;
	int rc = ana_export_pprof_raw(m, o, &raw, &len);
	if (rc < 0)
		return rc;
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(raw);
		return GTT_ENOMEM;
	}
	unsigned char chunk[65536];
	z.next_in = raw;
	size_t left = len;
	int flush;
	rc = 0;
	do {
		uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;
		z.avail_in = take;
		left -= take;
		flush = left ? Z_NO_FLUSH : Z_FINISH;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			if (deflate(&z, flush) == Z_STREAM_ERROR) {
				rc = GTT_EINVAL;
				goto out;
			}
			size_t have = sizeof(chunk) - z.avail_out;
			if (have && fwrite(chunk, 1, have, out) != have) {
				rc = GTT_EIO;
				goto out;
			}
		} while (z.avail_out == 0);
	} while (flush != Z_FINISH);
out:
	deflateEnd(&z);
	free(raw);
	return rc;
}
