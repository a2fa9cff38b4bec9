/* model.c — the in-memory model's containers: growable arrays, string/frame/stack interning,
 * lookups, warnings and teardown (load.c fills it; see model.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_sum.h"
#include "gt_util.h"
#include "model.h"
#include "model_priv.h"
#include "sample_sum.h"

void *ana_vec_push_(void **v, size_t *n, size_t *cap, size_t elem)
{
	if (gt_grow(v, cap, *n + 1, elem) < 0)
		return NULL;
	void *e = (char *)*v + *n * elem;
	memset(e, 0, elem);
	(*n)++;
	return e;
}

const char *ana_class_name(int cls)
{
	switch (cls) {
	case ANA_CLASS_NONPY: return "not python";
	case ANA_CLASS_PY_GIL: return "python+GIL";
	case ANA_CLASS_NATIVE_GIL: return "native+GIL";
	case ANA_CLASS_NATIVE_NOGIL: return "native, no GIL";
	case ANA_CLASS_WAIT_GIL: return "waiting for GIL";
	}
	return "?";
}

int ana_gil_parse(const char *spec)
{
	static const struct { const char *word; int mask; } words[] = {
		{ "python", 1 << ANA_CLASS_PY_GIL },
		{ "native-gil", 1 << ANA_CLASS_NATIVE_GIL },
		{ "nogil", 1 << ANA_CLASS_NATIVE_NOGIL },
		{ "wait", 1 << ANA_CLASS_WAIT_GIL },
		{ "nopy", 1 << ANA_CLASS_NONPY },
		{ "held", 1 << ANA_CLASS_PY_GIL | 1 << ANA_CLASS_NATIVE_GIL },
		{ "released", 1 << ANA_CLASS_NATIVE_NOGIL | 1 << ANA_CLASS_WAIT_GIL },
		{ "native", 1 << ANA_CLASS_NATIVE_GIL | 1 << ANA_CLASS_NATIVE_NOGIL },
		{ "any", -1 },
		{ "all", -1 },
	};
	int mask = 0;
	const char *p = spec;
	if (!p || !*p)
		return -2;
	for (;;) {
		size_t len = strcspn(p, ",");
		size_t k = 0;
		while (k < sizeof(words) / sizeof(words[0]) && (strlen(words[k].word) != len || strncmp(words[k].word, p, len)))
			k++;
		if (k == sizeof(words) / sizeof(words[0]))
			return -2;
		mask = words[k].mask < 0 || mask < 0 ? -1 : mask | words[k].mask;
		if (!p[len])
			break;
		p += len + 1;
	}
	return mask == (1 << ANA_CLASS_COUNT) - 1 ? -1 : mask;
}

const char *ana_unwind_name(int u)
{
	switch (u) {
	case ANA_UNWIND_ROOT: return "reached its root";
	case ANA_UNWIND_STITCHED: return "completed from the frame-pointer callchain";
	case ANA_UNWIND_NO_USER: return "no user stack";
	case ANA_UNWIND_STACK_END: return "stack copy too short";
	case ANA_UNWIND_NO_CFI: return "no unwind info";
	case ANA_UNWIND_BAD_READ: return "register or memory not in sample";
	case ANA_UNWIND_DEPTH: return "too deep";
	case ANA_UNWIND_FP_END: return "frame-pointer chain broken";
	case ANA_UNWIND_IP_ONLY: return "no stack recorded";
	}
	return "?";
}

void ana_opts_init(ana_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kernel = 1;
}

/* ---- arena: bump allocation for strings and stack frame arrays, freed all at once ---- */

struct ana_arena_block {
	struct ana_arena_block *next;
	size_t used, cap;
	char data[];
};

