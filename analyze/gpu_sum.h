/* gpu_sum.h — analyze/-internal: the GPU side of a trace as streaming aggregates. Device work,
 * API calls and syncs are fed one by one (through a bounded reorder queue: a trace's chunks are
 * nearly in time order), swept in time order together with the samples (the model's, or fed by a
 * loader that keeps none) and the model's launch stacks,
 * and what the report prints is kept: per-name tables, per-direction copies, busy time per
 * device, per process and per time bucket, idle gaps and their blame, the top idle gaps, and the
 * launch-site estimator. Memory follows distinct names, threads, devices and processes, and the
 * records inside the queue's horizon: not the number of records (docs/ANALYZE.md, "What the
 * loader's memory follows").
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects. */
#ifndef ANA_GPU_SUM_H
#define ANA_GPU_SUM_H

#include <stddef.h>
#include <stdint.h>

#include "bounds.h"
#include "launch.h"
#include "model.h"

/* What a host thread can be doing while a device is idle, in report order. */
enum {
	ANA_ST_SYNC, ANA_ST_LAUNCH, ANA_ST_ALLOC, ANA_ST_COPY, ANA_ST_API_OTHER,                  /* in a CUDA call */
	ANA_ST_PY_GIL, ANA_ST_NATIVE_GIL, ANA_ST_NATIVE_NOGIL, ANA_ST_WAIT_GIL, ANA_ST_NONPY, /* sampled */
	ANA_ST_OFF,                                                                            /* neither */
	ANA_ST_COUNT
};

/* One thread's part of idle time: ns per state (API time exact; samples count x period), samples
 * per state, the longest single API piece per state and its call's name, the most frequent
 * leaf frame of its samples (ANA_NO_ID none). */
typedef struct ana_gpu_blame {
	uint64_t ns[ANA_ST_COUNT];
	uint64_t n_samples[ANA_ST_COUNT];
	uint64_t api_max_ns[ANA_ST_COUNT];
	const char *api_top[ANA_ST_COUNT];
	uint32_t top_frame;
	uint64_t top_frame_n;
} ana_gpu_blame;

/* (pid, device ordinal) as the agent saw it, mapped to a physical device (same UUID = same GPU);
 * in the order physical indices were given (a device's first kernel, else copy, else memset, in
 * file order). */
typedef struct ana_gpu_dev {
	uint32_t pid, device;
	const char *uuid, *name;
	int index;
} ana_gpu_dev;

/* A row of a per-name table: kernels by mangled name, API calls by (name, domain), NVTX. */
typedef struct ana_gpu_row {
	const char *name;      /* model string */
	uint32_t domain;
	uint64_t count, total_ns, max_ns, n_err;
	uint64_t first_seq;    /* file order of its first record among those fed */
} ana_gpu_row;

/* A thread's part (thread: index into ana_gpu_sum.threads). */
typedef struct ana_gpu_tblame { uint32_t thread; ana_gpu_blame b; } ana_gpu_tblame;

/* A physical device's busy time: the union of its kernels, copies and memsets. */
typedef struct ana_gpu_busy {
	int has;               /* any work */
	uint64_t total_ns;     /* inside the recording's bins [t0, t1) */
	uint64_t all_ns;       /* every busy span (saturating) */
	uint64_t first_ns, last_ns;
	uint64_t *bins;        /* busy ns per bin of ana_gpu_sum.bins */
	/* idle gaps between work */
	uint64_t gap_cnt[5], gap_ns[5], gap_total, n_gaps;
	ana_gpu_tblame *blame; /* over all gaps, the threads with a part in some gap, in thread order
	                        * (ana_gpu_sum.threads); NULL: not kept for this device */
	size_t n_blame;
} ana_gpu_busy;

typedef struct ana_gpu_thread { uint32_t pid, tid; const char *name; } ana_gpu_thread;
typedef struct ana_gpu_proc { uint32_t pid; uint64_t n_kernels, kernel_ns, busy_ns; } ana_gpu_proc;

/* One of the longest idle gaps, with what ended it and what every thread did meanwhile. */
typedef struct ana_gpu_gap {
	uint64_t start_ns, end_ns;
	int dev;
	int has_next;          /* the work that ended it: */
	int next_type;         /* ANA_WORK_KERNEL/COPY/MEMSET */
	uint32_t next_pid, next_corr, next_name_id;
	uint64_t next_end_ns, next_seq;
	int has_api;           /* the API record of its correlation (runtime first, then file order) */
	uint32_t api_domain, api_tid, api_name_id;
	uint64_t api_start_ns, api_seq;
	int has_sync;          /* the submitting thread's call before it, when a synchronization */
	const char *sync_name;
	uint32_t sync_pid, sync_corr;
	uint64_t sync_start_ns, sync_end_ns;
	ana_gpu_tblame *threads; /* active or sampled threads during the gap */
	size_t n_threads;
} ana_gpu_gap;

#define ANA_GPU_TOP_GAPS 10

