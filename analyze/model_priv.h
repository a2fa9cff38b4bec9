/* model_priv.h — analyze/-internal helpers behind the model: arena, hash tables, string
 * interning, warnings. Not for render/ or tests beyond analyze's own.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_MODEL_PRIV_H
#define ANA_MODEL_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "dwfl.h"
#include "model.h"

typedef struct ana_arena { struct ana_arena_block *head; } ana_arena;
/* Sort n elements of sz bytes unless already in order (the common case); stable, so that equal
 * keys keep the file's order and the output is deterministic. 0 or GTT_ENOMEM. */
int ana_sort_stable(void *v, size_t n, size_t sz, int (*cmp)(const void *, const void *));
/* Bump-allocate len bytes (8-aligned) that live until ana_arena_free. NULL on ENOMEM. */
void *ana_arena_alloc(ana_arena *a, size_t len);
void ana_arena_free(ana_arena *a);

/* A 64-bit mix (murmur3's finalizer). Inline: the sweep, the launch estimator and the loaders
 * hash a key per record, and a call cost them more than the mix. */
static inline uint64_t ana_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}
uint64_t ana_hash_bytes(const void *p, size_t len, uint64_t seed);
/* Hash of n_words 32-bit words at p (4-aligned), for callchains and frame id lists. */
uint64_t ana_hash_words(const void *p, size_t n_words, uint64_t seed);

/* A hash of (pid, CUPTI correlation id) for tables looked up in about correlation order (the
 * launch estimator's calls, the top gaps' calls): ids that differ only in their low 3 bits get
 * neighbouring slots, so a run of calls shares the table's cache lines; runs land at random. */
static inline uint64_t ana_hash_corr(uint32_t pid, uint32_t corr)
{
	return ana_hash_u64((uint64_t)pid << 32 | corr >> 3) << 3 | (corr & 7);
}

/* Open-addressing set of ids; slots hold id + 1 (0 = empty). The caller owns the elements. */
typedef struct ana_idslot {
	uint64_t hash;
	uint32_t id;
} ana_idslot;
typedef struct ana_idtable {
	ana_idslot *slots;
	size_t n, cap;
} ana_idtable;
/* The slot holding an element equal to key (*slot != 0), or the empty slot where it goes
 * (*slot == 0: store id + 1 there and increment t->n). NULL on ENOMEM. */
uint32_t *ana_idtable_slot(ana_idtable *t, uint64_t hash, int (*eq)(uint32_t id, const void *key, void *ctx),
                           const void *key, void *ctx);
void ana_idtable_free(ana_idtable *t);
/* Empty the set for about n_next elements: its slots are kept when they fit that many. */
void ana_idtable_clear(ana_idtable *t, size_t n_next);

/* A name and how it is shown (demangle.c's cache); both model-interned. */
typedef struct ana_dem { const char *from, *to; } ana_dem;

typedef struct ana_priv {
	ana_arena arena;
	ana_idtable str_table, frame_table, stack_table;
	ANA_VEC(const char *) strs;
	ANA_VEC(char *) warnings;
	ana_sym_stats sym_stats;   /* what symbolization found, for the report */
	ANA_VEC(char *) missing;   /* "no symbols for PATH (build-id ...): why", one per binary */
	struct proc_comm *comms, *parents; /* process records with a command, with a parent (threads.c) */
	size_t n_comms, n_parents;
	int procs_indexed;
	ana_idtable pyf_table;     /* interned Python frame sequences, by content */
	ANA_VEC(struct ana_pyfs { const gtt_py_frame *v; uint32_t n; }) pyfs;
	ana_idtable dem_table;     /* demangled display names, by name */
	ANA_VEC(ana_dem) dems;
	uint64_t n_outside_captured; /* streamed samples outside the captured intervals (load_stream.c) */
} ana_priv;

/* The model's private state, created on first use. NULL on ENOMEM. */
ana_priv *ana_priv_get(ana_model *m);
/* Add a warning line (printf format, no newline). */
void ana_warn(ana_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ana_model_load of a file read as path but named name in messages and in m->path (a trace
 * spooled from stdin is read as /proc/self/fd/N and named "stdin"). */
ana_model *ana_model_load_named(const char *path, const char *name, const ana_opts *opts, char *errbuf,
                                size_t errlen);

/* ---- threads.c: figures derived after loading (0 or GTT_ENOMEM) ---- */
/* Index the process records by pid (ana_process_comm and ana_process_parent search it). */
int ana_index_processes(ana_model *m);
/* The last PROCESS record of pid that names a parent, NULL when none. */
const gtt_process *ana_process_parent(const ana_model *m, uint32_t pid);
/* Mark Python threads and name the unnamed ones (a main thread after its process). */
int ana_threads_finish(ana_model *m);
/* cpu_ns from /proc readings and oncpu_ns from switch records, per thread. */
int ana_threads_cpu(ana_model *m);
int ana_threads_oncpu(ana_model *m);
/* Samples without a period stand for the configured one: ana_fill_period_ns (0 none). */
void ana_fill_weights(ana_model *m);
uint64_t ana_fill_period_ns(const ana_model *m);

#endif
