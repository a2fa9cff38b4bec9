/* gen_trace.c — writes big, realistic traces through lib's writer, for benchmarks of trace size
 * and analysis speed: threads whose native stacks (DWARF stack copies built frame by frame, or
 * frame-pointer callchains) and Python stacks drift the way a training loop's do, context
 * switches, GIL hand-overs, CUDA kernels/API calls/copies arriving in batches as CUPTI delivers
 * them, /proc thread stats, sampler ticks. Deterministic for a seed.
 *   gen_trace -o FILE [--seconds S] [--threads N] [--sample-hz HZ] [--stack-bytes B] [--fp]
 *             [--switch-rate N/s] [--cuda-rate N/s] [--py-hz HZ] [--gil-rate N/s]
 *             [--max-bytes N] [--format 1.0|1.1|1.2] [--level L] [--block-bytes B] [--no-index]
 *             [--seed N] [--stack-variants K] [--unordered-switches] [--one-data-stream]
 * Defaults: the H200 torch workload of issue 13 (8 threads, 99 Hz DWARF 8 KiB, 100 000
 * switches/s, 57 000 CUDA records/s, Python stacks at 100 Hz per thread, 1 000 GIL changes/s)
 * for 10 s. --max-bytes stops at a file size (a 10 GB trace: --seconds 100000 --max-bytes 10e9).
 * --stack-variants K: each thread's native and Python stacks are one of K per thread (the one of
 * the 10 ms slot the sample or read falls in, modulo K), as a training loop's iterations repeat
 * theirs, so the distinct stacks stay bounded while the records grow (by default they drift at
 * random: nearly every read is a new stack).
 * Context switches are written in time order, as gt-record writes them (rec_perf_drain sorts
 * every ring's records before they leave; its recordings have none out of order);
 * --unordered-switches writes each millisecond's in the order they were drawn instead (random
 * within the millisecond, an in up to 5 ms after its out: the analyzer's reorder queue's worst
 * case, and what gen_trace wrote before 2026-12-01 14:00).
 * --one-data-stream writes every data record into one stream of packed chunks, the layout of
 * writers before samples, switches and CUDA records had streams of their own (the same records:
 * for measuring readers on traces of that layout).
 * Prints what it wrote on stderr; exit 0, 2 on a write error, 64 on usage. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_util.h"
#include "gtt.h"

#define PID 4242u
#define N_FUNCS 400
#define MAX_DEPTH 96
#define N_CODES 600
#define N_KERNELS 60
#define N_APIS 12
#define N_REGS 17

typedef struct opts {
	const char *out;
	double seconds, sample_hz, switch_rate, cuda_rate, py_hz, gil_rate, max_bytes;
	uint32_t threads, stack_bytes, block_bytes, minor;
	int fp, level, no_index, unordered_switches, one_data_stream;
	uint64_t seed;
} opts;

/* ---- deterministic randomness ---- */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
static uint32_t rndn(uint32_t n) { return (uint32_t)(rnd() % n); }

/* ---- the program being "profiled": functions in four binaries, who calls whom ---- */
typedef struct func {
	uint64_t entry;
	uint32_t frame_bytes;   /* multiple of 8, >= 16 */
	uint32_t callees[6];
	uint32_t n_callees;
	uint64_t konst[4];      /* words that sit in every frame of it */
} func;
static func funcs[N_FUNCS];
static const uint64_t module_base[4] = { 0x400000ull, 0x7f1000000000ull, 0x7f2000000000ull, 0x7f3000000000ull };

