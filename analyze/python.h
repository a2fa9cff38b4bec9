/* python.h — merges Python frames into native stacks and classifies samples by GIL state.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_PYTHON_H
#define ANA_PYTHON_H

#include <stdio.h>
#include "model.h"

/* After native stacks are built: for each sample of a Python thread, splice the Python
 * frames read nearest in time into its stack at the eval-loop frames (or keep only Python
 * frames with o->python_only), and set sample->cls. Threads never seen in a Python read stay
 * ANA_CLASS_NONPY. 0 or <0. */
int ana_python_merge(ana_model *m, const ana_opts *o);
/* The same merge as a stream, for a model that keeps no samples, reads or GIL records
 * (ana_opts.stream_samples: load_stream.c). Reads and GIL records come in time order (each
 * thread's, each process's), samples in time order; a sample is handed to sink (its class and
 * merged stack set; tag as given) once what comes after it can no longer change it: the reads
 * one bound after it (or the four the merge looks at), and the GIL record after it where that
 * record would change its class. ana_pymerge_advance says everything before w is in
 * (UINT64_MAX: everything). What it holds is the reads and GIL records a sample still to come
 * may use, and the samples waiting. The threads with reads are those marked is_python. Each
 * call returns 0 or <0 (GTT_ENOMEM, or what sink returned); new returns NULL on ENOMEM. */
typedef struct ana_pymerge ana_pymerge;
typedef int (*ana_pymerge_sink)(void *ctx, ana_sample *s, size_t tag);
ana_pymerge *ana_pymerge_new(ana_model *m, const ana_opts *o, ana_pymerge_sink sink, void *ctx);
int ana_pymerge_read(ana_pymerge *p, const ana_pystack *r);
int ana_pymerge_gil(ana_pymerge *p, const gtt_gil *g);
int ana_pymerge_sample(ana_pymerge *p, const ana_sample *s, size_t tag);
int ana_pymerge_advance(ana_pymerge *p, uint64_t w);
/* The time of the first sample not handed on yet, UINT64_MAX when none waits. */
uint64_t ana_pymerge_waiting(const ana_pymerge *p);
/* The most reads, GIL records and samples held at once, or the longest array holding those of one
 * thread, process or the samples (consumed entries not yet compacted away included), if more. */
uint64_t ana_pymerge_peak(const ana_pymerge *p);
/* Everything in: the rest handed on, the merge's warnings added to the model, p freed (also on
 * failure). */
int ana_pymerge_finish(ana_pymerge *p);
void ana_pymerge_free(ana_pymerge *p); /* NULL ok */
/* Python frames (code id, line) of pid as frame ids, named exactly as the merge names them:
 * for stacks taken elsewhere (the CUDA agent's launch stacks). Create after every py_code
 * record is in the model; NULL on ENOMEM. ana_pynamer_id returns ANA_NO_ID on ENOMEM. */
typedef struct ana_pynamer ana_pynamer;
ana_pynamer *ana_pynamer_create(ana_model *m);
/* The same, naming frames under --python-frames mode (enum ana_pyframes) as the merge does. */
ana_pynamer *ana_pynamer_create_mode(ana_model *m, int python_frames);
uint32_t ana_pynamer_id(ana_pynamer *p, uint32_t pid, const gtt_py_frame *pf);
void ana_pynamer_destroy(ana_pynamer *p); /* NULL ok */
/* After the merge (and when there was nothing to merge): a warning naming each process with
 * samples that looks like Python (command, thread names, mappings) but has no Python stack
 * reads, with the recorder's reason when it left one. */
void ana_python_unread_warn(ana_model *m);
/* The name a Python frame shows under --python-frames mode (enum ana_pyframes): the function's
 * name, or "name (path:line)" where the name alone is ambiguous (<module>, <lambda>, <listcomp>,
 * ...) or mode is ANA_PYFRAMES_LINE; the path is short (below site-packages, lib/pythonX.Y, or
 * the file name). Returns name itself or buf. The one place Python frames get their names. */
const char *ana_python_frame_name(int mode, const char *name, const char *file, int line, char *buf, size_t cap);
/* Report section: per-thread GIL-held %, GIL utilization and hand-offs/s, top functions per
 * class. Prints nothing when the trace has no Python data. */
void ana_python_report(const ana_model *m, FILE *out);

#endif
