/* gtt_codec.c — record payloads of the .gtt format: encoding each record kind field by field,
 * and decoding payloads (bounds-checked, never trusting a length) into gtt_record. */
#include <stdlib.h>
#include <string.h>

#include "gtt_priv.h"

_Static_assert(sizeof(double) == 8, "double must be 64-bit IEEE");
_Static_assert(sizeof(gtt_py_frame) == 16, "gtt_py_frame layout");

int gtt_enc_grow(enc *e, size_t more)
{
	if (e->err)
		return -1;
	size_t cap = e->cap ? e->cap : 256;
	while (cap < e->n + more)
		cap *= 2;
	uint8_t *p = realloc(e->p, cap);
	if (!p) {
		e->err = GTT_ENOMEM;
		return -1;
	}
	e->p = p;
	e->cap = cap;
	return 0;
}

static inline __attribute__((always_inline)) void put_u8(enc *e, uint8_t v)
{
	if (enc_reserve(e, 1) == 0)
		e->p[e->n++] = v;
}
static inline __attribute__((always_inline)) void put_u32(enc *e, uint32_t v)
{
	if (enc_reserve(e, 4) == 0) {
		le32(e->p + e->n, v);
		e->n += 4;
	}
}
static inline void put_i32(enc *e, int32_t v) { put_u32(e, (uint32_t)v); }
static inline __attribute__((always_inline)) void put_u64(enc *e, uint64_t v)
{
	put_u32(e, (uint32_t)v);
	put_u32(e, (uint32_t)(v >> 32));
}
static void put_f64(enc *e, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	put_u64(e, v);
}
static void put_bytes(enc *e, const void *b, size_t n)
{
	if (n && enc_reserve(e, n) == 0) {
		memcpy(e->p + e->n, b, n);
		e->n += n;
	}
}
static void put_str(enc *e, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > GTT_MAX_STRING)
		n = GTT_MAX_STRING; /* names longer than 1 MiB are cut, never refused */
	put_u32(e, (uint32_t)n);
	put_bytes(e, s, n);
}
static void put_build_id(enc *e, const uint8_t *id, uint32_t len)
{
	if (len > GTT_BUILD_ID_MAX)
		len = GTT_BUILD_ID_MAX;
	put_u8(e, (uint8_t)len);
	put_bytes(e, id, len);
}
static void put_u64s(enc *e, const uint64_t *v, uint32_t n)
{
	if (enc_reserve(e, (size_t)n * 8) != 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		le32(e->p + e->n, (uint32_t)v[i]);
		le32(e->p + e->n + 4, (uint32_t)(v[i] >> 32));
		e->n += 8;
	}
}

