/* procthread.c — one thread's state, system call, wait channel and kernel stack from /proc. */
#include "procthread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read a small /proc file into buf (NUL-terminated). Bytes read, or -errno. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0, got = 0;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((size_t)got + 1 < len && (n = read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	if (got == 0 && n < 0) {
		int e = errno;
		close(fd);
		return e == ESRCH ? -ESRCH : -e;
	}
	close(fd);
	buf[got] = 0;
	return got;
}

int rec_pt_read(pid_t pid, pid_t tid, rec_pt_state *out)
{
	char fn[96], buf[1024], *p, *tok, *save = NULL;
	long ticks = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int field;

	memset(out, 0, sizeof(*out));
	out->syscall = REC_PT_SC_UNKNOWN;
	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if ((n = slurp(fn, buf, sizeof(buf))) < 0)
		return (int)n;
	/* "tid (comm) S ppid ...": comm may hold spaces and parentheses; it ends at the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -ESRCH;
	{
		char *o = strchr(buf, '(');
		size_t k = o && o < p ? (size_t)(p - o - 1) : 0;
		if (k >= sizeof(out->name))
			k = sizeof(out->name) - 1;
		if (o)
			memcpy(out->name, o + 1, k);
		out->name[k] = 0;
	}
	out->state = p[2];
	/* fields from 3 (state) on; utime is 14, stime 15 */
	for (field = 3, tok = strtok_r(p + 2, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
		if (field == 14)
			out->utime_ns = strtoull(tok, NULL, 10) * (1000000000ull / (uint64_t)(ticks > 0 ? ticks : 100));
		else if (field == 15) {
			out->stime_ns = strtoull(tok, NULL, 10) * (1000000000ull / (uint64_t)(ticks > 0 ? ticks : 100));
			break;
		}
	}
	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (slurp(fn, buf, sizeof(buf)) > 0) {
		char *v = strstr(buf, "\nvoluntary_ctxt_switches:");
		char *nv = strstr(buf, "\nnonvoluntary_ctxt_switches:");
		if (v)
			out->nvcsw = strtoull(v + 25, NULL, 10);
		if (nv)
			out->nivcsw = strtoull(nv + 28, NULL, 10);
	}
	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/wchan", (int)pid, (int)tid);
	if (slurp(fn, buf, sizeof(out->wchan)) > 0 && strcmp(buf, "0") != 0)
		memcpy(out->wchan, buf, sizeof(out->wchan)); /* slurp NUL-terminated it inside */
	/* "running", or "NR arg1..arg6 sp pc" (needs the same access as ptrace) */
	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (slurp(fn, buf, sizeof(buf)) > 0) {
		unsigned long long a[8];
		long nr;
		if (strncmp(buf, "running", 7) == 0) {
			out->syscall = REC_PT_SC_NONE;
		} else if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3],
		                  &a[4], &a[5], &a[6], &a[7]) == 9) {
			int i;
			out->syscall = nr; /* -1: blocked but not in a system call (a page fault) */
			for (i = 0; i < 6; i++)
				out->args[i] = a[i];
			out->sp = a[6];
			out->pc = a[7];
		} else if (sscanf(buf, "%ld 0x%llx 0x%llx", &nr, &a[0], &a[1]) == 3 && nr == -1) {
			out->syscall = REC_PT_SC_NONE;
			out->sp = a[0];
			out->pc = a[1];
		}
	}
	return 0;
}

int rec_pt_cpu_ns(pid_t pid, pid_t tid, uint64_t *ns)
{
	char fn[96], buf[1024], *p, *tok, *save = NULL;
	long ticks = sysconf(_SC_CLK_TCK);
	uint64_t sum = 0;
	ssize_t n;
	int field;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if ((n = slurp(fn, buf, sizeof(buf))) < 0)
		return (int)n;
	if (!(p = strrchr(buf, ')')) || p[1] != ' ')
		return -ESRCH;
	for (field = 3, tok = strtok_r(p + 2, " ", &save); tok && field <= 15; tok = strtok_r(NULL, " ", &save), field++)
		if (field == 14 || field == 15)
			sum += strtoull(tok, NULL, 10);
	*ns = sum * (1000000000ull / (uint64_t)(ticks > 0 ? ticks : 100));
	return 0;
}

int rec_pt_kernel_stack(pid_t pid, pid_t tid, char (*names)[64], int cap)
{
	char fn[96], buf[4096], *line, *save = NULL;
	ssize_t n;
	int k = 0;

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stack", (int)pid, (int)tid);
	if ((n = slurp(fn, buf, sizeof(buf))) < 0)
		return (int)n;
	for (line = strtok_r(buf, "\n", &save); line && k < cap; line = strtok_r(NULL, "\n", &save)) {
		/* "[<0>] futex_wait_queue+0x60/0x90" */
		char *s = strchr(line, ']');
		size_t len;
		s = s ? s + 1 : line;
		while (*s == ' ')
			s++;
		len = strcspn(s, "+ ");
		if (len == 0)
			continue;
		if (len >= 64)
			len = 63;
		memcpy(names[k], s, len);
		names[k][len] = 0;
		k++;
	}
	return k;
}

const char *rec_pt_state_word(char state, char *buf, size_t len)
{
	switch (state) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "traced";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	case 'P': return "parked";
	default:
		snprintf(buf, len, "state %c", state ? state : '?');
		return buf;
	}
}