void *ana_arena_alloc(ana_arena *a, size_t len)
{
	len = (len + 7) & ~(size_t)7;
	struct ana_arena_block *b = a->head;
	if (!b || b->cap - b->used < len) {
		size_t cap = len > (1u << 20) ? len : (1u << 20);
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += len;
	return p;
}

void ana_arena_free(ana_arena *a)
{
	struct ana_arena_block *b = a->head;
	while (b) {
		struct ana_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
}

/* ---- hashing ---- */

uint64_t ana_hash_bytes(const void *p, size_t len, uint64_t h)
{
	/* FNV-1a, then a final mix: short keys, good enough spread for open addressing. */
	const unsigned char *s = p;
	h ^= 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return ana_hash_u64(h);
}

uint64_t ana_hash_words(const void *p, size_t n_words, uint64_t h)
{
	/* a multiply-xorshift step per 32-bit word (callchains, frame id lists): several times
	 * faster than byte-wise FNV on these keys, and mixed by ana_hash_u64 at the end */
	const uint32_t *w = p;
	h ^= 0x9e3779b97f4a7c15ull * (n_words + 1);
	for (size_t i = 0; i < n_words; i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return ana_hash_u64(h);
}

/* Open-addressing table of u32 ids (0 = empty slot), each beside its 64-bit hash: a probe reads
 * one slot (hash and id in one cache line), not two arrays. */
static int table_grow(ana_idtable *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024;
	ana_idslot *slots = calloc(ncap, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].id)
			continue;
		size_t j = t->slots[i].hash & (ncap - 1);
		while (slots[j].id)
			j = (j + 1) & (ncap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = ncap;
	return 0;
}

uint32_t *ana_idtable_slot(ana_idtable *t, uint64_t hash, int (*eq)(uint32_t id, const void *key, void *ctx),
                           const void *key, void *ctx)
{
	if ((t->n + 1) * 4 > t->cap * 3 && table_grow(t) < 0)
		return NULL;
	size_t j = hash & (t->cap - 1);
	ana_idslot *s;
	while ((s = &t->slots[j])->id) {
		if (s->hash == hash && eq(s->id - 1, key, ctx))
			return &s->id;
		j = (j + 1) & (t->cap - 1);
	}
	s->hash = hash;
	return &s->id;
}

void ana_idtable_clear(ana_idtable *t, size_t n_next)
{
	/* keep the slots when they suit the next filling (no growth, not 8x too many) */
	if (t->cap && (n_next + 1) * 4 <= t->cap * 3 && t->cap <= 8 * (n_next + 1024)) {
		memset(t->slots, 0, t->cap * sizeof(*t->slots));
		t->n = 0;
		return;
	}
	ana_idtable_free(t);
	size_t cap = 1024;
	while ((n_next + 1) * 4 > cap * 3)
		cap *= 2;
	if ((t->slots = calloc(cap, sizeof(*t->slots))) != NULL)
		t->cap = cap; /* else it grows as it fills, as a new one does */
}

void ana_idtable_free(ana_idtable *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- private state ---- */

ana_priv *ana_priv_get(ana_model *m)
{
	if (!m->priv)
		m->priv = calloc(1, sizeof(ana_priv));
	return m->priv;
}

static int str_eq(uint32_t id, const void *key, void *ctx)
{
	ana_priv *p = ctx;
	return strcmp(p->strs.v[id], key) == 0;
}

const char *ana_intern_str(ana_model *m, const char *s)
{
	if (!s)
		return NULL;
	ana_priv *p = ana_priv_get(m);
	if (!p)
		return NULL;
	size_t len = strlen(s);
	uint32_t *slot = ana_idtable_slot(&p->str_table, ana_hash_bytes(s, len, 0), str_eq, s, p);
	if (!slot)
		return NULL;
	if (*slot)
		return p->strs.v[*slot - 1];
	char *copy = ana_arena_alloc(&p->arena, len + 1);
	const char **e = copy ? ana_vec_push(p->strs) : NULL;
	if (!e)
		return NULL;
	memcpy(copy, s, len + 1);
	*e = copy;
	*slot = (uint32_t)p->strs.n;
	p->str_table.n++;
	return copy;
}

static uint64_t frame_hash(const ana_frame *f)
{
	uint64_t h = ana_hash_u64((uint64_t)(uintptr_t)f->name ^ ((uint64_t)f->kind << 56) ^
	                          ((uint64_t)f->inlined << 48));
	h = ana_hash_u64(h ^ (uint64_t)(uintptr_t)f->module);
	h = ana_hash_u64(h ^ (uint64_t)(uintptr_t)f->file ^ (uint64_t)(uint32_t)f->line);
	return h;
}

static int frame_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_frame *a = &((ana_model *)ctx)->frames.v[id], *b = key;
	return a->name == b->name && a->module == b->module && a->file == b->file &&
	       a->line == b->line && a->kind == b->kind && a->inlined == b->inlined;
}

uint32_t ana_frame_intern(ana_model *m, const ana_frame *f)
{
	ana_priv *p = ana_priv_get(m);
	if (!p)
		return ANA_NO_ID;
	ana_frame k = *f;
	k.name = ana_intern_str(m, f->name ? f->name : "[unknown]");
	k.module = f->module ? ana_intern_str(m, f->module) : NULL;
	k.file = f->file ? ana_intern_str(m, f->file) : NULL;
	if (!k.name || (f->module && !k.module) || (f->file && !k.file))
		return ANA_NO_ID;
	uint32_t *slot = ana_idtable_slot(&p->frame_table, frame_hash(&k), frame_eq, &k, m);
	if (!slot)
		return ANA_NO_ID;
	if (*slot)
		return *slot - 1;
	ana_frame *e = ana_vec_push(m->frames);
	if (!e)
		return ANA_NO_ID;
	*e = k;
	*slot = (uint32_t)m->frames.n;
	p->frame_table.n++;
	return (uint32_t)m->frames.n - 1;
}

struct stack_key { const uint32_t *frames; uint32_t n; };

static int stack_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_stack *a = &((ana_model *)ctx)->stacks.v[id];
	const struct stack_key *b = key;
	return a->n == b->n && memcmp(a->frames, b->frames, b->n * sizeof(uint32_t)) == 0;
}

uint32_t ana_stack_intern(ana_model *m, const uint32_t *frames, uint32_t n)
{
	ana_priv *p = ana_priv_get(m);
	if (!p)
		return ANA_NO_ID;
	struct stack_key k = { frames, n };
	uint32_t *slot = ana_idtable_slot(&p->stack_table, ana_hash_words(frames, n, n),
	                                  stack_eq, &k, m);
	if (!slot)
		return ANA_NO_ID;
	if (*slot)
		return *slot - 1;
	uint32_t *copy = ana_arena_alloc(&p->arena, (n ? n : 1) * sizeof(uint32_t));
	ana_stack *e = copy ? ana_vec_push(m->stacks) : NULL;
	if (!e)
		return ANA_NO_ID;
	memcpy(copy, frames, n * sizeof(uint32_t));
	e->n = n;
	e->frames = copy;
	*slot = (uint32_t)m->stacks.n;
	p->stack_table.n++;
	return (uint32_t)m->stacks.n - 1;
}

struct pyf_key { const gtt_py_frame *v; uint32_t n; };
_Static_assert(sizeof(gtt_py_frame) == 16, "gtt_py_frame hashed and compared as bytes: no padding");

static int pyf_eq(uint32_t id, const void *key, void *ctx)
{
	const struct ana_pyfs *a = &((const ana_priv *)ctx)->pyfs.v[id];
	const struct pyf_key *b = key;
	return a->n == b->n && memcmp(a->v, b->v, b->n * sizeof(gtt_py_frame)) == 0;
}

const gtt_py_frame *ana_pyframes_intern(ana_model *m, const gtt_py_frame *frames, uint32_t n)
{
	ana_priv *p = ana_priv_get(m);
	if (!p || !n)
		return NULL;
	struct pyf_key k = { frames, n };
	/* gtt_py_frame has no padding: its bytes are its fields */
	uint32_t *slot = ana_idtable_slot(&p->pyf_table, ana_hash_bytes(frames, n * sizeof(*frames), n), pyf_eq, &k, p);
	if (!slot)
		return NULL;
	if (*slot)
		return p->pyfs.v[*slot - 1].v;
	gtt_py_frame *copy = ana_arena_alloc(&p->arena, n * sizeof(*copy));
	struct ana_pyfs *e = copy ? ana_vec_push(p->pyfs) : NULL;
	if (!e)
		return NULL;
	memcpy(copy, frames, n * sizeof(*copy));
	e->v = copy;
	e->n = n;
	*slot = (uint32_t)p->pyfs.n;
	p->pyf_table.n++;
	return copy;
}

/* ---- warnings ---- */

void ana_warn(ana_model *m, const char *fmt, ...)
{
	ana_priv *p = ana_priv_get(m);
	if (!p)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char *copy = strdup(buf);
	char **e = copy ? ana_vec_push(p->warnings) : NULL;
	if (!e) {
		free(copy);
		return;
	}
	*e = copy;
}

const char *const *ana_model_warnings(const ana_model *m, size_t *n)
{
	const ana_priv *p = m ? m->priv : NULL;
	*n = p ? p->warnings.n : 0;
	return p ? (const char *const *)p->warnings.v : NULL;
}

/* ---- lookups ---- */

const char *ana_meta_get(const ana_model *m, const char *key)
{
	/* The last value wins: a recorder may refine a key (e.g. the command after exec). */
	for (size_t i = m->meta.n; i-- > 0;)
		if (strcmp(m->meta.v[i].key, key) == 0)
			return m->meta.v[i].value;
	return NULL;
}

const char *ana_string_get(const ana_model *m, uint32_t pid, uint32_t id)
{
	/* strings are sorted by (pid, id) after loading */
	size_t lo = 0, hi = m->strings.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const ana_string *s = &m->strings.v[mid];
		if (s->pid < pid || (s->pid == pid && s->id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->strings.n && m->strings.v[lo].pid == pid && m->strings.v[lo].id == id)
		return m->strings.v[lo].text;
	return "?";
}

ana_thread *ana_thread_find(const ana_model *m, uint32_t pid, uint32_t tid)
{
	size_t lo = 0, hi = m->threads.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const ana_thread *t = &m->threads.v[mid];
		if (t->pid < pid || (t->pid == pid && t->tid < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->threads.n && m->threads.v[lo].pid == pid && m->threads.v[lo].tid == tid)
		return &m->threads.v[lo];
	return NULL;
}

/* ---- thread names ---- */

/* A Python name that only repeats the OS name (CPython 3.14 sets comm from it, cut to 15
 * bytes) adds nothing. */
static int same_name(const char *comm, const char *py)
{
	size_t n = strlen(comm);
	return strcmp(comm, py) == 0 || (n == 15 && strncmp(comm, py, n) == 0);
}

int ana_thread_names(ana_model *m)
{
	for (size_t i = 0; i < m->pythreads.n; i++) {
		const ana_pythread *p = &m->pythreads.v[i];
		ana_thread *t = ana_thread_find(m, p->pid, p->tid);
		char *n;
		/* the last record wins (records come in time order per thread) */
		if (!t || !p->name || !p->name[0] || !(n = strdup(p->name)))
			continue;
		free(t->py_name);
		t->py_name = n;
	}
	for (size_t i = 0; i < m->threads.n; i++) {
		ana_thread *t = &m->threads.v[i];
		if (!t->comm && t->name && !(t->comm = strdup(t->name)))
			return GTT_ENOMEM;
		if (!t->py_name || !t->comm || same_name(t->comm, t->py_name))
			continue;
		size_t len = strlen(t->py_name) + strlen(t->comm) + 4;
		char *n = malloc(len);
		if (!n)
			return GTT_ENOMEM;
		snprintf(n, len, "%s (%s)", t->py_name, t->comm);
		free(t->name);
		t->name = n;
	}
	return 0;
}

/* ---- teardown ---- */

void ana_model_free(ana_model *m)
{
	if (!m)
		return;
	ana_gpu_sum_free(m->gpu);
	ana_ssum_free(m->ssum);
	free(m->path);
	for (size_t i = 0; i < m->meta.n; i++) {
		free(m->meta.v[i].key);
		free(m->meta.v[i].value);
	}
	free(m->meta.v);
	free(m->processes.v);
	for (size_t i = 0; i < m->threads.n; i++) {
		free(m->threads.v[i].name);
		free(m->threads.v[i].comm);
		free(m->threads.v[i].py_name);
	}
	free(m->threads.v);
	for (size_t i = 0; i < m->pythreads.n; i++)
		free(m->pythreads.v[i].name);
	free(m->pythreads.v);
	free(m->mappings.v);
	free(m->samples.v);
	free(m->frames.v);
	free(m->stacks.v);
	free(m->switches.v);
	free(m->thread_cpu.v);
	free(m->captures.v);
	free(m->captured.v);
	free(m->gates.v);
	for (size_t i = 0; i < m->swgroups.n; i++)
		free(m->swgroups.v[i].closed.v);
	free(m->swgroups.v);
	free(m->health.v);
	free(m->ticks.v);
	for (size_t i = 0; i < m->pycodes.n; i++) {
		free(m->pycodes.v[i].name);
		free(m->pycodes.v[i].qualname);
		free(m->pycodes.v[i].filename);
	}
	free(m->pycodes.v);
	free(m->pystacks.v);
	free(m->gil.v);
	for (size_t i = 0; i < m->strings.n; i++)
		free(m->strings.v[i].text);
	free(m->strings.v);
	free(m->cuda_devices.v);
	free(m->kernels.v);
	free(m->memcpys.v);
	free(m->memsets.v);
	free(m->syncs.v);
	free(m->apis.v);
	free(m->allocs.v);
	free(m->nvtx.v);
	free(m->counters.v);
	free(m->callstacks.v);
	free(m->truncs.v);
	ana_priv *p = m->priv;
	if (p) {
		ana_idtable_free(&p->str_table);
		ana_idtable_free(&p->frame_table);
		ana_idtable_free(&p->stack_table);
		ana_idtable_free(&p->dem_table);
		ana_idtable_free(&p->pyf_table);
		free(p->pyfs.v);
		free(p->dems.v);
		free(p->strs.v);
		for (size_t i = 0; i < p->warnings.n; i++)
			free(p->warnings.v[i]);
		free(p->warnings.v);
		for (size_t i = 0; i < p->missing.n; i++)
			free(p->missing.v[i]);
		free(p->missing.v);
		free(p->comms);
		free(p->parents);
		ana_arena_free(&p->arena);
		free(p);
	}
	free(m);
}
