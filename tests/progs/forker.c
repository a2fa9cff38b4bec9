// build: -O1 -fno-omit-frame-pointer
/* forker.c — a process tree for follow-children tests: the parent spins, forks a child that
 * spins ("forkchild"), and forks another that execs this program again as "forker exec"
 * (which spins as "execd"). Usage: forker [SECONDS] (default 1). */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double secs)
{
	double end = now_s() + secs;
	unsigned long x = sink;
	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1;
	sink = x;
}

int main(int argc, char **argv)
{
	double secs = 1.0;
	pid_t a, b;

	if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		prctl(PR_SET_NAME, "execd");
		burn(argc > 2 ? atof(argv[2]) : 0.5);
		return 0;
	}
	if (argc > 1)
		secs = atof(argv[1]);
	a = fork();
	if (a == 0) {
		prctl(PR_SET_NAME, "forkchild");
		burn(secs / 2);
		_exit(0);
	}
	b = fork();
	if (b == 0) {
		char arg[32];
		char *args[] = { argv[0], "exec", arg, NULL };
		strcpy(arg, "0.5");
		execv("/proc/self/exe", args);
		_exit(127);
	}
	burn(secs / 2);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	return 0;
}
