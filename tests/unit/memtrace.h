/* memtrace.h — a trace written by the real writer into memory (a memfd) and read back whole, for
 * unit tests that build their own traces. */
#ifndef MEMTRACE_H
#define MEMTRACE_H
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"

/* A writer with options o on a new memfd, which *fd keeps for memtrace_close. Aborts on failure. */
static inline gtt_writer *memtrace_open(const char *name, const gtt_writer_opts *o, int *fd)
{
	int err = 0;
	gtt_writer *w = NULL;
	*fd = memfd_create(name, MFD_CLOEXEC);
	if (*fd < 0 || !(w = gtt_writer_fdopen_opts(dup(*fd), 0, o, &err)))
		abort();
	return w;
}

/* Close the writer and return the trace's bytes (malloc'd, *n of them); the memfd is closed. */
static inline uint8_t *memtrace_close(gtt_writer *w, int fd, size_t *n)
{
	if (gtt_writer_close(w) != 0)
		abort();
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *p = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (!p || pread(fd, p, (size_t)len, 0) != len)
		abort();
	close(fd);
	*n = (size_t)len;
	return p;
}
#endif
