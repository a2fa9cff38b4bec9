/* dwfl_unwind.c — offline DWARF unwinding of a sample's registers and stack copy with libdwfl,
 * and why it stopped; continuing a truncated unwind with the recorded frame-pointer callchain.
 *
 * libdwfl reports "end of stack" both when a frame's CFI says it has no caller and when the
 * return address could not be read (its memory callback failed): the two are told apart here
 * by watching the reads of each unwinding step and by asking the last frame's CFI itself.
 *
 * A stack frame larger than the copy (perf copies at most 64 KiB) hides every caller above it
 * from the DWARF unwinder. The kernel's frame-pointer callchain, recorded with the copy, reads
 * the real stack: where its frames agree with the DWARF ones (same return addresses in the
 * same order) it continues the stack from the last DWARF frame, one step per frame whose CFI
 * shows that it keeps a frame pointer (CFA = rbp + 16), so that no frame is taken from a chain
 * that has left the frame-pointer discipline (glibc, libpython and libcuda are built without). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "dwfl_priv.h"

/* perf's x86-64 register numbers (PERF_REG_X86_*) to DWARF register numbers; -1 unused,
 * 16 is the return-address column (rip). */
static const int8_t perf_to_dwarf[24] = {
	0, 3, 2, 1, 4, 5, 6, 7, 16, -1, -1, -1, -1, -1, -1, -1,
	8, 9, 10, 11, 12, 13, 14, 15,
};
enum { PERF_REG_BP = 6, PERF_REG_SP = 7, PERF_REG_IP = 8, DWARF_REG_RBP = 6 };

/* Reads further than this above the stack pointer are not "the copy was too short" but a
 * wrong address (a thread's stack is a few MiB). */
#define STACK_REACH_BYTES (64ull << 20)

static int sample_reg(const gtt_sample *smp, unsigned perf_reg, uint64_t *val)
{
	if (!(smp->regs_mask & (1ull << perf_reg)))
		return -1;
	unsigned idx = (unsigned)__builtin_popcountll(smp->regs_mask & ((1ull << perf_reg) - 1));
	if (idx >= smp->n_regs)
		return -1;
	*val = smp->regs[idx];
	return 0;
}

int ana_uw_sample_ip(const gtt_sample *smp, uint64_t *ip)
{
	if (!(smp->flags & GTT_SAMPLE_REGS) || smp->regs_abi != PERF_REGS_ABI_64 || sample_reg(smp, PERF_REG_IP, ip) < 0 ||
	    *ip == 0)
		return -1;
	return 0;
}

/* ---- libdwfl thread callbacks: the sample is the one thread ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	sym_space *sp = arg;
	if (*thread_argp || !sp->cur)
		return 0;
	*thread_argp = sp;
	return (pid_t)sp->cur->tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* Read 8 bytes at a runtime address from the mapped file (read-only data, code). */
