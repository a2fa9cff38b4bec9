/* gtt_compact.c — compact encodings of records inside packed blocks (format 1.1): times as
 * deltas, (pid, tid) as a per-block task number, integers as varints, sample callchains as ids
 * of interned chains. Encoder and decoder run the same per-kind field tables, so the two cannot
 * drift apart; kinds without a table keep their 1.0 payload as the body. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt_priv.h"

/* Field operations of the tables */
enum {
	OP_END,
	OP_T0,      /* u64 primary time: zigzag delta from the last one of this tag in the block */
	OP_DUR,     /* u64 end time at a, start at b: zigzag(end - start) */
	OP_TASK,    /* u32 pid at a, u32 tid at b: a task number of the block (or a new one) */
	OP_PID,     /* u32 pid at a: a task number with tid 0 */
	OP_V32,     /* u32 varint */
	OP_V64,     /* u64 varint */
	OP_V64OPT,  /* u64 varint appended to a body later: a body that ends before it reads 0 */
	OP_Z32,     /* i32 zigzag varint */
	OP_CORR,    /* u32 correlation id: zigzag delta from the last one of this tag */
	OP_F64,     /* 8 bytes, little-endian binary64 */
	OP_CPUKIND, /* switch: u32 cpu at a, u32 kind at b, as one varint cpu << 2 | kind */
	OP_PERIOD,  /* sample period: zigzag delta from the last sample's */
	OP_SAMPLE,  /* sample: callchain, registers, stack copy */
	OP_PYFRAMES,/* py_stack: n, then n x (code_id, line, flags) */
	OP_CHAIN,   /* callchain definition: id, n_kernel, n_user, ips */
};
typedef struct fld {
	uint8_t op;
	uint16_t a, b;
} fld;

#define O(T, f) ((uint16_t)offsetof(T, f))
#define T0(T, f) { OP_T0, O(T, f), 0 }
#define DUR(T) { OP_DUR, O(T, end_ns), O(T, start_ns) }
#define TASK(T) { OP_TASK, O(T, pid), O(T, tid) }
#define PID(T) { OP_PID, O(T, pid), 0 }
#define V32(T, f) { OP_V32, O(T, f), 0 }
#define V64(T, f) { OP_V64, O(T, f), 0 }
#define Z32(T, f) { OP_Z32, O(T, f), 0 }
#define CORR(T) { OP_CORR, O(T, correlation), 0 }
#define END { OP_END, 0, 0 }

static const fld f_sample[] = { T0(gtt_sample, time_ns), TASK(gtt_sample), V32(gtt_sample, cpu),
	V32(gtt_sample, flags), { OP_PERIOD, O(gtt_sample, period_ns), 0 }, { OP_SAMPLE, 0, 0 }, END };
static const fld f_switch[] = { T0(gtt_switch, time_ns), TASK(gtt_switch),
	{ OP_CPUKIND, O(gtt_switch, cpu), O(gtt_switch, kind) }, END };
static const fld f_thread_cpu[] = { T0(gtt_thread_cpu, time_ns), TASK(gtt_thread_cpu),
	V64(gtt_thread_cpu, utime_ns), V64(gtt_thread_cpu, stime_ns), V64(gtt_thread_cpu, nvcsw),
	V64(gtt_thread_cpu, nivcsw), V32(gtt_thread_cpu, state), END };
static const fld f_py_stack[] = { T0(gtt_py_stack, time_ns), TASK(gtt_py_stack),
	V64(gtt_py_stack, thread_id), V32(gtt_py_stack, flags), { OP_PYFRAMES, 0, 0 }, END };
static const fld f_gil[] = { T0(gtt_gil, time_ns), PID(gtt_gil), V32(gtt_gil, holder_tid),
	V32(gtt_gil, locked), V32(gtt_gil, flags), V64(gtt_gil, switches),
	{ OP_V64OPT, O(gtt_gil, prev_ns), 0 }, END };
static const fld f_kernel[] = { T0(gtt_cuda_kernel, start_ns), DUR(gtt_cuda_kernel), PID(gtt_cuda_kernel),
	V32(gtt_cuda_kernel, device), V32(gtt_cuda_kernel, context), V32(gtt_cuda_kernel, stream),
	CORR(gtt_cuda_kernel), V32(gtt_cuda_kernel, grid[0]), V32(gtt_cuda_kernel, grid[1]),
	V32(gtt_cuda_kernel, grid[2]), V32(gtt_cuda_kernel, block[0]), V32(gtt_cuda_kernel, block[1]),
	V32(gtt_cuda_kernel, block[2]), V32(gtt_cuda_kernel, shared_bytes), V32(gtt_cuda_kernel, registers),
	V32(gtt_cuda_kernel, name_id), END };
static const fld f_memcpy[] = { T0(gtt_cuda_memcpy, start_ns), DUR(gtt_cuda_memcpy), PID(gtt_cuda_memcpy),
	V32(gtt_cuda_memcpy, device), V32(gtt_cuda_memcpy, context), V32(gtt_cuda_memcpy, stream),
	CORR(gtt_cuda_memcpy), V32(gtt_cuda_memcpy, kind), V32(gtt_cuda_memcpy, flags),
	V64(gtt_cuda_memcpy, bytes), END };
