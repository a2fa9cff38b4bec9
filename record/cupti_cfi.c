/* cupti_cfi.c — the fast native stack walk of the CUDA agent's launch stacks (x86-64): the unwind
 * rule at each return address — where the canonical frame address (CFA) is, and where the return
 * address and the caller's rbp were saved — is computed once from the object's .eh_frame (found
 * through .eh_frame_hdr's binary search table) and kept in a process-wide cache; a walk is then
 * one cache probe and two stack loads per frame, where libgcc's _Unwind_Backtrace looks the FDE
 * up and runs its CFA program again at every frame of every stack (10-30 us for a deep PyTorch
 * stack on the H200). A rule the cache cannot express (signal frames, DWARF expressions, a CFA
 * kept in another register) makes the whole walk fall back to libgcc (cupti_unwind.c), so the
 * frames are always the same as libgcc's. Every stack load is checked against the thread's stack
 * bounds: a wrong rule ends the walk, it never faults. */
#include "cupti_cfi.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)

#define CACHE_SIZE (1u << 15)   /* return addresses whose rule is kept (16 bytes each) */
#define PROBES 8
#define STATE_STACK 8           /* DW_CFA_remember_state depth */
#define BUSY 1ull               /* a cache slot being filled */

/* A rule, packed: kind in bits 0-1, CFA register in bit 2 (0 rsp, 1 rbp), CFA offset in bits 3-34
 * (signed), return address slot in bits 35-42 and rbp slot in bits 43-50 (signed, in 8-byte
 * words from the CFA; rbp slot 0 = rbp unchanged). */
enum { R_EMPTY = 0, R_FRAME = 1, R_END = 2, R_OTHER = 3 };
#define RULE(kind, bp_base, off, ra, bp)                                                                     \
	((uint64_t)(kind) | (uint64_t)(bp_base) << 2 | (uint64_t)(uint32_t)(int32_t)(off) << 3 |                  \
	 (uint64_t)(uint8_t)(int8_t)(ra) << 35 | (uint64_t)(uint8_t)(int8_t)(bp) << 43)
#define R_KIND(r) ((int)((r) & 3))
#define R_BPBASE(r) ((int)(((r) >> 2) & 1))
#define R_OFF(r) ((int64_t)(int32_t)(uint32_t)((r) >> 3))
#define R_RA(r) ((int64_t)(int8_t)(uint8_t)((r) >> 35))
#define R_BP(r) ((int64_t)(int8_t)(uint8_t)((r) >> 43))

typedef struct cent {
	uint64_t ip;                /* 0 free, BUSY being filled, else the key */
	uint64_t rule;
} cent;

/* glibc 2.35's _dl_find_object, looked up at run time (older glibc: dl_iterate_phdr) */
typedef struct dlfo {
	unsigned long long flags;
	void *map_start, *map_end, *link_map, *eh_frame;
	unsigned long long reserved[16];
} dlfo;
typedef int (*find_fn)(void *, dlfo *);

static struct {
	pthread_once_t once;
	find_fn find;
	cent cache[CACHE_SIZE];
	ag_cfi_stats st;
} C = { .once = PTHREAD_ONCE_INIT };

static __thread uint64_t stack_lo, stack_hi;    /* this thread's stack, once known */

#define ADD(field) __atomic_fetch_add(&C.st.field, 1, __ATOMIC_RELAXED)

static void load(void)
{
	C.find = (find_fn)dlsym(RTLD_DEFAULT, "_dl_find_object");
}

/* ---- reading .eh_frame ---- */

typedef struct rd {
	const uint8_t *p, *end;
	int bad;
} rd;