/* Encode rec's payload (by tag) into e. */
int gtt_encode(enc *e, const gtt_record *rec)
{
	const void *u = &rec->u;
	switch (rec->tag) {
	case GTT_REC_META: {
		const gtt_meta *r = u;
		put_str(e, r->key);
		put_str(e, r->value);
		break;
	}
	case GTT_REC_PROCESS: {
		const gtt_process *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->ppid);
		put_u32(e, r->event); put_i32(e, r->status); put_str(e, r->comm);
		break;
	}
	case GTT_REC_THREAD: {
		const gtt_thread *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u32(e, r->event); put_str(e, r->name);
		break;
	}
	case GTT_REC_MAPPING: {
		const gtt_mapping *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->prot);
		put_u64(e, r->start); put_u64(e, r->end); put_u64(e, r->pgoff);
		put_build_id(e, r->build_id, r->build_id_len); put_str(e, r->path);
		break;
	}
	case GTT_REC_SAMPLE: {
		const gtt_sample *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u32(e, r->cpu); put_u32(e, r->flags); put_u64(e, r->period_ns);
		put_u32(e, r->n_kernel); put_u32(e, r->n_user);
		put_u64s(e, r->ips, r->n_kernel + r->n_user);
		if (r->flags & GTT_SAMPLE_REGS) {
			put_u32(e, r->regs_abi); put_u64(e, r->regs_mask); put_u32(e, r->n_regs);
			put_u64s(e, r->regs, r->n_regs);
		}
		if (r->flags & GTT_SAMPLE_STACK) {
			put_u32(e, r->stack_len);
			put_bytes(e, r->stack, r->stack_len);
		}
		break;
	}
	case GTT_REC_SWITCH: {
		const gtt_switch *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u32(e, r->cpu); put_u32(e, r->kind);
		break;
	}
	case GTT_REC_THREAD_CPU: {
		const gtt_thread_cpu *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u64(e, r->utime_ns); put_u64(e, r->stime_ns);
		put_u64(e, r->nvcsw); put_u64(e, r->nivcsw); put_u32(e, r->state);
		break;
	}
	case GTT_REC_HEALTH: {
		const gtt_health *r = u;
		put_u64(e, r->time_ns); put_u64(e, r->end_ns); put_u32(e, r->source);
		put_u32(e, r->kind); put_u32(e, r->pid); put_u32(e, r->tid); put_u64(e, r->count);
		for (int i = 0; i < 4; i++)
			put_u64(e, r->value[i]);
		put_str(e, r->text);
		break;
	}
	case GTT_REC_TICKS: {
		const gtt_ticks *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->source);
		put_u32(e, r->flags); put_u64(e, r->period_ns); put_u64(e, r->intended);
		put_u64(e, r->done); put_u64(e, r->late_p50_ns); put_u64(e, r->late_p99_ns);
		put_u64(e, r->late_max_ns);
		break;
	}
	case GTT_REC_PY_CODE: {
		const gtt_py_code *r = u;
		put_u32(e, r->pid); put_u64(e, r->code_id); put_i32(e, r->first_line);
		put_str(e, r->name); put_str(e, r->qualname); put_str(e, r->filename);
		break;
	}
	case GTT_REC_PY_STACK: {
		const gtt_py_stack *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u64(e, r->thread_id); put_u32(e, r->flags); put_u32(e, r->n_frames);
		for (uint32_t i = 0; i < r->n_frames; i++) {
			put_u64(e, r->frames[i].code_id);
			put_i32(e, r->frames[i].line);
			put_u32(e, r->frames[i].flags);
		}
		break;
	}
	case GTT_REC_GIL: {
		const gtt_gil *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->holder_tid);
		put_u32(e, r->locked); put_u32(e, r->flags); put_u64(e, r->switches);
		put_u64(e, r->prev_ns);
		break;
	}
	case GTT_REC_PY_THREAD: {
		const gtt_py_thread *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u64(e, r->ident); put_str(e, r->name);
		break;
	}
	case GTT_REC_STRING: {
		const gtt_string *r = u;
		put_u32(e, r->pid); put_u32(e, r->id); put_str(e, r->text);
		break;
	}
	case GTT_REC_CUDA_DEVICE: {
		const gtt_cuda_device *r = u;
		put_u32(e, r->pid); put_u32(e, r->device); put_u32(e, r->cc_major);
		put_u32(e, r->cc_minor); put_u32(e, r->sm_count); put_u64(e, r->global_mem_bytes);
		put_str(e, r->name); put_str(e, r->uuid);
		break;
	}
	case GTT_REC_CUDA_KERNEL: {
		const gtt_cuda_kernel *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->device); put_u32(e, r->context); put_u32(e, r->stream);
		put_u32(e, r->correlation);
		for (int i = 0; i < 3; i++)
			put_u32(e, r->grid[i]);
		for (int i = 0; i < 3; i++)
			put_u32(e, r->block[i]);
		put_u32(e, r->shared_bytes); put_u32(e, r->registers); put_u32(e, r->name_id);
		break;
	}
	case GTT_REC_CUDA_MEMCPY: {
		const gtt_cuda_memcpy *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->device); put_u32(e, r->context); put_u32(e, r->stream);
		put_u32(e, r->correlation); put_u32(e, r->kind); put_u32(e, r->flags);
		put_u64(e, r->bytes);
		break;
	}
	case GTT_REC_CUDA_MEMSET: {
		const gtt_cuda_memset *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->device); put_u32(e, r->context); put_u32(e, r->stream);
		put_u32(e, r->correlation); put_u32(e, r->value); put_u64(e, r->bytes);
		break;
	}
	case GTT_REC_CUDA_SYNC: {
		const gtt_cuda_sync *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->context); put_u32(e, r->stream); put_u32(e, r->correlation);
		put_u32(e, r->kind);
		break;
	}
	case GTT_REC_CUDA_API: {
		const gtt_cuda_api *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->tid); put_u32(e, r->correlation); put_u32(e, r->domain);
		put_u32(e, r->cbid); put_i32(e, r->status); put_u32(e, r->name_id);
		break;
	}
	case GTT_REC_CUDA_ALLOC: {
		const gtt_cuda_alloc *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->device);
		put_u32(e, r->context); put_u32(e, r->stream); put_u32(e, r->correlation);
		put_u32(e, r->op); put_u32(e, r->mem_kind); put_u64(e, r->address);
		put_u64(e, r->bytes);
		break;
	}
	case GTT_REC_NVTX: {
		const gtt_nvtx *r = u;
		put_u64(e, r->start_ns); put_u64(e, r->end_ns); put_u32(e, r->pid);
		put_u32(e, r->tid); put_u32(e, r->kind); put_u32(e, r->domain_id);
		put_u32(e, r->name_id); put_u32(e, r->color); put_u32(e, r->depth);
		break;
	}
	case GTT_REC_CUDA_CALLSTACK: {
		const gtt_cuda_callstack *r = u;
		put_u64(e, r->time_ns); put_u64(e, r->call_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u32(e, r->correlation); put_u32(e, r->domain); put_u32(e, r->cbid);
		put_u32(e, r->name_id); put_u32(e, r->flags); put_u64(e, r->function);
		put_u32(e, r->n_native);
		put_u64s(e, r->ips, r->n_native);
		put_u32(e, r->n_py);
		for (uint32_t k = 0; k < r->n_py; k++) {
			put_u64(e, r->py[k].code_id);
			put_i32(e, r->py[k].line);
			put_u32(e, r->py[k].flags);
		}
		break;
	}
	case GTT_REC_COUNTER: {
		const gtt_counter *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->name_id);
		put_f64(e, r->value);
		break;
	}
	case GTT_REC_ARCHIVE: {
		const gtt_archive *r = u;
		put_build_id(e, r->build_id, r->build_id_len); put_str(e, r->path);
		put_u32(e, r->kind); put_u64(e, r->total_bytes); put_u64(e, r->offset);
		put_u32(e, r->len); put_bytes(e, r->data, r->len);
		break;
	}
	case GTT_REC_END: {
		const gtt_end *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->reason); put_i32(e, r->status);
		put_u64(e, r->n_samples); put_u64(e, r->n_records);
		break;
	}
	case GTT_REC_CALLCHAIN: {
		const gtt_callchain *r = u;
		put_u32(e, r->id); put_u32(e, r->n_kernel); put_u32(e, r->n_user);
		put_u64s(e, r->ips, r->n_kernel + r->n_user);
		break;
	}
	case GTT_REC_CAPTURE: {
		const gtt_capture *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->pid); put_u32(e, r->tid);
		put_u32(e, r->event); put_u32(e, r->source); put_str(e, r->name);
		break;
	}
	case GTT_REC_SWITCH_GATE: {
		const gtt_switch_gate *r = u;
		put_u64(e, r->time_ns); put_u32(e, r->event); put_u32(e, r->reason);
		put_u64(e, r->rate_per_s); put_u64(e, r->limit_per_s); put_u32(e, r->pid);
		break;
	}
	case GTT_REC_CLOCK: {
		const gtt_clock *r = u;
		put_u64(e, r->mono_ns); put_u64(e, r->realtime_ns); put_u64(e, r->uncertainty_ns);
		put_u32(e, r->kind); put_str(e, r->hostname); put_str(e, r->boot_id);
		break;
	}
	default:
		return GTT_EINVAL;
	}
	return e->err;
}

