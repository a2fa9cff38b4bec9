/* cupti_unwind.h — native stack of the calling thread, for the CUDA agent's launch stacks.
 * Return rule: 0 or a count, -1 when the unwinder is unavailable. */
#ifndef REC_CUPTI_UNWIND_H
#define REC_CUPTI_UNWIND_H

#include <stdint.h>

/* Find libgcc_s's _Unwind_Backtrace (loaded in every C++ process; dlopen'ed otherwise).
 * Safe to call from any thread, any number of times. 0, or -1 when there is none. */
int ag_unwind_init(void);
/* Leading frames inside the object (executable, shared library) that contains addr are left
 * out of every stack: the agent itself, CUPTI's callback dispatch, the CUDA libraries. Up to 8
 * objects. 0 or -1. */
int ag_unwind_skip_object(const void *addr);
/* The same for every loaded object whose file name contains part ("libcudart"). Returns how
 * many were added. */
int ag_unwind_skip_named(const char *part);
/* The walk ends at the first frame inside the object that contains addr (the Python
 * interpreter: the Python stack, read separately, continues from there). One object; NULL: none
 * any more. 0 or -1. */
int ag_unwind_stop_object(const void *addr);
/* The calling thread's return addresses, leaf first (the first frame outside the skipped
 * objects), at most cap of them; *truncated is set when the stack went on beyond cap, *stopped
 * when it ended at the stop object. Returns the number of frames, or -1 without an unwinder.
 * The fast walk (cupti_cfi.c: unwind rules cached per return address, a few ns per frame once
 * cached) is tried first; libgcc's (0.1-0.5 us per frame: it finds and runs the .eh_frame entry
 * of every frame, every time) when it declines, or always with GT_CUPTI_UNWIND=libgcc. */
int ag_unwind(uint64_t *ips, int cap, int *truncated, int *stopped);
enum { AG_UNWIND_FAST = 0, AG_UNWIND_LIBGCC = 1 };
/* Choose the walk (AG_UNWIND_*) for every thread from now on (tests, benchmarks); returns the
 * previous one. */
int ag_unwind_set_mode(int mode);
/* ag_unwind with the given walk, whatever the mode (tests). */
int ag_unwind_using(int mode, uint64_t *ips, int cap, int *truncated, int *stopped);

#endif
