/* model.h — the analyzed trace held in memory: threads, symbolized stacks, classified
 * samples, and the other record kinds decoded into arrays — but context switches only on
 * request (ana_opts.keep_switches; otherwise folded into per-thread on-CPU time as they are
 * read, oncpu.h), and Python stacks' frames interned. Built once by ana_model_load() (load.c:
 * read, symbolize, unwind, merge Python, classify), for the whole recording or a time window of
 * it (ana_opts.has_from/has_to, ana_model.window: window.h); every report, fold, export, diff
 * and view reads this and nothing else.
 *
 * Return rule for all of analyze/: a function returns 0 (or a count, or 1 for "found") or a
 * negative GTT_E* code from lib/gtt.h (the codes of the trace format, which this layer reads),
 * and one that makes an object returns it or NULL; where a person needs more words than the
 * code (which file, which line, which byte) the function also writes one line into the
 * caller's err[errlen]. Only the command functions (ana_cmd_* and their helpers in cli.c and
 * diff.c) print to stderr or pick an exit status (GT_EXIT_*, lib/gt_util.h), besides the
 * loader's progress line when ana_opts.progress asks for it. */
#ifndef ANA_MODEL_H
#define ANA_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "gtt.h"

/* Growable array helper: T *v; size_t n, cap. */
#define ANA_VEC(T) struct { T *v; size_t n, cap; }
/* Append one zeroed element, return its pointer or NULL on ENOMEM. */
void *ana_vec_push_(void **v, size_t *n, size_t *cap, size_t elem);
#define ana_vec_push(vec) ana_vec_push_((void **)&(vec).v, &(vec).n, &(vec).cap, sizeof(*(vec).v))

enum ana_frame_kind {
	ANA_FRAME_NATIVE = 0,  /* user-space native code */
	ANA_FRAME_KERNEL = 1,  /* kernel code */
	ANA_FRAME_PYTHON = 2,  /* a Python function (from the Python reader) */
	ANA_FRAME_ROOT = 3,    /* synthetic roots: process/thread names with --threads */
};

/* One distinct frame: interned by (kind, module, name, file, line). */
typedef struct ana_frame {
	const char *name;      /* function name, demangled; "[module+0xOFF]" when unknown */
	const char *module;    /* basename of the binary, or the Python file for Python frames */
	const char *file;      /* source file or NULL */
	int32_t line;          /* source line or 0 */
	uint8_t kind;          /* enum ana_frame_kind */
	uint8_t inlined;       /* 1 when this frame is an inlined call */
} ana_frame;

/* A distinct stack: frame ids root first. Interned, so equal stacks share an id. */
typedef struct ana_stack {
	uint32_t n;
	uint32_t *frames;
} ana_stack;

enum ana_class {
	ANA_CLASS_NONPY = 0,        /* not a Python thread */
	ANA_CLASS_PY_GIL = 1,       /* holds the GIL, executing Python */
	ANA_CLASS_NATIVE_GIL = 2,   /* holds the GIL, in C code that did not release it */
	ANA_CLASS_NATIVE_NOGIL = 3, /* C/CUDA code that released the GIL */
	ANA_CLASS_WAIT_GIL = 4,     /* waiting to take the GIL */
	ANA_CLASS_COUNT = 5,
};
/* Report words for a class: "not python", "python+GIL", ... */
const char *ana_class_name(int cls);

/* The --gil vocabulary of every tool (fold, export, gt-render): a comma list of
 *   python   holds the GIL, running Python       native-gil  holds it, in C code
 *   nogil    C/CUDA code that released it       wait        waiting to take it
 *   nopy     not a Python thread
 *   held = python,native-gil   released = nogil,wait (a Python thread not holding it)
 *   native = native-gil,nogil  any / all = every sample
 * as a class mask (bit 1 << ANA_CLASS_*), -1 for every class, or -2 for a word it does not know. */
int ana_gil_parse(const char *spec);
#define ANA_GIL_WORDS "held, released, python, native-gil, nogil, wait, native, nopy or any (comma list)"
/* How the native (user) stack of a sample ended: at a root, or truncated and why. Every
 * reason from ANA_UNWIND_STACK_END on means the stack does not reach its root (folded stacks
 * put such samples under a "[truncated]" root frame). */
