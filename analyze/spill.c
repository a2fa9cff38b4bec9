/* spill.c — per-key runs of fixed-size entries, set aside in a temporary file past a memory
 * budget (spill.h). The file is this process's scratch, read back only by it: a block is a
 * header (the next block of its key, its entry count: host-order uint64s) and the entries as
 * they were given. A key's blocks are chained forward: writing a block patches the next-field
 * of the key's previous one, so that a key costs a few words however many blocks it has. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_util.h"
#include "gtt.h"
#include "spill.h"

#define NONE UINT64_MAX
#define HEADER_BYTES 16
#define READ_BYTES (64u << 10)

typedef struct key_run {
	unsigned char *buf;    /* entries not written out yet */
	size_t n, cap;
	uint64_t first_off, last_off; /* its first and last block in the file, NONE when none */
	uint64_t count;
} key_run;

struct ana_spill {
	size_t entry_bytes, budget;
	key_run *keys;
	size_t n_keys, cap_keys;
	size_t n_buffered;     /* entries in memory, all keys */
	int fd;                /* -1 until the first block */
	uint64_t size;
	char err[320];
};

ana_spill *ana_spill_new(size_t entry_bytes, size_t buf_bytes)
{
	ana_spill *s = entry_bytes ? calloc(1, sizeof(*s)) : NULL;
	if (!s)
		return NULL;
	s->entry_bytes = entry_bytes;
	s->budget = buf_bytes ? buf_bytes : 1u << 20;
	s->fd = -1;
	return s;
}

void ana_spill_free(ana_spill *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->n_keys; k++)
		free(s->keys[k].buf);
	free(s->keys);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

const char *ana_spill_error(const ana_spill *s)
{
	return s->err;
}

uint64_t ana_spill_count(const ana_spill *s, uint32_t key)
{
	return key < s->n_keys ? s->keys[key].count : 0;
}

uint64_t ana_spill_file_bytes(const ana_spill *s)
{
	return s->size;
}

static const char *tmp_dir(void)
{
	const char *d = getenv("TMPDIR");
	return d && d[0] ? d : "/tmp";
}

/* The error's words, once (the first one is the cause). GTT_EIO. */
static int fail(ana_spill *s, int err)
{
	if (!s->err[0])
		snprintf(s->err, sizeof(s->err), "a temporary file in %s: %s", tmp_dir(), strerror(err ? err : EIO));
	return GTT_EIO;
}

static int pwrite_all(ana_spill *s, const void *p, size_t len, uint64_t off)
{
	const unsigned char *b = p;
	while (len) {
		ssize_t n = pwrite(s->fd, b, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(s, n < 0 ? errno : ENOSPC);
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int pread_all(ana_spill *s, void *p, size_t len, uint64_t off)
{
	unsigned char *b = p;
	while (len) {
		ssize_t n = pread(s->fd, b, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(s, n < 0 ? errno : EIO);
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int open_file(ana_spill *s)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/gt-analyze-spill-XXXXXX", tmp_dir()) >= (int)sizeof(path))
		return fail(s, ENAMETOOLONG);
	if ((s->fd = mkostemp(path, O_CLOEXEC)) < 0)
		return fail(s, errno);
	unlink(path); /* nothing left behind, whatever happens next */
	return 0;
}

/* Every key's buffered entries as one block each, their memory given back. 0 or GTT_EIO. */
static int write_out(ana_spill *s)
{
	int rc = s->fd < 0 ? open_file(s) : 0;
	for (size_t k = 0; rc == 0 && k < s->n_keys; k++) {
		key_run *r = &s->keys[k];
		if (!r->n)
			continue;
		uint64_t hdr[2] = { NONE, r->n }, off = s->size;
		size_t len = r->n * s->entry_bytes;
		if ((rc = pwrite_all(s, hdr, sizeof(hdr), off)) < 0 || (rc = pwrite_all(s, r->buf, len, off + HEADER_BYTES)) < 0)
			break;
		/* the key's previous block leads here */
		if (r->last_off != NONE && (rc = pwrite_all(s, &off, sizeof(off), r->last_off)) < 0)
			break;
		if (r->first_off == NONE)
			r->first_off = off;
		r->last_off = off;
		s->size = off + HEADER_BYTES + len;
		free(r->buf);
		r->buf = NULL;
		r->n = r->cap = 0;
	}
	s->n_buffered = 0;
	return rc;
}

int ana_spill_add(ana_spill *s, uint32_t key, const void *entry)
{
	if (s->err[0])
		return GTT_EIO;
	if (key >= s->n_keys) {
		if (GT_GROW(s->keys, s->cap_keys, (size_t)key + 1) < 0)
			return GTT_ENOMEM;
		for (size_t k = s->n_keys; k <= key; k++)
			s->keys[k] = (key_run){ .first_off = NONE, .last_off = NONE };
		s->n_keys = (size_t)key + 1;
	}
	key_run *r = &s->keys[key];
	if (gt_grow((void **)&r->buf, &r->cap, r->n + 1, s->entry_bytes) < 0)
		return GTT_ENOMEM;
	memcpy(r->buf + r->n * s->entry_bytes, entry, s->entry_bytes);
	r->n++;
	r->count++;
	s->n_buffered++;
	return s->n_buffered * s->entry_bytes >= s->budget ? write_out(s) : 0;
}

int ana_spill_iter_begin(ana_spill *s, uint32_t key, ana_spill_iter *it)
{
	memset(it, 0, sizeof(*it));
	it->s = s;
	it->key = key;
	it->off = key < s->n_keys ? s->keys[key].first_off : NONE;
	if (it->off != NONE) {
		it->cap_buf = READ_BYTES / s->entry_bytes + 1;
		if (!(it->buf = malloc(it->cap_buf * s->entry_bytes)))
			return GTT_ENOMEM;
	}
	return 0;
}

int ana_spill_iter_next(ana_spill_iter *it, const void **entry)
{
	ana_spill *s = it->s;
	size_t eb = s->entry_bytes;
	for (;;) {
		if (it->i_buf < it->n_buf) {
			*entry = it->buf + it->i_buf++ * eb;
			return 1;
		}
		if (it->left) {
			size_t n = it->left < it->cap_buf ? (size_t)it->left : it->cap_buf;
			if (pread_all(s, it->buf, n * eb, it->at) < 0)
				return GTT_EIO;
			it->at += n * eb;
			it->left -= n;
			it->n_buf = n;
			it->i_buf = 0;
			continue;
		}
		if (it->off != NONE) {
			uint64_t hdr[2];
			if (pread_all(s, hdr, sizeof(hdr), it->off) < 0)
				return GTT_EIO;
			it->at = it->off + HEADER_BYTES;
			it->left = hdr[1];
			it->off = hdr[0];
			continue;
		}
		if (it->key < s->n_keys && it->mem < s->keys[it->key].n) {
			*entry = s->keys[it->key].buf + it->mem++ * eb;
			return 1;
		}
		return 0;
	}
}

void ana_spill_iter_end(ana_spill_iter *it)
{
	free(it->buf);
	it->buf = NULL;
}
