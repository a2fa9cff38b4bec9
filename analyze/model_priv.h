/* model_priv.h — analyze/-internal helpers behind the model: arena, hash tables, string
 * interning, warnings. Not for render/ or tests beyond analyze's own. */
#ifndef ANA_MODEL_PRIV_H
#define ANA_MODEL_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "dwfl.h"
#include "model.h"

typedef struct ana_arena { struct ana_arena_block *head; } ana_arena;
/* Bump-allocate len bytes (8-aligned) that live until ana_arena_free. NULL on ENOMEM. */
void *ana_arena_alloc(ana_arena *a, size_t len);
void ana_arena_free(ana_arena *a);

uint64_t ana_hash_u64(uint64_t x);
uint64_t ana_hash_bytes(const void *p, size_t len, uint64_t seed);
/* Hash of n_words 32-bit words at p (4-aligned), for callchains and frame id lists. */
uint64_t ana_hash_words(const void *p, size_t n_words, uint64_t seed);

/* Open-addressing set of ids; slots hold id + 1 (0 = empty). The caller owns the elements. */
typedef struct ana_idtable {
	uint32_t *ids;
	uint64_t *hashes;
	size_t n, cap;
} ana_idtable;
/* The slot holding an element equal to key (*slot != 0), or the empty slot where it goes
 * (*slot == 0: store id + 1 there and increment t->n). NULL on ENOMEM. */
uint32_t *ana_idtable_slot(ana_idtable *t, uint64_t hash, int (*eq)(uint32_t id, const void *key, void *ctx),
                           const void *key, void *ctx);
void ana_idtable_free(ana_idtable *t);

/* A name and how it is shown (demangle.c's cache); both model-interned. */
typedef struct ana_dem { const char *from, *to; } ana_dem;

typedef struct ana_priv {
	ana_arena arena;
	ana_idtable str_table, frame_table, stack_table;
	ANA_VEC(const char *) strs;
	ANA_VEC(char *) warnings;
	ana_sym_stats sym_stats;   /* what symbolization found, for the report */
	ANA_VEC(char *) missing;   /* "no symbols for PATH (build-id ...): why", one per binary */
	ana_idtable dem_table;     /* demangled display names, by name */
	ANA_VEC(ana_dem) dems;
} ana_priv;

/* The model's private state, created on first use. NULL on ENOMEM. */
ana_priv *ana_priv_get(ana_model *m);
/* Intern a string for the model's lifetime (frames' names, modules, files). NULL on ENOMEM. */
const char *ana_intern_str(ana_model *m, const char *s);
/* Add a warning line (printf format, no newline). */
void ana_warn(ana_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
