/* gtt.h — the groundtruth trace format (.gtt): record types, writer and reader.
 *
 * A trace is a 16-byte header followed by chunks. Each chunk is one record:
 *   u32 tag, u32 payload length, u32 crc32c(tag||length||payload), payload.
 * All integers are little-endian and written field by field (see docs/FORMAT.md,
 * which is the specification this file implements). The library never prints
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
#define GTT_VERSION_MINOR 0
#define GTT_MAX_PAYLOAD (64u << 20) /* larger lengths are corruption, never an allocation */
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
	/* Reserved for format 1.1 work under way (one owner each; take a number from here,
	 * never another's): 14 callchain (interned callchain), 15 packed (compressed block of
	 * chunks), 16 index (chunk index), 17 clock (realtime/monotonic pair), 18 py_thread
	 * (Python-level thread name), 29 cuda_callstack (stack taken at a CUDA API call),
	 * 32 capture (capture range start/stop), 33-39 free for later. */
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
       GTT_END_ERROR = 5 };
typedef struct gtt_end {
	uint64_t time_ns;
	uint32_t reason;         /* GTT_END_* */
	int32_t status;          /* target's wait() status when reason is TARGET_EXIT */
	uint64_t n_samples;      /* samples written */
	uint64_t n_records;      /* chunks written before this one */
} gtt_end;

typedef struct gtt_record {
	uint32_t tag;            /* enum gtt_tag; unknown tags are returned with only raw set */
	uint32_t len;            /* payload length */
	const uint8_t *raw;      /* payload bytes */
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
	} u;
} gtt_record;

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
 * Records are buffered and written as whole chunks; gtt_writer_flush() pushes
 * them to the file so that a killed recorder loses at most the unflushed tail. */
typedef struct gtt_writer gtt_writer;

/* Create (truncate) path and write the header. NULL on failure, *err set. */
gtt_writer *gtt_writer_open(const char *path, int *err);
/* Same on an open fd (taken over; closed by gtt_writer_close). If the fd is at
 * offset 0 and append is 0, a header is written; with append=1 chunks are
 * appended to an existing trace or a header-less side file. */
gtt_writer *gtt_writer_fdopen(int fd, int append, int *err);
/* Encode and buffer one record (rec->tag selects the payload). */
int gtt_write(gtt_writer *w, const gtt_record *rec);
/* Buffer one chunk from an already-encoded payload (copying chunks between traces). */
int gtt_write_raw(gtt_writer *w, uint32_t tag, const void *payload, uint32_t len);
/* Write buffered chunks to the file. */
int gtt_writer_flush(gtt_writer *w);
/* Bytes written to the file so far (header included) plus bytes buffered. */
uint64_t gtt_writer_bytes(const gtt_writer *w);
/* Number of chunks written or buffered. */
uint64_t gtt_writer_records(const gtt_writer *w);
/* errno of the first I/O failure, 0 if none. */
int gtt_writer_errno(const gtt_writer *w);
/* Flush and close; returns the first error seen over the writer's life. NULL ok. */
int gtt_writer_close(gtt_writer *w);

/* ---- reader ---- */
typedef struct gtt_reader gtt_reader;

/* Open a trace file (mapped, or read whole when not mappable, e.g. "-" = stdin).
 * NULL on failure with *err = GTT_EIO/EFORMAT/EVERSION/EEMPTY/ENOMEM. */
gtt_reader *gtt_reader_open(const char *path, int *err);
/* Read from memory (not copied; must outlive the reader). */
gtt_reader *gtt_reader_open_mem(const void *buf, size_t len, int *err);
/* Next record: 1 when rec is filled, 0 at the end, <0 on error.
 * At a cut-off final chunk it returns 0 and gtt_reader_truncated() is true.
 * A whole chunk with a bad checksum gives GTT_ECORRUPT (the reader can go on:
 * the next call continues after that chunk). A chunk whose payload does not
 * decode for its tag gives GTT_EINVAL, likewise skippable. */
int gtt_reader_next(gtt_reader *r, gtt_record *rec);
/* Byte offset of the chunk last returned (or where the error was). */
uint64_t gtt_reader_offset(const gtt_reader *r);
/* 1 when the file ended inside a chunk (a cut-off trace). */
int gtt_reader_truncated(const gtt_reader *r);
/* Format version of the file. */
void gtt_reader_version(const gtt_reader *r, uint32_t *major, uint32_t *minor);
/* Size of the trace in bytes. */
uint64_t gtt_reader_size(const gtt_reader *r);
/* Restart from the first chunk. */
void gtt_reader_rewind(gtt_reader *r);
/* errno of an I/O failure at open. */
int gtt_reader_errno(const gtt_reader *r);
/* Close. NULL ok. */
void gtt_reader_close(gtt_reader *r);

/* Decode a payload of the given tag into rec (used by the reader; exposed for
 * fuzzing and for side files). Pointers point into payload or into scratch,
 * a growable buffer owned by the caller (free(*scratch) when done). */
int gtt_decode(uint32_t tag, const uint8_t *payload, uint32_t len, gtt_record *rec,
               void **scratch, size_t *scratch_cap);

/* Monotonic clock in ns (CLOCK_MONOTONIC), the trace clock. */
uint64_t gtt_now_ns(void);

#endif
