/* outfile.h — the output file of gt-analyze and gt-render (-o FILE, --junit FILE).
 * What is written goes to a new temporary file beside FILE (FILE.tmp-XXXXXX, O_EXCL) and is
 * renamed over FILE only once all of it was written and flushed: a failed write (a full disk)
 * leaves FILE as it was, never a cut-off file, and nothing of ours behind. A symbolic link at
 * FILE is replaced, never followed, so a link planted in a shared directory cannot aim the
 * write at another file. FILE is refused when it is one of the command's inputs or a recorded
 * trace (a .gtt file, by its magic): a trace is never lost to a mistyped -o. Devices, FIFOs
 * and terminals (/dev/null, /dev/stdout, a pipe) are written in place, and so is an existing
 * writable FILE in a directory where no new file can be made; NULL or "-" is stdout.
 * Return rule (analyze/): 0 or a negative GTT_E* code, with a one-line reason in err. */
#ifndef ANA_OUTFILE_H
#define ANA_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct ana_out ana_out;

/* Prepare path for writing; inputs is a NULL-terminated list of the command's input paths
 * (NULL: none; "-" entries are skipped). NULL with a one-line reason in err (GTT_EINVAL for a
 * refusal, GTT_EIO when the temporary file cannot be made). */
ana_out *ana_out_open(const char *path, const char *const *inputs, char *err, size_t errlen);
/* The stream to write to (stdout for NULL or "-"); owned by o. */
FILE *ana_out_stream(const ana_out *o);
/* Finish and free o (NULL ok). With ok, flush and put the output in place: 0, or GTT_EIO with
 * the reason in err (the temporary file is then removed and FILE is as it was). Without ok,
 * the temporary file is removed (FILE untouched) and 0 is returned. */
int ana_out_close(ana_out *o, int ok, char *err, size_t errlen);

/* From a fatal-signal handler (async-signal-safe): remove the temporary file of the output being
 * written, if any, so that a tool killed by its own SIGBUS leaves nothing behind. */
void ana_out_signal_cleanup(void);

#endif
