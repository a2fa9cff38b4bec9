/* cupti_cfi.h — the fast native stack walk of the CUDA agent's launch stacks: unwind rules from
 * .eh_frame cached per return address (x86-64; elsewhere it always declines). cupti_unwind.c
 * uses it first and libgcc's walk when it declines. Return rule: 0, or -1 (declined). */
#ifndef REC_CUPTI_CFI_H
#define REC_CUPTI_CFI_H

#include <stdint.h>

/* Called with each return address of the calling thread's stack, the caller of ag_cfi_walk's
 * caller first; returns 0 to go on, non-zero to stop. */
typedef int (*ag_cfi_visit)(void *arg, uint64_t ip);
/* Walk the calling thread's stack. 0 when the walk ended (at the stack's end, at a frame without
 * unwind data — where libgcc ends too — or because visit said stop); -1 when some frame's rule
 * is one this walk does not follow (signal frame, DWARF expression, ...): the frames visited so
 * far are to be discarded and libgcc asked instead. Any thread, concurrently. */
int ag_cfi_walk(ag_cfi_visit visit, void *arg);

typedef struct ag_cfi_stats {
	uint64_t n_walks;          /* walks started */
	uint64_t n_fallback;       /* ... declined: libgcc took them */
	uint64_t n_misses;         /* return addresses whose rule was computed (not in the cache) */
	uint64_t n_full;           /* ... and could not be kept (cache full around them) */
	uint64_t n_bad;            /* walks ended by a rule pointing outside the stack */
	uint64_t n_prefetched;     /* objects whose unwind tables ag_cfi_prefetch read in ahead */
	uint64_t prefetch_bytes;   /* ... their bytes (page-rounded) */
} ag_cfi_stats;
void ag_cfi_stats_get(ag_cfi_stats *st);
/* Ask the kernel to read in (MADV_WILLNEED) the unwind tables (.eh_frame_hdr and .eh_frame) of
 * every loaded object not asked for before: the first launch stacks through a large library
 * (libtorch_cuda's tables run to hundreds of MB) otherwise fault them in from disk on the
 * application's thread, milliseconds each. The flush thread's, at start and when objects were
 * loaded since; cheap when none were. */
void ag_cfi_prefetch(void);

#endif