static const fld f_memset[] = { T0(gtt_cuda_memset, start_ns), DUR(gtt_cuda_memset), PID(gtt_cuda_memset),
	V32(gtt_cuda_memset, device), V32(gtt_cuda_memset, context), V32(gtt_cuda_memset, stream),
	CORR(gtt_cuda_memset), V32(gtt_cuda_memset, value), V64(gtt_cuda_memset, bytes), END };
static const fld f_sync[] = { T0(gtt_cuda_sync, start_ns), DUR(gtt_cuda_sync), PID(gtt_cuda_sync),
	V32(gtt_cuda_sync, context), V32(gtt_cuda_sync, stream), CORR(gtt_cuda_sync), V32(gtt_cuda_sync, kind), END };
static const fld f_api[] = { T0(gtt_cuda_api, start_ns), DUR(gtt_cuda_api), TASK(gtt_cuda_api),
	CORR(gtt_cuda_api), V32(gtt_cuda_api, domain), V32(gtt_cuda_api, cbid), Z32(gtt_cuda_api, status),
	V32(gtt_cuda_api, name_id), END };
static const fld f_alloc[] = { T0(gtt_cuda_alloc, time_ns), PID(gtt_cuda_alloc), V32(gtt_cuda_alloc, device),
	V32(gtt_cuda_alloc, context), V32(gtt_cuda_alloc, stream), CORR(gtt_cuda_alloc), V32(gtt_cuda_alloc, op),
	V32(gtt_cuda_alloc, mem_kind), V64(gtt_cuda_alloc, address), V64(gtt_cuda_alloc, bytes), END };
static const fld f_nvtx[] = { T0(gtt_nvtx, start_ns), DUR(gtt_nvtx), TASK(gtt_nvtx), V32(gtt_nvtx, kind),
	V32(gtt_nvtx, domain_id), V32(gtt_nvtx, name_id), V32(gtt_nvtx, color), V32(gtt_nvtx, depth), END };
static const fld f_counter[] = { T0(gtt_counter, time_ns), PID(gtt_counter), V32(gtt_counter, name_id),
	{ OP_F64, O(gtt_counter, value), 0 }, END };
static const fld f_callchain[] = { { OP_CHAIN, 0, 0 }, END };

/* Each tag's table and the size of its record struct (what decoding clears), by tag: one load
 * per record instead of a switch. */
static const struct kind {
	const fld *f;
	uint16_t size;
} kinds[] = {
#define K(TAG, F, T) [TAG] = { F, (uint16_t)sizeof(T) }
	K(GTT_REC_SAMPLE, f_sample, gtt_sample),
	K(GTT_REC_SWITCH, f_switch, gtt_switch),
	K(GTT_REC_THREAD_CPU, f_thread_cpu, gtt_thread_cpu),
	K(GTT_REC_PY_STACK, f_py_stack, gtt_py_stack),
	K(GTT_REC_GIL, f_gil, gtt_gil),
	K(GTT_REC_CALLCHAIN, f_callchain, gtt_callchain),
	K(GTT_REC_CUDA_KERNEL, f_kernel, gtt_cuda_kernel),
	K(GTT_REC_CUDA_MEMCPY, f_memcpy, gtt_cuda_memcpy),
	K(GTT_REC_CUDA_MEMSET, f_memset, gtt_cuda_memset),
	K(GTT_REC_CUDA_SYNC, f_sync, gtt_cuda_sync),
	K(GTT_REC_CUDA_API, f_api, gtt_cuda_api),
	K(GTT_REC_CUDA_ALLOC, f_alloc, gtt_cuda_alloc),
	K(GTT_REC_NVTX, f_nvtx, gtt_nvtx),
	K(GTT_REC_COUNTER, f_counter, gtt_counter),
#undef K
};

static inline const fld *table(uint32_t tag)
{
	return tag < sizeof(kinds) / sizeof(kinds[0]) ? kinds[tag].f : NULL;
}

int gtt_compact_has(uint32_t tag)
{
	return table(tag) != NULL;
}

int gtt_is_defs_tag(uint32_t tag)
{
	switch (tag) {
	case GTT_REC_META: case GTT_REC_PROCESS: case GTT_REC_THREAD: case GTT_REC_MAPPING:
	case GTT_REC_HEALTH: case GTT_REC_TICKS: case GTT_REC_PY_CODE: case GTT_REC_STRING:
	case GTT_REC_CALLCHAIN: case GTT_REC_CUDA_DEVICE: case GTT_REC_ARCHIVE: case GTT_REC_END:
	case GTT_REC_CAPTURE: case GTT_REC_CLOCK: case GTT_REC_PY_THREAD: case GTT_REC_SWITCH_GATE:
		return 1;
	default:
		return 0;
	}
}