enum ana_unwind {
	ANA_UNWIND_ROOT = 0,      /* reached a root: a process or thread entry, or a frame whose CFI says it has no caller */
	ANA_UNWIND_STITCHED = 1,  /* reached a root: the DWARF unwind ran out of stack copy and the recorded
	                             frame-pointer callchain, checked against it, supplied the callers */
	ANA_UNWIND_NO_USER = 2,   /* no user stack to unwind (kernel thread, or no user registers): not truncated */
	ANA_UNWIND_STACK_END = 3, /* the next return address lies above the end of the stack copy */
	ANA_UNWIND_NO_CFI = 4,    /* code without unwind information, or outside every known binary */
	ANA_UNWIND_BAD_READ = 5,  /* a register or memory word the unwind needed was not in the sample */
	ANA_UNWIND_DEPTH = 6,     /* deeper than the unwinder's frame limit */
	ANA_UNWIND_FP_END = 7,    /* a frame-pointer callchain that ended before a root */
	ANA_UNWIND_IP_ONLY = 8,   /* nothing to unwind with: the sampled instruction only */
	ANA_UNWIND_COUNT = 9,
};
#define ANA_UNWIND_TRUNCATED(u) ((u) >= ANA_UNWIND_STACK_END)
/* Report words for a reason: "stack copy too short", ... */
const char *ana_unwind_name(int u);

typedef struct ana_sample {
	uint64_t time_ns;
	uint64_t weight_ns;    /* period this sample stands for */
	uint32_t pid, tid, cpu;
	uint32_t stack_id;     /* merged native(+Python) stack, index into model->stacks */
	uint32_t thread_idx;   /* index into model->threads */
	uint8_t cls;           /* enum ana_class */
	uint8_t unwind_ok;     /* 1 when the user stack reached a root (not truncated) */
	uint8_t unwind;        /* enum ana_unwind: how the native stack ended */
} ana_sample;

/* Truncated stacks counted by (thread, reason, function of the outermost frame reached): the
 * sampler-health section shows them per thread. */
typedef struct ana_trunc {
	uint32_t thread_idx;
	uint32_t frame;        /* outermost native frame of the first such stack (its function is the
	                          key: frames of one function differ by line), ANA_NO_ID when none */
	uint32_t unwind;       /* enum ana_unwind, a truncated one */
	uint64_t n_samples;
} ana_trunc;

typedef struct ana_thread {
	uint32_t pid, tid;
	char *name;            /* how every table shows it: "drafter-0 (python3)" for a thread the
	                          Python program named (py_name and the OS name), else its OS name */
	char *comm;            /* its OS name (comm), the last one seen */
	char *py_name;         /* the name the Python program gave it (threading), last seen; NULL none */
	uint64_t start_ns, end_ns;   /* 0 when unknown */
	uint64_t n_samples;
	uint64_t sampled_ns;   /* sum of sample weights */
	uint64_t cpu_ns;       /* utime+stime growth over the recording, from thread_cpu records */
	uint64_t oncpu_ns;     /* on-CPU time from switch records (0 when none recorded) */
	uint64_t n_csw;        /* context switches (voluntary + involuntary) over the /proc readings */
	uint64_t n_class[ANA_CLASS_COUNT];
	int is_python;         /* seen in a Python stack read */
	uint8_t cpu_known;     /* cpu_ns was measured (the thread has /proc readings) */
	uint8_t oncpu_known;   /* oncpu_ns was measured (the thread has switch records) */
} ana_thread;

typedef struct ana_mapping {
	gtt_mapping m;         /* path interned (ana_intern_str) */
} ana_mapping;

typedef struct ana_kv { char *key, *value; } ana_kv;

typedef struct ana_pystack {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t flags;
	uint32_t n_frames;
	const gtt_py_frame *frames;  /* leaf first; interned (ana_pyframes_intern): equal stacks
	                              * share one copy, owned by the model */
} ana_pystack;

typedef struct ana_pycode {
	uint32_t pid;
	uint64_t code_id;
	int32_t first_line;
	char *name, *qualname, *filename;
} ana_pycode;

typedef struct ana_string { uint32_t pid, id; char *text; } ana_string;

/* A launch stack: a cuda_callstack record (the agent's stack of a thread inside a CUDA API
 * call) with its native return addresses symbolized in the pid's address space and its Python
 * frames put on the root side (launch.c). */
