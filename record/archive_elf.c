/* archive_elf.c — the ELF copy the archive embeds: the sections unwinding and symbolization read
 * (the rest becomes SHT_NOBITS, like a separate debug file), DWARF of inlined frames within a
 * budget, and .eh_frame cut down to the entries of the functions the recording's addresses fall
 * in, with a .eh_frame_hdr search table rebuilt for them. Anything the CFI filter does not
 * understand keeps its section whole: never a wrong unwind table, at worst a bigger one. */
#include "archive.h"

#include <stdlib.h>
#include <string.h>

#include "elf.h"

/* What unwinding and symbolization read: symbol tables (SHT_SYMTAB/DYNSYM and the string
 * tables they link, kept by type below), call-frame information, the build-id and other notes
 * (by type), the links to separate debug files, and MiniDebugInfo (an xz-compressed .symtab some
 * distributions ship instead of one). Never kept: code and data, the dynamic-linking tables
 * (.gnu.hash, .gnu.version*, .dynamic: megabytes in C++ libraries, and libdwfl does not read
 * them when section headers are there), and the DWARF that no frame name needs (variable
 * locations, macros, type units, name indexes). */
static int keep_name(const char *n)
{
	static const char *const names[] = {
		".eh_frame", ".eh_frame_hdr", ".debug_frame", ".zdebug_frame", ".gnu_debuglink",
		".gnu_debugaltlink", ".gnu_debugdata",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	return 0;
}

/* The DWARF that inlined frames and source lines come from (dwarf_getscopes, decl_file/line),
 * kept within a budget: the size of the rest is fixed, this part can be tens of megabytes. */
static int dwarf_name(const char *n)
{
	static const char *const names[] = {
		"info", "abbrev", "str", "str_offsets", "line", "line_str", "ranges", "rnglists", "addr", "aranges",
	};
	size_t i;

	if (strncmp(n, ".debug_", 7) != 0 && strncmp(n, ".zdebug_", 8) != 0)
		return 0;
	n += n[1] == 'z' ? 8 : 7;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	return 0;
}

/* ---- .eh_frame: parsing the entries ---- */

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_pcrel 0x10

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; } /* x86-64/aarch64: LE */
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Width in bytes of a fixed-size pointer encoding, 0 for the variable (LEB128) and unknown ones. */
static int enc_width(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8; /* absptr on a 64-bit target */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/* Read an encoded value of fixed width at p (the caller checked the room), sign-extended. */
static int64_t rd_enc(const uint8_t *p, uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x02: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 0x0a: { int16_t v; memcpy(&v, p, 2); return v; }
	case 0x03: return rd32(p);
	case 0x0b: return (int32_t)rd32(p);
	default: return (int64_t)rd64(p);
	}
}

static void wr_enc(uint8_t *p, uint8_t enc, int64_t v)
{
	int w = enc_width(enc);
	memcpy(p, &v, (size_t)w); /* little-endian: the low bytes */
}

/* Skip an LEB128 number in [*p, end). 0, or -1 when it runs off. */
static int skip_leb(const uint8_t **p, const uint8_t *end)
{
	while (*p < end)
		if (!(*(*p)++ & 0x80))
			return 0;
	return -1;
}

static int get_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

typedef struct cie {
	size_t off;        /* of the entry (its length field) */
	size_t len;        /* whole entry, length field included */
	uint8_t fde_enc;   /* 'R': how FDEs of this CIE encode addresses */
	uint8_t lsda_enc;  /* 'L', DW_EH_PE_omit when none */
	int has_aug_data;  /* 'z': FDEs carry an augmentation data length */
	size_t new_off;    /* where it went in the output, SIZE_MAX before */
} cie;

typedef struct fde {
	size_t off, len;   /* the entry, length field included */
	size_t cie;        /* index into the CIE array */
	uint64_t start, range;
	int keep;
	size_t new_off;
} fde;

typedef struct cfi {
	cie *cies;
	size_t n_cie, cap_cie;
	fde *fdes;
	size_t n_fde, cap_fde;
} cfi;

