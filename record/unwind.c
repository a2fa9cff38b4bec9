/* unwind.c — a DWARF CFI interpreter for x86-64: finds the FDE of a pc, runs its CIE and FDE
 * programs up to the pc, and computes the caller's registers (DWARF 5 §6.4, the LSB's
 * .eh_frame/.eh_frame_hdr). Every read of the tables is bounds-checked: the files are the
 * target's, and a damaged one must give an error, never a crash. */
#include "unwind.h"

#include <stdlib.h>
#include <string.h>

#define MAX_REMEMBER 16       /* DW_CFA_remember_state depth */
#define MAX_EXPR_STACK 64
#define MAX_EXPR_STEPS 1024   /* a DW_OP_skip loop must end */
#define MAX_INSNS 100000      /* one CFA program */

/* DW_EH_PE_* pointer encodings */
enum {
	PE_ABSPTR = 0x00, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
	PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_TEXTREL = 0x20, PE_DATAREL = 0x30, PE_FUNCREL = 0x40, PE_ALIGNED = 0x50,
	PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* One section the tables live in. */
typedef struct sec {
	const uint8_t *data;
	uint64_t size, addr;
	int is_eh;                /* .eh_frame (CIE id 0, relative CIE pointers) vs .debug_frame */
} sec;

/* A bounds-checked reader over a section. */
typedef struct cur {
	const sec *s;
	uint64_t at, end;         /* offsets into s->data */
	int err;
} cur;

typedef struct idx_ent {
	uint64_t start, end;      /* link-time pc range */
	uint64_t fde;             /* offset of the FDE in its section */
	uint32_t which;           /* 0 .eh_frame, 1 .debug_frame */
} idx_ent;

struct rec_unw_tab {
	sec eh, dbg;              /* size 0 when absent */
	sec hdr;                  /* .eh_frame_hdr */
	uint64_t hdr_table, hdr_count; /* offset of the (sdata4 datarel) search table, entries */
	idx_ent *idx;             /* sorted by start: FDEs not reachable through the hdr table */
	size_t n_idx;
	int dbg_pending;          /* .debug_frame not indexed yet (done at the first miss) */
};

typedef struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint32_t ra_reg;
	uint8_t fde_enc, lsda_enc;
	int has_aug_data, signal;
	uint64_t insn, insn_end;  /* initial instructions, offsets in the section */
} cie;

typedef struct fde {
	const sec *s;             /* the section holding it */
	uint64_t start, range;
	uint64_t insn, insn_end;
	cie c;
} fde;

enum { R_UNSET = 0, R_UNDEF, R_SAME, R_OFFSET, R_VAL_OFFSET, R_REG, R_EXPR, R_VAL_EXPR };
typedef struct rule {
	uint8_t kind;
	int64_t val;              /* offset, or a register number */
	uint64_t expr, expr_len;  /* offsets in the section */
} rule;

typedef struct row {
	int cfa_is_expr;
	uint32_t cfa_reg;
	int64_t cfa_off;
	uint64_t cfa_expr, cfa_expr_len;
	rule reg[REC_UNW_NREGS];
} row;

/* ---- readers ---- */

static int cur_need(cur *c, uint64_t n)
{
	if (c->err || c->at > c->end || n > c->end - c->at) {
		c->err = 1;
		return -1;
	}
	return 0;
}

static uint64_t get_un(cur *c, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (cur_need(c, n) < 0)
		return 0;
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->s->data[c->at + i] << (8 * i);
	c->at += n;
	return v;
}

static int64_t get_sn(cur *c, unsigned n)
{
	uint64_t v = get_un(c, n);

	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ull << (8 * n);
	return (int64_t)v;
}

static uint64_t get_uleb(cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;
		if (cur_need(c, 1) < 0)
			return 0;
		b = c->s->data[c->at++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
		if (shift > 70) {
			c->err = 1;
			return 0;
		}
	}
}

