/* perf_priv.h — what perf_sampler.c and perf_watch.c share: the sampler's state (its rings, one
 * per CPU, and the records read from them waiting to be decoded in time order). */
#ifndef REC_PERF_PRIV_H
#define REC_PERF_PRIV_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_decode.h"
#include "perf_sampler.h"
#include "perf_tree.h"

typedef struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;          /* data area bytes */
	rec_perf_ring_state rs;
	uint64_t n_samples;     /* sample records read, the tree's and others' (the stall watch) */
	uint64_t n_trouble;     /* LOST, LOST_SAMPLES, THROTTLE and UNTHROTTLE records read */
} ring;

/* A record read from a ring, waiting in the arena to be decoded in time order. */
typedef struct pending { uint64_t time_ns, seq; size_t off; uint32_t size; int ring; } pending;

struct rec_perf {
	rec_perf_opts o;
	int64_t clock_off_ns;   /* our clock minus perf's (time namespaces; clock.h) */
	struct perf_event_attr attr;
	struct perf_event_attr track; /* o.capture: the side-band event that stays on (mmap, comm, task) */
	struct perf_event_attr sw;    /* lean: the side-band and context-switch event (sample_id: the time) */
	struct perf_event_attr swonly; /* system-wide, REC_SW_AUTO: the context switches alone (the switch gate) */
	int *swfds;             /* gateable: each CPU's switch event, -1 while closed */
	int switches_open;
	int gate_open;          /* gateable: the switch gate's state (rec_perf_switches) */
	int opened_once;        /* gateable: the switch events were opened before */
	int keeper_fd;          /* gateable: a do-nothing event on our own thread, -1 none (below) */
	int switch_err;         /* gateable: the last opening's failure at a start of sampling */
	uint64_t decoded_to_ns; /* trace time up to which the last drain decoded every record */
	gtt_writer *w;
	int n_cpus;
	int *cpus;              /* online CPU numbers */
	ring *rings;            /* one per CPU */
	int *fds;               /* every event fd (attach mode: threads x CPUs) */
	size_t n_fds, cap_fds;
	int *sfds;              /* o.capture: the sampling events among them (switched on and off) */
	size_t n_sfds, cap_sfds;
	int sampling;           /* o.capture: the sampling events are on */
	int32_t *attached;      /* attached tids (attach mode) */
	size_t n_attached, cap_attached;
	rec_perf_decoder *dec;
	uint8_t *arena;         /* bytes of pending records */
	size_t n_arena, cap_arena;
	pending *pend;
	size_t n_pend, cap_pend;
	pending *pend_tmp;      /* the merge's other buffer (cap_tmp entries) */
	size_t cap_tmp;
	size_t *runs;           /* the merge's run boundaries */
	size_t cap_runs;
	uint64_t seq;
	int system;             /* per-CPU events for every task, filtered by tree */
	int lean;               /* system-wide without capture control: the sw event (fill_attr) */
	rec_ptree *tree;        /* system-wide: the target's processes */
	rec_perf_stats st;      /* configuration part; counters come from the decoder */
	/* the stall watch (system-wide, rec_perf_watch): the window being judged and each CPU's
	 * busy ticks, samples and trouble records at its start */
	uint64_t watch_from_ns; /* 0: no window open */
	uint64_t *watch_busy, *watch_smp, *watch_trouble;
	int watch_off;          /* /proc/stat could not be read: no watch */
	int stall_cpu;          /* GT_RECORD_TEST_STALL: the CPU whose event is stopped, -1 none */
	uint64_t stall_after_ns, stall_at_ns;
};

#endif
