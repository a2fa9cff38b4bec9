/* gpu_sum_priv.h — what gpu_sum.c (the reorder queue, tables, devices, busy time) and
 * gpu_blame.c (host threads, their API spans, idle gaps and blame) share: the accumulator's state.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_GPU_SUM_PRIV_H
#define ANA_GPU_SUM_PRIV_H

#include "gpu_sum.h"
#include "model_priv.h"

/* Sweep order at equal times: API calls, launch stacks, then work (as the launch estimator wants
 * them), samples last. */
enum { GS_API = 0, GS_STACK = 1, GS_KERNEL = 2, GS_COPY = 3, GS_MEMSET = 4, GS_SYNC = 5 };

typedef struct gs_ev {
	uint64_t t;            /* start */
	uint64_t seq;          /* file order among the records fed */
	uint32_t type;         /* GS_* */
	union {
		gtt_cuda_kernel k;
		gtt_cuda_memcpy c;
		gtt_cuda_memset s;
		gtt_cuda_sync y;
		gtt_cuda_api a;
	} u;
} gs_ev;

/* A queued event's place in the heap: its sort key and its pool slot. */
typedef struct gs_key { uint64_t t, seq; uint32_t type, idx; } gs_key;

/* A pool slot's sort key and its calendar link (pool index + 1 of the next event in its bucket,
 * 0 none): what a release reads, kept apart from the 96-byte events so that walking the buckets
 * touches 24 bytes per event, not the event (fetched later, ahead of its sweep). */
typedef struct gs_link { uint64_t t, seq; uint32_t type, next; } gs_link;

/* The reorder queue (gpu_queue.c): events in a pool (free slots in free_ev); those within the
 * calendar's reach in a list per time bucket (cal: pool index + 1 of a bucket's first, link[].next:
 * of the one after it, 0 none), the others in a heap of keys. */
typedef struct gs_queue {
	ANA_VEC(gs_ev) pool;
	ANA_VEC(gs_link) link;
	ANA_VEC(uint32_t) free_ev;
	ANA_VEC(gs_key) heap;
	ANA_VEC(gs_key) batch;  /* the calendar's events of the current release, in order */
	size_t next_batch;
	uint32_t *cal;
	size_t n_cal, n_in_cal; /* buckets (a power of 2); events in them */
	uint64_t base;          /* the first bucket's number (time >> shift) */
	uint64_t released;      /* the last release's watermark: an event before it is late */
	int started;
} gs_queue;
/* A queue whose calendar reaches horizon_ns ahead (UINT64_MAX: as far as it goes, the rest
 * heaped). 0 or GTT_ENOMEM. */
int gs_queue_init(gs_queue *q, uint64_t horizon_ns);
void gs_queue_free(gs_queue *q);
/* Queue a copy of e; *peak becomes the number queued if that is more. 0 or GTT_ENOMEM. */
int gs_queue_push(gs_queue *q, const gs_ev *e, uint64_t *peak);
/* Release every event before w: then gs_queue_next hands them out by (time, kind, file order),
 * 1 with *out filled, 0 when no event before w is left. Both 0 (1) or GTT_ENOMEM. */
int gs_queue_release(gs_queue *q, uint64_t w);
int gs_queue_next(gs_queue *q, uint64_t w, gs_ev *out);
/* The event ahead places after the next one gs_queue_next hands out from the calendar's batch,
 * NULL when the batch holds none (a hint: heaped events may come before it). */
const gs_ev *gs_queue_peek(const gs_queue *q, size_t ahead);
/* The earliest time queued if it is before w, else w. */
uint64_t gs_queue_min_before(const gs_queue *q, uint64_t w);

#define GS_LEAVES 256
/* A thread during a device's open idle stretch (a gap once more work comes). */
typedef struct gs_open {
	ana_gpu_blame b;
	uint64_t api_ns;
	uint32_t th;           /* the thread */
	uint32_t n_leaf;
	uint32_t leaves[GS_LEAVES];
} gs_open;

