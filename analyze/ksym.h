/* ksym.h — kernel symbols for kernel frames, from /proc/kallsyms, used only when the trace was
 * recorded during this very boot (its "boot_id" meta matches), since KASLR moves the kernel
 * at every boot. Otherwise kernel frames are shown as one "[kernel]" frame.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_KSYM_H
#define ANA_KSYM_H

#include <stdint.h>

typedef struct ana_ksym ana_ksym;

/* Load /proc/kallsyms when boot_id (the trace's, may be NULL) equals the running kernel's.
 * NULL when not applicable or unreadable. */
ana_ksym *ana_ksym_load(const char *boot_id);
/* Symbol containing addr: its name and module ("[kernel.kallsyms]" or "[MODNAME]"). Returns 0,
 * or -1 when no symbol covers addr. */
int ana_ksym_lookup(const ana_ksym *k, uint64_t addr, const char **name, const char **module);
void ana_ksym_free(ana_ksym *k);

#endif
