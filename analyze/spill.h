/* spill.h — entries of one fixed size appended per key (a thread) and read back per key in the
 * order they came, with bounded memory: what is buffered beyond a budget goes to a temporary
 * file (in $TMPDIR, else /tmp; unlinked at once, so nothing is left behind), where each key's
 * blocks are chained. What stays in memory follows the number of keys, not of entries. Made for
 * the exports that walk every sample of a thread in time order (speedscope) without keeping the
 * samples (docs/ANALYZE.md, "What the loader's memory follows").
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects; the file's
 * errors are GTT_EIO with the words in ana_spill_error(). */
#ifndef ANA_SPILL_H
#define ANA_SPILL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ana_spill ana_spill;

/* Entries of entry_bytes each; at most about buf_bytes of them buffered in memory before all
 * are written out (0: 1 MiB). The file is made at the first write. NULL on ENOMEM. */
ana_spill *ana_spill_new(size_t entry_bytes, size_t buf_bytes);
void ana_spill_free(ana_spill *s); /* NULL ok */
/* Append entry to key's run. 0, GTT_ENOMEM, or GTT_EIO (the temporary file could not be made or
 * written: a full disk); after an error every call fails the same way. */
int ana_spill_add(ana_spill *s, uint32_t key, const void *entry);
/* How many entries key has. */
uint64_t ana_spill_count(const ana_spill *s, uint32_t key);
/* The bytes written to the temporary file so far (0: everything stayed in memory). */
uint64_t ana_spill_file_bytes(const ana_spill *s);
/* The first error's words ("a temporary file in /tmp: No space left on device"), "" when none. */
const char *ana_spill_error(const ana_spill *s);

/* Reading one key's entries back in order; no ana_spill_add while one is open. */
typedef struct ana_spill_iter {
	ana_spill *s;
	uint32_t key;
	uint64_t off;          /* the block being read (UINT64_MAX: the blocks are done) */
	uint64_t left;         /* its entries not read yet */
	uint64_t at;           /* where the next of them lies in the file */
	size_t mem;            /* the next buffered entry, after the blocks */
	unsigned char *buf;    /* entries read from the file */
	size_t n_buf, i_buf, cap_buf;
} ana_spill_iter;
/* 0 or GTT_ENOMEM. */
int ana_spill_iter_begin(ana_spill *s, uint32_t key, ana_spill_iter *it);
/* 1 with *entry (valid until the next call), 0 at the end, GTT_EIO on a read error. */
int ana_spill_iter_next(ana_spill_iter *it, const void **entry);
void ana_spill_iter_end(ana_spill_iter *it);

#endif