static uint64_t uleb(rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t sleb(rd *r)
{
	int64_t v = 0;
	int shift = 0;
	uint8_t b = 0x80;
	while (r->p < r->end && shift < 64 && (b & 0x80)) {
		b = *r->p++;
		v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
	}
	if (b & 0x80) {
		r->bad = 1;
		return 0;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

static uint64_t fixed(rd *r, int n)
{
	uint64_t v = 0;
	if (r->end - r->p < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, (size_t)n);    /* little-endian */
	r->p += n;
	return v;
}

/* A pointer in DW_EH_PE encoding enc (pcrel and datarel only, as x86-64 .eh_frame uses). */
static uint64_t eh_ptr(rd *r, uint8_t enc, uint64_t datarel)
{
	if (enc == 0xff)
		return 0;
	uint64_t at = (uint64_t)(uintptr_t)r->p, v;
	switch (enc & 0x0f) {
	case 0x00: v = fixed(r, 8); break;
	case 0x01: v = uleb(r); break;
	case 0x02: v = fixed(r, 2); break;
	case 0x03: v = fixed(r, 4); break;
	case 0x04: v = fixed(r, 8); break;
	case 0x09: v = (uint64_t)sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(r, 4); break;
	case 0x0c: v = fixed(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;
	case 0x30: v += datarel; break;
	default: r->bad = 1; return 0;
	}
	if (enc & 0x80)
		r->bad = 1;    /* indirect: only personality pointers, which we skip by size */
	return v;
}

/* The state of the two registers a walk needs, and the CFA. */
typedef struct regs {
	int cfa_reg;                /* 7 rsp, 6 rbp, -1 something else */
	int64_t cfa_off;
	int ra_how, bp_how;         /* 0 unchanged/undefined, 1 saved at CFA + off, 2 undefined (RA: end), 3 other */
	int64_t ra_off, bp_off;
} regs;

static void set_reg(regs *s, uint64_t reg, int how, int64_t off)
{
	if (reg == 16) {
		s->ra_how = how;
		s->ra_off = off;
	} else if (reg == 6) {
		s->bp_how = how;
		s->bp_off = off;
	}
}

/* Run CFA instructions [p, end) while the location stays <= target. 0, or -1 for what we cannot
 * follow. init: the state after the CIE's instructions (for DW_CFA_restore). */
static int run(rd *r, uint64_t loc, uint64_t target, uint64_t caf, int64_t daf, regs *s, const regs *init)
{
	regs saved[STATE_STACK];
	int n_saved = 0;
	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++, low = op & 0x3f;
		uint64_t reg, adv = 0;
		switch (op >> 6) {
		case 1: adv = low * caf; goto advance;
		case 2: set_reg(s, low, 1, (int64_t)uleb(r) * daf); continue;
		case 3:
			if (low == 16) { s->ra_how = init->ra_how; s->ra_off = init->ra_off; }
			if (low == 6) { s->bp_how = init->bp_how; s->bp_off = init->bp_off; }
			continue;
		default: break;
		}
		switch (op) {
		case 0x00: continue;
		case 0x02: adv = fixed(r, 1) * caf; goto advance;
		case 0x03: adv = fixed(r, 2) * caf; goto advance;
		case 0x04: adv = fixed(r, 4) * caf; goto advance;
		case 0x05: reg = uleb(r); set_reg(s, reg, 1, (int64_t)uleb(r) * daf); continue;
		case 0x06:
			reg = uleb(r);
			if (reg == 16) { s->ra_how = init->ra_how; s->ra_off = init->ra_off; }
			if (reg == 6) { s->bp_how = init->bp_how; s->bp_off = init->bp_off; }
			continue;
		case 0x07: reg = uleb(r); set_reg(s, reg, reg == 16 ? 2 : 0, 0); continue;
		case 0x08: set_reg(s, uleb(r), 0, 0); continue;
		case 0x09: reg = uleb(r); uleb(r); set_reg(s, reg, 3, 0); continue;
		case 0x0a:
			if (n_saved == STATE_STACK)
				return -1;
			saved[n_saved++] = *s;
			continue;
		case 0x0b:
			if (!n_saved)
				return -1;
			*s = saved[--n_saved];    /* the CFA rule with the rest, as GCC's code and libgcc expect */
			continue;
		case 0x0c: s->cfa_reg = (int)uleb(r); s->cfa_off = (int64_t)uleb(r); continue;
		case 0x0d: s->cfa_reg = (int)uleb(r); continue;
		case 0x0e: s->cfa_off = (int64_t)uleb(r); continue;
		case 0x0f: s->cfa_reg = -1; r->p += uleb(r); continue;
		case 0x10: case 0x16: reg = uleb(r); r->p += uleb(r); set_reg(s, reg, 3, 0); continue;
		case 0x11: reg = uleb(r); set_reg(s, reg, 1, sleb(r) * daf); continue;
		case 0x12: s->cfa_reg = (int)uleb(r); s->cfa_off = sleb(r) * daf; continue;
		case 0x13: s->cfa_off = sleb(r) * daf; continue;
		case 0x14: reg = uleb(r); uleb(r); set_reg(s, reg, 3, 0); continue;
		case 0x15: reg = uleb(r); sleb(r); set_reg(s, reg, 3, 0); continue;
		case 0x2e: uleb(r); continue;
		case 0x2f: reg = uleb(r); set_reg(s, reg, 1, -(int64_t)uleb(r) * daf); continue;
		default: return -1;    /* DW_CFA_set_loc and vendor operations */
		}
	advance:
		loc += adv;
		if (loc > target)
			return 0;
	}
	return r->bad ? -1 : 0;
}

/* The rule at pc (inside the call instruction before a return address) from the FDE that
 * covers it; hdr is the object's .eh_frame_hdr. */
static uint64_t rule_from_hdr(const uint8_t *hdr, uint64_t pc)
{
	rd r = { hdr, hdr + 4096, 0 };
	if (fixed(&r, 1) != 1)
		return R_OTHER;
	uint8_t ptr_enc = (uint8_t)fixed(&r, 1), cnt_enc = (uint8_t)fixed(&r, 1), tab_enc = (uint8_t)fixed(&r, 1);
	uint64_t hdr_base = (uint64_t)(uintptr_t)hdr;
	eh_ptr(&r, ptr_enc, hdr_base);
	uint64_t n = eh_ptr(&r, cnt_enc, hdr_base);
	if (r.bad || tab_enc != 0x3b || n == 0)    /* datarel | sdata4: what every linker writes */
		return R_OTHER;
	const int32_t *tab = (const int32_t *)(const void *)r.p;
	uint64_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint64_t mid = (lo + hi) / 2;
		if (hdr_base + (uint64_t)(int64_t)tab[2 * mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (hdr_base + (uint64_t)(int64_t)tab[2 * lo] > pc)
		return R_END;    /* before the first function with unwind data */
	const uint8_t *fde = (const uint8_t *)(uintptr_t)(hdr_base + (uint64_t)(int64_t)tab[2 * lo + 1]);

	/* FDE: length, CIE pointer, pc_begin, pc_range, augmentation, instructions */
	rd f = { fde, fde + 12, 0 };
	uint64_t len = fixed(&f, 4);
	if (len == 0xffffffffu || len < 8)
		return R_OTHER;
	const uint8_t *fde_end = fde + 4 + len;
	f.end = fde_end;
	const uint8_t *cie_ptr_at = f.p;
	uint64_t cie_off = fixed(&f, 4);
	const uint8_t *cie = cie_ptr_at - cie_off;

	/* CIE: length, id 0, version, augmentation, code/data alignment, RA register, augmentation data */
	rd c = { cie, cie + 4, 0 };
	uint64_t clen = fixed(&c, 4);
	if (clen == 0xffffffffu || clen < 8)
		return R_OTHER;
	c.end = cie + 4 + clen;
	if (fixed(&c, 4) != 0)
		return R_OTHER;
	uint64_t version = fixed(&c, 1);
	const char *aug = (const char *)c.p;
	size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
	c.p += aug_len + 1;
	if (aug[0] && aug[0] != 'z')
		return R_OTHER;
	uint64_t caf = uleb(&c);
	int64_t daf = sleb(&c);
	uint64_t ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
	uint8_t fde_enc = 0;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&c);
		const uint8_t *aend = c.p + alen;
		for (const char *a = aug + 1; *a && !c.bad; a++) {
			if (*a == 'R') {
				fde_enc = (uint8_t)fixed(&c, 1);
			} else if (*a == 'L') {
				fixed(&c, 1);
			} else if (*a == 'P') {
				uint8_t penc = (uint8_t)fixed(&c, 1);
				eh_ptr(&c, penc & 0x7f, 0);    /* skipped: only its size matters */
			} else {
				return R_OTHER;    /* 'S' (signal frame) and anything newer */
			}
		}
		c.p = aend;
	}
	if (c.bad || ra_reg != 16)
		return R_OTHER;
	uint64_t pc_begin = eh_ptr(&f, fde_enc, 0);
	uint64_t pc_range = eh_ptr(&f, fde_enc & 0x0f, 0);
	if (f.bad)
		return R_OTHER;
	if (pc < pc_begin || pc >= pc_begin + pc_range)
		return R_END;    /* in a gap between functions: no unwind data, as for libgcc */
	if (aug[0] == 'z')
		f.p += uleb(&f);
	regs init = { .cfa_reg = 7, .cfa_off = 8, .ra_how = 1, .ra_off = -8 };
	if (run(&c, pc_begin, pc_begin, caf, daf, &init, &init) < 0)    /* loc never advances in a CIE */
		return R_OTHER;
	regs s = init;
	if (run(&f, pc_begin, pc, caf, daf, &s, &init) < 0)
		return R_OTHER;
	if (s.ra_how == 2)
		return R_END;
	if ((s.cfa_reg != 7 && s.cfa_reg != 6) || s.ra_how != 1 || s.bp_how == 2 || s.bp_how == 3 ||
	    (s.ra_off & 7) || (s.bp_off & 7) || s.cfa_off != (int32_t)s.cfa_off || s.ra_off / 8 < -128 ||
	    s.ra_off / 8 > 127 || s.bp_off / 8 < -128 || s.bp_off / 8 > 127 || (s.bp_how == 1 && s.bp_off == 0))
		return R_OTHER;
	return RULE(R_FRAME, s.cfa_reg == 6, s.cfa_off, s.ra_off / 8, s.bp_how == 1 ? s.bp_off / 8 : 0);
}

typedef struct hdr_find {
	uint64_t pc;
	const uint8_t *hdr;
} hdr_find;

static int find_hdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	hdr_find *h = arg;
	const uint8_t *hdr = NULL;
	int in = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && h->pc >= a && h->pc < a + ph->p_memsz)
			in = 1;
		else if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = (const uint8_t *)(uintptr_t)a;
	}
	if (!in)
		return 0;
	h->hdr = hdr;
	return 1;
}

