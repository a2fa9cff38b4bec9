/* test_swcover.c — a trace whose switch gate closed (gt-record --switch-events=auto): the
 * stretches without switch records, on-CPU time from /proc where they exist (and from switches
 * where the trace or a window has them all), the gaps a timeline must not draw as off-CPU, the
 * report's and the health section's words; a trace without gate records as before. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "health.h"
#include "model.h"
#include "model_priv.h"
#include "swcover.h"
#include "testhelp.h"

#define SEC ((uint64_t)1000000000)
#define MS ((uint64_t)1000000)
#define T0 (1000 * SEC)
#define PID 10u

static void put(gtt_writer *w, const gtt_record *r)
{
	if (gtt_write(w, r) != 0)
		fprintf(stderr, "write failed: tag %u\n", r->tag);
}

static int open_at(uint64_t t, const uint64_t *closes, const uint64_t *opens, int n)
{
	int open = 1;
	for (int k = 0; k < n; k++) {
		if (t >= closes[k])
			open = 0;
		if (t >= opens[k])
			open = 1;
	}
	return open;
}

/* 10 s from T0: thread 11 on CPU the first 50 ms of every 100 ms (a sample every 10 ms of that),
 * a /proc reading every second (0.5 s of CPU per second); the gate closed at 2 s, a window [5 s,
 * 5.2 s), closed again, open for good from 8 s; switch records only where it is open. gates = 0:
 * every switch, no gate record. */
static int write_trace(const char *path, int gates)
{
	const uint64_t closes[] = { T0 + 2 * SEC, T0 + 5200 * MS }, opens[] = { T0 + 5 * SEC, T0 + 8 * SEC };
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.block_bytes = 4096;
	int err = 0, fd = open(path, O_WRONLY | O_TRUNC);
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &o, &err) : NULL;
	if (!w)
		return -1;
	char start[32];
	snprintf(start, sizeof(start), "%llu", (unsigned long long)T0);
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "start_ns", .value = start };
	put(w, &r);
	r.u.meta = (gtt_meta){ .key = "frequency_hz", .value = "100" };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "prog" };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_THREAD };
	r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = 11, .event = GTT_THREAD_START, .name = "eleven" };
	put(w, &r);
	if (gates) {
		r = (gtt_record){ .tag = GTT_REC_SWITCH_GATE };
		r.u.gate = (gtt_switch_gate){ T0, GTT_GATE_OPEN, GTT_GATE_START, 0, 0, 0 };
		put(w, &r);
		r.u.gate = (gtt_switch_gate){ closes[0], GTT_GATE_CLOSED, GTT_GATE_OVER, 120000, 10000, 0 };
		put(w, &r);
		r.u.gate = (gtt_switch_gate){ opens[0], GTT_GATE_OPEN, GTT_GATE_WINDOW, 0, 10000, 0 };
		put(w, &r);
		r.u.gate = (gtt_switch_gate){ closes[1], GTT_GATE_CLOSED, GTT_GATE_WINDOW, 130000, 20000, 0 };
		put(w, &r);
		r.u.gate = (gtt_switch_gate){ opens[1], GTT_GATE_OPEN, GTT_GATE_WINDOW, 0, 20000, 0 };
		put(w, &r);
	}
	uint64_t ips[2] = { 0x401000, 0x402000 };
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t t = T0 + i * 10 * MS;
		if (i % 10 < 5) {
			r = (gtt_record){ .tag = GTT_REC_SAMPLE };
			r.u.sample = (gtt_sample){ .time_ns = t + MS, .pid = PID, .tid = 11, .period_ns = 10 * MS, .n_user = 2,
			                           .ips = ips };
			put(w, &r);
		}
		if ((i % 10 == 0 || i % 10 == 5) && (!gates || open_at(t, closes, opens, 2))) {
			r = (gtt_record){ .tag = GTT_REC_SWITCH };
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = PID, .tid = 11, .kind = i % 10 ? GTT_SWITCH_OUT : GTT_SWITCH_IN };
			put(w, &r);
		}
		if (i % 100 == 0) {
			r = (gtt_record){ .tag = GTT_REC_THREAD_CPU };
			r.u.thread_cpu = (gtt_thread_cpu){ .time_ns = t, .pid = PID, .tid = 11, .utime_ns = i / 100 * SEC / 2,
			                                   .nvcsw = i / 100 * 20000 };
			put(w, &r);
		}
	}
	r = (gtt_record){ .tag = GTT_REC_THREAD_CPU };
	r.u.thread_cpu = (gtt_thread_cpu){ .time_ns = T0 + 10 * SEC, .pid = PID, .tid = 11, .utime_ns = 5 * SEC,
	                                   .nvcsw = 200000 };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_END };
	r.u.end = (gtt_end){ .time_ns = T0 + 10 * SEC, .reason = GTT_END_DURATION, .n_samples = 500 };
	put(w, &r);
	return gtt_writer_close(w);
}

