/* test_job_clock.c — the clock record (tag 17): its payload, its stream, both format minors, and
 * gtt_rec_shift moving every time of a record (what gt-record's perf clock correction and
 * gt-analyze merge rely on). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h"
#include "testhelp.h"

static void test_payload(void)
{
	gtt_record in = { .tag = GTT_REC_CLOCK }, out;
	uint8_t *b = NULL;
	size_t cap = 0, scap = 0;
	uint32_t len = 0;
	void *scratch = NULL;

	in.u.clock.mono_ns = 5000000001ull;
	in.u.clock.realtime_ns = 1796110490034613454ull;
	in.u.clock.uncertainty_ns = 17;
	in.u.clock.kind = GTT_CLOCK_END;
	in.u.clock.hostname = "node7";
	in.u.clock.boot_id = "3db6c02e";
	th_check(gtt_encode_payload(&in, &b, &cap, &len) == 0 && len == 3 * 8 + 4 + 4 + 5 + 4 + 8,
	         "clock: u64 mono, u64 realtime, u64 uncertainty, u32 kind, str host, str boot id (%u bytes)", len);
	th_check(gtt_decode(GTT_REC_CLOCK, b, len, &out, &scratch, &scap) == 0 && out.u.clock.mono_ns == 5000000001ull &&
	         out.u.clock.realtime_ns == 1796110490034613454ull && out.u.clock.uncertainty_ns == 17 &&
	         out.u.clock.kind == GTT_CLOCK_END && strcmp(out.u.clock.hostname, "node7") == 0 &&
	         strcmp(out.u.clock.boot_id, "3db6c02e") == 0, "clock: decodes to the same fields");
	th_check(gtt_decode(GTT_REC_CLOCK, b, len - 1, &out, &scratch, &scap) == GTT_EINVAL,
	         "clock: a cut payload does not decode");
	th_check(strcmp(gtt_tag_name(GTT_REC_CLOCK), "clock") == 0, "clock: tag 17 is named clock");
	th_check(gtt_is_defs_tag(GTT_REC_CLOCK), "clock: in the definitions stream (every window reads it)");
	for (uint32_t minor = 0; minor <= 1; minor++) {
		int fd = memfd_create("clk", 0), err = 0, n = 0, rc;
		gtt_writer_opts o;
		gtt_writer_opts_init(&o);
		o.minor = minor;
		gtt_writer *w = gtt_writer_fdopen_opts(dup(fd), 0, &o, &err);
		th_check(w && gtt_write(w, &in) == 0 && gtt_writer_close(w) == 0, "clock: written in format 1.%u", minor);
		lseek(fd, 0, SEEK_SET);
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		gtt_reader *r = gtt_reader_open(path, &err);
		gtt_record got;
		while (r && (rc = gtt_reader_next(r, &got)) > 0)
			if (got.tag == GTT_REC_CLOCK && got.u.clock.realtime_ns == in.u.clock.realtime_ns &&
			    strcmp(got.u.clock.hostname, "node7") == 0)
				n++;
		th_check(n == 1, "clock: read back from format 1.%u", minor);
		gtt_reader_close(r);
		close(fd);
	}
	free(b);
	free(scratch);
}

static void test_shift(void)
{
	gtt_record r = { .tag = GTT_REC_CUDA_KERNEL };
	r.u.kernel.start_ns = 10 * 1000000000ull;
	r.u.kernel.end_ns = 10 * 1000000000ull + 500;
	gtt_rec_shift(&r, -4000000000ll);
	th_check(r.u.kernel.start_ns == 6000000000ull && r.u.kernel.end_ns == 6000000500ull,
	         "shift: both ends of an interval move (-4 s)");
	gtt_record h = { .tag = GTT_REC_HEALTH };
	h.u.health.time_ns = 100;
	h.u.health.end_ns = 200;
	gtt_rec_shift(&h, 50);
	th_check(h.u.health.time_ns == 150 && h.u.health.end_ns == 250, "shift: a health window moves");
	gtt_record p = { .tag = GTT_REC_PROCESS };
	p.u.process.time_ns = 0;
	gtt_rec_shift(&p, 1000);
	th_check(p.u.process.time_ns == 0, "shift: a time of 0 (none) stays 0");
	p.u.process.time_ns = 10;
	gtt_rec_shift(&p, -1000);
	th_check(p.u.process.time_ns == 1, "shift: a time moved below 1 ns becomes 1, never wraps");
	gtt_record c = { .tag = GTT_REC_CLOCK };
	c.u.clock.mono_ns = 7;
	c.u.clock.realtime_ns = 99;
	gtt_rec_shift(&c, 3);
	th_check(c.u.clock.mono_ns == 10 && c.u.clock.realtime_ns == 99, "shift: a clock pair's trace time moves, realtime stays");
	uint32_t tags[] = { GTT_REC_PROCESS, GTT_REC_THREAD, GTT_REC_MAPPING, GTT_REC_SAMPLE, GTT_REC_SWITCH,
		            GTT_REC_THREAD_CPU, GTT_REC_HEALTH, GTT_REC_TICKS, GTT_REC_PY_STACK, GTT_REC_GIL,
		            GTT_REC_CUDA_KERNEL, GTT_REC_CUDA_MEMCPY, GTT_REC_CUDA_MEMSET, GTT_REC_CUDA_SYNC,
		            GTT_REC_CUDA_API, GTT_REC_CUDA_ALLOC, GTT_REC_NVTX, GTT_REC_COUNTER,
		            GTT_REC_CUDA_CALLSTACK, GTT_REC_END, GTT_REC_CAPTURE, GTT_REC_CLOCK };
	int all = 1;
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		gtt_record x;
		uint64_t a0, a1, b0, b1;
		memset(&x, 0, sizeof(x));
		x.tag = tags[i];
		memset(&x.u, 0, sizeof(x.u));
		/* every time field: fill the union's leading u64s where the kind keeps them */
		uint64_t *words = (uint64_t *)&x.u;
		for (int k = 0; k < 2; k++)
			words[k] = 1000;
		if (!gtt_rec_times(&x, &a0, &a1))
			continue;
		gtt_rec_shift(&x, 5);
		gtt_rec_times(&x, &b0, &b1);
		if (!((a0 == 0 || b0 == a0 + 5) && (a1 == 0 || b1 == a1 + 5))) {
			all = 0;
			printf("  kind %s: %llu..%llu -> %llu..%llu\n", gtt_tag_name(tags[i]), (unsigned long long)a0,
			       (unsigned long long)a1, (unsigned long long)b0, (unsigned long long)b1);
		}
	}
	th_check(all, "shift: every timed kind's times (as gtt_rec_times sees them) move by the delta");
}

int main(void)
{
	test_payload();
	test_shift();
	return th_report();
}
