/* test_swgate.c — the switch gate's decisions (record/swgate.c): open while the rate is under the
 * limit for the busy CPUs, closed over it but for a window every period, open for good when a
 * window finds the rate under half the limit; what it reports. Times and counts are made up:
 * the module only judges them. */
#include <string.h>

#include "gtt.h"
#include "swgate.h"
#include "testhelp.h"

#define MS 1000000ull
#define HZ 100.0

/* The test's target: switches and samples grow at the given rates per second. */
typedef struct feed { uint64_t t, sw, smp; double smp_f; uint64_t lag; } feed;

/* Step the gate every 25 ms for dur_ms with sw_rate switches/s and busy CPUs; the moves seen. */
static int run(rec_swgate *g, feed *f, uint64_t dur_ms, double sw_rate, double busy, rec_swgate_move *moves, int cap)
{
	int n = 0;
	for (uint64_t k = 0; k < dur_ms / 25; k++) {
		f->t += 25 * MS;
		f->sw += (uint64_t)(sw_rate * 0.025);
		f->smp_f += busy * HZ * 0.025;
		f->smp = (uint64_t)(f->smp_f + 1e-9);
		rec_swgate_move mv;
		rec_swgate_counts c = { f->sw, f->smp, f->t - f->lag };
		if (rec_swgate_step(g, f->t, &c, &mv)) {
			if (n < cap)
				moves[n] = mv;
			n++;
			moves[n < cap ? n : cap - 1].moved = (int)(f->t / MS); /* when (ms), in the next slot */
		}
	}
	return n;
}