static int parse_cie(const uint8_t *eh, size_t off, size_t body, size_t end, cie *c)
{
	const uint8_t *p = eh + body + 4, *e = eh + end;
	memset(c, 0, sizeof(*c));
	c->off = off;
	c->len = end - off;
	c->fde_enc = 0; /* absptr unless 'R' says otherwise */
	c->lsda_enc = DW_EH_PE_omit;
	c->new_off = SIZE_MAX;
	if (p >= e)
		return -1;
	uint8_t version = *p++;
	const char *aug = (const char *)p;
	size_t alen = strnlen(aug, (size_t)(e - p));
	if (alen == (size_t)(e - p) || (version != 1 && version != 3))
		return -1;
	p += alen + 1;
	if (strchr(aug, 'e') || skip_leb(&p, e) || skip_leb(&p, e)) /* "eh": an ancient form */
		return -1;
	if (version == 1)
		p++;
	else if (skip_leb(&p, e))
		return -1;
	if (aug[0] != 'z')
		return aug[0] ? -1 : 0;
	uint64_t n;
	if (get_uleb(&p, e, &n) || n > (uint64_t)(e - p))
		return -1;
	c->has_aug_data = 1;
	for (const char *a = aug + 1; *a; a++) {
		if (*a == 'R' && p < e) {
			c->fde_enc = *p++;
		} else if (*a == 'L' && p < e) {
			c->lsda_enc = *p++;
		} else if (*a == 'P' && p < e) {
			uint8_t penc = *p++;
			int w = enc_width(penc);
			if (!w || w > e - p)
				return -1;
			p += w;
		} else if (*a != 'S' && *a != 'B') {
			return -1; /* an augmentation we do not know the size of */
		}
	}
	return 0;
}

static int add_cie(cfi *f, const uint8_t *eh, size_t off, size_t body, size_t end)
{
	if (f->n_cie == f->cap_cie) {
		size_t cap = f->cap_cie ? f->cap_cie * 2 : 64;
		cie *v = realloc(f->cies, cap * sizeof(*v));
		if (!v)
			return -1;
		f->cies = v;
		f->cap_cie = cap;
	}
	if (parse_cie(eh, off, body, end, &f->cies[f->n_cie]) != 0)
		return -1;
	f->n_cie++;
	return 0;
}

static size_t find_cie(const cfi *f, size_t off)
{
	size_t lo = 0, hi = f->n_cie; /* CIEs are added in file order */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (f->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n_cie && f->cies[lo].off == off ? lo : SIZE_MAX;
}

/* Every entry of .eh_frame at address eh_addr. 0, or -1 for a form this file does not handle. */
static int parse_cfi(const uint8_t *eh, size_t len, uint64_t eh_addr, cfi *f)
{
	size_t off = 0;
	while (off + 4 <= len) {
		uint32_t l32 = rd32(eh + off);
		if (l32 == 0)
			break; /* the terminator */
		if (l32 == 0xffffffffu)
			return -1; /* 64-bit DWARF: not in .eh_frame in practice */
		size_t body = off + 4, end = body + l32;
		if (l32 < 4 || end > len || end < body)
			return -1;
		uint32_t id = rd32(eh + body);
		if (id == 0) {
			if (add_cie(f, eh, off, body, end) != 0)
				return -1;
		} else {
			/* the CIE pointer counts back from the pointer's own position */
			if (id > body)
				return -1;
			size_t ci = find_cie(f, body - id);
			if (ci == SIZE_MAX)
				return -1;
			const cie *c = &f->cies[ci];
			int w = enc_width(c->fde_enc);
			uint8_t app = c->fde_enc & 0x70;
			/* absolute, or pc-relative in a signed (or 8-byte) form, which rewrites exactly */
			if (!w || (app != 0 && app != DW_EH_PE_pcrel) || (c->fde_enc & 0x80) || body + 4 + 2 * (size_t)w > end ||
			    (app == DW_EH_PE_pcrel && ((c->fde_enc & 0x0f) == 0x02 || (c->fde_enc & 0x0f) == 0x03)))
				return -1;
			if (f->n_fde == f->cap_fde) {
				size_t cap = f->cap_fde ? f->cap_fde * 2 : 1024;
				fde *v = realloc(f->fdes, cap * sizeof(*v));
				if (!v)
					return -1;
				f->fdes = v;
				f->cap_fde = cap;
			}
			fde *d = &f->fdes[f->n_fde++];
			int64_t v = rd_enc(eh + body + 4, c->fde_enc);
			d->off = off;
			d->len = end - off;
			d->cie = ci;
			d->start = (uint64_t)v + (app == DW_EH_PE_pcrel ? eh_addr + body + 4 : 0);
			d->range = (uint64_t)rd_enc(eh + body + 4 + w, c->fde_enc & 0x0f);
			d->keep = 0;
		}
		off = end;
	}
	return 0;
}

/* FDE indices sorted by start address (qsort_r: the FDE array is the context) */
static int by_start(const void *a, const void *b, void *ctx)
{
	const fde *v = ctx;
	uint64_t x = v[*(const size_t *)a].start, y = v[*(const size_t *)b].start;
	return x < y ? -1 : x > y;
}

/* Mark the entry an address needs: the one with the greatest start at or below it (what a
 * lookup in the search table finds, covering or not). */
static void mark(fde *v, const size_t *order, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0)
		v[order[lo - 1]].keep = 1;
}

