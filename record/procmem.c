/* procmem.c — process_vm_readv with failure counting, batched reads, pass snapshots (and walks
 * that look at them in place), prefetched reads; never stops the target. */
#include "procmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "gt_util.h"

#define MAX_IOV 1024 /* UIO_MAXIOV: larger batches go in several calls */
#define BLOCK 4096u /* one page: a block is readable whole or not at all */
#define N_BLOCKS 8
/* Snapshots: noted reads closer than SNAP_GAP bytes are read as one range (a gap under a page
 * cannot hide an unmapped page between two readable bytes); at most SNAP_MAX_RANGES ranges
 * and SNAP_MAX_BYTES bytes (the rest is read when asked for), NOTE_MAX reads noted per pass. */
#define SNAP_GAP 256u
#define PAGE_MERGE 4096u
#define SNAP_MAX_RANGES 8192u
#define SNAP_MAX_BYTES (1u << 20)
#define NOTE_MAX 32768u
#define SNAP_MAX_FAULTS 8 /* calls restarted after a faulting range, per snapshot */

typedef struct block {
	uint64_t addr;     /* 0 = empty */
	uint8_t data[BLOCK];
} block;

typedef struct span {
	uint64_t addr, len;
} span;

typedef struct snap_range {
	uint64_t addr;
	uint32_t len;
	uint32_t ok;       /* read whole */
	size_t off;        /* in snap_buf */
} snap_range;

struct rec_procmem {
	pid_t pid;
	rec_procmem_fn fn; /* test backend, else NULL */
	void *ctx;
	uint64_t n_reads, n_failed, n_calls, n_served;
	int gone;
	block blocks[N_BLOCKS];
	unsigned next_block;  /* round-robin victim */
	struct iovec *iov;    /* 2 x MAX_IOV, allocated on first use */
	/* what the current pass read (noting), and the snapshot being served (serving) */
	int noting, serving;
	span *noted;
	size_t n_noted, cap_noted;
	span *sort_tmp;         /* sort_noted()'s scratch: as many spans, and run starts */
	size_t cap_sort_tmp, *runs, cap_runs;
	snap_range *snap;       /* sorted by address (served by binary search) */
	size_t n_snap, cap_snap, hint;
	size_t *order;          /* the order they are read in: the ranges of the first words, then the rest */
	size_t cap_order;
	uint8_t *snap_buf;
	size_t cap_buf;
	/* the prefetched ranges, their bytes, and a table of them by start address (open
	 * addressing, n_pf_slots a power of two at least twice n_pf; an entry is 1 + an index) */
	snap_range *pf;
	size_t n_pf, cap_pf;
	uint32_t *pf_slots;
	size_t n_pf_slots;
	rec_procmem_req *pf_req;
	size_t cap_pf_req;
	uint8_t *pf_buf;
	size_t pf_used, cap_pf_buf;
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
	if (!m)
		return;
	free(m->iov);
	free(m->noted);
	free(m->sort_tmp);
	free(m->runs);
	free(m->snap);
	free(m->order);
	free(m->snap_buf);
	free(m->pf);
	free(m->pf_slots);
	free(m->pf_req);
	free(m->pf_buf);
	free(m);
}

/* 1 when [addr, addr+len) lies in the snapshot range the last served read came from. */
static int in_hint(const rec_procmem *m, uint64_t addr, uint64_t len)
{
	const snap_range *r = m->hint < m->n_snap ? &m->snap[m->hint] : NULL;

	return m->serving && r && r->ok && addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr);
}

