/* telemetry.h — the pipeline's ground truth: per-thread CPU split, per-phase wall times, queue depth, JSON. */
#ifndef PL_TELEMETRY_H
#define PL_TELEMETRY_H
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "kernels.h"
#include "pipeline.h"
#include "queue.h"

/* A growable list of int64 values (durations in ns). Zero-initialise to start. */
typedef struct pl_series {
	int64_t *v;
	size_t n, cap;
} pl_series;

/* Appends v; 0, or -1 when out of memory (the value is dropped). */
int pl_series_add(pl_series *s, int64_t v);
void pl_series_free(pl_series *s);

typedef struct pl_stats {
	int64_t count, total_ns, mean_ns, p50_ns, p99_ns, max_ns;
} pl_stats;

/* Summary of one or more series taken together (nearest-rank percentiles). */
void pl_series_stats(const pl_series *const *series, size_t n_series, pl_stats *out);

enum { PL_MAX_PHASES = 10 };

/* What one thread measured about itself. Times are CLOCK_MONOTONIC / CLOCK_THREAD_CPUTIME_ID ns. */
typedef struct pl_thread_rec {
	char name[16];            /* "target-0", "drafter-2", "main" */
	const char *role;         /* "target", "drafter", "main" */
	int index, device, tid;
	int64_t start_ns, end_ns; /* wall clock of the thread's work */
	int64_t cpu_ns;           /* thread CPU from begin to end */
	int64_t cpu_native_ns;    /* thread CPU inside pipeline library calls (pl_worker_step) */
	int64_t cpu_python_work_ns, python_wall_ns; /* reported by the Python driver */
	int64_t steps, tokens;
	double last_loss;         /* last loss read back to the host (the .item() pattern) */
	int64_t loss_reads;
	int n_phases;
	const char *const *phase_names;
	pl_series phase_ns[PL_MAX_PHASES]; /* one wall duration per step and phase */
	pl_series step_ns;                 /* one wall duration per step */
	int64_t launches[KN_COUNT];
	pl_alloc_stats alloc;
} pl_thread_rec;

/* Everything pl_telemetry_write puts in the file. */
typedef struct pl_telemetry {
	const pl_config *cfg;
	const char *driver, *driver_detail, *launch_kind, *error;
	int pid;
	int64_t start_ns, end_ns;
	int64_t tokens_produced, tokens_consumed;
	double tokens_per_s;
	pl_queue_stats queue;
	const pl_thread_rec *const *threads; /* workers, then the main thread */
	int n_threads;
} pl_telemetry;

/* Writes t as JSON to path (replacing it). 0 or PL_EIO with a one-line reason in err. */
int pl_telemetry_write(const char *path, const pl_telemetry *t, char *err, size_t errlen);

/* CLOCK_THREAD_CPUTIME_ID of the calling thread, in ns. */
int64_t pl_thread_cpu_ns(void);

#endif