#define CUDA_KINDS                                                                                        \
	(GTT_KIND_BIT(GTT_REC_CUDA_KERNEL) | GTT_KIND_BIT(GTT_REC_CUDA_MEMCPY) | GTT_KIND_BIT(GTT_REC_CUDA_MEMSET) | \
	 GTT_KIND_BIT(GTT_REC_CUDA_SYNC) | GTT_KIND_BIT(GTT_REC_CUDA_API))

uint64_t gtt_stream_kinds(uint32_t stream)
{
	switch (stream) {
	case GTT_STREAM_SAMPLES: return GTT_KIND_BIT(GTT_REC_SAMPLE);
	case GTT_STREAM_SWITCHES: return GTT_KIND_BIT(GTT_REC_SWITCH);
	case GTT_STREAM_CUDA: return CUDA_KINDS;
	default: return 0; /* data, definitions, or a newer writer's stream: any kind */
	}
}

uint32_t gtt_stream_of(uint32_t tag)
{
	if (gtt_is_defs_tag(tag))
		return GTT_STREAM_DEFS;
	/* the kinds that are most of a trace's records and bytes, each read by passes that want
	 * little else (docs/FORMAT.md, "Streams") */
	if (tag == GTT_REC_SAMPLE)
		return GTT_STREAM_SAMPLES;
	if (tag == GTT_REC_SWITCH)
		return GTT_STREAM_SWITCHES;
	if (tag < 64 && (CUDA_KINDS >> tag & 1))
		return GTT_STREAM_CUDA;
	return GTT_STREAM_DATA;
}

int gtt_rec_times(const gtt_record *rec, uint64_t *t0, uint64_t *t1)
{
	const gtt_record *r = rec;
	switch (rec->tag) {
	case GTT_REC_PROCESS: *t0 = *t1 = r->u.process.time_ns; return 1;
	case GTT_REC_THREAD: *t0 = *t1 = r->u.thread.time_ns; return 1;
	case GTT_REC_MAPPING: *t0 = *t1 = r->u.mapping.time_ns; return 1;
	case GTT_REC_SAMPLE: *t0 = *t1 = r->u.sample.time_ns; return 1;
	case GTT_REC_SWITCH: *t0 = *t1 = r->u.sw.time_ns; return 1;
	case GTT_REC_THREAD_CPU: *t0 = *t1 = r->u.thread_cpu.time_ns; return 1;
	case GTT_REC_HEALTH: *t0 = r->u.health.time_ns; *t1 = r->u.health.end_ns; break;
	case GTT_REC_TICKS: *t0 = r->u.ticks.start_ns; *t1 = r->u.ticks.end_ns; break;
	case GTT_REC_PY_STACK: *t0 = *t1 = r->u.py_stack.time_ns; return 1;
	case GTT_REC_GIL: *t0 = *t1 = r->u.gil.time_ns; return 1;
	case GTT_REC_PY_THREAD: *t0 = *t1 = r->u.py_thread.time_ns; return 1;
	case GTT_REC_CUDA_KERNEL: *t0 = r->u.kernel.start_ns; *t1 = r->u.kernel.end_ns; break;
	case GTT_REC_CUDA_MEMCPY: *t0 = r->u.memcpy.start_ns; *t1 = r->u.memcpy.end_ns; break;
	case GTT_REC_CUDA_MEMSET: *t0 = r->u.memset.start_ns; *t1 = r->u.memset.end_ns; break;
	case GTT_REC_CUDA_SYNC: *t0 = r->u.sync.start_ns; *t1 = r->u.sync.end_ns; break;
	case GTT_REC_CUDA_API: *t0 = r->u.api.start_ns; *t1 = r->u.api.end_ns; break;
	case GTT_REC_CUDA_ALLOC: *t0 = *t1 = r->u.alloc.time_ns; return 1;
	case GTT_REC_NVTX: *t0 = r->u.nvtx.start_ns; *t1 = r->u.nvtx.end_ns; break;
	case GTT_REC_COUNTER: *t0 = *t1 = r->u.counter.time_ns; return 1;
	case GTT_REC_CUDA_CALLSTACK: *t0 = *t1 = r->u.callstack.time_ns; return 1;
	case GTT_REC_END: *t0 = *t1 = r->u.end.time_ns; return 1;
	case GTT_REC_CAPTURE: *t0 = *t1 = r->u.capture.time_ns; return 1;
	case GTT_REC_SWITCH_GATE: *t0 = *t1 = r->u.gate.time_ns; return 1;
	case GTT_REC_CLOCK: *t0 = *t1 = r->u.clock.mono_ns; return 1;
	default: return 0;
	}
	if (*t1 < *t0) { /* an interval recorded backwards still covers both ends */
		uint64_t t = *t0;
		*t0 = *t1;
		*t1 = t;
	}
	return 1;
}

static void shift1(uint64_t *t, int64_t delta_ns)
{
	/* 0 is "no time" (a ring window's definitions); a time shifted below 1 ns stays 1 */
	if (*t == 0)
		return;
	if (delta_ns < 0 && (uint64_t)(-delta_ns) >= *t)
		*t = 1;
	else
		*t += (uint64_t)delta_ns;
}

