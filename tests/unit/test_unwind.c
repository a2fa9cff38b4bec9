/* test_unwind.c — why an offline DWARF unwind ended, and its continuation from a frame-pointer
 * callchain, on registers + stack copies captured here: a full copy; the same copy cut so that
 * it ends inside a frame (as a frame larger than perf's copy does), alone and with the chain
 * the kernel would have recorded (the stitched stack must equal the full one); and hostile
 * samples (a disagreeing chain, a cycle, wild frame and stack pointers) that must neither crash
 * nor be stitched. Beyond the copy the chain is the kernel's record and cannot be checked
 * against anything but the CFI of the frames it names: the cases here are samples whose
 * chain is what the kernel would have recorded from their registers. */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fold.h"
#include "gtt.h"
#include "model.h"
#include "testhelp.h"

#define T0 1000000000000ull

static char dir[] = "/tmp/gt-test-unwind.XXXXXX";

/* The GNU build-id of the file at path through libelf (an analysis test links no recorder
 * code); 0 when none. */
static size_t build_id_of(const char *path, uint8_t *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const void *id = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	size_t len = n > 0 && (size_t)n <= cap ? (size_t)n : 0;
	if (len)
		memcpy(buf, id, len);
	elf_end(e);
	close(fd);
	return len;
}
static uint64_t stack_end;

/* perf order for mask bits BX(1) BP(6) SP(7) IP(8) R12..R15(20..23) */
enum { R_BX, R_BP, R_SP, R_IP, R_12, R_13, R_14, R_15, N_REGS };
static uint64_t cap_regs[N_REGS];
static uint8_t cap_stack[32768];
static uint32_t cap_len;
static uint64_t cap_chain[64]; /* what the kernel's frame-pointer walk records */
static uint32_t cap_chain_n;

__attribute__((noinline, no_sanitize_address)) void tu_capture(void);
__attribute__((noinline, no_sanitize_address)) void tu_capture(void)
{
	uint64_t rsp, rbp, rip, rbx, r12, r13, r14, r15;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t"
	                 "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"
	                 : "=r"(rip), "=m"(rsp), "=m"(rbp), "=m"(rbx), "=m"(r12), "=m"(r13), "=m"(r14), "=m"(r15));
	cap_regs[R_BX] = rbx;
	cap_regs[R_BP] = rbp;
	cap_regs[R_SP] = rsp;
	cap_regs[R_IP] = rip;
	cap_regs[R_12] = r12;
	cap_regs[R_13] = r13;
	cap_regs[R_14] = r14;
	cap_regs[R_15] = r15;
	cap_len = sizeof(cap_stack);
	if (stack_end - rsp < cap_len)
		cap_len = (uint32_t)(stack_end - rsp);
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)rsp;
	for (uint32_t i = 0; i < cap_len; i++)
		cap_stack[i] = src[i];
	/* the walk perf_callchain_user does: the ip, then [fp + 8] and fp = [fp] while readable */
	cap_chain[0] = rip;
	cap_chain_n = 1;
	for (uint64_t fp = rbp; fp >= rsp && fp + 16 <= stack_end && cap_chain_n < 64;) {
		const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)fp;
		cap_chain[cap_chain_n++] = w[1];
		if (w[0] <= fp)
			break;
		fp = w[0];
	}
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void tu_mid(void);
__attribute__((noinline)) void tu_mid(void) { tu_capture(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) void tu_outer(void);
__attribute__((noinline)) void tu_outer(void) { tu_mid(); __asm__ volatile("" ::: "memory"); }

static void put(gtt_writer *w, gtt_record *r)
{
	if (gtt_write(w, r) < 0)
		printf("FAIL: gtt_write tag %u\n", r->tag);
}

/* Mapping records for this process's executable mappings of exe and libc (from /proc/self/maps). */
static int put_mappings(gtt_writer *w, uint32_t pid)
{
	char line[8192];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], path[4096] = "";
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms, &off, path) < 4)
			continue;
		if (strstr(line, "[stack]"))
			stack_end = hi;
		if (perms[2] != 'x' || path[0] != '/')
			continue;
		gtt_record r = { .tag = GTT_REC_MAPPING };
		r.u.mapping.time_ns = T0;
		r.u.mapping.pid = pid;
		r.u.mapping.prot = PROT_READ | PROT_EXEC;
		r.u.mapping.start = lo;
		r.u.mapping.end = hi;
		r.u.mapping.pgoff = off;
		r.u.mapping.build_id_len = (uint32_t)build_id_of(path, r.u.mapping.build_id, GTT_BUILD_ID_MAX);
		r.u.mapping.path = path;
		put(w, &r);
		n++;
	}
	fclose(f);
	return n;
}

