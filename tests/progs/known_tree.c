// build: -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -fno-optimize-sibling-calls
/* known_tree.c — a known call tree with frame pointers in every function, leaves included (gcc
 * drops them from leaves that do not touch the stack, so the leaf keeps its state in a stack
 * slot), so that frame-pointer callchains name every caller: main -> {kt_alpha 60%, kt_beta 30%,
 * kt_gamma -> kt_delta 10%} of CPU time by iteration counts. Usage: known_tree [SECONDS]. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void kt_spin(unsigned long n);
__attribute__((noinline)) void kt_spin(unsigned long n)
{
	volatile unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void kt_alpha(unsigned long u);
__attribute__((noinline)) void kt_beta(unsigned long u);
__attribute__((noinline)) void kt_delta(unsigned long u);
__attribute__((noinline)) void kt_gamma(unsigned long u);
__attribute__((noinline)) void kt_alpha(unsigned long u) { kt_spin(6 * u); }
__attribute__((noinline)) void kt_beta(unsigned long u) { kt_spin(3 * u); }
__attribute__((noinline)) void kt_delta(unsigned long u) { kt_spin(u); }
__attribute__((noinline)) void kt_gamma(unsigned long u) { kt_delta(u); }

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
		/* the unit varies from one round to the next (100 000 to 300 000, 200 000 on average):
		 * a round of a fixed length (~2 ms here) aliased with a 499 Hz sampling timer and gave
		 * alpha and beta 44 % each once; the shares stay 6:3:1 within every round */
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		unsigned long unit = 100000 + r % 200001;
		kt_alpha(unit);
		kt_beta(unit);
		kt_gamma(unit);
	}
	return 0;
}
