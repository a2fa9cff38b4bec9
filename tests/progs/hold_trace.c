/* hold_trace.c — a stand-in debugger for tests: PTRACE_SEIZEs one thread (without stopping it)
 * and keeps it traced until killed, so that another tracer is refused ("already traced").
 * usage: hold_trace TID  (prints "seized" once attached) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 64;
	if (ptrace(PTRACE_SEIZE, atoi(argv[1]), NULL, NULL) < 0) {
		perror("PTRACE_SEIZE");
		return 1;
	}
	printf("seized\n");
	fflush(stdout);
	for (;;)
		pause();
}
