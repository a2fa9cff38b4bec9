/* elf.c — minimal ELF64 reader for the recorder: build-id, symbol lookup, load bias, raw bytes. */
#include "elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct rec_elf {
	const uint8_t *data;
	size_t len;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh; /* NULL when the section table is missing or out of bounds */
	uint32_t n_sh;
	const Elf64_Phdr *ph; /* NULL when the program headers are out of bounds */
	uint32_t n_ph;
};

/* 1 when [off, off+n) lies inside the file. */
static int in_file(const rec_elf *e, uint64_t off, uint64_t n)
{
	return off <= e->len && n <= e->len - off;
}

rec_elf *rec_elf_open(const char *path)
{
	rec_elf *e = NULL;
	struct stat st;
	void *map = MAP_FAILED;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int saved;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		errno = ENOEXEC;
		goto fail;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto fail;
	e->data = map;
	e->len = (size_t)st.st_size;
	e->eh = map;
	if (memcmp(e->eh->e_ident, ELFMAG, SELFMAG) != 0 || e->eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->eh->e_ident[EI_DATA] != ELFDATA2LSB) {
		errno = ENOEXEC;
		goto fail;
	}
	if (e->eh->e_shentsize == sizeof(Elf64_Shdr) && e->eh->e_shnum > 0 &&
	    in_file(e, e->eh->e_shoff, (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr)) &&
	    e->eh->e_shoff % 8 == 0) {
		e->sh = (const Elf64_Shdr *)(e->data + e->eh->e_shoff);
		e->n_sh = e->eh->e_shnum;
	}
	if (e->eh->e_phentsize == sizeof(Elf64_Phdr) && e->eh->e_phnum > 0 &&
	    in_file(e, e->eh->e_phoff, (uint64_t)e->eh->e_phnum * sizeof(Elf64_Phdr)) &&
	    e->eh->e_phoff % 8 == 0) {
		e->ph = (const Elf64_Phdr *)(e->data + e->eh->e_phoff);
		e->n_ph = e->eh->e_phnum;
	}
	close(fd);
	return e;
fail:
	saved = errno;
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	free(e);
	close(fd);
	errno = saved;
	return NULL;
}

void rec_elf_close(rec_elf *e)
{
	if (!e)
		return;
	munmap((void *)e->data, e->len);
	free(e);
}

/* Look for an NT_GNU_BUILD_ID note in [off, off+size). Returns its length or 0. */
static size_t note_build_id(const rec_elf *e, uint64_t off, uint64_t size, uint64_t align,
                            uint8_t *buf, size_t cap)
{
	uint64_t end, pos = off;

	if (!in_file(e, off, size))
		return 0;
	if (align != 8)
		align = 4;
	end = off + size;
	while (pos + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;
		uint64_t name_off, desc_off, next;

		memcpy(&nh, e->data + pos, sizeof(nh));
		name_off = pos + sizeof(nh);
		desc_off = name_off + ((nh.n_namesz + align - 1) & ~(align - 1));
		next = desc_off + ((nh.n_descsz + align - 1) & ~(align - 1));
		if (desc_off > end || nh.n_descsz > end - desc_off)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(e->data + name_off, "GNU", 4) == 0 && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
			memcpy(buf, e->data + desc_off, n);
			return n;
		}
		if (next <= pos)
			break;
		pos = next;
	}
	return 0;
}

size_t rec_elf_build_id(const rec_elf *e, uint8_t *buf, size_t cap)
{
	size_t n;
	uint32_t i;

	if (!e || cap == 0)
		return 0;
	for (i = 0; e->sh && i < e->n_sh; i++) {
		if (e->sh[i].sh_type != SHT_NOTE)
			continue;
		n = note_build_id(e, e->sh[i].sh_offset, e->sh[i].sh_size, e->sh[i].sh_addralign, buf, cap);
		if (n)
			return n;
	}
	for (i = 0; e->ph && i < e->n_ph; i++) {
		if (e->ph[i].p_type != PT_NOTE)
			continue;
		n = note_build_id(e, e->ph[i].p_offset, e->ph[i].p_filesz, e->ph[i].p_align, buf, cap);
		if (n)
			return n;
	}
	return 0;
}

/* Search one symbol table section (SHT_SYMTAB or SHT_DYNSYM) for name. */
static int find_in(const rec_elf *e, uint32_t type, const char *name, uint64_t *value, uint64_t *size)
{
	uint32_t i;

	for (i = 0; e->sh && i < e->n_sh; i++) {
		const Elf64_Shdr *s = &e->sh[i], *strs;
		uint64_t n, k;

		if (s->sh_type != type || s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= e->n_sh)
			continue;
		strs = &e->sh[s->sh_link];
		if (!in_file(e, s->sh_offset, s->sh_size) || !in_file(e, strs->sh_offset, strs->sh_size) ||
		    s->sh_offset % 8 != 0)
			continue;
		n = s->sh_size / sizeof(Elf64_Sym);
		for (k = 1; k < n; k++) {
			const Elf64_Sym *sym = (const Elf64_Sym *)(e->data + s->sh_offset) + k;
			const char *sname;
			uint64_t left;

			if (sym->st_name == 0 || sym->st_name >= strs->sh_size || sym->st_shndx == SHN_UNDEF)
				continue;
			sname = (const char *)e->data + strs->sh_offset + sym->st_name;
			left = strs->sh_size - sym->st_name;
			if (strnlen(sname, left) == left)
				continue;
			if (strcmp(sname, name) == 0) {
				*value = sym->st_value;
				if (size)
					*size = sym->st_size;
				return 0;
			}
		}
	}
	return -ENOENT;
}

int rec_elf_symbol(const rec_elf *e, const char *name, uint64_t *value, uint64_t *size)
{
	if (!e || !name || !value)
		return -EINVAL;
	if (find_in(e, SHT_SYMTAB, name, value, size) == 0)
		return 0;
	return find_in(e, SHT_DYNSYM, name, value, size);
}

uint64_t rec_elf_first_load_vaddr(const rec_elf *e)
{
	uint64_t best = UINT64_MAX;
	uint32_t i;

	for (i = 0; e && e->ph && i < e->n_ph; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		uint64_t v;

		if (p->p_type != PT_LOAD)
			continue;
		v = p->p_vaddr - p->p_offset;
		if (v < best)
			best = v;
	}
	return best == UINT64_MAX ? 0 : best;
}

const uint8_t *rec_elf_data(const rec_elf *e, size_t *len)
{
	if (!e) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = e->len;
	return e->data;
}

size_t rec_elf_build_id_of(const char *path, uint8_t *buf, size_t cap)
{
	rec_elf *e = rec_elf_open(path);
	size_t n;

	if (!e)
		return 0;
	n = rec_elf_build_id(e, buf, cap);
	rec_elf_close(e);
	return n;
}
