/* ring_copy.c — the window of a ring recording (--ring) copied out of its segment files into
 * one trace: records of the last SECONDS, every definition they need once, and capture records
 * that say which time the window holds. */
#include "ring.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "rec_err.h"

/* A set of 64-bit hashes (the definitions already written), open addressing; 0 is empty. */
typedef struct hset {
	uint64_t *v;
	size_t cap, n;
} hset;

static int hset_add(hset *h, uint64_t k)
{
	if (!k)
		k = 1;
	if (h->n * 2 >= h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 4096;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < h->cap; i++) {
			if (!h->v[i])
				continue;
			size_t j = h->v[i] & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = h->v[i];
		}
		free(h->v);
		h->v = v;
		h->cap = cap;
	}
	size_t j = k & (h->cap - 1);
	while (h->v[j]) {
		if (h->v[j] == k)
			return 0; /* seen */
		j = (j + 1) & (h->cap - 1);
	}
	h->v[j] = k;
	h->n++;
	return 1;
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

typedef struct gil_last { uint32_t pid; gtt_gil g; } gil_last;

typedef struct copier {
	const rec_ring_copy_in *in;
	gtt_writer *w;
	rec_ring_copy_out *out;
	hset seen;
	hset starts;           /* threads whose start is in the window */
	uint8_t *enc;          /* a definition's payload, for its hash */
	size_t enc_cap;
	gil_last *gil;         /* the GIL state of each process at the cut */
	size_t n_gil, cap_gil;
	gtt_switch_gate gate;  /* the switch gate at the cut (have_gate: there was one before it) */
	int have_gate;
	uint64_t start_ns, start_rt_ns, run_start_ns; /* from the sources' meta */
	int rc;
} copier;

static int put(copier *c, const gtt_record *r)
{
	int rc = rec_err_from_gtt(gtt_write(c->w, r));
	if (!rc)
		c->out->n_records++;
	return rc;
}

/* A definition once: 1 when r was not written before (content and tag), 0 when it was. */
static int first_time(copier *c, const gtt_record *r)
{
	uint32_t len = 0;
	if (gtt_encode_payload(r, &c->enc, &c->enc_cap, &len) < 0)
		return 1; /* cannot tell: keep it */
	uint64_t h = hash_bytes(0xcbf29ce484222325ull ^ r->tag, c->enc, len);
	int rc = hset_add(&c->seen, h);
	return rc != 0; /* out of memory: keep it */
}

/* Whether a record with a time range ends before the cut (and is left out). */
static int before_cut(const copier *c, const gtt_record *r)
{
	uint64_t t0 = 0, t1 = 0;
	switch (r->tag) {
	case GTT_REC_SAMPLE: t1 = r->u.sample.time_ns; break;
	case GTT_REC_SWITCH: t1 = r->u.sw.time_ns; break;
	case GTT_REC_THREAD_CPU: t1 = r->u.thread_cpu.time_ns; break;
	case GTT_REC_PY_STACK: t1 = r->u.py_stack.time_ns; break;
	case GTT_REC_GIL: t1 = r->u.gil.time_ns; break;
	case GTT_REC_TICKS: t1 = r->u.ticks.end_ns; break;
	case GTT_REC_CUDA_KERNEL: t0 = r->u.kernel.start_ns; t1 = r->u.kernel.end_ns; break;
	case GTT_REC_CUDA_MEMCPY: t0 = r->u.memcpy.start_ns; t1 = r->u.memcpy.end_ns; break;
	case GTT_REC_CUDA_MEMSET: t0 = r->u.memset.start_ns; t1 = r->u.memset.end_ns; break;
	case GTT_REC_CUDA_SYNC: t0 = r->u.sync.start_ns; t1 = r->u.sync.end_ns; break;
	case GTT_REC_CUDA_API: t0 = r->u.api.start_ns; t1 = r->u.api.end_ns; break;
	case GTT_REC_CUDA_ALLOC: t1 = r->u.alloc.time_ns; break;
	case GTT_REC_NVTX: t0 = r->u.nvtx.start_ns; t1 = r->u.nvtx.end_ns; break;
	case GTT_REC_COUNTER: t1 = r->u.counter.time_ns; break;
	case GTT_REC_CUDA_CALLSTACK: t1 = r->u.callstack.time_ns; break;
	case GTT_REC_CAPTURE: t1 = r->u.capture.time_ns; break;
	default: return 0;
	}
	if (t0 > t1)
		t1 = t0;
	return t1 < c->in->cut_ns;
}

static int keep_gil(copier *c, const gtt_gil *g)
{
	size_t i;
	for (i = 0; i < c->n_gil && c->gil[i].pid != g->pid; i++)
		;
	if (i == c->n_gil) {
		if (GT_GROW(c->gil, c->cap_gil, c->n_gil + 1) < 0)
			return -ENOMEM;
		c->n_gil++;
		c->gil[i].pid = g->pid;
		c->gil[i].g.time_ns = 0;
	}
	if (g->time_ns >= c->gil[i].g.time_ns)
		c->gil[i].g = *g;
	return 0;
}