int gtt_encode_payload(const gtt_record *rec, uint8_t **buf, size_t *cap, uint32_t *len)
{
	enc e = { .p = *buf, .n = 0, .cap = *cap };
	int rc = rec ? gtt_encode(&e, rec) : GTT_EINVAL;
	*buf = e.p;
	*cap = e.cap;
	if (!rc && e.n > GTT_MAX_PAYLOAD)
		rc = GTT_EINVAL;
	*len = rc ? 0 : (uint32_t)e.n;
	return rc;
}

/* ---- decoder ---- */

/* Cursor over a payload; scratch is a bump area sized up front so pointers stay valid. */
typedef struct dec {
	const uint8_t *p;
	size_t left;
	uint8_t *scratch;
	size_t scap, sused;
	int err;
} dec;

static inline __attribute__((always_inline)) int need(dec *d, size_t n)
{
	if (d->err)
		return -1;
	if (d->left < n) {
		d->err = GTT_EINVAL;
		return -1;
	}
	return 0;
}
static inline __attribute__((always_inline)) uint8_t get_u8(dec *d)
{
	if (need(d, 1))
		return 0;
	d->left--;
	return *d->p++;
}
static inline __attribute__((always_inline)) uint32_t get_u32(dec *d)
{
	if (need(d, 4))
		return 0;
	uint32_t v = rd32(d->p);
	d->p += 4;
	d->left -= 4;
	return v;
}
static int32_t get_i32(dec *d) { return (int32_t)get_u32(d); }
static inline __attribute__((always_inline)) uint64_t get_u64(dec *d)
{
	if (need(d, 8))
		return 0;
	uint64_t v = rd64(d->p);
	d->p += 8;
	d->left -= 8;
	return v;
}
static double get_f64(dec *d)
{
	uint64_t v = get_u64(d);
	double x;
	memcpy(&x, &v, 8);
	return x;
}
static void *scratch_alloc(dec *d, size_t n)
{
	size_t at = (d->sused + 7) & ~(size_t)7;
	if (d->err || at + n > d->scap) {
		if (!d->err)
			d->err = GTT_EINVAL;
		return NULL;
	}
	d->sused = at + n;
	return d->scratch + at;
}
static const char *get_str(dec *d)
{
	uint32_t n = get_u32(d);
	if (d->err)
		return "";
	if (n > GTT_MAX_STRING || need(d, n)) {
		d->err = GTT_EINVAL;
		return "";
	}
	char *s = scratch_alloc(d, (size_t)n + 1);
	if (!s)
		return "";
	memcpy(s, d->p, n);
	s[n] = 0;
	d->p += n;
	d->left -= n;
	return s;
}
static const uint8_t *get_bytes(dec *d, size_t n)
{
	if (need(d, n))
		return NULL;
	const uint8_t *b = d->p;
	d->p += n;
	d->left -= n;
	return b;
}
static uint32_t get_build_id(dec *d, uint8_t *out)
{
	uint32_t n = get_u8(d);
	if (n > GTT_BUILD_ID_MAX) {
		d->err = GTT_EINVAL;
		return 0;
	}
	const uint8_t *b = get_bytes(d, n);
	if (b)
		memcpy(out, b, n);
	return b ? n : 0;
}
static const uint64_t *get_u64s(dec *d, uint32_t n)
{
	if (need(d, (size_t)n * 8))
		return NULL;
	uint64_t *v = scratch_alloc(d, (size_t)n * 8 + 8);
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		v[i] = rd64(d->p + (size_t)i * 8);
	d->p += (size_t)n * 8;
	d->left -= (size_t)n * 8;
	return v;
}

