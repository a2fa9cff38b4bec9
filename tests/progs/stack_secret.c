// build: -O1 -fno-omit-frame-pointer
/* stack_secret.c — keeps a secret in a local array of main's frame while a callee spins, for
 * tests/cli/record_output.sh: a DWARF stack copy carries the secret into the trace,
 * gt-record --no-stack-copy must not. The secret is built at run time from argv[2] so that
 * it is in no file gt-record reads (the binary holds only the pieces).
 *   stack_secret SECONDS WORD   spin for SECONDS with WORD+"-on-the-stack" in main's frame */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double until, const char *secret)
{
	unsigned long x = sink;
	while (now_s() < until)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 2654435761u;
	sink = x + (unsigned long)secret[0];
}

int main(int argc, char **argv)
{
	volatile char secret[64];
	double secs = argc > 1 ? atof(argv[1]) : 1.0;

	if (argc < 3) {
		fprintf(stderr, "usage: stack_secret SECONDS WORD\n");
		return 64;
	}
	snprintf((char *)secret, sizeof(secret), "%s-on-the-stack", argv[2]);
	spin(now_s() + secs, (const char *)secret);
	return 0;
}