static void make_program(void)
{
	for (uint32_t i = 0; i < N_FUNCS; i++) {
		func *f = &funcs[i];
		uint32_t m = i < 120 ? 0 : i < 300 ? 1 : i < 360 ? 2 : 3; /* python, libtorch, libcuda, libc */
		f->entry = module_base[m] + 0x1000 + (uint64_t)i * 0x2340 + rndn(0x100) * 16;
		/* the interpreter's eval loop (function 0..7) has big frames, like CPython's */
		f->frame_bytes = i < 8 ? 400 + rndn(8) * 8 : 16 + rndn(40) * 8;
		f->n_callees = 2 + rndn(5);
		for (uint32_t k = 0; k < f->n_callees; k++)
			f->callees[k] = i < 8 && k < 3 ? rndn(8) : rndn(N_FUNCS); /* Python calls Python */
		for (int k = 0; k < 4; k++)
			f->konst[k] = k < 2 ? module_base[rndn(4)] + rndn(1u << 20) * 8 : rndn(1000);
	}
}

/* ---- a thread of the target ---- */
typedef struct thr {
	uint32_t tid;
	uint32_t path[MAX_DEPTH]; /* function indices, root first */
	uint32_t depth;
	uint32_t pycode[48], pyline[48], pydepth;
	uint64_t stack_top;
	uint64_t counter;         /* a local that changes from sample to sample */
	uint64_t utime_ns, nvcsw, nivcsw;
	/* --stack-variants: the state every variant drifts from */
	uint32_t path0[MAX_DEPTH], depth0, pycode0[48], pyline0[48], pydepth0;
} thr;
static uint32_t stack_variants;

static void drift_native(thr *t)
{
	/* return from a few frames, then call a few: long common prefixes, a busy top */
	uint32_t pop = rndn(100) < 70 ? rndn(3) : rndn(12);
	t->depth = t->depth > pop + 4 ? t->depth - pop : 4;
	uint32_t push = rndn(pop + 3);
	while (push-- && t->depth < MAX_DEPTH) {
		const func *f = &funcs[t->path[t->depth - 1]];
		t->path[t->depth] = f->callees[rndn(f->n_callees)];
		t->depth++;
	}
	t->counter += 1 + rndn(50);
}

static void drift_python(thr *t)
{
	uint32_t pop = rndn(4);
	t->pydepth = t->pydepth > pop + 3 ? t->pydepth - pop : 3;
	while (t->pydepth < 48 && rndn(4) != 0)
		t->pycode[t->pydepth++] = rndn(N_CODES);
	t->pyline[t->pydepth - 1] = 10 + rndn(300);
}

static void init_thread(thr *t, uint32_t i)
{
	memset(t, 0, sizeof(*t));
	t->tid = PID + i;
	t->stack_top = 0x7ffd00000000ull - (uint64_t)i * 0x800000;
	t->path[0] = 0;
	t->depth = 1;
	for (int k = 0; k < 30; k++)
		drift_native(t);
	t->pydepth = 3;
	for (int k = 0; k < 3; k++)
		t->pycode[k] = rndn(N_CODES);
	drift_python(t);
	memcpy(t->path0, t->path, sizeof(t->path));
	t->depth0 = t->depth;
	memcpy(t->pycode0, t->pycode, sizeof(t->pycode));
	memcpy(t->pyline0, t->pyline, sizeof(t->pyline));
	t->pydepth0 = t->pydepth;
}

/* ---- writing ---- */
static gtt_writer *W;
static int werr;
static uint64_t n_written, n_samples_written;

static void put(const gtt_record *r)
{
	int rc = gtt_write(W, r);
	if (rc && !werr)
		werr = rc;
	n_written++;
	n_samples_written += r->tag == GTT_REC_SAMPLE; /* END says how many, as gt-record's does */
}

/* Switches waiting to be written in time order: (time, draw order). */
typedef struct pend_sw { gtt_switch s; uint64_t seq; } pend_sw;
static pend_sw *sw_pend;
static size_t n_sw_pend, cap_sw_pend;
static uint64_t sw_seq;