int gtt_decode(uint32_t tag, const uint8_t *payload, uint32_t len, gtt_record *rec,
               void **scratch, size_t *scratch_cap)
{
	/* Every decoded byte grows by at most 1/4 (a NUL per 4-byte length) plus 8 of
	 * alignment per item of at least 4 bytes, so 3*len + 64 bounds the scratch need. */
	size_t want = (size_t)len * 3 + 64;
	if (*scratch_cap < want) {
		void *s = realloc(*scratch, want);
		if (!s)
			return GTT_ENOMEM;
		*scratch = s;
		*scratch_cap = want;
	}
	dec dd = { .p = payload, .left = len, .scratch = *scratch, .scap = *scratch_cap };
	dec *d = &dd;
	memset(&rec->u, 0, sizeof(rec->u));
	rec->tag = tag;
	rec->len = len;
	rec->raw = payload;
	rec->flags = 0;
	void *u = &rec->u;
	switch (tag) {
	case GTT_REC_META: {
		gtt_meta *r = u;
		r->key = get_str(d);
		r->value = get_str(d);
		break;
	}
	case GTT_REC_PROCESS: {
		gtt_process *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->ppid = get_u32(d);
		r->event = get_u32(d); r->status = get_i32(d); r->comm = get_str(d);
		break;
	}
	case GTT_REC_THREAD: {
		gtt_thread *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->event = get_u32(d); r->name = get_str(d);
		break;
	}
	case GTT_REC_MAPPING: {
		gtt_mapping *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->prot = get_u32(d);
		r->start = get_u64(d); r->end = get_u64(d); r->pgoff = get_u64(d);
		r->build_id_len = get_build_id(d, r->build_id); r->path = get_str(d);
		break;
	}
	case GTT_REC_SAMPLE: {
		gtt_sample *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->cpu = get_u32(d); r->flags = get_u32(d); r->period_ns = get_u64(d);
		r->n_kernel = get_u32(d); r->n_user = get_u32(d);
		uint64_t nips = (uint64_t)r->n_kernel + r->n_user;
		if (nips > len / 8) {
			d->err = GTT_EINVAL;
			break;
		}
		r->ips = get_u64s(d, (uint32_t)nips);
		if (r->flags & GTT_SAMPLE_REGS) {
			r->regs_abi = get_u32(d); r->regs_mask = get_u64(d); r->n_regs = get_u32(d);
			if (r->n_regs > 64) {
				d->err = GTT_EINVAL;
				break;
			}
			r->regs = get_u64s(d, r->n_regs);
		}
		if (r->flags & GTT_SAMPLE_STACK) {
			r->stack_len = get_u32(d);
			r->stack = get_bytes(d, r->stack_len);
		}
		break;
	}
	case GTT_REC_SWITCH: {
		gtt_switch *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->cpu = get_u32(d); r->kind = get_u32(d);
		break;
	}
	case GTT_REC_THREAD_CPU: {
		gtt_thread_cpu *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->utime_ns = get_u64(d); r->stime_ns = get_u64(d);
		r->nvcsw = get_u64(d); r->nivcsw = get_u64(d); r->state = get_u32(d);
		break;
	}
	case GTT_REC_HEALTH: {
		gtt_health *r = u;
		r->time_ns = get_u64(d); r->end_ns = get_u64(d); r->source = get_u32(d);
		r->kind = get_u32(d); r->pid = get_u32(d); r->tid = get_u32(d); r->count = get_u64(d);
		for (int i = 0; i < 4; i++)
			r->value[i] = get_u64(d);
		r->text = get_str(d);
		break;
	}
	case GTT_REC_TICKS: {
		gtt_ticks *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->source = get_u32(d);
		r->flags = get_u32(d); r->period_ns = get_u64(d); r->intended = get_u64(d);
		r->done = get_u64(d); r->late_p50_ns = get_u64(d); r->late_p99_ns = get_u64(d);
		r->late_max_ns = get_u64(d);
		break;
	}
	case GTT_REC_PY_CODE: {
		gtt_py_code *r = u;
		r->pid = get_u32(d); r->code_id = get_u64(d); r->first_line = get_i32(d);
		r->name = get_str(d); r->qualname = get_str(d); r->filename = get_str(d);
		break;
	}
	case GTT_REC_PY_STACK: {
		gtt_py_stack *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->thread_id = get_u64(d); r->flags = get_u32(d); r->n_frames = get_u32(d);
		if (d->err || r->n_frames > d->left / 16) {
			d->err = GTT_EINVAL;
			break;
		}
		gtt_py_frame *f = scratch_alloc(d, (size_t)r->n_frames * sizeof(*f) + 8);
		if (!f)
			break;
		for (uint32_t i = 0; i < r->n_frames; i++) {
			f[i].code_id = get_u64(d);
			f[i].line = get_i32(d);
			f[i].flags = get_u32(d);
		}
		r->frames = f;
		break;
	}
	case GTT_REC_GIL: {
		gtt_gil *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->holder_tid = get_u32(d);
		r->locked = get_u32(d); r->flags = get_u32(d); r->switches = get_u64(d);
		if (!d->err && d->left >= 8) /* appended in 1.1 */
			r->prev_ns = get_u64(d);
		break;
	}
	case GTT_REC_PY_THREAD: {
		gtt_py_thread *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->ident = get_u64(d); r->name = get_str(d);
		break;
	}
	case GTT_REC_STRING: {
		gtt_string *r = u;
		r->pid = get_u32(d); r->id = get_u32(d); r->text = get_str(d);
		break;
	}
	case GTT_REC_CUDA_DEVICE: {
		gtt_cuda_device *r = u;
		r->pid = get_u32(d); r->device = get_u32(d); r->cc_major = get_u32(d);
		r->cc_minor = get_u32(d); r->sm_count = get_u32(d); r->global_mem_bytes = get_u64(d);
		r->name = get_str(d); r->uuid = get_str(d);
		break;
	}
	case GTT_REC_CUDA_KERNEL: {
		gtt_cuda_kernel *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->device = get_u32(d); r->context = get_u32(d); r->stream = get_u32(d);
		r->correlation = get_u32(d);
		for (int i = 0; i < 3; i++)
			r->grid[i] = get_u32(d);
		for (int i = 0; i < 3; i++)
			r->block[i] = get_u32(d);
		r->shared_bytes = get_u32(d); r->registers = get_u32(d); r->name_id = get_u32(d);
		break;
	}
	case GTT_REC_CUDA_MEMCPY: {
		gtt_cuda_memcpy *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->device = get_u32(d); r->context = get_u32(d); r->stream = get_u32(d);
		r->correlation = get_u32(d); r->kind = get_u32(d); r->flags = get_u32(d);
		r->bytes = get_u64(d);
		break;
	}
	case GTT_REC_CUDA_MEMSET: {
		gtt_cuda_memset *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->device = get_u32(d); r->context = get_u32(d); r->stream = get_u32(d);
		r->correlation = get_u32(d); r->value = get_u32(d); r->bytes = get_u64(d);
		break;
	}
	case GTT_REC_CUDA_SYNC: {
		gtt_cuda_sync *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->context = get_u32(d); r->stream = get_u32(d); r->correlation = get_u32(d);
		r->kind = get_u32(d);
		break;
	}
	case GTT_REC_CUDA_API: {
		gtt_cuda_api *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->tid = get_u32(d); r->correlation = get_u32(d); r->domain = get_u32(d);
		r->cbid = get_u32(d); r->status = get_i32(d); r->name_id = get_u32(d);
		break;
	}
	case GTT_REC_CUDA_ALLOC: {
		gtt_cuda_alloc *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->device = get_u32(d);
		r->context = get_u32(d); r->stream = get_u32(d); r->correlation = get_u32(d);
		r->op = get_u32(d); r->mem_kind = get_u32(d); r->address = get_u64(d);
		r->bytes = get_u64(d);
		break;
	}
	case GTT_REC_NVTX: {
		gtt_nvtx *r = u;
		r->start_ns = get_u64(d); r->end_ns = get_u64(d); r->pid = get_u32(d);
		r->tid = get_u32(d); r->kind = get_u32(d); r->domain_id = get_u32(d);
		r->name_id = get_u32(d); r->color = get_u32(d); r->depth = get_u32(d);
		break;
	}
	case GTT_REC_CUDA_CALLSTACK: {
		gtt_cuda_callstack *r = u;
		r->time_ns = get_u64(d); r->call_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->correlation = get_u32(d); r->domain = get_u32(d); r->cbid = get_u32(d);
		r->name_id = get_u32(d); r->flags = get_u32(d); r->function = get_u64(d);
		r->n_native = get_u32(d);
		if (d->err || r->n_native > d->left / 8) {
			d->err = GTT_EINVAL;
			break;
		}
		r->ips = get_u64s(d, r->n_native);
		r->n_py = get_u32(d);
		if (d->err || r->n_py > d->left / 16) {
			d->err = GTT_EINVAL;
			break;
		}
		gtt_py_frame *f = scratch_alloc(d, (size_t)r->n_py * sizeof(*f) + 8);
		if (!f)
			break;
		for (uint32_t k = 0; k < r->n_py; k++) {
			f[k].code_id = get_u64(d);
			f[k].line = get_i32(d);
			f[k].flags = get_u32(d);
		}
		r->py = f;
		break;
	}
	case GTT_REC_COUNTER: {
		gtt_counter *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->name_id = get_u32(d);
		r->value = get_f64(d);
		break;
	}
	case GTT_REC_ARCHIVE: {
		gtt_archive *r = u;
		r->build_id_len = get_build_id(d, r->build_id); r->path = get_str(d);
		r->kind = get_u32(d); r->total_bytes = get_u64(d); r->offset = get_u64(d);
		r->len = get_u32(d); r->data = get_bytes(d, r->len);
		if (!d->err && (r->offset > r->total_bytes || r->len > r->total_bytes - r->offset))
			d->err = GTT_EINVAL;
		break;
	}
	case GTT_REC_END: {
		gtt_end *r = u;
		r->time_ns = get_u64(d); r->reason = get_u32(d); r->status = get_i32(d);
		r->n_samples = get_u64(d); r->n_records = get_u64(d);
		break;
	}
	case GTT_REC_CALLCHAIN: {
		gtt_callchain *r = u;
		r->id = get_u32(d); r->n_kernel = get_u32(d); r->n_user = get_u32(d);
		uint64_t nips = (uint64_t)r->n_kernel + r->n_user;
		if (d->err || r->id == 0 || r->id > GTT_CHAIN_ID_MAX || nips > len / 8) {
			d->err = GTT_EINVAL;
			break;
		}
		r->ips = get_u64s(d, (uint32_t)nips);
		break;
	}
	case GTT_REC_CAPTURE: {
		gtt_capture *r = u;
		r->time_ns = get_u64(d); r->pid = get_u32(d); r->tid = get_u32(d);
		r->event = get_u32(d); r->source = get_u32(d); r->name = get_str(d);
		break;
	}
	case GTT_REC_SWITCH_GATE: {
		gtt_switch_gate *r = u;
		r->time_ns = get_u64(d); r->event = get_u32(d); r->reason = get_u32(d);
		r->rate_per_s = get_u64(d); r->limit_per_s = get_u64(d);
		r->pid = 0;
		if (!d->err && d->left >= 4) /* appended (absent: the gate of the whole trace) */
			r->pid = get_u32(d);
		break;
	}
	case GTT_REC_CLOCK: {
		gtt_clock *r = u;
		r->mono_ns = get_u64(d); r->realtime_ns = get_u64(d); r->uncertainty_ns = get_u64(d);
		r->kind = get_u32(d); r->hostname = get_str(d); r->boot_id = get_str(d);
		break;
	}
	default:
		/* Unknown tags (written by a newer minor version) are returned raw. */
		return 0;
	}
	return d->err;
}

