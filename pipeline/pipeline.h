/* pipeline.h — the target/drafter training pipeline (pl_): configuration, run, workers, results. */
#ifndef PL_PIPELINE_H
#define PL_PIPELINE_H
#include <stddef.h>
#include <stdint.h>

enum {
	PL_MAX_GPUS = 64,
	PL_MAX_BATCH = 256,   /* sequences per target batch */
	PL_MAX_CHUNK = 1024,
};

/* Return codes: 0 or one of these. */
enum {
	PL_EUSAGE = -1,  /* bad configuration or arguments (a CLI exits 64) */
	PL_ENODEV = -2,  /* no GPU, or a build without CUDA (exit 2) */
	PL_EBACKEND = -3, /* the backend failed while running (exit 2) */
	PL_ENOMEM = -4,
	PL_EIO = -5,     /* could not write the telemetry file */
};

/* What one run does. Sizes at 0 mean "the backend's default" (small on the CPU, large on CUDA);
 * pl_config_resolve fills them in. */
typedef struct pl_config {
	char backend[8];      /* "cpu" or "cuda" */
	int targets, drafters;
	int queue_depth, min_ready;
	int sync_every;       /* drafters copy the loss to the host every N steps (0: never) */
	int alloc_cached;     /* 0: churn (raw alloc/free per step), 1: caching allocator */
	int64_t steps;        /* steps per target (0: until seconds) */
	double seconds;       /* targets stop producing after this long (0: until steps) */
	int hidden, layers, seq_min, seq_max, batch, chunk;
	uint32_t seed;
	int gpus[PL_MAX_GPUS];
	int n_gpus;
	double python_work_ms; /* recorded for the Python driver, which does that work */
	int sample_ms;        /* queue depth sampling interval */
} pl_config;

/* Fills c with the defaults (backend cpu, 5 targets, 3 drafters, depth 60, min_ready 9, ...). */
void pl_config_defaults(pl_config *c);

/* Sets one knob from text, by the long option's name without dashes ("targets", "min-ready",
 * "gpus", "alloc", ...). Returns 0, or PL_EUSAGE with a one-line reason in err. */
int pl_config_set(pl_config *c, const char *key, const char *value, char *err, size_t errlen);

/* Fills sizes left at 0 with the backend's defaults and checks the whole configuration
 * (min_ready <= depth, workers >= 1, seq_min <= seq_max, ...). 0 or PL_EUSAGE with err. */
int pl_config_resolve(pl_config *c, char *err, size_t errlen);

/* Heap configuration for ctypes callers: defaults filled; free with pl_config_free (NULL ok). */
pl_config *pl_config_new(void);
void pl_config_free(pl_config *c);

/* The text for a PL_E* code. */
const char *pl_strerror(int rc);

typedef struct pl_run pl_run;
typedef struct pl_worker pl_worker;

/* Creates a run: resolves cfg, finds the backend and its devices, creates every worker's
 * device context, weights and allocator, and the queue. No thread starts. Returns 0 and *out,
 * or PL_EUSAGE / PL_ENODEV / PL_EBACKEND / PL_ENOMEM with a one-line reason in err. */
int pl_run_create(const pl_config *cfg, pl_run **out, char *err, size_t errlen);

/* Marks the start (the --seconds clock starts here). spawn_threads = 1 starts one named
 * pthread per worker running begin/step.../end; 0 leaves that to the caller (Python driver).
 * Returns 0 or PL_ENOMEM. */
int pl_run_start(pl_run *r, int spawn_threads);

/* Waits for the threads pl_run_start spawned (if any) and closes the run's clocks; call it in
 * either mode once every worker ended. Returns 0 or the first worker error (see pl_run_error). */
int pl_run_finish(pl_run *r);

/* Stops the run: workers return from their next step, blocked queue calls wake up. */
void pl_run_abort(pl_run *r);

/* The first error a worker hit, "" when none. */
const char *pl_run_error(pl_run *r);

/* Workers: targets first (0..targets-1), then drafters. */
int pl_run_n_workers(pl_run *r);
pl_worker *pl_run_worker(pl_run *r, int i);

/* The worker's name ("target-0", "drafter-2"); owned by the run. */
const char *pl_worker_name(pl_worker *w);

/* Called on the worker's own thread before its first step: names the thread ("target-0",
 * "drafter-1"), binds its device and starts its CPU clock. 0 or a PL_E code. */
int pl_worker_begin(pl_worker *w);

/* One step: a target produces one batch of hidden states, a drafter trains on one. Returns 1
 * after a step, 0 when the worker is finished (steps or time up, queue drained), or a
 * negative PL_E code (the run is aborted; pl_run_error says why). */
int pl_worker_step(pl_worker *w);

/* Adds CPU and wall time the caller spent in its own (Python) code for this worker's thread. */
void pl_worker_add_python(pl_worker *w, int64_t cpu_ns, int64_t wall_ns);

/* Called on the worker's thread after its last step: stops its clocks. Returns 0. */
int pl_worker_end(pl_worker *w);

/* Records who drove the run ("c" or "python") and a detail (e.g. the Python version). */
void pl_run_set_driver(pl_run *r, const char *driver, const char *detail);

/* Tokens trained (consumed by drafters) per second of run wall time; after pl_run_finish. */
double pl_run_tokens_per_s(pl_run *r);

/* Writes the human summary (tokens/s, queue depth mean/min/max, % of time at or below the
 * watermark, phases) into buf, NUL-terminated and truncated to len. After pl_run_finish. */
void pl_run_summary(pl_run *r, char *buf, size_t len);

/* Writes the ground-truth telemetry JSON to path. 0 or PL_EIO with err. After pl_run_finish. */
int pl_run_write_telemetry(pl_run *r, const char *path, char *err, size_t errlen);

/* Frees everything (accepts NULL); aborts and joins threads still running. */
void pl_run_destroy(pl_run *r);

#endif
