/* switch_cost.c — what a recorder costs a task at each context switch, without the noise of a
 * scheduler's choices: two threads pinned to one CPU hand a byte to and fro through two pipes,
 * so every hand-over is exactly one switch on that CPU, and the process's own CPU time per
 * switch (user + system, getrusage) is what the kernel spends in it — including what a perf
 * event makes it write there (switch records, their sample_id). Run under a recorder and
 * without, interleaved (bench/switch_cost.sh).
 *   usage: switch_cost [ROUND_TRIPS] [CPU]     (defaults 200000 and the last online CPU)
 * prints: cpu_ns_per_switch N wall_ns_per_switch N switches N */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int g_ab[2], g_ba[2], g_cpu;
static long g_n;

static int pin(void)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(g_cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static void *echo(void *arg)
{
	char c;
	pin();
	for (long i = 0; i < g_n; i++)
		if (read(g_ab[0], &c, 1) != 1 || write(g_ba[1], &c, 1) != 1)
			break;
	return arg;
}

static double ns_of(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e9 + (double)tv->tv_usec * 1e3;
}

int main(int argc, char **argv)
{
	struct rusage r0, r1;
	struct timespec a, z;
	pthread_t t;
	char c = 'x';
	long i;
	double cpu, wall;

	g_n = argc > 1 ? atol(argv[1]) : 200000;
	g_cpu = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	if (g_n <= 0 || pipe(g_ab) < 0 || pipe(g_ba) < 0 || pin() < 0) {
		fprintf(stderr, "switch_cost: usage: switch_cost [ROUND_TRIPS > 0] [CPU]\n");
		return 64;
	}
	if (pthread_create(&t, NULL, echo, NULL) != 0)
		return 2;
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < g_n; i++)
		if (write(g_ab[1], &c, 1) != 1 || read(g_ba[0], &c, 1) != 1)
			break;
	clock_gettime(CLOCK_MONOTONIC, &z);
	getrusage(RUSAGE_SELF, &r1);
	pthread_join(t, NULL);
	cpu = ns_of(&r1.ru_utime) - ns_of(&r0.ru_utime) + ns_of(&r1.ru_stime) - ns_of(&r0.ru_stime);
	wall = (double)(z.tv_sec - a.tv_sec) * 1e9 + (double)(z.tv_nsec - a.tv_nsec);
	printf("cpu_ns_per_switch %.1f wall_ns_per_switch %.1f switches %ld\n", cpu / (2.0 * (double)i),
	       wall / (2.0 * (double)i), 2 * i);
	return 0;
}
