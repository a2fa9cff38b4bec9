/* test_rec_unwind.c — gt-record's own CFI unwinder (record/unwind.c through record/addrspace.c)
 * against glibc's backtrace() (libgcc's unwinder) on this very process: plain calls through
 * functions without frame pointers, through a signal handler, and through libc; and the CFA
 * program and DWARF expressions on hand-made .eh_frame entries (PLT-style expression CFA,
 * remember/restore state, expression and val_offset rules, a truncated entry). */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addrspace.h"
#include "elfimg.h"
#include "procmem.h"
#include "symtab.h"
#include "testhelp.h"
#include "unwind.h"

#if defined(__x86_64__)

#define MAX_FRAMES 64

static rec_procmem *g_mem;

static int read_self(void *ctx, uint64_t addr, uint64_t *val)
{
	(void)ctx;
	return rec_procmem_read(g_mem, addr, val, 8);
}

/* The registers where this macro stands: rip of the lea, and the callee-saved set. */
#define CAPTURE(R_)                                                                                  \
	do {                                                                                            \
		uint64_t ip_, sp_, bp_, bx_, r12_, r13_, r14_, r15_;                                        \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t" \
		                 "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"         \
		                 : "=&r"(ip_), "=&r"(sp_), "=&r"(bp_), "=&r"(bx_), "=&r"(r12_), "=&r"(r13_),  \
		                   "=&r"(r14_), "=&r"(r15_));                                                \
		memset(&(R_), 0, sizeof(R_));                                                                 \
		(R_).r[16] = ip_; (R_).r[7] = sp_; (R_).r[6] = bp_; (R_).r[3] = bx_;                           \
		(R_).r[12] = r12_; (R_).r[13] = r13_; (R_).r[14] = r14_; (R_).r[15] = r15_;                    \
		(R_).valid = 1u << 16 | 1u << 7 | 1u << 6 | 1u << 3 | 0xfu << 12;                            \
	} while (0)

/* What level3 saw: our unwind, done right there (the frames above are live only then), and
 * backtrace()'s. */
typedef struct snap {
	rec_unw_regs regs;
	rec_as_frame fr[MAX_FRAMES];
	size_t n;
	int end;
	void *bt[MAX_FRAMES];
	int n_bt;
} snap;

static rec_as *g_as;

static snap g_plain, g_sig;
static volatile int g_sink;

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

static NOFP void level3(snap *s)
{
	CAPTURE(s->regs);
	s->n = rec_as_unwind(g_as, &s->regs, read_self, NULL, s->fr, MAX_FRAMES, &s->end);
	s->n_bt = backtrace(s->bt, MAX_FRAMES);
	g_sink++;
}

static NOFP void level2(snap *s, int depth)
{
	char pad[200];
	memset(pad, depth, sizeof(pad));
	g_sink += pad[depth % 200];
	if (depth > 0)
		level2(s, depth - 1);
	else
		level3(s);
	g_sink++;
}

static NOFP void level1(snap *s)
{
	level2(s, 3);
	g_sink++;
}

static void on_signal(int sig)
{
	(void)sig;
	level3(&g_sig);
}

static NOFP void sig_level(void)
{
	raise(SIGUSR1);
	g_sink++;
}

/* Compare our unwind of s with its backtrace(): frame i (i >= 1) against the matching bt[]. Returns the
 * number of frames that matched, -1 at the first mismatch. */
static int compare(rec_as *as, const snap *s, const char *what)
{
	const rec_as_frame *fr = s->fr;
	int end = s->end, i, ok = 0, off = -1, j;
	size_t n = s->n;

	th_check(n >= 5, "%s: unwound %zu frames (stopped: %s)", what, n, rec_as_end_name(end));
	th_check(end == REC_AS_END_ROOT, "%s: the unwind reached the root (%s)", what, rec_as_end_name(end));
	/* backtrace() starts in itself or in level3 (ASan's interceptor adds a frame): align on
	 * our frame 1, the return address into level3's caller */
	for (j = 0; j < s->n_bt && off < 0; j++)
		if (n > 1 && (uint64_t)(uintptr_t)s->bt[j] == fr[1].pc)
			off = j - 1;
	if (off < 0) {
		th_check(0, "%s: our frame 1 (%#llx) is nowhere in backtrace()'s %d frames", what,
		         n > 1 ? (unsigned long long)fr[1].pc : 0ull, s->n_bt);
		return -1;
	}
	for (i = 1; i < (int)n && i + off < s->n_bt; i++) {
		if ((uint64_t)(uintptr_t)s->bt[i + off] != fr[i].pc) {
			rec_as_sym a, b;
			char na[256], nb[256];
			rec_as_symbolize(as, fr[i].pc, fr[i].exact, &a, na, sizeof(na));
			rec_as_symbolize(as, (uint64_t)(uintptr_t)s->bt[i + off], 0, &b, nb, sizeof(nb));
			th_check(0, "%s: frame %d is %s (%#llx), backtrace() says %s (%#llx)", what, i,
			         a.name ? a.name : "?", (unsigned long long)fr[i].pc, b.name ? b.name : "?",
			         (unsigned long long)(uintptr_t)s->bt[i + off]);
			return -1;
		}
		ok++;
	}
	th_check((int)n == s->n_bt - off, "%s: %zu frames, backtrace() %d from its level3; all %d return addresses equal",
	         what, n, s->n_bt - off, ok);
	return ok;
}

/* Names of our frames joined by ';' (root last). */
static void names(rec_as *as, const snap *s, char *out, size_t cap)
{
	const rec_as_frame *fr = s->fr;
	size_t n = s->n, i, k = 0;

	out[0] = 0;
	for (i = 0; i < n && k + 1 < cap; i++) {
		rec_as_sym sy;
		char nb[256];
		rec_as_symbolize(as, fr[i].pc, fr[i].exact, &sy, nb, sizeof(nb));
		k += (size_t)snprintf(out + k, cap - k, "%s%s", i ? ";" : "",
		                      fr[i].trampoline ? "<signal>" : sy.name ? sy.name : "?");
	}
}

static void test_self(void)
{
	int err;
	rec_as *as;
	char buf[4096];

	g_mem = rec_procmem_open(getpid());
	as = g_as = rec_as_open(getpid(), g_mem, &err);
	th_check(as != NULL, "rec_as_open on this process (%s)", as ? "ok" : strerror(err));
	if (!as)
		return;
	level1(&g_plain);
	signal(SIGUSR1, on_signal);
	sig_level();
	compare(as, &g_plain, "plain calls without frame pointers");
	names(as, &g_plain, buf, sizeof(buf));
	/* gcc may name its clones level2.constprop.0 */
	th_check(strncmp(buf, "level3;level2", 13) == 0 && strstr(buf, ";level1") &&
	         strstr(buf, ";test_self;main;") && strstr(buf, "_start"), "names of the plain chain: %.160s", buf);
	compare(as, &g_sig, "through a signal handler");
	names(as, &g_sig, buf, sizeof(buf));
	/* on_signal tail-calls level3 (unless built without optimization) */
	th_check((strncmp(buf, "level3;<signal>;", 16) == 0 || strncmp(buf, "level3;on_signal;<signal>;", 26) == 0) &&
	         strstr(buf, ";raise;sig_level;test_self;main;"),
	         "names through the signal frame: %.160s", buf);
	{
		/* a pc in no mapping stops at once */
		rec_unw_regs r = g_plain.regs;
		rec_as_frame fr[4];
		int end;
		size_t n;
		r.r[16] = 16;
		n = rec_as_unwind(as, &r, read_self, NULL, fr, 4, &end);
		th_check(n == 1 && end == REC_AS_END_NOMAP, "an unmapped pc: 1 frame, 'outside any mapping' (%zu, %s)", n,
		         rec_as_end_name(end));
	}
	rec_as_close(as);
	rec_procmem_close(g_mem);
}

/* ---- hand-made CFI ---- */

/* A minimal ELF64 with one .eh_frame section (at link address EH_ADDR) holding eh[0..len). */
#define EH_ADDR 0x10000u
typedef struct fake_elf {
	uint8_t *buf;
	size_t len;
	rec_elfimg img;
} fake_elf;

static void fake_elf_make(fake_elf *f, const uint8_t *eh, size_t len)
{
	static const char shstr[] = "\0.eh_frame\0.shstrtab";
	size_t off_eh = sizeof(Elf64_Ehdr), off_str = off_eh + ((len + 7) & ~7ul),
	       off_sh = off_str + ((sizeof(shstr) + 7) & ~7ul);
	Elf64_Ehdr *eh_;
	Elf64_Shdr *sh;

	f->len = off_sh + 3 * sizeof(Elf64_Shdr);
	f->buf = calloc(1, f->len);
	eh_ = (Elf64_Ehdr *)f->buf;
	memcpy(eh_->e_ident, ELFMAG, SELFMAG);
	eh_->e_ident[EI_CLASS] = ELFCLASS64;
	eh_->e_ident[EI_DATA] = ELFDATA2LSB;
	eh_->e_shoff = off_sh;
	eh_->e_shentsize = sizeof(Elf64_Shdr);
	eh_->e_shnum = 3;
	eh_->e_shstrndx = 2;
	memcpy(f->buf + off_eh, eh, len);
	memcpy(f->buf + off_str, shstr, sizeof(shstr));
	sh = (Elf64_Shdr *)(f->buf + off_sh);
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_addr = EH_ADDR, .sh_offset = off_eh,
	                      .sh_size = len };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = off_str, .sh_size = sizeof(shstr) };
	rec_elfimg_init(&f->img, f->buf, f->len);
}

