/* gtcupti_inflight.h — the CUDA agent's table of in-flight CUDA API calls, one slot per
 * thread, exported by libgtcupti.so so that a tool outside the process (gt-record --dump) can
 * say which CUDA call each thread is inside and for how long, without stopping anything.
 *
 * Public and stable: this header is the whole contract between the agent (writer, in the
 * target) and readers (in another process, through process_vm_readv). Layout rules: fixed-size
 * fields in native byte order (little-endian: x86-64, aarch64), natural alignment, no pointers
 * into the reader's address space; new fields only ever go into reserved bytes, with a higher
 * version.
 *
 * Finding it: the table is the object symbol GTCUPTI_INFLIGHT_SYMBOL in libgtcupti.so's
 * .dynsym. Its address in the target is the load base of libgtcupti.so (start of the mapping
 * of file offset 0 in /proc/PID/maps, minus the lowest PT_LOAD p_vaddr, which is 0 for our
 * build) plus the symbol's st_value.
 *
 * Reading it consistently (a seqlock, read from outside):
 *   1. read the whole table (one process_vm_readv), check magic, version, slot_size;
 *   2. read it a second time;
 *   3. a slot is consistent when its seq is even and equal in both reads; otherwise it was being
 *      written (a call started or ended in between): read it again, or report it as changing.
 * seq is the first field of a slot, so a forward copy reads it before the other fields in the
 * first read and after them in the second. A slot with tid == 0 is free; a slot with cbid == 0
 * belongs to a thread that is not inside a (recorded) CUDA API call right now. */
#ifndef GTCUPTI_INFLIGHT_H
#define GTCUPTI_INFLIGHT_H

#include <stdint.h>

#define GTCUPTI_INFLIGHT_SYMBOL "gtcupti_inflight"
#define GTCUPTI_INFLIGHT_MAGIC "GTINFL1"   /* 8 bytes with the NUL */
#define GTCUPTI_INFLIGHT_VERSION 1
#define GTCUPTI_INFLIGHT_SLOTS 1024

/* header flags */
#define GTCUPTI_INFLIGHT_ACTIVE 0x1u  /* the agent receives API callbacks now: slots are live.
                                       * Clear (agent not subscribed, CPU-only, or
                                       * GT_CUPTI_INFLIGHT=0): slots say nothing. */

/* One thread's slot: one cache line, so threads never share a line. */
struct gtcupti_inflight_slot {
	uint32_t seq;          /* even: stable; odd: being written (see the protocol above) */
	uint32_t tid;          /* OS thread id (gettid) that owns the slot; 0 = free */
	uint32_t cbid;         /* CUPTI callback id of the outermost API call in flight; 0 = none */
	uint32_t domain;       /* 1 runtime API, 2 driver API (the cuda_api record's domain) */
	uint32_t correlation;  /* CUPTI correlation id: matches the call's cuda_api record */
	uint32_t depth;        /* API calls nested in the outermost one right now (0 = none) */
	uint64_t start_ns;     /* CLOCK_MONOTONIC when the outermost call began, read with
	                        * CLOCK_MONOTONIC_COARSE: resolution is the header's clock_res_ns */
	uint64_t name_addr;    /* address in the target of the NUL-terminated API name (CUPTI's
	                        * static name, e.g. "cudaStreamSynchronize_v3020"); 0 = none */
	uint64_t n_calls;      /* API calls this thread entered since it took the slot (progress:
	                        * two dumps with the same cbid and n_calls = one call still waiting) */
	uint8_t reserved[16];
};

struct gtcupti_inflight {
	char magic[8];         /* GTCUPTI_INFLIGHT_MAGIC */
	uint32_t version;      /* GTCUPTI_INFLIGHT_VERSION */
	uint32_t n_slots;      /* GTCUPTI_INFLIGHT_SLOTS */
	uint32_t slot_size;    /* sizeof(struct gtcupti_inflight_slot) == 64 */
	uint32_t header_size;  /* byte offset of slot[0] == 64 */
	uint32_t pid;          /* the process the slots describe (a fork()ed child resets them) */
	uint32_t flags;        /* GTCUPTI_INFLIGHT_* */
	uint64_t clock_res_ns; /* resolution of start_ns (clock_getres(CLOCK_MONOTONIC_COARSE)) */
	uint32_t n_unslotted;  /* threads that made CUDA calls but found every slot taken */
	uint32_t reserved[5];
	struct gtcupti_inflight_slot slot[GTCUPTI_INFLIGHT_SLOTS];
};

_Static_assert(sizeof(struct gtcupti_inflight_slot) == 64, "one cache line per slot");
_Static_assert(sizeof(struct gtcupti_inflight) == 64 + 64 * GTCUPTI_INFLIGHT_SLOTS, "header is 64 bytes");

#endif
