// build: -O2 -fomit-frame-pointer
/* deep6_nofp.c — a six-deep call chain (main -> level1 -> ... -> level6) without frame pointers,
 * for DWARF unwinding tests. level6 burns CPU. Usage: deep6_nofp [SECONDS] (default 2). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* each level keeps a little state live across its call, so the compiler cannot turn the call
 * into a jump, and the stack really is six frames deep */
__attribute__((noinline)) unsigned long level6(unsigned long n)
{
	unsigned long i, x = sink;
	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
	return x;
}
__attribute__((noinline)) unsigned long level5(unsigned long n) { unsigned long r = level6(n); return r ^ (n + sink); }
__attribute__((noinline)) unsigned long level4(unsigned long n) { unsigned long r = level5(n); return r ^ (n + sink); }
__attribute__((noinline)) unsigned long level3(unsigned long n) { unsigned long r = level4(n); return r ^ (n + sink); }
__attribute__((noinline)) unsigned long level2(unsigned long n) { unsigned long r = level3(n); return r ^ (n + sink); }
__attribute__((noinline)) unsigned long level1(unsigned long n) { unsigned long r = level2(n); return r ^ (n + sink); }

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, t0 = now_s();
	unsigned long acc = 0;

	while (now_s() - t0 < secs)
		acc += level1(200000);
	sink = acc;
	return 0;
}