static uint64_t t_next = T0 + 1;

static void put_sample(gtt_writer *w, const uint64_t *regs, const uint8_t *stack, uint32_t len, const uint64_t *chain,
                       uint32_t n_chain)
{
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	r.u.sample.time_ns = t_next++;
	r.u.sample.pid = 300;
	r.u.sample.tid = 300;
	r.u.sample.flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
	r.u.sample.period_ns = 1000000;
	r.u.sample.regs_abi = 2;
	r.u.sample.regs_mask = (1ull << 1) | (1ull << 6) | (1ull << 7) | (1ull << 8) | (0xfull << 20);
	r.u.sample.n_regs = N_REGS;
	r.u.sample.regs = regs;
	r.u.sample.stack_len = len;
	r.u.sample.stack = stack;
	r.u.sample.n_user = n_chain;
	r.u.sample.ips = n_chain ? chain : NULL;
	put(w, &r);
}

/* "root;...;leaf" of sample i's stack into buf. */
static const char *stack_text(const ana_model *m, size_t i, char *buf, size_t cap)
{
	const ana_stack *st = &m->stacks.v[m->samples.v[i].stack_id];
	buf[0] = 0;
	for (uint32_t k = 0; k < st->n; k++) {
		size_t used = strlen(buf);
		snprintf(buf + used, cap - used, "%s%s", k ? ";" : "", m->frames.v[st->frames[k]].name);
	}
	return buf;
}

static uint64_t word_at(uint64_t addr)
{
	uint64_t v = 0;
	if (addr >= cap_regs[R_SP] && addr - cap_regs[R_SP] + 8 <= cap_len)
		memcpy(&v, cap_stack + (addr - cap_regs[R_SP]), 8);
	return v;
}