/* A physical device as first met in the sweep (renumbered at the end). */
typedef struct gs_dev {
	uint64_t first[3];     /* seq of its first kernel, copy, memset (UINT64_MAX none) */
	int has;               /* work seen: [cs, ce) is the busy span being built */
	uint64_t cs, ce;
	ana_gpu_busy busy;
	/* blamed devices (oslot set with the first work): per thread, its entry + 1 (0 none) in the
	 * open idle stretch (openv: only the threads with something in it) and in the sums over all
	 * gaps (sums: only the threads with something in some gap) */
	uint32_t *oslot, *bslot;
	ANA_VEC(gs_open) openv;
	ANA_VEC(ana_gpu_tblame) sums;
	int pending;           /* top-gap slot whose ending work may still change (same start), -1 */
	uint64_t pending_start, pending_end;
} gs_dev;

/* A (pid, device) pair. */
typedef struct gs_pair {
	uint32_t pid, device;
	const char *uuid, *name;
	int phys;              /* provisional index */
	uint64_t first[3];
} gs_pair;

/* A thread's outermost CUDA API span being built, and the one before it. */
typedef struct gs_span {
	uint64_t start_ns, end_ns;
	int state;
	const char *name;
	uint32_t pid, corr;
	uint64_t rep_end;      /* the representing call's own end and domain (the outer call names it) */
	uint32_t rep_domain;
} gs_span;
typedef struct gs_thread {
	uint32_t pid, tid;
	const char *name;
	int open;
	gs_span cur, prev;     /* prev valid when has_prev */
	int has_prev;
} gs_thread;

/* An API call kept for the top gaps' "submitted by": the calls of the last ANA_LAUNCH_WINDOW_NS,
 * in a ring in sweep order, found by (pid, correlation) through an index of ring positions. */
typedef struct gs_call {
	uint64_t start_ns, seq;
	uint32_t pid, corr, tid, name_id;
	uint32_t domain, has_sync;
	uint32_t sync_corr;    /* the thread's call before it, when a synchronization */
	const char *sync_name;
	uint64_t sync_start_ns, sync_end_ns;
} gs_call;

/* A (kind, pid, name id, domain) as met in records: its row and, for an API call, its kind of
 * call (looked up once, not per record). */
typedef struct gs_name { uint32_t kind, pid, name_id, domain, row; int state; const char *name; } gs_name;

/* A sample fed by the caller, with its stack's leaf frame (looked up when it was fed: the model's
 * stacks may grow meanwhile on another thread). */
typedef struct gs_smp { ana_sample s; uint32_t leaf; } gs_smp;

typedef struct gs_proc { uint32_t pid; int has; uint64_t s, e; ana_gpu_proc p; } gs_proc;

struct ana_gpu_acc {
	const ana_model *m;
	ana_gpu_sum *sum;
	uint64_t horizon_ns, max_t, seq, now;
	gs_queue q;            /* the reorder queue */
	size_t next_sample, next_stack, *stack_order;
	/* samples fed by the caller (fed; ana_gpu_acc_sample) in sfifo.v[sfifo_head..n), else the
	 * model's array from next_sample; every sample before s_mark is in */
	int fed;
	ANA_VEC(gs_smp) sfifo;
	size_t sfifo_head;
	uint64_t s_mark;
	ana_launch_acc *launch;
	ana_idtable krow_table, arow_table, name_table;
	ANA_VEC(gs_name) names;
	ANA_VEC(ana_gpu_row) krows, arows;
	ana_idtable pair_table, uuid_table, proc_table, thread_table;
	size_t *info;          /* m->cuda_devices by (pid, device, record order) */
	ANA_VEC(gs_pair) pairs;
	long last_pair, last_proc;  /* the (pid, device) and process of the last work (+1; 0 none) */
	ANA_VEC(gs_dev) devs;
	ANA_VEC(gs_proc) procs;
	ANA_VEC(gs_thread) threads;
	size_t cap_dev_threads; /* the oslot and bslot arrays of every blamed device hold this many */
	/* spans to close: a min-heap of (end, thread) */
	ANA_VEC(struct gs_close { uint64_t end; uint32_t th; }) closes;
	uint32_t *open_threads; /* threads with an open span */
	size_t n_open_threads, cap_open_threads;
	/* calls by (pid, correlation): ring[i & (ring_cap - 1)] for head <= i < tail; cidx holds
	 * ring positions + 1 (0 empty; a position before head is a stale slot) */
	gs_call *ring;
	size_t ring_cap, head, tail;
	uint64_t *cidx;
	size_t cidx_cap, cidx_used;
	ana_gpu_gap top[16];
	size_t n_top;
	struct bpipe *pipe;    /* the sweep's own thread (gpu_pipe.c), NULL: the caller's */
	struct bpipe *lpipe;   /* the launch estimator's, fed by the sweep's; NULL: the sweep's */
};

