/* gtt.h — the groundtruth trace format (.gtt): record types, writer and reader.
 *
 * A trace is a 16-byte header followed by chunks:
 *   u32 tag, u32 payload length, u32 crc32c(tag||length||payload), payload.
 * In format 1.0 each chunk is one record. Format 1.1 adds packed chunks (tag 15): a block of
 * many records in compact encodings, compressed with zstd, which the reader expands so that
 * callers still receive one gtt_record at a time; and a chunk index at the end (tag 16) for
 * reading a time window. All integers are little-endian and written field by field (see
 * docs/FORMAT.md, which is the specification this file implements). The library never prints
 * and never exits; functions return 0 (or a positive count) or a negative GTT_E*.
 */
#ifndef GTT_H
#define GTT_H

#include <stddef.h>
#include <stdint.h>

#define GTT_MAGIC "GTT\x19\r\n\x1a\n" /* 8 bytes; the \r\n and \x1a catch text-mode damage */
#define GTT_MAGIC_LEN 8
#define GTT_HEADER_LEN 16
#define GTT_CHUNK_HEADER_LEN 12
#define GTT_VERSION_MAJOR 1
#define GTT_VERSION_MINOR 2 /* the newest minor version read and written; 1.0 and 1.1 are still read */
#define GTT_MAX_PAYLOAD (64u << 20) /* larger lengths are corruption, never an allocation */
#define GTT_PACKED_MAX_RAW (16u << 20) /* a packed chunk expanding to more is corrupt, never allocated */
#define GTT_PACKED_HEADER_LEN 28
#define GTT_CHAIN_ID_MAX ((1u << 22) - 1) /* callchain ids are 1..GTT_CHAIN_ID_MAX */
#define GTT_MAX_STRING (1u << 20)
#define GTT_BUILD_ID_MAX 64

/* Error codes. gtt_strerror() names them. */
enum {
	GTT_OK = 0,
	GTT_EIO = -1,      /* read/write/open failed; errno is kept in the handle */
	GTT_ENOMEM = -2,
	GTT_EFORMAT = -3,  /* not a .gtt file (bad magic or header) */
	GTT_EVERSION = -4, /* written by a newer, incompatible format version */
	GTT_ECORRUPT = -5, /* checksum mismatch or impossible length in a whole chunk */
	GTT_ETRUNC = -6,   /* file ends inside a chunk (recorder killed, disk full) */
	GTT_EINVAL = -7,   /* bad argument or a record that does not decode */
	GTT_EEMPTY = -8,   /* empty file */
	GTT_ENOZSTD = -9,  /* a zstd-compressed chunk, and libzstd.so.1 could not be loaded */
};

/* Record tags. Values are part of the on-disk format: never renumber. */
enum gtt_tag {
	GTT_REC_META = 1,         /* key/value string pair about the recording */
	GTT_REC_PROCESS = 2,      /* process start/exec/exit */
	GTT_REC_THREAD = 3,       /* thread start/rename/exit */
	GTT_REC_MAPPING = 4,      /* executable mapping with build-id */
	GTT_REC_SAMPLE = 5,       /* one CPU sample: callchain and/or regs + stack copy */
	GTT_REC_SWITCH = 6,       /* context switch in or out */
	GTT_REC_THREAD_CPU = 7,   /* per-thread utime/stime from /proc */
	GTT_REC_HEALTH = 8,       /* sampler health event: lost, throttled, lag window, errors */
	GTT_REC_TICKS = 9,        /* a sampling loop's schedule summary over an interval */
	GTT_REC_PY_CODE = 10,     /* a Python code object: names and file */
	GTT_REC_PY_STACK = 11,    /* one thread's Python frame chain at a time */
	GTT_REC_GIL = 12,         /* GIL holder/locked state (written on change) */
	GTT_REC_STRING = 13,      /* interned string (kernel, API, NVTX, counter names) */
	GTT_REC_CALLCHAIN = 14,   /* 1.1: an interned callchain that samples in packed chunks refer to */
	GTT_REC_PACKED = 15,      /* 1.1: a compressed block of records (expanded by the reader) */
	GTT_REC_INDEX = 16,       /* 1.1: chunk index at the end (used by the reader, never returned) */
	GTT_REC_CLOCK = 17,       /* 1.1: a CLOCK_REALTIME <-> trace clock pair, with host and boot id */
	GTT_REC_PY_THREAD = 18,   /* a Python thread's name (threading.Thread.name) for an OS thread */
	GTT_REC_CUDA_DEVICE = 20,
	GTT_REC_CUDA_KERNEL = 21,
	GTT_REC_CUDA_MEMCPY = 22,
	GTT_REC_CUDA_MEMSET = 23,
	GTT_REC_CUDA_SYNC = 24,
	GTT_REC_CUDA_API = 25,
	GTT_REC_CUDA_ALLOC = 26,
	GTT_REC_NVTX = 27,
	GTT_REC_COUNTER = 28,
	GTT_REC_CUDA_CALLSTACK = 29, /* native + Python stack taken inside a CUDA API call (the agent) */
	GTT_REC_ARCHIVE = 30,     /* a piece of an embedded binary, keyed by build-id */
	GTT_REC_END = 31,         /* clean end of recording */
	GTT_REC_CAPTURE = 32,     /* capture control: sampling switched on/off, an NVTX capture range's edge */
	GTT_REC_SWITCH_GATE = 33, /* context-switch records switched on/off (gt-record --switch-events=auto) */
	/* Reserved for format 1.1 work under way (one owner each; take a number from here,
	 * never another's): 34-39 free for later. */
};

/* ---- record payloads (decoded form) ----
 * Pointers inside decoded records point into reader-owned memory that stays
 * valid until the next gtt_reader_next() on the same reader. */

typedef struct gtt_meta {
	const char *key;
	const char *value;
} gtt_meta;