void gtt_rec_shift(gtt_record *rec, int64_t delta_ns)
{
	gtt_record *r = rec;
	switch (rec->tag) {
	case GTT_REC_PROCESS: shift1(&r->u.process.time_ns, delta_ns); break;
	case GTT_REC_THREAD: shift1(&r->u.thread.time_ns, delta_ns); break;
	case GTT_REC_MAPPING: shift1(&r->u.mapping.time_ns, delta_ns); break;
	case GTT_REC_SAMPLE: shift1(&r->u.sample.time_ns, delta_ns); break;
	case GTT_REC_SWITCH: shift1(&r->u.sw.time_ns, delta_ns); break;
	case GTT_REC_THREAD_CPU: shift1(&r->u.thread_cpu.time_ns, delta_ns); break;
	case GTT_REC_HEALTH: shift1(&r->u.health.time_ns, delta_ns); shift1(&r->u.health.end_ns, delta_ns); break;
	case GTT_REC_TICKS: shift1(&r->u.ticks.start_ns, delta_ns); shift1(&r->u.ticks.end_ns, delta_ns); break;
	case GTT_REC_PY_STACK: shift1(&r->u.py_stack.time_ns, delta_ns); break;
	case GTT_REC_GIL: shift1(&r->u.gil.time_ns, delta_ns); break;
	case GTT_REC_CUDA_KERNEL: shift1(&r->u.kernel.start_ns, delta_ns); shift1(&r->u.kernel.end_ns, delta_ns); break;
	case GTT_REC_CUDA_MEMCPY: shift1(&r->u.memcpy.start_ns, delta_ns); shift1(&r->u.memcpy.end_ns, delta_ns); break;
	case GTT_REC_CUDA_MEMSET: shift1(&r->u.memset.start_ns, delta_ns); shift1(&r->u.memset.end_ns, delta_ns); break;
	case GTT_REC_CUDA_SYNC: shift1(&r->u.sync.start_ns, delta_ns); shift1(&r->u.sync.end_ns, delta_ns); break;
	case GTT_REC_CUDA_API: shift1(&r->u.api.start_ns, delta_ns); shift1(&r->u.api.end_ns, delta_ns); break;
	case GTT_REC_CUDA_ALLOC: shift1(&r->u.alloc.time_ns, delta_ns); break;
	case GTT_REC_NVTX: shift1(&r->u.nvtx.start_ns, delta_ns); shift1(&r->u.nvtx.end_ns, delta_ns); break;
	case GTT_REC_COUNTER: shift1(&r->u.counter.time_ns, delta_ns); break;
	case GTT_REC_CUDA_CALLSTACK: shift1(&r->u.callstack.time_ns, delta_ns); break;
	case GTT_REC_END: shift1(&r->u.end.time_ns, delta_ns); break;
	case GTT_REC_CAPTURE: shift1(&r->u.capture.time_ns, delta_ns); break;
	case GTT_REC_SWITCH_GATE: shift1(&r->u.gate.time_ns, delta_ns); break;
	case GTT_REC_CLOCK: shift1(&r->u.clock.mono_ns, delta_ns); break;
	default: break;
	}
}

void gtt_blkstate_reset(gtt_blkstate *st)
{
	memset(st->prev_t, 0, sizeof(st->prev_t));
	memset(st->prev_corr, 0, sizeof(st->prev_corr));
	st->prev_period = 0;
	st->n_tasks = 0;
	memset(st->task_hash, 0, sizeof(st->task_hash));
	st->side_pos = 0;
}

/* ---- encoder ---- */

static inline void put_uv(enc *e, uint64_t v)
{
	if (enc_reserve(e, GTT_VARINT_MAX) == 0)
		e->n += gtt_uv_put(e->p + e->n, v);
}

static inline uint32_t ld32(const void *u, uint16_t off)
{
	uint32_t v;
	memcpy(&v, (const uint8_t *)u + off, 4);
	return v;
}
static inline uint64_t ld64(const void *u, uint16_t off)
{
	uint64_t v;
	memcpy(&v, (const uint8_t *)u + off, 8);
	return v;
}

/* The task number of (pid, tid) in this block: an existing one, or 0 followed by the pair (and
 * the pair gets the next number while the table has room). */
static void put_task(enc *e, gtt_blkstate *st, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 51) & (2 * GTT_BLK_TASKS - 1);
	for (;; h = (h + 1) & (2 * GTT_BLK_TASKS - 1)) {
		uint16_t k = st->task_hash[h];
		if (!k)
			break;
		if (st->tasks[k - 1] == key) {
			put_uv(e, k);
			return;
		}
	}
	put_uv(e, 0);
	put_uv(e, pid);
	put_uv(e, tid);
	if (st->n_tasks < GTT_BLK_TASKS) {
		st->tasks[st->n_tasks++] = key;
		st->task_hash[h] = (uint16_t)st->n_tasks;
	}
}

