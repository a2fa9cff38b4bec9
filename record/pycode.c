/* pycode.c — the code-object cache of the Python reader: an open-addressing table keyed by
 * the code object's address, with batched re-checks against address reuse and a batched fill
 * of the code objects a pass meets for the first time. */
#include "pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REVALIDATE_PER_PASS REC_PYCACHE_REVALIDATE /* cached code objects re-checked per pass */
#define CACHE_MIN_SLOTS 1024
#define CHECK_QUEUE_MAX 2048    /* code objects checked in one batch; the rest at the next */

struct rec_pycache {
	pid_t pid;
	rec_procmem *mem;
	const rec_pyoff *off;
	uint64_t code_type;
	rec_pycache_emit emit;
	void *emit_ctx;
	rec_pycache_entry *v;
	size_t cap, n, reval_at;
	unsigned bits;          /* cap == 1 << bits */
	uint64_t gen;           /* bumped on every drop: a reused address gets a new code_id */
	uint64_t pass;
	uint64_t n_reads, n_refused;
	/* checks queued by rec_pycache_check_reqs (at most CHECK_QUEUE_MAX, allocated on first
	 * use so that request buffers never move): code addresses, their request's index, and
	 * header buffers of head_len bytes each */
	uint64_t *q_addr;
	size_t *q_req, *q_slot;  /* q_slot: the entry's slot when queued */
	uint8_t *q_buf;
	size_t n_q, head_len;
	/* round-robin re-checks queued by rec_pycache_revalidate_reqs */
	uint64_t r_addr[REC_PYCACHE_REVALIDATE];
	size_t r_req[REC_PYCACHE_REVALIDATE], n_r;
	uint8_t *r_buf;         /* REC_PYCACHE_REVALIDATE x head_len */
};

rec_pycache *rec_pycache_create(pid_t pid, rec_procmem *m, const rec_pyoff *o, uint64_t code_type,
                                rec_pycache_emit emit, void *ctx)
{
	rec_pycache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->pid = pid;
	c->mem = m;
	c->off = o;
	c->code_type = code_type;
	c->emit = emit;
	c->emit_ctx = ctx;
	c->head_len = rec_py_code_head_len(o);
	return c;
}

void rec_pycache_destroy(rec_pycache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->cap; i++)
		rec_pycode_clear(&c->v[i].c);
	free(c->v);
	free(c->q_addr);
	free(c->q_req);
	free(c->q_slot);
	free(c->q_buf);
	free(c->r_buf);
	free(c);
}

/* Fibonacci hashing: the product's top bits. Its low bits depend only on the address's low
 * bits, and code objects allocated one after another (exec'd or imported together) lie at a
 * stride of a power of two times something: with the low bits, a few hundred of them shared a
 * tenth of the slots and each lookup probed a long run. */
static size_t home_slot(const rec_pycache *c, uint64_t addr)
{
	return (size_t)(((addr >> 4) * 0x9e3779b97f4a7c15ull) >> (64 - c->bits));
}

static rec_pycache_entry *slot(rec_pycache *c, uint64_t addr)
{
	size_t mask = c->cap - 1, i = home_slot(c, addr);

	while (c->v[i].addr && c->v[i].addr != addr)
		i = (i + 1) & mask;
	return &c->v[i];
}

static int grow(rec_pycache *c)
{
	rec_pycache_entry *old = c->v;
	size_t old_cap = c->cap, i;

	c->cap = old_cap ? old_cap * 2 : CACHE_MIN_SLOTS;
	for (c->bits = 0; ((size_t)1 << c->bits) < c->cap; c->bits++)
		;
	c->v = calloc(c->cap, sizeof(*c->v));
	if (!c->v) {
		c->v = old;
		c->cap = old_cap;
		for (c->bits = 0; old_cap && ((size_t)1 << c->bits) < old_cap; c->bits++)
			;
		return -ENOMEM;
	}
	for (i = 0; i < old_cap; i++)
		if (old[i].addr)
			*slot(c, old[i].addr) = old[i];
	free(old);
	return 0;
}

void rec_pycache_begin_pass(rec_pycache *c, uint64_t pass)
{
	c->pass = pass;
}

const rec_pycache_entry *rec_pycache_get(rec_pycache *c, uint64_t addr)
{
	rec_pycache_entry *e;
	gtt_record r;

	if ((c->n + 1) * 2 > c->cap && grow(c) < 0)
		return NULL;
	e = slot(c, addr);
	if (e->addr)
		return e;
	if (rec_py_read_code(c->mem, c->off, addr, c->code_type, &e->c) < 0)
		return NULL;
	if (e->c.linetable_refused)
		c->n_refused++;
	e->addr = addr;
	e->checked_pass = c->pass;
	/* user-space addresses fit in 48 bits: the top bits count reuses of this address */
	e->code_id = addr | (c->gen << 48);
	c->n++;
	c->n_reads++;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_PY_CODE;
	r.u.py_code.pid = (uint32_t)c->pid;
	r.u.py_code.code_id = e->code_id;
	r.u.py_code.first_line = e->c.firstlineno;
	r.u.py_code.name = e->c.name;
	r.u.py_code.qualname = e->c.qualname;
	r.u.py_code.filename = e->c.filename;
	if (c->emit)
		c->emit(c->emit_ctx, &r);
	return e;
}