enum { GTT_PROC_START = 1, GTT_PROC_EXEC = 2, GTT_PROC_EXIT = 3, GTT_PROC_FORK = 4 };
typedef struct gtt_process {
	uint64_t time_ns;
	uint32_t pid, ppid;
	uint32_t event;      /* GTT_PROC_* */
	int32_t status;      /* EXIT: wait() status as returned by waitpid */
	const char *comm;    /* command line (args joined by spaces) or comm */
} gtt_process;

enum { GTT_THREAD_START = 1, GTT_THREAD_NAME = 2, GTT_THREAD_EXIT = 3 };
typedef struct gtt_thread {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t event;      /* GTT_THREAD_* */
	const char *name;
} gtt_thread;

typedef struct gtt_mapping {
	uint64_t time_ns;
	uint32_t pid;
	uint32_t prot;       /* PROT_* bits */
	uint64_t start, end, pgoff;
	uint32_t build_id_len;                 /* 0 when unknown */
	uint8_t build_id[GTT_BUILD_ID_MAX];
	const char *path;
} gtt_mapping;

/* Sample flags */
#define GTT_SAMPLE_REGS 0x1u   /* regs[] holds user registers (perf ABI order, regs_mask) */
#define GTT_SAMPLE_STACK 0x2u  /* stack[] holds a copy of the user stack from regs' SP */
#define GTT_SAMPLE_KERNEL 0x4u /* the thread was in kernel mode when sampled */
typedef struct gtt_sample {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t cpu;
	uint32_t flags;        /* GTT_SAMPLE_* */
	uint64_t period_ns;    /* cpu-clock time this sample stands for */
	uint32_t n_kernel;     /* ips[0..n_kernel) kernel frames, leaf first */
	uint32_t n_user;       /* ips[n_kernel..n_kernel+n_user) user frames, leaf first */
	const uint64_t *ips;
	uint32_t regs_abi;     /* PERF_SAMPLE_REGS_ABI_* */
	uint64_t regs_mask;    /* PERF_REG_X86_* bits of the registers in regs[] */
	uint32_t n_regs;
	const uint64_t *regs;
	uint32_t stack_len;    /* bytes of user stack copied from regs' SP upwards */
	const uint8_t *stack;
	uint32_t chain_id;     /* read from 1.1: the GTT_REC_CALLCHAIN id that ips came from, 0 when
	                        * the callchain was stored in the sample; ignored by the writer */
} gtt_sample;

enum { GTT_SWITCH_IN = 0, GTT_SWITCH_OUT = 1, GTT_SWITCH_OUT_PREEMPT = 2 };
typedef struct gtt_switch {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t cpu;
	uint32_t kind;        /* GTT_SWITCH_* */
} gtt_switch;

typedef struct gtt_thread_cpu {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint64_t utime_ns, stime_ns;  /* cumulative, as in /proc/PID/task/TID/stat */
	uint64_t nvcsw, nivcsw;       /* voluntary/involuntary context switches, cumulative */
	uint32_t state;               /* the state letter from stat ('R', 'S', 'D', ...) */
} gtt_thread_cpu;

/* Who a health or ticks record is about */
enum {
	GTT_SRC_PERF = 1,    /* the perf_event sampler */
	GTT_SRC_PYSTACK = 2, /* the Python stack reader loop */
	GTT_SRC_GIL = 3,     /* the GIL poll loop */
	GTT_SRC_PROCSTAT = 4,/* the /proc thread-stat loop */
	GTT_SRC_CUPTI = 5,   /* the CUDA agent */
	GTT_SRC_WRITER = 6,  /* the trace writer itself */
};
/* Health kinds; value[] meaning per kind is given in docs/FORMAT.md */
enum {
	GTT_HEALTH_LOST = 1,        /* count = records lost (PERF_RECORD_LOST / LOST_SAMPLES) */
	GTT_HEALTH_THROTTLE = 2,    /* [time_ns, end_ns) throttled */
	GTT_HEALTH_LAG_WINDOW = 3,  /* [time_ns, end_ns) loop behind by > 1 period; value[0] = max lateness ns */
	GTT_HEALTH_READ_ERRORS = 4, /* count = failed/torn reads; value[0] = failed, value[1] = torn */
	GTT_HEALTH_DROPPED = 5,     /* count = records dropped (e.g. CUPTI buffers full) */
	GTT_HEALTH_CONFIG = 6,      /* value[0] = ring buffer bytes, value[1] = period ns, value[2] = stack bytes */
	GTT_HEALTH_OVERHEAD = 7,    /* [time_ns, end_ns) time the tool spent (e.g. CUPTI overhead) */
	GTT_HEALTH_NOTE = 8,        /* count unused; a plain-text note in text */
};
/* A perf note of gt-record's stall watch (record/perf_watch.c) has this in its text, the CPU in
 * value[0], the samples its busy time wanted in value[1] and those it delivered in count. */
#define GTT_NOTE_SAMPLING_STOPPED "sampling event had stopped"
typedef struct gtt_health {
	uint64_t time_ns, end_ns;
	uint32_t source;     /* GTT_SRC_* */
	uint32_t kind;       /* GTT_HEALTH_* */
	uint32_t pid, tid;   /* 0 when not about one thread */
	uint64_t count;
	uint64_t value[4];
	const char *text;    /* "" when none */
} gtt_health;

/* A sampling loop's absolute schedule over [start_ns, end_ns). Lateness is
 * actual minus intended tick time. Flag GTT_TICKS_WHOLE marks the summary of
 * the whole recording (percentiles exact over all ticks). */
#define GTT_TICKS_WHOLE 0x1u
typedef struct gtt_ticks {
	uint64_t start_ns, end_ns;
	uint32_t source;      /* GTT_SRC_* */
	uint32_t flags;
	uint64_t period_ns;
	uint64_t intended;    /* ticks due in the interval */
	uint64_t done;        /* ticks taken */
	uint64_t late_p50_ns, late_p99_ns, late_max_ns;
} gtt_ticks;

