/* ticker.c — absolute tick schedules with lateness percentiles and lag windows. */
#include "ticker.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_util.h"
#include "rec_err.h"

#define INTERVAL_NS GT_NS_PER_SEC

struct rec_ticker {
	uint32_t source;
	uint64_t period_ns;
	uint64_t start_ns;
	gtt_writer *w;
	uint64_t next;          /* index of the oldest tick not yet taken */
	uint64_t n_done;        /* ticks taken */
	/* every lateness, in tick order, saturated at UINT32_MAX ns (4.29 s); the max is exact */
	uint32_t *late;
	size_t n_late, cap_late;
	uint64_t late_max_ns, last_late_ns;
	/* the current 1 s interval: [iv_start_ns, +INTERVAL_NS), its first entry in late[] */
	uint64_t iv_start_ns;
	size_t iv_first;
	uint64_t iv_max_ns;
	/* the open lag window, when lag_open */
	int lag_open;
	uint64_t lag_start_ns, lag_end_ns, lag_max_ns;
	uint64_t lag_skipped;
	/* paused: ticks due since paused_at are not intended; excluded counts them for the
	 * current interval and for the whole recording */
	int paused;
	uint64_t paused_at, iv_excluded, excluded;
	int gated;              /* obeys the capture gate (rec_ticker_gate_close) */
	int finished;
	int rc;                 /* first write error */
};

rec_ticker *rec_ticker_create(uint32_t source, uint64_t period_ns, uint64_t start_ns, gtt_writer *w)
{
	rec_ticker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->source = source;
	t->period_ns = period_ns ? period_ns : 1;
	t->start_ns = start_ns ? start_ns : gtt_now_ns();
	t->w = w;
	t->iv_start_ns = t->start_ns;
	t->gated = 1;
	return t;
}

/* ---- the capture gate ---- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_closed;

void rec_ticker_gate_close(void)
{
	pthread_mutex_lock(&gate_lock);
	__atomic_store_n(&gate_closed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gate_lock);
}

void rec_ticker_gate_open(void)
{
	pthread_mutex_lock(&gate_lock);
	__atomic_store_n(&gate_closed, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_lock);
}

void rec_ticker_set_gated(rec_ticker *t, int gated)
{
	if (t)
		t->gated = gated;
}

static int gate_shut_for(const rec_ticker *t)
{
	return t->gated && __atomic_load_n(&gate_closed, __ATOMIC_ACQUIRE);
}

/* A gated loop waits here while the gate is closed, its schedule paused (the ticks due
 * meanwhile are not intended), and takes the schedule up again at the next tick due. */
