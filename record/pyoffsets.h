/* pyoffsets.h — CPython struct layouts (3.10–3.12 from tables, 3.13 from _Py_DebugOffsets)
 * and the structure reader that walks threads, frames, code objects and strings with them.
 * Return rule (all of record/): 0 or a count, or a negative errno (a failed read passes on
 * rec_procmem's -EFAULT/-ESRCH; -EINVAL for data that is not what it should be). */
#ifndef REC_PYOFFSETS_H
#define REC_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>
#include "procmem.h"

enum { REC_PY_FRAMEOBJ = 1 /* 3.10 PyFrameObject chain */, REC_PY_IFRAME = 2 /* 3.11+ _PyInterpreterFrame */ };
enum { REC_PY_LINES_310 = 1 /* PEP 626 (start delta, line delta) pairs */,
       REC_PY_LINES_311 = 2 /* 3.11+ location table */ };
/* Where an instance of a Python class keeps its attributes (pythreads.c reads Thread._name). */
enum { REC_PY_ATTRS_DICTOFFSET = 1 /* 3.10: a dict at tp_dictoffset */,
       REC_PY_ATTRS_MANAGED_311 = 2 /* 3.11: dict at -24, else split values at -32 */,
       REC_PY_ATTRS_MANAGED_312 = 3 /* 3.12: dict or values (tagged, low bit) at -24 */,
       REC_PY_ATTRS_INLINE_313 = 4 /* 3.13: dict at -24, else values inline after the header */ };

/* Byte offsets of the fields the reader needs, for one CPython minor version (release
 * builds, x86-64/aarch64 LP64). -1 marks a field the version does not have. */
typedef struct rec_pyoff {
	uint32_t version_hex;   /* PY_VERSION_HEX the layout was taken for (major.minor count) */
	/* _PyRuntimeState */
	int32_t rt_interp_head;      /* interpreters.head; interpreters.main follows it */
	int32_t rt_gil;              /* embedded ceval.gil (3.10, 3.11) */
	/* PyInterpreterState */
	int32_t is_next, is_threads_head;
	int32_t is_gil_ptr;          /* ceval.gil, a pointer (3.12+) */
	/* struct _gil_runtime_state */
	int32_t gil_holder, gil_locked, gil_switches;
	/* PyThreadState */
	int32_t ts_next, ts_interp, ts_thread_id, ts_native_tid;
	int32_t ts_frame;            /* 3.10 frame, 3.13 current_frame */
	int32_t ts_cframe;           /* 3.11/3.12 cframe ... */
	int32_t cf_current_frame;    /* ... ->current_frame */
	/* frames */
	int frame_kind;              /* REC_PY_* */
	int32_t fr_previous, fr_code, fr_instr, fr_is_entry, fr_owner;
	int32_t fr_lasti;            /* 3.10: f_lasti, an int counting code units */
	int instr_is_prev;           /* 3.11/3.12 prev_instr: the code unit before the next one */
	/* PyCodeObject */
	int32_t co_filename, co_name, co_qualname, co_firstlineno, co_linetable, co_code_adaptive;
	int line_format;             /* REC_PY_LINES_* */
	/* objects */
	int32_t ob_type;
	int32_t bytes_size, bytes_sval;
	int32_t str_length, str_state, str_ascii_size, str_compact_size;
	/* sys.modules, dicts, modules, types: the threading module's registry (thread names) */
	int32_t is_modules;          /* interp->modules; 3.12+ interp->imports.modules */
	int32_t dict_version, dict_keys, dict_values;
	int32_t dk_size;             /* 3.10 dk_size (a count), else -1 */
	int32_t dk_log2_size, dk_log2_index_bytes, dk_kind; /* 3.11+, else -1 */
	int32_t dk_nentries, dk_indices;
	int32_t dv_values;           /* PyDictValues.values */
	int32_t md_dict;             /* PyModuleObject.md_dict */
	int32_t tp_basicsize, tp_flags, tp_dictoffset, ht_cached_keys;
	int attrs;                   /* REC_PY_ATTRS_* */
} rec_pyoff;

/* The built-in table for 3.minor (10, 11 or 12); NULL for any other version. */
const rec_pyoff *rec_pyoff_table(int minor);
/* Fill out from the _Py_DebugOffsets that start _PyRuntime (3.13; buf holds at least
 * REC_PY_DEBUG_OFFSETS_LEN bytes read from the target). 0, or -EINVAL with a one-line reason
 * (no cookie, a version whose debug-offsets layout we do not know, free-threaded build). */
#define REC_PY_DEBUG_OFFSETS_LEN 1024
int rec_pyoff_from_debug(const uint8_t *buf, size_t len, rec_pyoff *out, char *err, size_t errlen);
/* 1 when buf starts with the _Py_DebugOffsets cookie; *version_hex gets its version field. */
int rec_pyoff_has_debug(const uint8_t *buf, size_t len, uint32_t *version_hex);

/* Source line of code unit index (instruction index, 2-byte units) in a code object whose
 * line table is tab[0..len) and first line firstlineno. Index < 0 gives firstlineno; -1 (a
 * value, not an error: "unknown line") when the table has no line for the index. */
int rec_py_line(int line_format, const uint8_t *tab, size_t len, int firstlineno, int64_t index);

/* ---- the structure reader (all reads through rec_procmem) ---- */