int main(void)
{
	if (!mkdtemp(dir)) {
		printf("FAIL: mkdtemp\n");
		return 1;
	}
	/* main's own frame stays small: the whole copy must reach past it to the root */
	static char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/unwind.gtt", dir);
	int e;
	gtt_writer *w = gtt_writer_open(path, &e);
	if (!w) {
		printf("FAIL: cannot write %s\n", path);
		return 1;
	}
	th_check(put_mappings(w, 300) > 0, "this process's executable mappings recorded");
	tu_outer();
	/* the copy cut just below tu_mid's return address: the unwind finds tu_capture and tu_mid,
	 * and tu_mid's caller lies above the copy, as above a frame larger than perf's copy */
	uint64_t rbp_mid = word_at(cap_regs[R_BP]);
	uint32_t cut = rbp_mid > cap_regs[R_SP] ? (uint32_t)(rbp_mid + 8 - cap_regs[R_SP]) : 0;
	th_check(cut > 16 && cut < cap_len && cap_chain_n >= 4,
	         "captured: %u stack bytes, tu_mid's frame at +%u, a %u-entry frame-pointer chain", cap_len, cut,
	         cap_chain_n);
	if (!(cut > 16 && cut < cap_len && cap_chain_n >= 4)) {
		gtt_writer_close(w);
		return th_report();
	}
	put_sample(w, cap_regs, cap_stack, cap_len, NULL, 0);                  /* 0: whole copy */
	put_sample(w, cap_regs, cap_stack, cut, NULL, 0);                      /* 1: cut, no chain */
	put_sample(w, cap_regs, cap_stack, cut, cap_chain, cap_chain_n);       /* 2: cut + chain */
	static uint64_t bad_chain[64];
	memcpy(bad_chain, cap_chain, sizeof(bad_chain));
	bad_chain[1] ^= 0x10; /* the chain's first return address disagrees with the stack */
	put_sample(w, cap_regs, cap_stack, cut, bad_chain, cap_chain_n);       /* 3: disagreeing */
	static uint64_t wild[N_REGS];
	memcpy(wild, cap_regs, sizeof(wild));
	wild[R_BP] = UINT64_MAX - 7; /* a frame pointer that wraps around: the kernel's walk stops */
	put_sample(w, wild, cap_stack, cut, cap_chain, 1);                     /* 4: wild rbp */
	/* 5: a cycle: rbp points at a slot that points at itself, return address as recorded */
	static uint8_t cyc[32768];
	memcpy(cyc, cap_stack, cut);
	uint64_t self = cap_regs[R_BP];
	memcpy(cyc + (self - cap_regs[R_SP]), &self, 8);
	static uint64_t cyc_chain[64];
	for (int i = 0; i < 64; i++)
		cyc_chain[i] = i == 0 ? cap_chain[0] : cap_chain[1];
	put_sample(w, cap_regs, cyc, cut, cyc_chain, 64);
	/* 6: a stack pointer at the top of the address space (offsets from it wrap around) */
	static uint64_t top[N_REGS];
	memcpy(top, cap_regs, sizeof(top));
	top[R_SP] = UINT64_MAX - 15;
	top[R_BP] = UINT64_MAX - 7;
	put_sample(w, top, cap_stack, cut, cap_chain, 1);
	gtt_writer_close(w);

	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(path, &o, err, sizeof(err));
	th_check(m != NULL, "trace loads (%s)", m ? "ok" : err);
	if (!m || m->samples.n != 7) {
		ana_model_free(m);
		return th_report();
	}
	static char full[4096], got[4096];
	stack_text(m, 0, full, sizeof(full));
	const ana_sample *s = m->samples.v;
	th_check(strstr(full, "main;tu_outer;tu_mid;tu_capture") != NULL, "whole copy: unwound through main (%s)", full);
	int libc_named = strstr(full, "__libc_start_call_main;main;") != NULL;
	if (libc_named)
		th_check(s[0].unwind == ANA_UNWIND_ROOT && s[0].unwind_ok, "whole copy: reaches its root (%s: %s)",
		         ana_unwind_name(s[0].unwind), full);
	else
		printf("SKIP: libc's symbols are not available here: no root check (%s)\n", full);

	th_check(strcmp(stack_text(m, 1, got, sizeof(got)), "tu_mid;tu_capture") == 0 &&
	             s[1].unwind == ANA_UNWIND_STACK_END && !s[1].unwind_ok,
	         "cut copy: ends in tu_mid, stack copy too short (%s: %s)", ana_unwind_name(s[1].unwind), got);
	stack_text(m, 2, got, sizeof(got));
	th_check(strcmp(got, full) == 0, "cut copy + chain: the stitched stack is the whole one (%s)", got);
	if (libc_named)
		th_check(s[2].unwind == ANA_UNWIND_STITCHED && s[2].unwind_ok, "cut copy + chain: counted as stitched (%s)",
		         ana_unwind_name(s[2].unwind));
	for (size_t i = 3; i < 7; i++) {
		static const char *const what[] = { "", "", "", "disagreeing chain", "wild rbp", "cyclic chain",
			                            "stack pointer at the top" };
		stack_text(m, i, got, sizeof(got));
		got[200] = 0;
		th_check(s[i].unwind != ANA_UNWIND_STITCHED && !s[i].unwind_ok && strstr(got, "tu_outer") == NULL,
		         "%s: not used, the stack stays truncated (%s: %s)", what[i], ana_unwind_name(s[i].unwind), got);
	}
	/* the health table's rows: by thread, reason and frame */
	uint64_t at_mid = 0;
	for (size_t i = 0; i < m->truncs.n; i++)
		if (m->truncs.v[i].unwind == ANA_UNWIND_STACK_END && m->truncs.v[i].frame != ANA_NO_ID &&
		    strcmp(m->frames.v[m->truncs.v[i].frame].name, "tu_mid") == 0)
			at_mid += m->truncs.v[i].n_samples;
	th_check(at_mid >= 2, "truncated stacks counted at tu_mid, stack copy too short (%" PRIu64 ")", at_mid);
	ana_folded fd;
	ana_fold_opts fo;
	ana_fold_opts_init(&fo);
	int under = 0;
	if (ana_fold(m, &fo, &fd) == 0) {
		for (size_t i = 0; i < fd.n; i++)
			if (strncmp(fd.lines[i].stack, "[truncated];tu_mid;tu_capture", 29) == 0)
				under += (int)fd.lines[i].count;
		ana_folded_free(&fd);
	}
	th_check(under >= 2, "fold: truncated stacks under [truncated] (%d)", under);
	ana_model_free(m);
	static char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("note: could not remove %s\n", dir);
	return th_report();
}
