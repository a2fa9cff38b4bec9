/* elfimg.c — bounds-checked section, segment and build-id lookup in an in-memory ELF64 image. */
#include "elfimg.h"

#include <string.h>

/* 1 when [off, off+n) lies inside the image. */
static int inside(const rec_elfimg *img, uint64_t off, uint64_t n)
{
	return off <= img->len && n <= img->len - off;
}

int rec_elfimg_init(rec_elfimg *img, const uint8_t *data, size_t len)
{
	const Elf64_Ehdr *eh;

	memset(img, 0, sizeof(*img));
	if (!data || len < sizeof(Elf64_Ehdr) || ((uintptr_t)data & 7))
		return -1;
	eh = (const Elf64_Ehdr *)data;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return -1;
	img->data = data;
	img->len = len;
	img->eh = eh;
	if (eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shnum > 0 && eh->e_shoff % 8 == 0 &&
	    inside(img, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
		img->sh = (const Elf64_Shdr *)(data + eh->e_shoff);
		img->n_sh = eh->e_shnum;
		if (eh->e_shstrndx < img->n_sh) {
			const Elf64_Shdr *s = &img->sh[eh->e_shstrndx];
			if (s->sh_type != SHT_NOBITS && inside(img, s->sh_offset, s->sh_size) && s->sh_size > 0) {
				img->shstr = (const char *)data + s->sh_offset;
				img->shstr_len = s->sh_size;
			}
		}
	}
	if (eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum > 0 && eh->e_phoff % 8 == 0 &&
	    inside(img, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
		img->ph = (const Elf64_Phdr *)(data + eh->e_phoff);
		img->n_ph = eh->e_phnum;
	}
	return 0;
}

int rec_elfimg_section_at(const rec_elfimg *img, uint32_t i, rec_elfsec *out)
{
	const Elf64_Shdr *s;

	if (!img->sh || i >= img->n_sh)
		return -1;
	s = &img->sh[i];
	if (s->sh_type == SHT_NOBITS || s->sh_type == SHT_NULL || !inside(img, s->sh_offset, s->sh_size))
		return -1;
	out->data = img->data + s->sh_offset;
	out->size = s->sh_size;
	out->addr = s->sh_addr;
	out->index = i;
	return 0;
}

int rec_elfimg_section(const rec_elfimg *img, const char *name, rec_elfsec *out)
{
	size_t nlen = strlen(name);
	uint32_t i;

	if (!img->shstr)
		return -1;
	for (i = 1; i < img->n_sh; i++) {
		uint64_t at = img->sh[i].sh_name;
		if (at >= img->shstr_len || img->shstr_len - at <= nlen)
			continue;
		if (memcmp(img->shstr + at, name, nlen + 1) == 0)
			return rec_elfimg_section_at(img, i, out);
	}
	return -1;
}

int rec_elfimg_offset_to_vaddr(const rec_elfimg *img, uint64_t off, uint64_t *vaddr)
{
	uint32_t i;

	for (i = 0; img->ph && i < img->n_ph; i++) {
		const Elf64_Phdr *p = &img->ph[i];
		uint64_t start, size;

		if (p->p_type != PT_LOAD)
			continue;
		/* the loader maps from the page holding p_offset */
		start = p->p_offset & ~(uint64_t)0xfff;
		size = p->p_memsz > p->p_filesz ? p->p_memsz : p->p_filesz;
		if (off >= start && (off < p->p_offset || off - p->p_offset < size)) {
			*vaddr = off - p->p_offset + p->p_vaddr;
			return 0;
		}
	}
	return -1;
}

/* Look for an NT_GNU_BUILD_ID note in [off, off+size). Returns its length or 0. */
static size_t note_build_id(const rec_elfimg *img, uint64_t off, uint64_t size, uint64_t align,
                            uint8_t *buf, size_t cap)
{
	uint64_t end, pos = off;

	if (!inside(img, off, size))
		return 0;
	align = align == 8 ? 8 : 4;
	end = off + size;
	while (pos + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;
		uint64_t name_off, desc_off, next;

		memcpy(&nh, img->data + pos, sizeof(nh));
		name_off = pos + sizeof(nh);
		desc_off = name_off + ((nh.n_namesz + align - 1) & ~(align - 1));
		next = desc_off + ((nh.n_descsz + align - 1) & ~(align - 1));
		if (desc_off > end || nh.n_descsz > end - desc_off)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(img->data + name_off, "GNU", 4) == 0 &&
		    nh.n_descsz > 0) {
			size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
			memcpy(buf, img->data + desc_off, n);
			return n;
		}
		if (next <= pos)
			break;
		pos = next;
	}
	return 0;
}

size_t rec_elfimg_build_id(const rec_elfimg *img, uint8_t *buf, size_t cap)
{
	size_t n;
	uint32_t i;

	if (cap == 0)
		return 0;
	for (i = 0; img->sh && i < img->n_sh; i++) {
		if (img->sh[i].sh_type != SHT_NOTE)
			continue;
		n = note_build_id(img, img->sh[i].sh_offset, img->sh[i].sh_size, img->sh[i].sh_addralign, buf, cap);
		if (n)
			return n;
	}
	for (i = 0; img->ph && i < img->n_ph; i++) {
		if (img->ph[i].p_type != PT_NOTE)
			continue;
		n = note_build_id(img, img->ph[i].p_offset, img->ph[i].p_filesz, img->ph[i].p_align, buf, cap);
		if (n)
			return n;
	}
	return 0;
}
