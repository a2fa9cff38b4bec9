/* procmem.h — reading another process's memory (process_vm_readv) without stopping it;
 * the only place in the recorder that touches the target's address space.
 * Return rule (all of record/, see rec_err.h): 0 or a count, or a negative errno. */
#ifndef REC_PROCMEM_H
#define REC_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct rec_procmem rec_procmem;

/* A reader for pid. NULL on ENOMEM. Nothing is checked until the first read. */
rec_procmem *rec_procmem_open(pid_t pid);
/* A reader served by fn (tests: fake memory). fn fills buf with len bytes at addr and
 * returns 0, or any negative value when a byte is unreadable (read as -EFAULT). NULL on ENOMEM. */
typedef int (*rec_procmem_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
rec_procmem *rec_procmem_open_fn(rec_procmem_fn fn, void *ctx);
/* Free. NULL ok. */
void rec_procmem_close(rec_procmem *m);

/* Read exactly len bytes at addr. 0, or -errno (-ESRCH when the process is gone, -EFAULT
 * for an unmapped address) — a partial read counts as a failure (-EFAULT). */
int rec_procmem_read(rec_procmem *m, uint64_t addr, void *buf, size_t len);

/* Several independent reads in one system call (one per 1024 requests; after a request that
 * faults, the rest go in another call), always from the process. Each request gets ok=1 when
 * all of its bytes were read. Returns the number of requests read completely, or -errno when
 * the call failed as a whole (-ESRCH: the process is gone). */
typedef struct rec_procmem_req {
	uint64_t addr;
	void *buf;
	size_t len;
	int ok;
} rec_procmem_req;
int rec_procmem_readv(rec_procmem *m, rec_procmem_req *req, size_t n);

/* ---- snapshots: a reading pass in one or two system calls ----
 * A pass that reads the same structures again and again (a thread's state and frames, every
 * few milliseconds) notes what it reads; the next pass starts with a snapshot: every range
 * noted last time, read together in as few process_vm_readv calls as possible (neighbours
 * closer than a page merged, up to 1024 ranges per call). Until the snapshot is dropped,
 * rec_procmem_read() and rec_procmem_read_cached() of bytes inside a range that was read are
 * served from it without a system call; anything else is read from the process (and noted).
 * A snapshot is as fresh as its system call: the caller checks what must be current with
 * rec_procmem_readv(), which always reads the process. */

/* Take a snapshot of what was noted since the last rec_procmem_snap_begin() (nothing the first
 * time), drop the old one, and start noting afresh. The ranges that hold the words at
 * first[0..n_first) are read before all others, and the caller's requests tail[0..n_tail)
 * after them all, in the same system call (or in the first and the last of several, in
 * order): a word read both in a first range and in the tail brackets the snapshot, and when
 * both read the same it stood still while the snapshot was taken. The tail requests get ok
 * like rec_procmem_readv()'s (they are not served later). Returns the number of bytes read
 * into the snapshot, or -errno when the process is gone (-ESRCH). */
int rec_procmem_snap_begin(rec_procmem *m, const uint64_t *first, size_t n_first, rec_procmem_req *tail,
                           size_t n_tail);
/* Note [addr, addr+len) for the next snapshot without reading it now: room for what is
 * expected there next time (the frames a data stack may grow by). The caller vouches that it
 * is readable (a range that faults costs the snapshot another system call). */
void rec_procmem_note(rec_procmem *m, uint64_t addr, size_t len);
/* 1 when the snapshot being served holds [addr, addr+len) read whole, else 0. */
int rec_procmem_snap_has(const rec_procmem *m, uint64_t addr, size_t len);
/* Stop serving from the snapshot and stop noting; what was noted plans the next snapshot. */
void rec_procmem_snap_end(rec_procmem *m);
/* Forget what was noted (the next snapshot reads nothing): after an exec, say. */
void rec_procmem_snap_forget(rec_procmem *m);

/* A walk through many small structures that mostly lie in the snapshot (a thread's frames):
 * rec_procmem_walk_read() hands back a pointer to the len bytes at addr — into the snapshot
 * being served when one of its ranges holds them whole (no copy, no search while the walk stays
 * in the same range), else into buf after rec_procmem_read_cached() read them — or NULL with
 * *rc set. What a walk read from the snapshot is noted for the next one as one span per range
 * it read from (the bytes between were read whole in this one), and counted as served reads;
 * the last of it by rec_procmem_walk_end(), which every walk must end with.
 * The pointer is valid until the next read of the walk. */
typedef struct rec_procmem_walk {
	const uint8_t *base;    /* the snapshot range at [lo, hi) */
	uint64_t lo, hi;
	uint64_t nlo, nhi;      /* the hull of what it served, not noted yet; nhi == 0: none */
	uint64_t served;        /* reads served, not counted yet */
} rec_procmem_walk;
void rec_procmem_walk_begin(rec_procmem_walk *w);
const uint8_t *rec_procmem_walk_read_slow(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, uint8_t *buf,
                                          size_t len, int *rc);
/* the common case inline: the next frame in the range the walk is in (most of a pass's reads) */
static inline const uint8_t *rec_procmem_walk_read(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, uint8_t *buf,
                                                   size_t len, int *rc)
{
	if (w->base && w->nhi && len && addr >= w->lo && addr < w->hi && len <= w->hi - addr) {
		if (addr < w->nlo)
			w->nlo = addr;
		if (addr + len > w->nhi)
			w->nhi = addr + len;
		w->served++;
		*rc = 0;
		return w->base + (addr - w->lo);
	}
	return rec_procmem_walk_read_slow(m, w, addr, buf, len, rc);
}
/* rec_procmem_walk_read() that reads nothing when the snapshot does not hold the bytes (NULL):
 * the caller batches those. */
const uint8_t *rec_procmem_walk_peek(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, size_t len);
void rec_procmem_walk_end(rec_procmem *m, rec_procmem_walk *w);

/* ---- prefetch: reads known in advance, in one system call ----
 * A reader that knows what it is about to read (the headers, strings and line tables of the
 * code objects a pass met for the first time) reads it all with rec_procmem_prefetch(): each
 * of the n ranges [addr[i], addr[i]+len[i]) is read (as by rec_procmem_readv(), not counted as
 * reads: the reads it serves are) into a buffer of the reader's own; until
 * rec_procmem_prefetch_drop(), rec_procmem_read() and rec_procmem_read_cached() that start
 * where a range read whole starts and end inside it (what the prefetch's reader asked for) are
 * served from it (after the snapshot), nothing noted. Calls add to what is held. A range that
 * could not be read is not served: its read goes to the process as ever.
 * Returns the number of ranges read whole, or -errno (-ESRCH: the process is gone; -ENOMEM). */
#define REC_PROCMEM_PREFETCH_MAX (4u << 20) /* bytes held at most; ranges beyond are not read */
int rec_procmem_prefetch(rec_procmem *m, const uint64_t *addr, const size_t *len, size_t n);
void rec_procmem_prefetch_drop(rec_procmem *m);

/* Read through a small cache of page-aligned blocks, for structures that sit close together
 * (a thread's frames on its data stack): one system call per block instead of one per
 * struct. The cache keeps what it read until rec_procmem_cache_clear(), so the caller decides
 * how fresh data must be. Falls back to a plain read where a block is not readable whole.
 * 0 or -errno like rec_procmem_read(). */
int rec_procmem_read_cached(rec_procmem *m, uint64_t addr, void *buf, size_t len);
void rec_procmem_cache_clear(rec_procmem *m);

/* Counters since open: reads asked for (each request of a readv counts once, and so does a
 * read the snapshot served), those failed, process_vm_readv system calls made, and reads the
 * snapshot served. */
uint64_t rec_procmem_reads(const rec_procmem *m);
uint64_t rec_procmem_failures(const rec_procmem *m);
uint64_t rec_procmem_syscalls(const rec_procmem *m);
uint64_t rec_procmem_served(const rec_procmem *m);
/* 1 once a read found the process gone (ESRCH). */
int rec_procmem_gone(const rec_procmem *m);

#endif
