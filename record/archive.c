/* archive.c — mapping table, sample hits (the binaries and the addresses in them), and writing
 * the embedded symbol archive (the ELF copies are made in archive_elf.c). */
#include "archive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"
#include "gt_util.h"

#if defined(__x86_64__)
#define REG_IP_BIT 8  /* PERF_REG_X86_IP */
#define REG_LR_BIT 64 /* none: the return address is on the stack */
#elif defined(__aarch64__)
#define REG_IP_BIT 32 /* PERF_REG_ARM64_PC */
#define REG_LR_BIT 30 /* PERF_REG_ARM64_LR */
#else
#define REG_IP_BIT 64
#define REG_LR_BIT 64
#endif

/* File offsets of the addresses samples used in one mapping: open addressing, 0 = empty (offset
 * 0 is the ELF header, never code). Past HITS_MAX the binary's unwind table is kept whole. */
#define HITS_MAX (1u << 20)
typedef struct hitset {
	uint64_t *v;
	size_t n, cap;
	int full;
} hitset;

typedef struct amap {
	uint32_t pid;
	uint32_t prot;
	uint64_t start, end, pgoff;
	uint32_t bid_len;
	uint8_t bid[GTT_BUILD_ID_MAX];
	char *path;
	int hit;
	hitset hits;
} amap;

static void hitset_add(hitset *h, uint64_t x)
{
	if (h->full || x == 0)
		return;
	if (2 * (h->n + 1) > h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		uint64_t *v = cap / 2 > HITS_MAX ? NULL : calloc(cap, sizeof(*v));
		if (!v) {
			h->full = 1; /* too many, or no memory: the whole table then */
			return;
		}
		for (size_t i = 0; i < h->cap; i++) {
			if (!h->v[i])
				continue;
			size_t j = (h->v[i] * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = h->v[i];
		}
		free(h->v);
		h->v = v;
		h->cap = cap;
	}
	size_t j = (x * 0x9e3779b97f4a7c15ull >> 20) & (h->cap - 1);
	for (; h->v[j]; j = (j + 1) & (h->cap - 1))
		if (h->v[j] == x)
			return;
	h->v[j] = x;
	h->n++;
}

typedef struct aproc {
	uint32_t pid;
	amap **v;               /* live mappings, sorted by start, not overlapping */
	size_t n, cap;
	uint64_t lo, hi;        /* bounds of all live mappings (fast reject of stack words) */
} aproc;

struct rec_archive {
	amap **all;             /* every mapping ever noted (owned) */
	size_t n_all, cap_all;
	aproc *procs;
	size_t n_procs, cap_procs;
	size_t last_proc;
};

rec_archive *rec_archive_create(void)
{
	return calloc(1, sizeof(rec_archive));
}

void rec_archive_destroy(rec_archive *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n_all; i++) {
		free(a->all[i]->path);
		free(a->all[i]->hits.v);
		free(a->all[i]);
	}
	for (i = 0; i < a->n_procs; i++)
		free(a->procs[i].v);
	free(a->all);
	free(a->procs);
	free(a);
}

static aproc *proc_get(rec_archive *a, uint32_t pid, int create)
{
	size_t i;

	if (a->last_proc < a->n_procs && a->procs[a->last_proc].pid == pid)
		return &a->procs[a->last_proc];
	for (i = 0; i < a->n_procs; i++) {
		if (a->procs[i].pid == pid) {
			a->last_proc = i;
			return &a->procs[i];
		}
	}
	if (!create)
		return NULL;
	if (GT_GROW(a->procs, a->cap_procs, a->n_procs + 1) < 0)
		return NULL;
	memset(&a->procs[a->n_procs], 0, sizeof(aproc));
	a->procs[a->n_procs].pid = pid;
	a->last_proc = a->n_procs;
	return &a->procs[a->n_procs++];
}

static void bounds(aproc *p)
{
	p->lo = p->n ? p->v[0]->start : 0;
	p->hi = p->n ? p->v[p->n - 1]->end : 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i]->end > p->hi)
			p->hi = p->v[i]->end;
}

/* Put an owned mapping into its process's live list, dropping what it overlaps. */
static void insert_live(rec_archive *a, amap *m)
{
	aproc *p = proc_get(a, m->pid, 1);
	size_t i, k;

	if (!p)
		return;
	for (i = 0, k = 0; i < p->n; i++)
		if (p->v[i]->end <= m->start || p->v[i]->start >= m->end)
			p->v[k++] = p->v[i];
	p->n = k;
	if (GT_GROW(p->v, p->cap, p->n + 1) < 0)
		return;
	for (i = p->n; i > 0 && p->v[i - 1]->start > m->start; i--)
		p->v[i] = p->v[i - 1];
	p->v[i] = m;
	p->n++;
	bounds(p);
}

