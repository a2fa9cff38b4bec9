/* pythreads.h — the names a Python program gave its threads, read from outside: the threading
 * module's registry (sys.modules["threading"]._active, a dict ident -> Thread) and each
 * Thread's _name, through CPython's dicts, modules and instance attributes of each version
 * (the layout fields of rec_pyoff). Cheap to ask often: the registry is walked again only when
 * the _active dict changed or a Thread's _name pointer did (a rename), and every 10 s.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PYTHREADS_H
#define REC_PYTHREADS_H

#include <stdint.h>
#include "procmem.h"
#include "pyoffsets.h"

#define REC_PYNAME_MAX 64 /* bytes of a name kept, NUL included (cut at a character boundary) */

typedef struct rec_pyname {
	uint64_t ident;                /* threading.get_ident(): the thread's pthread_t */
	char name[REC_PYNAME_MAX];     /* UTF-8 */
} rec_pyname;

typedef struct rec_pynames rec_pynames;

/* A reader for one process with layout o (outlives it); dict_type is PyDict_Type in the
 * target (0 unknown: then nothing is read). NULL on ENOMEM. */
rec_pynames *rec_pynames_create(const rec_pyoff *o, uint64_t dict_type);
void rec_pynames_destroy(rec_pynames *n);

/* Look at the registry of the interpreter at interp through m at now. Returns 1 with the
 * current names in *out (*n_out of them, valid until the next call) when they were read afresh,
 * 0 when nothing changed since the last read (or the threading module is not imported yet),
 * or -errno when the registry could not be read (-ENOTSUP: this layout has no registry
 * fields; -EINVAL: what was read is not what it should be). */
int rec_pynames_poll(rec_pynames *n, rec_procmem *m, uint64_t interp, uint64_t now_ns,
                     const rec_pyname **out, size_t *n_out);

#endif
