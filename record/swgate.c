/* swgate.c — the switch gate's decisions: judge the tree's switch rate while switches are
 * recorded, close above the limit, open short windows while closed, open for good when a window
 * finds the rate well under the limit. */
#include <stdlib.h>

#include "gt_util.h"
#include "gtt.h"
#include "swgate.h"

typedef enum { ST_OPEN, ST_CLOSED, ST_WINDOW } state;

struct rec_swgate {
	rec_swgate_opts o;
	state st;
	uint64_t since_ns;       /* start of the interval being judged (open, window) or of the close */
	uint64_t base_ns;        /* the counted time the rates start from */
	uint64_t sw0, smp0;      /* the counts at base_ns */
	uint64_t next_ns;        /* closed: when the next window opens; window: when it ends */
	uint64_t open_ns, open_from_ns;
	rec_swgate_stats st_;
};

rec_swgate *rec_swgate_create(const rec_swgate_opts *o, uint64_t now_ns)
{
	rec_swgate *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->o = *o;
	if (!g->o.judge_ns)
		g->o.judge_ns = REC_SWGATE_JUDGE_NS;
	if (!g->o.window_ns)
		g->o.window_ns = REC_SWGATE_WINDOW_NS;
	if (!g->o.period_ns || g->o.period_ns <= g->o.window_ns)
		g->o.period_ns = g->o.window_ns * 20 > REC_SWGATE_PERIOD_NS ? g->o.window_ns * 20 : REC_SWGATE_PERIOD_NS;
	if (!(g->o.sample_hz > 0))
		g->o.sample_hz = 99;
	g->st = ST_OPEN;
	g->since_ns = g->base_ns = g->open_from_ns = now_ns;
	g->st_.open = 1;
	return g;
}

void rec_swgate_destroy(rec_swgate *g)
{
	free(g);
}

/* Whether at least half of want_ns of counted time has passed since the base: enough to judge. */
static int enough(const rec_swgate *g, const rec_swgate_counts *c, uint64_t want_ns)
{
	return c->upto_ns > g->base_ns && c->upto_ns - g->base_ns >= want_ns / 2;
}

/* The rate and the limit over the counted time since the base: switches per second, and the
 * limit for the CPUs the tree kept busy (its samples over the rate: system-wide, each busy CPU's
 * clock samples at the rate; at least one CPU). */
static void judge(rec_swgate *g, const rec_swgate_counts *c, uint64_t *rate, uint64_t *limit)
{
	double secs = gt_ns_to_s(c->upto_ns - g->base_ns);
	double busy = secs > 0 ? (double)(c->n_samples - g->smp0) / (g->o.sample_hz * secs) : 1;
	if (busy < 1)
		busy = 1;
	*rate = secs > 0 ? (uint64_t)((double)(c->n_switches - g->sw0) / secs) : 0;
	*limit = (uint64_t)((double)g->o.limit_per_cpu * busy);
	if (*rate > g->st_.max_rate_per_s)
		g->st_.max_rate_per_s = *rate;
	g->st_.last_limit_per_s = *limit;
}

/* A new interval from now_ns, its rates counted from base_ns (what is counted up to then is not
 * in it). */
static void restart(rec_swgate *g, uint64_t now_ns, uint64_t base_ns, const rec_swgate_counts *c)
{
	g->since_ns = now_ns;
	g->base_ns = base_ns;
	g->sw0 = c->n_switches;
	g->smp0 = c->n_samples;
}

static void set_open(rec_swgate *g, uint64_t now_ns, int open)
{
	if (open && !g->st_.open)
		g->open_from_ns = now_ns;
	else if (!open && g->st_.open)
		g->open_ns += now_ns - g->open_from_ns;
	g->st_.open = open;
}

int rec_swgate_step(rec_swgate *g, uint64_t now_ns, const rec_swgate_counts *c, rec_swgate_move *mv)
{
	uint64_t rate = 0, limit = 0;

	mv->moved = 0;
	if (now_ns < g->since_ns)
		return 0;
	switch (g->st) {
	case ST_OPEN:
		if (now_ns - g->since_ns < g->o.judge_ns || !enough(g, c, g->o.judge_ns))
			return 0;
		judge(g, c, &rate, &limit);
		restart(g, now_ns, c->upto_ns, c);
		if (rate <= limit)
			return 0;
		g->st = ST_CLOSED;
		g->next_ns = now_ns + g->o.period_ns - g->o.window_ns;
		g->st_.closes++;
		set_open(g, now_ns, 0);
		*mv = (rec_swgate_move){ 1, GTT_GATE_CLOSED, GTT_GATE_OVER, rate, limit };
		return 1;
	case ST_CLOSED:
		if (now_ns < g->next_ns)
			return 0;
		/* no switch is written while closed: the window's rates count from its opening */
		g->st = ST_WINDOW;
		restart(g, now_ns, now_ns, c);
		g->next_ns = now_ns + g->o.window_ns;
		g->st_.windows++;
		set_open(g, now_ns, 1);
		*mv = (rec_swgate_move){ 1, GTT_GATE_OPEN, GTT_GATE_WINDOW, 0, g->st_.last_limit_per_s };
		return 1;
	case ST_WINDOW:
		if (now_ns < g->next_ns || !enough(g, c, g->o.window_ns))
			return 0;
		judge(g, c, &rate, &limit);
		restart(g, now_ns, c->upto_ns, c);
		if (rate * 2 <= limit) {
			/* well under the limit (half of it: a rate near the limit does not flap): open for good */
			g->st = ST_OPEN;
			*mv = (rec_swgate_move){ 1, GTT_GATE_OPEN, GTT_GATE_UNDER, rate, limit };
			return 1;
		}
		g->st = ST_CLOSED;
		g->next_ns = now_ns + g->o.period_ns - g->o.window_ns;
		set_open(g, now_ns, 0);
		*mv = (rec_swgate_move){ 1, GTT_GATE_CLOSED, GTT_GATE_WINDOW, rate, limit };
		return 1;
	}
	return 0;
}

void rec_swgate_opened(rec_swgate *g, uint64_t open_ns, const rec_swgate_counts *c)
{
	if (g->st != ST_WINDOW || open_ns < g->base_ns)
		return;
	g->base_ns = open_ns;
	g->sw0 = c->n_switches;
	g->smp0 = c->n_samples;
	if (open_ns + g->o.window_ns > g->next_ns)
		g->next_ns = open_ns + g->o.window_ns;
}

void rec_swgate_get_stats(const rec_swgate *g, uint64_t now_ns, rec_swgate_stats *st)
{
	*st = g->st_;
	st->open_ns = g->open_ns + (g->st_.open && now_ns > g->open_from_ns ? now_ns - g->open_from_ns : 0);
}
