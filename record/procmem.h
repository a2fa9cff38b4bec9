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

/* Several independent reads in one system call. Each request gets ok=1 when all of its
 * bytes were read. Returns the number of requests read completely, or -errno when the call
 * failed as a whole (-ESRCH: the process is gone). */
typedef struct rec_procmem_req {
	uint64_t addr;
	void *buf;
	size_t len;
	int ok;
} rec_procmem_req;
int rec_procmem_readv(rec_procmem *m, rec_procmem_req *req, size_t n);

/* Read through a small cache of page-aligned blocks, for structures that sit close together
 * (a thread's frames on its data stack): one system call per block instead of one per
 * struct. The cache keeps what it read until rec_procmem_cache_clear(), so the caller decides
 * how fresh data must be. Falls back to a plain read where a block is not readable whole.
 * 0 or -errno like rec_procmem_read(). */
int rec_procmem_read_cached(rec_procmem *m, uint64_t addr, void *buf, size_t len);
void rec_procmem_cache_clear(rec_procmem *m);

/* Counters since open: read calls (each request of a readv counts once) and those failed. */
uint64_t rec_procmem_reads(const rec_procmem *m);
uint64_t rec_procmem_failures(const rec_procmem *m);
/* 1 once a read found the process gone (ESRCH). */
int rec_procmem_gone(const rec_procmem *m);

#endif
