/* addrspace.h — one process's executable mappings as gt-record --dump sees them: the binaries
 * behind them opened on demand (and the vdso copied out of the process), native stacks unwound
 * through their CFI (frame pointers where there is none) and addresses named on the spot.
 * Return rule: 0 or -errno for opening; counts; pointers or NULL. */
#ifndef REC_ADDRSPACE_H
#define REC_ADDRSPACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procmem.h"
#include "unwind.h"

typedef struct rec_as rec_as;

/* The executable mappings of pid from /proc/PID/maps; mem (kept, not owned) reads the vdso.
 * NULL with *err = errno (ESRCH when the process is gone). */
rec_as *rec_as_open(pid_t pid, rec_procmem *mem, int *err);
void rec_as_close(rec_as *as);
/* Read the mappings again (libraries loaded since, an exec): binaries already opened are kept.
 * 0 or -errno (the old mappings stay on failure). */
int rec_as_refresh(rec_as *as);
/* Number of executable mappings. */
size_t rec_as_mappings(const rec_as *as);
/* Whether a mapping whose file name starts with prefix ("libcuda.so") is present: its start
 * address and path when found. 1 found, 0 not. */
int rec_as_find_module(const rec_as *as, const char *prefix, uint64_t *start, const char **path);
/* Runtime address of a symbol in the binary mapped under path (.dynsym/.symtab): 0, or -1. */
int rec_as_symbol_addr(rec_as *as, const char *path, const char *name, uint64_t *addr);

/* 1 when the binary mapped under path has a function called name in its symbol tables (or
 * its debug file's), 0 when not or unreadable. */
int rec_as_has_function(rec_as *as, const char *path, const char *name);

/* How a frame was found. */
enum { REC_AS_FRAME_CFI = 0, REC_AS_FRAME_FP = 1 /* frame-pointer guess */, REC_AS_FRAME_SIGNAL = 2 };
typedef struct rec_as_frame {
	uint64_t pc;             /* runtime address: exact for the first frame, else a return address */
	uint64_t sp;             /* the frame's stack pointer (the CFA of the frame below it) */
	uint32_t how;            /* REC_AS_FRAME_* */
	uint16_t exact;          /* 1: pc is the instruction itself (first frame, after a signal frame) */
	uint16_t trampoline;     /* 1: the signal trampoline (__restore_rt): a handler runs above it */
} rec_as_frame;

/* Why an unwind stopped. */
enum {
	REC_AS_END_ROOT = 0,     /* reached the outermost frame (complete) */
	REC_AS_END_NOINFO,       /* a pc without CFI and no usable frame pointer */
	REC_AS_END_NOMAP,        /* a pc outside every executable mapping */
	REC_AS_END_MEM,          /* a stack read failed */
	REC_AS_END_BADCFI,       /* CFI that could not be evaluated */
	REC_AS_END_LOOP,         /* the stack pointer did not grow */
	REC_AS_END_CAP,          /* cap frames reached */
};
/* Unwind from regs (rip, rsp and what else is known) reading the stack through rd; frames leaf
 * first into out[0..cap). Returns the number of frames; *end says why it stopped. */
size_t rec_as_unwind(rec_as *as, const rec_unw_regs *regs, rec_unw_read_fn rd, void *ctx,
                     rec_as_frame *out, size_t cap, int *end);
/* One-word reason for an REC_AS_END_* ("complete", "no unwind info", ...). */
const char *rec_as_end_name(int end);

/* A named address. Strings stay valid until rec_as_close. */
typedef struct rec_as_sym {
	const char *module;      /* file name of the binary ("libc.so.6", "[vdso]"), NULL when unmapped */
	const char *path;        /* its path in the target */
	const char *name;        /* function (demangled), NULL when no symbol covers the address */
	uint64_t offset;         /* address minus the function start, or minus the module's bias */
} rec_as_sym;
/* Name pc (a return address when !exact: the call before it is looked up). 0, or -1 when pc
 * lies in no executable mapping. Names are copied into name_buf (cap bytes). */
int rec_as_symbolize(rec_as *as, uint64_t pc, int exact, rec_as_sym *out, char *name_buf, size_t cap);

#endif
