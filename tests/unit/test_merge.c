/* test_merge.c — gt-analyze merge on hand-written traces of known clocks: two hosts (other boots)
 * whose monotonic clocks are 1000 s apart with a 50 ppm drift, aligned through their realtime pairs
 * within the stated error; pids kept apart (pid + 10^7) in every record kind that names one, and in
 * process.PID.* keys; an archive embedded by both written once; one END with every sample; and a
 * trace of the reference's boot whose pairs disagree with its kernel clock by 4 s (a time namespace
 * it did not record) aligned by the pairs, and said so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "gt_util.h"
#include "merge.h"
#include "testhelp.h"

#define S 1000000000ull

static char dir[] = "/tmp/gt-merge-test.XXXXXX";

static void put(gtt_writer *w, gtt_record *r)
{
	if (gtt_write(w, r) < 0)
		fprintf(stderr, "write failed\n");
}

static void meta(gtt_writer *w, const char *k, const char *v)
{
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta.key = k;
	r.u.meta.value = v;
	put(w, &r);
}

/* A host: realtime(t) = t + off + drift * (t - t0). Its records: clock pairs at t0, t0+50 s,
 * t0+100 s; process 42 (and its thread 43) exiting at t0 + 60 s; a sample, a kernel, a string, a
 * counter of pid 42; an archive piece. */
static void write_trace(const char *path, const char *host, const char *boot, uint64_t t0, int64_t off, double drift,
                        const char *timens)
{
	int err = 0;
	gtt_writer *w = gtt_writer_open(path, &err);
	char v[64];
	if (!w)
		return;
	meta(w, "hostname", host);
	meta(w, "boot_id", boot);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)t0);
	meta(w, "start_ns", v);
	meta(w, "process.42.rank", host[5] == 'a' ? "0" : "1");
	if (timens)
		meta(w, "timens_monotonic_offset_ns", timens);
	for (int k = 0; k <= 2; k++) {
		uint64_t t = t0 + (uint64_t)k * 50 * S;
		gtt_record c = { .tag = GTT_REC_CLOCK };
		c.u.clock.mono_ns = t;
		c.u.clock.realtime_ns = (uint64_t)((int64_t)t + off + (int64_t)(drift * (double)(t - t0)));
		c.u.clock.uncertainty_ns = 100;
		c.u.clock.kind = k == 0 ? GTT_CLOCK_START : k == 2 ? GTT_CLOCK_END : GTT_CLOCK_PERIODIC;
		c.u.clock.hostname = host;
		c.u.clock.boot_id = boot;
		put(w, &c);
	}
	gtt_record r = { .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ t0 + 1 * S, 42, 1, GTT_PROC_START, 0, "train" };
	put(w, &r);
	r.u.process = (gtt_process){ t0 + 60 * S, 42, 1, GTT_PROC_EXIT, 0, "train" };
	put(w, &r);
	gtt_record th = { .tag = GTT_REC_THREAD };
	th.u.thread = (gtt_thread){ t0 + 1 * S, 42, 43, GTT_THREAD_START, "worker" };
	put(w, &th);
	uint64_t ips[2] = { 0x401000, 0x401100 };
	gtt_record sm = { .tag = GTT_REC_SAMPLE };
	sm.u.sample.time_ns = t0 + 30 * S;
	sm.u.sample.pid = 42;
	sm.u.sample.tid = 43;
	sm.u.sample.period_ns = 10000000;
	sm.u.sample.n_user = 2;
	sm.u.sample.ips = ips;
	put(w, &sm);
	gtt_record st = { .tag = GTT_REC_STRING };
	st.u.string = (gtt_string){ 42, 5, "tokens.trained" };
	put(w, &st);
	gtt_record cn = { .tag = GTT_REC_COUNTER };
	cn.u.counter = (gtt_counter){ t0 + 40 * S, 42, 5, 1234 };
	put(w, &cn);
	gtt_record kr = { .tag = GTT_REC_CUDA_KERNEL };
	kr.u.kernel.start_ns = t0 + 20 * S;
	kr.u.kernel.end_ns = t0 + 20 * S + 5000;
	kr.u.kernel.pid = 42;
	put(w, &kr);
	static const uint8_t data[16] = "0123456789abcdef";
	gtt_record ar = { .tag = GTT_REC_ARCHIVE };
	ar.u.archive.build_id_len = 4;
	memcpy(ar.u.archive.build_id, "\x01\x02\x03\x04", 4);
	ar.u.archive.path = "/usr/lib/libtrain.so";
	ar.u.archive.kind = 1;
	ar.u.archive.total_bytes = 16;
	ar.u.archive.len = 16;
	ar.u.archive.data = data;
	put(w, &ar);
	gtt_record e = { .tag = GTT_REC_END };
	e.u.end = (gtt_end){ t0 + 100 * S, GTT_END_TARGET_EXIT, 0, 1, 0 };
	put(w, &e);
	gtt_writer_close(w);
}

typedef struct seen {
	uint64_t exit_ns[2];          /* by rank: 0 pid 42, 1 pid 10000042 */
	int samples_remapped, kernels_remapped, strings_remapped, counters_remapped, threads_remapped;
	int archives, ends;
	uint64_t end_samples;
	char rank_key[2][64];
	char how1[64];
} seen;

