/* counter_sum.c — the program's counters summarized over time (counter_sum.h): a step function per
 * counter, integrated record by record, with its watermark's step function beside it. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "counter_sum.h"
#include "gt_util.h"
#include "model_priv.h"

#define COUNTER_ROWS 40 /* report lines */

size_t ana_counter_watermark_of(const char *name)
{
	size_t n = name ? strlen(name) : 0, k = strlen(ANA_WATERMARK_SUFFIX);
	return n > k && strcmp(name + n - k, ANA_WATERMARK_SUFFIX) == 0 ? n - k : 0;
}

/* One counter being integrated. */
typedef struct cstate {
	ana_counter_sum s;
	uint64_t at_ns;           /* time the step function has been integrated up to */
	double v;                 /* current value; NAN before the first or after a non-finite one */
	double wm;                /* current watermark; NAN before the first */
	double area;              /* sum of value x ns */
} cstate;

/* (pid, name id) -> counter, and whether the name is the watermark */
typedef struct name_ref { uint32_t pid, name_id, counter, is_wm; } name_ref;

struct ana_counters_acc {
	ANA_VEC(cstate) c;
	ana_idtable by_name;      /* counters by (pid, name of X) */
	ANA_VEC(name_ref) refs;
	ana_idtable by_id;        /* refs by (pid, name id) */
};

ana_counters_acc *ana_counters_acc_new(void)
{
	return calloc(1, sizeof(ana_counters_acc));
}

void ana_counters_acc_free(ana_counters_acc *a)
{
	if (!a)
		return;
	free(a->c.v);
	ana_idtable_free(&a->by_name);
	free(a->refs.v);
	ana_idtable_free(&a->by_id);
	free(a);
}

typedef struct name_key { uint32_t pid; const char *name; size_t len; } name_key;

static int name_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_counter_sum *s = &((ana_counters_acc *)ctx)->c.v[id].s;
	const name_key *k = key;
	return s->pid == k->pid && s->name_len == k->len && memcmp(s->name, k->name, k->len) == 0;
}

static int ref_eq(uint32_t id, const void *key, void *ctx)
{
	const name_ref *r = &((ana_counters_acc *)ctx)->refs.v[id];
	const uint32_t *k = key;
	return r->pid == k[0] && r->name_id == k[1];
}

/* The reference of (pid, name_id), made on first sight. NULL on ENOMEM. */
static name_ref *ref_get(ana_counters_acc *a, uint32_t pid, const char *name, uint32_t name_id)
{
	uint32_t k[2] = { pid, name_id };
	uint32_t *slot = ana_idtable_slot(&a->by_id, ana_hash_u64((uint64_t)pid << 32 | name_id), ref_eq, k, a);
	if (!slot)
		return NULL;
	if (*slot)
		return &a->refs.v[*slot - 1];
	size_t wl = ana_counter_watermark_of(name);
	name_key nk = { pid, name, wl ? wl : strlen(name) };
	uint32_t *cs = ana_idtable_slot(&a->by_name, ana_hash_bytes(name, nk.len, pid), name_eq, &nk, a);
	if (!cs)
		return NULL;
	if (!*cs) {
		cstate *c = ana_vec_push(a->c);
		if (!c)
			return NULL;
		c->s.pid = pid;
		c->s.name = name;
		c->s.name_len = nk.len;
		c->s.name_id = c->s.wm_name_id = ANA_NO_ID;
		c->v = c->wm = NAN;
		*cs = (uint32_t)a->c.n;
		a->by_name.n++;
	}
	cstate *c = &a->c.v[*cs - 1];
	if (!wl && c->s.name_id == ANA_NO_ID) {
		c->s.name_id = name_id;
		c->s.name = name; /* X's own string, rather than the watermark's */
	} else if (wl && c->s.wm_name_id == ANA_NO_ID) {
		c->s.wm_name_id = name_id;
	}
	name_ref *r = ana_vec_push(a->refs);
	if (!r)
		return NULL;
	*r = (name_ref){ pid, name_id, *cs - 1, wl != 0 };
	*slot = (uint32_t)a->refs.n;
	a->by_id.n++;
	return r;
}

/* Integrate c's step function up to t. */
static void advance(cstate *c, uint64_t t)
{
	if (t <= c->at_ns) /* out of order by a little (a record written late): nothing to add */
		return;
	uint64_t dt = t - c->at_ns;
	if (!isnan(c->v) && c->s.n) {
		c->s.valued_ns += dt;
		c->area += c->v * (double)dt;
		if (!isnan(c->wm)) {
			c->s.wm_known_ns += dt;
			if (c->v <= c->wm)
				c->s.below_ns += dt;
		}
	}
	c->at_ns = t;
}

int ana_counters_acc_add(ana_counters_acc *a, uint32_t pid, const char *name, uint32_t name_id, uint64_t time_ns,
                         double value)
{
	name_ref *r = ref_get(a, pid, name ? name : "?", name_id);
	if (!r)
		return GTT_ENOMEM;
	cstate *c = &a->c.v[r->counter];
	if (c->s.n || c->s.n_wm)
		advance(c, time_ns);
	else
		c->at_ns = time_ns;
	if (r->is_wm) {
		if (!isfinite(value))
			return 0;
		c->wm = value;
		if (!c->s.n_wm || value < c->s.wm_min)
			c->s.wm_min = value;
		if (!c->s.n_wm || value > c->s.wm_max)
			c->s.wm_max = value;
		c->s.n_wm++;
		return 0;
	}
	if (!isfinite(value)) {
		c->v = NAN; /* ends the step: the time until the next value is not observed */
		return 0;
	}
	if (!c->s.n || value < c->s.min)
		c->s.min = value;
	if (!c->s.n || value > c->s.max)
		c->s.max = value;
	if (!c->s.n)
		c->s.first_ns = time_ns;
	if (time_ns > c->s.last_ns)
		c->s.last_ns = time_ns;
	c->s.n++;
	c->v = value;
	return 0;
}