static uint64_t meta_u64(const gtt_meta *m)
{
	return strtoull(m->value, NULL, 10);
}

/* One record of a segment: left out, rewritten or copied. */
static int copy_one(copier *c, gtt_record *r)
{
	uint64_t cut = c->in->cut_ns;

	switch (r->tag) {
	case GTT_REC_CALLCHAIN: /* the reader put them into the samples; the writer interns anew */
	case GTT_REC_END:       /* a window has its own end */
	case GTT_REC_ARCHIVE:   /* written for the window by the caller */
		return 0;
	case GTT_REC_META:
		/* the clock pair and the run's start are the window's own (written first) */
		if (strcmp(r->u.meta.key, "start_ns") == 0) {
			if (!c->start_ns)
				c->start_ns = meta_u64(&r->u.meta);
			return 0;
		}
		if (strcmp(r->u.meta.key, "start_realtime_ns") == 0) {
			if (!c->start_rt_ns)
				c->start_rt_ns = meta_u64(&r->u.meta);
			return 0;
		}
		if (strcmp(r->u.meta.key, "compression") == 0)
			return 0; /* the window's writer says its own */
		if (strcmp(r->u.meta.key, "run_start_ns") == 0) {
			if (!c->run_start_ns)
				c->run_start_ns = meta_u64(&r->u.meta);
			return 0;
		}
		return first_time(c, r) ? put(c, r) : 0;
	case GTT_REC_PROCESS:
	case GTT_REC_THREAD:
	case GTT_REC_MAPPING: {
		/* what existed before the window carries time 0 ("before"), as a segment's replayed
		 * definitions do; a definition is kept once whatever its time (the first copy: the
		 * one with its real time when the window saw it happen) */
		uint64_t *t = r->tag == GTT_REC_PROCESS ? &r->u.process.time_ns
		            : r->tag == GTT_REC_THREAD ? &r->u.thread.time_ns : &r->u.mapping.time_ns;
		uint64_t when = *t;
		if (when < cut) {
			if ((r->tag == GTT_REC_THREAD && r->u.thread.event == GTT_THREAD_EXIT) ||
			    (r->tag == GTT_REC_PROCESS && r->u.process.event == GTT_PROC_EXIT))
				return 0; /* ended before the window */
			when = 0;
		}
		*t = 0;
		int fresh = first_time(c, r);
		*t = when;
		if (fresh && r->tag == GTT_REC_THREAD && r->u.thread.event == GTT_THREAD_START) {
			/* a replayed start (time 0, perhaps with a newer name) of a thread whose start the
			 * window has already */
			uint64_t k = 0x7468726561640000ull ^ ((uint64_t)r->u.thread.pid << 32 | r->u.thread.tid);
			int added = hset_add(&c->starts, k);
			if (added == 0 && when == 0)
				fresh = 0;
		}
		return fresh ? put(c, r) : 0;
	}
	case GTT_REC_HEALTH:
		if (r->u.health.kind == GTT_HEALTH_CONFIG || r->u.health.kind == GTT_HEALTH_NOTE)
			return first_time(c, r) ? put(c, r) : 0;
		/* lost, throttled, lag windows, read errors, drops: the window's only */
		return (r->u.health.end_ns > r->u.health.time_ns ? r->u.health.end_ns : r->u.health.time_ns) < cut
		       ? 0 : put(c, r);
	case GTT_REC_TICKS:
		/* a whole-recording summary covers more than the window: the intervals say it */
		if (r->u.ticks.flags & GTT_TICKS_WHOLE)
			return 0;
		return before_cut(c, r) ? 0 : put(c, r);
	case GTT_REC_PY_CODE:
	case GTT_REC_STRING:
	case GTT_REC_CUDA_DEVICE:
		return first_time(c, r) ? put(c, r) : 0;
	case GTT_REC_GIL:
		/* the state at the cut is the last change before it */
		if (r->u.gil.time_ns < cut)
			return keep_gil(c, &r->u.gil);
		return put(c, r);
	case GTT_REC_CAPTURE:
		if (r->u.capture.pid == 0)
			return 0; /* the window's own are written from the history */
		return before_cut(c, r) ? 0 : put(c, r);
	case GTT_REC_SWITCH_GATE:
		/* as the GIL: the state at the cut is the last change before it */
		if (r->u.gate.time_ns < cut) {
			if (!c->have_gate || r->u.gate.time_ns >= c->gate.time_ns)
				c->gate = r->u.gate;
			c->have_gate = 1;
			return 0;
		}
		return put(c, r);
	case GTT_REC_SAMPLE: {
		if (before_cut(c, r))
			return 0;
		int rc = put(c, r);
		if (!rc)
			c->out->n_samples++;
		return rc;
	}
	default:
		if (before_cut(c, r))
			return 0;
		if (!strcmp(gtt_tag_name(r->tag), "unknown")) {
			/* a kind this recorder does not know travels as it is */
			int rc = rec_err_from_gtt(gtt_write_raw(c->w, r->tag, r->raw, r->len));
			if (!rc)
				c->out->n_records++;
			return rc;
		}
		return put(c, r);
	}
}

