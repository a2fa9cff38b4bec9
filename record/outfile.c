/* outfile.c — gt-record's output file: exclusive creation, flock against a second recorder,
 * PATH.tmp-XXXXXX beside an existing file and an atomic swap into place (PATH.old keeps it). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define OPEN_ATTEMPTS 4 /* the path changing under us between a look and an open */

struct rec_out {
	char path[PATH_MAX];
	char old[PATH_MAX + 8];      /* PATH.old */
	char name[PATH_MAX + 16];    /* where the trace is: path, or PATH.tmp-XXXXXX */
	int fd;                      /* the trace, flocked */
	int old_fd;                  /* the file that was at path, flocked until the commit; -1 */
	int old_at_old_fd;           /* PATH.old, flocked until the commit; -1 */
	int committed;               /* the trace is where it stays */
};

/* renameat2 through the system call: glibc has a wrapper only since 2.28. */
static int rename2(const char *from, const char *to, unsigned flags)
{
#ifdef SYS_renameat2
	return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
#else
	(void)from;
	(void)to;
	(void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

/* Move from to to unless to exists: renameat2(NOREPLACE), else link + unlink. 0 or -errno. */
static int move_noreplace(const char *from, const char *to)
{
	if (rename2(from, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
		return -errno;
	if (link(from, to) < 0)
		return -errno;
	unlink(from);
	return 0;
}

/* Why a non-regular file at p is refused. */
static void refuse_kind(const char *p, mode_t mode, char *err, size_t errlen)
{
	if (S_ISLNK(mode))
		snprintf(err, errlen, "%s is a symbolic link; gt-record writes only to a file of its own "
		         "(remove the link or choose another -o)", p);
	else if (S_ISDIR(mode))
		snprintf(err, errlen, "%s is a directory (choose a file name with -o)", p);
	else
		snprintf(err, errlen, "%s is not a regular file (choose another -o)", p);
}

/* Open and flock an existing regular file p (never through a link): the descriptor, -1 when
 * it cannot be opened for reading (it cannot be locked then; it can still be moved), or
 * -errno: -EBUSY another gt-record holds it, -ENOENT it is gone, -EINVAL it is not a regular
 * file (reason in err). */
static int lock_existing(const char *p, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), e;

	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP) {
			refuse_kind(p, S_IFLNK, err, errlen);
			return -EINVAL;
		}
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		refuse_kind(p, st.st_mode, err, errlen);
		close(fd);
		return -EINVAL;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		e = errno;
		close(fd);
		if (e == EWOULDBLOCK) {
			snprintf(err, errlen, "%s is being written by another gt-record (choose another -o)", p);
			return -EBUSY;
		}
		return -1; /* no locks on this file system: go on unlocked */
	}
	return fd;
}

/* path exists: check it and PATH.old, then make the temporary file beside it. 0, -EAGAIN
 * (path vanished: look again), or -errno with the reason in err. */
static int open_beside(rec_out *o, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	rc = lock_existing(o->path, err, errlen);
	if (rc == -ENOENT)
		return -EAGAIN;
	if (rc < -1)
		return rc;
	o->old_fd = rc;
	if (lstat(o->old, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			refuse_kind(o->old, st.st_mode, err, errlen);
			return -EISDIR;
		}
		if (S_ISREG(st.st_mode)) {
			rc = lock_existing(o->old, err, errlen);
			if (rc < -1 && rc != -ENOENT)
				return rc;
			o->old_at_old_fd = rc;
		}
	}
	snprintf(o->name, sizeof(o->name), "%s.tmp-XXXXXX", o->path);
	o->fd = mkostemp(o->name, O_CLOEXEC); /* O_EXCL, mode 0600 */
	if (o->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create a file beside %s: %s", o->path, strerror(-rc));
		return rc;
	}
	flock(o->fd, LOCK_EX);
	return 0;
}

rec_out *rec_out_open(const char *path, char *err, size_t errlen)
{
	rec_out *o = calloc(1, sizeof(*o));
	struct stat st;
	int attempt, rc = -EAGAIN;

	if (!o) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	o->fd = o->old_fd = o->old_at_old_fd = -1;
	if (strlen(path) + 16 >= sizeof(o->path)) {
		snprintf(err, errlen, "%.64s...: %s", path, strerror(ENAMETOOLONG));
		goto fail;
	}
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->old, sizeof(o->old), "%s.old", path);
	for (attempt = 0; attempt < OPEN_ATTEMPTS && rc == -EAGAIN; attempt++) {
		if (lstat(path, &st) == 0) {
			if (!S_ISREG(st.st_mode)) {
				refuse_kind(path, st.st_mode, err, errlen);
				goto fail;
			}
			rc = open_beside(o, err, errlen);
			continue;
		}
		if (errno != ENOENT) {
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
			goto fail;
		}
		/* nothing there: the trace is path itself from the start */
		o->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (o->fd >= 0) {
			flock(o->fd, LOCK_EX);
			snprintf(o->name, sizeof(o->name), "%s", path);
			o->committed = 1;
			rc = 0;
		} else if (errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
			goto fail;
		}
	}
	if (rc == 0)
		return o;
	if (rc == -EAGAIN)
		snprintf(err, errlen, "%s keeps changing while gt-record opens it", path);
fail:
	rec_out_close(o);
	return NULL;
}

