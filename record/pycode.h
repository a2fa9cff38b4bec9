/* pycode.h — the Python reader's cache of the target's code objects: each read once, written
 * to the trace as a PY_CODE record under a code_id, re-checked so that a freed code object
 * whose address another one took is read afresh under a new code_id.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PYCODE_H
#define REC_PYCODE_H

#include <stdint.h>
#include <sys/types.h>
#include "gtt.h"
#include "procmem.h"
#include "pyoffsets.h"

typedef struct rec_pycache rec_pycache;

/* One cached code object. */
typedef struct rec_pycache_entry {
	uint64_t addr;          /* the code object in the target; 0 = empty slot */
	uint64_t code_id;       /* as written in PY_CODE records: addr | reuse generation << 48 */
	uint64_t checked_pass;  /* the stack pass that last found the object unchanged */
	rec_pycode c;
} rec_pycache_entry;

/* A cache for pid's code objects, read through m with layout o (both outlive the cache);
 * code_type is PyCode_Type in the target (0: not checked). Each new code object's PY_CODE
 * record goes to emit(ctx, rec) (may be NULL: none), so the reader writes it like its other
 * records (and its observers see it). NULL on ENOMEM. */
typedef void (*rec_pycache_emit)(void *ctx, const gtt_record *rec);
rec_pycache *rec_pycache_create(pid_t pid, rec_procmem *m, const rec_pyoff *o, uint64_t code_type,
                                rec_pycache_emit emit, void *ctx);
/* Free every entry. NULL ok. */
void rec_pycache_destroy(rec_pycache *c);

/* Start stack pass number pass (increasing): entries are re-checked at most once per pass. */
void rec_pycache_begin_pass(rec_pycache *c, uint64_t pass);
/* Before the frames raw[0..n) of a stack just read are named: re-check, in one batched read,
 * every cached code object among them not yet checked in this pass, dropping changed ones. */
void rec_pycache_check_used(rec_pycache *c, const rec_pyframe_raw *raw, int n);
/* The same check, batched with the caller's other reads: rec_pycache_check_reqs() appends to
 * req[*n_req..cap) a request for the header of every cached code object among raw[0..n) not
 * yet checked in this pass (into buffers the cache owns), and once the caller has read them
 * (rec_procmem_readv), rec_pycache_check_apply() drops the entries whose header changed; one
 * that could not be read is checked again at its next use. Requests that do not fit (or out
 * of memory) leave their entries unchecked until the next call. Each raw[k].slot gets where
 * the cache holds its code (for rec_pycache_get_at()), and the code objects the cache does
 * not hold are appended to miss[*n_miss..miss_cap) (for rec_pycache_fill(); duplicates not
 * left out; miss may be NULL). */
void rec_pycache_check_reqs(rec_pycache *c, rec_pyframe_raw *raw, int n, rec_procmem_req *req, size_t *n_req,
                            size_t cap, uint64_t *miss, size_t *n_miss, size_t miss_cap);
void rec_pycache_check_apply(rec_pycache *c, const rec_procmem_req *req);
/* The entry for the code object at addr, reading it (and writing its PY_CODE record) on a
 * miss. NULL when it cannot be read or is not a code object. Valid until the next call. */
const rec_pycache_entry *rec_pycache_get(rec_pycache *c, uint64_t addr);
/* The same, looking at slot first (a raw frame's slot, from rec_pycache_check_reqs(): the
 * entries move only when one is dropped or the table grows, and the slot is used only when it
 * still holds addr). */
const rec_pycache_entry *rec_pycache_get_at(rec_pycache *c, uint64_t addr, uint32_t slot);
/* Cache the code objects at addrs[0..n) not cached yet (duplicates allowed; addrs is
 * reordered), reading them all in a few batched reads (rec_py_codes_prefetch) rather than
 * several system calls each: a pass that meets hundreds of new code objects (the first passes
 * of a recording) costs three or four system calls for them. Each is then cached and its
 * PY_CODE record written as by rec_pycache_get(); one that cannot be read is left out (its
 * rec_pycache_get() tries again). Returns the number cached. */
int rec_pycache_fill(rec_pycache *c, uint64_t *addrs, size_t n);
/* After a pass: re-check a few entries round robin, so that entries of freed code objects no
 * stack shows any more do not stay forever. The _reqs/_apply pair does the same with the reads
 * in the caller's batch: up to REC_PYCACHE_REVALIDATE requests appended to req[*n_req..cap),
 * and once read, the changed entries dropped. */
#define REC_PYCACHE_REVALIDATE 2
void rec_pycache_revalidate(rec_pycache *c);
void rec_pycache_revalidate_reqs(rec_pycache *c, rec_procmem_req *req, size_t *n_req, size_t cap);
void rec_pycache_revalidate_apply(rec_pycache *c, const rec_procmem_req *req);

/* Code objects read so far, and those whose line table was over REC_PY_LINETABLE_MAX (kept
 * without lines; the reader counts each as a failed read). */
uint64_t rec_pycache_reads(const rec_pycache *c);
uint64_t rec_pycache_refused(const rec_pycache *c);

#endif