static void note(rec_procmem *m, uint64_t addr, size_t len)
{
	span *last;

	/* room for SNAP_GAP past the end too: the spans' arithmetic below must not wrap */
	if (!m->noting || len == 0 || addr > UINT64_MAX - SNAP_GAP - len)
		return;
	/* a chain of frames on a data stack is walked downwards, one frame after another: grow
	 * the last span instead of noting each (and sorting them all at the next snapshot); so
	 * are two reads from the same range of the snapshot (3.10's frame objects, code objects'
	 * headers: a few hundred bytes apart in the allocator's pages): what lies between them
	 * was read whole in this snapshot, and the next one reads no more than this one did */
	if (m->n_noted) {
		last = &m->noted[m->n_noted - 1];
		if ((addr <= last->addr + last->len + SNAP_GAP && addr + len + SNAP_GAP >= last->addr) ||
		    (in_hint(m, addr, len) && in_hint(m, last->addr, last->len))) {
			uint64_t e = addr + len > last->addr + last->len ? addr + len : last->addr + last->len;
			if (addr < last->addr)
				last->addr = addr;
			last->len = e - last->addr;
			return;
		}
	}
	if (m->n_noted >= NOTE_MAX)
		return;
	if (GT_GROW(m->noted, m->cap_noted, m->n_noted + 1) == 0)
		m->noted[m->n_noted++] = (span){ addr, len };
}

void rec_procmem_note(rec_procmem *m, uint64_t addr, size_t len)
{
	note(m, addr, len);
}

