// build: -O1 -fno-omit-frame-pointer
/* faulty.c — a target that misbehaves on purpose, for tests/cli/faults.sh:
 *   faulty spin SECONDS [THREADS]   busy threads for SECONDS, then exit 0
 *   faulty segv SECONDS             spin, then write through a null pointer (SIGSEGV)
 *   faulty exit SECONDS CODE        spin, then _exit(CODE) from a non-main thread while others run
 * With FAULTY_CPU_FILE=PATH set, spin writes the process's CPU seconds (user+system) there
 * at the end (bench/run.sh: intended samples = CPU time x rate).
 */
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double seconds;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double until)
{
	unsigned long x = sink;
	while (now_s() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static void *worker(void *arg)
{
	burn(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: faulty spin|segv|exit SECONDS [THREADS|CODE]\n");
		return 64;
	}
	seconds = atof(argv[2]);
	double until = now_s() + seconds;
	int n_threads = strcmp(argv[1], "spin") == 0 && argc > 3 ? atoi(argv[3]) : 2;
	pthread_t t[64];
	double forever = now_s() + 3600;
	for (int i = 0; i < n_threads && i < 64; i++)
		pthread_create(&t[i], NULL, worker, strcmp(argv[1], "spin") == 0 ? &until : &forever);
	burn(until);
	if (strcmp(argv[1], "segv") == 0) {
		volatile int *p = NULL;
		*p = 1;
	} else if (strcmp(argv[1], "exit") == 0) {
		_exit(argc > 3 ? atoi(argv[3]) : 7);
	}
	for (int i = 0; i < n_threads && i < 64; i++)
		pthread_join(t[i], NULL);
	const char *cpu_file = getenv("FAULTY_CPU_FILE");
	struct rusage ru;
	if (cpu_file && getrusage(RUSAGE_SELF, &ru) == 0) {
		FILE *f = fopen(cpu_file, "w");
		if (f) {
			fprintf(f, "%.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
			                           ru.ru_stime.tv_usec / 1e6);
			fclose(f);
		}
	}
	return 0;
}
