/* outfile.c — output files written beside their target and renamed into place (outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtt.h"
#include "outfile.h"

/* the temporary file being written, for ana_out_signal_cleanup (one output at a time) */
static char *volatile pending_tmp;

struct ana_out {
	FILE *f;
	char *path;  /* the final name; NULL for stdout */
	char *tmp;   /* the temporary name; NULL when written in place */
};

/* 1 when the regular file at path starts with the trace magic */
static int is_trace(const char *path)
{
	char head[GTT_MAGIC_LEN];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), yes = 0;
	if (fd < 0)
		return 0;
	yes = read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) && memcmp(head, GTT_MAGIC, GTT_MAGIC_LEN) == 0;
	close(fd);
	return yes;
}

/* Why path must not be written, or NULL. st: path's stat (followed), when it exists. */
static const char *refusal(const char *path, const struct stat *st, const char *const *inputs)
{
	for (size_t i = 0; inputs && inputs[i]; i++) {
		struct stat in;
		if (strcmp(inputs[i], "-") != 0 && stat(inputs[i], &in) == 0 && in.st_dev == st->st_dev &&
		    in.st_ino == st->st_ino)
			return "is also an input of this command: not written over";
	}
	if (S_ISREG(st->st_mode) && is_trace(path))
		return "is a groundtruth trace: not written over (choose another output name)";
	return NULL;
}

static ana_out *in_place(const char *path, char *err, size_t errlen)
{
	ana_out *o = calloc(1, sizeof(*o));
	if (!o) {
		snprintf(err, errlen, "%s: out of memory", path ? path : "stdout");
		return NULL;
	}
	if (!path) {
		o->f = stdout;
		return o;
	}
	if (!(o->f = fopen(path, "w")) || !(o->path = strdup(path))) {
		snprintf(err, errlen, "%s: %s", path, o->f ? "out of memory" : strerror(errno));
		if (o->f)
			fclose(o->f);
		free(o);
		return NULL;
	}
	return o;
}

ana_out *ana_out_open(const char *path, const char *const *inputs, char *err, size_t errlen)
{
	struct stat st, lst;
	err[0] = 0;
	if (!path || strcmp(path, "-") == 0)
		return in_place(NULL, err, errlen);
	int exists = stat(path, &st) == 0;
	const char *why = exists ? refusal(path, &st, inputs) : NULL;
	if (why) {
		snprintf(err, errlen, "%s %s", path, why);
		return NULL;
	}
	if (exists && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
		return NULL;
	}
	/* a device, FIFO or terminal (followed through links: /dev/stdout) is written where it is */
	if (exists && !S_ISREG(st.st_mode))
		return in_place(path, err, errlen);
	memset(&lst, 0, sizeof(lst));
	if (lstat(path, &lst) == 0 && !S_ISREG(lst.st_mode) && !S_ISLNK(lst.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return NULL;
	}
	ana_out *o = calloc(1, sizeof(*o));
	size_t n = strlen(path) + sizeof(".tmp-XXXXXX");
	int fd = -1;
	if (!o || !(o->path = strdup(path)) || !(o->tmp = malloc(n))) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	snprintf(o->tmp, n, "%s.tmp-XXXXXX", path);
	if ((fd = mkostemp(o->tmp, O_CLOEXEC)) < 0) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		/* a directory we may not create in, holding a file we may write (not a link): that
		 * file is written in place, as any tool would (a failed write then leaves it cut) */
		if ((e == EACCES || e == EPERM || e == EROFS) && exists && S_ISREG(lst.st_mode) &&
		    access(path, W_OK) == 0) {
			free(o->path);
			free(o);
			return in_place(path, err, errlen);
		}
		snprintf(err, errlen, "%s: cannot create a file in its directory: %s", path, strerror(e));
		goto fail;
	}
	/* what fopen(path, "w") would have made: 0666 less the umask (mkostemp makes 0600) */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
		snprintf(err, errlen, "%s: %s", o->tmp, strerror(errno));
		goto fail;
	}
	pending_tmp = o->tmp;
	return o;
fail:
	if (fd >= 0) {
		close(fd);
		unlink(o->tmp);
	}
	if (o) {
		free(o->tmp);
		free(o->path);
		free(o);
	}
	return NULL;
}

FILE *ana_out_stream(const ana_out *o)
{
	return o->f;
}

int ana_out_close(ana_out *o, int ok, char *err, size_t errlen)
{
	int rc = 0;
	if (!o)
		return 0;
	const char *name = o->path ? o->path : "stdout";
	if (ok && (fflush(o->f) != 0 || ferror(o->f))) {
		snprintf(err, errlen, "writing %s: %s", name, strerror(errno ? errno : EIO));
		rc = GTT_EIO;
	}
	if (o->f != stdout && fclose(o->f) != 0 && ok && !rc) {
		snprintf(err, errlen, "writing %s: %s", name, strerror(errno));
		rc = GTT_EIO;
	}
	if (o->tmp) {
		pending_tmp = NULL;
		if (ok && !rc && rename(o->tmp, o->path) != 0) {
			snprintf(err, errlen, "%s: cannot put the output in place: %s", name, strerror(errno));
			rc = GTT_EIO;
		}
		if (!ok || rc)
			unlink(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	free(o);
	return ok ? rc : 0;
}

void ana_out_signal_cleanup(void)
{
	char *tmp = pending_tmp;
	if (tmp)
		unlink(tmp);
}