typedef struct gtt_py_code {
	uint32_t pid;
	uint64_t code_id;     /* the code object's address in the target */
	int32_t first_line;
	const char *name;     /* co_name */
	const char *qualname; /* co_qualname (3.11+), else co_name */
	const char *filename;
} gtt_py_code;

typedef struct gtt_py_frame {
	uint64_t code_id;
	int32_t line;         /* -1 when unknown */
	uint32_t flags;       /* GTT_PYFRAME_* */
} gtt_py_frame;
#define GTT_PYFRAME_ENTRY 0x1u  /* first Python frame of a C->Python entry (eval-loop boundary) */
#define GTT_PYFRAME_NATIVE 0x2u /* a C function called from Python (builtin/method), when known */

#define GTT_PYSTACK_HOLDS_GIL 0x1u /* this thread held the GIL at read time */
#define GTT_PYSTACK_TORN 0x2u      /* frames changed during the read; chain may be partial */
#define GTT_PYSTACK_IDLE 0x4u      /* thread state has no current frame */
#define GTT_PYSTACK_GIL_READ 0x8u  /* the GIL was read with this stack: HOLDS_GIL is an observation
                                    * (without it, 0 there means "not known") */
typedef struct gtt_py_stack {
	uint64_t time_ns;
	uint32_t pid, tid;        /* OS tid of the Python thread */
	uint64_t thread_id;       /* the PyThreadState address */
	uint32_t flags;           /* GTT_PYSTACK_* */
	uint32_t n_frames;        /* leaf first */
	const gtt_py_frame *frames;
} gtt_py_stack;

typedef struct gtt_gil {
	uint64_t time_ns;
	uint32_t pid;
	uint32_t holder_tid;  /* OS tid of the holder, 0 when none or unknown */
	uint32_t locked;      /* the GIL's locked flag */
	uint32_t flags;       /* reserved */
	uint64_t switches;    /* the interpreter's GIL switch counter when readable, else 0 */
	/* The read before this one, which still saw the state before this record's: the change
	 * happened in (prev_ns, time_ns]. 0 when unknown (the first read, or a 1.0 trace). */
	uint64_t prev_ns;
} gtt_gil;

/* The name the Python program gave one of its threads (threading.Thread(name=...), the
 * threading module's registry), for the OS thread tid; written when first seen and when it
 * changes. */
typedef struct gtt_py_thread {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint64_t ident;       /* threading.get_ident() of the thread (its pthread_t) */
	const char *name;
} gtt_py_thread;

typedef struct gtt_string {
	uint32_t pid;         /* strings are scoped by the writing process */
	uint32_t id;
	const char *text;
} gtt_string;

typedef struct gtt_cuda_device {
	uint32_t pid;
	uint32_t device;
	uint32_t cc_major, cc_minor;
	uint32_t sm_count;
	uint64_t global_mem_bytes;
	const char *name;
	const char *uuid;
} gtt_cuda_device;

typedef struct gtt_cuda_kernel {
	uint64_t start_ns, end_ns;
	uint32_t pid;
	uint32_t device, context, stream;
	uint32_t correlation;
	uint32_t grid[3], block[3];
	uint32_t shared_bytes;   /* static + dynamic */
	uint32_t registers;      /* per thread */
	uint32_t name_id;        /* GTT_REC_STRING id (mangled name) */
} gtt_cuda_kernel;

enum { GTT_MEMCPY_UNKNOWN = 0, GTT_MEMCPY_HTOD = 1, GTT_MEMCPY_DTOH = 2, GTT_MEMCPY_DTOD = 3,
       GTT_MEMCPY_HTOH = 4, GTT_MEMCPY_PTOP = 5 };
typedef struct gtt_cuda_memcpy {
	uint64_t start_ns, end_ns;
	uint32_t pid;
	uint32_t device, context, stream;
	uint32_t correlation;
	uint32_t kind;           /* GTT_MEMCPY_* */
	uint32_t flags;          /* 1 = async */
	uint64_t bytes;
} gtt_cuda_memcpy;

typedef struct gtt_cuda_memset {
	uint64_t start_ns, end_ns;
	uint32_t pid;
	uint32_t device, context, stream;
	uint32_t correlation;
	uint32_t value;
	uint64_t bytes;
} gtt_cuda_memset;

enum { GTT_SYNC_UNKNOWN = 0, GTT_SYNC_EVENT = 1, GTT_SYNC_STREAM_WAIT_EVENT = 2,
       GTT_SYNC_STREAM = 3, GTT_SYNC_CONTEXT = 4 };
typedef struct gtt_cuda_sync {
	uint64_t start_ns, end_ns;
	uint32_t pid;
	uint32_t context, stream;
	uint32_t correlation;
	uint32_t kind;           /* GTT_SYNC_* */
} gtt_cuda_sync;

enum { GTT_API_RUNTIME = 1, GTT_API_DRIVER = 2 };
typedef struct gtt_cuda_api {
	uint64_t start_ns, end_ns;
	uint32_t pid, tid;
	uint32_t correlation;
	uint32_t domain;         /* GTT_API_* */
	uint32_t cbid;           /* CUPTI callback id */
	int32_t status;          /* return code */
	uint32_t name_id;        /* GTT_REC_STRING id */
} gtt_cuda_api;

enum { GTT_ALLOC_ALLOC = 1, GTT_ALLOC_FREE = 2 };
typedef struct gtt_cuda_alloc {
	uint64_t time_ns;
	uint32_t pid;
	uint32_t device, context, stream;
	uint32_t correlation;
	uint32_t op;             /* GTT_ALLOC_* */
	uint32_t mem_kind;       /* CUPTI memory kind (device, pinned, managed, ...) */
	uint64_t address;
	uint64_t bytes;
} gtt_cuda_alloc;

