// build: -O1 -fno-omit-frame-pointer
/* pingpong.c — a target that switches fast, for tests/cli/record_switches.sh:
 *   pingpong SECONDS PAIRS [SPIN]
 * PAIRS pairs of threads hand one byte to and fro through two pipes for SECONDS: every hand-over
 * blocks one thread and wakes the other, so the process switches tens of thousands of times a
 * second, the shape of a GIL-contended Python process. SPIN (default 0) iterations of busy work
 * between hand-overs slow the rate down. Prints "round_trips N" and "seconds S" at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static long spin;
static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct pair { int ab[2], ba[2]; double until; unsigned long trips; } pair;

__attribute__((noinline)) static void work(void)
{
	unsigned long x = sink;
	for (long i = 0; i < spin; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static void *ping(void *arg)
{
	pair *p = arg;
	char c = 1;
	while (now_s() < p->until) {
		work();
		if (write(p->ab[1], &c, 1) != 1 || read(p->ba[0], &c, 1) != 1)
			break;
		p->trips++;
	}
	c = 0; /* the last byte says stop */
	if (write(p->ab[1], &c, 1) != 1)
		return NULL;
	return NULL;
}

static void *pong(void *arg)
{
	pair *p = arg;
	char c;
	while (read(p->ab[0], &c, 1) == 1 && c) {
		work();
		if (write(p->ba[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: pingpong SECONDS PAIRS [SPIN]\n");
		return 64;
	}
	seconds = atof(argv[1]);
	int n = atoi(argv[2]);
	spin = argc > 3 ? atol(argv[3]) : 0;
	if (n < 1 || n > 64 || !(seconds > 0))
		return 64;
	pair ps[64];
	pthread_t t[128];
	double until = now_s() + seconds, t0 = now_s();
	for (int i = 0; i < n; i++) {
		ps[i].until = until;
		ps[i].trips = 0;
		if (pipe(ps[i].ab) || pipe(ps[i].ba))
			return 1;
		pthread_create(&t[2 * i], NULL, ping, &ps[i]);
		pthread_create(&t[2 * i + 1], NULL, pong, &ps[i]);
	}
	unsigned long trips = 0;
	for (int i = 0; i < 2 * n; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < n; i++)
		trips += ps[i].trips;
	printf("round_trips %lu\nseconds %.3f\n", trips, now_s() - t0);
	return 0;
}
