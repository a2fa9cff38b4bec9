/* outfile.h — the trace file gt-record writes (-o): created new and private (0600, never
 * through a symbolic link), locked against a second recorder, and put in place only once
 * the recording has begun, so that a failed start leaves every existing file as it was.
 * An existing output is kept as PATH.old (what perf does with perf.data).
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_OUTFILE_H
#define REC_OUTFILE_H

#include <stddef.h>

typedef struct rec_out rec_out;

/* Prepare path for a new trace. When nothing is there, path itself is created (O_EXCL,
 * O_NOFOLLOW, mode 0600); when a regular file is there, the trace goes to a new file
 * PATH.tmp-XXXXXX beside it until rec_out_commit. Refused (NULL) with a one-line reason in
 * err: a symbolic link, a directory or anything else that is not a regular file at path (or
 * at PATH.old), a path (or PATH.old) another gt-record is writing, a directory that cannot
 * be written. The trace file is locked (flock) until rec_out_close. */
rec_out *rec_out_open(const char *path, char *err, size_t errlen);
/* The descriptor to write the trace to (owned by o: dup it for a writer that closes it). */
int rec_out_fd(const rec_out *o);
/* Where the trace is now: the temporary name until a commit moved it, then path. */
const char *rec_out_name(const rec_out *o);
/* The recording has begun: move the trace to path, the file that was there to PATH.old
 * (replacing an older PATH.old). 0 (note gets "previous PATH kept as PATH.old" or ""), or
 * -errno with a one-line reason in note: the trace then stays at rec_out_name(). Idempotent. */
int rec_out_commit(rec_out *o, char *note, size_t len);
/* For a recording that never began (call it only then): remove the file gt-record created
 * (only if its name still leads to it); nothing else is touched. 0 or -errno. */
int rec_out_discard(rec_out *o);
/* Close and unlock. NULL ok. */
void rec_out_close(rec_out *o);

#endif
