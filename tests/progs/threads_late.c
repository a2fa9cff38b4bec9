// build: -O1 -fno-omit-frame-pointer
/* threads_late.c — threads that appear over time: "early" at start, "late" after 0.5 s (from the
 * early thread, so it is a grandchild thread), each spinning; main waits. Usage:
 * threads_late [SECONDS] [EXIT_STATUS] (defaults 1.5 and 0). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double secs = 1.5;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_until(double end)
{
	unsigned long x = sink;
	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1;
	sink = x;
}

static double t0;

static void *late_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "late");
	burn_until(t0 + secs);
	return NULL;
}

static void *early_main(void *arg)
{
	pthread_t late;
	(void)arg;
	pthread_setname_np(pthread_self(), "early");
	burn_until(t0 + 0.5);
	pthread_create(&late, NULL, late_main, NULL);
	burn_until(t0 + secs);
	pthread_join(late, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t early;
	int status = argc > 2 ? atoi(argv[2]) : 0;

	if (argc > 1)
		secs = atof(argv[1]);
	t0 = now_s();
	pthread_create(&early, NULL, early_main, NULL);
	pthread_join(early, NULL);
	return status;
}
