// build: -O1 -fno-omit-frame-pointer
/* noisy_stack.c — a trace that grows fast: THREADS busy threads (default 2) that keep 6 KiB
 * of fresh random bytes on their stacks, so DWARF stack copies do not compress. For
 * --max-size tests. Usage: noisy_stack [SECONDS] [THREADS] (default 3 s). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 3;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t churn(volatile uint64_t *buf, size_t n, uint64_t x)
{
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
	return x;
}

static void *worker(void *arg)
{
	volatile uint64_t buf[768]; /* 6 KiB of the stack, rewritten all the time */
	uint64_t x = 88172645463325252ull + (uintptr_t)arg;
	double end = now_s() + seconds;
	while (now_s() < end)
		x = churn(buf, sizeof(buf) / sizeof(buf[0]), x);
	return (void *)(uintptr_t)(x & 1);
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	if (argc > 1)
		seconds = atof(argv[1]);
	if (n < 1 || n > 64)
		n = 2;
	for (int i = 1; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	worker(NULL);
	for (int i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
