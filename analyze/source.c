/* source.c — opening profile input: trace or folded stacks, decided by the first 16 bytes, and
 * traces that do not come from a regular file spooled to a temporary file (source.h). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtt.h"
#include "model_priv.h"

/* Up to n bytes from fd (fewer only at the end of the input). -1 on a read error. */
static ssize_t read_head(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* An unlinked temporary file holding head[0..n) and the rest of fd. -1 with err on failure. */
static int spool(int fd, const void *head, size_t n, const char *path, char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
	int out = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0) {
		/* no O_TMPFILE on this file system: a named file, unlinked at once */
		char tmpl[4096];
		snprintf(tmpl, sizeof(tmpl), "%s/gt-spool.XXXXXX", dir);
		if ((out = mkostemp(tmpl, O_CLOEXEC)) >= 0)
			unlink(tmpl);
	}
	if (out < 0) {
		snprintf(err, errlen, "%s: cannot make a temporary copy in %s: %s", path, dir, strerror(errno));
		return -1;
	}
	char buf[1 << 16];
	const char *p = head;
	ssize_t r = (ssize_t)n;
	for (;;) {
		for (ssize_t done = 0; done < r;) {
			ssize_t w = write(out, p + done, (size_t)(r - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				snprintf(err, errlen, "%s: copying the trace to %s: %s", path, dir, strerror(w < 0 ? errno : ENOSPC));
				close(out);
				return -1;
			}
			done += w;
		}
		do
			r = read(fd, buf, sizeof(buf));
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(out);
			return -1;
		}
		if (r == 0)
			break;
		p = buf;
	}
	return out;
}

static int is_trace_head(const unsigned char *h, size_t n)
{
	return n > 0 && memcmp(h, GTT_MAGIC, n < GTT_MAGIC_LEN ? n : GTT_MAGIC_LEN) == 0;
}

int ana_source_spool_trace(const char *path, int *fd_out, char *err, size_t errlen)
{
	int is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = 0;
	*fd_out = -1;
	if (fd < 0)
		return 0; /* the reader says why it cannot open it */
	if (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) && !is_stdin) {
		close(fd);
		return 0;
	}
	unsigned char head[GTT_HEADER_LEN];
	ssize_t n = read_head(fd, head, sizeof(head));
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = GTT_EIO;
	} else if (n == 0) {
		snprintf(err, errlen, "%s: empty input, not a trace", path);
		rc = GTT_EEMPTY;
	} else if (!is_trace_head(head, (size_t)n)) {
		snprintf(err, errlen, "%s: not a groundtruth trace (no .gtt header)", path);
		rc = GTT_EFORMAT;
	} else if ((*fd_out = spool(fd, head, (size_t)n, path, err, errlen)) < 0) {
		rc = GTT_EIO;
	}
	if (!is_stdin)
		close(fd);
	return rc;
}

int ana_source_open(ana_source *src, const char *path, const ana_opts *o, char *err, size_t errlen)
{
	int is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	FILE *rest = NULL;
	struct stat st;
	int rc = 0;
	memset(src, 0, sizeof(*src));
	err[0] = 0;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return GTT_EIO;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		close(fd);
		return GTT_EIO;
	}
	unsigned char head[GTT_HEADER_LEN];
	ssize_t n = read_head(fd, head, sizeof(head));
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = GTT_EIO;
		goto out;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: empty input", path);
		rc = GTT_EEMPTY;
		goto out;
	}
	if (is_trace_head(head, (size_t)n)) {
		char proc[64];
		const char *load_path = path;
		int tfd = -1;
		if (is_stdin || !S_ISREG(st.st_mode)) {
			if ((tfd = spool(fd, head, (size_t)n, path, err, errlen)) < 0) {
				rc = GTT_EIO;
				goto out;
			}
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tfd);
			load_path = proc;
		}
		src->model = ana_model_load_named(load_path, is_stdin ? "stdin" : path, o, err, errlen);
		if (tfd >= 0)
			close(tfd);
		if (!src->model) {
			if (!err[0])
				snprintf(err, errlen, "%s: cannot load the trace", path);
			rc = GTT_ECORRUPT;
		}
		goto out;
	}
	/* folded text: the 16 bytes read, then the rest, streamed */
	if (!(rest = fdopen(is_stdin ? dup(fd) : fd, "r"))) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = GTT_EIO;
		goto out;
	}
	if (!is_stdin)
		fd = -1; /* closed with rest */
	rc = ana_fold_parse_stream(head, (size_t)n, rest, &src->folded, &src->info);
	if (rc == GTT_EFORMAT)
		snprintf(err, errlen, "%s: not a .gtt trace or folded stacks: %s", path, src->info.why);
	else if (rc == GTT_EIO)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else if (rc < 0)
		snprintf(err, errlen, "%s: out of memory", path);
	else if (src->folded.n == 0 && src->info.n_bad) {
		snprintf(err, errlen, "%s: not a .gtt trace or folded stacks (line %zu is not \"frame;frame;... COUNT\")",
		         path, src->info.first_bad_line);
		rc = GTT_EFORMAT;
	} else if (src->folded.n == 0) {
		snprintf(err, errlen, "%s: no stacks in input", path);
		rc = GTT_EEMPTY;
	}
out:
	if (rest)
		fclose(rest);
	if (fd >= 0 && !is_stdin)
		close(fd);
	if (rc < 0)
		ana_source_close(src);
	return rc;
}

void ana_source_close(ana_source *src)
{
	if (!src)
		return;
	ana_model_free(src->model);
	src->model = NULL;
	ana_folded_free(&src->folded);
}
