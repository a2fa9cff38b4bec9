// build: -O2 -fomit-frame-pointer
/* dump_native.c — a C target (no Python, no frame pointers) for gt-record --dump tests: one
 * thread in nanosleep under nap_outer -> nap_inner, one blocked in read() on a pipe under
 * read_inner, one in pause() inside a SIGUSR1 handler (handler_wait <- on_usr1 <- the signal
 * trampoline <- sig_outer), the main thread in pthread_join. With "vfork", one more thread waits
 * in vfork_outer for a CLONE_VFORK child that sleeps 60 s (the thread is then in uninterruptible
 * sleep, and the child is a second process). Writes "ROLE TID" lines (and "vchild PID") to
 * READY_FILE once every thread is in place, then waits until killed.
 * usage: dump_native READY_FILE [vfork] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static volatile pid_t tid_nap, tid_read, tid_sig, tid_vf = -1, pid_vchild;
static char child_stack[64 * 1024] __attribute__((aligned(16)));
static volatile int sink;

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

__attribute__((noinline)) static void nap_inner(void)
{
	struct timespec ts = { 100000, 0 };
	while (nanosleep(&ts, NULL) != 0)
		;
	sink++;
}

__attribute__((noinline)) static void nap_outer(void)
{
	nap_inner();
	sink++;
}

static void *napper(void *arg)
{
	tid_nap = my_tid();
	nap_outer();
	return arg;
}

__attribute__((noinline)) static void read_inner(void)
{
	char c;
	while (read(pipefd[0], &c, 1) < 0)
		;
	sink++;
}

static void *reader(void *arg)
{
	tid_read = my_tid();
	read_inner();
	return arg;
}

__attribute__((noinline)) static void handler_wait(void)
{
	for (;;)
		pause();
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_wait();
	sink++;
}

__attribute__((noinline)) static void sig_outer(void)
{
	pthread_kill(pthread_self(), SIGUSR1);
	sink++;
}

static void *sig_thread(void *arg)
{
	tid_sig = my_tid();
	sig_outer();
	return arg;
}

/* The CLONE_VFORK child: shares our memory, runs on its own stack, only makes system calls. */
static int vchild(void *arg)
{
	struct timespec ts = { 60, 0 };
	(void)arg;
	pid_vchild = (pid_t)syscall(SYS_getpid);
	syscall(SYS_nanosleep, &ts, NULL);
	syscall(SYS_exit, 0);
	return 0;
}

__attribute__((noinline)) static void vfork_outer(void)
{
	/* returns when the child exits: meanwhile this thread sleeps uninterruptibly */
	clone(vchild, child_stack + sizeof(child_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	sink++;
}

static void *vfork_thread(void *arg)
{
	tid_vf = my_tid();
	vfork_outer();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t a, b, c, d;
	int with_vfork = argc > 2 && strcmp(argv[2], "vfork") == 0;
	FILE *f;
	char tmp[4096];

	if (argc < 2 || pipe(pipefd) < 0)
		return 64;
	signal(SIGUSR1, on_usr1);
	pthread_create(&a, NULL, napper, NULL);
	pthread_create(&b, NULL, reader, NULL);
	pthread_create(&c, NULL, sig_thread, NULL);
	if (with_vfork) {
		tid_vf = 0;
		pthread_create(&d, NULL, vfork_thread, NULL);
	}
	while (!tid_nap || !tid_read || !tid_sig || !tid_vf || (with_vfork && !pid_vchild))
		usleep(1000);
	usleep(200000); /* everyone settles into its call */
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "main %d\nnap %d\nread %d\nsig %d\n", (int)my_tid(), (int)tid_nap, (int)tid_read, (int)tid_sig);
	if (with_vfork)
		fprintf(f, "vfork %d\nvchild %d\n", (int)tid_vf, (int)pid_vchild);
	fclose(f);
	rename(tmp, argv[1]);
	pthread_join(a, NULL);
	return 0;
}