/* A hostile trace: gate records of 300 different trees, each closing at 1 s. */
static int write_many(const char *path)
{
	int err = 0, fd = open(path, O_WRONLY | O_TRUNC);
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, NULL, &err) : NULL;
	if (!w)
		return -1;
	gtt_record r = { .tag = GTT_REC_THREAD };
	r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = 11, .event = GTT_THREAD_START, .name = "eleven" };
	put(w, &r);
	for (uint32_t k = 0; k < 300; k++) {
		r = (gtt_record){ .tag = GTT_REC_SWITCH_GATE };
		r.u.gate = (gtt_switch_gate){ T0 + SEC, GTT_GATE_CLOSED, GTT_GATE_OVER, 50000, 10000, 100 + k };
		put(w, &r);
	}
	r = (gtt_record){ .tag = GTT_REC_SWITCH };
	r.u.sw = (gtt_switch){ .time_ns = T0 + 2 * SEC, .pid = PID, .tid = 11, .kind = GTT_SWITCH_IN };
	put(w, &r);
	return gtt_writer_close(w);
}

/* A merge of two recordings (meta merge.traces 2): PID's gate closed over [1 s, 9 s); process 20
 * (another recording, --switch-events=on: no gate record) has every switch, thread 21 on CPU the
 * first half of every 100 ms. */
static int write_merged(const char *path)
{
	int err = 0, fd = open(path, O_WRONLY | O_TRUNC);
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, NULL, &err) : NULL;
	if (!w)
		return -1;
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "merge.traces", .value = "2" };
	put(w, &r);
	r.u.meta = (gtt_meta){ .key = "frequency_hz", .value = "100" };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "gated" };
	put(w, &r);
	r.u.process = (gtt_process){ .time_ns = T0, .pid = 20, .ppid = 1, .event = GTT_PROC_START, .comm = "every" };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_THREAD };
	r.u.thread = (gtt_thread){ .time_ns = T0, .pid = PID, .tid = 11, .event = GTT_THREAD_START, .name = "eleven" };
	put(w, &r);
	r.u.thread = (gtt_thread){ .time_ns = T0, .pid = 20, .tid = 21, .event = GTT_THREAD_START, .name = "twentyone" };
	put(w, &r);
	r = (gtt_record){ .tag = GTT_REC_SWITCH_GATE };
	r.u.gate = (gtt_switch_gate){ T0, GTT_GATE_OPEN, GTT_GATE_START, 0, 0, PID };
	put(w, &r);
	r.u.gate = (gtt_switch_gate){ T0 + SEC, GTT_GATE_CLOSED, GTT_GATE_OVER, 120000, 10000, PID };
	put(w, &r);
	r.u.gate = (gtt_switch_gate){ T0 + 9 * SEC, GTT_GATE_OPEN, GTT_GATE_WINDOW, 0, 10000, PID };
	put(w, &r);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t t = T0 + i * 10 * MS;
		if (i % 10 == 0 || i % 10 == 5) {
			r = (gtt_record){ .tag = GTT_REC_SWITCH };
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = 20, .tid = 21, .kind = i % 10 ? GTT_SWITCH_OUT : GTT_SWITCH_IN };
			put(w, &r);
		}
	}
	r = (gtt_record){ .tag = GTT_REC_END };
	r.u.end = (gtt_end){ .time_ns = T0 + 10 * SEC, .reason = GTT_END_DURATION };
	put(w, &r);
	return gtt_writer_close(w);
}