/* .eh_frame bytes: a CIE (code align 1, data align -8, RA column 16, 'zR' with absolute
 * udata8 FDE pointers; initial CFA rsp+8, RA at CFA-8), then one FDE for [start, start+range)
 * with the program prog. Returns the length. */
static size_t make_eh(uint8_t *out, uint64_t start, uint64_t range, const uint8_t *prog, size_t plen)
{
	static const uint8_t cie[] = {
		0x14, 0, 0, 0,  0, 0, 0, 0,  1, 'z', 'R', 0,  1, 0x78, 16,  1, 0x04 /* udata8 absptr */,
		0x0c, 7, 8,  0x90, 1, /* def_cfa rsp+8; offset r16 at cfa-8 */ 0, 0,
	};
	size_t n = sizeof(cie), fde_len = 4 + 8 + 8 + 1 + plen, pad = (8 - (4 + fde_len) % 8) % 8;
	uint32_t l = (uint32_t)(fde_len + pad), cie_ptr = (uint32_t)(n + 4);

	memcpy(out, cie, n);
	memcpy(out + n, &l, 4);
	memcpy(out + n + 4, &cie_ptr, 4);
	memcpy(out + n + 8, &start, 8);
	memcpy(out + n + 16, &range, 8);
	out[n + 24] = 0; /* augmentation data length */
	memcpy(out + n + 25, prog, plen);
	memset(out + n + 25 + plen, 0, pad);
	n += 4 + l;
	memset(out + n, 0, 4); /* terminator */
	return n + 4;
}