static void gate_pass(rec_ticker *t)
{
	if (!gate_shut_for(t))
		return;
	pthread_mutex_lock(&gate_lock);
	if (!gate_closed) {
		pthread_mutex_unlock(&gate_lock);
		return;
	}
	rec_ticker_pause(t, gtt_now_ns());
	while (gate_closed)
		pthread_cond_wait(&gate_cv, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	rec_ticker_resume(t, gtt_now_ns());
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Exact nearest-rank percentiles of v[0..n) (sorted in place). */
static void percentiles(uint32_t *v, size_t n, uint64_t *p50, uint64_t *p99)
{
	*p50 = *p99 = 0;
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_u32);
	*p50 = v[(n * 50 + 99) / 100 - 1];
	*p99 = v[(n * 99 + 99) / 100 - 1];
}

/* Ticks due in [a, b): indices k with start + k*period in the range. */
static uint64_t due_between(const rec_ticker *t, uint64_t a, uint64_t b)
{
	uint64_t ka, kb;

	if (b <= t->start_ns || b <= a)
		return 0;
	if (a < t->start_ns)
		a = t->start_ns;
	ka = (a - t->start_ns + t->period_ns - 1) / t->period_ns;
	kb = (b - t->start_ns + t->period_ns - 1) / t->period_ns;
	return kb - ka;
}

static void put(rec_ticker *t, const gtt_record *rec)
{
	int rc;

	if (!t->w)
		return;
	rc = gtt_write(t->w, rec);
	if (rc < 0 && t->rc == 0)
		t->rc = rec_err_from_gtt(rc);
}

/* Write the TICKS record of the current interval, ending at end_ns, and start the next. */
static void close_interval(rec_ticker *t, uint64_t end_ns)
{
	gtt_record rec;
	size_t n = t->n_late - t->iv_first;
	uint32_t *copy = NULL;

	memset(&rec, 0, sizeof(rec));
	rec.tag = GTT_REC_TICKS;
	rec.u.ticks.start_ns = t->iv_start_ns;
	rec.u.ticks.end_ns = end_ns;
	rec.u.ticks.source = t->source;
	rec.u.ticks.period_ns = t->period_ns;
	rec.u.ticks.intended = due_between(t, t->iv_start_ns, end_ns);
	rec.u.ticks.intended -= t->iv_excluded < rec.u.ticks.intended ? t->iv_excluded : rec.u.ticks.intended;
	rec.u.ticks.done = n;
	if (n > 0 && (copy = malloc(n * sizeof(*copy))) != NULL) {
		memcpy(copy, t->late + t->iv_first, n * sizeof(*copy));
		percentiles(copy, n, &rec.u.ticks.late_p50_ns, &rec.u.ticks.late_p99_ns);
		free(copy);
	}
	rec.u.ticks.late_max_ns = t->iv_max_ns;
	put(t, &rec);
	t->iv_start_ns = end_ns;
	t->iv_first = t->n_late;
	t->iv_max_ns = 0;
	t->iv_excluded = 0;
}

/* While paused: count the ticks due from the pause (or the interval's start) to end_ns as not
 * intended in the current interval. */
static void exclude_until(rec_ticker *t, uint64_t end_ns)
{
	uint64_t from = t->paused_at > t->iv_start_ns ? t->paused_at : t->iv_start_ns;
	uint64_t k = due_between(t, from, end_ns);

	t->iv_excluded += k;
	t->excluded += k;
	t->paused_at = end_ns;
}

static void close_lag(rec_ticker *t)
{
	gtt_health h = { .time_ns = t->lag_start_ns, .end_ns = t->lag_end_ns, .source = t->source,
	                 .kind = GTT_HEALTH_LAG_WINDOW, .count = t->lag_skipped,
	                 .value = { t->lag_max_ns, t->period_ns } };
	int rc;

	if (!t->lag_open)
		return;
	t->lag_open = 0;
	if (!t->w)
		return;
	rc = gtt_write_health(t->w, &h);
	if (rc < 0 && t->rc == 0)
		t->rc = rec_err_from_gtt(rc);
}

void rec_ticker_tick(rec_ticker *t, uint64_t now_ns)
{
	uint64_t due = t->start_ns + t->next * t->period_ns;
	uint64_t late = now_ns > due ? now_ns - due : 0;
	uint64_t last_due_idx, skipped = 0;

	if (t->finished)
		return;
	/* intervals end by intended time: the tick belongs to the interval of its due time */
	while (due >= t->iv_start_ns + INTERVAL_NS)
		close_interval(t, t->iv_start_ns + INTERVAL_NS);
	/* out of memory: the tick still counts, its lateness is not kept for the percentiles */
	if (GT_GROW(t->late, t->cap_late, t->n_late + 1) == 0)
		t->late[t->n_late++] = late > UINT32_MAX ? UINT32_MAX : (uint32_t)late;
	if (late > t->iv_max_ns)
		t->iv_max_ns = late;
	if (late > t->late_max_ns)
		__atomic_store_n(&t->late_max_ns, late, __ATOMIC_RELAXED);
	__atomic_store_n(&t->last_late_ns, late, __ATOMIC_RELAXED);
	__atomic_store_n(&t->n_done, t->n_done + 1, __ATOMIC_RELAXED);

	/* skip every tick that fell due while we were behind; the next one is in the future */
	last_due_idx = now_ns >= t->start_ns ? (now_ns - t->start_ns) / t->period_ns : 0;
	if (last_due_idx > t->next)
		skipped = last_due_idx - t->next;
	t->next += 1 + skipped;

	if (late > t->period_ns) {
		if (t->lag_open && due <= t->lag_end_ns + t->period_ns) {
			t->lag_end_ns = now_ns;
			if (late > t->lag_max_ns)
				t->lag_max_ns = late;
			t->lag_skipped += skipped;
		} else {
			close_lag(t);
			t->lag_open = 1;
			t->lag_start_ns = due;
			t->lag_end_ns = now_ns;
			t->lag_max_ns = late;
			t->lag_skipped = skipped;
		}
	} else {
		close_lag(t);
	}
}

uint64_t rec_ticker_wait(rec_ticker *t)
{
	uint64_t now;

	for (;;) {
		gate_pass(t);
		uint64_t due = t->start_ns + t->next * t->period_ns;
		now = gtt_now_ns();
		while (now < due) {
			struct timespec ts = { (time_t)(due / GT_NS_PER_SEC), (long)(due % GT_NS_PER_SEC) };
			int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			now = gtt_now_ns();
			if (rc != 0 && rc != EINTR)
				break;
		}
		if (!gate_shut_for(t))
			break; /* else the gate closed during the sleep: this tick is not taken */
	}
	rec_ticker_tick(t, now);
	return now;
}

void rec_ticker_pause(rec_ticker *t, uint64_t now_ns)
{
	if (t->finished || t->paused)
		return;
	close_lag(t);
	t->paused = 1;
	t->paused_at = now_ns;
}

void rec_ticker_resume(rec_ticker *t, uint64_t now_ns)
{
	if (t->finished || !t->paused)
		return;
	while (now_ns >= t->iv_start_ns + INTERVAL_NS) {
		exclude_until(t, t->iv_start_ns + INTERVAL_NS);
		close_interval(t, t->iv_start_ns + INTERVAL_NS);
	}
	exclude_until(t, now_ns);
	t->paused = 0;
	/* the first tick due at or after now */
	if (now_ns > t->start_ns) {
		uint64_t k = (now_ns - t->start_ns + t->period_ns - 1) / t->period_ns;
		if (k > t->next)
			t->next = k;
	}
}

uint64_t rec_ticker_done(const rec_ticker *t)
{
	return t ? __atomic_load_n(&t->n_done, __ATOMIC_RELAXED) : 0;
}

uint64_t rec_ticker_late_max_ns(const rec_ticker *t)
{
	return t ? __atomic_load_n(&t->late_max_ns, __ATOMIC_RELAXED) : 0;
}

uint64_t rec_ticker_last_late_ns(const rec_ticker *t)
{
	return t ? __atomic_load_n(&t->last_late_ns, __ATOMIC_RELAXED) : 0;
}

int rec_ticker_finish(rec_ticker *t, uint64_t end_ns)
{
	gtt_record rec;
	uint64_t p50 = 0, p99 = 0;

	if (!t)
		return 0;
	if (t->finished)
		return t->rc;
	if (end_ns == 0)
		end_ns = gtt_now_ns();
	if (end_ns < t->start_ns)
		end_ns = t->start_ns;
	rec_ticker_resume(t, end_ns); /* the ticks of a pause up to the end are not intended */
	while (end_ns > t->iv_start_ns + INTERVAL_NS)
		close_interval(t, t->iv_start_ns + INTERVAL_NS);
	if (end_ns > t->iv_start_ns || t->n_late > t->iv_first)
		close_interval(t, end_ns);
	close_lag(t);
	percentiles(t->late, t->n_late, &p50, &p99);
	memset(&rec, 0, sizeof(rec));
	rec.tag = GTT_REC_TICKS;
	rec.u.ticks.start_ns = t->start_ns;
	rec.u.ticks.end_ns = end_ns;
	rec.u.ticks.source = t->source;
	rec.u.ticks.flags = GTT_TICKS_WHOLE;
	rec.u.ticks.period_ns = t->period_ns;
	rec.u.ticks.intended = due_between(t, t->start_ns, end_ns);
	rec.u.ticks.intended -= t->excluded < rec.u.ticks.intended ? t->excluded : rec.u.ticks.intended;
	rec.u.ticks.done = t->n_done;
	rec.u.ticks.late_p50_ns = p50;
	rec.u.ticks.late_p99_ns = p99;
	rec.u.ticks.late_max_ns = t->late_max_ns;
	put(t, &rec);
	t->finished = 1;
	return t->rc;
}

void rec_ticker_destroy(rec_ticker *t)
{
	if (!t)
		return;
	rec_ticker_finish(t, 0);
	free(t->late);
	free(t);
}