static ana_model *load(const char *path, double from_s, double to_s, int keep_switches)
{
	char err[512] = "";
	ana_opts o;
	ana_opts_init(&o);
	o.keep_switches = keep_switches;
	if (from_s >= 0) {
		o.has_from = 1;
		o.from_ns = (uint64_t)(from_s * SEC);
	}
	if (to_s >= 0) {
		o.has_to = 1;
		o.to_ns = (uint64_t)(to_s * SEC);
	}
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	if (!m)
		fprintf(stderr, "load %s: %s\n", path, err);
	return m;
}

/* The health section of m as text, in buf. */
static void health_text(const ana_model *m, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	if (!f)
		return;
	ana_health_report(m, f, 10);
	fclose(f);
}

int main(void)
{
	char path[] = "/tmp/gt-swcover-XXXXXX", path2[] = "/tmp/gt-swcover2-XXXXXX";
	int fd = mkstemp(path), fd2 = mkstemp(path2);
	if (fd < 0 || fd2 < 0 || write_trace(path, 1) < 0 || write_trace(path2, 0) < 0) {
		th_check(0, "traces written");
		return th_report();
	}
	close(fd);
	close(fd2);
	static char text[65536];

	ana_model *m = load(path, -1, -1, 1);
	th_check(m != NULL, "the gated trace loads");
	if (m) {
		th_check(m->gates.n == 5, "5 gate records kept (%zu)", m->gates.n);
		size_t nc = 0;
		const ana_interval *cl = ana_swcover_closed(m, PID, &nc);
		th_check(m->swgroups.n == 1 && nc == 2 && cl[0].start_ns == T0 + 2 * SEC && cl[0].end_ns == T0 + 5 * SEC &&
		         cl[1].start_ns == T0 + 5200 * MS && cl[1].end_ns == T0 + 8 * SEC,
		         "closed over [2 s, 5 s) and [5.2 s, 8 s)");
		th_check(m->sw_closed_ns == 5800 * MS, "5.8 s of the 10 s without switches (%.3f)", m->sw_closed_ns / 1e9);
		th_check(ana_swcover_partial(m), "switches partial");
		th_check(m->sw_rate_max == 130000 && m->sw_limit == 20000, "the highest rate and the last limit");
		ana_thread *t = ana_thread_find(m, PID, 11);
		th_check(t && !t->oncpu_known && t->cpu_known && t->cpu_ns == 5 * SEC,
		         "on-CPU time from /proc, not from the switches (known %d, cpu %.3f s)", t ? t->oncpu_known : -1,
		         t ? t->cpu_ns / 1e9 : 0.0);
		th_check(t && t->n_csw == 200000, "the switches /proc counted (%llu)", t ? (unsigned long long)t->n_csw : 0);
		th_check(ana_swcover_gap(m, PID, T0 + 1990 * MS, T0 + 5 * SEC + MS), "a switch pair across a closed stretch is a gap");
		th_check(!ana_swcover_gap(m, PID, T0 + 100 * MS, T0 + 150 * MS) &&
		         !ana_swcover_gap(m, PID, T0 + 5050 * MS, T0 + 5100 * MS),
		         "pairs inside open stretches are not");
		health_text(m, text, sizeof(text));
		th_check(strstr(text, "context switches recorded over 42.0% of the time") != NULL &&
		         strstr(text, "up to 130 000 times a second") && strstr(text, "limit of 20 000") &&
		         strstr(text, "on-CPU time is from /proc readings"), "the health section says how much and why");
		th_check(strstr(text, "total: 500 intended, 500 received (100.0%)") != NULL,
		         "intended samples from /proc: 500 of 500");
		ana_model_free(m);
	}
	/* a window inside the window of switches has them all */
	m = load(path, 5.0, 5.2, 0);
	th_check(m != NULL, "a window of [5 s, 5.2 s) loads");
	if (m) {
		ana_thread *t = ana_thread_find(m, PID, 11);
		th_check(!ana_swcover_partial(m), "switches complete in it");
		th_check(t && t->oncpu_known && t->oncpu_ns == 100 * MS, "on-CPU time from its switches (%.3f s)",
		         t ? t->oncpu_ns / 1e9 : 0.0);
		ana_model_free(m);
	}
	m = load(path, 4.0, 6.0, 0);
	th_check(m && ana_swcover_partial(m) && m->sw_closed_ns == 1800 * MS,
	         "a window of [4 s, 6 s): 1.8 s without switches (%.3f)", m ? m->sw_closed_ns / 1e9 : 0.0);
	ana_model_free(m);
	/* every switch, no gate record: as before */
	m = load(path2, -1, -1, 0);
	th_check(m != NULL, "the ungated trace loads");
	if (m) {
		ana_thread *t = ana_thread_find(m, PID, 11);
		th_check(!ana_swcover_partial(m) && m->swgroups.n == 0, "no stretch without switches");
		th_check(t && t->oncpu_known && t->oncpu_ns == 5 * SEC, "on-CPU time from switches (%.3f s)",
		         t ? t->oncpu_ns / 1e9 : 0.0);
		health_text(m, text, sizeof(text));
		th_check(!strstr(text, "context switches recorded over"), "no word of it in the health section");
		ana_model_free(m);
	}
	/* a merge of a gated and an ungated recording: the ungated one keeps its on-CPU time */
	if (write_merged(path2) == 0 && (m = load(path2, -1, -1, 0)) != NULL) {
		ana_thread *t11 = ana_thread_find(m, PID, 11), *t21 = ana_thread_find(m, 20, 21);
		th_check(ana_swcover_partial(m) && m->swgroups.n == 1, "merged: one recording's gate closed");
		th_check(t21 && t21->oncpu_known && t21->oncpu_ns == 5 * SEC,
		         "merged: the recording with every switch keeps its on-CPU time (known %d, %.3f s)",
		         t21 ? t21->oncpu_known : -1, t21 ? t21->oncpu_ns / 1e9 : 0.0);
		th_check(t11 && !t11->oncpu_known, "merged: the gated recording's thread has none from switches");
		size_t nc = 0;
		ana_swcover_closed(m, 20, &nc);
		th_check(nc == 0 && !ana_swcover_gap(m, 20, T0 + 2 * SEC, T0 + 3 * SEC),
		         "merged: no closed stretch for the ungated recording's process (%zu)", nc);
		health_text(m, text, sizeof(text));
		th_check(strstr(text, "in 1 of the 2 recordings merged here") != NULL,
		         "merged: the health section says in which of the recordings");
		ana_model_free(m);
	} else {
		th_check(0, "the merged trace loads");
	}
	/* a hostile trace's gates of 300 trees are taken as one, with a warning */
	if (write_many(path2) == 0 && (m = load(path2, -1, -1, 0)) != NULL) {
		size_t nw = 0;
		const char *const *warn = ana_model_warnings(m, &nw);
		int said = 0;
		for (size_t i = 0; i < nw; i++)
			said |= strstr(warn[i], "switch gate records of 300 recorded trees") != NULL;
		th_check(said && m->swgroups.n == 1 && ana_swcover_partial(m),
		         "300 trees' gates: one gate for all, partial, and a warning (%zu groups)", m->swgroups.n);
		ana_model_free(m);
	} else {
		th_check(0, "the hostile trace loads");
	}
	unlink(path);
	unlink(path2);
	return th_report();
}