int rec_pycache_fill(rec_pycache *c, uint64_t *addrs, size_t n)
{
	size_t i, k = 0, mask = 63, j;
	uint64_t *seen;
	int got = 0;

	if ((c->n + n) * 2 > c->cap && c->cap && grow(c) < 0)
		return 0;
	while (mask + 1 < 2 * n)
		mask = mask * 2 + 1;
	if (!(seen = calloc(mask + 1, sizeof(*seen))))
		return 0;
	/* the misses, each once (a recursive function's frames share one code object) */
	for (i = 0; i < n; i++) {
		if (!addrs[i] || (c->cap && slot(c, addrs[i])->addr))
			continue;
		for (j = (size_t)((addrs[i] * 0x9e3779b97f4a7c15ull) >> 32) & mask; seen[j] && seen[j] != addrs[i];
		     j = (j + 1) & mask)
			;
		if (!seen[j]) {
			seen[j] = addrs[i];
			addrs[k++] = addrs[i];
		}
	}
	free(seen);
	if (k && rec_py_codes_prefetch(c->mem, c->off, addrs, k, c->code_type) < 0)
		k = 0; /* out of memory or gone: each read alone at its use */
	for (i = 0; i < k; i++)
		got += rec_pycache_get(c, addrs[i]) != NULL;
	rec_procmem_prefetch_drop(c->mem);
	return got;
}

const rec_pycache_entry *rec_pycache_get_at(rec_pycache *c, uint64_t addr, uint32_t at)
{
	if (at < c->cap && addr && c->v[at].addr == addr)
		return &c->v[at];
	return rec_pycache_get(c, addr);
}

/* Drop entry e (its code object is gone or another one took its address): the next sight of
 * the address reads it afresh under a new code_id. Backward-shift deletion keeps the probe
 * chains intact. */
static void drop(rec_pycache *c, rec_pycache_entry *e)
{
	size_t mask = c->cap - 1, i, j;

	rec_pycode_clear(&e->c);
	e->addr = 0;
	c->n--;
	c->gen = (c->gen + 1) & 0xffff;
	i = (size_t)(e - c->v);
	for (j = (i + 1) & mask; c->v[j].addr; j = (j + 1) & mask) {
		size_t home = home_slot(c, c->v[j].addr);
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			c->v[i] = c->v[j];
			memset(&c->v[j], 0, sizeof(c->v[j]));
			i = j;
		}
	}
}

void rec_pycache_revalidate(rec_pycache *c)
{
	size_t k;

	for (k = 0; k < REVALIDATE_PER_PASS && c->cap; k++) {
		rec_pycache_entry *e = &c->v[c->reval_at++ & (c->cap - 1)];

		if (e->addr && rec_py_code_same(c->mem, c->off, e->addr, &e->c) != 1)
			drop(c, e);
	}
}

/* A code object that was freed and whose address another code object now has (common during
 * start-up: the module code of a .pth line or an imported module is freed, and the script's
 * functions are allocated where it was) would otherwise keep the old name for as long as the
 * entry lives. */
void rec_pycache_check_used(rec_pycache *c, const rec_pyframe_raw *raw, int nf)
{
	uint64_t addrs[REC_PY_CHECK_BATCH];
	const rec_pycode *cs[REC_PY_CHECK_BATCH];
	rec_pycache_entry *es[REC_PY_CHECK_BATCH];
	int8_t same[REC_PY_CHECK_BATCH];
	size_t n = 0, i;
	int k;

	if (!c->cap)
		return;
	for (k = 0; k <= nf; k++) {
		rec_pycache_entry *e = k < nf ? slot(c, raw[k].code) : NULL;

		if (e && e->addr && e->checked_pass != c->pass) {
			e->checked_pass = c->pass; /* also marks it as queued */
			es[n] = e;
			addrs[n] = e->addr;
			cs[n] = &e->c;
			n++;
		}
		if (n == REC_PY_CHECK_BATCH || (k == nf && n)) {
			if (rec_py_codes_same(c->mem, c->off, addrs, cs, same, n) < 0) {
				for (i = 0; i < n; i++)
					es[i]->checked_pass = 0; /* unknown: check again at the next use */
			} else {
				/* look each up again: a drop may move other entries of its probe chain */
				for (i = 0; i < n; i++)
					if (same[i] != 1)
						drop(c, slot(c, addrs[i]));
			}
			n = 0;
		}
	}
}