static uint64_t compute(uint64_t pc)
{
	const uint8_t *hdr = NULL;
	dlfo fo;
	if (C.find) {
		if (C.find((void *)(uintptr_t)pc, &fo) != 0)
			return R_END;    /* not in any object: JIT code, or junk */
		hdr = fo.eh_frame;
	} else {
		hdr_find h = { pc, NULL };
		if (!dl_iterate_phdr(find_hdr, &h))
			return R_END;
		hdr = h.hdr;
	}
	return hdr ? rule_from_hdr(hdr, pc) : R_OTHER;
}

static uint64_t rule_of(uint64_t ip)
{
	size_t i = (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 49) & (CACHE_SIZE - 1);
	size_t free_slot = SIZE_MAX;
	for (int k = 0; k < PROBES; k++, i = (i + 1) & (CACHE_SIZE - 1)) {
		uint64_t have = __atomic_load_n(&C.cache[i].ip, __ATOMIC_ACQUIRE);
		if (have == ip)
			return C.cache[i].rule;
		if (have == 0) {
			free_slot = i;
			break;
		}
	}
	ADD(n_misses);
	uint64_t rule = compute(ip - 1);    /* the call instruction, not what follows it */
	uint64_t zero = 0;
	if (free_slot != SIZE_MAX &&
	    __atomic_compare_exchange_n(&C.cache[free_slot].ip, &zero, BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		C.cache[free_slot].rule = rule;
		__atomic_store_n(&C.cache[free_slot].ip, ip, __ATOMIC_RELEASE);
	} else if (free_slot == SIZE_MAX) {
		ADD(n_full);
	}
	return rule;
}

static int stack_bounds(uint64_t sp)
{
	if (stack_hi && sp >= stack_lo && sp < stack_hi)
		return 0;
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return -1;
	int rc = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (rc != 0)
		return -1;
	stack_lo = (uint64_t)(uintptr_t)addr;
	stack_hi = stack_lo + size;
	return sp >= stack_lo && sp < stack_hi ? 0 : -1;
}

/* ---- the unwind tables read in ahead (ag_cfi_prefetch) ---- */

#define PREFETCHED_MAX 2048
static struct {
	uint64_t hdr[PREFETCHED_MAX];   /* objects done, by their .eh_frame_hdr address */
	size_t n;
	unsigned long long adds;        /* dl_iterate_phdr's load count when last looked */
	int looked;
} P;                                /* the flush thread's alone */

static void advise(uint64_t a, uint64_t b)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), s = a & ~(pg - 1), e = (b + pg - 1) & ~(pg - 1);
	if (e > s && madvise((void *)(uintptr_t)s, (size_t)(e - s), MADV_WILLNEED) == 0)
		__atomic_fetch_add(&C.st.prefetch_bytes, e - s, __ATOMIC_RELAXED);
}