static amap *new_map(rec_archive *a, const gtt_mapping *m)
{
	amap *x;

	if (GT_GROW(a->all, a->cap_all, a->n_all + 1) < 0)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->pid = m->pid;
	x->prot = m->prot;
	x->start = m->start;
	x->end = m->end;
	x->pgoff = m->pgoff;
	x->bid_len = m->build_id_len > GTT_BUILD_ID_MAX ? GTT_BUILD_ID_MAX : m->build_id_len;
	memcpy(x->bid, m->build_id, x->bid_len);
	x->path = strdup(m->path ? m->path : "");
	if (!x->path) {
		free(x);
		return NULL;
	}
	a->all[a->n_all++] = x;
	return x;
}

void rec_archive_add(rec_archive *a, const gtt_mapping *m)
{
	amap *x;

	if (!a || m->end <= m->start)
		return;
	x = new_map(a, m);
	if (x)
		insert_live(a, x);
}

void rec_archive_fork(rec_archive *a, uint32_t parent, uint32_t child, uint64_t time_ns, gtt_writer *w)
{
	aproc *p;
	amap **copy;
	size_t i, n;

	if (!a || parent == child || !(p = proc_get(a, parent, 0)) || p->n == 0)
		return;
	n = p->n;
	copy = malloc(n * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, p->v, n * sizeof(*copy)); /* p may move when the child's entry is added */
	for (i = 0; i < n; i++) {
		gtt_record r;
		gtt_mapping *m = &r.u.mapping;

		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_MAPPING;
		m->time_ns = time_ns;
		m->pid = child;
		m->prot = copy[i]->prot;
		m->start = copy[i]->start;
		m->end = copy[i]->end;
		m->pgoff = copy[i]->pgoff;
		m->build_id_len = copy[i]->bid_len;
		memcpy(m->build_id, copy[i]->bid, copy[i]->bid_len);
		m->path = copy[i]->path;
		rec_archive_add(a, m);
		if (w)
			gtt_write(w, &r);
	}
	free(copy);
}

void rec_archive_exec(rec_archive *a, uint32_t pid)
{
	aproc *p;

	if (a && (p = proc_get(a, pid, 0)) != NULL) {
		p->n = 0;
		bounds(p);
	}
}