enum { GTT_NVTX_RANGE = 1, GTT_NVTX_MARKER = 2 };
typedef struct gtt_nvtx {
	uint64_t start_ns, end_ns;  /* equal for a marker */
	uint32_t pid, tid;
	uint32_t kind;           /* GTT_NVTX_* */
	uint32_t domain_id;      /* GTT_REC_STRING id of the domain, 0 = default */
	uint32_t name_id;        /* GTT_REC_STRING id */
	uint32_t color;          /* ARGB, 0 = none */
	uint32_t depth;          /* push/pop nesting depth, 0 outermost */
} gtt_nvtx;

typedef struct gtt_counter {
	uint64_t time_ns;
	uint32_t pid;
	uint32_t name_id;        /* GTT_REC_STRING id */
	double value;
} gtt_counter;

/* Why a cuda_callstack was taken (bits 0-7; several may be set) and how complete it is. */
#define GTT_CALLSTACK_FIRST 0x1u          /* one of the first K calls of its (API, function) pair on its thread */
#define GTT_CALLSTACK_NTH 0x2u            /* a random 1-in-N sample of the pair's later calls */
#define GTT_CALLSTACK_LONG 0x4u           /* the call lasted at least the long-call threshold */
#define GTT_CALLSTACK_AT_EXIT 0x8u        /* taken when the call returned (LONG only), not when it began */
#define GTT_CALLSTACK_NATIVE_TRUNC 0x100u /* native stack cut at the depth cap */
#define GTT_CALLSTACK_NATIVE_NONE 0x200u  /* no native stack: no unwinder, or native stacks off */
#define GTT_CALLSTACK_NATIVE_AT_PY 0x400u /* native stack ends where the Python interpreter begins:
                                           * the Python frames continue it */
#define GTT_CALLSTACK_PY_NONE 0x1000u     /* no Python frames: not a Python thread, or no interpreter */
#define GTT_CALLSTACK_PY_TRUNC 0x2000u    /* Python chain cut at the depth cap, or unreadable beyond a frame */
#define GTT_CALLSTACK_PY_FAIL 0x4000u     /* Python stack unreadable (unsupported interpreter, read error) */
#define GTT_CALLSTACK_PY_OFF 0x8000u      /* Python frames not taken (switched off) */
typedef struct gtt_cuda_callstack {
	uint64_t time_ns;        /* when the stack was taken (the call's entry; its exit with AT_EXIT) */
	uint64_t call_ns;        /* the call's duration as the agent saw it (approximate; 0 = unknown);
	                          * exact times are in the cuda_api record of the same correlation */
	uint32_t pid, tid;
	uint32_t correlation;    /* CUPTI correlation id: the cuda_api record and the work it started */
	uint32_t domain;         /* GTT_API_* */
	uint32_t cbid;           /* CUPTI callback id */
	uint32_t name_id;        /* GTT_REC_STRING id of the API name, as in cuda_api */
	uint32_t flags;          /* GTT_CALLSTACK_* */
	uint64_t function;       /* launches: the kernel's host function or CUfunction (the sampling
	                          * key); 0 for other calls */
	uint32_t n_native;       /* return addresses, leaf first (the caller of the CUDA API first) */
	const uint64_t *ips;
	uint32_t n_py;           /* Python frames, leaf first; code ids name py_code records of pid */
	const gtt_py_frame *py;
} gtt_cuda_callstack;
/* Capture control (gt-record --delay, --capture-range, --ring, --max-size). pid 0: gt-record
 * switched sampling on (START) or off (STOP) for the reason in source — the captured time of
 * the trace is the union of [START, next STOP or end of trace] of these; a trace with none was
 * captured whole. pid != 0: an edge seen inside the target (the CUDA agent's NVTX range of the
 * capture name, at its exact time), which made gt-record switch sampling a little later. */
enum { GTT_CAPTURE_START = 1, GTT_CAPTURE_STOP = 2 };
enum { GTT_CAPTURE_SIGNAL = 1, GTT_CAPTURE_NVTX = 2, GTT_CAPTURE_DELAY = 3, GTT_CAPTURE_MAX_SIZE = 4,
       GTT_CAPTURE_RING = 5 };
typedef struct gtt_capture {
	uint64_t time_ns;
	uint32_t pid, tid;       /* 0, 0 for gt-record's own switches */
	uint32_t event;          /* GTT_CAPTURE_START / STOP */
	uint32_t source;         /* GTT_CAPTURE_SIGNAL ... RING */
	const char *name;        /* the NVTX range name (nvtx), else "" */
} gtt_capture;

/* The switch gate (gt-record --switch-events=auto): from time_ns on, the trace's `switch`
 * records are complete (OPEN: every context switch of the recorded tree is written) or absent
 * (CLOSED: none is). A trace with no gate record has them complete (or, per --switch-events=off,
 * none at all: meta switch_events); pid says whose (a merged trace holds several
 * recordings' gates). rate_per_s is the tree's switch rate that made the gate move
 * (measured over the last interval; 0 when none was measured), limit_per_s the rate above which
 * the gate closes (0 when no limit applies). */
enum { GTT_GATE_OPEN = 1, GTT_GATE_CLOSED = 2 };
enum { GTT_GATE_START = 1,     /* the recording (or a ring segment) starts in this state */
       GTT_GATE_OVER = 2,      /* the rate went over the limit: closed, but for short windows */
       GTT_GATE_WINDOW = 3,    /* one of those windows opens or closes */
       GTT_GATE_UNDER = 4,     /* a window found the rate back under the limit: open for good */
       GTT_GATE_FAILED = 5 };  /* the switch events could not be opened: closed for the rest */
typedef struct gtt_switch_gate {
	uint64_t time_ns;
	uint32_t event;          /* GTT_GATE_OPEN / CLOSED */
	uint32_t reason;         /* GTT_GATE_START ... UNDER */
	uint64_t rate_per_s;
	uint64_t limit_per_s;
	uint32_t pid;            /* whose switches: the recorded process (the root of its tree: the gate
	                          * is its descendants' too); 0: the whole trace's */
} gtt_switch_gate;