typedef struct ana_callstack {
	uint64_t time_ns;      /* when the stack was taken */
	uint64_t call_ns;      /* the call's duration as the agent saw it, 0 unknown */
	uint64_t function;     /* the sampling key of a launch (kernel host function), 0 other calls */
	uint32_t pid, tid;
	uint32_t correlation;  /* CUPTI correlation id: the cuda_api record and the work it started */
	uint32_t name_id;      /* API name (string of pid) */
	uint32_t flags;        /* GTT_CALLSTACK_* */
	uint32_t stack_id;     /* merged stack, root first (model->stacks) */
} ana_callstack;

/* A py_thread record: the Python name of an OS thread from some time on. */
typedef struct ana_pythread { uint64_t time_ns; uint32_t pid, tid; char *name; } ana_pythread;
/* A stretch of time (captured intervals, captured.h). */
typedef struct ana_interval { uint64_t start_ns, end_ns; } ana_interval;
/* The switch gate of one recorded tree (swcover.h): the stretches of the span its recording wrote
 * no switch in, sorted, and the captured time they cover. */
typedef struct ana_swgroup {
	uint32_t pid;          /* the tree's root (the gate records' pid; 0: the whole trace) */
	ANA_VEC(ana_interval) closed;
	uint64_t closed_ns;
} ana_swgroup;

/* The time window a model covers (--from/--to, window.h). When on, every record kind holds only
 * what falls in [from_ns, to_ns) (intervals cut at its edges), start_ns/end_ns are the window's
 * (end_ns no later than the recording's end), and figures over time (durations, rates, on-CPU
 * and GIL time) are the window's. Consumers that print times relative to the recording (as
 * --from does) use origin_ns; the whole-recording END record is kept but not compared. */
typedef struct ana_window {
	int on;                /* 1: a window; 0: the whole recording */
	uint64_t origin_ns;    /* the recording's start, which --from/--to count from */
	uint64_t from_ns, to_ns;  /* absolute trace times; to_ns UINT64_MAX without --to */
	uint64_t last_ns;      /* the recording's last known time (chunk index, END record, records read) */
	int whole;             /* interval records that overlap it are kept whole, not cut at its
	                          edges (ana_opts.window_whole: a timeline draws and labels them) */
} ana_window;

typedef struct ana_model {
	char *path;
	ana_window window;     /* the window read (window.on 0: all of it) */
	uint32_t version_major, version_minor;
	int truncated;         /* the trace was cut off; analysis covers up to the cut */
	uint64_t n_corrupt;    /* chunks skipped for a bad checksum or bad payload */
	uint64_t start_ns, end_ns;   /* first and last timestamp seen */
	int has_end;           /* an END record was read */
	gtt_end end;
	int end_mismatch;      /* END's sample count is not the number of samples read (chunks lost,
	                        * skipped or duplicated): a warning, and exit status 1 (partial) */

	ANA_VEC(ana_kv) meta;
	ANA_VEC(gtt_process) processes;  /* comm interned (ana_intern_str) */
	ANA_VEC(ana_thread) threads;     /* sorted by (pid, tid) */
	ANA_VEC(ana_mapping) mappings;
	ANA_VEC(ana_sample) samples;     /* time order */
	ANA_VEC(ana_frame) frames;
	ANA_VEC(ana_stack) stacks;
	ANA_VEC(gtt_switch) switches;    /* only with ana_opts.keep_switches (file order) */
	ANA_VEC(gtt_thread_cpu) thread_cpu;
	ANA_VEC(gtt_health) health;      /* text interned */
	ANA_VEC(gtt_ticks) ticks;
	ANA_VEC(ana_pycode) pycodes;
	ANA_VEC(ana_pystack) pystacks;   /* time order */
	ANA_VEC(ana_pythread) pythreads; /* name owned */
	ANA_VEC(gtt_gil) gil;            /* time order */
	ANA_VEC(ana_string) strings;
	ANA_VEC(gtt_cuda_device) cuda_devices;  /* name/uuid interned */
	/* CUDA work, syncs and API calls: kept here unless ana_opts.stream_cuda, which leaves these
	 * five empty and streams them into gpu instead */
	ANA_VEC(gtt_cuda_kernel) kernels;
	ANA_VEC(gtt_cuda_memcpy) memcpys;
	ANA_VEC(gtt_cuda_memset) memsets;
	ANA_VEC(gtt_cuda_sync) syncs;
	ANA_VEC(gtt_cuda_api) apis;
	ANA_VEC(gtt_cuda_alloc) allocs;
	ANA_VEC(gtt_nvtx) nvtx;
	ANA_VEC(gtt_counter) counters;
	ANA_VEC(ana_callstack) callstacks;  /* launch stacks, sorted by (pid, correlation, time) */
	ANA_VEC(ana_trunc) truncs;       /* truncated native stacks by thread, reason and frame */
	ANA_VEC(gtt_capture) captures;   /* capture records (name not kept) */
	ANA_VEC(ana_interval) captured;      /* captured intervals, sorted (captured.c) */
	int capture_controlled;          /* the trace has pid-0 capture records */
	ANA_VEC(gtt_switch_gate) gates;  /* switch gate records (swcover.h), by (pid, time) */
	ANA_VEC(ana_swgroup) swgroups;   /* the gates of each recorded tree (one for a recording) */
	uint64_t sw_closed_ns;           /* the most captured time without switches of any tree */
	uint64_t sw_rate_max, sw_limit;  /* the highest switch rate the gate records give, the last limit */
	struct ana_gpu_sum *gpu;         /* the GPU report's aggregates (gpu_sum.h): streamed by the loader
	                                  * (cuda_streamed), or made from the arrays on first use */
	int cuda_streamed;               /* loaded with ana_opts.stream_cuda */
	int gpu_launches;                /* gpu->launches is what ana_launches_build makes of the CUDA
	                                  * records (ANA_STREAM_CUDA_LAUNCHES: fold --weight gpu-time) */
	struct ana_sample_sum *ssum;     /* the report's sums of samples, Python reads and GIL records
	                                  * (sample_sum.h): streamed by the loader (samples_streamed), or
	                                  * made from the arrays on first use */
	int samples_streamed;            /* loaded with ana_opts.stream_samples: samples, pystacks and gil
	                                  * stay empty (gil holds only a window's carried-in state) */

	uint64_t n_archive_bytes;        /* size of the embedded symbol archive */
	void *priv;                      /* load.c's private state (symbolizer, interning tables) */
} ana_model;