/* ---- names ---- */

const char *gtt_tag_name(uint32_t tag)
{
	switch (tag) {
	case GTT_REC_META: return "meta";
	case GTT_REC_PROCESS: return "process";
	case GTT_REC_THREAD: return "thread";
	case GTT_REC_MAPPING: return "mapping";
	case GTT_REC_SAMPLE: return "sample";
	case GTT_REC_SWITCH: return "switch";
	case GTT_REC_THREAD_CPU: return "thread_cpu";
	case GTT_REC_HEALTH: return "health";
	case GTT_REC_TICKS: return "ticks";
	case GTT_REC_PY_CODE: return "py_code";
	case GTT_REC_PY_STACK: return "py_stack";
	case GTT_REC_GIL: return "gil";
	case GTT_REC_PY_THREAD: return "py_thread";
	case GTT_REC_STRING: return "string";
	case GTT_REC_CALLCHAIN: return "callchain";
	case GTT_REC_PACKED: return "packed";
	case GTT_REC_INDEX: return "index";
	case GTT_REC_CUDA_DEVICE: return "cuda_device";
	case GTT_REC_CUDA_KERNEL: return "cuda_kernel";
	case GTT_REC_CUDA_MEMCPY: return "cuda_memcpy";
	case GTT_REC_CUDA_MEMSET: return "cuda_memset";
	case GTT_REC_CUDA_SYNC: return "cuda_sync";
	case GTT_REC_CUDA_API: return "cuda_api";
	case GTT_REC_CUDA_ALLOC: return "cuda_alloc";
	case GTT_REC_NVTX: return "nvtx";
	case GTT_REC_COUNTER: return "counter";
	case GTT_REC_CUDA_CALLSTACK: return "cuda_callstack";
	case GTT_REC_ARCHIVE: return "archive";
	case GTT_REC_END: return "end";
	case GTT_REC_CAPTURE: return "capture";
	case GTT_REC_SWITCH_GATE: return "switch_gate";
	case GTT_REC_CLOCK: return "clock";
	default: return "unknown";
	}
}