static bool read_file_word(const sym_mod *md, uint64_t addr, Dwarf_Word *out)
{
	GElf_Addr bias;
	Elf *elf = md->dm ? dwfl_module_getelf(md->dm, &bias) : NULL;
	const uint8_t *p = ana_symf_bytes_at(elf, addr - md->bias, 8);
	if (!p)
		return false;
	memcpy(out, p, 8);
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	sym_space *sp = arg;
	const gtt_sample *smp = sp->cur;
	if (!smp)
		return false;
	if (addr >= sp->cur_sp && addr - sp->cur_sp <= smp->stack_len && smp->stack_len - (addr - sp->cur_sp) >= 8) {
		memcpy(result, smp->stack + (addr - sp->cur_sp), 8);
		return true;
	}
	const sym_mod *md = ana_sym_mod_find(sp, addr);
	if (md && read_file_word(md, addr, result))
		return true;
	/* which failure it was decides the reason and the remedy */
	if (!sp->uw)
		return false;
	if (addr >= sp->cur_sp && addr - sp->cur_sp < STACK_REACH_BYTES)
		sp->uw->read_beyond = 1;
	else
		sp->uw->read_bad = 1;
	return false;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	sym_space *sp = arg;
	const gtt_sample *smp = sp->cur;
	uint64_t ip;
	if (!smp || sample_reg(smp, PERF_REG_IP, &ip) < 0)
		return false;
	/* rip is DWARF register 16 as well as the pc: CFA expressions read it (the PLT's) */
	for (unsigned r = 0; r < 24; r++) {
		uint64_t v;
		if (perf_to_dwarf[r] < 0 || sample_reg(smp, r, &v) < 0)
			continue;
		Dwarf_Word w = v;
		if (!dwfl_thread_state_registers(thread, perf_to_dwarf[r], 1, &w))
			return false;
	}
	dwfl_thread_state_register_pc(thread, ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

static int cb_frame(Dwfl_Frame *state, void *arg)
{
	uw_state *u = arg;
	Dwarf_Addr pc;
	bool activation = false;
	/* reads from here on unwind this frame (dwfl_frame_pc itself unwinds a non-initial frame
	 * to learn whether its caller is a signal frame) */
	u->read_beyond = u->read_bad = 0;
	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0) {
		u->stop = ANA_UNWIND_BAD_READ;
		return DWARF_CB_ABORT;
	}
	if (u->n == MAX_UNWIND) {
		u->stop = ANA_UNWIND_DEPTH;
		return DWARF_CB_ABORT;
	}
	u->raw[u->n] = pc;
	u->exact[u->n] = activation;
	u->n++;
	/* the frame's rbp: where a frame-pointer walk would find this frame */
	Dwarf_Word rbp;
	u->last_rbp_ok = dwfl_frame_reg(state, DWARF_REG_RBP, &rbp) == 0;
	u->last_rbp = u->last_rbp_ok ? rbp : 0;
	return DWARF_CB_OK;
}

/* ---- asking a frame's CFI ---- */

/* The CFI row of the module's code at runtime address pc (free() it), or NULL. */
static Dwarf_Frame *cfi_row(const sym_space *sp, uint64_t pc)
{
	const sym_mod *md = ana_sym_mod_find(sp, pc);
	if (!md || !md->dm)
		return NULL;
	Dwarf_Addr bias;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(md->dm, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0)
		return frame;
	cfi = dwfl_module_dwarf_cfi(md->dm, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0)
		return frame;
	return NULL;
}

/* 1 when the CFI row saves the caller's rbp just below the return address (at CFA - 16),
 * where a frame-pointer walk takes the next frame pointer from. */
static int row_saves_rbp(Dwarf_Frame *frame)
{
	Dwarf_Op ops_mem[3], *ops = NULL;
	size_t nops = 0;
	return dwarf_frame_register(frame, DWARF_REG_RBP, ops_mem, &ops, &nops) == 0 && nops >= 2 && ops &&
	       ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
	       (int64_t)ops[1].number == -16;
}

/* What the CFI says at pc, from the space's cache or asked now:
 * - has_row: there is CFI for the code at pc;
 * - no_caller: the return address is "undefined" there (_start, clone's child, hand-marked
 *   thread entries): the frame has no caller;
 * - fp_frame: the code keeps rbp as its frame pointer there (CFA = rbp + 16, the caller's rbp
 *   saved below the return address): the kernel's frame-pointer walk took this frame's return
 *   address and its caller's frame pointer from the right slots. */
static cfi_fact cfi_at(sym_space *sp, uint64_t pc)
{
	cfi_fact none = { 0 };
	if (!sp->cfi)
		sp->cfi = calloc(CFI_CACHE, sizeof(*sp->cfi));
	cfi_fact *slot = sp->cfi ? &sp->cfi[ana_hash_u64(pc) & (CFI_CACHE - 1)] : &none;
	if (slot->pc == pc + 1)
		return *slot;
	cfi_fact f = { pc + 1, 0, 0, 0 };
	Dwarf_Frame *frame = cfi_row(sp, pc);
	if (frame) {
		f.has_row = 1;
		Dwarf_Op ops_mem[3], *ops = NULL;
		size_t nops = 0;
		int ra = dwarf_frame_info(frame, NULL, NULL, NULL);
		f.no_caller = ra >= 0 && dwarf_frame_register(frame, ra, ops_mem, &ops, &nops) == 0 && nops == 0 &&
		              ops == ops_mem;
		ops = NULL;
		nops = 0;
		f.fp_frame = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx &&
		             ops[0].number == DWARF_REG_RBP && ops[0].number2 == 16 && row_saves_rbp(frame);
		free(frame);
	}
	*slot = f;
	return f;
}

/* ---- unwinding ---- */

void ana_uw_dwarf(ana_sym *s, sym_space *sp, const gtt_sample *smp, uw_state *u)
{
	uint64_t rsp;
	u->stop = ANA_UNWIND_IP_ONLY;
	if (!sp->dwfl || smp->regs_abi != PERF_REGS_ABI_64 || sample_reg(smp, PERF_REG_SP, &rsp) < 0)
		return;
	if (sp->attach == 0)
		sp->attach = dwfl_attach_state(sp->dwfl, NULL, (pid_t)sp->pid, &thread_callbacks, sp) ? 1 : -1;
	if (sp->attach < 0)
		return;
	sp->cur = smp;
	sp->cur_sp = rsp;
	sp->uw = u;
	u->stop = ANA_UNWIND_ROOT;
	u->read_beyond = u->read_bad = u->last_rbp_ok = 0;
	int rc = dwfl_getthread_frames(sp->dwfl, (pid_t)(smp->tid ? smp->tid : smp->pid), cb_frame, u);
	sp->cur = NULL;
	s->st.n_dwarf++;
	u->n_dwarf = u->n;
	if (u->n == 0) {
		u->stop = ANA_UNWIND_IP_ONLY;
		return;
	}
	uint64_t last = uw_pc(u, u->n - 1);
	if (rc == 0) {
		/* libdwfl's "no caller": believed only when the CFI says so; a return address that
		 * could not be read ends the unwind the same way */
		if (cfi_at(sp, last).no_caller)
			u->stop = ANA_UNWIND_ROOT;
		else
			u->stop = u->read_beyond ? ANA_UNWIND_STACK_END : ANA_UNWIND_BAD_READ;
	} else if (rc < 0) {
		if (!cfi_at(sp, last).has_row)
			u->stop = ANA_UNWIND_NO_CFI;
		else
			u->stop = u->read_beyond ? ANA_UNWIND_STACK_END : ANA_UNWIND_BAD_READ;
	} /* else: cb_frame aborted and said why */
	if (ANA_UNWIND_TRUNCATED(u->stop))
		s->st.n_dwarf_errors++;
}

int ana_uw_stitch(sym_space *sp, const gtt_sample *smp, uw_state *u)
{
	const uint64_t *f = smp->ips + smp->n_kernel;
	size_t nf = smp->n_user, nd = u->n;
	uint64_t fp, rsp;
	if (nd == 0 || nf < 2 || f[0] != u->raw[0] || !u->last_rbp_ok || sample_reg(smp, PERF_REG_BP, &fp) < 0 ||
	    sample_reg(smp, PERF_REG_SP, &rsp) < 0)
		return 0;
	/* The kernel walked frame pointers from the sampled rbp: entry i + 1 is the word at
	 * fp_i + 8, fp_(i+1) the word at fp_i. Walk the same chain through the stack copy (it must
	 * give the recorded entries) until it leaves the copy: the frame address it leaves at is
	 * the frame of entry i + 1. */
	size_t i = 0;
	while (fp >= rsp && fp - rsp <= smp->stack_len && smp->stack_len - (fp - rsp) >= 16) {
		uint64_t next, ra;
		memcpy(&next, smp->stack + (fp - rsp), 8);
		memcpy(&ra, smp->stack + (fp - rsp) + 8, 8);
		if (i + 1 >= nf || f[i + 1] != ra)
			return 0;
		fp = next;
		i++;
	}
	/* it must leave at the last DWARF frame's own frame pointer, and that frame must keep its
	 * return address beside it: then entry i + 1 is that frame's return address */
	if (fp != u->last_rbp || !cfi_at(sp, uw_pc(u, nd - 1)).fp_frame)
		return 0;
	/* each further entry is the return address saved by a frame that keeps rbp as its frame
	 * pointer; the first frame that does not ends the chain (its own entry is still right) */
	size_t n0 = u->n;
	for (size_t k = i + 1; k < nf && u->n < MAX_UNWIND; k++) {
		if (f[k] < 2 || !ana_sym_mod_find(sp, f[k] - 1))
			break;
		u->raw[u->n] = f[k];
		u->exact[u->n] = 0;
		u->n++;
		if (!cfi_at(sp, f[k] - 1).fp_frame)
			break;
	}
	if (u->n == n0)
		return 0;
	u->stitched = 1;
	return 1;
}

/* ---- the callers of thread entry functions ---- */

/* Frames of one function compare by their interned name and module: the executing line makes
 * the frames of one function distinct (the call of main and the call of exit, for one). */
static root_tail *root_find(const sym_space *sp, const ana_frame *entry)
{
	for (size_t i = 0; i < sp->roots.n; i++)
		if (sp->roots.v[i].entry_name == entry->name && sp->roots.v[i].entry_module == entry->module)
			return &sp->roots.v[i];
	return NULL;
}

int ana_uw_root_learn(sym_space *sp, const uw_state *u, size_t k, const ana_frame *entry)
{
	size_t n = u->n - k - 1;
	if (k + 1 >= u->n || n > MAX_ROOT_TAIL)
		return 0;
	root_tail *t = root_find(sp, entry);
	if (t) {
		/* an entry's callers never change: complete stacks that disagree show that this
		 * function is not the once-per-thread entry assumed, and it is not used */
		if (t->n != n || memcmp(t->callers, u->raw + k + 1, n * sizeof(uint64_t)) != 0)
			t->conflict = 1;
		return 0;
	}
	if (sp->roots.n >= 64) /* a few entry functions per image */
		return 0;
	t = ana_vec_push(sp->roots);
	if (!t)
		return GTT_ENOMEM;
	t->entry_name = entry->name;
	t->entry_module = entry->module;
	t->n = (uint32_t)n;
	memcpy(t->callers, u->raw + k + 1, n * sizeof(uint64_t));
	return 0;
}

int ana_uw_root_complete(const sym_space *sp, uw_state *u, const ana_frame *entry)
{
	if (u->n == 0)
		return 0;
	const root_tail *t = root_find(sp, entry);
	if (!t || t->conflict || u->n + t->n > MAX_UNWIND)
		return 0;
	for (uint32_t i = 0; i < t->n; i++) {
		u->raw[u->n] = t->callers[i];
		u->exact[u->n] = 0;
		u->n++;
	}
	return 1;
}