/* --python-frames: how Python frames are named (analyze/python.c ana_python_frame_name) */
enum ana_pyframes {
	ANA_PYFRAMES_AUTO = 0,     /* "function (file:line)" where the name is ambiguous (<module>, <lambda>, ...) */
	ANA_PYFRAMES_FUNCTION = 1, /* the function's name only */
	ANA_PYFRAMES_LINE = 2,     /* every frame "function (file:line)" */
};

typedef struct ana_opts {
	const char *symfs;      /* --symfs DIR: look for binaries there first (after the archive) */
	int python_only;        /* --python-only: keep only Python frames */
	int python_frames;      /* --python-frames: enum ana_pyframes */
	int no_python_merge;    /* keep native stacks as recorded */
	int kernel;             /* keep kernel frames (default 1) */
	int progress;           /* show progress on stderr */
	int no_archive;         /* --no-archive: ignore the embedded symbol archive */
	int skip_corrupt;       /* analyze around corrupt chunks (counted in n_corrupt) instead of failing */
	/* --from S / --to S: read only [from, to) of the recording (offsets from its start, ns);
	 * only the chunks that can hold it are read (the trace's chunk index) */
	int has_from, has_to;
	uint64_t from_ns, to_ns;
	/* keep every context switch in model->switches (gt-render's timeline draws them); without
	 * it they are folded into each thread's oncpu_ns as they are read and switches stays empty:
	 * a GIL-contended process switches 100 000 times a second */
	int keep_switches;
	/* with --from/--to: CUDA activity, API calls and NVTX ranges that overlap the window are kept
	 * whole instead of cut at its edges (gt-render's timeline clips them itself and shows each
	 * one's real length); figures summed over the window are then not the window's alone */
	int window_whole;
	/* do not keep CUDA work, syncs and API calls (kernels, memcpys, memsets, syncs, apis stay
	 * empty), only aggregates of them in model->gpu (analyze/gpu_sum.h), whose memory follows
	 * distinct names, threads and devices: ANA_STREAM_CUDA_REPORT (`report`) reads them again
	 * once the rest is loaded, for every figure of the GPU report; ANA_STREAM_CUDA_TABLES
	 * (`diff`, `check`, fold, gt-render flame and the sample exports but for GPU time) only
	 * counts them by name as they are read (the kernel and API tables, nothing over time);
	 * ANA_STREAM_CUDA_LAUNCHES (fold --weight gpu-time) counts them so too, then reads the work,
	 * sync and API records again once the launch stacks are made and joins them to those stacks
	 * in time order (model->gpu->launches, gpu_launches set): memory follows launch groups and
	 * sites, and the calls of the last ANA_LAUNCH_WINDOW_NS. Tools that walk the records
	 * (timeline, the Chrome export) leave it 0 */
	int stream_cuda;
	/* with stream_cuda set: do not keep samples, Python stack reads or GIL records either
	 * (samples, pystacks and gil stay empty; each thread's counts are still made), only their
	 * aggregates in model->ssum (analyze/sample_sum.h), whose memory follows distinct threads,
	 * stacks and processes: they are merged, classified and summed in one time-ordered read (with
	 * the CUDA records for ANA_STREAM_CUDA_REPORT), once the rest is loaded (`report`; fold of
	 * samples and gt-render flame, which fold those sums: ana_fold_load_opts). Ignored without
	 * stream_cuda */
	int stream_samples;
	/* with stream_samples: Python stack reads also counted by (frames, thread, GIL held at the
	 * read) in model->ssum (ana_ssum_read_row: fold --weight wall folds those) */
	int sum_reads;
	/* with stream_samples: every sample of the model is also handed to sample_sink once it is
	 * merged and classified, in time order (each thread's; a record that came later than the
	 * chunk index promised comes where it came), whatever its thread or stack (the speedscope
	 * export writes each thread's samples from these: export_speedscope.c). It cannot fail the
	 * load: a sink that fails keeps its error for its caller. NULL: none */
	void (*sample_sink)(void *ctx, const ana_model *m, const ana_sample *s);
	void *sample_sink_ctx;
} ana_opts;
enum { ANA_STREAM_CUDA_KEEP = 0, ANA_STREAM_CUDA_REPORT = 1, ANA_STREAM_CUDA_TABLES = 2,
       ANA_STREAM_CUDA_LAUNCHES = 3 };