static void put_ips(enc *e, const uint64_t *ips, uint32_t n)
{
	uint64_t prev = 0;
	if (enc_reserve(e, (size_t)n * GTT_VARINT_MAX) != 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		e->n += gtt_uv_put(e->p + e->n, gtt_zz(ips[i] - prev));
		prev = ips[i];
	}
}

static void put_sample_tail(enc *e, gtt_blkstate *st, const gtt_sample *s, uint32_t chain_id)
{
	/* 1.2's samples stream: the registers and the stack copy (all but their counts) go to the
	 * block's side section, so that a reader that does not unwind never expands them */
	enc *u = st->out_side ? st->out_side : e;
	uint32_t n = s->n_kernel + s->n_user;
	/* chain reference: 0 none, 1 written here, id + 1 an interned chain */
	if (chain_id) {
		put_uv(e, (uint64_t)chain_id + 1);
	} else if (n == 0) {
		put_uv(e, 0);
	} else {
		put_uv(e, 1);
		put_uv(e, s->n_kernel);
		put_uv(e, s->n_user);
		put_ips(e, s->ips, n);
	}
	if (s->flags & GTT_SAMPLE_REGS) {
		put_uv(e, s->regs_abi);
		put_uv(e, s->regs_mask);
		put_uv(e, s->n_regs);
		if (enc_reserve(u, (size_t)s->n_regs * 8) == 0)
			for (uint32_t i = 0; i < s->n_regs; i++, u->n += 8)
				le64(u->p + u->n, s->regs[i]);
	}
	if (s->flags & GTT_SAMPLE_STACK) {
		put_uv(e, s->stack_len);
		if (s->stack_len && enc_reserve(u, s->stack_len) == 0) {
			memcpy(u->p + u->n, s->stack, s->stack_len);
			u->n += s->stack_len;
		}
	}
	if (u != e && u->err && !e->err)
		e->err = u->err; /* the record failed: its encoder says so */
}

static int encode_body(enc *e, gtt_blkstate *st, const gtt_record *rec, uint32_t chain_id)
{
	const void *u = &rec->u;
	uint32_t tag = rec->tag;
	for (const fld *f = table(tag); f->op != OP_END; f++) {
		switch (f->op) {
		case OP_T0: {
			uint64_t t = ld64(u, f->a);
			put_uv(e, gtt_zz(t - st->prev_t[tag]));
			st->prev_t[tag] = t;
			break;
		}
		case OP_DUR: put_uv(e, gtt_zz(ld64(u, f->a) - ld64(u, f->b))); break;
		case OP_TASK: put_task(e, st, ld32(u, f->a), ld32(u, f->b)); break;
		case OP_PID: put_task(e, st, ld32(u, f->a), 0); break;
		case OP_V32: put_uv(e, ld32(u, f->a)); break;
		case OP_V64: case OP_V64OPT: put_uv(e, ld64(u, f->a)); break;
		case OP_Z32: put_uv(e, gtt_zz((uint64_t)(int64_t)(int32_t)ld32(u, f->a))); break;
		case OP_CORR: {
			uint64_t c = ld32(u, f->a);
			put_uv(e, gtt_zz(c - st->prev_corr[tag]));
			st->prev_corr[tag] = c;
			break;
		}
		case OP_F64:
			if (enc_reserve(e, 8) == 0) {
				le64(e->p + e->n, ld64(u, f->a));
				e->n += 8;
			}
			break;
		case OP_CPUKIND: {
			uint64_t cpu = ld32(u, f->a), kind = ld32(u, f->b);
			if (kind < 3) {
				put_uv(e, cpu << 2 | kind);
			} else {
				put_uv(e, cpu << 2 | 3);
				put_uv(e, kind);
			}
			break;
		}
		case OP_PERIOD: {
			uint64_t p = ld64(u, f->a);
			put_uv(e, gtt_zz(p - st->prev_period));
			st->prev_period = p;
			break;
		}
		case OP_SAMPLE: put_sample_tail(e, st, &rec->u.sample, chain_id); break;
		case OP_PYFRAMES: {
			const gtt_py_stack *p = &rec->u.py_stack;
			put_uv(e, p->n_frames);
			for (uint32_t i = 0; i < p->n_frames; i++) {
				put_uv(e, p->frames[i].code_id);
				put_uv(e, gtt_zz((uint64_t)(int64_t)p->frames[i].line));
				put_uv(e, p->frames[i].flags);
			}
			break;
		}
		case OP_CHAIN: {
			const gtt_callchain *c = &rec->u.callchain;
			put_uv(e, c->id);
			put_uv(e, c->n_kernel);
			put_uv(e, c->n_user);
			put_ips(e, c->ips, c->n_kernel + c->n_user);
			break;
		}
		}
	}
	return e->err;
}

