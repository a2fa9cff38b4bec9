/* child.c — fork, hold, release and reap the command gt-record records (launch mode), and the
 * recorder's scheduling beside it. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtt.h"

#define REAP_POLL_US 10000

int rec_child_spawn(rec_child *c, char *const *argv, void (*before_exec)(const void *ctx), const void *ctx)
{
	int go[2], ex[2], e;
	pid_t pid;

	c->pid = 0;
	c->alive = 0;
	c->exec_errno = 0;
	c->go_fd = c->exec_fd = -1;
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(ex, O_CLOEXEC) < 0) {
		e = errno;
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(go[0]);
		close(go[1]);
		close(ex[0]);
		close(ex[1]);
		return -e;
	}
	if (pid == 0) {
		char ch;
		sigset_t none;

		close(go[1]);
		close(ex[0]);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (read(go[0], &ch, 1) != 1)
			_exit(127);
		if (before_exec)
			before_exec(ctx);
		execvp(argv[0], argv);
		/* the exec pipe is close-on-exec: it brings the errno only when exec failed */
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	c->pid = pid;
	c->alive = 1;
	c->go_fd = go[1];
	c->exec_fd = ex[0];
	return 0;
}

int rec_child_release(rec_child *c)
{
	int e = 0, rc = 0;
	ssize_t n;

	if (write(c->go_fd, "g", 1) != 1) {
		rc = -errno;
		goto out;
	}
	close(c->go_fd);
	c->go_fd = -1;
	n = read(c->exec_fd, &e, sizeof(e));
	if (n == (ssize_t)sizeof(e)) {
		c->exec_errno = e > 0 ? e : ENOEXEC;
		rc = -c->exec_errno;
	}
out:
	rec_child_close(c);
	return rc;
}

int rec_child_reap(rec_child *c, uint64_t wait_ns)
{
	uint64_t until = gtt_now_ns() + wait_ns;

	if (!c->alive)
		return 1;
	for (;;) {
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r == c->pid) {
			c->alive = 0;
			c->wait_status = st;
			return 1;
		}
		if (r < 0 && errno != EINTR) {
			c->alive = 0;
			c->wait_status = 0;
			return 1;
		}
		if (gtt_now_ns() >= until)
			return 0;
		usleep(REAP_POLL_US);
	}
}

void rec_child_close(rec_child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->exec_fd >= 0)
		close(c->exec_fd);
	c->go_fd = c->exec_fd = -1;
}

int rec_child_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return 1;
}

int rec_child_sched_recorder(void)
{
	const char *k = getenv("GT_RECORD_SCHED");
	if (k && strcmp(k, "normal") == 0)
		return 0;
	/* the policy of this thread only (and so of threads it creates): the real-time loops of
	 * the Python reader set their own */
	struct sched_param sp = { .sched_priority = 0 };
	return sched_setscheduler(0, SCHED_BATCH, &sp) == 0;
}