void ana_opts_init(ana_opts *o);

/* Read, symbolize, unwind, merge and classify a trace ("-" = stdin; input that is not a regular
 * file is checked and spooled first: source.h). NULL on failure with a one-line reason in
 * errbuf. Warnings (truncation, corrupt chunks, an END record that disagrees, missing symbols)
 * are kept in the model: ana_model_warnings() lists them. */
ana_model *ana_model_load(const char *path, const ana_opts *opts, char *errbuf, size_t errlen);
/* Warnings gathered while loading (one line each, no newline), count in *n. */
const char *const *ana_model_warnings(const ana_model *m, size_t *n);
void ana_model_free(ana_model *m);

/* Lookups. */
const char *ana_meta_get(const ana_model *m, const char *key);     /* NULL when absent */
const char *ana_string_get(const ana_model *m, uint32_t pid, uint32_t id); /* "?" when absent */
ana_thread *ana_thread_find(const ana_model *m, uint32_t pid, uint32_t tid);
/* After loading: each thread's comm from its last OS name, its py_name from the last py_thread
 * record, and the name every table shows. 0 or GTT_ENOMEM. */
int ana_thread_names(ana_model *m);
/* Where "seconds from the start" count from: the recording's start (window.origin_ns) when the
 * model is a window, else start_ns. */
static inline uint64_t ana_model_origin(const ana_model *m)
{
	return m->window.on ? m->window.origin_ns : m->start_ns;
}
/* The command of process pid (its last PROCESS record with one), NULL when unknown. */
const char *ana_process_comm(const ana_model *m, uint32_t pid);
/* Frame ids are interned through this (used by load.c and the Python merge). Strings in *f
 * are copied (interned) by the model. Both return ANA_NO_ID on ENOMEM. */
#define ANA_NO_ID UINT32_MAX
uint32_t ana_frame_intern(ana_model *m, const ana_frame *f);
/* The model's one home for strings that come from records (frame names, process commands,
 * mapping paths, health texts, device names): a copy that lives until ana_model_free, shared
 * between equal strings. Fields of lib's gtt_* structs kept in the model point here - lib's
 * const char * fields are borrowed, so the model never frees them one by one. NULL for a NULL
 * s, and on ENOMEM. */
const char *ana_intern_str(ana_model *m, const char *s);
uint32_t ana_stack_intern(ana_model *m, const uint32_t *frames, uint32_t n);
/* A Python stack's frames (n of them, leaf first), copied once per distinct sequence into the
 * model: what ana_pystack.frames points to. NULL on ENOMEM (and for n == 0). */
const gtt_py_frame *ana_pyframes_intern(ana_model *m, const gtt_py_frame *frames, uint32_t n);

#endif
