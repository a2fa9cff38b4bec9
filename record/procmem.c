/* procmem.c — process_vm_readv with failure counting; never stops the target. */
#include "procmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define MAX_IOV 64 /* well under IOV_MAX; larger batches go in several calls */
#define BLOCK 4096u /* one page: a block is readable whole or not at all */
#define N_BLOCKS 8

typedef struct block {
	uint64_t addr;     /* 0 = empty */
	uint8_t data[BLOCK];
} block;

struct rec_procmem {
	pid_t pid;
	rec_procmem_fn fn; /* test backend, else NULL */
	void *ctx;
	uint64_t n_reads, n_failed;
	int gone;
	block blocks[N_BLOCKS];
	unsigned next_block;  /* round-robin victim */
};

rec_procmem *rec_procmem_open(pid_t pid)
{
	rec_procmem *m = calloc(1, sizeof(*m));

	if (m)
		m->pid = pid;
	return m;
}

rec_procmem *rec_procmem_open_fn(rec_procmem_fn fn, void *ctx)
{
	rec_procmem *m = calloc(1, sizeof(*m));

	if (m) {
		m->fn = fn;
		m->ctx = ctx;
	}
	return m;
}

void rec_procmem_close(rec_procmem *m)
{
	free(m);
}

int rec_procmem_read(rec_procmem *m, uint64_t addr, void *buf, size_t len)
{
	struct iovec local, remote;
	ssize_t got;

	m->n_reads++;
	if (len == 0)
		return 0;
	if (addr == 0 || addr + len < addr) {
		m->n_failed++;
		return -EFAULT;
	}
	if (m->fn) {
		if (m->fn(m->ctx, addr, buf, len) == 0)
			return 0;
		m->n_failed++;
		return -EFAULT;
	}
	local.iov_base = buf;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = len;
	got = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
	if (got == (ssize_t)len)
		return 0;
	m->n_failed++;
	if (got >= 0)
		return -EFAULT; /* partly readable */
	if (errno == ESRCH)
		m->gone = 1;
	return -errno;
}

/* One process_vm_readv over req[0..n), n <= MAX_IOV; marks ok for the requests read whole.
 * The kernel stops at the first fault, so they form a prefix. 0, or -errno when the call
 * failed for another reason than a fault (-ESRCH: the process is gone). */
static int readv_some(rec_procmem *m, rec_procmem_req *req, size_t n)
{
	struct iovec local[MAX_IOV], remote[MAX_IOV];
	size_t i, k = 0;
	ssize_t got;

	for (i = 0; i < n; i++) {
		req[i].ok = 0;
		if (req[i].len == 0 || req[i].addr == 0)
			continue;
		local[k].iov_base = req[i].buf;
		local[k].iov_len = req[i].len;
		remote[k].iov_base = (void *)(uintptr_t)req[i].addr;
		remote[k].iov_len = req[i].len;
		k++;
	}
	if (k == 0)
		return 0;
	got = process_vm_readv(m->pid, local, k, remote, k, 0);
	if (got < 0) {
		if (errno == ESRCH)
			m->gone = 1;
		return errno == EFAULT ? 0 : -errno;
	}
	for (i = 0; i < n && got > 0; i++) {
		if (req[i].len == 0 || req[i].addr == 0)
			continue;
		if ((size_t)got < req[i].len)
			break;
		got -= (ssize_t)req[i].len;
		req[i].ok = 1;
	}
	return 0;
}

int rec_procmem_readv(rec_procmem *m, rec_procmem_req *req, size_t n)
{
	size_t i, at;
	int n_ok = 0, rc;

	for (at = 0; at < n; at += MAX_IOV) {
		size_t k = n - at < MAX_IOV ? n - at : MAX_IOV;

		if (!m->fn) {
			if ((rc = readv_some(m, req + at, k)) < 0) {
				m->n_reads += k;
				m->n_failed += k;
				return rc;
			}
		} else {
			for (i = at; i < at + k; i++)
				req[i].ok = 0;
		}
		for (i = at; i < at + k; i++) {
			if (req[i].ok) {
				m->n_reads++;
				n_ok++;
			} else if (rec_procmem_read(m, req[i].addr, req[i].buf, req[i].len) == 0) {
				/* stopped short by an earlier request's fault, or the test backend */
				req[i].ok = 1;
				n_ok++;
			}
		}
	}
	return n_ok;
}

void rec_procmem_cache_clear(rec_procmem *m)
{
	int i;

	for (i = 0; i < N_BLOCKS; i++)
		m->blocks[i].addr = 0;
}

/* The cached block starting at base, filling it on a miss; NULL when it is unreadable. */
static const block *get_block(rec_procmem *m, uint64_t base)
{
	block *b;
	int i;

	for (i = 0; i < N_BLOCKS; i++)
		if (m->blocks[i].addr == base)
			return &m->blocks[i];
	b = &m->blocks[m->next_block++ % N_BLOCKS];
	b->addr = 0;
	if (m->fn) {
		/* the test backend has no pages: fill only when the whole block is there */
		if (m->fn(m->ctx, base, b->data, BLOCK) < 0)
			return NULL;
	} else {
		struct iovec local = { b->data, BLOCK }, remote = { (void *)(uintptr_t)base, BLOCK };
		if (process_vm_readv(m->pid, &local, 1, &remote, 1, 0) != (ssize_t)BLOCK) {
			if (errno == ESRCH)
				m->gone = 1;
			return NULL;
		}
		m->n_reads++;
	}
	b->addr = base;
	return b;
}

int rec_procmem_read_cached(rec_procmem *m, uint64_t addr, void *buf, size_t len)
{
	uint64_t base = addr & ~(uint64_t)(BLOCK - 1), off = addr - base;
	const block *b;

	/* within one block only; anything else (or an unreadable block) reads directly */
	if (len == 0 || addr == 0 || off + len > BLOCK || !(b = get_block(m, base)))
		return rec_procmem_read(m, addr, buf, len);
	memcpy(buf, b->data + off, len);
	return 0;
}

uint64_t rec_procmem_reads(const rec_procmem *m)
{
	return m ? m->n_reads : 0;
}

uint64_t rec_procmem_failures(const rec_procmem *m)
{
	return m ? m->n_failed : 0;
}

int rec_procmem_gone(const rec_procmem *m)
{
	return m ? m->gone : 0;
}