int rec_out_fd(const rec_out *o)
{
	return o->fd;
}

const char *rec_out_name(const rec_out *o)
{
	return o->name;
}

/* Release the locks on the files that were at path and PATH.old. */
static void drop_old(rec_out *o)
{
	if (o->old_fd >= 0)
		close(o->old_fd);
	if (o->old_at_old_fd >= 0)
		close(o->old_at_old_fd);
	o->old_fd = o->old_at_old_fd = -1;
}

int rec_out_commit(rec_out *o, char *note, size_t len)
{
	int rc = 0;

	note[0] = 0;
	if (o->committed)
		return 0;
	/* one atomic step when the file system can: path never goes missing, so no other
	 * recorder can slip a file of its own in between */
	if (rename2(o->name, o->path, RENAME_EXCHANGE) == 0) {
		if (rename(o->name, o->old) == 0)
			snprintf(note, len, "previous %s kept as %s", o->path, o->old);
		else
			snprintf(note, len, "previous %s kept as %s (%s: %s)", o->path, o->name, o->old, strerror(errno));
		snprintf(o->name, sizeof(o->name), "%s", o->path);
		goto done;
	}
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) {
		rc = -errno;
		snprintf(note, len, "cannot move the trace to %s: %s; it is %s", o->path, strerror(-rc), o->name);
		return rc;
	}
	if (rename(o->path, o->old) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(note, len, "cannot keep %s as %s: %s; the trace is %s", o->path, o->old, strerror(-rc), o->name);
		return rc;
	}
	if ((rc = move_noreplace(o->name, o->path)) < 0) {
		snprintf(note, len, "cannot move the trace to %s: %s; it is %s", o->path, strerror(-rc), o->name);
		return rc;
	}
	snprintf(note, len, "previous %s kept as %s", o->path, o->old);
	snprintf(o->name, sizeof(o->name), "%s", o->path);
done:
	o->committed = 1;
	drop_old(o);
	return 0;
}

int rec_out_discard(rec_out *o)
{
	struct stat mine, there;

	if (!o || o->fd < 0)
		return 0;
	if (fstat(o->fd, &mine) < 0 || lstat(o->name, &there) < 0)
		return -errno;
	if (mine.st_dev != there.st_dev || mine.st_ino != there.st_ino)
		return -ESTALE; /* the name leads elsewhere now: not ours to remove */
	return unlink(o->name) < 0 ? -errno : 0;
}

void rec_out_close(rec_out *o)
{
	if (!o)
		return;
	drop_old(o);
	if (o->fd >= 0)
		close(o->fd);
	free(o);
}