static int prefetch_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *first = arg;
	if (*first) {
		*first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
			if (P.looked && info->dlpi_adds == P.adds)
				return 1;    /* nothing loaded since the last look */
			P.adds = info->dlpi_adds;
			P.looked = 1;
		}
	}
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh || P.n == PREFETCHED_MAX)
		return 0;
	uint64_t hdr = info->dlpi_addr + eh->p_vaddr;
	for (size_t k = 0; k < P.n; k++)
		if (P.hdr[k] == hdr)
			return 0;
	P.hdr[P.n++] = hdr;
	/* the header's table, then .eh_frame from where the header says it starts to the end of the
	 * segment that holds it (its size is not in the program headers) */
	advise(hdr, hdr + eh->p_memsz);
	rd r = { (const uint8_t *)(uintptr_t)hdr, (const uint8_t *)(uintptr_t)hdr + eh->p_memsz, 0 };
	if (fixed(&r, 1) != 1)
		return 0;
	uint8_t ptr_enc = (uint8_t)fixed(&r, 1);
	fixed(&r, 2);
	uint64_t ehf = eh_ptr(&r, ptr_enc, hdr);
	if (r.bad || !ehf)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && ehf >= a && ehf < a + ph->p_memsz) {
			advise(ehf, a + ph->p_memsz);
			break;
		}
	}
	__atomic_fetch_add(&C.st.n_prefetched, 1, __ATOMIC_RELAXED);
	return 0;
}

