/* unwind.h — x86-64 call-frame unwinding from a binary's CFI: .eh_frame found through its
 * .eh_frame_hdr search table (else an index built by scanning), and .debug_frame of the file
 * or its separate debug file. libc only (the GPU box has no libdw), for gt-record --dump.
 * Return rule: 0, or a negative REC_UNW_E* code. */
#ifndef REC_UNWIND_H
#define REC_UNWIND_H

#include <stdint.h>

#include "elfimg.h"

/* Registers by DWARF number: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
 * 8-15 r8-r15, 16 the return address column (rip). */
enum { REC_UNW_BP = 6, REC_UNW_SP = 7, REC_UNW_IP = 16, REC_UNW_NREGS = 17 };
typedef struct rec_unw_regs {
	uint64_t r[REC_UNW_NREGS];
	uint32_t valid;          /* bit n: r[n] is known */
} rec_unw_regs;

enum {
	REC_UNW_ENOINFO = -1,    /* no CFI covers the pc */
	REC_UNW_EEND = -2,       /* the outermost frame: the return address is undefined or 0 */
	REC_UNW_EBAD = -3,       /* CFI we cannot evaluate (corrupt, an unknown opcode, a register we lack) */
	REC_UNW_EMEM = -4,       /* a memory read the CFI asked for failed */
};

/* Reads 8 bytes of the target at a runtime address: 0, or -1 when unreadable. */
typedef int (*rec_unw_read_fn)(void *ctx, uint64_t addr, uint64_t *val);

typedef struct rec_unw_tab rec_unw_tab;

/* The CFI tables of one binary: img is the file (its .eh_frame, .eh_frame_hdr, .debug_frame),
 * dbg an optional separate debug file of the same build (its .debug_frame); both must outlive
 * the table. NULL when neither has any CFI, or on ENOMEM. */
rec_unw_tab *rec_unw_tab_create(const rec_elfimg *img, const rec_elfimg *dbg);
void rec_unw_tab_destroy(rec_unw_tab *t);
/* Number of FDEs the table can search now (the search table's count plus the scanned index;
 * a .debug_frame beside an .eh_frame is indexed at the first pc .eh_frame does not cover). */
uint64_t rec_unw_tab_fdes(const rec_unw_tab *t);

/* One step from the frame in *regs to its caller, in place. bias is the module's runtime minus
 * link-time address. pc_is_return: r[IP] is a return address, so the CFI row of the call
 * (pc - 1) applies. On success *signal_frame is set when this frame is a signal trampoline
 * (the caller's pc is then exact, not a return address). */
int rec_unw_step(rec_unw_tab *t, uint64_t bias, rec_unw_regs *regs, int pc_is_return,
                 int *signal_frame, rec_unw_read_fn rd, void *ctx);
/* Link-time start of the function whose FDE covers the link-time pc; 0 and *start, or
 * REC_UNW_ENOINFO. (A symbol-less address can still be named "[module+start]".) */
int rec_unw_func_start(rec_unw_tab *t, uint64_t pc, uint64_t *start);

#endif
