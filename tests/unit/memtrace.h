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

/* Write recs[0..n) to a trace of format 1.minor in memory, read it back and call fn for every
 * record of tag (pointers in it valid during the call only). The number of such records read,
 * or -1 when the trace does not open. */
static inline int memtrace_roundtrip(uint32_t minor, const gtt_record *recs, int n, uint32_t tag,
                                     void (*fn)(void *ctx, const gtt_record *r), void *ctx)
{
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	int fd, err = 0, got = 0;
	gtt_writer *w = memtrace_open("roundtrip", &o, &fd);
	for (int i = 0; i < n; i++)
		gtt_write(w, &recs[i]);
	size_t len;
	uint8_t *bytes = memtrace_close(w, fd, &len);
	gtt_reader *rd = gtt_reader_open_mem(bytes, len, &err);
	gtt_record back;
	while (rd && gtt_reader_next(rd, &back) == 1)
		if (back.tag == tag) {
			fn(ctx, &back);
			got++;
		}
	gtt_reader_close(rd);
	free(bytes);
	return rd ? got : -1;
}
#endif