static int cmp_sum(const void *x, const void *y)
{
	const ana_counter_sum *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);
	return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

int ana_counters_acc_finish(ana_counters_acc *a, ana_counter_sum **out, size_t *n)
{
	*out = malloc((a->c.n ? a->c.n : 1) * sizeof(**out));
	*n = 0;
	if (!*out) {
		ana_counters_acc_free(a);
		return GTT_ENOMEM;
	}
	for (size_t i = 0; i < a->c.n; i++) {
		cstate *c = &a->c.v[i];
		/* the observed span ends at the last sample: what the value did after it is unknown */
		if (c->s.n)
			advance(c, c->s.last_ns);
		c->s.mean = c->s.valued_ns ? c->area / (double)c->s.valued_ns : c->v;
		(*out)[(*n)++] = c->s;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_sum);
	ana_counters_acc_free(a);
	return 0;
}

static int cmp_time(const void *x, const void *y, void *ctx)
{
	const ana_model *m = ctx;
	const gtt_counter *a = &m->counters.v[*(const size_t *)x], *b = &m->counters.v[*(const size_t *)y];
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns ? -1 : 1;
	return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

int ana_counters_summarize(const ana_model *m, ana_counter_sum **out, size_t *n)
{
	size_t nc = m->counters.n;
	size_t *order = malloc((nc ? nc : 1) * sizeof(*order));
	ana_counters_acc *a = ana_counters_acc_new();
	*out = NULL;
	*n = 0;
	if (!order || !a) {
		free(order);
		ana_counters_acc_free(a);
		return GTT_ENOMEM;
	}
	for (size_t i = 0; i < nc; i++)
		order[i] = i;
	/* counter files are appended by many threads: nearly, not exactly, in time order */
	qsort_r(order, nc, sizeof(*order), cmp_time, (void *)m);
	for (size_t i = 0; i < nc; i++) {
		const gtt_counter *c = &m->counters.v[order[i]];
		if (ana_counters_acc_add(a, c->pid, ana_string_get(m, c->pid, c->name_id), c->name_id, c->time_ns,
		                         c->value) < 0) {
			free(order);
			ana_counters_acc_free(a);
			return GTT_ENOMEM;
		}
	}
	free(order);
	return ana_counters_acc_finish(a, out, n);
}

/* One report line. */
static void print_counter(FILE *out, const ana_counter_sum *s)
{
	int nl = s->name_len > 32 ? 29 : (int)s->name_len;
	fprintf(out, "  %7u  %.*s%s%*s", s->pid, nl, s->name, s->name_len > 32 ? "..." : "", s->name_len > 32 ? 0 : 32 - nl,
	        "");
	char lo[32], hi[32];
	if (s->n)
		fprintf(out, " %9" PRIu64 " %12s %12.6g %12s %10.3f", s->n, ana_fmt_value(s->min, lo, sizeof(lo)), s->mean,
		        ana_fmt_value(s->max, hi, sizeof(hi)), gt_ns_to_s(s->last_ns - s->first_ns));
	else
		fprintf(out, " %9d %12s %12s %12s %10s", 0, "-", "-", "-", "-");
	if (!s->n_wm) {
		fputc('\n', out);
		return;
	}
	char wm[64];
	if (s->wm_min == s->wm_max)
		snprintf(wm, sizeof(wm), "%g", s->wm_min);
	else
		snprintf(wm, sizeof(wm), "%g..%g", s->wm_min, s->wm_max);
	uint64_t span = s->n ? s->last_ns - s->first_ns : 0;
	if (!span) {
		fprintf(out, "  %s: no observed span\n", wm);
		return;
	}
	fprintf(out, "  %s: %.3f s (%.1f %% of the span)", wm, gt_ns_to_s(s->below_ns),
	        100.0 * (double)s->below_ns / (double)span);
	if ((double)s->wm_known_ns < 0.99 * (double)s->valued_ns)
		/* before its first record the watermark is unknown: that time counts as not below */
		fprintf(out, " (watermark known for %.1f %% of it)", 100.0 * (double)s->wm_known_ns / (double)span);
	fputc('\n', out);
}

void ana_counters_report(const ana_model *m, FILE *out)
{
	ana_counter_sum *v;
	size_t n, shown = 0;
	if (!m->counters.n)
		return;
	if (ana_counters_summarize(m, &v, &n) < 0) {
		fprintf(out, "\nCounters: (out of memory)\n");
		return;
	}
	fprintf(out, "\nCounters (the program's own, docs/COUNTERS.md; each value holds until the next; mean "
	        "weighted by time over the span from the first to the last sample):\n");
	fprintf(out, "  %7s  %-32s %9s %12s %12s %12s %10s  %s\n", "pid", "counter", "samples", "min", "mean", "max",
	        "span s", "watermark: time at or below it");
	/* counters with a watermark first (what a watermark asks is the report's question), then the
	 * rest, each in (pid, name) order, at most COUNTER_ROWS lines */
	for (size_t i = 0; i < n; i++)
		if (v[i].n_wm && shown++ < COUNTER_ROWS)
			print_counter(out, &v[i]);
	for (size_t i = 0; i < n; i++)
		if (!v[i].n_wm && shown++ < COUNTER_ROWS)
			print_counter(out, &v[i]);
	if (shown > COUNTER_ROWS)
		fprintf(out, "  (%zu more counters: the Chrome export and the timeline have them all)\n", shown - COUNTER_ROWS);
	free(v);
}
