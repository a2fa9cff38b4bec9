/* cupti_nvtx.h — the CUDA agent's NVTX side, seen through CUPTI's NVTX callbacks on the
 * application's threads: capture ranges (--capture-range=nvtx:NAME: the agent keeps its CUDA
 * records only inside NVTX ranges of that name, and writes each range's start and stop as a
 * capture record) and counters (an NVTX marker with a numeric payload becomes a counter record).
 * The flush thread writes what they queue (ag_nvtx_drain) and asks the gate (ag_cap_keep) which
 * activity records to keep. Only the agent and its tests use it. Return rule: 0 or a count, -1 on
 * failure. */
#ifndef REC_CUPTI_NVTX_H
#define REC_CUPTI_NVTX_H

#include <stddef.h>
#include <stdint.h>
#include <cupti.h>
#include "cupti_agent.h"

/* Set up (once per process): the queue to the flush thread, and wake, called after a capture
 * range opened or closed so that the flush thread writes its record at once (not at its next
 * tick). 0 or -1 (ENOMEM). */
int ag_nvtx_init(uint32_t pid, void (*wake)(void));
/* The capture rule: "NAME" (ranges named NAME in NVTX's default domain), "NAME@DOMAIN" (in the
 * domain created with that name), "NAME@*" (in any domain); NULL or "" switches capture off
 * (every record kept again). A range open under the old rule is closed now. 0, or -1 for a
 * malformed rule (named through warn; the old rule stays). Any thread. */
int ag_nvtx_capture_set(const char *spec, void (*warn)(const char *fmt, const char *arg));
/* The rule in force ("" when capture is off), for notes. */
const char *ag_nvtx_capture_spec(void);
/* 1 when CUPTI's NVTX callback cbid must be on: counters and domain/string names always, range
 * pushes, pops, starts and ends while a capture rule is set. */
int ag_nvtx_wanted(uint32_t cbid);
/* The callback for CUPTI_CB_DOMAIN_NVTX (application threads). */
void ag_nvtx_callback(CUpti_CallbackId cbid, const CUpti_NvtxData *d);
/* Flush thread: write the queued capture and counter records (names interned through e) and a
 * dropped record when the queue overflowed. e and w NULL: discard. Returns records written. */
int ag_nvtx_drain(ag_enc *e, gtt_writer *w);
/* A note for the end of a side file when capture was asked for: ranges seen, records kept and
 * discarded, or that no range of that name ever opened. Empty when capture was never on. */
void ag_nvtx_capture_summary(char *buf, size_t len, uint64_t n_outside);
/* In a fork()ed child: new pid, queue emptied, no capture range open. */
void ag_nvtx_fork_child(uint32_t pid);

/* ---- the gate ---- */

/* Read on every API callback: `active` when a capture rule is set; `gen` counts capture range
 * transitions (odd: a range is open). */
struct ag_cap_hot {
	uint32_t active;
	uint32_t gen;
	uint32_t pad[14];    /* read by every API callback: a cache line of its own */
} __attribute__((aligned(64)));
extern struct ag_cap_hot ag_cap_hot;

static inline int ag_cap_active(void)
{
	return __atomic_load_n(&ag_cap_hot.active, __ATOMIC_RELAXED) != 0;
}
static inline uint32_t ag_cap_gen(void)
{
	return __atomic_load_n(&ag_cap_hot.gen, __ATOMIC_ACQUIRE);
}
/* An API call with correlation id corr entered, the first on its thread since transition gen:
 * the capture range gen opened (odd) or closed (even) before it. The bounds of each range in
 * correlation ids come from these: a kernel is kept when the call that launched it was inside. */
void ag_cap_note_corr(uint32_t gen, uint32_t corr);
/* Whether the API callbacks of launches, copies and memsets are on (they give ag_cap_note_corr
 * its ids). Off: device records are kept by their start time instead. */
void ag_cap_launch_bounds(int on);

enum {
	AG_CAP_BY_START = 1,   /* kept when t0 is inside a capture range (API calls, syncs, allocations) */
	AG_CAP_BY_LAUNCH = 2,  /* kept when the call with correlation id corr was inside one (kernels,
	                        * copies, memsets; a record started more than 60 s after the range
	                        * closed is not) */
	AG_CAP_BY_OVERLAP = 3, /* kept when [t0, t1] overlaps one (NVTX ranges) */
};
/* Flush thread: 1 when the record is kept (always when capture is off), 0 when discarded. */
int ag_cap_keep(int how, uint64_t t0, uint64_t t1, uint32_t corr);

typedef struct ag_nvtx_stats {
	uint64_t n_ranges;         /* capture ranges opened */
	uint64_t n_counters;       /* counter samples queued */
	uint64_t n_dropped;        /* capture or counter entries lost (queue full) */
	uint64_t n_no_payload;     /* markers without a numeric payload (not counters) */
} ag_nvtx_stats;
void ag_nvtx_stats_get(ag_nvtx_stats *st);

#endif