int gtt_compact_encode(enc *e, gtt_blkstate *st, const gtt_record *rec, uint32_t chain_id)
{
	size_t at = e->n;
	uint8_t tagbuf[GTT_VARINT_MAX];
	size_t ntag = gtt_uv_put(tagbuf, rec->tag);
	/* the body goes behind room for the longest length a block allows (4 varint bytes:
	 * 2^28 > GTT_PACKED_MAX_RAW), then moves down to close the gap */
	if (enc_reserve(e, ntag + 4) != 0)
		return e->err;
	memcpy(e->p + at, tagbuf, ntag);
	e->n = at + ntag + 4;
	int rc = table(rec->tag) ? encode_body(e, st, rec, chain_id) : gtt_encode(e, rec);
	if (rc) {
		e->n = at;
		return rc;
	}
	size_t body = e->n - (at + ntag + 4);
	if (body >= (1u << 28)) {
		e->n = at;
		return GTT_EINVAL;
	}
	uint8_t lenbuf[GTT_VARINT_MAX];
	size_t nlen = gtt_uv_put(lenbuf, body);
	uint8_t *b = e->p + at + ntag;
	if (nlen < 4)
		memmove(b + nlen, b + 4, body);
	memcpy(b, lenbuf, nlen);
	e->n = at + ntag + nlen + body;
	return 0;
}

/* ---- decoder ---- */

typedef struct cur {
	const uint8_t *p, *end;
	int err;
	uint8_t *scratch;
	size_t scap, sused;
} cur;

static inline uint64_t get_uv(cur *c)
{
	uint64_t v = 0;
	if (!c->err && gtt_uv_get(&c->p, c->end, &v) != 0)
		c->err = GTT_EINVAL;
	return c->err ? 0 : v;
}
static inline uint32_t get_v32(cur *c)
{
	uint64_t v = get_uv(c);
	if (v > UINT32_MAX)
		c->err = GTT_EINVAL;
	return (uint32_t)v;
}
static void *scratch_take(cur *c, size_t n)
{
	size_t at = (c->sused + 7) & ~(size_t)7;
	if (c->err || n > c->scap || at > c->scap - n) {
		c->err = c->err ? c->err : GTT_EINVAL;
		return NULL;
	}
	c->sused = at + n;
	return c->scratch + at;
}
static inline void st32(void *u, uint16_t off, uint32_t v) { memcpy((uint8_t *)u + off, &v, 4); }
static inline void st64(void *u, uint16_t off, uint64_t v) { memcpy((uint8_t *)u + off, &v, 8); }

static inline __attribute__((always_inline)) void get_task(cur *c, gtt_blkstate *st, void *u, uint16_t pid_off,
                                                        int has_tid, uint16_t tid_off)
{
	uint64_t k = get_uv(c), key;
	if (c->err)
		return;
	if (k == 0) {
		uint32_t pid = get_v32(c), tid = get_v32(c);
		if (c->err)
			return;
		key = (uint64_t)pid << 32 | tid;
		if (st->n_tasks < GTT_BLK_TASKS)
			st->tasks[st->n_tasks++] = key;
	} else if (k <= st->n_tasks) {
		key = st->tasks[k - 1];
	} else {
		c->err = GTT_EINVAL;
		return;
	}
	st32(u, pid_off, (uint32_t)(key >> 32));
	if (has_tid)
		st32(u, tid_off, (uint32_t)key);
}

/* n zigzag-delta ips into scratch; NULL for n == 0 */
static const uint64_t *get_ips(cur *c, uint32_t n)
{
	/* each ip takes at least one byte: a count beyond the bytes left is a lie */
	if (c->err || n > (size_t)(c->end - c->p)) {
		c->err = c->err ? c->err : GTT_EINVAL;
		return NULL;
	}
	if (n == 0)
		return NULL;
	uint64_t *v = scratch_take(c, (size_t)n * 8), prev = 0;
	for (uint32_t i = 0; v && i < n; i++)
		v[i] = prev = prev + gtt_unzz(get_uv(c));
	return v;
}

/* n bytes of a sample's registers or stack copy: in the body, or (codec 2) the next n of the
 * block's side section. NULL with c->err when they are not there; NULL without an error when
 * the side section is not expanded (the reader wants samples bare). */
static const uint8_t *unwind_take(cur *c, gtt_blkstate *st, size_t n)
{
	const uint8_t *p;
	if (!st->side_apart) {
		if (c->err || n > (size_t)(c->end - c->p)) {
			c->err = c->err ? c->err : GTT_EINVAL;
			return NULL;
		}
		p = c->p;
		c->p += n;
		return p;
	}
	if (c->err || n > st->side_len - st->side_pos || (!st->side && !st->bare)) {
		c->err = c->err ? c->err : GTT_EINVAL;
		return NULL;
	}
	p = st->side ? st->side + st->side_pos : NULL;
	st->side_pos += (uint32_t)n;
	return p;
}