/* A clock pair (1.1): CLOCK_REALTIME read between trace-clock times mono_ns - uncertainty_ns
 * and mono_ns + uncertainty_ns (the tightest of several bracketing reads). gt-record writes one
 * at the start, one at the end and one periodically; gt-analyze merge aligns traces with them. */
enum { GTT_CLOCK_START = 1, GTT_CLOCK_PERIODIC = 2, GTT_CLOCK_END = 3 };
typedef struct gtt_clock {
	uint64_t mono_ns;        /* the trace clock (docs/FORMAT.md, "One clock") */
	uint64_t realtime_ns;    /* CLOCK_REALTIME, ns since the epoch */
	uint64_t uncertainty_ns; /* half the bracketing interval of the reads */
	uint32_t kind;           /* GTT_CLOCK_* */
	const char *hostname;
	const char *boot_id;     /* the kernel's boot id: equal boot ids share one CLOCK_MONOTONIC */
} gtt_clock;

/* An interned callchain (1.1): samples in packed chunks refer to it by id; the reader fills
 * their n_kernel, n_user and ips from it. Ids are unique over a recording and may be defined
 * again (with the same chain) later in the file. */
typedef struct gtt_callchain {
	uint32_t id;             /* 1..GTT_CHAIN_ID_MAX */
	uint32_t n_kernel, n_user;
	const uint64_t *ips;     /* kernel frames then user frames, leaf first, as in gtt_sample */
} gtt_callchain;

/* An embedded binary is the concatenation of its pieces in offset order. */
typedef struct gtt_archive {
	uint32_t build_id_len;
	uint8_t build_id[GTT_BUILD_ID_MAX];
	const char *path;        /* path at recording time */
	uint32_t kind;           /* GTT_ARCHIVE_* */
	uint64_t total_bytes;    /* size of the whole embedded object */
	uint64_t offset;         /* where this piece goes */
	uint32_t len;
	const uint8_t *data;
} gtt_archive;
enum { GTT_ARCHIVE_ELF = 1 /* an ELF file, possibly stripped to symbol/unwind/line sections */ };

enum { GTT_END_TARGET_EXIT = 1, GTT_END_DURATION = 2, GTT_END_SIGNAL = 3, GTT_END_DETACH = 4,
       GTT_END_ERROR = 5, GTT_END_MAX_SIZE = 6 /* gt-record --max-size reached */,
       GTT_END_SNAPSHOT = 7 /* a window written on request (gt-record --ring, SIGUSR2); the recording went on */ };
typedef struct gtt_end {
	uint64_t time_ns;
	uint32_t reason;         /* GTT_END_* */
	int32_t status;          /* target's wait() status when reason is TARGET_EXIT */
	uint64_t n_samples;      /* samples written */
	uint64_t n_records;      /* chunks written before this one */
} gtt_end;

#define GTT_RECF_PACKED 0x1u /* the record came out of a packed chunk: raw is its compact body */
typedef struct gtt_record {
	uint32_t tag;            /* enum gtt_tag; unknown tags are returned with only raw set */
	uint32_t len;            /* payload length */
	const uint8_t *raw;      /* payload bytes as stored: the 1.0 payload of a chunk, or (flag
	                          * GTT_RECF_PACKED) the record's body inside a packed chunk, which
	                          * is the 1.0 payload for tags without a compact encoding */
	uint32_t flags;          /* GTT_RECF_* */
	union {
		gtt_meta meta;
		gtt_process process;
		gtt_thread thread;
		gtt_mapping mapping;
		gtt_sample sample;
		gtt_switch sw;
		gtt_thread_cpu thread_cpu;
		gtt_health health;
		gtt_ticks ticks;
		gtt_py_code py_code;
		gtt_py_stack py_stack;
		gtt_gil gil;
		gtt_py_thread py_thread;
		gtt_string string;
		gtt_cuda_device cuda_device;
		gtt_cuda_kernel kernel;
		gtt_cuda_memcpy memcpy;
		gtt_cuda_memset memset;
		gtt_cuda_sync sync;
		gtt_cuda_api api;
		gtt_cuda_alloc alloc;
		gtt_nvtx nvtx;
		gtt_counter counter;
		gtt_cuda_callstack callstack;
		gtt_archive archive;
		gtt_end end;
		gtt_callchain callchain;
		gtt_capture capture;
		gtt_switch_gate gate;
		gtt_clock clock;
	} u;
} gtt_record;

/* Move every time of a decoded record by delta_ns (gt-record's perf clock correction, gt-analyze
 * merge). A time of 0 ("none") stays 0; a time that would fall below 1 ns becomes 1. Meta
 * values (start_ns, ...) are text and are not touched. */
void gtt_rec_shift(gtt_record *rec, int64_t delta_ns);
/* Name of a tag ("sample", "cuda_kernel", ...), or "unknown". */
const char *gtt_tag_name(uint32_t tag);
/* Human-readable text for a GTT_E* code. */
const char *gtt_strerror(int rc);
/* CRC-32C (Castagnoli) over buf, continuing from crc (start with 0). */
uint32_t gtt_crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven CRC-32C, bypassing the SSE4.2 instruction (for tests). */
uint32_t gtt_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* ---- writer ----
 * Thread-safe: records from several threads may be written concurrently.
 * Records are buffered; gtt_writer_flush() pushes them to the file so that a killed recorder
 * loses at most the unflushed tail. A new trace is written in format 1.2 by default: records
 * go into packed blocks (one per stream: definitions, samples, switches, CUDA and the other data,
 * docs/FORMAT.md), encoded compactly under the writer's lock and compressed with zstd when
 * blocks are full or at a flush; the samples' registers and stack copies in a frame of their own
 * (codec 2), which a reader that does not unwind never expands.
 * Callchains of samples are interned by the writer. Without libzstd.so.1 blocks are stored
 * uncompressed and the meta key "compression" says so. */