typedef struct ana_gpu_sum {
	uint64_t n_kernels, n_copies, n_memsets, n_syncs, n_apis, n_api_runtime, n_api_driver;
	uint64_t kernel_ns;
	ana_gpu_row *kernels, *apis;       /* by total ns, descending (ties: names) */
	size_t n_kernel_rows, n_api_rows;
	uint64_t copy_count[6], copy_bytes[6], copy_ns[6], copy_async[6];
	uint64_t memset_bytes, memset_ns;
	uint64_t sync_count[5], sync_ns[5], sync_max[5];
	ana_gpu_dev *devs;
	size_t n_devs;
	int n_phys;
	ana_bins bins;                     /* busy buckets over the recording */
	ana_gpu_busy *busy;                /* per physical device */
	ana_gpu_thread *threads;           /* host threads: the model's and those only seen in API records */
	size_t n_threads;
	ana_gpu_proc *procs;               /* by pid */
	size_t n_procs;
	ana_gpu_gap gaps[ANA_GPU_TOP_GAPS]; /* longest first */
	size_t n_top_gaps;
	size_t blame_devices;              /* devices whose idle time is broken down per thread */
	ana_launches launches;
	/* the streaming's own figures */
	uint64_t n_fed, peak_queued, n_late;
	uint64_t peak_samples;             /* samples fed (ana_gpu_acc_sample) waiting, at most */
	uint64_t horizon_ns;
} ana_gpu_sum;

/* Busy buckets: at most this many per device. */
#define ANA_GPU_BUSY_MAX_BUCKETS 200

/* ---- the accumulator ---- */
typedef struct ana_gpu_acc ana_gpu_acc;
/* An accumulator for model m (after loading: its threads, samples unless they are fed, strings,
 * devices, launch stacks and bounds are final). horizon_ns: how far behind the latest record fed a record may
 * come (UINT64_MAX: hold everything until the end). NULL on ENOMEM. */
ana_gpu_acc *ana_gpu_acc_new(const ana_model *m, uint64_t horizon_ns);
/* Feed one record (kernel, memcpy, memset, sync or API call; other tags are ignored), in file
 * order. Records behind the horizon are swept late and counted (n_late). 0 or GTT_ENOMEM. */
int ana_gpu_acc_add(ana_gpu_acc *a, const gtt_record *rec);
/* Samples come from the caller (ana_gpu_acc_sample, in time order), not the model's array: a
 * model that keeps none (ana_opts.stream_samples). Call before the first record. From then on the
 * sweep runs on a thread of its own (gpu_pipe.c; the caller's thread if none could be made): the
 * calls below only hand their arguments over, an error surfaces at a later call, and until
 * ana_gpu_acc_finish or _free the model's strings, CUDA devices and launch stacks (what the sweep
 * reads) must not change; its stacks may grow (a sample's leaf frame is looked up when fed). */
void ana_gpu_acc_feed_samples(ana_gpu_acc *a);
/* One classified sample with its merged stack, in time order. 0 or GTT_ENOMEM. */
int ana_gpu_acc_sample(ana_gpu_acc *a, const ana_sample *s);
/* Every record starting before w_records and every sample before w_samples is in: sweep what is
 * final. 0 or GTT_ENOMEM. */
int ana_gpu_acc_advance(ana_gpu_acc *a, uint64_t w_records, uint64_t w_samples);
/* Sweep what is left and hand the aggregates over (*out: free with ana_gpu_sum_free). The
 * accumulator is freed, also on failure. 0 or GTT_ENOMEM. */
int ana_gpu_acc_finish(ana_gpu_acc *a, ana_gpu_sum **out);
void ana_gpu_acc_free(ana_gpu_acc *a); /* NULL ok */
void ana_gpu_sum_free(ana_gpu_sum *s); /* NULL ok */

/* ---- tables only (ANA_STREAM_CUDA_TABLES): counted in file order while the trace is read ---- */
typedef struct ana_gpu_tables ana_gpu_tables;
ana_gpu_tables *ana_gpu_tables_new(void);
/* Count one record (kernel, memcpy, memset, sync or API call; others ignored). 0 or GTT_ENOMEM. */
int ana_gpu_tables_add(ana_gpu_tables *t, const gtt_record *rec);
/* The kernel and API tables and the record counts by kind, names looked up in m now (its strings
 * are read); busy time, gaps and launch sites stay empty. t is freed, also on failure. 0 or
 * GTT_ENOMEM. */
int ana_gpu_tables_finish(ana_gpu_tables *t, const ana_model *m, ana_gpu_sum **out);
void ana_gpu_tables_free(ana_gpu_tables *t); /* NULL ok */

/* The GPU aggregates of m: those the loader streamed (ana_opts.stream_cuda), else made once from
 * the model's arrays and kept with it. NULL on ENOMEM. */
const ana_gpu_sum *ana_gpu_sum_of(const ana_model *m);
/* Drop aggregates made from the arrays (a caller that changed them wants them made again);
 * streamed ones stay. */
void ana_gpu_sum_forget(const ana_model *m);
/* The number of kernel records of m, streamed or kept. */
uint64_t ana_gpu_sum_kernels(const ana_model *m);
/* The number of CUDA work, sync and API records of m, streamed or kept. */
uint64_t ana_gpu_n_records(const ana_model *m);

#endif
