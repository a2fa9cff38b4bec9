/* dump_py.c — thread states, frame chains, the GIL and code objects of a CPython target, read
 * once for a dump. */
#include "dump_py.h"
#include "gt_util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_INTERPS 16
#define MAX_TSTATES 65536

typedef struct tstate_ent {
	uint64_t addr, thread_id, native_tid;
} tstate_ent;

typedef struct code_ent {
	uint64_t addr;           /* 0 = empty */
	int ok;                  /* 1 read, 0 unreadable */
	uint32_t order;          /* index in the reading order */
	rec_pycode c;
} code_ent;

struct rec_dpy {
	rec_procmem *mem;
	rec_py_found f;
	uint64_t gil_addr;
	tstate_ent *ts;
	size_t n_ts;
	code_ent *codes;         /* open addressing, power-of-two capacity */
	size_t codes_cap, codes_n;
	uint32_t *order;         /* slots of readable codes in reading order */
	size_t n_order;
};

rec_dpy *rec_dpy_open(rec_procmem *mem, const rec_py_found *f)
{
	rec_dpy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->mem = mem;
	p->f = *f;
	p->gil_addr = rec_py_gil_addr(mem, &p->f.off, p->f.runtime);
	return p;
}

void rec_dpy_close(rec_dpy *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->codes_cap; i++)
		rec_pycode_clear(&p->codes[i].c);
	free(p->codes);
	free(p->order);
	free(p->ts);
	free(p);
}

int rec_dpy_read_threads(rec_dpy *p)
{
	const rec_pyoff *o = &p->f.off;
	uint64_t interp = 0;
	size_t cap = 0;
	int k;

	p->n_ts = 0;
	if (rec_procmem_read(p->mem, p->f.runtime + (uint64_t)o->rt_interp_head, &interp, 8) < 0)
		return -1;
	for (k = 0; interp && k < MAX_INTERPS; k++) {
		uint64_t ts = 0;
		size_t guard = 0;

		if (rec_procmem_read(p->mem, interp + (uint64_t)o->is_threads_head, &ts, 8) < 0)
			break;
		while (ts && guard++ < MAX_TSTATES) {
			rec_pythread t;
			if (rec_py_read_thread(p->mem, o, ts, &t) < 0)
				break;
			if (GT_GROW(p->ts, cap, p->n_ts + 1) < 0)
				return (int)p->n_ts;
			p->ts[p->n_ts++] = (tstate_ent){ ts, t.thread_id, t.native_tid };
			if (t.next == ts)
				break;
			ts = t.next;
		}
		if (rec_procmem_read(p->mem, interp + (uint64_t)o->is_next, &interp, 8) < 0)
			break;
	}
	if (!p->gil_addr)
		p->gil_addr = rec_py_gil_addr(p->mem, o, p->f.runtime);
	return (int)p->n_ts;
}

uint64_t rec_dpy_tstate_of(const rec_dpy *p, pid_t tid, uint64_t fs_base)
{
	size_t i;

	for (i = 0; i < p->n_ts; i++)
		if (p->ts[i].native_tid ? p->ts[i].native_tid == (uint64_t)tid
		                        : (fs_base && p->ts[i].thread_id == fs_base))
			return p->ts[i].addr;
	return 0;
}

int rec_dpy_gil(rec_dpy *p, uint64_t *holder)
{
	rec_pygil g;

	*holder = 0;
	if (!p->gil_addr || rec_py_read_gil(p->mem, &p->f.off, p->gil_addr, &g) < 0 || g.locked < 0)
		return -1;
	*holder = g.holder;
	return g.locked == 1;
}

int rec_dpy_read_stack(rec_dpy *p, uint64_t tstate, rec_dpy_stack *out)
{
	rec_pythread t;
	rec_pyframe_raw *raw;
	uint64_t holder;
	int n, g;

	memset(out, 0, sizeof(*out));
	out->gil = -1;
	if (rec_py_read_thread(p->mem, &p->f.off, tstate, &t) < 0)
		return -1;
	g = rec_dpy_gil(p, &holder);
	if (g >= 0)
		out->gil = g == 1 && holder == tstate;
	if (!t.frame) {
		out->idle = 1;
		return 0;
	}
	raw = malloc(REC_PY_MAX_FRAMES * sizeof(*raw));
	if (!raw)
		return -1;
	rec_procmem_cache_clear(p->mem);
	n = rec_py_read_frames(p->mem, &p->f.off, t.frame, raw, REC_PY_MAX_FRAMES, &out->torn);
	if (n <= 0) {
		free(raw);
		out->torn = 1;
		return 0;
	}
	out->frames = realloc(raw, (size_t)n * sizeof(*raw));
	if (!out->frames)
		out->frames = raw;
	out->n = n;
	return 0;
}

void rec_dpy_stack_free(rec_dpy_stack *s)
{
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* ---- code objects ---- */

static code_ent *slot(rec_dpy *p, uint64_t addr)
{
	size_t mask = p->codes_cap - 1, i = (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull) & mask;

	while (p->codes[i].addr && p->codes[i].addr != addr)
		i = (i + 1) & mask;
	return &p->codes[i];
}

static int grow(rec_dpy *p)
{
	code_ent *old = p->codes;
	size_t old_cap = p->codes_cap, i;
	uint32_t *ord = realloc(p->order, (old_cap ? old_cap * 2 : 256) * sizeof(*ord));

	if (!ord)
		return -1;
	p->order = ord;
	p->codes_cap = old_cap ? old_cap * 2 : 256;
	p->codes = calloc(p->codes_cap, sizeof(*p->codes));
	if (!p->codes) {
		p->codes = old;
		p->codes_cap = old_cap;
		return -1;
	}
	for (i = 0; i < old_cap; i++)
		if (old[i].addr)
			*slot(p, old[i].addr) = old[i];
	/* slots moved: rebuild the order */
	for (i = 0; i < p->codes_cap; i++)
		if (p->codes[i].addr && p->codes[i].ok)
			p->order[p->codes[i].order] = (uint32_t)i;
	free(old);
	return 0;
}

const rec_pycode *rec_dpy_code(rec_dpy *p, uint64_t addr)
{
	code_ent *e;

	if (!addr)
		return NULL;
	if ((p->codes_n + 1) * 2 > p->codes_cap && grow(p) < 0)
		return NULL;
	e = slot(p, addr);
	if (e->addr)
		return e->ok ? &e->c : NULL;
	e->addr = addr;
	p->codes_n++;
	e->ok = rec_py_read_code(p->mem, &p->f.off, addr, p->f.code_type, &e->c) == 0;
	if (e->ok) {
		e->order = (uint32_t)p->n_order;
		p->order[p->n_order++] = (uint32_t)(e - p->codes);
	}
	return e->ok ? &e->c : NULL;
}

int rec_dpy_line(const rec_dpy *p, const rec_pycode *c, int64_t index)
{
	return rec_py_line(p->f.off.line_format, c->linetable, c->linetable_len, c->firstlineno, index);
}

size_t rec_dpy_n_codes(const rec_dpy *p)
{
	return p->n_order;
}

const rec_pycode *rec_dpy_code_at(const rec_dpy *p, size_t i, uint64_t *addr)
{
	const code_ent *e;

	if (i >= p->n_order)
		return NULL;
	e = &p->codes[p->order[i]];
	*addr = e->addr;
	return &e->c;
}