static int copy_segment(copier *c, const uint8_t *p, size_t len)
{
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open_mem(p, len, &err);
	gtt_record rec;

	if (!r)
		return 0; /* a segment cut before its header: nothing in it */
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			c->out->n_bad++;
			if (rc == GTT_ENOMEM)
				break;
			continue;
		}
		if ((rc = copy_one(c, &rec)) < 0) {
			c->rc = rc;
			break;
		}
	}
	gtt_reader_close(r);
	return c->rc;
}

static int put_meta_u64(copier *c, const char *key, uint64_t v)
{
	char value[32];
	gtt_record r = { .tag = GTT_REC_META };
	snprintf(value, sizeof(value), "%" PRIu64, v);
	r.u.meta.key = key;
	r.u.meta.value = value;
	return put(c, &r);
}

static int put_capture(copier *c, uint64_t t, uint32_t event, uint32_t source)
{
	gtt_record r = { .tag = GTT_REC_CAPTURE };
	r.u.capture.time_ns = t;
	r.u.capture.event = event;
	r.u.capture.source = source;
	r.u.capture.name = source == GTT_CAPTURE_NVTX && c->in->nvtx_name ? c->in->nvtx_name : "";
	return put(c, &r);
}

/* The captured intervals of the history clipped to the window; an edge made by the window
 * itself has source ring. Nothing captured: one stop at the cut says so. */
static int put_captures(copier *c)
{
	const rec_ring_copy_in *in = c->in;
	int any = 0, rc = 0;

	for (size_t i = 0; i < in->n_iv && rc == 0; i++) {
		const rec_capture_iv *v = &in->iv[i];
		uint64_t stop = v->stop_ns ? v->stop_ns : UINT64_MAX;
		if (stop <= in->cut_ns || v->start_ns > in->end_ns)
			continue;
		any = 1;
		if (v->start_ns >= in->cut_ns)
			rc = put_capture(c, v->start_ns, GTT_CAPTURE_START, v->start_source);
		else
			rc = put_capture(c, in->cut_ns, GTT_CAPTURE_START, GTT_CAPTURE_RING);
		if (rc == 0 && stop <= in->end_ns)
			rc = put_capture(c, stop, GTT_CAPTURE_STOP, v->stop_source);
		else if (rc == 0)
			rc = put_capture(c, in->end_ns, GTT_CAPTURE_STOP, GTT_CAPTURE_RING);
	}
	if (!any && rc == 0)
		rc = put_capture(c, in->cut_ns, GTT_CAPTURE_STOP, GTT_CAPTURE_RING);
	return rc;
}

int rec_ring_copy_window(const rec_ring_copy_in *in, gtt_writer *w, rec_ring_copy_out *out)
{
	copier c;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.in = in;
	c.w = w;
	c.out = out;
	for (int i = 0; i < in->n_seg && rc == 0; i++)
		rc = copy_segment(&c, in->seg[i], in->seg_len[i]);
	/* the window is a recording of its own: its start and the clock pair moved to the cut
	 * (CLOCK_REALTIME = the pair's value plus the monotonic time passed), the run's start kept */
	if (rc == 0 && c.start_ns)
		rc = put_meta_u64(&c, "start_ns", in->cut_ns);
	if (rc == 0 && c.start_ns && c.start_rt_ns)
		rc = put_meta_u64(&c, "start_realtime_ns", c.start_rt_ns + (in->cut_ns - c.start_ns));
	if (rc == 0 && (c.run_start_ns || c.start_ns))
		rc = put_meta_u64(&c, "run_start_ns", c.run_start_ns ? c.run_start_ns : c.start_ns);
	for (size_t i = 0; i < c.n_gil && rc == 0; i++) {
		gtt_record r = { .tag = GTT_REC_GIL };
		r.u.gil = c.gil[i].g;
		r.u.gil.time_ns = in->cut_ns;
		rc = put(&c, &r);
	}
	if (rc == 0 && c.have_gate) {
		gtt_record r = { .tag = GTT_REC_SWITCH_GATE };
		r.u.gate = c.gate;
		r.u.gate.time_ns = in->cut_ns;
		r.u.gate.reason = GTT_GATE_START;
		rc = put(&c, &r);
	}
	if (rc == 0)
		rc = put_captures(&c);
	free(c.seen.v);
	free(c.starts.v);
	free(c.enc);
	free(c.gil);
	return rc;
}
