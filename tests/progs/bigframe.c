// build: -O2 -fno-omit-frame-pointer
/* bigframe.c — a deep call path with a 128 KiB stack frame in the middle, run by the main thread
 * and by a second thread: main|worker -> outer1 -> outer2 -> big_frame (128 KiB on the stack) ->
 * inner1 -> inner2 -> spin, and beside it outer2 -> shallow. perf copies at most 64 KiB of stack
 * per sample, so a DWARF unwind from spin can never reach big_frame's callers; with frame
 * pointers the kernel's callchain can. tests/cli/analyze_truncated.sh records it (and
 * bigframe_nofp, the same program without frame pointers). Usage: bigframe [SECONDS] (default 2). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIG_BYTES (128 * 1024)

static volatile unsigned long sink;
static double seconds = 2.0;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* each function does work after its call, so no call becomes a jump and every frame is real */
__attribute__((noinline)) unsigned long spin(const unsigned char *buf, unsigned long n)
{
	unsigned long i, x = sink;
	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + buf[(x >> 7) & (BIG_BYTES - 1)];
	return x;
}
__attribute__((noinline)) unsigned long inner2(const unsigned char *buf, unsigned long n)
{
	unsigned long r = spin(buf, n);
	return r ^ (n + sink);
}
__attribute__((noinline)) unsigned long inner1(const unsigned char *buf, unsigned long n)
{
	unsigned long r = inner2(buf, n);
	return r ^ (n + sink);
}
/* the big frame: the array is really on the stack (its address escapes into the callees) */
__attribute__((noinline)) unsigned long big_frame(unsigned long n)
{
	unsigned char buf[BIG_BYTES];
	memset(buf, (int)(n & 0xff), sizeof(buf));
	unsigned long r = inner1(buf, n);
	return r ^ buf[r & (BIG_BYTES - 1)];
}
__attribute__((noinline)) unsigned long shallow(unsigned long n)
{
	unsigned long i, x = sink;
	for (i = 0; i < n; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}
__attribute__((noinline)) unsigned long outer2(unsigned long n)
{
	/* about two thirds of the time under the big frame, a third beside it */
	unsigned long r = big_frame(n) + shallow(n / 2);
	return r ^ (n + sink);
}
__attribute__((noinline)) unsigned long outer1(unsigned long n)
{
	unsigned long r = outer2(n);
	return r ^ (n + sink);
}

static void run(void)
{
	double t0 = now_s();
	unsigned long acc = 0;
	while (now_s() - t0 < seconds)
		acc += outer1(400000);
	sink = acc;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	(void)arg;
	run();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (argc > 1)
		seconds = atof(argv[1]);
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	run();
	pthread_join(t, NULL);
	return 0;
}
