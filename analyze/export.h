/* export.h — `gt-analyze export`: the model in the formats other tools read (folded text,
 * speedscope JSON, Chrome Trace Event JSON for Perfetto, gzipped pprof profile.proto).
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_EXPORT_H
#define ANA_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

enum ana_export_format {
	ANA_EXPORT_FOLDED = 0,
	ANA_EXPORT_SPEEDSCOPE = 1,
	ANA_EXPORT_CHROME = 2,
	ANA_EXPORT_PPROF = 3,
};
/* gt-analyze export --format chrome without --from/--to refuses a trace larger than this (its
 * JSON is about ten times the trace's size). */
#define ANA_EXPORT_CHROME_MAX_BYTES (256ull << 20)
/* "folded", "speedscope", "chrome" (or "perfetto"), "pprof" -> ANA_EXPORT_*, -1 when unknown. */
int ana_export_format_parse(const char *name);
/* The format an output file's name asks for: .folded/.fold/.txt, .speedscope.json, .json
 * (Chrome), .pb.gz/.pprof/.pb -> ANA_EXPORT_*; -1 when the name does not say. */
int ana_export_format_of_path(const char *path);

/* What every exporter takes besides the model (NULL: the defaults). */
typedef struct ana_export_opts {
	int gil;                  /* only samples of these classes (ana_gil_parse mask), -1 all */
} ana_export_opts;
void ana_export_opts_init(ana_export_opts *o);

/* speedscope file: shared frames, one sampled profile per thread (weights in ns; every profile
 * on one time axis of the trace clock, unsampled time as empty stacks so the time-ordered view
 * is true). Deterministic. 0, GTT_ENOMEM or GTT_EIO. */
int ana_export_speedscope(const ana_model *m, const ana_export_opts *o, FILE *out);
/* The same from samples handed over one by one, so that a model that keeps none (the export
 * command's: ana_opts.stream_samples) can be written: ana_sscope_sample is the loader's
 * ana_opts.sample_sink (ctx: the collector), or is called for each of a model's samples in
 * order. Each thread's kept samples wait in a temporary file past buf_bytes of them in memory
 * (0: 1 MiB; spill.h); what stays in memory follows threads and distinct (thread, stack) pairs.
 * Samples must come in time order per thread (ana_sscope_unordered says when they did not: the
 * output would then differ from the model's). new: NULL on ENOMEM. write: as above, or the first
 * error met collecting (GTT_ENOMEM; GTT_EIO, the spill's, whose words ana_sscope_error gives:
 * "" when none). */
typedef struct ana_sscope ana_sscope;
ana_sscope *ana_sscope_new(int gil, size_t buf_bytes);
void ana_sscope_sample(void *ctx, const ana_model *m, const ana_sample *s);
int ana_sscope_write(ana_sscope *c, const ana_model *m, FILE *out);
int ana_sscope_unordered(const ana_sscope *c);
const char *ana_sscope_error(const ana_sscope *c);
/* Bytes of the temporary file (0: all of it stayed in memory). */
uint64_t ana_sscope_spilled_bytes(const ana_sscope *c);
void ana_sscope_free(ana_sscope *c); /* NULL ok */
/* Chrome Trace Event JSON (Perfetto, speedscope load it): metadata names, threads on their OS
 * tids, B/E slices for runs of samples (parents first), the GIL class per Python thread, CUDA
 * API calls, kernels and copies (a track per stream), NVTX ranges; C events for counters.
 * 0, GTT_ENOMEM or GTT_EIO. */
int ana_export_chrome(const ana_model *m, const ana_export_opts *o, FILE *out);
/* pprof profile.proto, gzipped: string table, functions (Python ones with a system_name of
 * their own), locations with each frame's executing line and inline lines, mappings with
 * build-ids, samples labelled thread/tid/pid/gil. 0, GTT_ENOMEM or GTT_EIO. */
int ana_export_pprof(const ana_model *m, const ana_export_opts *o, FILE *out);
/* The uncompressed profile.proto bytes of the same (tests, tools); *buf is malloc'd. */
int ana_export_pprof_raw(const ana_model *m, const ana_export_opts *o, uint8_t **buf, size_t *len);
/* One of the above by format (folded through fold.h with default options and o's classes). */
int ana_export(const ana_model *m, int format, const ana_export_opts *o, FILE *out);

/* `gt-analyze export TRACE [--format F] [-o FILE] [--gil WHICH]`: the command (prints, returns
 * the exit status). */
int ana_cmd_export(int argc, char **argv);

/* ---- helpers shared by the exporters ---- */

/* Per-thread lists of the samples in time order: first[t] is thread t's first sample index
 * (SIZE_MAX when none), next[i] the sample after i in its thread (undefined after the last).
 * Samples with an unknown thread or stack, or of a class not in gil (a mask, -1 all), are left
 * out. Both malloc'ed; 0 or GTT_ENOMEM. */
int ana_thread_sample_lists(const ana_model *m, int gil, size_t **first, size_t **next);

/* A hash map from a key of n uint32 words to dense ids 0, 1, 2, ... in insertion order. */
typedef struct ana_keymap ana_keymap;
ana_keymap *ana_keymap_create(void);
void ana_keymap_destroy(ana_keymap *km);
/* The id of key (inserting it with the next id when new, *is_new = 1). -1 on ENOMEM. */
int64_t ana_keymap_get(ana_keymap *km, const uint32_t *key, uint32_t n, int *is_new);
/* Same for a string key. */
int64_t ana_keymap_str(ana_keymap *km, const char *s, int *is_new);
size_t ana_keymap_count(const ana_keymap *km);

/* A thread's display name: "name" or "tid N" when it has none, written to buf. */
const char *ana_export_thread_name(const ana_model *m, const ana_thread *t, char *buf, size_t cap);

#endif
