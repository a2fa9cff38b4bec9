/* source.h — "a trace or folded stacks?": the one opener of profile input, for gt-render and
 * gt-analyze diff/check, and the one place where input that is not a regular file is made safe
 * to read. The first 16 bytes decide, before anything else is read:
 * - a .gtt header makes it a trace, loaded into a model; a trace on stdin, a pipe or a device is
 *   first copied to an unlinked temporary file ($TMPDIR or /tmp), so memory stays bounded and
 *   the reader can map it;
 * - anything else is folded text, streamed through textin.h's rules (binary data such as
 *   /dev/zero is refused at its first NUL byte, never read whole).
 * Return rule: 0 or a negative GTT_E* code, with a one-line reason in err. */
#ifndef ANA_SOURCE_H
#define ANA_SOURCE_H

#include <stddef.h>

#include "fold.h"
#include "model.h"

typedef struct ana_source {
	ana_model *model;             /* a trace: the loaded model; NULL for folded input */
	ana_folded folded;            /* folded input: its lines in file order (empty for a trace) */
	ana_fold_parse_info info;     /* what parsing the folded text found (bad lines) */
} ana_source;

/* Open path ("-" = stdin). 0, or <0 with the reason in err: GTT_EIO (cannot open or read),
 * GTT_EEMPTY (empty input, or folded text without a stack), GTT_EFORMAT (neither a trace nor
 * folded stacks, binary data, an over-long line, counts past 2^64), or the model loader's
 * failure (GTT_EVERSION, GTT_ECORRUPT, ...). */
int ana_source_open(ana_source *src, const char *path, const ana_opts *o, char *err, size_t errlen);
/* Free what the source holds. NULL ok. */
void ana_source_close(ana_source *src);

/* For the model loader: when path ("-" = stdin) is not a regular file, check its trace header
 * and copy it to an unlinked temporary file: *fd gets that file (to be read as
 * "/proc/self/fd/N"), -1 when path is a regular file to be read as it is. 0, or <0 with the
 * reason in err (GTT_EEMPTY, GTT_EFORMAT for no .gtt header, GTT_EIO). */
int ana_source_spool_trace(const char *path, int *fd, char *err, size_t errlen);

#endif