static void get_sample_tail(cur *c, gtt_blkstate *st, gtt_chaintab *chains, gtt_sample *s)
{
	uint64_t ref = get_uv(c);
	if (ref == 1) {
		s->n_kernel = get_v32(c);
		s->n_user = get_v32(c);
		uint64_t n = (uint64_t)s->n_kernel + s->n_user;
		if (n > UINT32_MAX)
			c->err = GTT_EINVAL;
		s->ips = get_ips(c, (uint32_t)n);
	} else if (ref > 1) {
		uint64_t id = ref - 1;
		if (c->err || id >= chains->cap || chains->v[id].off == 0) {
			c->err = c->err ? c->err : GTT_EINVAL; /* refers to a chain never defined */
			return;
		}
		const struct gtt_chainent *ce = &chains->v[id];
		s->chain_id = (uint32_t)id;
		s->n_kernel = ce->n_kernel;
		s->n_user = ce->n_user;
		s->ips = chains->ips + ce->off;
	}
	if (s->flags & GTT_SAMPLE_REGS) {
		s->regs_abi = get_v32(c);
		s->regs_mask = get_uv(c);
		s->n_regs = get_v32(c);
		if (c->err || s->n_regs > 64) {
			c->err = c->err ? c->err : GTT_EINVAL;
			return;
		}
		const uint8_t *src = unwind_take(c, st, (size_t)s->n_regs * 8);
		if (c->err)
			return;
		if (st->bare) {
			s->n_regs = 0;
		} else {
			uint64_t *regs = scratch_take(c, (size_t)s->n_regs * 8 + 8);
			for (uint32_t i = 0; regs && i < s->n_regs; i++)
				regs[i] = rd64(src + 8 * (size_t)i);
			s->regs = regs;
		}
	}
	if (s->flags & GTT_SAMPLE_STACK) {
		s->stack_len = get_v32(c);
		s->stack = c->err ? NULL : unwind_take(c, st, s->stack_len);
		if (st->bare || c->err) {
			s->stack = NULL;
			s->stack_len = 0;
		}
	}
}

static void get_pyframes(cur *c, gtt_py_stack *p)
{
	p->n_frames = get_v32(c);
	/* a frame takes at least three bytes */
	if (c->err || p->n_frames > (size_t)(c->end - c->p) / 3) {
		c->err = c->err ? c->err : GTT_EINVAL;
		return;
	}
	gtt_py_frame *f = scratch_take(c, (size_t)p->n_frames * sizeof(*f) + 8);
	for (uint32_t i = 0; f && i < p->n_frames; i++) {
		f[i].code_id = get_uv(c);
		f[i].line = (int32_t)gtt_unzz(get_uv(c));
		f[i].flags = get_v32(c);
	}
	p->frames = f;
}

static void get_chain(cur *c, gtt_chaintab *chains, gtt_callchain *ch)
{
	ch->id = get_v32(c);
	ch->n_kernel = get_v32(c);
	ch->n_user = get_v32(c);
	uint64_t n = (uint64_t)ch->n_kernel + ch->n_user;
	if (c->err || ch->id == 0 || ch->id > GTT_CHAIN_ID_MAX || n > UINT32_MAX) {
		c->err = c->err ? c->err : GTT_EINVAL;
		return;
	}
	ch->ips = get_ips(c, (uint32_t)n);
	if (!c->err) {
		int rc = gtt_chaintab_put(chains, ch->id, ch->n_kernel, ch->n_user, ch->ips);
		if (rc)
			c->err = rc;
	}
}

static int decode_body(cur *c, gtt_blkstate *st, gtt_chaintab *chains, uint32_t tag, gtt_record *rec)
{
	void *u = &rec->u;
	for (const fld *f = table(tag); f->op != OP_END && !c->err; f++) {
		switch (f->op) {
		case OP_T0: {
			uint64_t t = st->prev_t[tag] + gtt_unzz(get_uv(c));
			st64(u, f->a, t);
			st->prev_t[tag] = t;
			break;
		}
		case OP_DUR: {
			uint64_t start;
			memcpy(&start, (uint8_t *)u + f->b, 8);
			st64(u, f->a, start + gtt_unzz(get_uv(c)));
			break;
		}
		case OP_TASK: get_task(c, st, u, f->a, 1, f->b); break;
		case OP_PID: get_task(c, st, u, f->a, 0, 0); break;
		case OP_V32: st32(u, f->a, get_v32(c)); break;
		case OP_V64: st64(u, f->a, get_uv(c)); break;
		case OP_V64OPT: st64(u, f->a, c->p < c->end ? get_uv(c) : 0); break;
		case OP_Z32: {
			uint64_t v = gtt_unzz(get_uv(c));
			if ((int64_t)v < INT32_MIN || (int64_t)v > INT32_MAX)
				c->err = GTT_EINVAL;
			st32(u, f->a, (uint32_t)(int32_t)(int64_t)v);
			break;
		}
		case OP_CORR: {
			uint64_t v = st->prev_corr[tag] + gtt_unzz(get_uv(c));
			if (v > UINT32_MAX)
				c->err = GTT_EINVAL;
			st32(u, f->a, (uint32_t)v);
			st->prev_corr[tag] = v;
			break;
		}
		case OP_F64:
			if (c->end - c->p < 8) {
				c->err = GTT_EINVAL;
				break;
			}
			st64(u, f->a, rd64(c->p));
			c->p += 8;
			break;
		case OP_CPUKIND: {
			uint64_t v = get_uv(c), kind = v & 3;
			if (kind == 3)
				kind = get_v32(c);
			if (v >> 2 > UINT32_MAX)
				c->err = GTT_EINVAL;
			st32(u, f->a, (uint32_t)(v >> 2));
			st32(u, f->b, (uint32_t)kind);
			break;
		}
		case OP_PERIOD: {
			uint64_t p = st->prev_period + gtt_unzz(get_uv(c));
			st64(u, f->a, p);
			st->prev_period = p;
			break;
		}
		case OP_SAMPLE: get_sample_tail(c, st, chains, &rec->u.sample); break;
		case OP_PYFRAMES: get_pyframes(c, &rec->u.py_stack); break;
		case OP_CHAIN: get_chain(c, chains, &rec->u.callchain); break;
		}
	}
	/* bytes after the known fields belong to fields a newer minor version appended */
	return c->err;
}

