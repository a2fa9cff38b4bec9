/* symtab.c — sorted function-symbol tables from ELF images, and demangling via a dlopen'ed
 * libstdc++ (gt-record links nothing but libc). */
#include "symtab.h"
#include "gt_util.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym {
	uint64_t addr, size;
	const char *name;
	uint32_t rank;            /* lower is more public */
} sym;

struct rec_symtab {
	sym *v;
	size_t n;
};

/* Global before weak before local; then fewer leading underscores; then shorter. */
static uint32_t rank_of(const Elf64_Sym *s, const char *name)
{
	uint32_t bind = ELF64_ST_BIND(s->st_info), r, us = 0;

	r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	while (name[us] == '_' && us < 7)
		us++;
	return r << 24 | us << 16 | (uint32_t)(strlen(name) < 0xffff ? strlen(name) : 0xffff);
}

/* Add the function symbols of one SHT_SYMTAB/SHT_DYNSYM section. 0, or -1 on ENOMEM. */
static int add_section(rec_symtab *t, size_t *cap, const rec_elfimg *img, uint32_t i)
{
	rec_elfsec s, strs;
	const Elf64_Shdr *sh = &img->sh[i];
	uint64_t k, n;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || rec_elfimg_section_at(img, i, &s) < 0 ||
	    rec_elfimg_section_at(img, sh->sh_link, &strs) < 0 || ((uintptr_t)s.data & 7))
		return 0;
	n = s.size / sizeof(Elf64_Sym);
	for (k = 1; k < n; k++) {
		const Elf64_Sym *e = (const Elf64_Sym *)s.data + k;
		unsigned type = ELF64_ST_TYPE(e->st_info);
		const char *name;

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || e->st_shndx == SHN_UNDEF || e->st_value == 0 ||
		    e->st_name == 0 || e->st_name >= strs.size)
			continue;
		name = (const char *)strs.data + e->st_name;
		if (strnlen(name, strs.size - e->st_name) == strs.size - e->st_name)
			continue; /* not terminated inside the table */
		if (GT_GROW(t->v, *cap, t->n + 1) < 0)
			return -1;
		t->v[t->n++] = (sym){ e->st_value, e->st_size, name, rank_of(e, name) };
	}
	return 0;
}

static int add_image(rec_symtab *t, size_t *cap, const rec_elfimg *img)
{
	uint32_t i;

	for (i = 1; img && img->sh && i < img->n_sh; i++)
		if ((img->sh[i].sh_type == SHT_SYMTAB || img->sh[i].sh_type == SHT_DYNSYM) &&
		    add_section(t, cap, img, i) < 0)
			return -1;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* a sized symbol first, then the most public name */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

rec_symtab *rec_symtab_create(const rec_elfimg *img, const rec_elfimg *dbg)
{
	rec_symtab *t = calloc(1, sizeof(*t));
	size_t cap = 0, i, k;

	if (!t)
		return NULL;
	if (add_image(t, &cap, img) < 0 || add_image(t, &cap, dbg) < 0 || t->n == 0) {
		rec_symtab_destroy(t);
		return NULL;
	}
	qsort(t->v, t->n, sizeof(*t->v), cmp_sym);
	/* one entry per address: the best name, with the largest size any alias states */
	for (i = 0, k = 0; i < t->n; i++) {
		if (k && t->v[k - 1].addr == t->v[i].addr) {
			if (t->v[i].size > t->v[k - 1].size)
				t->v[k - 1].size = t->v[i].size;
			continue;
		}
		t->v[k++] = t->v[i];
	}
	t->n = k;
	return t;
}

void rec_symtab_destroy(rec_symtab *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

size_t rec_symtab_count(const rec_symtab *t)
{
	return t ? t->n : 0;
}

const char *rec_symtab_lookup(const rec_symtab *t, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi, k;

	if (!t)
		return NULL;
	hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a few back: a small function may sit inside a larger one's range (e.g. a .cold part) */
	for (k = 0; k < 4 && lo > 0; k++, lo--) {
		const sym *s = &t->v[lo - 1];
		int inside = s->size ? addr - s->addr < s->size
		                     : (lo == t->n || addr < t->v[lo].addr) && k == 0;
		if (inside) {
			*off = addr - s->addr;
			return s->name;
		}
	}
	return NULL;
}

int rec_symtab_has(const rec_symtab *t, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; t && i < t->n; i++)
		if (strncmp(t->v[i].name, name, n) == 0 && (t->v[i].name[n] == 0 || t->v[i].name[n] == '@'))
			return 1;
	return 0;
}

/* ---- demangling ---- */

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn g_demangle;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load_demangler(void)
{
	/* kept loaded for the life of the process: names are demangled until the end */
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		g_demangle = (demangle_fn)dlsym(h, "__cxa_demangle");
}

const char *rec_sym_display(const char *name, char *buf, size_t cap)
{
	size_t n = strcspn(name, "@");

	if (cap == 0)
		return buf;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, name, n);
	buf[n] = 0;
	if (buf[0] == '_' && buf[1] == 'Z') {
		int status = -1;
		char *d;

		pthread_once(&g_once, load_demangler);
		d = g_demangle ? g_demangle(buf, NULL, NULL, &status) : NULL;
		if (d && status == 0) {
			size_t dn = strlen(d);
			if (dn >= cap)
				dn = cap - 1;
			memcpy(buf, d, dn);
			buf[dn] = 0;
		}
		free(d);
	}
	return buf;
}