/* The snapshot's range that holds [addr, addr+len) read whole, NULL when none. */
static const snap_range *snap_find(const rec_procmem *m, uint64_t addr, size_t len)
{
	size_t lo = 0, hi = m->n_snap;
	const snap_range *r;

	if (!m->serving || !m->n_snap)
		return NULL;
	while (lo < hi) { /* the first range starting above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (m->snap[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	r = &m->snap[lo - 1];
	/* addr >= r->addr here; written without addr + len, which a garbage pointer read from the
	 * target (0xffff...) wraps past the check into a copy from far outside the buffer */
	if (!r->ok || addr - r->addr > r->len || len > r->len - (addr - r->addr))
		return NULL;
	return r;
}

int rec_procmem_snap_has(const rec_procmem *m, uint64_t addr, size_t len)
{
	return snap_find(m, addr, len) != NULL;
}

/* Copy [addr, addr+len) out of the snapshot when one of its ranges holds it whole. The range
 * the last read found is looked at before the search: reads come in runs (a code object's
 * header, then its neighbour's). */
static int snap_serve(rec_procmem *m, uint64_t addr, void *buf, size_t len)
{
	const snap_range *r = m->hint < m->n_snap ? &m->snap[m->hint] : NULL;

	if (!m->serving || !r || !r->ok || addr < r->addr || addr - r->addr > r->len || len > r->len - (addr - r->addr)) {
		if (!(r = snap_find(m, addr, len)))
			return 0;
		m->hint = (size_t)(r - m->snap);
	}
	memcpy(buf, m->snap_buf + r->off + (addr - r->addr), len);
	m->n_reads++;
	m->n_served++;
	return 1;
}

/* The read itself, from the process (or the test backend). */
static int read_direct(rec_procmem *m, uint64_t addr, void *buf, size_t len)
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
	m->n_calls++;
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

static int pf_serve(rec_procmem *m, uint64_t addr, void *buf, size_t len);

int rec_procmem_read(rec_procmem *m, uint64_t addr, void *buf, size_t len)
{
	/* served first, then noted: the note may join the range it was served from */
	int served = len && snap_serve(m, addr, buf, len);

	note(m, addr, len);
	if (served || (len && m->n_pf && pf_serve(m, addr, buf, len)))
		return 0;
	return read_direct(m, addr, buf, len);
}

static int ensure_iov(rec_procmem *m)
{
	if (!m->iov)
		m->iov = malloc(2 * MAX_IOV * sizeof(*m->iov));
	return m->iov ? 0 : -ENOMEM;
}

/* Spans to read, through accessors (requests of a readv, or a snapshot's parts). */
typedef struct vec_job {
	size_t n;
	uint64_t (*addr)(const void *v, size_t i);
	size_t (*len)(const void *v, size_t i);
	void *(*buf)(void *v, size_t i);
	void (*set_ok)(void *v, size_t i);
	void *v;
} vec_job;

/* One process_vm_readv of up to MAX_IOV of j's spans from *at on (spans of length 0 or at
 * address 0 are skipped). set_ok marks each span read whole; the kernel stops at the first
 * fault, so after the call *at is the span after the one that faulted, or after the last one
 * asked for. 1 when a span faulted, 0 when not, or -errno when the call failed for another
 * reason than a fault (-ESRCH: the process is gone). */
static int readv_step(rec_procmem *m, vec_job *j, size_t *at)
{
	struct iovec *local = m->iov, *remote = m->iov + MAX_IOV;
	size_t i, k = 0, first = *at, last = *at;
	ssize_t got;

	for (i = first; i < j->n && k < MAX_IOV; i++) {
		size_t len = j->len(j->v, i);
		uint64_t addr = j->addr(j->v, i);
		last = i + 1;
		if (len == 0 || addr == 0 || addr + len < addr)
			continue;
		local[k].iov_base = j->buf(j->v, i);
		local[k].iov_len = len;
		remote[k].iov_base = (void *)(uintptr_t)addr;
		remote[k].iov_len = len;
		k++;
	}
	*at = last;
	if (k == 0)
		return 0;
	m->n_calls++;
	got = process_vm_readv(m->pid, local, k, remote, k, 0);
	if (got < 0 && errno != EFAULT) {
		if (errno == ESRCH)
			m->gone = 1;
		return -errno;
	}
	if (got < 0)
		got = 0;
	for (i = first; i < last; i++) {
		size_t len = j->len(j->v, i);
		uint64_t addr = j->addr(j->v, i);
		if (len == 0 || addr == 0 || addr + len < addr)
			continue;
		if ((size_t)got < len) {
			*at = i + 1; /* this one faulted: go on after it */
			return 1;
		}
		got -= (ssize_t)len;
		j->set_ok(j->v, i);
	}
	return 0;
}

static uint64_t req_addr(const void *v, size_t i) { return ((const rec_procmem_req *)v)[i].addr; }
static size_t req_len(const void *v, size_t i) { return ((const rec_procmem_req *)v)[i].len; }
static void *req_buf(void *v, size_t i) { return ((rec_procmem_req *)v)[i].buf; }
static void req_ok(void *v, size_t i) { ((rec_procmem_req *)v)[i].ok = 1; }

int rec_procmem_readv(rec_procmem *m, rec_procmem_req *req, size_t n)
{
	vec_job j = { n, req_addr, req_len, req_buf, req_ok, req };
	size_t i, at = 0;
	int n_ok = 0, rc = 0;

	for (i = 0; i < n; i++)
		req[i].ok = req[i].len == 0; /* nothing to read: read */
	if (m->fn) {
		for (i = 0; i < n; i++) {
			if (req[i].len && read_direct(m, req[i].addr, req[i].buf, req[i].len) == 0)
				req[i].ok = 1;
			else if (!req[i].len)
				m->n_reads++;
			if (req[i].ok)
				n_ok++;
		}
		return n_ok;
	}
	if (n && (rc = ensure_iov(m)) < 0)
		return rc;
	while (at < n)
		if ((rc = readv_step(m, &j, &at)) < 0)
			break;
	if (rc > 0)
		rc = 0;
	for (i = 0; i < n; i++) {
		m->n_reads++;
		if (req[i].ok)
			n_ok++;
		else
			m->n_failed++;
	}
	return rc < 0 ? rc : n_ok;
}

/* ---- snapshots ---- */

static int cmp_span(const void *a, const void *b)
{
	const span *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A snapshot's read: the ranges (in m->order), then the tail requests. */
typedef struct snap_job {
	rec_procmem *m;
	rec_procmem_req *tail;
	size_t n_tail;
} snap_job;

static rec_procmem_req *snap_req(const snap_job *s, size_t *i)
{
	if (*i < s->m->n_snap) {
		*i = s->m->order[*i];
		return NULL;
	}
	*i -= s->m->n_snap;
	return &s->tail[*i];
}
static uint64_t snap_addr(const void *v, size_t i)
{
	const rec_procmem_req *r = snap_req(v, &i);
	return r ? r->addr : ((const snap_job *)v)->m->snap[i].addr;
}
static size_t snap_len(const void *v, size_t i)
{
	const rec_procmem_req *r = snap_req(v, &i);
	return r ? r->len : ((const snap_job *)v)->m->snap[i].len;
}
static void *snap_buf(void *v, size_t i)
{
	rec_procmem_req *r = snap_req(v, &i);
	rec_procmem *m = ((snap_job *)v)->m;
	return r ? r->buf : m->snap_buf + m->snap[i].off;
}
static void snap_ok(void *v, size_t i)
{
	rec_procmem_req *r = snap_req(v, &i);
	if (r)
		r->ok = 1;
	else
		((snap_job *)v)->m->snap[i].ok = 1;
}

/* The noted spans in address order. A pass notes them in runs (a thread's frames, walked one
 * after another, lie in address order, up or down: 3.10's frame objects come from the
 * allocator's pools in call order), so a natural merge sort takes the runs as they come and
 * merges only them; qsort's callbacks on 3.10's ~500 frame spans were a fifth of a pass. */
static void sort_noted(rec_procmem *m)
{
	span *v = m->noted, *src, *dst;
	size_t n = m->n_noted, i, k, nr = 0;

	if (n < 2)
		return;
	if (GT_GROW(m->sort_tmp, m->cap_sort_tmp, n) < 0 || GT_GROW(m->runs, m->cap_runs, n + 1) < 0) {
		qsort(v, n, sizeof(*v), cmp_span);
		return;
	}
	for (i = 0; i < n;) { /* runs: ascending, or strictly descending and turned round */
		size_t j = i + 1;
		if (j < n && v[j].addr < v[i].addr) {
			while (j < n && v[j].addr < v[j - 1].addr)
				j++;
			for (size_t a = i, b = j - 1; a < b; a++, b--) {
				span t = v[a];
				v[a] = v[b];
				v[b] = t;
			}
		} else {
			while (j < n && v[j].addr >= v[j - 1].addr)
				j++;
		}
		m->runs[nr++] = i;
		i = j;
	}
	m->runs[nr] = n;
	src = v;
	dst = m->sort_tmp;
	while (nr > 1) { /* neighbouring runs merged pairwise until one is left */
		size_t w = 0;
		for (k = 0; k < nr; k += 2) {
			size_t lo = m->runs[k], mid = m->runs[k + 1], hi = m->runs[k + 2 <= nr ? k + 2 : nr];
			size_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				dst[o++] = src[b].addr < src[a].addr ? src[b++] : src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
			m->runs[w++] = lo;
		}
		m->runs[w] = n;
		nr = w;
		span *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

/* The snapshot's ranges from the noted reads: sorted, merged, capped. 0 or -ENOMEM. */
static int plan(rec_procmem *m)
{
	size_t i, total = 0;

	m->n_snap = 0;
	if (!m->n_noted)
		return 0;
	sort_noted(m);
	for (i = 0; i < m->n_noted; i++) {
		uint64_t a = m->noted[i].addr, e = a + m->noted[i].len;
		snap_range *last = m->n_snap ? &m->snap[m->n_snap - 1] : NULL;

		if (a == 0 || e < a)
			continue;
		/* merged: close neighbours, and anything on the page the last range ends on (3.10's
		 * frame objects lie a few hundred bytes apart in the allocator's pages: one iovec per
		 * page costs less than one per frame) */
		if (last && (a <= last->addr + last->len + SNAP_GAP ||
		             a / PAGE_MERGE == (last->addr + last->len - 1) / PAGE_MERGE)) {
			uint64_t le = last->addr + last->len;
			if (e > le) {
				if (total + (e - le) > SNAP_MAX_BYTES)
					break;
				total += e - le;
				last->len = (uint32_t)(e - last->addr);
			}
			continue;
		}
		if (m->n_snap >= SNAP_MAX_RANGES || total + (e - a) > SNAP_MAX_BYTES)
			break;
		if (GT_GROW(m->snap, m->cap_snap, m->n_snap + 1) < 0)
			return -ENOMEM;
		m->snap[m->n_snap++] = (snap_range){ a, (uint32_t)(e - a), 0, 0 };
		total += e - a;
	}
	if (GT_GROW(m->snap_buf, m->cap_buf, total ? total : 1) < 0 ||
	    GT_GROW(m->order, m->cap_order, m->n_snap ? m->n_snap : 1) < 0) {
		m->n_snap = 0;
		return -ENOMEM;
	}
	total = 0;
	for (i = 0; i < m->n_snap; i++) {
		m->snap[i].off = total;
		total += m->snap[i].len;
	}
	return 0;
}

/* The index of the range holding addr, or n_snap. */
static size_t range_of(const rec_procmem *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n_snap;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->snap[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->snap[lo - 1].addr + m->snap[lo - 1].len)
		return m->n_snap;
	return lo - 1;
}

/* The read order: the ranges holding first[] before all others. */
static void order_ranges(rec_procmem *m, const uint64_t *first, size_t n_first)
{
	size_t i, k = 0, r;

	for (i = 0; i < m->n_snap; i++)
		m->snap[i].ok = 0; /* "not placed yet", until read */
	for (i = 0; i < n_first; i++) {
		r = range_of(m, first[i]);
		if (r < m->n_snap && !m->snap[r].ok) {
			m->snap[r].ok = 1;
			m->order[k++] = r;
		}
	}
	for (i = 0; i < m->n_snap; i++)
		if (!m->snap[i].ok)
			m->order[k++] = i;
}

int rec_procmem_snap_begin(rec_procmem *m, const uint64_t *first, size_t n_first, rec_procmem_req *tail,
                           size_t n_tail)
{
	snap_job sj = { m, tail, n_tail };
	vec_job j = { 0, snap_addr, snap_len, snap_buf, snap_ok, &sj };
	size_t at = 0, i;
	int rc = 0, faults = 0;
	uint64_t bytes = 0;

	m->serving = 0;
	if (plan(m) < 0)
		m->n_snap = 0;
	order_ranges(m, first, n_first);
	m->n_noted = 0;
	m->noting = 1;
	j.n = m->n_snap + n_tail;
	for (i = 0; i < j.n; i++) {
		size_t k = i;
		rec_procmem_req *r = snap_req(&sj, &k);
		if (r)
			r->ok = 0;
		else
			m->snap[k].ok = 0;
	}
	if (j.n && !m->fn && ensure_iov(m) < 0)
		j.n = 0;
	if (m->fn) {
		for (i = 0; i < j.n; i++) {
			size_t k = i;
			rec_procmem_req *r = snap_req(&sj, &k);
			m->n_calls++;
			if (r)
				r->ok = r->len && m->fn(m->ctx, r->addr, r->buf, r->len) == 0;
			else
				m->snap[k].ok = m->fn(m->ctx, m->snap[k].addr, m->snap_buf + m->snap[k].off, m->snap[k].len) == 0;
		}
	} else {
		/* a range that faulted ends a call early: the next call starts after it */
		while (at < j.n && faults <= SNAP_MAX_FAULTS) {
			if ((rc = readv_step(m, &j, &at)) < 0)
				break;
			faults += rc;
			rc = 0;
		}
	}
	for (i = 0; i < m->n_snap; i++)
		if (m->snap[i].ok)
			bytes += m->snap[i].len;
	m->serving = 1;
	if (rc < 0)
		return rc;
	return (int)(bytes > INT32_MAX ? INT32_MAX : bytes);
}

void rec_procmem_snap_end(rec_procmem *m)
{
	m->serving = 0;
	m->noting = 0;
}

void rec_procmem_snap_forget(rec_procmem *m)
{
	m->n_noted = 0;
	m->n_snap = 0;
}

/* ---- prefetch ---- */

static size_t pf_home(const rec_procmem *m, uint64_t addr)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (m->n_pf_slots - 1);
}

/* The table of prefetched ranges by start address, for n_pf ranges; 0 or -ENOMEM. A second
 * range at an address already there (one str read for two code objects) is left out. */
static int pf_index(rec_procmem *m)
{
	size_t want = 64, i, k;

	while (want < 2 * m->n_pf)
		want *= 2;
	if (want > m->n_pf_slots) {
		uint32_t *t = realloc(m->pf_slots, want * sizeof(*t));
		if (!t)
			return -ENOMEM;
		m->pf_slots = t;
		m->n_pf_slots = want;
	}
	memset(m->pf_slots, 0, m->n_pf_slots * sizeof(*m->pf_slots));
	for (i = 0; i < m->n_pf; i++) {
		for (k = pf_home(m, m->pf[i].addr); m->pf_slots[k]; k = (k + 1) & (m->n_pf_slots - 1))
			if (m->pf[m->pf_slots[k] - 1].addr == m->pf[i].addr)
				break;
		if (!m->pf_slots[k])
			m->pf_slots[k] = (uint32_t)(i + 1);
	}
	return 0;
}

int rec_procmem_prefetch(rec_procmem *m, const uint64_t *addr, const size_t *len, size_t n)
{
	size_t i, k = 0, used = m->pf_used, total = 0;
	int rc;

	for (i = 0; i < n; i++)
		if (len[i] && addr[i] && addr[i] + len[i] > addr[i] && used + total + len[i] <= REC_PROCMEM_PREFETCH_MAX)
			total += len[i];
	if (!total)
		return 0;
	if (GT_GROW(m->pf_buf, m->cap_pf_buf, used + total) < 0 || GT_GROW(m->pf_req, m->cap_pf_req, n) < 0 ||
	    GT_GROW(m->pf, m->cap_pf, m->n_pf + n) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!len[i] || !addr[i] || addr[i] + len[i] <= addr[i] || m->pf_used + len[i] > used + total)
			continue;
		m->pf_req[k++] = (rec_procmem_req){ addr[i], m->pf_buf + m->pf_used, len[i], 0 };
		m->pf_used += len[i];
	}
	/* read like rec_procmem_readv(), but these are not the caller's reads: the reads they
	 * serve are counted (and a range that failed fails again at its own read) */
	{
		uint64_t reads = m->n_reads, failed = m->n_failed;
		rc = rec_procmem_readv(m, m->pf_req, k);
		m->n_reads = reads;
		m->n_failed = failed;
	}
	if (rc < 0)
		return rc;
	for (i = 0; i < k; i++)
		if (m->pf_req[i].ok)
			m->pf[m->n_pf++] = (snap_range){ m->pf_req[i].addr, (uint32_t)m->pf_req[i].len, 1,
			                                 (size_t)((uint8_t *)m->pf_req[i].buf - m->pf_buf) };
	if (pf_index(m) < 0) {
		m->n_pf = 0;
		return -ENOMEM;
	}
	return rc;
}

void rec_procmem_prefetch_drop(rec_procmem *m)
{
	m->n_pf = 0;
	m->pf_used = 0;
}

/* Copy [addr, addr+len) out of the prefetched range that starts at addr, when it holds it
 * whole (the prefetch's reader reads each thing where it asked for it). */
static int pf_serve(rec_procmem *m, uint64_t addr, void *buf, size_t len)
{
	size_t k;

	for (k = pf_home(m, addr); m->pf_slots[k]; k = (k + 1) & (m->n_pf_slots - 1)) {
		const snap_range *r = &m->pf[m->pf_slots[k] - 1];
		if (r->addr != addr)
			continue;
		if (len > r->len)
			return 0;
		memcpy(buf, m->pf_buf + r->off, len);
		m->n_reads++;
		m->n_served++;
		return 1;
	}
	return 0;
}

/* ---- walks ---- */

void rec_procmem_walk_begin(rec_procmem_walk *w)
{
	memset(w, 0, sizeof(*w));
}

/* Note what the walk served since its last note (one span: note() would have merged them). */
static void walk_flush(rec_procmem *m, rec_procmem_walk *w)
{
	if (w->nhi)
		note(m, w->nlo, (size_t)(w->nhi - w->nlo));
	w->nhi = 0;
	m->n_reads += w->served;
	m->n_served += w->served;
	w->served = 0;
}

/* The bytes at addr in the snapshot range the walk is in, or in the one that holds them
 * (noting what the last range served as one span); NULL when no range holds them whole. */
static const uint8_t *walk_view(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, size_t len)
{
	const snap_range *r;

	/* written without addr + len, like snap_find(): a garbage pointer must not wrap */
	if (!w->base || addr < w->lo || addr >= w->hi || len > w->hi - addr) {
		if (w->nhi) /* what was served from the last range, as one span */
			note(m, w->nlo, (size_t)(w->nhi - w->nlo));
		w->nhi = 0;
		if (len && (r = snap_find(m, addr, len)) != NULL) {
			w->base = m->snap_buf + r->off;
			w->lo = r->addr;
			w->hi = r->addr + r->len;
		} else {
			w->base = NULL;
		}
	}
	if (!w->base || !len)
		return NULL;
	/* one span for all that a range served (as note() merges reads from one range) */
	if (!w->nhi) {
		w->nlo = addr;
		w->nhi = addr + len;
	} else {
		if (addr < w->nlo)
			w->nlo = addr;
		if (addr + len > w->nhi)
			w->nhi = addr + len;
	}
	w->served++;
	return w->base + (addr - w->lo);
}

const uint8_t *rec_procmem_walk_read_slow(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, uint8_t *buf,
                                          size_t len, int *rc)
{
	const uint8_t *v = walk_view(m, w, addr, len);

	*rc = 0;
	if (v)
		return v;
	walk_flush(m, w); /* what the walk noted goes before this read's note */
	if ((*rc = rec_procmem_read_cached(m, addr, buf, len)) < 0)
		return NULL;
	return buf;
}

const uint8_t *rec_procmem_walk_peek(rec_procmem *m, rec_procmem_walk *w, uint64_t addr, size_t len)
{
	return walk_view(m, w, addr, len);
}

void rec_procmem_walk_end(rec_procmem *m, rec_procmem_walk *w)
{
	walk_flush(m, w);
	w->base = NULL;
}

/* ---- block cache ---- */

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
	m->n_calls++;
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

	int served = len && snap_serve(m, addr, buf, len);

	note(m, addr, len);
	if (served || (len && m->n_pf && pf_serve(m, addr, buf, len)))
		return 0;
	/* within one block only; anything else (or an unreadable block) reads directly */
	if (len == 0 || addr == 0 || off + len > BLOCK || !(b = get_block(m, base)))
		return read_direct(m, addr, buf, len);
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

uint64_t rec_procmem_syscalls(const rec_procmem *m)
{
	return m ? m->n_calls : 0;
}

uint64_t rec_procmem_served(const rec_procmem *m)
{
	return m ? m->n_served : 0;
}

int rec_procmem_gone(const rec_procmem *m)
{
	return m ? m->gone : 0;
}