void ag_cfi_prefetch(void)
{
	int first = 1;
	pthread_once(&C.once, load);
	dl_iterate_phdr(prefetch_one, &first);
}

__attribute__((noinline)) int ag_cfi_walk(ag_cfi_visit visit, void *arg)
{
	pthread_once(&C.once, load);
	/* our own frame has a frame pointer (the agent is built with -fno-omit-frame-pointer):
	 * [rbp] is the caller's rbp, [rbp + 8] the return address into it, rbp + 16 its rsp */
	const uint64_t *fp = __builtin_frame_address(0);
	uint64_t bp = fp[0], ip = fp[1], sp = (uint64_t)(uintptr_t)(fp + 2);
	if (stack_bounds(sp) < 0) {
		ADD(n_fallback);
		return -1;
	}
	ADD(n_walks);
	for (;;) {
		if (!ip || visit(arg, ip) != 0)
			return 0;
		uint64_t r = rule_of(ip);
		switch (R_KIND(r)) {
		case R_END:
			return 0;
		case R_FRAME:
			break;
		default:
			ADD(n_fallback);
			return -1;
		}
		uint64_t cfa = (R_BPBASE(r) ? bp : sp) + (uint64_t)R_OFF(r);
		uint64_t ra_at = cfa + (uint64_t)(R_RA(r) * 8), bp_at = cfa + (uint64_t)(R_BP(r) * 8);
		if (cfa <= sp || cfa > stack_hi || ra_at < sp || ra_at + 8 > stack_hi ||
		    (R_BP(r) && (bp_at < sp || bp_at + 8 > stack_hi))) {
			ADD(n_bad);
			return 0;    /* a rule that leaves the stack: end here, as libgcc ends at a bad frame */
		}
		ip = *(const uint64_t *)(uintptr_t)ra_at;
		if (R_BP(r))
			bp = *(const uint64_t *)(uintptr_t)bp_at;
		sp = cfa;
	}
}

#else

int ag_cfi_walk(ag_cfi_visit visit, void *arg)
{
	(void)visit;
	(void)arg;
	return -1;    /* libgcc's walk on other architectures */
}

void ag_cfi_prefetch(void)
{
}

#endif

void ag_cfi_stats_get(ag_cfi_stats *st)
{
#if defined(__x86_64__)
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*st = C.st;
#else
	memset(st, 0, sizeof(*st));
#endif
}
