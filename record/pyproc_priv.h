/* pyproc_priv.h — the inside of one process of the Python reader, shared by pyproc.c (life,
 * discovery, thread names, outcome), pypass.c (the stack pass) and pygil.c (the GIL state).
 * Nothing outside those three files includes it.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PYPROC_PRIV_H
#define REC_PYPROC_PRIV_H

#include <limits.h>
#include "gt_util.h"
#include "pyproc.h"
#include "pythreads.h"

#define MAX_INTERPS 16
#define MAX_THREADS 4096
#define POOL_FRAMES (64 * 1024)  /* raw frames held for one pass; threads beyond wait for the next */
#define TCB_SEEN 1024
#define TIDS_SEEN 1024
#define FAST_LOOK_NS (2 * GT_NS_PER_SEC)          /* looking for the interpreter: at first ... */
#define FAST_LOOK_PERIOD_NS (10 * GT_NS_PER_MS)   /* ... every 10 ms, */
#define SLOW_LOOK_PERIOD_NS (250 * GT_NS_PER_MS)  /* then every 250 ms (the recorded process) */
#define CHILD_LOOK_NS (200 * GT_NS_PER_MS)        /* a child without python in its name: this long */
#define SETTLED_LOOKS 5                           /* fast looks that met the same mappings: settled */
#define QUIET_LOOK_NS (5 * GT_NS_PER_SEC)         /* after the fast looks, without a new mapping:
                                                   * /proc/PID/maps read again this often only */
#define READY_PERIOD_NS (5 * GT_NS_PER_MS)        /* waiting for its initialization */
#define HEALTH_INTERVAL_NS GT_NS_PER_SEC          /* READ_ERRORS records cover 1 s each */
#define GIL_IDLE_NS (100 * GT_NS_PER_MS)          /* the GIL poll stops after this long without a change */
#define NAMES_PERIOD_NS GT_NS_PER_SEC             /* thread names looked at this often */
#define STACK_ROOM 1024u  /* 3.11+: bytes from the leaf frame on that the next snapshot reads */
#define PAGE_BYTES 4096u
#define INTERPS_PERIOD_NS (250 * GT_NS_PER_MS)    /* the list of interpreters read this often */

typedef struct tcb_seen {
	uint64_t pthread;
	uint32_t tid;
} tcb_seen;

typedef struct tid_entry {
	uint64_t tstate;
	uint32_t tid;
} tid_entry;

/* One thread of a pass. */
typedef struct thread_read {
	rec_pythread t;
	uint32_t tid;
	uint32_t tcb_tid_raw;   /* 3.10 */
	uint64_t tcb_self;
	size_t raw_at;          /* its frames in the pass's pool */
	int nf;                 /* frames read; -1 not read yet (pool full) */
	int torn;
	int keep_from;          /* the thread returned from raw[0..keep_from) while it was read */
	size_t rq;              /* its check requests in the batch */
	int n_rq;
	uint64_t chk_cframe, chk_leaf, chk_code;
	uint64_t time_ns;       /* when its frames were read */
	int checked;            /* consistent by the snapshot's brackets */
	long pred;              /* its entry in pred[] (the last pass), -1 none */
} thread_read;

/* A thread as the last pass found it, and the words that bracket this pass's snapshot. */
typedef struct pred {
	uint64_t tstate, cframe;
	int has_frame;
	uint64_t t_cframe, t_leaf;
	size_t tq;              /* its requests in tail[] */
} pred;

#define CODE_REQS 2048          /* code objects checked per pass at most (the rest at the next) */
/* Code objects checked in recent passes: their headers go into the next snapshot even when
 * the pass did not use them (a loop that calls three functions in turn shows one per pass;
 * without this each pass would read the header of the one not seen last time on its own) */
#define RECENT_BITS 8
#define RECENT_CODES (1u << RECENT_BITS) /* slots */
#define RECENT_PASSES 64        /* passes a code stays noted after its last check */
typedef struct recent_code {
	uint64_t addr, pass;
	uint32_t len;
} recent_code;

/* Lines of (code object, instruction) pairs seen before: a frame that sits at one instruction
 * pass after pass (every caller frame does) costs no line-table decode. */
#define LINE_CACHE 2048
typedef struct line_ent {
	uint64_t code_id;
	int64_t index;
	int32_t line;
} line_ent;

typedef struct named {
	uint32_t tid;
	char name[REC_PYNAME_MAX];
} named;

struct rec_pyproc {
	pid_t pid;
	int root;
	const rec_pysink *sink;
	atomic_int state;       /* rec_py_state */
	atomic_int gone;
	atomic_int ended;
	uint64_t image_ns;      /* see rec_pyproc_image_ns() */
	pthread_mutex_t lock;   /* reason, version, tids[] */
	char reason[320];
	char version[32];
	char name_verdict[320]; /* rec_pydisc_name_verdict() of the exec'd command, "" none (lock) */
	uint64_t look_start_ns, next_look_ns;
	uint64_t maps_read_ns;  /* when a look last read /proc/PID/maps */
	atomic_int maps_moved;  /* a mapping record of the process came since (rec_pyproc_maps_moved) */
	int found;              /* discovery found the interpreter, waiting for its initialization */
	int inherited;          /* layout taken from the parent (fork without exec) */

