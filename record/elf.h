/* elf.h — just enough ELF reading for the recorder (no libelf on the GPU box): build-ids,
 * symbol lookup in .dynsym/.symtab, and load segments, through <elf.h> on a mapped file.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_ELF_H
#define REC_ELF_H

/* the system header: record/ is never on the <> search path (the tests and test programs reach
 * record/'s headers through -iquote), so a plain <elf.h> never finds this file */
#include <elf.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rec_elf rec_elf;

/* Map path read-only and check it is a 64-bit little-endian ELF. NULL with errno set
 * (ENOEXEC for a non-ELF) on failure. */
rec_elf *rec_elf_open(const char *path);
void rec_elf_close(rec_elf *e);
/* Copy the GNU build-id note into buf (up to cap bytes); returns its length, 0 when none. */
size_t rec_elf_build_id(const rec_elf *e, uint8_t *buf, size_t cap);
/* Find a symbol by exact name in .symtab, then .dynsym. Returns 0 and sets *value (the
 * st_value, a link-time address) and *size, or -ENOENT when absent. */
int rec_elf_symbol(const rec_elf *e, const char *name, uint64_t *value, uint64_t *size);
/* Lowest p_vaddr - p_offset of PT_LOAD segments, to turn link-time addresses into runtime
 * ones: runtime = value - first_load_vaddr + mapping start of file offset 0. */
uint64_t rec_elf_first_load_vaddr(const rec_elf *e);
/* Pointer/size of the whole mapped file (for the symbol archive). */
const uint8_t *rec_elf_data(const rec_elf *e, size_t *len);
/* Convenience: build-id of the file at path; 0 when none or unreadable. */
size_t rec_elf_build_id_of(const char *path, uint8_t *buf, size_t cap);

#endif
