/* capture.c — capture control: whether sampling should be on (delay, SIGUSR1/SIGUSR2, NVTX
 * ranges seen through the CUDA agent's capture records), when --max-size ends the recording,
 * capture records, and the history of captured intervals. */
#include "capture.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "rec_err.h"

/* Signals arrive in a handler: counters and the last one, read by the drain loop. */
static volatile sig_atomic_t g_usr1, g_usr2, g_last;

struct rec_capture {
	rec_capture_opts o;
	char *nvtx_name;
	uint64_t start_ns, delay_end_ns;
	int delay_over;
	int on;                  /* sampling is on */
	uint32_t source;         /* what switched it last */
	sig_atomic_t seen_usr1, seen_usr2;
	int want_signal;         /* signal mode: the state the signals asked for */
	int nvtx_open;           /* agent's ranges open (start - stop), updated by observe */
	int ended;               /* --max-size reached (said once) */
	rec_capture_iv *iv;      /* history */
	size_t n_iv, cap_iv;
};

int rec_capture_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	double v, mult = 1;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I') && toupper((unsigned char)end[1]) == 'B')
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end || v * mult >= 1.8e19)
		return -EINVAL;
	*bytes = (uint64_t)llround(v * mult);
	return *bytes ? 0 : -EINVAL;
}

rec_capture *rec_capture_create(const rec_capture_opts *o, uint64_t start_ns)
{
	rec_capture *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *o;
	if (o->range == REC_CAP_NVTX && !(c->nvtx_name = strdup(o->nvtx_name ? o->nvtx_name : ""))) {
		free(c);
		return NULL;
	}
	c->o.nvtx_name = c->nvtx_name;
	c->start_ns = start_ns;
	c->delay_end_ns = start_ns + (o->delay_s > 0 ? gt_s_to_ns(o->delay_s) : 0);
	c->delay_over = !(o->delay_s > 0);
	c->seen_usr1 = g_usr1;
	c->seen_usr2 = g_usr2;
	/* with nothing that switches it, sampling is on from the start */
	c->on = c->delay_over && o->range == REC_CAP_ALWAYS;
	c->source = o->range == REC_CAP_SIGNAL ? GTT_CAPTURE_SIGNAL
	          : o->range == REC_CAP_NVTX ? GTT_CAPTURE_NVTX
	          : !c->delay_over ? GTT_CAPTURE_DELAY
	          : o->ring_s > 0 ? GTT_CAPTURE_RING : GTT_CAPTURE_MAX_SIZE;
	if (c->on) {
		if (GT_GROW(c->iv, c->cap_iv, 1) < 0) {
			rec_capture_destroy(c);
			return NULL;
		}
		c->iv[c->n_iv++] = (rec_capture_iv){ start_ns, 0, c->source, 0 };
	}
	return c;
}

void rec_capture_destroy(rec_capture *c)
{
	if (!c)
		return;
	free(c->nvtx_name);
	free(c->iv);
	free(c);
}

int rec_capture_switchable(const rec_capture *c)
{
	return c && (c->o.delay_s > 0 || c->o.range != REC_CAP_ALWAYS);
}

static void fmt_secs(double s, char *buf, size_t len)
{
	snprintf(buf, len, "%g s", s);
}

void rec_capture_rule(const rec_capture *c, char *buf, size_t len)
{
	size_t n = 0;
	char t[32];

	buf[0] = 0;
	if (!c)
		return;
#define ADD(...) do { if (n < len) n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); } while (0)
	if (c->o.range == REC_CAP_SIGNAL)
		ADD("SIGUSR1 starts sampling, SIGUSR2 stops it");
	else if (c->o.range == REC_CAP_NVTX)
		ADD("sampling inside NVTX ranges named \"%s\"", c->nvtx_name);
	if (c->o.delay_s > 0) {
		fmt_secs(c->o.delay_s, t, sizeof(t));
		if (c->o.range == REC_CAP_ALWAYS)
			ADD("sampling starts after %s", t);
		else
			ADD("; after a delay of %s", t);
	}
	if (c->o.ring_s > 0) {
		fmt_secs(c->o.ring_s, t, sizeof(t));
		ADD("%sring: the last %s kept", n ? "; " : "", t);
	}
	if (c->o.max_size) {
		uint64_t b = c->o.max_size;
		const char *unit = "bytes";
		if (b % (1ull << 30) == 0) {
			b >>= 30;
			unit = "GiB";
		} else if (b % (1ull << 20) == 0) {
			b >>= 20;
			unit = "MiB";
		} else if (b % 1024 == 0) {
			b >>= 10;
			unit = "KiB";
		}
		ADD("%sthe recording stops at %llu %s (--max-size)", n ? "; " : "", (unsigned long long)b, unit);
	}
#undef ADD
}

int rec_capture_wants_signals(const rec_capture *c)
{
	return c && (c->o.range == REC_CAP_SIGNAL || c->o.ring_s > 0);
}

void rec_capture_signal(int sig)
{
	if (sig == SIGUSR1)
		g_usr1++;
	else if (sig == SIGUSR2)
		g_usr2++;
	g_last = sig;
}