	rec_pyinterp py;
	rec_procmem *mem;       /* the stack loop's */
	rec_procmem *gil_mem;   /* the GIL poll's */
	rec_pycache *codes;
	rec_pynames *names;
	uint64_t pass_no;
	atomic_uint_fast64_t gil_addr;
	uint64_t interps[MAX_INTERPS];
	size_t n_interps;
	uint64_t interps_next_ns;

	int32_t tcb_tid_off;    /* 3.10: offset of the tid in glibc's struct pthread, -1 unknown */
	tcb_seen *tcb;          /* TCB_SEEN (pthread, tid) pairs /proc confirmed; 3.10 only */
	unsigned tcb_rr;
	uint32_t *tids_ok;      /* TIDS_SEEN native tids /proc confirmed as this process's (children) */
	int noted_no_tids;

	/* tid map for the GIL poll: a snapshot written by the stack pass */
	tid_entry *tids;
	size_t n_tids, cap_tids;

	/* pass buffers */
	thread_read *th;
	rec_pyframe_raw *pool;  /* this pass's frames */
	size_t cap_pool;
	gtt_py_frame *frames;
	rec_procmem_req *req;
	size_t cap_req;
	pred *pred;             /* MAX_THREADS */
	size_t n_pred, n_first;
	uint64_t *first;        /* 2 x MAX_THREADS: words whose ranges are read first */
	rec_procmem_req *tail;  /* 2 x MAX_THREADS + REC_PYCACHE_REVALIDATE + 1 */
	long gil_tail;          /* the GIL's request in tail[], -1 none */
	rec_procmem_req *creq;  /* CODE_REQS: this pass's code checks */
	size_t n_creq;
	rec_procmem_req *cmiss; /* CODE_REQS: those the snapshot does not hold */
	recent_code *recent;    /* RECENT_CODES */
	uint16_t *recent_live;  /* the slots of recent[] in use, n_recent_live of them */
	size_t n_recent_live;
	uint8_t gil_buf[320];
	uint64_t last_pass_ns;
	line_ent *lines;        /* LINE_CACHE entries */
	uint64_t *fill;         /* code objects of the pass's stacks not cached yet, for rec_pycache_fill() */
	size_t n_fill, cap_fill;

	/* the GIL state, shared by the poll and the stack pass (gil_lock) */
	pthread_mutex_t gil_lock;
	atomic_int gil_fast;    /* the poll reads it; else the stack pass watches it */
	rec_pygil gil_last;
	uint32_t gil_last_tid;
	uint64_t gil_last_ns;   /* the last read of it */
	uint64_t gil_still_ns;  /* since when it has not changed */
	uint64_t gil_rec_switches; /* the switch counter in the last GIL record */
	int gil_known;
	uint32_t gil_hist;      /* the poll's last 32 reads: bit set for each that wrote a record */

	/* thread names */
	uint64_t names_next_ns;
	named *named;
	size_t n_named, cap_named;

	/* counters (the stack loop's unless said; read for status) */
	atomic_uint_fast64_t n_passes, n_stacks, n_frames, n_failed, n_torn, n_codes, read_ns, n_reads, n_calls;
	atomic_uint_fast64_t n_polls, n_gil_changes, n_gil_failed, n_names; /* the poll's, n_names the pass's */
	uint64_t iv_start_ns, iv_failed, iv_torn, iv_reads;   /* current 1 s health interval */
	uint64_t giv_start_ns, giv_failed, giv_reads;
};

/* ---- shared inside the reader (pyproc.c, pypass.c, pygil.c) ---- */

/* A record to the trace and to the observer; a HEALTH NOTE about this process; a READ_ERRORS
 * record over [t0, t1) (value[0..2]: failed reads, torn stacks, reads). */
void rec_pyproc_put(rec_pyproc *p, const gtt_record *r);
void rec_pyproc_note(rec_pyproc *p, uint64_t time_ns, const char *text);
void rec_pyproc_read_errors(rec_pyproc *p, uint32_t source, uint64_t t0, uint64_t t1, uint64_t failed,
                            uint64_t torn, uint64_t reads);
/* The OS tid of a thread state as the last stack pass saw it, 0 unknown. */
uint32_t rec_pyproc_tid_of(rec_pyproc *p, uint64_t tstate);
/* The stack pass read the GIL at now (pygil.c): while the poll sleeps, this is its only reader. */
void rec_pyproc_gil_from_pass(rec_pyproc *p, const rec_pygil *g, uint64_t now);
/* The registry's names for the pass's threads th[0..n) (pyproc.c): py_thread records. */
void rec_pyproc_names_from_pass(rec_pyproc *p, const thread_read *th, size_t n, uint64_t now);

#endif