int gtt_compact_decode(gtt_blkstate *st, gtt_chaintab *chains, uint32_t tag, const uint8_t *body,
                       uint32_t len, gtt_record *rec, void **scratch, size_t *scratch_cap)
{
	int rc;
	if (!table(tag)) {
		rc = gtt_decode(tag, body, len, rec, scratch, scratch_cap);
		rec->flags = GTT_RECF_PACKED;
		return rc;
	}
	/* a decoded byte becomes at most 8 (a one-byte varint into a u64; a 3-byte Python frame
	 * into 16), plus alignment, plus a sample's 64 registers when they come from the side */
	size_t want = (size_t)len * 8 + 64 + 65 * 8;
	if (*scratch_cap < want) {
		void *s = realloc(*scratch, want);
		if (!s)
			return GTT_ENOMEM;
		*scratch = s;
		*scratch_cap = want;
	}
	/* only the kind's own struct: the rest of the union is no part of this record (a union
	 * member read must match the tag), and clearing all of it cost more than decoding a switch */
	memset(&rec->u, 0, kinds[tag].size);
	rec->tag = tag;
	rec->len = len;
	rec->raw = body;
	rec->flags = GTT_RECF_PACKED;
	cur c = { .p = body, .end = body + len, .scratch = *scratch, .scap = *scratch_cap };
	return decode_body(&c, st, chains, tag, rec);
}

int gtt_compact_skip(gtt_blkstate *st, uint32_t tag, const uint8_t *body, uint32_t len)
{
	const fld *f = table(tag);
	if (!f)
		return 0; /* a 1.0 payload: no block state */
	uint8_t u[sizeof(((gtt_record *)0)->u)];
	cur c = { .p = body, .end = body + len };
	/* every table has its task (if any) after its times: read up to it, as decode_body would */
	for (; f->op != OP_END && !c.err; f++) {
		switch (f->op) {
		case OP_T0:
		case OP_DUR: get_uv(&c); break;
		case OP_TASK: get_task(&c, st, u, f->a, 1, f->b); return c.err;
		case OP_PID: get_task(&c, st, u, f->a, 0, 0); return c.err;
		default: return GTT_EINVAL; /* a table this skip does not know: the caller decodes */
		}
	}
	return c.err;
}

/* ---- the reader's callchain table ---- */

int gtt_chaintab_put(gtt_chaintab *t, uint32_t id, uint32_t n_kernel, uint32_t n_user, const uint64_t *ips)
{
	size_t n = (size_t)n_kernel + n_user;
	if (id == 0 || id > GTT_CHAIN_ID_MAX)
		return GTT_EINVAL;
	if (id >= t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		while (cap <= id)
			cap *= 2;
		void *v = realloc(t->v, cap * sizeof(*t->v));
		if (!v)
			return GTT_ENOMEM;
		memset((struct gtt_chainent *)v + t->cap, 0, (cap - t->cap) * sizeof(*t->v));
		t->v = v;
		t->cap = cap;
	}
	struct gtt_chainent *e = &t->v[id];
	/* a repeated definition (a flight recorder writes them again) costs nothing */
	if (e->off && e->n_kernel == n_kernel && e->n_user == n_user &&
	    (n == 0 || memcmp(t->ips + e->off, ips, n * 8) == 0))
		return 0;
	/* word 0 stays unused, so that off == 0 means "not defined" for an empty chain */
	size_t need = t->n_ips + n + (t->n_ips == 0);
	if (need > GTT_CHAIN_WORDS_MAX)
		return GTT_EINVAL;
	if (GT_GROW(t->ips, t->cap_ips, need) != 0)
		return GTT_ENOMEM;
	if (t->n_ips == 0)
		t->ips[t->n_ips++] = 0;
	if (n)
		memcpy(t->ips + t->n_ips, ips, n * 8);
	e->off = t->n_ips;
	e->n_kernel = n_kernel;
	e->n_user = n_user;
	t->n_ips += n;
	return 0;
}

void gtt_chaintab_free(gtt_chaintab *t)
{
	free(t->v);
	free(t->ips);
	memset(t, 0, sizeof(*t));
}
