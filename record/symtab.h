/* symtab.h — address-to-function lookup in a binary's .symtab/.dynsym (and those of its separate
 * debug file), and C++ demangling through libstdc++ when it can be loaded: the on-the-spot
 * symbolization of gt-record --dump. Return rule: pointers (NULL when none), counts. */
#ifndef REC_SYMTAB_H
#define REC_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

#include "elfimg.h"

typedef struct rec_symtab rec_symtab;

/* The function symbols of img (.symtab and .dynsym) and dbg (optional, a separate debug file
 * of the same build), sorted by address; of several names at one address the most public
 * one is kept (global before weak before local, fewer leading underscores). Names point into
 * the images, which must outlive the table. NULL when there is no symbol, or on ENOMEM. */
rec_symtab *rec_symtab_create(const rec_elfimg *img, const rec_elfimg *dbg);
void rec_symtab_destroy(rec_symtab *t);
/* Number of distinct symbol addresses. */
size_t rec_symtab_count(const rec_symtab *t);
/* The function holding link-time address addr, and addr minus its start in *off. A symbol
 * without a size holds addresses up to the next symbol. NULL when none does. */
const char *rec_symtab_lookup(const rec_symtab *t, uint64_t addr, uint64_t *off);

/* 1 when a function called name (exactly, before any @VERSION) is in the table. */
int rec_symtab_has(const rec_symtab *t, const char *name);

/* A symbol name as shown: without an ELF version ("memcpy@@GLIBC_2.14" -> "memcpy"), C++
 * names demangled when libstdc++ can be loaded (else left mangled). Returns buf. */
const char *rec_sym_display(const char *name, char *buf, size_t cap);

#endif