void rec_capture_observe(rec_capture *c, const gtt_record *rec)
{
	const gtt_capture *cr;

	if (rec->tag != GTT_REC_CAPTURE || !c || c->o.range != REC_CAP_NVTX)
		return;
	cr = &rec->u.capture;
	/* pid 0 is gt-record's own switch; the agent's records are the target's ranges */
	if (cr->pid == 0 || cr->source != GTT_CAPTURE_NVTX || strcmp(cr->name, c->nvtx_name) != 0)
		return;
	if (cr->event == GTT_CAPTURE_START)
		__atomic_add_fetch(&c->nvtx_open, 1, __ATOMIC_RELAXED);
	else if (cr->event == GTT_CAPTURE_STOP && __atomic_load_n(&c->nvtx_open, __ATOMIC_RELAXED) > 0)
		__atomic_sub_fetch(&c->nvtx_open, 1, __ATOMIC_RELAXED);
}

void rec_capture_poll(rec_capture *c, uint64_t now, uint64_t trace_bytes, rec_capture_action *a)
{
	int want;

	memset(a, 0, sizeof(*a));
	if (!c)
		return;
	if (c->o.max_size && !c->ended && trace_bytes >= c->o.max_size) {
		c->ended = 1;
		a->end = 1;
		a->stop = c->on;
		a->source = GTT_CAPTURE_MAX_SIZE;
		return;
	}
	if (c->o.ring_s > 0 && g_usr2 != c->seen_usr2) {
		c->seen_usr2 = g_usr2;
		a->dump = 1;
	}
	if (c->o.range == REC_CAP_SIGNAL) {
		sig_atomic_t u1 = g_usr1, u2 = g_usr2;
		if (u1 != c->seen_usr1 && u2 != c->seen_usr2)
			c->want_signal = g_last == SIGUSR1; /* both since the last poll: the later wins */
		else if (u1 != c->seen_usr1)
			c->want_signal = 1;
		else if (u2 != c->seen_usr2)
			c->want_signal = 0;
		c->seen_usr1 = u1;
		c->seen_usr2 = u2;
	}
	if (!c->delay_over && now >= c->delay_end_ns)
		c->delay_over = 1;
	if (!c->delay_over)
		return;
	switch (c->o.range) {
	case REC_CAP_SIGNAL: want = c->want_signal; break;
	case REC_CAP_NVTX: want = __atomic_load_n(&c->nvtx_open, __ATOMIC_RELAXED) > 0; break;
	default: want = 1; break;
	}
	if (want == c->on)
		return;
	a->start = want;
	a->stop = !want;
	a->source = c->o.range == REC_CAP_SIGNAL ? GTT_CAPTURE_SIGNAL
	          : c->o.range == REC_CAP_NVTX ? GTT_CAPTURE_NVTX : GTT_CAPTURE_DELAY;
}

static int write_record(rec_capture *c, gtt_writer *w, uint64_t now, uint32_t event, uint32_t source)
{
	gtt_record r;

	if (!w)
		return 0;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_CAPTURE;
	r.u.capture.time_ns = now;
	r.u.capture.event = event;
	r.u.capture.source = source;
	r.u.capture.name = source == GTT_CAPTURE_NVTX ? c->nvtx_name : "";
	return rec_err_from_gtt(gtt_write(w, &r));
}

int rec_capture_switched(rec_capture *c, gtt_writer *w, uint64_t now, int on, uint32_t source)
{
	if (!c || on == c->on)
		return 0;
	if (on) {
		if (GT_GROW(c->iv, c->cap_iv, c->n_iv + 1) < 0)
			return -ENOMEM;
		c->iv[c->n_iv++] = (rec_capture_iv){ now, 0, source, 0 };
	} else if (c->n_iv && !c->iv[c->n_iv - 1].stop_ns) {
		c->iv[c->n_iv - 1].stop_ns = now > c->iv[c->n_iv - 1].start_ns ? now : c->iv[c->n_iv - 1].start_ns;
		c->iv[c->n_iv - 1].stop_source = source;
	}
	c->on = on;
	c->source = source;
	return write_record(c, w, now, on ? GTT_CAPTURE_START : GTT_CAPTURE_STOP, source);
}

int rec_capture_begin(rec_capture *c, gtt_writer *w, uint64_t now)
{
	if (!c || c->on)
		return 0;
	return write_record(c, w, now, GTT_CAPTURE_STOP, c->source);
}

int rec_capture_is_on(const rec_capture *c)
{
	return c ? c->on : 1;
}

uint32_t rec_capture_source(const rec_capture *c)
{
	return c ? c->source : 0;
}

uint64_t rec_capture_captured_ns(const rec_capture *c, uint64_t now, uint32_t *n_intervals)
{
	uint64_t total = 0;

	if (n_intervals)
		*n_intervals = c ? (uint32_t)c->n_iv : 0;
	for (size_t i = 0; c && i < c->n_iv; i++) {
		uint64_t end = c->iv[i].stop_ns ? c->iv[i].stop_ns : now;
		if (end > c->iv[i].start_ns)
			total += end - c->iv[i].start_ns;
	}
	return total;
}

const rec_capture_iv *rec_capture_history(const rec_capture *c, size_t *n)
{
	*n = c ? c->n_iv : 0;
	return c ? c->iv : NULL;
}

const rec_capture_opts *rec_capture_options(const rec_capture *c)
{
	return &c->o;
}