static void switch_put(const opts *o, const gtt_switch *s)
{
	if (o->unordered_switches) {
		gtt_record r = { .tag = GTT_REC_SWITCH, .u.sw = *s };
		put(&r);
		return;
	}
	if (GT_GROW(sw_pend, cap_sw_pend, n_sw_pend + 1) < 0) {
		werr = werr ? werr : GTT_ENOMEM;
		return;
	}
	sw_pend[n_sw_pend++] = (pend_sw){ *s, sw_seq++ };
}

static int cmp_pend_sw(const void *a, const void *b)
{
	const pend_sw *x = a, *y = b;
	if (x->s.time_ns != y->s.time_ns)
		return x->s.time_ns < y->s.time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Write the waiting switches before upto in time order (no later switch can come before them:
 * every switch is drawn at or after the millisecond being generated). */
static void switch_flush(uint64_t upto)
{
	size_t i, k = 0;
	qsort(sw_pend, n_sw_pend, sizeof(*sw_pend), cmp_pend_sw);
	for (i = 0; i < n_sw_pend && sw_pend[i].s.time_ns < upto; i++) {
		gtt_record r = { .tag = GTT_REC_SWITCH, .u.sw = sw_pend[i].s };
		put(&r);
	}
	for (; i < n_sw_pend; i++)
		sw_pend[k++] = sw_pend[i];
	n_sw_pend = k;
}

static uint8_t stackbuf[65536];

static void sample_body(const opts *o, thr *t, uint64_t now);
static void py_stack_body(thr *t, uint64_t now);

/* With --stack-variants, a sample's (a read's) stack is drawn from the thread's starting state with
 * randomness seeded by (thread, variant of its 10 ms slot): the same K stacks over and over. */
static uint64_t variant_seed(const thr *t, uint64_t now, uint64_t salt)
{
	uint64_t k = now / (10 * GT_NS_PER_MS) % stack_variants;
	return ((uint64_t)t->tid << 32 ^ k ^ salt) * 0x9e3779b97f4a7c15ull | 1;
}

static void sample(const opts *o, thr *t, uint64_t now)
{
	if (!stack_variants) {
		sample_body(o, t, now);
		return;
	}
	uint64_t g = rng_state;
	memcpy(t->path, t->path0, sizeof(t->path));
	t->depth = t->depth0;
	rng_state = variant_seed(t, now, 0x51);
	sample_body(o, t, now);
	rng_state = g;
}

static void py_stack(thr *t, uint64_t now)
{
	if (!stack_variants) {
		py_stack_body(t, now);
		return;
	}
	uint64_t g = rng_state;
	memcpy(t->pycode, t->pycode0, sizeof(t->pycode));
	memcpy(t->pyline, t->pyline0, sizeof(t->pyline));
	t->pydepth = t->pydepth0;
	rng_state = variant_seed(t, now, 0x77);
	py_stack_body(t, now);
	rng_state = g;
}

static void sample_body(const opts *o, thr *t, uint64_t now)
{
	uint64_t ips[MAX_DEPTH + 16], regs[N_REGS];
	uint32_t n_kernel = 0, n_user = 0;
	gtt_record r = { .tag = GTT_REC_SAMPLE };
	gtt_sample *s = &r.u.sample;
	drift_native(t);
	if (rndn(100) < 30) /* in the kernel: a short kernel chain */
		for (n_kernel = 0; n_kernel < 3 + rndn(6); n_kernel++)
			ips[n_kernel] = 0xffffffff81000000ull + (uint64_t)rndn(40) * 0x1230;
	uint64_t leaf_ip = funcs[t->path[t->depth - 1]].entry + 16 + rndn(64) * 4;
	s->time_ns = now;
	s->pid = PID;
	s->tid = t->tid;
	s->cpu = rndn(8);
	s->period_ns = gt_hz_to_period_ns(o->sample_hz);
	s->flags = n_kernel ? GTT_SAMPLE_KERNEL : 0;
	if (o->fp) {
		ips[n_kernel + n_user++] = leaf_ip;
		for (uint32_t d = t->depth - 1; d > 0 && n_user < MAX_DEPTH; d--)
			ips[n_kernel + n_user++] = funcs[t->path[d - 1]].entry + 0x40 + (d % 7) * 8;
	} else {
		/* the stack copy: frames from the leaf up, each its locals, saved rbp, return address */
		uint32_t len = 0;
		uint64_t sp = t->stack_top;
		for (uint32_t d = 0; d < t->depth; d++)
			sp -= funcs[t->path[d]].frame_bytes;
		uint64_t fp = sp;
		for (uint32_t d = t->depth; d-- > 0 && len + 16 <= o->stack_bytes;) {
			const func *f = &funcs[t->path[d]];
			uint32_t words = f->frame_bytes / 8;
			for (uint32_t k = 0; k < words && len + 8 <= o->stack_bytes; k++, len += 8) {
				uint64_t v;
				if (k == words - 1)
					v = d ? funcs[t->path[d - 1]].entry + 0x40 + (d % 7) * 8 : 0; /* return address */
				else if (k == words - 2)
					v = fp + f->frame_bytes;                                      /* saved rbp */
				else if (k % 5 == 4)
					v = t->counter + k;                                           /* a live local */
				else
					v = f->konst[k % 4];
				memcpy(stackbuf + len, &v, 8);
			}
			fp += f->frame_bytes;
		}
		for (int k = 0; k < N_REGS; k++)
			regs[k] = k == 6 || k == 7 ? sp + (uint64_t)k * 8 : funcs[t->path[t->depth - 1]].konst[k % 4] + (k == 8 ? 0 : t->counter % 7);
		regs[8] = leaf_ip;
		s->flags |= GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
		s->regs_abi = 2;
		s->regs_mask = 0xff0fffull;
		s->n_regs = N_REGS;
		s->regs = regs;
		s->stack_len = len;
		s->stack = stackbuf;
	}
	s->n_kernel = n_kernel;
	s->n_user = n_user;
	s->ips = ips;
	put(&r);
}

static void py_stack_body(thr *t, uint64_t now)
{
	gtt_py_frame f[48];
	gtt_record r = { .tag = GTT_REC_PY_STACK };
	drift_python(t);
	for (uint32_t k = 0; k < t->pydepth; k++) {
		uint32_t d = t->pydepth - 1 - k; /* leaf first */
		f[k].code_id = 0x7f5000000000ull + (uint64_t)t->pycode[d] * 0x1b0;
		f[k].line = (int32_t)(t->pyline[d] ? t->pyline[d] : 10 + t->pycode[d] % 200);
		f[k].flags = d == 0 ? GTT_PYFRAME_ENTRY : 0;
	}
	r.u.py_stack = (gtt_py_stack){ .time_ns = now, .pid = PID, .tid = t->tid, .thread_id = 0x55d000000000ull + t->tid * 0x1000,
	                               .flags = rndn(8) == 0 ? GTT_PYSTACK_HOLDS_GIL : 0, .n_frames = t->pydepth, .frames = f };
	put(&r);
}

/* CUDA records wait in a batch, delivered late as CUPTI buffers are */
typedef struct cuda_rec { gtt_record r; } cuda_rec;
static cuda_rec *batch;
static size_t n_batch, cap_batch;
static uint32_t correlation;

static void cuda_add(const gtt_record *r)
{
	if (n_batch == cap_batch) {
		cap_batch = cap_batch ? cap_batch * 2 : 4096;
		batch = realloc(batch, cap_batch * sizeof(*batch));
		if (!batch)
			abort();
	}
	batch[n_batch++].r = *r;
}

static void cuda_activity(const opts *o, const thr *threads, uint64_t now)
{
	const thr *t = &threads[rndn(o->threads)];
	uint32_t c = ++correlation, what = rndn(100);
	uint64_t api_start = now, api_end = now + 2000 + rndn(4000);
	gtt_record a = { .tag = GTT_REC_CUDA_API };
	a.u.api = (gtt_cuda_api){ .start_ns = api_start, .end_ns = api_end, .pid = PID, .tid = t->tid, .correlation = c,
	                          .domain = GTT_API_RUNTIME };
	gtt_record g = { 0 };
	uint32_t stream = 7 + t->tid % 5;
	uint64_t gs = api_end + 1000 + rndn(200000), gd = 3000 + rndn(300000);
	if (what < 80) {
		uint32_t k = rndn(N_KERNELS);
		a.u.api.cbid = 211;
		a.u.api.name_id = 1000 + 0;
		g.tag = GTT_REC_CUDA_KERNEL;
		g.u.kernel = (gtt_cuda_kernel){ .start_ns = gs, .end_ns = gs + gd, .pid = PID, .device = 0, .context = 1,
		                                .stream = stream, .correlation = c, .grid = { 1 + k * 13 % 1024, 1 + k % 3, 1 },
		                                .block = { 128u << (k % 3), 1, 1 }, .shared_bytes = (k % 4) * 4096,
		                                .registers = 32 + k % 64, .name_id = 1 + k };
	} else if (what < 90) {
		a.u.api.cbid = 41;
		a.u.api.name_id = 1000 + 1;
		g.tag = GTT_REC_CUDA_MEMCPY;
		g.u.memcpy = (gtt_cuda_memcpy){ .start_ns = gs, .end_ns = gs + gd / 10, .pid = PID, .device = 0, .context = 1,
		                                .stream = stream, .correlation = c, .kind = 1 + rndn(2), .flags = 1,
		                                .bytes = 4096ull << rndn(12) };
	} else if (what < 97) {
		a.u.api.cbid = 131;
		a.u.api.name_id = 1000 + 2;
		a.u.api.end_ns = api_start + gd;
		g.tag = GTT_REC_CUDA_SYNC;
		g.u.sync = (gtt_cuda_sync){ .start_ns = api_start + 500, .end_ns = api_start + gd, .pid = PID, .context = 1,
		                            .stream = stream, .correlation = c, .kind = GTT_SYNC_STREAM };
	} else {
		a.u.api.cbid = 20 + rndn(N_APIS);
		a.u.api.name_id = 1000 + 3 + rndn(N_APIS - 3);
	}
	cuda_add(&a);
	if (g.tag)
		cuda_add(&g);
}

static void cuda_deliver(void)
{
	for (size_t i = 0; i < n_batch; i++)
		put(&batch[i].r);
	n_batch = 0;
}

static void definitions(const opts *o, const thr *threads)
{
	static const char *const mods[4] = { "/usr/bin/python3.11", "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",
	                                     "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15", "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	char text[160];
	gtt_record r = { .tag = GTT_REC_META };
	r.u.meta = (gtt_meta){ .key = "command", .value = "gen_trace (synthetic training loop)" };
	put(&r);
	r.u.meta = (gtt_meta){ .key = "call_graph", .value = o->fp ? "fp" : "dwarf" };
	put(&r);
	snprintf(text, sizeof(text), "%.0f", o->sample_hz);
	r.u.meta = (gtt_meta){ .key = "frequency_hz", .value = text };
	put(&r);
	r = (gtt_record){ .tag = GTT_REC_PROCESS };
	r.u.process = (gtt_process){ .time_ns = GT_NS_PER_SEC, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "python3 train.py" };
	put(&r);
	for (uint32_t i = 0; i < o->threads; i++) {
		snprintf(text, sizeof(text), "%s-%u", i < 5 ? "target" : "drafter", i);
		r = (gtt_record){ .tag = GTT_REC_THREAD };
		r.u.thread = (gtt_thread){ .time_ns = GT_NS_PER_SEC, .pid = PID, .tid = threads[i].tid, .event = GTT_THREAD_START, .name = text };
		put(&r);
	}
	for (int m = 0; m < 4; m++) {
		r = (gtt_record){ .tag = GTT_REC_MAPPING };
		r.u.mapping = (gtt_mapping){ .time_ns = GT_NS_PER_SEC, .pid = PID, .prot = 5, .start = module_base[m],
		                             .end = module_base[m] + 0x8000000, .build_id_len = 20, .path = mods[m] };
		memset(r.u.mapping.build_id, 0x40 + m, 20);
		put(&r);
	}
	for (uint32_t k = 1; k <= N_KERNELS + N_APIS; k++) {
		snprintf(text, sizeof(text), k <= N_KERNELS ? "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%uE" : "cudaApi%u", k);
		r = (gtt_record){ .tag = GTT_REC_STRING };
		r.u.string = (gtt_string){ .pid = PID, .id = k <= N_KERNELS ? k : 1000 + k - N_KERNELS - 1, .text = text };
		put(&r);
	}
	for (uint32_t c = 0; c < N_CODES; c++) {
		char name[64], file[96];
		snprintf(name, sizeof(name), "fn_%u", c);
		snprintf(file, sizeof(file), "/opt/venv/lib/python3.11/site-packages/model/part_%u.py", c % 40);
		r = (gtt_record){ .tag = GTT_REC_PY_CODE };
		r.u.py_code = (gtt_py_code){ .pid = PID, .code_id = 0x7f5000000000ull + (uint64_t)c * 0x1b0, .first_line = 1 + (int32_t)c,
		                             .name = name, .qualname = name, .filename = file };
		put(&r);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: gen_trace -o FILE [--seconds S] [--threads N] [--sample-hz HZ] [--stack-bytes B] [--fp]\n"
	                "                 [--switch-rate N] [--cuda-rate N] [--py-hz HZ] [--gil-rate N] [--max-bytes N]\n"
	                "                 [--format 1.0|1.1|1.2] [--level L] [--block-bytes B] [--no-index] [--seed N]\n"
	                "                 [--stack-variants K] [--unordered-switches] [--one-data-stream]\n");
	return GT_EXIT_USAGE;
}

static int parse(int argc, char **argv, opts *o)
{
	static const struct option lo[] = {
		{ "seconds", 1, 0, 's' }, { "threads", 1, 0, 't' }, { "sample-hz", 1, 0, 'F' }, { "stack-bytes", 1, 0, 'b' },
		{ "fp", 0, 0, 'f' }, { "switch-rate", 1, 0, 'w' }, { "cuda-rate", 1, 0, 'c' }, { "py-hz", 1, 0, 'p' },
		{ "gil-rate", 1, 0, 'g' }, { "max-bytes", 1, 0, 'm' }, { "format", 1, 0, 'v' }, { "level", 1, 0, 'l' },
		{ "block-bytes", 1, 0, 'B' }, { "no-index", 0, 0, 'n' }, { "seed", 1, 0, 'S' },
		{ "stack-variants", 1, 0, 'K' }, { "unordered-switches", 0, 0, 'U' }, { "one-data-stream", 0, 0, 'D' },
		{ 0, 0, 0, 0 },
	};
	*o = (opts){ .seconds = 10, .sample_hz = 99, .switch_rate = 100000, .cuda_rate = 57000, .py_hz = 100,
	             .gil_rate = 1000, .threads = 8, .stack_bytes = 8192, .minor = GTT_VERSION_MINOR, .seed = 1 };
	int c;
	while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 's': o->seconds = atof(optarg); break;
		case 't': o->threads = (uint32_t)atoi(optarg); break;
		case 'F': o->sample_hz = atof(optarg); break;
		case 'b': o->stack_bytes = (uint32_t)atoi(optarg); break;
		case 'f': o->fp = 1; break;
		case 'w': o->switch_rate = atof(optarg); break;
		case 'c': o->cuda_rate = atof(optarg); break;
		case 'p': o->py_hz = atof(optarg); break;
		case 'g': o->gil_rate = atof(optarg); break;
		case 'm': o->max_bytes = atof(optarg); break;
		case 'v': o->minor = strcmp(optarg, "1.0") == 0 ? 0 : strcmp(optarg, "1.1") == 0 ? 1 : 2; break;
		case 'l': o->level = atoi(optarg); break;
		case 'B': o->block_bytes = (uint32_t)atoi(optarg); break;
		case 'n': o->no_index = 1; break;
		case 'S': o->seed = strtoull(optarg, NULL, 0); break;
		case 'K': stack_variants = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'U': o->unordered_switches = 1; break;
		case 'D': o->one_data_stream = 1; break;
		default: return -1;
		}
	}
	if (!o->out || optind != argc || o->threads < 1 || o->threads > 4096 || o->seconds <= 0 ||
	    o->stack_bytes > sizeof(stackbuf) || o->sample_hz < 0 || o->switch_rate < 0 || o->cuda_rate < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	opts o;
	if (parse(argc, argv, &o) != 0)
		return usage();
	rng_state = o.seed * 0x9e3779b97f4a7c15ull + 1;
	make_program();
	thr *threads = calloc(o.threads, sizeof(*threads));
	if (!threads)
		return GT_EXIT_BROKEN;
	for (uint32_t i = 0; i < o.threads; i++)
		init_thread(&threads[i], i);
	int err = 0;
	FILE *probe = fopen(o.out, "wb");
	if (!probe) {
		fprintf(stderr, "gen_trace: %s: %s\n", o.out, strerror(errno));
		return GT_EXIT_BROKEN;
	}
	gtt_writer_opts wo;
	gtt_writer_opts_init(&wo);
	wo.minor = o.minor;
	wo.level = o.level;
	wo.block_bytes = o.block_bytes;
	wo.no_index = o.no_index;
	wo.one_data_stream = o.one_data_stream;
	W = gtt_writer_fdopen_opts(dup(fileno(probe)), 0, &wo, &err);
	fclose(probe);
	if (!W) {
		fprintf(stderr, "gtt_trace: %s: %s\n", o.out, gtt_strerror(err));
		return GT_EXIT_BROKEN;
	}
	uint64_t wall0 = gtt_now_ns(), t0 = GT_NS_PER_SEC, end = t0 + gt_s_to_ns(o.seconds), tick = GT_NS_PER_MS;
	double acc_sample = 0, acc_switch = 0, acc_cuda = 0, acc_py = 0, acc_gil = 0;
	uint64_t gil_switches = 0, now = t0;
	definitions(&o, threads);
	for (now = t0; now < end && !werr; now += tick) {
		acc_sample += o.sample_hz * (double)o.threads / 1000;
		acc_switch += o.switch_rate / 2 / 1000; /* each switch is an out and an in */
		acc_cuda += o.cuda_rate / 1.9 / 1000;   /* most activities are two records */
		acc_py += o.py_hz * (double)o.threads / 1000;
		acc_gil += o.gil_rate / 1000;
		for (; acc_switch >= 1; acc_switch -= 1) {
			thr *a = &threads[rndn(o.threads)], *b = &threads[rndn(o.threads)];
			uint64_t t = now + rndn((uint32_t)tick);
			uint32_t cpu = rndn(8);
			gtt_switch sw = { .time_ns = t, .pid = PID, .tid = a->tid, .cpu = cpu,
			                  .kind = rndn(20) ? GTT_SWITCH_OUT : GTT_SWITCH_OUT_PREEMPT };
			switch_put(&o, &sw);
			a->nvcsw++;
			sw = (gtt_switch){ .time_ns = t + 800 + rndn(4000), .pid = PID, .tid = b->tid, .cpu = cpu, .kind = GTT_SWITCH_IN };
			switch_put(&o, &sw);
		}
		if (!o.unordered_switches)
			switch_flush(now + tick);
		for (; acc_sample >= 1; acc_sample -= 1)
			sample(&o, &threads[rndn(o.threads)], now + rndn((uint32_t)tick));
		for (; acc_py >= 1; acc_py -= 1)
			py_stack(&threads[rndn(o.threads)], now + rndn((uint32_t)tick));
		for (; acc_gil >= 1; acc_gil -= 1) {
			gtt_record r = { .tag = GTT_REC_GIL };
			r.u.gil = (gtt_gil){ .time_ns = now + rndn((uint32_t)tick), .pid = PID,
			                     .holder_tid = threads[rndn(o.threads)].tid, .locked = 1, .switches = gil_switches += 1 + rndn(60) };
			put(&r);
		}
		for (; acc_cuda >= 1; acc_cuda -= 1)
			cuda_activity(&o, threads, now + rndn((uint32_t)tick));
		if ((now - t0) % (100 * GT_NS_PER_MS) == 0)
			cuda_deliver(); /* the previous 100 ms, as a CUPTI buffer */
		if ((now - t0) % GT_NS_PER_SEC == 0) {
			for (uint32_t i = 0; i < o.threads; i++) {
				thr *t = &threads[i];
				t->utime_ns += 400 * GT_NS_PER_MS + rndn(1000) * GT_NS_PER_US;
				gtt_record r = { .tag = GTT_REC_THREAD_CPU };
				r.u.thread_cpu = (gtt_thread_cpu){ .time_ns = now, .pid = PID, .tid = t->tid, .utime_ns = t->utime_ns,
				                                   .stime_ns = t->utime_ns / 5, .nvcsw = t->nvcsw, .nivcsw = t->nivcsw, .state = 'R' };
				put(&r);
			}
			gtt_record r = { .tag = GTT_REC_TICKS };
			r.u.ticks = (gtt_ticks){ .start_ns = now - GT_NS_PER_SEC, .end_ns = now, .source = GTT_SRC_PYSTACK,
			                         .period_ns = GT_NS_PER_MS, .intended = 1000, .done = 990 + rndn(11),
			                         .late_p50_ns = 20000, .late_p99_ns = 400000, .late_max_ns = 900000 };
			put(&r);
			if (gtt_writer_flush(W) != 0 && !werr)
				werr = GTT_EIO;
			if (o.max_bytes > 0 && (double)gtt_writer_bytes(W) >= o.max_bytes)
				break;
		}
	}
	cuda_deliver();
	switch_flush(UINT64_MAX);
	gtt_record r = { .tag = GTT_REC_END };
	r.u.end = (gtt_end){ .time_ns = now, .reason = GTT_END_DURATION, .n_samples = n_samples_written,
	                            .n_records = n_written };
	put(&r);
	gtt_writer_stats st;
	gtt_writer_get_stats(W, &st);
	int rc = gtt_writer_close(W);
	double wall = gt_ns_to_s(gtt_now_ns() - wall0), secs = gt_ns_to_s(now - t0);
	FILE *f = fopen(o.out, "rb");
	long size = -1;
	if (f && fseek(f, 0, SEEK_END) == 0)
		size = ftell(f);
	if (f)
		fclose(f);
	fprintf(stderr, "gen_trace: %s: format 1.%u, %.1f s of trace, %" PRIu64 " records, %ld bytes (%.3f MB per trace second), "
	        "written in %.1f s (%.1f MB/s)\n", o.out, st.minor, secs, n_written, size, secs > 0 ? (double)size / secs / 1e6 : 0,
	        wall, wall > 0 ? (double)size / wall / 1e6 : 0);
	free(batch);
	free(sw_pend);
	free(threads);
	if (rc || werr) {
		fprintf(stderr, "gen_trace: %s: %s\n", o.out, gtt_strerror(rc ? rc : werr));
		return GT_EXIT_BROKEN;
	}
	return GT_EXIT_OK;
}