typedef struct gtt_writer gtt_writer;

#define GTT_ZSTD_LEVEL_DEFAULT 3
#define GTT_BLOCK_BYTES_DEFAULT (1u << 20)
typedef struct gtt_writer_opts {
	uint32_t minor;       /* format minor version: 2 (default: packed blocks, the samples' registers
	                       * and stack copies apart), 1 (packed blocks, as 1.1 writers wrote them:
	                       * readable by every 1.1 reader) or 0 (a 1.0 trace) */
	int level;            /* zstd level 1..19; 0 = GTT_ZSTD_LEVEL_DEFAULT; < 0 = blocks stored
	                       * uncompressed (codec none) */
	uint32_t block_bytes; /* raw bytes that close a block; 0 = GTT_BLOCK_BYTES_DEFAULT; at most
	                       * GTT_PACKED_MAX_RAW / 2 */
	int no_index;         /* 1: no index chunk at close (readers then rebuild it by a scan) */
	int one_data_stream;  /* 1: every data record in the data stream (GTT_STREAM_DATA), as writers
	                       * before the kinds' streams did: traces of that layout, for testing and
	                       * measuring readers on them */
} gtt_writer_opts;
/* The defaults: 1.2, zstd at level 3, 1 MiB blocks, an index at close. */
void gtt_writer_opts_init(gtt_writer_opts *o);

/* Create (truncate) path and write the header (format 1.2). NULL on failure, *err set. */
gtt_writer *gtt_writer_open(const char *path, int *err);
/* Same on an open fd (taken over; closed by gtt_writer_close). If the fd is at
 * offset 0 and append is 0, a header is written; with append=1 chunks are
 * appended to an existing trace or a header-less side file, one plain chunk per record
 * (what a side file of the CUDA agent needs: the recorder copies its chunks one by one). */
gtt_writer *gtt_writer_fdopen(int fd, int append, int *err);
/* gtt_writer_fdopen with options (o NULL = defaults); append=1 always writes plain chunks. */
gtt_writer *gtt_writer_fdopen_opts(int fd, int append, const gtt_writer_opts *o, int *err);
/* Encode and buffer one record (rec->tag selects the payload). GTT_EINVAL for packed and
 * index records, and for callchain records in packed mode (the writer makes those itself). */
int gtt_write(gtt_writer *w, const gtt_record *rec);
/* Buffer one record from an already-encoded (1.0) payload (copying chunks between traces, the
 * CUDA agent's side files). In packed mode a known tag is decoded and encoded compactly; an
 * unknown tag is kept as it is. GTT_EINVAL when a known tag's payload does not decode. */
int gtt_write_raw(gtt_writer *w, uint32_t tag, const void *payload, uint32_t len);
/* Write buffered records to the file (open blocks are closed and compressed). */
int gtt_writer_flush(gtt_writer *w);
/* Bytes written to the file so far (header included) plus bytes buffered; records in open
 * blocks count at their raw (uncompressed) size. */
uint64_t gtt_writer_bytes(const gtt_writer *w);
/* Number of records written or buffered. */
uint64_t gtt_writer_records(const gtt_writer *w);
/* errno of the first I/O failure, 0 if none. */
int gtt_writer_errno(const gtt_writer *w);

typedef struct gtt_writer_stats {
	uint32_t minor;          /* format written */
	const char *codec;       /* "zstd", "none" (level < 0 or no libzstd) or "plain" (1.0, append) */
	uint64_t n_records;
	uint64_t n_blocks;       /* packed chunks written */
	uint64_t raw_bytes;      /* compact bytes put into blocks */
	uint64_t packed_bytes;   /* bytes of packed chunks on disk (headers included) */
	uint64_t n_chains;       /* callchains interned */
	uint64_t n_chain_refs;   /* samples that referred to an interned callchain */
	uint64_t block_seq;      /* sequence number of the next data blocks (one number for the blocks of
	                          * the data streams closed together; see gtt_writer_redefine) */
	uint64_t pending_bytes;  /* raw bytes in open or queued blocks (part of raw_bytes, not yet in
	                          * packed_bytes) */
} gtt_writer_stats;
/* A snapshot of the writer's counters. */
void gtt_writer_get_stats(gtt_writer *w, gtt_writer_stats *st);
/* Write the definitions of every callchain that data blocks with sequence number >= since_seq
 * referred to again (into the definitions stream), so that those blocks decode without the
 * earlier definitions (a flight recorder that drops old blocks needs this). 0 or GTT_E*. */
int gtt_writer_redefine(gtt_writer *w, uint64_t since_seq);
/* Called for every record the writer accepts in packed mode (given decoded: records written
 * raw with a known tag too), under the writer's lock, in the order they are encoded: it must be
 * quick and must not call the writer. Records written by a gtt_writer_switch replay are not
 * given. NULL fn removes it. */
typedef void (*gtt_writer_tap)(void *ctx, const gtt_record *rec);
void gtt_writer_set_tap(gtt_writer *w, gtt_writer_tap fn, void *ctx);
/* What a replay writes through (only inside the replay callback of gtt_writer_switch). */
typedef int (*gtt_writer_put)(gtt_writer *w, const gtt_record *rec);
typedef int (*gtt_writer_replay)(void *ctx, gtt_writer *w, gtt_writer_put put);
/* Segments (a flight recorder that keeps its ring on disk): finish the current file as a
 * whole trace (open blocks written, its chunk index appended, flushed) and go on writing into
 * fd, which gets a header, the writer's own meta, and then what replay writes — the
 * definitions the new file needs to stand alone. Meanwhile other threads' writes wait. Every
 * callchain is defined again in the new file before its first use there. The old fd is left
 * open and returned in *old_fd (the caller closes it); fd is taken over once *old_fd is set
 * (>= 0), else it is still the caller's. Packed mode only. 0 or GTT_E* (the writer keeps the
 * first error). */