static int64_t get_sleb(cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (cur_need(c, 1) < 0)
			return 0;
		b = c->s->data[c->at++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (shift > 70 && (b & 0x80)) {
			c->err = 1;
			return 0;
		}
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* A DW_EH_PE-encoded pointer. datarel counts from data_base. Indirect pointers are not
 * followed (only personality routines use them, which we skip). */
static uint64_t get_enc(cur *c, uint8_t enc, uint64_t data_base)
{
	uint64_t field = c->s->addr + c->at, v;

	if (enc == PE_OMIT)
		return 0;
	switch (enc & 0x0f) {
	case PE_ABSPTR: v = get_un(c, 8); break;
	case PE_ULEB: v = get_uleb(c); break;
	case PE_UDATA2: v = get_un(c, 2); break;
	case PE_UDATA4: v = get_un(c, 4); break;
	case PE_UDATA8: v = get_un(c, 8); break;
	case PE_SLEB: v = (uint64_t)get_sleb(c); break;
	case PE_SDATA2: v = (uint64_t)get_sn(c, 2); break;
	case PE_SDATA4: v = (uint64_t)get_sn(c, 4); break;
	case PE_SDATA8: v = (uint64_t)get_sn(c, 8); break;
	default: c->err = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0: break;
	case PE_PCREL: v += field; break;
	case PE_DATAREL: v += data_base; break;
	default: c->err = 1; return 0; /* textrel, funcrel, aligned: not used on x86-64 Linux */
	}
	return v;
}

/* ---- CIE and FDE ---- */

/* The entry at off: its length and where its body starts; 0, or -1 at a terminator/garbage. */
static int entry_at(const sec *s, uint64_t off, uint64_t *body, uint64_t *end, int *is64)
{
	cur c = { s, off, s->size, 0 };
	uint64_t len = get_un(&c, 4);

	*is64 = 0;
	if (len == 0xffffffffu) {
		len = get_un(&c, 8);
		*is64 = 1;
	}
	if (c.err || len == 0 || len > s->size - c.at)
		return -1;
	*body = c.at;
	*end = c.at + len;
	return 0;
}

static int parse_cie(const sec *s, uint64_t off, cie *out)
{
	uint64_t body, end;
	int is64;
	cur c;
	char aug[16];
	unsigned n = 0;
	uint8_t version;

	memset(out, 0, sizeof(*out));
	if (entry_at(s, off, &body, &end, &is64) < 0)
		return -1;
	c = (cur){ s, body, end, 0 };
	{
		uint64_t id = get_un(&c, is64 ? 8 : 4);
		uint64_t want = s->is_eh ? 0 : (is64 ? ~0ull : 0xffffffffull);
		if (id != want)
			return -1;
	}
	version = (uint8_t)get_un(&c, 1);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	for (;;) {
		if (cur_need(&c, 1) < 0 || n + 1 >= sizeof(aug))
			return -1;
		aug[n] = (char)c.s->data[c.at++];
		if (!aug[n])
			break;
		n++;
	}
	if (version == 4) {
		if (get_un(&c, 1) != 8) /* address size */
			return -1;
		get_un(&c, 1);          /* segment selector size */
	}
	out->code_align = get_uleb(&c);
	out->data_align = get_sleb(&c);
	out->ra_reg = version == 1 ? (uint32_t)get_un(&c, 1) : (uint32_t)get_uleb(&c);
	out->fde_enc = PE_ABSPTR;
	out->lsda_enc = PE_OMIT;
	if (aug[0] == 'z') {
		uint64_t alen = get_uleb(&c), aend = c.at + alen;
		unsigned i;

		if (c.err || alen > end - c.at)
			return -1;
		out->has_aug_data = 1;
		for (i = 1; i < n && !c.err; i++) {
			switch (aug[i]) {
			case 'R': out->fde_enc = (uint8_t)get_un(&c, 1); break;
			case 'L': out->lsda_enc = (uint8_t)get_un(&c, 1); break;
			case 'P': {
				uint8_t penc = (uint8_t)get_un(&c, 1);
				get_enc(&c, penc & 0x7f, 0);
				break;
			}
			case 'S': out->signal = 1; break;
			default: i = n; break; /* unknown: the length lets us skip the rest */
			}
		}
		c.at = aend;
	} else if (n > 0 && strcmp(aug, "eh") != 0) {
		return -1; /* an augmentation without 'z' cannot be skipped */
	}
	if (c.err || c.at > end || out->code_align == 0 || out->ra_reg >= REC_UNW_NREGS)
		return -1;
	out->insn = c.at;
	out->insn_end = end;
	return 0;
}

/* The FDE at off (and its CIE). 0, or -1 when it is a CIE, a terminator or corrupt. */
static int parse_fde(const sec *s, uint64_t off, fde *out)
{
	uint64_t body, end, cie_off, id_at;
	int is64;
	cur c;

	if (entry_at(s, off, &body, &end, &is64) < 0)
		return -1;
	c = (cur){ s, body, end, 0 };
	id_at = c.at;
	cie_off = get_un(&c, is64 ? 8 : 4);
	if (c.err)
		return -1;
	if (s->is_eh) {
		if (cie_off == 0 || cie_off > id_at)
			return -1;        /* a CIE, or a pointer before the section */
		cie_off = id_at - cie_off;
	} else if (cie_off == (is64 ? ~0ull : 0xffffffffull)) {
		return -1;
	}
	if (parse_cie(s, cie_off, &out->c) < 0)
		return -1;
	out->s = s;
	out->start = get_enc(&c, out->c.fde_enc, 0);
	out->range = get_enc(&c, out->c.fde_enc & 0x0f, 0);
	if (out->c.has_aug_data) {
		uint64_t alen = get_uleb(&c);
		if (c.err || alen > end - c.at)
			return -1;
		c.at += alen;
	}
	if (c.err)
		return -1;
	out->insn = c.at;
	out->insn_end = end;
	return 0;
}

/* ---- finding the FDE of a pc ---- */

/* Through .eh_frame_hdr's sorted table of (initial location, FDE address), sdata4 datarel. */
static int hdr_lookup(const rec_unw_tab *t, uint64_t pc, fde *out)
{
	uint64_t lo = 0, hi = t->hdr_count, start, fde_addr;
	const uint8_t *tab;

	if (!t->hdr_count)
		return -1;
	tab = t->hdr.data + t->hdr_table;
	/* entries are signed offsets from the section: add them modulo 2^64 */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		int32_t v;
		memcpy(&v, tab + mid * 8, 4);
		if (t->hdr.addr + (uint64_t)(int64_t)v <= pc)
			lo = mid;
		else
			hi = mid;
	}
	{
		int32_t a, b;
		memcpy(&a, tab + lo * 8, 4);
		memcpy(&b, tab + lo * 8 + 4, 4);
		start = t->hdr.addr + (uint64_t)(int64_t)a;
		fde_addr = t->hdr.addr + (uint64_t)(int64_t)b;
	}
	if (start > pc || fde_addr < t->eh.addr || fde_addr - t->eh.addr >= t->eh.size)
		return -1;
	if (parse_fde(&t->eh, fde_addr - t->eh.addr, out) < 0)
		return -1;
	return pc >= out->start && pc - out->start < out->range ? 0 : -1;
}

static int idx_lookup(const rec_unw_tab *t, uint64_t pc, fde *out)
{
	size_t lo = 0, hi = t->n_idx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->idx[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges may nest or overlap after garbage: look back a few */
	for (size_t k = 0; k < 4 && lo > 0; k++, lo--) {
		const idx_ent *e = &t->idx[lo - 1];
		if (pc >= e->start && pc < e->end)
			return parse_fde(e->which ? &t->dbg : &t->eh, e->fde, out);
	}
	return -1;
}

static int index_debug_frame(rec_unw_tab *t);

static int find_fde(rec_unw_tab *t, uint64_t pc, fde *out)
{
	if (hdr_lookup(t, pc, out) == 0)
		return 0;
	if (idx_lookup(t, pc, out) == 0)
		return 0;
	/* .eh_frame covers nearly all code; .debug_frame is indexed only when it does not */
	if (t->dbg_pending && index_debug_frame(t) == 0)
		return idx_lookup(t, pc, out);
	return -1;
}

/* ---- building the table ---- */

static int cmp_idx(const void *a, const void *b)
{
	const idx_ent *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Index every FDE of s (a section without a usable search table). */
static int scan(rec_unw_tab *t, const sec *s, uint32_t which)
{
	uint64_t off = 0;
	size_t cap = t->n_idx;

	while (off + 4 <= s->size) {
		uint64_t body, end;
		int is64;
		fde f;

		if (entry_at(s, off, &body, &end, &is64) < 0)
			break;
		if (parse_fde(s, off, &f) == 0 && f.range > 0 && f.start + f.range > f.start) {
			if (t->n_idx == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				idx_ent *v = realloc(t->idx, ncap * sizeof(*v));
				if (!v)
					return -1;
				t->idx = v;
				cap = ncap;
			}
			t->idx[t->n_idx++] = (idx_ent){ f.start, f.start + f.range, off, which };
		}
		off = end;
	}
	return 0;
}

/* Use .eh_frame_hdr when its table is the usual sdata4 datarel kind and lies inside it. */
static void use_hdr(rec_unw_tab *t, const rec_elfimg *img)
{
	rec_elfsec h;
	cur c;
	uint8_t version, ptr_enc, cnt_enc, tab_enc;
	uint64_t n;

	if (rec_elfimg_section(img, ".eh_frame_hdr", &h) < 0 || h.size < 4)
		return;
	t->hdr = (sec){ h.data, h.size, h.addr, 1 };
	c = (cur){ &t->hdr, 0, h.size, 0 };
	version = (uint8_t)get_un(&c, 1);
	ptr_enc = (uint8_t)get_un(&c, 1);
	cnt_enc = (uint8_t)get_un(&c, 1);
	tab_enc = (uint8_t)get_un(&c, 1);
	if (version != 1 || tab_enc != (PE_DATAREL | PE_SDATA4))
		return;
	get_enc(&c, ptr_enc, h.addr);
	n = get_enc(&c, cnt_enc, h.addr);
	if (c.err || n == 0 || n > (h.size - c.at) / 8)
		return;
	t->hdr_table = c.at;
	t->hdr_count = n;
}

static int index_debug_frame(rec_unw_tab *t)
{
	t->dbg_pending = 0;
	if (scan(t, &t->dbg, 1) < 0)
		return -1;
	if (t->n_idx)
		qsort(t->idx, t->n_idx, sizeof(*t->idx), cmp_idx);
	return 0;
}

rec_unw_tab *rec_unw_tab_create(const rec_elfimg *img, const rec_elfimg *dbg)
{
	rec_unw_tab *t = calloc(1, sizeof(*t));
	rec_elfsec s;

	if (!t)
		return NULL;
	if (img && rec_elfimg_section(img, ".eh_frame", &s) == 0 && s.size >= 4) {
		t->eh = (sec){ s.data, s.size, s.addr, 1 };
		use_hdr(t, img);
		if (!t->hdr_count && scan(t, &t->eh, 0) < 0)
			goto fail;
		if (t->n_idx)
			qsort(t->idx, t->n_idx, sizeof(*t->idx), cmp_idx);
	}
	if ((img && rec_elfimg_section(img, ".debug_frame", &s) == 0) ||
	    (dbg && rec_elfimg_section(dbg, ".debug_frame", &s) == 0)) {
		t->dbg = (sec){ s.data, s.size, s.addr, 0 };
		t->dbg_pending = 1;
		/* without .eh_frame it is all there is: index it now */
		if (!t->hdr_count && !t->n_idx && index_debug_frame(t) < 0)
			goto fail;
	}
	if (!t->hdr_count && !t->n_idx)
		goto fail;
	return t;
fail:
	rec_unw_tab_destroy(t);
	return NULL;
}

void rec_unw_tab_destroy(rec_unw_tab *t)
{
	if (!t)
		return;
	free(t->idx);
	free(t);
}

uint64_t rec_unw_tab_fdes(const rec_unw_tab *t)
{
	return t ? t->hdr_count + t->n_idx : 0;
}

int rec_unw_func_start(rec_unw_tab *t, uint64_t pc, uint64_t *start)
{
	fde f;

	if (!t || find_fde(t, pc, &f) < 0)
		return REC_UNW_ENOINFO;
	*start = f.start;
	return 0;
}

/* ---- the CFA program ---- */

/* v * data_align, wrapping like the unsigned arithmetic the target did (garbage CFI must not
 * overflow a signed multiplication) */
static int64_t scaled(uint64_t v, int64_t data_align)
{
	return (int64_t)(v * (uint64_t)data_align);
}

static void set_rule(row *r, uint64_t reg, uint8_t kind, int64_t val)
{
	if (reg < REC_UNW_NREGS)
		r->reg[reg] = (rule){ kind, val, 0, 0 };
}

/* Run insn[from, to) of section s until the location passes pc. init is the row after the
 * CIE's program (for DW_CFA_restore), NULL while running the CIE's own. 0 or -1. */
static int run_cfa(const sec *s, const cie *ci, uint64_t from, uint64_t to, uint64_t loc, uint64_t pc,
                   row *r, const row *init)
{
	cur c = { s, from, to, 0 };
	row stack[MAX_REMEMBER];
	unsigned depth = 0, n = 0;

	while (c.at < c.end && !c.err && n++ < MAX_INSNS) {
		uint8_t op = (uint8_t)get_un(&c, 1), lo = op & 0x3f;
		uint64_t reg, delta = 0;

		switch (op & 0xc0) {
		case 0x40: delta = lo * ci->code_align; goto advance;
		case 0x80: set_rule(r, lo, R_OFFSET, scaled(get_uleb(&c), ci->data_align)); continue;
		case 0xc0:
			if (lo < REC_UNW_NREGS)
				r->reg[lo] = init ? init->reg[lo] : (rule){ R_UNSET, 0, 0, 0 };
			continue;
		default: break;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01: {      /* set_loc */
			uint64_t nl = get_enc(&c, ci->fde_enc, 0);
			if (nl > pc)
				return 0;
			loc = nl;
			break;
		}
		case 0x02: delta = get_un(&c, 1) * ci->code_align; goto advance;
		case 0x03: delta = get_un(&c, 2) * ci->code_align; goto advance;
		case 0x04: delta = get_un(&c, 4) * ci->code_align; goto advance;
		case 0x05: reg = get_uleb(&c); set_rule(r, reg, R_OFFSET, scaled(get_uleb(&c), ci->data_align)); break;
		case 0x06:
			reg = get_uleb(&c);
			if (reg < REC_UNW_NREGS)
				r->reg[reg] = init ? init->reg[reg] : (rule){ R_UNSET, 0, 0, 0 };
			break;
		case 0x07: set_rule(r, get_uleb(&c), R_UNDEF, 0); break;
		case 0x08: set_rule(r, get_uleb(&c), R_SAME, 0); break;
		case 0x09: reg = get_uleb(&c); set_rule(r, reg, R_REG, (int64_t)get_uleb(&c)); break;
		case 0x0a:
			if (depth == MAX_REMEMBER)
				return -1;
			stack[depth++] = *r;
			break;
		case 0x0b:
			/* the whole row, CFA included: epilogues remember, change the CFA, restore */
			if (depth == 0)
				return -1;
			*r = stack[--depth];
			break;
		case 0x0c:
			r->cfa_is_expr = 0;
			r->cfa_reg = (uint32_t)get_uleb(&c);
			r->cfa_off = (int64_t)get_uleb(&c);
			break;
		case 0x0d: r->cfa_is_expr = 0; r->cfa_reg = (uint32_t)get_uleb(&c); break;
		case 0x0e: r->cfa_off = (int64_t)get_uleb(&c); break;
		case 0x0f: {
			uint64_t len = get_uleb(&c);
			if (cur_need(&c, len) < 0)
				return -1;
			r->cfa_is_expr = 1;
			r->cfa_expr = c.at;
			r->cfa_expr_len = len;
			c.at += len;
			break;
		}
		case 0x10: case 0x16: { /* expression, val_expression */
			uint64_t len;
			reg = get_uleb(&c);
			len = get_uleb(&c);
			if (cur_need(&c, len) < 0)
				return -1;
			if (reg < REC_UNW_NREGS)
				r->reg[reg] = (rule){ op == 0x10 ? R_EXPR : R_VAL_EXPR, 0, c.at, len };
			c.at += len;
			break;
		}
		case 0x11: reg = get_uleb(&c); set_rule(r, reg, R_OFFSET, scaled((uint64_t)get_sleb(&c), ci->data_align)); break;
		case 0x12:
			r->cfa_is_expr = 0;
			r->cfa_reg = (uint32_t)get_uleb(&c);
			r->cfa_off = scaled((uint64_t)get_sleb(&c), ci->data_align);
			break;
		case 0x13: r->cfa_off = scaled((uint64_t)get_sleb(&c), ci->data_align); break;
		case 0x14: reg = get_uleb(&c); set_rule(r, reg, R_VAL_OFFSET, scaled(get_uleb(&c), ci->data_align)); break;
		case 0x15: reg = get_uleb(&c); set_rule(r, reg, R_VAL_OFFSET, scaled((uint64_t)get_sleb(&c), ci->data_align)); break;
		case 0x2e: get_uleb(&c); break; /* GNU_args_size */
		case 0x2f: reg = get_uleb(&c); set_rule(r, reg, R_OFFSET, scaled(-get_uleb(&c), ci->data_align)); break;
		default: return -1;
		}
		continue;
advance:
		if (loc + delta > pc)
			return 0;
		loc += delta;
	}
	return c.err ? -1 : 0;
}

/* ---- DWARF expressions (the subset CFI uses: PLT entries, signal frames) ---- */

static int eval_expr(const sec *s, uint64_t at, uint64_t len, const rec_unw_regs *regs, int push_cfa,
                     uint64_t cfa, rec_unw_read_fn rd, void *ctx, uint64_t *out)
{
	uint64_t st[MAX_EXPR_STACK];
	unsigned sp = 0, steps = 0;
	cur c = { s, at, at + len, 0 };

#define NEED(k) do { if (sp < (k)) return REC_UNW_EBAD; } while (0)
#define PUSH(v) do { uint64_t v_ = (v); if (sp == MAX_EXPR_STACK) return REC_UNW_EBAD; st[sp++] = v_; } while (0)
	if (push_cfa)
		PUSH(cfa);
	while (c.at < c.end && !c.err) {
		uint8_t op = (uint8_t)get_un(&c, 1);
		uint64_t a, b;

		if (++steps > MAX_EXPR_STEPS)
			return REC_UNW_EBAD;
		if (op >= 0x30 && op <= 0x4f) {          /* lit0..31 */
			PUSH((uint64_t)(op - 0x30));
			continue;
		}
		if (op >= 0x70 && op <= 0x8f) {          /* breg0..31 */
			unsigned r = op - 0x70;
			int64_t off = get_sleb(&c);
			if (r >= REC_UNW_NREGS || !(regs->valid >> r & 1))
				return REC_UNW_EBAD;
			PUSH(regs->r[r] + (uint64_t)off);
			continue;
		}
		switch (op) {
		case 0x03: PUSH(get_un(&c, 8)); break;                   /* addr */
		case 0x06:                                               /* deref */
			NEED(1);
			if (rd(ctx, st[sp - 1], &st[sp - 1]) < 0)
				return REC_UNW_EMEM;
			break;
		case 0x08: PUSH(get_un(&c, 1)); break;
		case 0x09: PUSH((uint64_t)get_sn(&c, 1)); break;
		case 0x0a: PUSH(get_un(&c, 2)); break;
		case 0x0b: PUSH((uint64_t)get_sn(&c, 2)); break;
		case 0x0c: PUSH(get_un(&c, 4)); break;
		case 0x0d: PUSH((uint64_t)get_sn(&c, 4)); break;
		case 0x0e: PUSH(get_un(&c, 8)); break;
		case 0x0f: PUSH(get_un(&c, 8)); break;
		case 0x10: PUSH(get_uleb(&c)); break;
		case 0x11: PUSH((uint64_t)get_sleb(&c)); break;
		case 0x12: NEED(1); PUSH(st[sp - 1]); break;             /* dup */
		case 0x13: NEED(1); sp--; break;                         /* drop */
		case 0x14: NEED(2); PUSH(st[sp - 2]); break;             /* over */
		case 0x15: a = get_un(&c, 1); NEED(a + 1); PUSH(st[sp - 1 - a]); break; /* pick */
		case 0x16: NEED(2); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = a; break;
		case 0x17: NEED(3); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = st[sp - 3]; st[sp - 3] = a; break;
		case 0x19: NEED(1); if ((int64_t)st[sp - 1] < 0) st[sp - 1] = -st[sp - 1]; break;
		case 0x1f: NEED(1); st[sp - 1] = -st[sp - 1]; break;
		case 0x20: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
		case 0x23: NEED(1); st[sp - 1] += get_uleb(&c); break;   /* plus_uconst */
		case 0x94: {                                             /* deref_size */
			unsigned n = (unsigned)get_un(&c, 1);
			NEED(1);
			if (n == 0 || n > 8 || rd(ctx, st[sp - 1], &a) < 0)
				return n == 0 || n > 8 ? REC_UNW_EBAD : REC_UNW_EMEM;
			st[sp - 1] = n == 8 ? a : a & ((1ull << (8 * n)) - 1);
			break;
		}
		case 0x2f: {                                             /* skip */
			int64_t d = get_sn(&c, 2);
			if ((d < 0 && (uint64_t)-d > c.at - at) || (d > 0 && (uint64_t)d > c.end - c.at))
				return REC_UNW_EBAD;
			c.at = (uint64_t)((int64_t)c.at + d);
			break;
		}
		case 0x28: {                                             /* bra */
			int64_t d = get_sn(&c, 2);
			NEED(1);
			if (st[--sp] == 0)
				break;
			if ((d < 0 && (uint64_t)-d > c.at - at) || (d > 0 && (uint64_t)d > c.end - c.at))
				return REC_UNW_EBAD;
			c.at = (uint64_t)((int64_t)c.at + d);
			break;
		}
		case 0x96: break;                                        /* nop */
		case 0x92: {                                             /* bregx */
			uint64_t r = get_uleb(&c);
			int64_t off = get_sleb(&c);
			if (r >= REC_UNW_NREGS || !(regs->valid >> r & 1))
				return REC_UNW_EBAD;
			PUSH(regs->r[r] + (uint64_t)off);
			break;
		}
		default:
			/* binary operators */
			NEED(2);
			b = st[--sp];
			a = st[sp - 1];
			switch (op) {
			case 0x1a: a &= b; break;
			case 0x1b:
				if (!b)
					return REC_UNW_EBAD;
				/* INT64_MIN / -1 overflows: negate modulo 2^64 instead */
				a = b == ~0ull ? -a : (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case 0x1c: a -= b; break;
			case 0x1d: if (!b) return REC_UNW_EBAD; a %= b; break;
			case 0x1e: a *= b; break;
			case 0x21: a |= b; break;
			case 0x22: a += b; break;
			case 0x24: a = b < 64 ? a << b : 0; break;
			case 0x25: a = b < 64 ? a >> b : 0; break;
			case 0x26: a = (uint64_t)((int64_t)a >> (b < 63 ? b : 63)); break;
			case 0x27: a ^= b; break;
			case 0x29: a = a == b; break;
			case 0x2a: a = (int64_t)a >= (int64_t)b; break;
			case 0x2b: a = (int64_t)a > (int64_t)b; break;
			case 0x2c: a = (int64_t)a <= (int64_t)b; break;
			case 0x2d: a = (int64_t)a < (int64_t)b; break;
			case 0x2e: a = a != b; break;
			default: return REC_UNW_EBAD; /* register locations, pieces, calls: not CFI */
			}
			st[sp - 1] = a;
			break;
		}
	}
#undef NEED
#undef PUSH
	if (c.err || sp == 0)
		return REC_UNW_EBAD;
	*out = st[sp - 1];
	return 0;
}

/* ---- one step ---- */

int rec_unw_step(rec_unw_tab *t, uint64_t bias, rec_unw_regs *regs, int pc_is_return,
                 int *signal_frame, rec_unw_read_fn rd, void *ctx)
{
	uint64_t pc, cfa, v;
	rec_unw_regs out;
	const sec *s;
	row init, r;
	fde f;
	int rc;
	unsigned i;

	*signal_frame = 0;
	if (!t || !(regs->valid >> REC_UNW_IP & 1))
		return REC_UNW_ENOINFO;
	pc = regs->r[REC_UNW_IP] - bias;
	if (pc_is_return && pc > 0)
		pc--;
	if (find_fde(t, pc, &f) < 0) {
		/* a return address right after a call at the end of a function: try the exact pc */
		if (!pc_is_return || find_fde(t, pc + 1, &f) < 0)
			return REC_UNW_ENOINFO;
	}
	s = f.s; /* the FDE and its CIE live in the same section */
	memset(&init, 0, sizeof(init));
	if (run_cfa(s, &f.c, f.c.insn, f.c.insn_end, 0, UINT64_MAX, &init, NULL) < 0)
		return REC_UNW_EBAD;
	r = init;
	if (run_cfa(s, &f.c, f.insn, f.insn_end, f.start, pc, &r, &init) < 0)
		return REC_UNW_EBAD;

	if (r.cfa_is_expr) {
		if ((rc = eval_expr(s, r.cfa_expr, r.cfa_expr_len, regs, 0, 0, rd, ctx, &cfa)) < 0)
			return rc;
	} else {
		if (r.cfa_reg >= REC_UNW_NREGS || !(regs->valid >> r.cfa_reg & 1))
			return REC_UNW_EBAD;
		cfa = regs->r[r.cfa_reg] + (uint64_t)r.cfa_off;
	}
	out = *regs;
	for (i = 0; i < REC_UNW_NREGS; i++) {
		const rule *ru = &r.reg[i];
		switch (ru->kind) {
		case R_UNSET:
		case R_SAME:
			break;
		case R_UNDEF:
			out.valid &= ~(1u << i);
			break;
		case R_OFFSET:
			if (rd(ctx, cfa + (uint64_t)ru->val, &out.r[i]) < 0)
				return REC_UNW_EMEM;
			out.valid |= 1u << i;
			break;
		case R_VAL_OFFSET:
			out.r[i] = cfa + (uint64_t)ru->val;
			out.valid |= 1u << i;
			break;
		case R_REG:
			if (ru->val < 0 || ru->val >= REC_UNW_NREGS || !(regs->valid >> ru->val & 1))
				return REC_UNW_EBAD;
			out.r[i] = regs->r[ru->val];
			out.valid |= 1u << i;
			break;
		case R_EXPR:
		case R_VAL_EXPR:
			if ((rc = eval_expr(s, ru->expr, ru->expr_len, regs, 1, cfa, rd, ctx, &v)) < 0)
				return rc;
			if (ru->kind == R_EXPR && rd(ctx, v, &v) < 0)
				return REC_UNW_EMEM;
			out.r[i] = v;
			out.valid |= 1u << i;
			break;
		}
	}
	/* the return address column gives the caller's pc; the caller's stack pointer is the CFA */
	if (r.reg[f.c.ra_reg].kind == R_UNDEF || r.reg[f.c.ra_reg].kind == R_UNSET ||
	    !(out.valid >> f.c.ra_reg & 1) || out.r[f.c.ra_reg] == 0)
		return REC_UNW_EEND;
	out.r[REC_UNW_IP] = out.r[f.c.ra_reg];
	out.valid |= 1u << REC_UNW_IP;
	if (r.reg[REC_UNW_SP].kind == R_UNSET || r.reg[REC_UNW_SP].kind == R_SAME) {
		out.r[REC_UNW_SP] = cfa;
		out.valid |= 1u << REC_UNW_SP;
	}
	*signal_frame = f.c.signal;
	*regs = out;
	return 0;
}