static void hit(aproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	if (addr < p->lo || addr >= p->hi)
		return;
	while (lo < hi) { /* first mapping with start > addr */
		size_t mid = (lo + hi) / 2;
		if (p->v[mid]->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < p->v[lo - 1]->end) {
		amap *m = p->v[lo - 1];
		m->hit = 1;
		hitset_add(&m->hits, addr - m->start + m->pgoff);
	}
}

void rec_archive_hit_ips(rec_archive *a, uint32_t pid, const uint64_t *ips, uint32_t n)
{
	aproc *p;

	if (!a || !(p = proc_get(a, pid, 0)) || p->n == 0)
		return;
	for (uint32_t i = 0; i < n; i++)
		hit(p, ips[i]);
}

void rec_archive_hit_sample(rec_archive *a, const gtt_sample *s)
{
	aproc *p;
	uint32_t i;

	if (!a || !(p = proc_get(a, s->pid, 0)) || p->n == 0)
		return;
	for (i = 0; i < s->n_user; i++)
		hit(p, s->ips[s->n_kernel + i]);
	if ((s->flags & GTT_SAMPLE_REGS) && REG_IP_BIT < 64 && (s->regs_mask >> REG_IP_BIT & 1)) {
		uint32_t idx = (uint32_t)__builtin_popcountll(s->regs_mask & ((1ull << REG_IP_BIT) - 1));
		if (idx < s->n_regs)
			hit(p, s->regs[idx]);
	}
#if REG_LR_BIT < 64
	/* where the return address of the leaf sits in a register (aarch64's LR), its caller's
	 * unwind entry is needed too */
	if ((s->flags & GTT_SAMPLE_REGS) && (s->regs_mask >> REG_LR_BIT & 1)) {
		uint32_t idx = (uint32_t)__builtin_popcountll(s->regs_mask & ((1ull << REG_LR_BIT) - 1));
		if (idx < s->n_regs)
			hit(p, s->regs[idx]);
	}
#endif
	if (s->flags & GTT_SAMPLE_STACK) {
		for (i = 0; i + 8 <= s->stack_len; i += 8) {
			uint64_t word;
			memcpy(&word, s->stack + i, 8);
			if (word >= p->lo && word < p->hi)
				hit(p, word);
		}
	}
}

static int in_exec(aproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;

	if (addr < p->lo || addr >= p->hi)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->v[mid]->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < p->v[lo - 1]->end;
}

uint32_t rec_archive_stack_extent(rec_archive *a, uint32_t pid, const uint8_t *stack, uint32_t len,
                                  uint32_t slack_bytes)
{
	aproc *p;
	uint32_t off, keep;

	if (!a || !(p = proc_get(a, pid, 0)) || p->n == 0 || len < 8)
		return len;
	for (off = (len & ~7u) - 8;; off -= 8) {
		uint64_t word;
		memcpy(&word, stack + off, 8);
		if (in_exec(p, word))
			break;
		if (off == 0)
			return len < slack_bytes ? len : slack_bytes & ~7u;
	}
	keep = off + 8 + (slack_bytes & ~7u);
	return keep < len ? keep : len;
}

void rec_archive_get_stats(const rec_archive *a, rec_archive_stats *st)
{
	size_t i, j;

	memset(st, 0, sizeof(*st));
	if (!a)
		return;
	st->n_mappings = (uint32_t)a->n_all;
	for (i = 0; i < a->n_all; i++) {
		const amap *m = a->all[i];
		if (!m->hit)
			continue;
		for (j = 0; j < i; j++) /* count distinct hit binaries */
			if (a->all[j]->hit && a->all[j]->bid_len == m->bid_len &&
			    memcmp(a->all[j]->bid, m->bid, m->bid_len) == 0 &&
			    (m->bid_len || strcmp(a->all[j]->path, m->path) == 0))
				break;
		if (j == i)
			st->n_hit++;
	}
}

/* ---- writing the archive ---- */

static void note(gtt_writer *w, const char *text)
{
	gtt_write_note(w, GTT_SRC_PERF, gtt_now_ns(), 0, 0, text);
}

/* Open the file behind m whose build-id matches. NULL when none does. */
static rec_elf *open_matching(const amap *m)
{
	char paths[3][4200];
	int i;

	snprintf(paths[0], sizeof(paths[0]), "/proc/%u/map_files/%llx-%llx", m->pid,
	         (unsigned long long)m->start, (unsigned long long)m->end);
	snprintf(paths[1], sizeof(paths[1]), "/proc/%u/root%s", m->pid, m->path);
	snprintf(paths[2], sizeof(paths[2]), "%s", m->path);
	for (i = 0; i < 3; i++) {
		uint8_t id[GTT_BUILD_ID_MAX];
		rec_elf *e = rec_elf_open(paths[i]);
		if (!e)
			continue;
		if (rec_elf_build_id(e, id, sizeof(id)) == m->bid_len && memcmp(id, m->bid, m->bid_len) == 0)
			return e;
		rec_elf_close(e);
	}
	return NULL;
}

static int write_object(gtt_writer *w, const amap *m, const uint8_t *obj, size_t len)
{
	size_t off = 0;
	int rc = 0;

	do {
		gtt_record r;
		size_t piece = len - off > REC_ARCHIVE_PIECE_BYTES ? REC_ARCHIVE_PIECE_BYTES : len - off;

		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_ARCHIVE;
		r.u.archive.build_id_len = m->bid_len;
		memcpy(r.u.archive.build_id, m->bid, m->bid_len);
		r.u.archive.path = m->path;
		r.u.archive.kind = GTT_ARCHIVE_ELF;
		r.u.archive.total_bytes = len;
		r.u.archive.offset = off;
		r.u.archive.len = (uint32_t)piece;
		r.u.archive.data = obj + off;
		if ((rc = gtt_write(w, &r)) < 0)
			return rc;
		/* big archives: push pieces out as they are made, not all at the end */
		if ((rc = gtt_writer_flush(w)) < 0)
			return rc;
		off += piece;
	} while (off < len);
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* The addresses (file offsets) samples used in the binary of a->all[first], over every mapping
 * of it (all processes), sorted; NULL when unknown (too many, or no memory): keep the whole
 * unwind table then. */
static uint64_t *binary_hits(const rec_archive *a, size_t first, size_t *n)
{
	const amap *m0 = a->all[first];
	size_t total = 0, k = 0;
	*n = 0;
	for (size_t i = first; i < a->n_all; i++) {
		const amap *m = a->all[i];
		if (!m->hit || m->bid_len != m0->bid_len || memcmp(m->bid, m0->bid, m0->bid_len) != 0)
			continue;
		if (m->hits.full)
			return NULL;
		total += m->hits.n;
	}
	uint64_t *v = malloc((total ? total : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = first; i < a->n_all; i++) {
		const amap *m = a->all[i];
		if (!m->hit || m->bid_len != m0->bid_len || memcmp(m->bid, m0->bid, m0->bid_len) != 0)
			continue;
		for (size_t j = 0; j < m->hits.cap; j++)
			if (m->hits.v[j])
				v[k++] = m->hits.v[j];
	}
	qsort(v, k, sizeof(*v), cmp_u64);
	size_t u = 0;
	for (size_t j = 0; j < k; j++)
		if (!u || v[u - 1] != v[j])
			v[u++] = v[j];
	*n = u;
	return v;
}

int rec_archive_write(rec_archive *a, gtt_writer *w, rec_archive_stats *st)
{
	size_t i, j;
	int rc = 0;
	char text[4400];

	rec_archive_get_stats(a, st);
	if (!a)
		return 0;
	for (i = 0; i < a->n_all; i++) {
		const amap *m = a->all[i];
		rec_elf *e;
		const uint8_t *data;
		uint8_t *trimmed;
		size_t len, tlen = 0;

		if (!m->hit)
			continue;
		for (j = 0; j < i; j++)
			if (a->all[j]->hit && a->all[j]->bid_len == m->bid_len &&
			    memcmp(a->all[j]->bid, m->bid, m->bid_len) == 0 &&
			    (m->bid_len || strcmp(a->all[j]->path, m->path) == 0))
				break;
		if (j < i)
			continue; /* already handled */
		if (m->path[0] != '/') {
			if (strcmp(m->path, "[vdso]") != 0 && strcmp(m->path, "[vsyscall]") != 0 && m->path[0]) {
				snprintf(text, sizeof(text), "archive: %s not embedded (not a file)", m->path);
				note(w, text);
			}
			st->n_skipped++;
			continue;
		}
		if (m->bid_len == 0) {
			snprintf(text, sizeof(text), "archive: %s not embedded (no build-id)", m->path);
			note(w, text);
			st->n_skipped++;
			continue;
		}
		e = open_matching(m);
		if (!e) {
			snprintf(text, sizeof(text), "archive: %s not embedded (gone, or its build-id changed)", m->path);
			note(w, text);
			st->n_skipped++;
			continue;
		}
		data = rec_elf_data(e, &len);
		/* DWARF while the budget lasts, in the order binaries were first hit */
		uint64_t left = st->dwarf_bytes < REC_ARCHIVE_DWARF_TOTAL ? REC_ARCHIVE_DWARF_TOTAL - st->dwarf_bytes : 0;
		rec_trim_opts to = { .dwarf_max = left < REC_ARCHIVE_DWARF_ONE ? left : REC_ARCHIVE_DWARF_ONE };
		rec_trim_info ti;
		size_t n_hits = 0;
		uint64_t *hits = binary_hits(a, i, &n_hits), dwarf, dwarf_max = to.dwarf_max;
		to.hits = hits;
		to.n_hits = n_hits;
		trimmed = rec_archive_trim(data, len, &to, &tlen, &ti);
		free(hits);
		dwarf = ti.dwarf_bytes;
		if (trimmed && !ti.cfi_whole) {
			st->n_fde += ti.n_fde;
			st->n_fde_kept += ti.n_fde_kept;
		}
		if (trimmed && dwarf && dwarf <= dwarf_max) {
			st->dwarf_bytes += dwarf;
		} else if (trimmed && dwarf) {
			st->n_dwarf_left++;
			snprintf(text, sizeof(text), "archive: %s embedded without its DWARF (%.1f MiB, over the archive's "
			         "budget): inlined frames and source lines need its debug file at analysis (--symfs, "
			         "/usr/lib/debug)", m->path, (double)dwarf / 1048576.0);
			note(w, text);
		}
		rc = write_object(w, m, trimmed ? trimmed : data, trimmed ? tlen : len);
		st->n_embedded++;
		st->bytes += trimmed ? tlen : len;
		st->original_bytes += len;
		free(trimmed);
		rec_elf_close(e);
		if (rc < 0)
			return rc;
	}
	return 0;
}
