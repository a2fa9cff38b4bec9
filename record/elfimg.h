/* elfimg.h — sections, load segments and the build-id of an ELF64 image held in memory (a
 * mapped file, or the vdso copied out of a process), every offset checked against its length.
 * Used by the unwinder and the symbol tables of gt-record --dump (no libelf on the GPU box).
 * Return rule: 0 or -1. */
#ifndef REC_ELFIMG_H
#define REC_ELFIMG_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rec_elfimg {
	const uint8_t *data;
	size_t len;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;    /* NULL when the section table is missing or out of bounds */
	uint32_t n_sh;
	const Elf64_Phdr *ph;    /* NULL when the program headers are missing or out of bounds */
	uint32_t n_ph;
	const char *shstr;       /* section name table, NULL when unusable */
	uint64_t shstr_len;
} rec_elfimg;

/* A section's bytes inside the image and its link-time address. */
typedef struct rec_elfsec {
	const uint8_t *data;
	uint64_t size;
	uint64_t addr;
	uint32_t index;
} rec_elfsec;

/* Check that data[0..len) is a 64-bit little-endian ELF and index its tables (the image is
 * not copied: it must outlive img). 0, or -1 when it is not such an ELF. */
int rec_elfimg_init(rec_elfimg *img, const uint8_t *data, size_t len);
/* The section called name with its bytes in the image (not NOBITS). 0, or -1 when absent. */
int rec_elfimg_section(const rec_elfimg *img, const char *name, rec_elfsec *out);
/* Section number i, when its bytes lie in the image. 0 or -1. */
int rec_elfimg_section_at(const rec_elfimg *img, uint32_t i, rec_elfsec *out);
/* Link-time address of the byte at file offset off, through the PT_LOAD segment holding it
 * (p_vaddr - p_offset of that segment; page-rounded starts are accepted, as the loader maps
 * them). 0 and *vaddr set, or -1 when no load segment holds off. */
int rec_elfimg_offset_to_vaddr(const rec_elfimg *img, uint64_t off, uint64_t *vaddr);
/* Copy the GNU build-id into buf (up to cap bytes); returns its length, 0 when none. */
size_t rec_elfimg_build_id(const rec_elfimg *img, uint8_t *buf, size_t cap);

#endif
