/* pyreader_cost.c — what one Python stack pass costs, measured in the reader itself: attaches
 * to a running CPython (pid), finds its interpreter the way gt-record does, then runs PASSES
 * stack passes GAP_US apart and prints per pass and per stack: wall time, the reader's own
 * CPU time, process_vm_readv calls and records written — median, min-max and mean over the passes
 * (the first tenth left out), and the first three passes alone (the code cache's fill).
 * No wake-up cost is in these numbers (the loop times each pass alone), so they are the
 * reading itself; bench/py_overhead.sh measures the cost a whole recording puts on the target.
 * usage: pyreader_cost PID [PASSES [GAP_US]]      (defaults 2000 and 1000)
 * A benchmark, not a test: it never fails on a number. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_util.h"
#include "gtt.h"
#include "pyproc.h"
#include "pyreader.h"

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * GT_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void row(const char *what, uint64_t *v, size_t n, double scale, const char *unit)
{
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%-28s median %8.2f  min %8.2f  max %8.2f  mean %8.2f  %s\n", what, (double)v[n / 2] * scale,
	       (double)v[0] * scale, (double)v[n - 1] * scale, sum / (double)n * scale, unit);
}

int main(int argc, char **argv)
{
	pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : 0;
	size_t passes = argc > 2 ? (size_t)atol(argv[2]) : 2000, n = 0, i;
	long gap_us = argc > 3 ? atol(argv[3]) : 1000;
	rec_pysink sink;
	rec_pyproc *p;
	uint64_t *wall, *cpu, *calls, *stacks, deadline;
	int rc = 2, werr = 0;
	gtt_writer *w;

	if (pid <= 0 || passes == 0) {
		fprintf(stderr, "usage: pyreader_cost PID [PASSES [GAP_US]]\n");
		return 64;
	}
	w = gtt_writer_open("/dev/null", &werr);
	memset(&sink, 0, sizeof(sink));
	sink.w = w;
	p = rec_pyproc_create(pid, 1, &sink, rec_py_tcb_tid_offset());
	wall = calloc(passes, 8);
	cpu = calloc(passes, 8);
	calls = calloc(passes, 8);
	stacks = calloc(passes, 8);
	if (!w || !p || !wall || !cpu || !calls || !stacks) {
		fprintf(stderr, "pyreader_cost: out of memory\n");
		goto out;
	}
	deadline = now_ns(CLOCK_MONOTONIC) + 30 * GT_NS_PER_SEC; /* valgrind looks slowly */
	while (rec_pyproc_state(p) == REC_PY_LOOKING && now_ns(CLOCK_MONOTONIC) < deadline) {
		if (rec_pyproc_look(p, now_ns(CLOCK_MONOTONIC)) < 0)
			break;
		if (rec_pyproc_state(p) == REC_PY_LOOKING) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	}
	if (rec_pyproc_state(p) != REC_PY_READING) {
		char text[512];
		rec_pyproc_end(p, 0);
		rec_pyproc_status(p, text, sizeof(text));
		fprintf(stderr, "pyreader_cost: pid %d: %s\n", (int)pid, text);
		goto out;
	}
	for (i = 0; i < passes; i++) {
		rec_pyproc_stats a, b;
		uint64_t c0, t0, c1, t1;
		struct timespec ts = { gap_us / 1000000, (gap_us % 1000000) * 1000 };

		rec_pyproc_stats_get(p, &a);
		c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		t0 = now_ns(CLOCK_MONOTONIC);
		if (rec_pyproc_pass(p) < 0)
			break;
		t1 = now_ns(CLOCK_MONOTONIC);
		c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		rec_pyproc_stats_get(p, &b);
		wall[n] = t1 - t0;
		cpu[n] = c1 - c0;
		calls[n] = b.syscalls - a.syscalls;
		stacks[n] = b.stacks - a.stacks;
		n++;
		if (gap_us > 0)
			nanosleep(&ts, NULL);
	}
	if (n < 10) {
		fprintf(stderr, "pyreader_cost: the target went away after %zu passes\n", n);
		goto out;
	}
	{
		/* skip the first passes: they read the code objects and plan the snapshots */
		size_t skip = n / 10, m = n - skip, k;
		uint64_t *ps_wall = calloc(m, 8), *ps_cpu = calloc(m, 8), *ps_calls = calloc(m, 8);
		if (!ps_wall || !ps_cpu || !ps_calls) {
			free(ps_wall);
			free(ps_cpu);
			free(ps_calls);
			goto out;
		}
		for (k = 0; k < m; k++) {
			uint64_t s = stacks[skip + k] ? stacks[skip + k] : 1;
			ps_wall[k] = wall[skip + k] * 100 / s; /* per stack, 1/100 ns */
			ps_cpu[k] = cpu[skip + k] * 100 / s;
			ps_calls[k] = calls[skip + k] * 100 / s;
		}
		printf("pid %d: %zu passes (first %zu left out), %llu stacks in the last\n", (int)pid, n, skip,
		       (unsigned long long)stacks[n - 1]);
		/* the first passes fill the code cache and plan the snapshots: what a short
		 * recording at 99 Hz pays on its first stacks */
		for (k = 0; k < 3; k++)
			printf("pass %zu                       wall %8.2f us  calls %4llu  stacks %llu\n", k + 1,
			       (double)wall[k] * 1e-3, (unsigned long long)calls[k], (unsigned long long)stacks[k]);
		row("wall per pass", wall + skip, m, 1e-3, "us");
		row("reader CPU per pass", cpu + skip, m, 1e-3, "us");
		row("process_vm_readv per pass", calls + skip, m, 1, "calls");
		row("wall per stack", ps_wall, m, 1e-5, "us");
		row("reader CPU per stack", ps_cpu, m, 1e-5, "us");
		row("process_vm_readv per stack", ps_calls, m, 1e-2, "calls");
		free(ps_wall);
		free(ps_cpu);
		free(ps_calls);
	}
	rc = 0;
out:
	rec_pyproc_destroy(p);
	gtt_writer_close(w);
	free(wall);
	free(cpu);
	free(calls);
	free(stacks);
	return rc;
}