int gtt_writer_switch(gtt_writer *w, int fd, gtt_writer_replay replay, void *ctx, int *old_fd);
/* Encode rec's 1.0 payload (what gtt_write_raw and gtt_decode take) into *buf (grown with
 * realloc; *cap its size); *len gets the payload length. 0, GTT_EINVAL or GTT_ENOMEM. */
int gtt_encode_payload(const gtt_record *rec, uint8_t **buf, size_t *cap, uint32_t *len);
/* Flush, write the chunk index (1.1, not in append mode) and close; returns the first error
 * seen over the writer's life. NULL ok. */
int gtt_writer_close(gtt_writer *w);

/* ---- reader ----
 * Records of packed chunks are returned one by one like any other; pointers in a record stay
 * valid until the next gtt_reader_next() or gtt_reader_seek() on the same reader. */
typedef struct gtt_reader gtt_reader;

/* Open a trace file (mapped, or read whole when not mappable, e.g. "-" = stdin).
 * NULL on failure with *err = GTT_EIO/EFORMAT/EVERSION/EEMPTY/ENOMEM. */
gtt_reader *gtt_reader_open(const char *path, int *err);
/* Read from memory (not copied; must outlive the reader). */
gtt_reader *gtt_reader_open_mem(const void *buf, size_t len, int *err);
/* Next record: 1 when rec is filled, 0 at the end, <0 on error.
 * At a cut-off final chunk it returns 0 and gtt_reader_truncated() is true.
 * A whole chunk with a bad checksum gives GTT_ECORRUPT (the reader can go on:
 * the next call continues after that chunk); so does a packed chunk whose compressed data
 * does not expand to what its header claims, or that claims more than GTT_PACKED_MAX_RAW.
 * A record that does not decode for its tag gives GTT_EINVAL, likewise skippable (inside a
 * packed chunk, reading goes on with the next record, or after the chunk when its framing is
 * broken). GTT_ENOZSTD: a zstd chunk and no libzstd.so.1 (each such chunk is skipped). */
int gtt_reader_next(gtt_reader *r, gtt_record *rec);
/* Byte offset of the chunk last returned (or where the error was); for a record of a packed
 * chunk, the packed chunk's offset. */
uint64_t gtt_reader_offset(const gtt_reader *r);
/* 1 when the file ended inside a chunk (a cut-off trace). */
int gtt_reader_truncated(const gtt_reader *r);
/* Format version of the file. */
void gtt_reader_version(const gtt_reader *r, uint32_t *major, uint32_t *minor);
/* Size of the trace in bytes. */
uint64_t gtt_reader_size(const gtt_reader *r);
/* From now on gtt_reader_next returns only records of the kinds in tag_mask (bit 1ull << tag;
 * kinds 64 and above always come), and passes over the others with the least decoding that
 * keeps the block's delta state right for the rest: for a pass that wants a few kinds of a big
 * trace. A packed chunk of a stream that holds none of the kinds asked for (gtt_stream_kinds)
 * is passed over whole: its checksum is checked, it is not expanded. Errors inside a record
 * (or such a chunk's compressed data) passed over are not reported. Callchain definitions are always
 * read (entered in the reader's table) and returned only when asked for. 0 (the default):
 * every record. Seeking and gtt_reader_tell are unchanged (positions count every record). */
#define GTT_KIND_BIT(tag) (1ull << (tag))
void gtt_reader_only(gtt_reader *r, uint64_t tag_mask);
/* Pass over the packed chunks of the streams in stream_mask (bit 1u << GTT_STREAM_*) whole,
 * reading only their headers, and sum those up (gtt_reader_summary): for a pass that needs no more
 * of those records than how many there are and when they fall. A chunk whose earliest time is 0
 * (a record without a time: the header cannot tell the others) is read as usual, and so is one
 * of a kind gtt_reader_only passes over (not summed). Its checksum is checked; what only
 * expanding it could find wrong goes unreported (gtt_reader_chunk_at tells such chunks apart
 * later: a caller can report those when it reads them). 0 (the default): none. The summary starts over. */
void gtt_reader_summarize(gtt_reader *r, uint32_t stream_mask);
typedef struct gtt_summary {
	uint64_t n_chunks, n_records;
	uint64_t first_ns, last_ns; /* the earliest and latest time in them; first > last when none */
} gtt_summary;
void gtt_reader_summary(const gtt_reader *r, gtt_summary *s);
/* From now on (on != 0) samples come without their registers and stack copy: n_regs, regs,
 * stack_len and stack are 0 and NULL, flags still say what the sample carried (whatever the
 * format: in 1.0 and 1.1 they are decoded and left out). For a pass that
 * needs a sample's time, task and callchain but does not unwind it. A chunk that keeps them apart
 * (codec 2) then has only its records expanded: what only expanding the rest could find wrong
 * (its frame does not expand) goes unreported, as for a chunk passed over; lengths are still
 * checked. 0 (the default): samples whole (a chunk read bare before is expanded the rest of the
 * way when a sample of it is read whole after a seek). */
void gtt_reader_skip_stacks(gtt_reader *r, int on);
/* Expand compressed chunks ahead on a thread of the reader's own (made at the first one, joined
 * by gtt_reader_close): the chunk the reader reads next (under a window, the window's next), when
 * it expands to 8 KiB or more, is decompressed while the caller works on this one. Records and errors are the same as without; without a thread, nothing
 * changes. For a caller that reads most of a big trace in order. */
void gtt_reader_prefetch(gtt_reader *r);
/* Compressed chunks expanded so far, by the reader or (handed to it) its prefetch thread: the
 * work a read cost, e.g. how little of the trace a window expanded. */
