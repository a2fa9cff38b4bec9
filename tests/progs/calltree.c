// build: -O1 -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls
/* calltree.c — a known call tree for profiler tests: main -> {alpha 60%, beta 30%, gamma -> delta 10%}
 * of CPU time, by iteration counts. Usage: calltree [SECONDS] (default 2). Frame pointers kept. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void store(unsigned long x) { sink = x; }

/* not a leaf (it calls store), so it sets up a frame and fp unwinding sees its caller */
__attribute__((noinline)) static void spin(unsigned long n)
{
	unsigned long i, x = sink;
	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	store(x);
}

__attribute__((noinline)) void alpha(unsigned long u) { spin(6 * u); }
__attribute__((noinline)) void beta(unsigned long u) { spin(3 * u); }
__attribute__((noinline)) void delta(unsigned long u) { spin(u); }
__attribute__((noinline)) void gamma_(unsigned long u) { delta(u); }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, t0 = now_s();
	unsigned long r = 88172645463325252ul;

	while (now_s() - t0 < secs) {
		/* a unit that varies by round (10 000 to 30 000): a round of fixed length aliases with
		 * the sampling timer (known_tree.c says how it showed); shares stay 6:3:1 per round */
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		unsigned long unit = 10000 + r % 20001;
		alpha(unit);
		beta(unit);
		gamma_(unit);
	}
	return 0;
}