/* One PyThreadState as read. */
typedef struct rec_pythread {
	uint64_t addr;          /* the PyThreadState */
	uint64_t next;          /* next in the interpreter's list, 0 at the end */
	uint64_t interp;
	uint64_t thread_id;     /* pthread_t of the thread */
	uint64_t native_tid;    /* OS tid (3.11+), else 0 */
	uint64_t frame;         /* current (leaf) frame, 0 when idle */
	uint64_t cframe;        /* 3.11/3.12: the _PyCFrame the frame was read through */
} rec_pythread;
/* Read the thread state at ts: one read, two on 3.11/3.12 (cframe). 0 or -errno. */
int rec_py_read_thread(rec_procmem *m, const rec_pyoff *o, uint64_t ts, rec_pythread *out);

/* One frame of a chain, leaf first. */
typedef struct rec_pyframe_raw {
	uint64_t addr;          /* the frame itself */
	uint64_t code;          /* the PyCodeObject */
	int64_t index;          /* code unit index of the current instruction, -1 not started */
	uint32_t flags;         /* GTT_PYFRAME_ENTRY for the first frame of an eval-loop call */
	uint32_t slot;          /* the reader's: where its code cache holds code (a hint) */
} rec_pyframe_raw;
#define REC_PY_MAX_FRAMES 1024
/* Walk the chain from frame (leaf) towards the root into out[0..cap), reading through the
 * procmem block cache (clear it first for fresh frames);
 * C-stack shim frames (3.12+) are skipped and mark their callee as an entry. Returns the
 * number of frames, or -errno when the first read failed; *torn is set when the chain broke
 * off (a failed read, a cycle, cap reached) after at least one frame. */
int rec_py_read_frames(rec_procmem *m, const rec_pyoff *o, uint64_t frame,
                       rec_pyframe_raw *out, size_t cap, int *torn);

/* The GIL's state. */
typedef struct rec_pygil {
	uint64_t holder;        /* last_holder: a PyThreadState address */
	int32_t locked;         /* 1 held, 0 free, -1 not initialized */
	uint64_t switches;      /* switch_number, 0 when unknown */
} rec_pygil;
/* One read of the _gil_runtime_state at gil. 0 or -errno. */
int rec_py_read_gil(rec_procmem *m, const rec_pyoff *o, uint64_t gil, rec_pygil *out);
/* Address of the GIL state: embedded in _PyRuntime (3.10/3.11) or the main interpreter's
 * ceval.gil pointer (3.12+). 0 when not readable yet. */
uint64_t rec_py_gil_addr(rec_procmem *m, const rec_pyoff *o, uint64_t runtime);

/* A code object's fields (strings read and decoded to UTF-8, owned by the struct). */
typedef struct rec_pycode {
	char *name, *qualname, *filename;
	int32_t firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
	int linetable_refused;  /* 1: its size was over REC_PY_LINETABLE_MAX, so it was not read */
	uint64_t code_start;    /* address of the first code unit (3.11+), else 0 */
	uint64_t name_ptr, filename_ptr; /* to notice a freed and reused code object */
} rec_pycode;
/* The largest line table read (bytes). Real ones are a few bytes per instruction (CPython's
 * largest stdlib code objects have a few KiB); a larger size is a torn or garbage ob_size,
 * and the code object is kept without lines (the caller counts it as a failed read). */
#define REC_PY_LINETABLE_MAX (1u << 20)
/* Read the code object at addr; type_addr (PyCode_Type in the target, 0 = do not check)
 * guards against a pointer that is not a code object (-EINVAL). 0 or -errno;
 * rec_pycode_clear() frees. */
int rec_py_read_code(rec_procmem *m, const rec_pyoff *o, uint64_t addr, uint64_t type_addr,
                     rec_pycode *out);
void rec_pycode_clear(rec_pycode *c);
/* Prefetch (rec_procmem_prefetch) what rec_py_read_code() of each of addrs[0..n) will read,
 * in three batched reads whatever n: the headers, then the strings' headers and the line
 * tables' headers they point to, then the longer strings and the line tables. The caller then
 * reads each with rec_py_read_code() (served from what was prefetched; anything else is read
 * as ever) and drops the prefetch. 0 or -errno. */
int rec_py_codes_prefetch(rec_procmem *m, const rec_pyoff *o, const uint64_t *addrs, size_t n,
                          uint64_t type_addr);

/* Read the header of the code object at addr only (name/filename pointers and first line)
 * and tell whether it still matches c: 1 same, 0 changed, -errno unreadable. */
int rec_py_code_same(rec_procmem *m, const rec_pyoff *o, uint64_t addr, const rec_pycode *c);
/* The same for n code objects in one batched read (n <= REC_PY_CHECK_BATCH): same[i] gets 1
 * (same), 0 (changed) or -1 (unreadable) for addrs[i] against cs[i]. 0, or -errno when
 * nothing could be read (-ESRCH the target is gone, -EINVAL n is too large). */
#define REC_PY_CHECK_BATCH 32
int rec_py_codes_same(rec_procmem *m, const rec_pyoff *o, const uint64_t *addrs,
                      const rec_pycode *const *cs, int8_t *same, size_t n);
/* The code-object header a check reads (bytes; 0 when the layout does not fit the reader's
 * buffer), and whether such a header read at the code object still matches c (1) or not (0). */
size_t rec_py_code_head_len(const rec_pyoff *o);
int rec_py_code_head_same(const rec_pyoff *o, const uint8_t *head, const rec_pycode *c);
/* Read a str object into buf as NUL-terminated UTF-8 (truncated to cap-1 bytes at a
 * character boundary). Returns the length, or -errno: unreadable, -EINVAL not a compact str. */
int rec_py_read_str(rec_procmem *m, const rec_pyoff *o, uint64_t addr, char *buf, size_t cap);

#endif