static uint64_t g_fake_stack[64];
#define FAKE_SP 0x7000u

static int read_fake(void *ctx, uint64_t addr, uint64_t *val)
{
	(void)ctx;
	if (addr < FAKE_SP || addr + 8 > FAKE_SP + sizeof(g_fake_stack) || (addr & 7))
		return -1;
	*val = g_fake_stack[(addr - FAKE_SP) / 8];
	return 0;
}

/* Step once from pc with rsp = FAKE_SP and rbp = FAKE_SP + 0x40 through the FDE program. */
static int fake_step(const uint8_t *prog, size_t plen, uint64_t pc, rec_unw_regs *r, int *sig)
{
	uint8_t eh[256];
	fake_elf f;
	rec_unw_tab *t;
	int rc;

	fake_elf_make(&f, eh, make_eh(eh, 0x1000, 0x100, prog, plen));
	t = rec_unw_tab_create(&f.img, NULL);
	memset(r, 0, sizeof(*r));
	r->r[16] = pc;
	r->r[7] = FAKE_SP;
	r->r[6] = FAKE_SP + 0x40;
	r->valid = 1u << 16 | 1u << 7 | 1u << 6;
	rc = t ? rec_unw_step(t, 0, r, 0, sig, read_fake, NULL) : -100;
	rec_unw_tab_destroy(t);
	free(f.buf);
	return rc;
}