/* ---- .eh_frame: writing the kept entries, and their search table ---- */

static int build_cfi(const uint8_t *eh, uint64_t eh_addr, cfi *f, const size_t *order, uint64_t hdr_addr,
                     int want_hdr, uint8_t **eh_out, size_t *eh_len, uint8_t **hdr_out, size_t *hdr_len)
{
	size_t cap = 4, n = 0, kept = 0;
	for (size_t i = 0; i < f->n_fde; i++)
		if (f->fdes[i].keep) {
			cap += f->fdes[i].len + f->cies[f->fdes[i].cie].len;
			kept++;
		}
	uint8_t *out = malloc(cap), *hdr = NULL;
	if (!out)
		return -1;
	/* in file order: each CIE before the first FDE that needs it */
	for (size_t i = 0; i < f->n_fde; i++) {
		fde *d = &f->fdes[i];
		if (!d->keep)
			continue;
		cie *c = &f->cies[d->cie];
		if (c->new_off == SIZE_MAX) {
			c->new_off = n;
			memcpy(out + n, eh + c->off, c->len);
			n += c->len;
		}
		d->new_off = n;
		memcpy(out + n, eh + d->off, d->len);
		uint32_t cie_ptr = (uint32_t)(n + 4 - c->new_off);
		memcpy(out + n + 4, &cie_ptr, 4);
		if ((c->fde_enc & 0x70) == DW_EH_PE_pcrel) {
			/* the same target from the field's new place */
			int64_t v = (int64_t)(d->start - (eh_addr + n + 8));
			int w = enc_width(c->fde_enc);
			if (w < 8 && (v < INT32_MIN || v > INT32_MAX))
				goto fail;
			wr_enc(out + n + 8, c->fde_enc, v);
		}
		n += d->len;
	}
	memset(out + n, 0, 4); /* terminator */
	n += 4;
	if (want_hdr) {
		/* version 1, eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4 */
		size_t hn = 12 + kept * 8, k = 0;
		hdr = malloc(hn);
		if (!hdr)
			goto fail;
		int64_t ptr = (int64_t)(eh_addr - (hdr_addr + 4));
		if (ptr < INT32_MIN || ptr > INT32_MAX)
			goto fail;
		hdr[0] = 1;
		hdr[1] = 0x1b;
		hdr[2] = 0x03;
		hdr[3] = 0x3b;
		int32_t p32 = (int32_t)ptr;
		uint32_t cnt = (uint32_t)kept;
		memcpy(hdr + 4, &p32, 4);
		memcpy(hdr + 8, &cnt, 4);
		for (size_t j = 0; j < f->n_fde; j++) {
			const fde *d = &f->fdes[order[j]];
			if (!d->keep)
				continue;
			int64_t a = (int64_t)(d->start - hdr_addr), b = (int64_t)(eh_addr + d->new_off - hdr_addr);
			if (a < INT32_MIN || a > INT32_MAX || b < INT32_MIN || b > INT32_MAX)
				goto fail;
			int32_t a32 = (int32_t)a, b32 = (int32_t)b;
			memcpy(hdr + 12 + k * 8, &a32, 4);
			memcpy(hdr + 16 + k * 8, &b32, 4);
			k++;
		}
		*hdr_out = hdr;
		*hdr_len = hn;
	}
	*eh_out = out;
	*eh_len = n;
	return 0;
fail:
	free(out);
	free(hdr);
	return -1;
}