/* gpu_sum.c: the sweep's steps, on whichever thread runs it */
/* The event of a CUDA work, sync or API record: 1, else 0 (another tag). */
int gs_ev_of(const gtt_record *rec, gs_ev *ev);
/* Count and queue ev (its seq set), sweeping what fell behind the horizon. 0 or GTT_ENOMEM. */
int gs_add(ana_gpu_acc *a, gs_ev *ev);
/* A fed sample and its leaf frame. 0 or GTT_ENOMEM. */
int gs_sample(ana_gpu_acc *a, const ana_sample *s, uint32_t leaf);
int gs_advance(ana_gpu_acc *a, uint64_t w_records, uint64_t w_samples);

/* gpu_pipe.c */
/* Start the sweep's thread and the launch estimator's (fed samples only: the caller's thread
 * then only hands over). No thread made: the caller's thread does that work, as before. */
void gs_pipe_start(ana_gpu_acc *a);
/* Hand over what is left, wait for the threads to do it and end them. 0 or their error. */
int gs_pipe_end(ana_gpu_acc *a);
/* End the thread without sweeping what is left (the caller gave up). */
void gs_pipe_stop(ana_gpu_acc *a);
/* ana_launch_acc_api, _stack and _work on a->launch: handed to its thread when it has one. 0 or
 * GTT_ENOMEM (possibly of an earlier call). */
int gs_launch_api(ana_gpu_acc *a, const gtt_cuda_api *x);
int gs_launch_stack(ana_gpu_acc *a, const ana_callstack *cs);
int gs_launch_work(ana_gpu_acc *a, uint32_t kind, uint32_t pid, uint32_t corr, uint32_t name_id, uint64_t start_ns,
                   uint64_t end_ns);

/* gpu_blame.c */
/* The thread (pid, tid), made when new; its index, or -1 on ENOMEM. */
long gs_thread_of(ana_gpu_acc *a, uint32_t pid, uint32_t tid, const char *name);
/* Everything at times before t is final: close the API spans that ended by then. 0 or <0. */
int gs_blame_advance(ana_gpu_acc *a, uint64_t t);
/* The call (pid, correlation) of hash h (ana_hash_corr) will be looked up soon: fetch its index
 * slot into the cache. */
void gs_blame_prefetch(const ana_gpu_acc *a, uint64_t h);
/* An API call (its name and kind of call from the name cache). */
int gs_blame_api(ana_gpu_acc *a, const gs_ev *e, const char *name, int state);
/* The kind of call (ANA_ST_SYNC .. ANA_ST_API_OTHER) of an API name. */
int gs_api_state(const char *name);
/* Device d (provisional) gets work [s, e) of ev: closes its idle gap when s is past its busy
 * end. Called before the busy span grows. */
int gs_blame_work(ana_gpu_acc *a, int d, const gs_ev *e, uint64_t s, uint64_t end);
int gs_blame_sample(ana_gpu_acc *a, const ana_sample *s, uint32_t leaf);
/* The last frame of a model stack, ANA_NO_ID when none. */
uint32_t gs_leaf_frame(const ana_model *m, uint32_t stack_id);
/* After the sweep: the top gaps in final device numbers, thread list and blame arrays handed to
 * the sum. map[provisional] = final index. 0 or GTT_ENOMEM. */
int gs_blame_finish(ana_gpu_acc *a, const int *map);
void gs_blame_free(ana_gpu_acc *a);
void ana_gpu_gap_free(ana_gpu_gap *g);

#endif