uint64_t gtt_reader_expanded(const gtt_reader *r);
/* Restart from the first chunk (the window, if any, stays). */
void gtt_reader_rewind(gtt_reader *r);
/* errno of an I/O failure at open. */
int gtt_reader_errno(const gtt_reader *r);
/* Close. NULL ok. */
void gtt_reader_close(gtt_reader *r);

/* Where a record is: its chunk and, inside a packed chunk, its index among the records. */
typedef struct gtt_pos {
	uint64_t chunk;
	uint32_t index;
} gtt_pos;
/* Position of the record last returned by gtt_reader_next. */
void gtt_reader_tell(const gtt_reader *r, gtt_pos *pos);
/* Make the next gtt_reader_next return the record at pos (from gtt_reader_tell on this trace).
 * Seeking forward inside the packed chunk being read costs no new decompression. 0, or
 * GTT_EINVAL when pos names no record, or the chunk's error. Callchain definitions read
 * before are kept, so samples after the seek decode. */
int gtt_reader_seek(gtt_reader *r, const gtt_pos *pos);

/* What the chunk of the record last returned is (for statistics and dumps). */
typedef struct gtt_chunk_info {
	uint64_t offset;
	uint32_t tag;            /* GTT_REC_PACKED for a record from a packed chunk */
	uint32_t stored_len;     /* payload bytes on disk */
	uint32_t codec;          /* GTT_CODEC_* of a packed chunk */
	uint32_t stream;         /* GTT_STREAM_* of a packed chunk */
	uint32_t raw_len;        /* bytes of its records after expansion */
	uint32_t n_records;      /* records in it */
	uint64_t first_ns, last_ns;
	uint32_t side_len;       /* codec 2: bytes of its samples' registers and stack copies, kept
	                          * apart from the records (not part of raw_len); else 0 */
} gtt_chunk_info;
/* How a packed chunk's records are stored. 2 (format 1.2): two zstd frames, the records with
 * their samples' registers and stack copies left out, then those bytes, so that a reader that
 * does not unwind (gtt_reader_skip_stacks) expands only the first; a 1.1 reader refuses such a
 * chunk as a newer version's (GTT_EVERSION). */
enum { GTT_CODEC_NONE = 0, GTT_CODEC_ZSTD = 1, GTT_CODEC_ZSTD_SPLIT = 2 };
/* The stream of a packed chunk says which kinds of records it can hold (docs/FORMAT.md): data
 * and definitions hold any kind; samples, switches and CUDA hold only their own kinds, so that
 * a reader asked for other kinds (gtt_reader_only) passes over the whole chunk unexpanded. */
enum {
	GTT_STREAM_DATA = 0,     /* data records of any kind (every data chunk before the kinds' streams) */
	GTT_STREAM_DEFS = 1,     /* definitions */
	GTT_STREAM_SAMPLES = 2,  /* samples only */
	GTT_STREAM_SWITCHES = 3, /* context switches only */
	GTT_STREAM_CUDA = 4,     /* CUDA kernels, copies, memsets, syncs and API calls only */
	GTT_STREAMS = 5          /* streams a writer of this version writes */
};
/* The kinds (GTT_KIND_BIT) a packed chunk of stream can hold; 0 when it can hold any (data,
 * definitions, and a stream of a newer writer, which this reader does not know). */
uint64_t gtt_stream_kinds(uint32_t stream);
void gtt_reader_chunk(const gtt_reader *r, gtt_chunk_info *ci);
/* The chunk that begins at file offset off (a whole one, its checksum matching): 1 with what it
 * is in *ci (for a packed chunk its header: stream, records, times), 0 when there is none. */
int gtt_reader_chunk_at(const gtt_reader *r, uint64_t off, gtt_chunk_info *ci);

/* ---- chunk index and time windows (1.1) ----
 * The index lists every chunk with the time range of its records; a trace whose index is
 * missing (recorder killed) or damaged gets it rebuilt by a scan that reads only chunk headers
 * and packed-chunk headers. A 1.0 trace has no time ranges: its chunks are one plain run. */
#define GTT_INDEX_DEFS 0x1u   /* a definitions block: read whatever the window */
#define GTT_INDEX_PLAIN 0x2u  /* plain chunks (1.0 style): time range unknown, always read */
typedef struct gtt_index_entry {
	uint64_t offset;         /* first chunk */
	uint64_t end;            /* offset after the last byte of the entry's chunk(s) */
	uint64_t first_ns, last_ns; /* time range of the records; first > last when unknown */
	uint32_t n_records;      /* records in a packed chunk (0 for plain runs) */
	uint32_t flags;          /* GTT_INDEX_* */
} gtt_index_entry;
/* The trace's chunk index, loaded from the file or rebuilt (built once, kept by the reader).
 * Returns 1 when it came from the file's index chunk, 0 when rebuilt by a scan, <0 on error. */
int gtt_reader_index(gtt_reader *r, const gtt_index_entry **entries, size_t *n);
/* Read only the chunks whose records may fall in [from_ns, to_ns] (inclusive) plus every
 * definitions chunk and every chunk of unknown time range, from the start of the trace.
 * Whole chunks are selected: records outside the window may still come back, and callers
 * filter by time. set_window(r, 0, UINT64_MAX) reads everything again. 0 or GTT_E*. */
int gtt_reader_set_window(gtt_reader *r, uint64_t from_ns, uint64_t to_ns);

/* Decode a payload of the given tag into rec (used by the reader; exposed for
 * fuzzing and for side files). Pointers point into payload or into scratch,
 * a growable buffer owned by the caller (free(*scratch) when done). */
int gtt_decode(uint32_t tag, const uint8_t *payload, uint32_t len, gtt_record *rec,
               void **scratch, size_t *scratch_cap);

/* Monotonic clock in ns (CLOCK_MONOTONIC), the trace clock. */
uint64_t gtt_now_ns(void);

#endif