/* .eh_frame cut to what the addresses (link-time, sorted) need, and .eh_frame_hdr rebuilt when
 * want_hdr. 0 with new contents, -1 to keep the sections as they are. */
static int filter_cfi(const uint8_t *eh, size_t eh_size, uint64_t eh_addr, int want_hdr, uint64_t hdr_addr,
                      const uint64_t *addrs, size_t n_addrs, uint8_t **eh_out, size_t *eh_len, uint8_t **hdr_out,
                      size_t *hdr_len, rec_trim_info *info)
{
	cfi f = { 0 };
	size_t *order = NULL;
	int rc = -1;
	if (parse_cfi(eh, eh_size, eh_addr, &f) != 0 || f.n_fde == 0)
		goto out;
	order = malloc(f.n_fde * sizeof(*order));
	if (!order)
		goto out;
	for (size_t i = 0; i < f.n_fde; i++)
		order[i] = i;
	qsort_r(order, f.n_fde, sizeof(*order), by_start, f.fdes);
	for (size_t i = 0; i < n_addrs; i++) {
		mark(f.fdes, order, f.n_fde, addrs[i]);
		/* a return address may sit just past the end of its call's function (a noreturn call) */
		if (addrs[i])
			mark(f.fdes, order, f.n_fde, addrs[i] - 1);
	}
	info->n_fde = (uint32_t)f.n_fde;
	for (size_t i = 0; i < f.n_fde; i++)
		info->n_fde_kept += f.fdes[i].keep;
	rc = build_cfi(eh, eh_addr, &f, order, hdr_addr, want_hdr, eh_out, eh_len, hdr_out, hdr_len);
out:
	free(order);
	free(f.cies);
	free(f.fdes);
	return rc;
}

/* ---- symbol tables: the symbols a lookup of the recorded addresses can return ---- */

/* libdwfl's address lookup (__libdwfl_addrsym) looks at every defined symbol but sections, files
 * and TLS: for an address it takes a sized symbol that covers it, else the nearest sizeless one
 * below it unless a sized symbol ends between the two. Keeping, for each address, every symbol
 * that covers it, the sizeless ones with the greatest start at or below it, and the sized ones
 * with the greatest end at or below it, gives the same answer from the smaller table. */
static int sym_candidate(const Elf64_Sym *y)
{
	int t = ELF64_ST_TYPE(y->st_info);
	return y->st_shndx != SHN_UNDEF && t != STT_SECTION && t != STT_FILE && t != STT_TLS;
}

static int by_value(const void *a, const void *b, void *ctx)
{
	const Elf64_Sym *sy = ctx;
	uint64_t x = sy[*(const uint32_t *)a].st_value, y = sy[*(const uint32_t *)b].st_value;
	return x < y ? -1 : x > y;
}
static int by_end(const void *a, const void *b, void *ctx)
{
	const Elf64_Sym *sy = ctx, *x = &sy[*(const uint32_t *)a], *y = &sy[*(const uint32_t *)b];
	uint64_t ex = x->st_value + x->st_size, ey = y->st_value + y->st_size;
	return ex < ey ? -1 : ex > ey;
}