static seen read_merged(const char *path)
{
	seen s;
	int err = 0, rc;
	gtt_reader *r = gtt_reader_open(path, &err);
	gtt_record rec;
	memset(&s, 0, sizeof(s));
	while (r && (rc = gtt_reader_next(r, &rec)) > 0) {
		switch (rec.tag) {
		case GTT_REC_PROCESS:
			if (rec.u.process.event == GTT_PROC_EXIT)
				s.exit_ns[rec.u.process.pid == 42 ? 0 : 1] = rec.u.process.time_ns;
			break;
		case GTT_REC_SAMPLE: s.samples_remapped += rec.u.sample.pid == 10000042 && rec.u.sample.tid == 10000043; break;
		case GTT_REC_CUDA_KERNEL: s.kernels_remapped += rec.u.kernel.pid == 10000042; break;
		case GTT_REC_STRING: s.strings_remapped += rec.u.string.pid == 10000042; break;
		case GTT_REC_COUNTER: s.counters_remapped += rec.u.counter.pid == 10000042; break;
		case GTT_REC_THREAD: s.threads_remapped += rec.u.thread.pid == 10000042 && rec.u.thread.tid == 10000043; break;
		case GTT_REC_ARCHIVE: s.archives++; break;
		case GTT_REC_END: s.ends++; s.end_samples = rec.u.end.n_samples; break;
		case GTT_REC_META:
			if (!strcmp(rec.u.meta.key, "process.42.rank"))
				snprintf(s.rank_key[0], 64, "%s", rec.u.meta.value);
			if (!strcmp(rec.u.meta.key, "process.10000042.rank"))
				snprintf(s.rank_key[1], 64, "%s", rec.u.meta.value);
			if (!strcmp(rec.u.meta.key, "merge.1.how"))
				snprintf(s.how1, 64, "%s", rec.u.meta.value);
			break;
		default:
			break;
		}
	}
	gtt_reader_close(r);
	return s;
}

static int merge(const char *a, const char *b, const char *out)
{
	char *argv[] = { "merge", (char *)a, (char *)b, "-o", (char *)out, NULL };
	FILE *keep = stdout;
	int rc;
	stdout = fopen("/dev/null", "w"); /* the alignment table */
	rc = ana_cmd_merge(5, argv);
	fclose(stdout);
	stdout = keep;
	return rc;
}

int main(void)
{
	char a[256], b[256], c[256], m[256], m2[256];
	if (!mkdtemp(dir))
		return 1;
	snprintf(a, sizeof(a), "%s/a.gtt", dir);
	snprintf(b, sizeof(b), "%s/b.gtt", dir);
	snprintf(c, sizeof(c), "%s/c.gtt", dir);
	snprintf(m, sizeof(m), "%s/m.gtt", dir);
	snprintf(m2, sizeof(m2), "%s/m2.gtt", dir);
	/* host a: mono 2000 s = realtime R; host b booted 1000 s later (mono 1000 s at the same
	 * instant) and its realtime runs 50 ppm fast against it. Both processes exit at the same
	 * real instant: a's t0 + 60 s. */
	const int64_t R = 1700000000ll * (int64_t)S;
	write_trace(a, "host-a", "boot-a", 2000 * S, R - 2000 * (int64_t)S, 0, NULL);
	/* b's records: its t0 is 1000 s; its exit is at its own t0 + 60 s */
	write_trace(b, "host-b", "boot-b", 1000 * S, R - 1000 * (int64_t)S, 50e-6, NULL);
	th_check(merge(a, b, m) == 0, "two hosts merge (exit 0)");
	seen s = read_merged(m);
	/* b's exit: its mono 1060 s; realtime R + 60 s + 50e-6 * 60 s (= 3 ms); on a's clock 2060 s + 3 ms */
	int64_t want = (int64_t)(2060 * S) + 3000000, got = (int64_t)s.exit_ns[1];
	th_check(s.exit_ns[0] == 2060 * S, "the reference's times stay (%llu)", (unsigned long long)s.exit_ns[0]);
	th_check(llabs(got - want) <= 1000, "b's exit on a's clock through its drifting pairs within 1 us (off by %lld ns)",
	         (long long)(got - want));
	th_check(s.samples_remapped == 1 && s.kernels_remapped == 1 && s.strings_remapped == 1 &&
	         s.counters_remapped == 1 && s.threads_remapped == 1,
	         "b's pid 42 and tid 43 are 10000042 / 10000043 in samples, kernels, strings, counters, threads");
	th_check(!strcmp(s.rank_key[0], "0") && !strcmp(s.rank_key[1], "1"), "process.PID.rank keys follow their pid");
	th_check(s.archives == 1, "an archive both traces embed is written once (%d)", s.archives);
	th_check(s.ends == 1 && s.end_samples == 2, "one END counting every sample (%d, %llu)", s.ends,
	         (unsigned long long)s.end_samples);
	th_check(!strcmp(s.how1, "realtime pairs"), "merge.1.how: %s", s.how1);
	th_check(merge(a, b, m) == GT_EXIT_BROKEN, "an existing output is refused");

	/* c: the reference's boot, but recorded in a +4 s time namespace without saying so: its
	 * kernel-clock shift (0) is 4 s off its pairs, which are right */
	write_trace(c, "host-a", "boot-a", 2004 * S, R - 2004 * (int64_t)S, 0, NULL);
	th_check(merge(a, c, m2) == 0, "a trace of the same boot with an unrecorded namespace merges");
	s = read_merged(m2);
	got = (int64_t)s.exit_ns[1];
	th_check(llabs(got - (int64_t)(2060 * S)) <= 1000, "... aligned by its pairs, not the kernel clock (off by %lld ns)",
	         (long long)(got - (int64_t)(2060 * S)));
	th_check(!strcmp(s.how1, "realtime pairs"), "... and says so (merge.1.how: %s)", s.how1);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return th_report();
}