uint64_t rec_pycache_reads(const rec_pycache *c)
{
	return c ? c->n_reads : 0;
}

uint64_t rec_pycache_refused(const rec_pycache *c)
{
	return c ? c->n_refused : 0;
}

void rec_pycache_check_reqs(rec_pycache *c, rec_pyframe_raw *raw, int nf, rec_procmem_req *req, size_t *n_req,
                            size_t cap, uint64_t *miss, size_t *n_miss, size_t miss_cap)
{
	int k;

	if (miss && c->cap == 0) {
		for (k = 0; k < nf && *n_miss < miss_cap; k++)
			miss[(*n_miss)++] = raw[k].code;
		return;
	}
	if (!c->cap || !c->head_len)
		return;
	if (!c->q_addr) {
		c->q_addr = malloc(CHECK_QUEUE_MAX * sizeof(*c->q_addr));
		c->q_req = malloc(CHECK_QUEUE_MAX * sizeof(*c->q_req));
		c->q_slot = malloc(CHECK_QUEUE_MAX * sizeof(*c->q_slot));
		c->q_buf = malloc(CHECK_QUEUE_MAX * c->head_len);
		if (!c->q_addr || !c->q_req || !c->q_slot || !c->q_buf) {
			free(c->q_addr);
			free(c->q_req);
			free(c->q_slot);
			free(c->q_buf);
			c->q_addr = NULL;
			c->q_req = NULL;
			c->q_slot = NULL;
			c->q_buf = NULL;
			return;
		}
	}
	for (k = 0; k < nf; k++) {
		rec_pycache_entry *e = slot(c, raw[k].code);

		raw[k].slot = (uint32_t)(e - c->v);
		if (!e->addr) {
			if (miss && *n_miss < miss_cap)
				miss[(*n_miss)++] = raw[k].code;
			continue;
		}
		if (e->checked_pass == c->pass || *n_req >= cap || c->n_q >= CHECK_QUEUE_MAX)
			continue;
		e->checked_pass = c->pass; /* also marks it as queued */
		c->q_addr[c->n_q] = e->addr;
		c->q_req[c->n_q] = *n_req;
		c->q_slot[c->n_q] = (size_t)(e - c->v);
		req[(*n_req)++] = (rec_procmem_req){ e->addr, c->q_buf + c->n_q * c->head_len, c->head_len, 0 };
		c->n_q++;
	}
}

void rec_pycache_check_apply(rec_pycache *c, const rec_procmem_req *req)
{
	size_t i;

	for (i = 0; i < c->n_q; i++) {
		/* where the entry was queued from, unless a drop moved it meanwhile */
		rec_pycache_entry *e = c->q_slot[i] < c->cap && c->v[c->q_slot[i]].addr == c->q_addr[i]
		                               ? &c->v[c->q_slot[i]] : slot(c, c->q_addr[i]);
		const rec_procmem_req *r = &req[c->q_req[i]];

		if (!e->addr)
			continue; /* dropped meanwhile */
		if (!r->ok)
			e->checked_pass = 0; /* unknown: check again at the next use */
		else if (!rec_py_code_head_same(c->off, c->q_buf + i * c->head_len, &e->c))
			drop(c, e);
	}
	c->n_q = 0;
}

void rec_pycache_revalidate_reqs(rec_pycache *c, rec_procmem_req *req, size_t *n_req, size_t cap)
{
	size_t k;

	c->n_r = 0;
	if (!c->cap || !c->head_len || (!c->r_buf && !(c->r_buf = malloc(REVALIDATE_PER_PASS * c->head_len))))
		return;
	for (k = 0; k < REVALIDATE_PER_PASS && *n_req < cap; k++) {
		rec_pycache_entry *e = &c->v[c->reval_at++ & (c->cap - 1)];
		if (!e->addr)
			continue;
		c->r_addr[c->n_r] = e->addr;
		c->r_req[c->n_r] = *n_req;
		req[(*n_req)++] = (rec_procmem_req){ e->addr, c->r_buf + c->n_r * c->head_len, c->head_len, 0 };
		c->n_r++;
	}
}

void rec_pycache_revalidate_apply(rec_pycache *c, const rec_procmem_req *req)
{
	size_t i;

	for (i = 0; i < c->n_r; i++) {
		rec_pycache_entry *e = slot(c, c->r_addr[i]);
		const rec_procmem_req *r = &req[c->r_req[i]];
		/* unreadable (freed and unmapped) or changed: gone */
		if (e->addr && (!r->ok || !rec_py_code_head_same(c->off, r->buf, &e->c)))
			drop(c, e);
	}
	c->n_r = 0;
}
