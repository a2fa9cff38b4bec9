/* textin.h — the one reader of line-oriented text input (folded stacks, `perf script` text) and
 * the one parser of the counts in it, so that every tool reads the same file the same way:
 * - a line ends at LF, CR LF or a lone CR (a CR LF or CR-only file is not one long line, and its
 *   blank lines stay blank); a UTF-8 byte-order mark before the first line is dropped;
 * - text holds no NUL byte: a file with one is binary data and is refused, naming the line;
 * - a line is at most ANA_LINE_MAX bytes: longer is refused (/dev/zero, a binary file), so
 *   memory stays bounded whatever the input;
 * - a count is decimal digits that fit in 64 bits; a larger one is not a count.
 * Return rule (as the rest of analyze/): 0 or a negative GTT_E* code; a refusal (GTT_EFORMAT)
 * comes with a one-line reason from ana_lines_why(). */
#ifndef ANA_TEXTIN_H
#define ANA_TEXTIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ANA_LINE_MAX (64u << 20)

typedef struct ana_lines ana_lines;

/* Called for each line, without its terminator; a negative return stops the reading and is
 * returned by ana_lines_feed / ana_lines_finish / ana_lines_read. lineno counts from 1. */
typedef int (*ana_line_fn)(void *ctx, const char *s, size_t len, uint64_t lineno);

/* A reader that calls fn(ctx, ...) for each line. NULL on ENOMEM. */
ana_lines *ana_lines_create(ana_line_fn fn, void *ctx);
void ana_lines_destroy(ana_lines *lr);
/* Input in pieces of any size (a line may straddle pieces). 0, GTT_ENOMEM, GTT_EFORMAT (a NUL
 * byte or an over-long line), or fn's negative return. */
int ana_lines_feed(ana_lines *lr, const char *data, size_t len);
/* End of input: the last line when it has no terminator. Same returns. */
int ana_lines_finish(ana_lines *lr);
/* A whole stream through feed and finish; GTT_EIO on a read error (errno kept). */
int ana_lines_read(ana_lines *lr, FILE *in);
/* Lines seen so far. */
uint64_t ana_lines_count(const ana_lines *lr);
/* Why the input was refused ("NUL byte at line 3: binary data, not text"), "" when it was not. */
const char *ana_lines_why(const ana_lines *lr);

/* s[0..len) as a count: 0, or -1 when it is not all decimal digits or does not fit in 64 bits. */
int ana_parse_count(const char *s, size_t len, uint64_t *v);

#endif