int main(void)
{
	rec_swgate_opts o = { .limit_per_cpu = 10000, .sample_hz = HZ };
	feed f = { 1000 * MS, 0, 0, 0, 5 * MS };
	rec_swgate *g = rec_swgate_create(&o, f.t);
	rec_swgate_move mv[8];
	rec_swgate_stats st;

	th_check(g != NULL, "a gate");
	if (!g)
		return th_report();
	int n = run(g, &f, 2000, 8000, 1, mv, 8);
	th_check(n == 0, "8 000 switches/s on one busy CPU: stays open (%d moves)", n);
	n = run(g, &f, 2000, 15000, 2, mv, 8);
	th_check(n == 0, "15 000 switches/s on two busy CPUs: stays open, the limit is per busy CPU (%d moves)", n);
	memset(mv, 0, sizeof(mv));
	n = run(g, &f, 300, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_CLOSED && mv[0].reason == GTT_GATE_OVER,
	         "40 000 switches/s on one CPU: closed for being over (%d moves, event %u reason %u)", n, mv[0].event,
	         mv[0].reason);
	th_check(mv[0].rate_per_s >= 39000 && mv[0].rate_per_s <= 41000 && mv[0].limit_per_s == 10000,
	         "the close gives the rate judged (%llu) and the limit for one CPU (%llu)",
	         (unsigned long long)mv[0].rate_per_s, (unsigned long long)mv[0].limit_per_s);
	uint64_t closed_at = f.t;
	memset(mv, 0, sizeof(mv));
	n = run(g, &f, 3700, 40000, 1, mv, 8);
	th_check(n == 0, "closed: no window before period - window (3.8 s) has passed (%d moves)", n);
	n = run(g, &f, 150, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_OPEN && mv[0].reason == GTT_GATE_WINDOW,
	         "then a window opens (event %u reason %u)", mv[0].event, mv[0].reason);
	th_check(f.t - closed_at >= 3800 * MS && f.t - closed_at <= 3850 * MS, "3.8 s after the close (%llu ms)",
	         (unsigned long long)((f.t - closed_at) / MS));
	memset(mv, 0, sizeof(mv));
	n = run(g, &f, 250, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_CLOSED && mv[0].reason == GTT_GATE_WINDOW && mv[0].rate_per_s > 30000,
	         "a window still over the limit closes after 0.2 s (event %u reason %u rate %llu)", mv[0].event,
	         mv[0].reason, (unsigned long long)mv[0].rate_per_s);
	/* 6 000/s: under the limit but over half of it: the windows keep it closed (no flapping) */
	memset(mv, 0, sizeof(mv));
	n = run(g, &f, 8000, 6000, 1, mv, 8);
	th_check(n == 4 && mv[0].event == GTT_GATE_OPEN && mv[1].event == GTT_GATE_CLOSED && mv[1].reason == GTT_GATE_WINDOW,
	         "6 000/s, over half the limit: windows open and close again (%d moves)", n);
	memset(mv, 0, sizeof(mv));
	n = run(g, &f, 4100, 3000, 1, mv, 8);
	th_check(n == 2 && mv[0].event == GTT_GATE_OPEN && mv[0].reason == GTT_GATE_WINDOW && mv[1].event == GTT_GATE_OPEN &&
	         mv[1].reason == GTT_GATE_UNDER, "3 000/s: the next window finds it under half the limit: open for good "
	         "(%d moves, %u/%u then %u/%u)", n, mv[0].event, mv[0].reason, mv[1].event, mv[1].reason);
	n = run(g, &f, 2000, 3000, 1, mv, 8);
	th_check(n == 0, "and stays open (%d moves)", n);
	/* a starved drain: the counts stop at the window's opening; the window waits for them */
	n = run(g, &f, 300, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_CLOSED && mv[0].reason == GTT_GATE_OVER, "40 000/s again: closed (%d)", n);
	for (n = 0; n < 400 && run(g, &f, 25, 40000, 1, mv, 8) == 0; n++)
		;
	th_check(mv[0].event == GTT_GATE_OPEN && mv[0].reason == GTT_GATE_WINDOW, "a window opens (after %d steps)", n);
	uint64_t opened = f.t;
	f.lag = 0;
	int waited = 1;
	for (int k = 0; k < 24; k++) { /* 0.6 s with nothing counted after the opening */
		f.t += 25 * MS;
		rec_swgate_counts c = { f.sw, f.smp, opened };
		waited &= rec_swgate_step(g, f.t, &c, &mv[0]) == 0;
	}
	th_check(waited, "nothing counted since the opening: the window stays open (no rate of 0 judged)");
	f.sw += 40000 * 6 / 10; /* the drain catches up: 0.6 s of switches, counted up to now */
	f.smp_f += HZ * 0.6;
	f.smp = (uint64_t)(f.smp_f + 1e-9);
	rec_swgate_counts c = { f.sw, f.smp, f.t };
	th_check(rec_swgate_step(g, f.t + 25 * MS, &c, &mv[0]) == 1 && mv[0].event == GTT_GATE_CLOSED &&
	         mv[0].rate_per_s > 30000 && mv[0].rate_per_s < 50000,
	         "then it is judged over the counted time: closed, rate %llu", (unsigned long long)mv[0].rate_per_s);
	f.t += 25 * MS;
	f.lag = 5 * MS;
	n = run(g, &f, 4100, 3000, 1, mv, 8);
	th_check(n == 2 && mv[1].reason == GTT_GATE_UNDER, "and opens for good again at 3 000/s (%d)", n);
	/* a slow opening: the window counts from when its events were open, and lasts its length from then */
	n = run(g, &f, 300, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_CLOSED, "40 000/s: closed again (%d)", n);
	for (n = 0; n < 400 && run(g, &f, 25, 40000, 1, mv, 8) == 0; n++)
		;
	th_check(mv[0].event == GTT_GATE_OPEN && mv[0].reason == GTT_GATE_WINDOW, "a window asked for (after %d steps)", n);
	uint64_t asked = f.t;
	f.t += 500 * MS; /* the events took 0.5 s to open: no switch was recorded meanwhile */
	f.smp_f += HZ * 0.5;
	f.smp = (uint64_t)(f.smp_f + 1e-9);
	rec_swgate_counts oc = { f.sw, f.smp, f.t - f.lag };
	rec_swgate_opened(g, f.t, &oc);
	n = run(g, &f, 150, 40000, 1, mv, 8);
	th_check(n == 0, "no judgement before the window's length from its opening (%d)", n);
	n = run(g, &f, 150, 40000, 1, mv, 8);
	th_check(n == 1 && mv[0].event == GTT_GATE_CLOSED && mv[0].reason == GTT_GATE_WINDOW && mv[0].rate_per_s > 30000,
	         "then over the limit, judged from the opening (rate %llu, %.2f s after the ask)",
	         (unsigned long long)mv[0].rate_per_s, (f.t - asked) / 1e9);
	n = run(g, &f, 4100, 3000, 1, mv, 8);
	th_check(n == 2 && mv[1].reason == GTT_GATE_UNDER, "and opens for good at 3 000/s (%d)", n);
	rec_swgate_get_stats(g, f.t, &st);
	th_check(st.open && st.closes == 3 && st.windows >= 7 && st.max_rate_per_s >= 39000,
	         "stats: open, 3 closes for being over, %llu windows, max rate %llu", (unsigned long long)st.windows,
	         (unsigned long long)st.max_rate_per_s);
	uint64_t total = f.t - 1000 * MS;
	/* open: the first 4.25 s, about 2.3 s after each of the two earlier openings for good, the
	 * windows (one of 0.625 s, one of 0.8 s with its slow opening), and from the last on */
	th_check(st.open_ns > 9000 * MS && st.open_ns < 10500 * MS, "open %.1f s of %.1f s (about 9.7 s)", st.open_ns / 1e9,
	         total / 1e9);
	rec_swgate_destroy(g);
	rec_swgate_destroy(NULL);
	return th_report();
}