static void test_fake(void)
{
	rec_unw_regs r;
	int sig, rc, i;

	for (i = 0; i < 64; i++)
		g_fake_stack[i] = 0x1000000u + (uint64_t)i * 8; /* word i tells its own offset */

	/* push rbp at +1 (cfa rsp+16, rbp at cfa-16), mov rsp,rbp at +4 (cfa rbp+16) */
	{
		static const uint8_t prog[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6 };
		rc = fake_step(prog, sizeof(prog), 0x1000, &r, &sig);
		th_check(rc == 0 && r.r[16] == 0x1000000u && r.r[7] == FAKE_SP + 8,
		         "CFI at function entry: ra at [rsp], caller rsp = rsp+8 (rc %d)", rc);
		rc = fake_step(prog, sizeof(prog), 0x1002, &r, &sig);
		th_check(rc == 0 && r.r[16] == 0x1000008u && r.r[6] == 0x1000000u && r.r[7] == FAKE_SP + 16,
		         "after push rbp: ra at [rsp+8], rbp restored from [rsp] (rc %d)", rc);
		rc = fake_step(prog, sizeof(prog), 0x1010, &r, &sig);
		th_check(rc == 0 && r.r[16] == 0x1000000u + 0x48 && r.r[7] == FAKE_SP + 0x50,
		         "after mov rsp,rbp: CFA from rbp+16 (rc %d, ra %#llx)", rc, (unsigned long long)r.r[16]);
	}
	/* epilogue: remember_state, def_cfa_offset 8, (ret), restore_state */
	{
		static const uint8_t prog[] = { 0x41, 0x0e, 32, 0x42, 0x0a, 0x0e, 8, 0x41, 0x0b };
		rc = fake_step(prog, sizeof(prog), 0x1003, &r, &sig);
		th_check(rc == 0 && r.r[7] == FAKE_SP + 8, "between remember and restore: CFA offset 8 (rc %d)", rc);
		rc = fake_step(prog, sizeof(prog), 0x1005, &r, &sig);
		th_check(rc == 0 && r.r[7] == FAKE_SP + 32 && r.r[16] == 0x1000000u + 24,
		         "after restore_state: the CFA offset 32 is back (rc %d)", rc);
	}
	/* PLT-style CFA: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
	{
		static const uint8_t prog[] = { 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
		rc = fake_step(prog, sizeof(prog), 0x1006, &r, &sig);
		th_check(rc == 0 && r.r[7] == FAKE_SP + 8 && r.r[16] == 0x1000000u, "PLT expression, rip&15 = 6: CFA rsp+8 (rc %d)", rc);
		rc = fake_step(prog, sizeof(prog), 0x100c, &r, &sig);
		th_check(rc == 0 && r.r[7] == FAKE_SP + 16 && r.r[16] == 0x1000008u,
		         "PLT expression, rip&15 = 12: CFA rsp+16 (rc %d)", rc);
	}
	/* expression rule: rbx at [rsp + 0x20]; val_offset: rbp = CFA - 8 */
	{
		static const uint8_t prog[] = { 0x10, 3, 2, 0x77, 0x20, 0x14, 6, 1 };
		rc = fake_step(prog, sizeof(prog), 0x1000, &r, &sig);
		th_check(rc == 0 && r.r[3] == 0x1000000u + 0x20 && (r.valid >> 3 & 1) && r.r[6] == FAKE_SP,
		         "DW_CFA_expression and val_offset rules (rc %d, rbx %#llx, rbp %#llx)", rc,
		         (unsigned long long)r.r[3], (unsigned long long)r.r[6]);
	}
	/* RA undefined: the outermost frame */
	{
		static const uint8_t prog[] = { 0x07, 16 };
		rc = fake_step(prog, sizeof(prog), 0x1000, &r, &sig);
		th_check(rc == REC_UNW_EEND, "undefined return address: the end (rc %d)", rc);
	}
	/* an unknown opcode, a pc outside the FDE, an unreadable slot */
	{
		static const uint8_t bad[] = { 0x3f };
		static const uint8_t far[] = { 0x0e, 0x80, 0x08 }; /* CFA rsp+1024: beyond the fake stack */
		th_check(fake_step(bad, sizeof(bad), 0x1000, &r, &sig) == REC_UNW_EBAD, "an unknown CFA opcode: EBAD");
		th_check(fake_step(bad, sizeof(bad), 0x2000, &r, &sig) == REC_UNW_ENOINFO, "a pc no FDE covers: ENOINFO");
		th_check(fake_step(far, sizeof(far), 0x1000, &r, &sig) == REC_UNW_EMEM, "an unreadable return address: EMEM");
	}
	/* truncated tables never read out of bounds (run under ASan in check-asan) */
	{
		static const uint8_t prog[] = { 0x41, 0x0e, 16, 0x86, 2 };
		uint8_t eh[256];
		size_t n = make_eh(eh, 0x1000, 0x100, prog, sizeof(prog)), cut, fails = 0;
		for (cut = 0; cut < n; cut++) {
			fake_elf f;
			rec_unw_tab *t;
			uint8_t *copy = malloc(cut ? cut : 1);
			memcpy(copy, eh, cut);
			fake_elf_make(&f, copy, cut);
			t = rec_unw_tab_create(&f.img, NULL);
			memset(&r, 0, sizeof(r));
			r.r[16] = 0x1002;
			r.r[7] = FAKE_SP;
			r.valid = 1u << 16 | 1u << 7;
			if (t && rec_unw_step(t, 0, &r, 0, &sig, read_fake, NULL) == 0 && cut < n - 4)
				fails++;
			rec_unw_tab_destroy(t);
			free(f.buf);
			free(copy);
		}
		th_check(fails == 0, "every truncation of the table: no step from a cut entry (%zu)", fails);
	}
}

static void test_names(void)
{
	char buf[256];
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);

	th_check(strcmp(rec_sym_display("memcpy@@GLIBC_2.14", buf, sizeof(buf)), "memcpy") == 0,
	         "an ELF version goes: %s", buf);
	rec_sym_display("_ZN2at6native12_GLOBAL__N_14gemmEv", buf, sizeof(buf));
	if (h || access("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", F_OK) == 0)
		th_check(strcmp(buf, "at::native::(anonymous namespace)::gemm()") == 0, "C++ demangled: %s", buf);
	else
		printf("SKIP: no libstdc++ to demangle with\n");
	th_check(strcmp(rec_sym_display("_Znot_a_name", buf, sizeof(buf)), "_Znot_a_name") == 0,
	         "an invalid mangled name stays as it is: %s", buf);
	rec_sym_display("_ZN2at6native12_GLOBAL__N_14gemmEv", buf, 8);
	th_check(strlen(buf) == 7, "cut to the buffer: '%s'", buf);
}

int main(void)
{
	test_self();
	test_fake();
	test_names();
	return th_report();
}

#else
int main(void)
{
	printf("SKIP: the unwinder is x86-64 only\n0 passed, 0 failed\n");
	return 0;
}
#endif