/* Last position in idx[0..n) (sorted by key) whose key is <= v, or SIZE_MAX. */
static size_t last_le(const Elf64_Sym *sy, const uint32_t *idx, size_t n, uint64_t v, int end)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const Elf64_Sym *y = &sy[idx[mid]];
		if ((end ? y->st_value + y->st_size : y->st_value) <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

/* Mark in keep[] the symbols of sy[0..n) that lookups of addrs (sorted) can return. */
static int mark_symbols(const Elf64_Sym *sy, size_t n, const uint64_t *addrs, size_t n_addrs, uint8_t *keep)
{
	uint32_t *sized = malloc(n * sizeof(*sized)), *by_e = malloc(n * sizeof(*by_e)), *bare = malloc(n * sizeof(*bare));
	uint32_t *heap = malloc(n * sizeof(*heap)); /* sized symbols started at or below the address, min-heap by end */
	size_t ns = 0, nb = 0, nh = 0, next = 0;
	int rc = -1;
	if (!sized || !by_e || !bare || !heap)
		goto out;
	for (size_t i = 1; i < n; i++) {
		if (!sym_candidate(&sy[i]))
			continue;
		if (sy[i].st_size)
			sized[ns++] = (uint32_t)i;
		else
			bare[nb++] = (uint32_t)i;
	}
	qsort_r(sized, ns, sizeof(*sized), by_value, (void *)sy);
	qsort_r(bare, nb, sizeof(*bare), by_value, (void *)sy);
	memcpy(by_e, sized, ns * sizeof(*by_e));
	qsort_r(by_e, ns, sizeof(*by_e), by_end, (void *)sy);
#define END(k) (sy[heap[k]].st_value + sy[heap[k]].st_size)
	for (size_t a = 0; a < n_addrs; a++) {
		uint64_t h = addrs[a];
		/* covering: a sweep, since the addresses come sorted */
		for (; next < ns && sy[sized[next]].st_value <= h; next++) {
			size_t k = nh++;
			heap[k] = sized[next];
			while (k && END((k - 1) / 2) > END(k)) {
				uint32_t t = heap[k];
				heap[k] = heap[(k - 1) / 2];
				heap[(k - 1) / 2] = t;
				k = (k - 1) / 2;
			}
		}
		while (nh && END(0) <= h) {
			heap[0] = heap[--nh];
			for (size_t k = 0;;) {
				size_t l = 2 * k + 1, r = l + 1, m = k;
				if (l < nh && END(l) < END(m))
					m = l;
				if (r < nh && END(r) < END(m))
					m = r;
				if (m == k)
					break;
				uint32_t t = heap[k];
				heap[k] = heap[m];
				heap[m] = t;
				k = m;
			}
		}
		for (size_t k = 0; k < nh; k++)
			keep[heap[k]] = 1;
		/* the nearest sizeless symbols at or below, and the sized ones ending nearest below */
		size_t p = last_le(sy, bare, nb, h, 0);
		for (size_t k = p; p != SIZE_MAX && k < nb && sy[bare[k]].st_value == sy[bare[p]].st_value; k--) {
			keep[bare[k]] = 1;
			if (k == 0)
				break;
		}
		p = last_le(sy, by_e, ns, h, 1);
		uint64_t e = p != SIZE_MAX ? sy[by_e[p]].st_value + sy[by_e[p]].st_size : 0;
		for (size_t k = p; p != SIZE_MAX && sy[by_e[k]].st_value + sy[by_e[k]].st_size == e; k--) {
			keep[by_e[k]] = 1;
			if (k == 0)
				break;
		}
	}
#undef END
	rc = 0;
out:
	free(sized);
	free(by_e);
	free(bare);
	free(heap);
	return rc;
}

/* A symbol table (and its string table) holding only the symbols lookups of addrs can return.
 * 0 with new contents and the new sh_info, -1 to keep both as they are. */
static int filter_symbols(const uint8_t *tab, size_t tab_size, uint32_t info, const char *str, size_t str_size,
                          const uint64_t *addrs, size_t n_addrs, uint8_t **tab_out, size_t *tab_len,
                          uint8_t **str_out, size_t *str_len, uint32_t *new_info)
{
	size_t n = tab_size / sizeof(Elf64_Sym), k = 0, sn = 1, scap = 1;
	Elf64_Sym *sy = malloc((n ? n : 1) * sizeof(*sy));
	uint8_t *keep = calloc(n ? n : 1, 1), *out = NULL;
	char *strs = NULL;
	int rc = -1;
	if (!sy || !keep || n == 0 || tab_size % sizeof(Elf64_Sym))
		goto out;
	memcpy(sy, tab, n * sizeof(*sy));
	for (size_t i = 0; i < n; i++)
		if (sy[i].st_name >= str_size)
			goto out; /* a name outside its table: leave such a file alone */
	if (mark_symbols(sy, n, addrs, n_addrs, keep) != 0)
		goto out;
	keep[0] = 1;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			scap += strnlen(str + sy[i].st_name, str_size - sy[i].st_name) + 1;
	out = malloc(n * sizeof(*sy));
	strs = malloc(scap);
	if (!out || !strs)
		goto out;
	strs[0] = 0;
	*new_info = 0;
	for (size_t i = 0; i < n; i++) {
		if (!keep[i])
			continue;
		Elf64_Sym y = sy[i];
		size_t l = strnlen(str + y.st_name, str_size - y.st_name);
		if (i && y.st_name) {
			memcpy(strs + sn, str + y.st_name, l);
			strs[sn + l] = 0;
			y.st_name = (uint32_t)sn;
			sn += l + 1;
		}
		if (i < info) /* the locals come first and stay first */
			(*new_info)++;
		memcpy(out + k * sizeof(y), &y, sizeof(y));
		k++;
	}
	*tab_out = out;
	*tab_len = k * sizeof(Elf64_Sym);
	*str_out = (uint8_t *)strs;
	*str_len = sn;
	out = NULL;
	strs = NULL;
	rc = 0;
out:
	free(sy);
	free(keep);
	free(out);
	free(strs);
	return rc;
}

/* ---- the copy ---- */

static uint64_t align_up(uint64_t off, uint64_t al)
{
	return (off + al - 1) & ~(al - 1);
}

static int cmp_addr(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Link-time addresses of the file offsets in o->hits (through the loadable segments), sorted. */
static uint64_t *hit_addrs(const uint8_t *data, const Elf64_Ehdr *eh, const rec_trim_opts *o, size_t *n)
{
	uint64_t *v = malloc((o->n_hits ? o->n_hits : 1) * sizeof(*v));
	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < o->n_hits; i++) {
		for (size_t k = 0; k < eh->e_phnum; k++) {
			Elf64_Phdr ph;
			memcpy(&ph, data + eh->e_phoff + k * sizeof(ph), sizeof(ph));
			if (ph.p_type == PT_LOAD && o->hits[i] >= ph.p_offset && o->hits[i] - ph.p_offset < ph.p_filesz) {
				v[(*n)++] = o->hits[i] - ph.p_offset + ph.p_vaddr;
				break;
			}
		}
	}
	qsort(v, *n, sizeof(*v), cmp_addr);
	return v;
}

uint8_t *rec_archive_trim(const uint8_t *data, size_t len, const rec_trim_opts *o, size_t *out_len,
                          rec_trim_info *info)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	uint8_t *keep = NULL, *out = NULL, **repl = NULL;
	size_t *repl_len = NULL, n_sh, i, ph_bytes = 0, off, total, eh_i = 0, hdr_i = 0;
	uint64_t *addrs = NULL, dwarf = 0;
	const char *shstr;
	uint64_t shstr_size;
	rec_trim_info dummy;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	info->cfi_whole = 1;
	if (len < sizeof(eh))
		return NULL;
	memcpy(&eh, data, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum || eh.e_shoff > len ||
	    (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff)
		return NULL;
	n_sh = eh.e_shnum;
	if (eh.e_phnum > 0) {
		if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > len ||
		    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
			return NULL;
		ph_bytes = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
	}
	sh = malloc(n_sh * sizeof(*sh));
	keep = calloc(n_sh, 1);
	repl = calloc(n_sh, sizeof(*repl));
	repl_len = calloc(n_sh, sizeof(*repl_len));
	if (!sh || !keep || !repl || !repl_len)
		goto fail;
	memcpy(sh, data + eh.e_shoff, n_sh * sizeof(*sh));
	if (sh[eh.e_shstrndx].sh_offset > len || sh[eh.e_shstrndx].sh_size > len - sh[eh.e_shstrndx].sh_offset)
		goto fail;
	shstr = (const char *)data + sh[eh.e_shstrndx].sh_offset;
	shstr_size = sh[eh.e_shstrndx].sh_size;

	for (i = 1; i < n_sh; i++) {
		const char *name = sh[i].sh_name < shstr_size ? shstr + sh[i].sh_name : "";
		if (sh[i].sh_name < shstr_size && strnlen(name, shstr_size - sh[i].sh_name) == shstr_size - sh[i].sh_name)
			name = "";
		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL)
			continue;
		if (i == eh.e_shstrndx || sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM ||
		    sh[i].sh_type == SHT_NOTE || sh[i].sh_type == SHT_SYMTAB_SHNDX || keep_name(name))
			keep[i] = 1;
		else if (dwarf_name(name) && sh[i].sh_offset <= len && sh[i].sh_size <= len - sh[i].sh_offset) {
			keep[i] = 2;
			dwarf += sh[i].sh_size;
		}
		if (strcmp(name, ".eh_frame") == 0)
			eh_i = i;
		else if (strcmp(name, ".eh_frame_hdr") == 0)
			hdr_i = i;
	}
	/* the DWARF goes in whole or not at all: half of it would name some inlined frames only */
	for (i = 1; i < n_sh; i++)
		if (keep[i] == 2 && dwarf > o->dwarf_max)
			keep[i] = 0;
	info->dwarf_bytes = dwarf;
	/* the string tables (and the symbol table of an SHNDX) that kept symbol tables refer to */
	for (i = 1; i < n_sh; i++)
		if (keep[i] && sh[i].sh_link > 0 && sh[i].sh_link < n_sh && sh[sh[i].sh_link].sh_type != SHT_NOBITS &&
		    (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM || sh[i].sh_type == SHT_SYMTAB_SHNDX))
			keep[sh[i].sh_link] = 1;
	for (i = 1; i < n_sh; i++)
		if (keep[i] && (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset))
			keep[i] = 0;

	/* the unwind table cut to the functions the recording's addresses are in */
	size_t n_addrs = 0;
	if (o->hits)
		addrs = hit_addrs(data, &eh, o, &n_addrs);
	if (addrs && eh_i && keep[eh_i]) {
		int want_hdr = hdr_i && keep[hdr_i] && sh[hdr_i].sh_size >= 4 && data[sh[hdr_i].sh_offset] == 1;
		if (filter_cfi(data + sh[eh_i].sh_offset, sh[eh_i].sh_size, sh[eh_i].sh_addr, want_hdr,
		                        hdr_i ? sh[hdr_i].sh_addr : 0, addrs, n_addrs, &repl[eh_i], &repl_len[eh_i],
		                        want_hdr ? &repl[hdr_i] : NULL, want_hdr ? &repl_len[hdr_i] : NULL, info) == 0) {
			info->cfi_whole = 0;
			sh[eh_i].sh_size = repl_len[eh_i];
			if (want_hdr)
				sh[hdr_i].sh_size = repl_len[hdr_i];
			else if (hdr_i)
				keep[hdr_i] = 0; /* a table of another form would point at entries that moved */
		}
	}

	/* symbol tables cut to what lookups of those addresses return; a string table shared with
	 * another kept table, or a table with extended section indexes, stays whole */
	/* a caller's frame is looked up at its return address minus one (the call): both count */
	uint64_t *both = addrs ? malloc((2 * n_addrs + 1) * sizeof(*both)) : NULL;
	for (i = 0; both && i < n_addrs; i++) {
		both[2 * i] = addrs[i] ? addrs[i] - 1 : 0;
		both[2 * i + 1] = addrs[i];
	}
	if (both) {
		for (i = 1; i < n_sh; i++) {
			size_t l = sh[i].sh_link, j;
			if (!keep[i] || (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) || l == 0 || l >= n_sh ||
			    !keep[l] || repl[l] || sh[l].sh_type != SHT_STRTAB || sh[i].sh_entsize != sizeof(Elf64_Sym) ||
			    sh[l].sh_size == 0 || data[sh[l].sh_offset + sh[l].sh_size - 1] != 0)
				continue;
			for (j = 1; j < n_sh; j++)
				if (j != i && keep[j] && (sh[j].sh_link == l || (sh[j].sh_type == SHT_SYMTAB_SHNDX && sh[j].sh_link == i)))
					break;
			uint32_t new_info = 0;
			if (j < n_sh || filter_symbols(data + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_info,
			                               (const char *)data + sh[l].sh_offset, sh[l].sh_size, both, 2 * n_addrs,
			                               &repl[i], &repl_len[i], &repl[l], &repl_len[l], &new_info) != 0)
				continue;
			info->n_syms += sh[i].sh_size / sizeof(Elf64_Sym);
			sh[i].sh_size = repl_len[i];
			sh[i].sh_info = new_info;
			sh[l].sh_size = repl_len[l];
			info->n_syms_kept += repl_len[i] / sizeof(Elf64_Sym);
		}
	}
	free(both);

	/* layout: header, program headers (unchanged: addresses still describe the original),
	 * kept section contents in their original order, then the section headers */
	off = sizeof(eh) + ph_bytes;
	for (i = 1; i < n_sh; i++) {
		if (keep[i]) {
			uint64_t al = sh[i].sh_addralign > 1 && sh[i].sh_addralign <= 4096 ? sh[i].sh_addralign : 1;
			off = align_up(off, al) + sh[i].sh_size;
		}
	}
	off = align_up(off, 8);
	total = off + n_sh * sizeof(Elf64_Shdr);
	out = calloc(1, total);
	if (!out)
		goto fail;
	off = sizeof(eh) + ph_bytes;
	if (ph_bytes)
		memcpy(out + sizeof(eh), data + eh.e_phoff, ph_bytes);
	for (i = 1; i < n_sh; i++) {
		if (keep[i]) {
			uint64_t al = sh[i].sh_addralign > 1 && sh[i].sh_addralign <= 4096 ? sh[i].sh_addralign : 1;
			off = align_up(off, al);
			memcpy(out + off, repl[i] ? repl[i] : data + sh[i].sh_offset, sh[i].sh_size);
			sh[i].sh_offset = off;
			off += sh[i].sh_size;
		} else if (sh[i].sh_type != SHT_NULL) {
			/* like a separate debug file: the section keeps its address and size, not its bytes */
			sh[i].sh_type = SHT_NOBITS;
			sh[i].sh_offset = off;
		}
	}
	off = align_up(off, 8);
	memcpy(out + off, sh, n_sh * sizeof(Elf64_Shdr));
	eh.e_phoff = ph_bytes ? sizeof(eh) : 0;
	eh.e_shoff = off;
	memcpy(out, &eh, sizeof(eh));
	*out_len = total;
	goto done;
fail:
	free(out);
	out = NULL;
done:
	for (i = 0; repl && i < n_sh; i++)
		free(repl[i]);
	free(repl);
	free(repl_len);
	free(addrs);
	free(sh);
	free(keep);
	return out;
}

uint8_t *rec_archive_trim_elf_dwarf(const uint8_t *data, size_t len, uint64_t dwarf_max, size_t *out_len,
                                    uint64_t *dwarf_bytes)
{
	rec_trim_opts o = { .dwarf_max = dwarf_max };
	rec_trim_info info;
	uint8_t *out = rec_archive_trim(data, len, &o, out_len, &info);
	if (dwarf_bytes)
		*dwarf_bytes = info.dwarf_bytes;
	return out;
}

uint8_t *rec_archive_trim_elf(const uint8_t *data, size_t len, size_t *out_len)
{
	return rec_archive_trim_elf_dwarf(data, len, 0, out_len, NULL);
}
