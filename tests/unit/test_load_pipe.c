/* test_load_pipe.c — the loader's decode-ahead pipe (analyze/load_pipe.c) hands a pass the same
 * results as its own gtt_reader_next calls would: every result and offset in order, and of each
 * record what the pass uses (a sample's figures, a Python read's frames, definitions whole with
 * their names, CUDA call stacks, archive pieces), on whole, damaged and cut packed traces (pass 2:
 * samples whole, with their positions), with and without zstd prefetch, with more Python frames
 * than a batch holds and a meta value larger than a batch's copies; the thread waits on the pass
 * only for those; and it stops cleanly when the pass ends early. Records diverted
 * (ana_pipe_divert: pass 1's switches) reach their function in order and never come out, the
 * rest comes out as read, and the function's error ends the reading there. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "load_pipe.h"
#include "memtrace.h"
#include "testhelp.h"

typedef struct buf { uint8_t *p; size_t n; } buf;

static uint64_t lcg_state = 7;
static uint32_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 33);
}

/* Switches, samples (callchains, stack copies), Python reads of 1 to 3000 frames, GIL, CUDA
 * kernels and API calls, strings and callchain definitions between them, in small blocks. */
static buf make_trace(int level)
{
	int fd;
	buf b = { 0 };
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.level = level;
	o.block_bytes = 16384;
	gtt_writer *w = memtrace_open("load_pipe", &o, &fd);
	static uint8_t stack[65536];
	static gtt_py_frame pf[3000];
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)lcg();
	for (size_t i = 0; i < sizeof(pf) / sizeof(pf[0]); i++)
		pf[i] = (gtt_py_frame){ 0x7f00 + i * 16, (int32_t)i, 0 };
	uint64_t regs[3] = { 1, 2, 3 }, ips[4] = { 0x401000, 0x401100, 0x401200, 0x401300 };
	char text[32];
	static char big[100000]; /* a meta value larger than a batch's copies */
	memset(big, 'v', sizeof(big) - 1);
	for (int i = 0; i < 30000; i++) {
		uint64_t t = 1000000000ull + (uint64_t)i * 1000 + lcg() % 700;
		uint32_t pid = 100 + lcg() % 3, tid = pid * 10 + lcg() % 40;
		gtt_record r;
		memset(&r, 0, sizeof(r));
		switch (lcg() % 10) {
		case 0:
		case 1:
			r.tag = GTT_REC_SWITCH;
			r.u.sw = (gtt_switch){ .time_ns = t, .pid = pid, .tid = tid, .cpu = lcg() % 8, .kind = lcg() % 2 };
			break;
		case 2:
			r.tag = GTT_REC_SAMPLE;
			r.u.sample = (gtt_sample){ .time_ns = t, .pid = pid, .tid = tid, .cpu = 1, .period_ns = 1000000 + i,
			                           .n_user = 1 + lcg() % 4, .ips = ips };
			if (lcg() % 2) {
				r.u.sample.flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK;
				r.u.sample.n_regs = 3;
				r.u.sample.regs = regs;
				r.u.sample.regs_mask = 7;
				r.u.sample.stack = stack;
				/* now and then a big copy: a batch holds only some of them */
				r.u.sample.stack_len = (uint32_t)(lcg() % (lcg() % 4 ? 512 : sizeof(stack)));
				r.u.sample.stack = stack + lcg() % 64;
				r.u.sample.stack_len -= r.u.sample.stack_len > sizeof(stack) - 64 ? 64 : 0;
			}
			break;
		case 3:
			r.tag = GTT_REC_PY_STACK;
			r.u.py_stack = (gtt_py_stack){ .time_ns = t, .pid = pid, .tid = tid, .frames = pf + lcg() % 64,
			                               .n_frames = lcg() % 50 ? 1 + lcg() % 40 : 2000 + lcg() % 900 };
			break;
		case 4:
			r.tag = GTT_REC_GIL;
			r.u.gil = (gtt_gil){ .time_ns = t, .pid = pid, .holder_tid = tid, .locked = lcg() % 2 };
			break;
		case 5:
			r.tag = GTT_REC_CUDA_KERNEL;
			r.u.kernel = (gtt_cuda_kernel){ .start_ns = t, .end_ns = t + 500, .pid = pid, .correlation = (uint32_t)i,
			                                .name_id = lcg() % 5 };
			break;
		case 6:
			r.tag = GTT_REC_CUDA_API;
			r.u.api = (gtt_cuda_api){ .start_ns = t, .end_ns = t + 300, .pid = pid, .tid = tid,
			                          .correlation = (uint32_t)i, .name_id = 7 };
			break;
		case 7:
			/* the other definitions a pass takes the names of, and stacks taken in CUDA calls */
			snprintf(text, sizeof(text), "def-%d", i);
			switch (lcg() % 12) {
			case 0:
				r.tag = GTT_REC_THREAD;
				r.u.thread = (gtt_thread){ .time_ns = t, .pid = pid, .tid = tid, .event = GTT_THREAD_NAME, .name = text };
				break;
			case 1:
				r.tag = GTT_REC_PY_CODE;
				r.u.py_code = (gtt_py_code){ .pid = pid, .code_id = 0x7f00 + (uint64_t)i * 16, .first_line = i,
				                             .name = text, .qualname = "Q.q", .filename = "/src/f.py" };
				break;
			case 2:
				r.tag = GTT_REC_META;
				r.u.meta = (gtt_meta){ .key = text, .value = "value" };
				break;
			case 3:
				r.tag = GTT_REC_PROCESS;
				r.u.process = (gtt_process){ .time_ns = t, .pid = pid, .ppid = 1, .event = GTT_PROC_EXEC, .comm = text };
				break;
			case 4:
				r.tag = GTT_REC_MAPPING;
				r.u.mapping = (gtt_mapping){ .time_ns = t, .pid = pid, .start = 0x400000, .end = 0x500000, .path = text };
				break;
			case 5:
				r.tag = GTT_REC_PY_THREAD;
				r.u.py_thread = (gtt_py_thread){ .time_ns = t, .pid = pid, .tid = tid, .ident = (uint64_t)i, .name = text };
				break;
			case 6:
				r.tag = GTT_REC_HEALTH;
				r.u.health = (gtt_health){ .time_ns = t, .end_ns = t + 9, .kind = 1, .count = (uint64_t)i, .text = text };
				break;
			case 7:
				r.tag = GTT_REC_CAPTURE;
				r.u.capture = (gtt_capture){ .time_ns = t, .event = GTT_CAPTURE_START, .source = GTT_CAPTURE_NVTX, .name = text };
				break;
			case 8:
				r.tag = GTT_REC_CLOCK;
				r.u.clock = (gtt_clock){ .mono_ns = t, .realtime_ns = t * 3, .kind = GTT_CLOCK_PERIODIC,
				                         .hostname = text, .boot_id = "b00t" };
				break;
			case 9:
				r.tag = GTT_REC_CUDA_DEVICE;
				r.u.cuda_device = (gtt_cuda_device){ .pid = pid, .device = (uint32_t)i, .name = text, .uuid = "GPU-1" };
				break;
			case 10:
				r.tag = GTT_REC_ARCHIVE;
				r.u.archive = (gtt_archive){ .build_id_len = 4, .path = text, .kind = GTT_ARCHIVE_ELF,
				                             .total_bytes = 1u << 20, .offset = (uint64_t)i,
				                             .len = 1 + lcg() % 3000, .data = stack + lcg() % 1000 };
				break;
			default:
				r.tag = GTT_REC_CUDA_CALLSTACK;
				r.u.callstack = (gtt_cuda_callstack){ .time_ns = t, .pid = pid, .tid = tid, .correlation = (uint32_t)i,
				                                      .n_native = lcg() % 5, .ips = ips, .n_py = lcg() % 30,
				                                      .py = pf + lcg() % 64 };
				break;
			}
			break;
		default:
			snprintf(text, sizeof(text), "name-%d", i);
			r.tag = GTT_REC_STRING;
			r.u.string = (gtt_string){ .pid = pid, .id = (uint32_t)i, .text = text };
			break;
		}
		if (i % 5000 == 11) {
			r.tag = GTT_REC_META;
			r.u.meta = (gtt_meta){ .key = "big", .value = big };
		}
		if (gtt_write(w, &r) != 0)
			abort();
	}
	b.p = memtrace_close(w, fd, &b.n);
	return b;
}

/* What a pass of mode uses of rec, as text: equal texts, equal use. */
static void use_of(int mode, int rc, uint64_t off, const gtt_pos *pos, const gtt_record *rec, char *s, size_t cap)
{
	int k = snprintf(s, cap, "%d@%llu", rc, (unsigned long long)off);
	if (rc <= 0)
		return;
	k += snprintf(s + k, cap - (size_t)k, " tag %u", rec->tag);
	const gtt_sample *sm = &rec->u.sample;
	const gtt_py_stack *p = &rec->u.py_stack;
	switch (rec->tag) {
	case GTT_REC_SAMPLE:
		k += snprintf(s + k, cap - (size_t)k, " %llu %u %u %u %llu", (unsigned long long)sm->time_ns, sm->pid,
		              sm->tid, sm->cpu, (unsigned long long)sm->period_ns);
		if (mode == ANA_PIPE_PASS2) {
			/* pass 2 unwinds it: all of it, and where it is */
			uint64_t h = 1469598103934665603ull;
			for (uint32_t i = 0; i < sm->n_kernel + sm->n_user; i++)
				h = (h ^ sm->ips[i]) * 1099511628211ull;
			for (uint32_t i = 0; sm->regs && i < sm->n_regs; i++)
				h = (h ^ sm->regs[i]) * 1099511628211ull;
			for (uint32_t i = 0; i < sm->stack_len; i++)
				h = (h ^ sm->stack[i]) * 1099511628211ull;
			snprintf(s + k, cap - (size_t)k, " %u+%u %u %u %llx pos %llu.%u", sm->n_kernel, sm->n_user, sm->n_regs,
			         sm->stack_len, (unsigned long long)h, (unsigned long long)pos->chunk, pos->index);
		}
		break;
	case GTT_REC_PY_STACK:
		k += snprintf(s + k, cap - (size_t)k, " %llu %u %u %u", (unsigned long long)p->time_ns, p->pid, p->tid,
		              p->n_frames);
		for (uint32_t i = 0; mode == ANA_PIPE_PASS3 && i < p->n_frames && (size_t)k < cap - 40; i++)
			k += snprintf(s + k, cap - (size_t)k, " %llx:%d", (unsigned long long)p->frames[i].code_id,
			              p->frames[i].line);
		break;
	case GTT_REC_SWITCH:
		snprintf(s + k, cap - (size_t)k, " %llu %u %u %u %u", (unsigned long long)rec->u.sw.time_ns, rec->u.sw.pid,
		         rec->u.sw.tid, rec->u.sw.cpu, rec->u.sw.kind);
		break;
	case GTT_REC_GIL:
		snprintf(s + k, cap - (size_t)k, " %llu %u %u %u", (unsigned long long)rec->u.gil.time_ns, rec->u.gil.pid,
		         rec->u.gil.holder_tid, rec->u.gil.locked);
		break;
	case GTT_REC_CUDA_KERNEL:
		snprintf(s + k, cap - (size_t)k, " %llu %llu %u %u", (unsigned long long)rec->u.kernel.start_ns,
		         (unsigned long long)rec->u.kernel.end_ns, rec->u.kernel.correlation, rec->u.kernel.name_id);
		break;
	case GTT_REC_CUDA_API:
		snprintf(s + k, cap - (size_t)k, " %llu %llu %u %u", (unsigned long long)rec->u.api.start_ns,
		         (unsigned long long)rec->u.api.end_ns, rec->u.api.correlation, rec->u.api.tid);
		break;
	case GTT_REC_STRING:
		/* pass 3 takes no string: only pass 1 reads its text */
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %s", rec->u.string.id, rec->u.string.text);
		break;
	/* pass 1 takes the names of the other definitions (pass 3 none) */
	case GTT_REC_THREAD:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %u %s", rec->u.thread.tid, rec->u.thread.event, rec->u.thread.name);
		break;
	case GTT_REC_PY_CODE:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %llx %s %s %s", (unsigned long long)rec->u.py_code.code_id,
			         rec->u.py_code.name, rec->u.py_code.qualname, rec->u.py_code.filename);
		break;
	case GTT_REC_META:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %s=%zu:%.40s", rec->u.meta.key, strlen(rec->u.meta.value),
			         rec->u.meta.value + strlen(rec->u.meta.value) / 2);
		break;
	case GTT_REC_PROCESS:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %s", rec->u.process.pid, rec->u.process.comm);
		break;
	case GTT_REC_MAPPING:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %s", rec->u.mapping.pid, rec->u.mapping.path);
		break;
	case GTT_REC_PY_THREAD:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %s", rec->u.py_thread.tid, rec->u.py_thread.name);
		break;
	case GTT_REC_HEALTH:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %llu %s", (unsigned long long)rec->u.health.count, rec->u.health.text);
		break;
	case GTT_REC_CAPTURE:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %llu %s", (unsigned long long)rec->u.capture.time_ns, rec->u.capture.name);
		break;
	case GTT_REC_CLOCK:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %llu %s %s", (unsigned long long)rec->u.clock.mono_ns,
			         rec->u.clock.hostname, rec->u.clock.boot_id);
		break;
	case GTT_REC_CUDA_DEVICE:
		if (mode != ANA_PIPE_PASS3)
			snprintf(s + k, cap - (size_t)k, " %u %s %s", rec->u.cuda_device.device, rec->u.cuda_device.name,
			         rec->u.cuda_device.uuid);
		break;
	case GTT_REC_ARCHIVE:
		if (mode != ANA_PIPE_PASS3) {
			uint64_t h = 1469598103934665603ull;
			for (uint32_t i = 0; i < rec->u.archive.len; i++)
				h = (h ^ rec->u.archive.data[i]) * 1099511628211ull;
			snprintf(s + k, cap - (size_t)k, " %s %llu %u %llx", rec->u.archive.path,
			         (unsigned long long)rec->u.archive.offset, rec->u.archive.len, (unsigned long long)h);
		}
		break;
	case GTT_REC_CUDA_CALLSTACK:
		if (mode != ANA_PIPE_PASS3) {
			const gtt_cuda_callstack *c = &rec->u.callstack;
			k += snprintf(s + k, cap - (size_t)k, " %u %u+%u", c->correlation, c->n_native, c->n_py);
			for (uint32_t i = 0; i < c->n_native; i++)
				k += snprintf(s + k, cap - (size_t)k, " %llx", (unsigned long long)c->ips[i]);
			for (uint32_t i = 0; i < c->n_py; i++)
				k += snprintf(s + k, cap - (size_t)k, " %llx:%d", (unsigned long long)c->py[i].code_id, c->py[i].line);
		}
		break;
	default:
		break;
	}
}

typedef struct seq { char **v; size_t n, cap; } seq;
static void seq_add(seq *q, const char *s)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 1024;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
	}
	q->v[q->n++] = strdup(s);
}
static void seq_free(seq *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i]);
	free(q->v);
}

static char line[65536];
static int threaded = 1; /* piped(): ana_pipe_start's threaded */

/* A reader of t set up as the pass mode sets its own. */
static gtt_reader *pass_reader(const buf *t, int mode, int prefetch)
{
	int err = 0;
	gtt_reader *r = gtt_reader_open_mem(t->p, t->n, &err);
	if (!r)
		abort();
	if (prefetch)
		gtt_reader_prefetch(r);
	if (mode == ANA_PIPE_PASS2)
		gtt_reader_only(r, GTT_KIND_BIT(GTT_REC_SAMPLE));
	return r;
}

/* Whether the pass stops after the result rc (skip_bad: it reads on after corrupt chunks). */
static int ends(int rc, int skip_bad)
{
	return rc == 0 || (rc < 0 && !(skip_bad && (rc == GTT_ECORRUPT || rc == GTT_EINVAL)));
}

/* The results a pass reads itself (skip_bad: on after corrupt chunks, as the pipe does). */
static seq direct(const buf *t, int mode, int skip_bad, int prefetch)
{
	seq q = { 0 };
	gtt_record rec;
	gtt_reader *r = pass_reader(t, mode, prefetch);
	for (;;) {
		gtt_pos pos = { 0, 0 };
		int rc = gtt_reader_next(r, &rec);
		gtt_reader_tell(r, &pos);
		use_of(mode, rc, gtt_reader_offset(r), &pos, &rec, line, sizeof(line));
		seq_add(&q, line);
		if (ends(rc, skip_bad))
			break;
	}
	gtt_reader_close(r);
	return q;
}

static size_t last_waits; /* ana_pipe_waits of piped()'s last pipe that read to the end */

static seq piped(const buf *t, int mode, int skip_bad, int prefetch, size_t stop_after)
{
	seq q = { 0 };
	gtt_reader *r = pass_reader(t, mode, prefetch);
	ana_pipe *p = ana_pipe_start(r, mode, skip_bad, threaded);
	if (!p)
		abort();
	for (size_t i = 0; i < stop_after; i++) {
		gtt_record *rec = NULL;
		uint64_t off = 0;
		int rc = ana_pipe_next(p, &rec, &off);
		use_of(mode, rc, off, ana_pipe_pos(p), rec, line, sizeof(line));
		seq_add(&q, line);
		if (ends(rc, skip_bad)) {
			/* called again after the end: the end again */
			if (rc == 0)
				th_check(ana_pipe_next(p, &rec, &off) == 0, "the end stays the end");
			last_waits = ana_pipe_waits(p);
			break;
		}
	}
	ana_pipe_free(p);
	gtt_reader_close(r);
	return q;
}

static int same(const seq *a, const seq *b, size_t *at)
{
	size_t i = 0;
	for (; i < a->n && i < b->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			break;
	*at = i;
	return i == a->n && i == b->n;
}

static void compare(const char *what, const buf *t, int skip_bad)
{
	static const char *modes[] = { "pass 1", "pass 3", "pass 2" };
	for (int mode = ANA_PIPE_PASS1_STREAM; mode <= ANA_PIPE_PASS2; mode++)
		for (int pf = 0; pf < 2; pf++) {
			seq a = direct(t, mode, skip_bad, pf), b = piped(t, mode, skip_bad, pf, SIZE_MAX);
			size_t at;
			int ok = same(&a, &b, &at);
			th_check(ok && a.n > 1, "%s, %s, prefetch %d, skip_bad %d%s: %zu results the same as the reader's own",
			         what, modes[mode], pf, skip_bad, threaded ? "" : ", no thread", a.n);
			/* definitions and CUDA call stacks travel in the batches: the thread waits on the
			 * pass only for what no batch holds (a 100 kB meta value, a Python read of more
			 * frames than a batch's), a few records of the 30 000, not one in ten */
			if (threaded)
				th_check(last_waits < a.n / 200, "%s, %s, prefetch %d: the thread waited on the pass for %zu of %zu records",
				         what, modes[mode], pf, last_waits, a.n);
			if (!ok)
				printf("  first difference at %zu: '%.200s' vs '%.200s'\n", at, at < a.n ? a.v[at] : "(none)",
				       at < b.n ? b.v[at] : "(none)");
			seq_free(&a);
			seq_free(&b);
		}
}

/* ---- records diverted (ana_pipe_divert): pass 1's switches folded on the pipe's thread ---- */

typedef struct div_ctx { seq q, seen; int fail_at; } div_ctx;

/* ana_pipe_divert.see: every record read, diverted or not, as pass 1 uses it */
static void see_fn(void *ctx, const gtt_record *rec)
{
	div_ctx *c = ctx;
	static const gtt_pos none = { 0, 0 };
	char s[512];
	gtt_record copy = *rec;
	use_of(ANA_PIPE_PASS1_STREAM, 1, 0, &none, &copy, s, sizeof(s));
	seq_add(&c->seen, s);
}

static int div_fn(void *ctx, gtt_record *rec)
{
	div_ctx *c = ctx;
	static const gtt_pos none = { 0, 0 };
	char s[512];
	if (c->fail_at >= 0 && (int)c->q.n == c->fail_at)
		return GTT_ENOMEM;
	use_of(ANA_PIPE_PASS1_STREAM, 1, 0, &none, rec, s, sizeof(s));
	seq_add(&c->q, s);
	return 0;
}

/* The switches a pass reads (as div_fn describes them) and its other results, read directly;
 * every record read, as see_fn describes them, in *all (NULL: not kept). */
static void direct_split(const buf *t, int skip_bad, int prefetch, seq *sw, seq *rest, seq *all)
{
	static const gtt_pos none = { 0, 0 };
	gtt_record rec;
	gtt_reader *r = pass_reader(t, ANA_PIPE_PASS1_STREAM, prefetch);
	for (;;) {
		gtt_pos pos = { 0, 0 };
		int rc = gtt_reader_next(r, &rec);
		gtt_reader_tell(r, &pos);
		if (rc > 0 && all) {
			use_of(ANA_PIPE_PASS1_STREAM, 1, 0, &none, &rec, line, sizeof(line));
			seq_add(all, line);
		}
		if (rc > 0 && rec.tag == GTT_REC_SWITCH) {
			use_of(ANA_PIPE_PASS1_STREAM, 1, 0, &none, &rec, line, sizeof(line));
			seq_add(sw, line);
			continue;
		}
		use_of(ANA_PIPE_PASS1_STREAM, rc, gtt_reader_offset(r), &pos, &rec, line, sizeof(line));
		seq_add(rest, line);
		if (ends(rc, skip_bad))
			break;
	}
	gtt_reader_close(r);
}

/* The pipe's results with the switches diverted to c (NULL: results only up to the error). */
static seq piped_divert(const buf *t, int skip_bad, int prefetch, div_ctx *c, int *last_rc)
{
	seq q = { 0 };
	gtt_reader *r = pass_reader(t, ANA_PIPE_PASS1_STREAM, prefetch);
	ana_pipe_divert d = { .mask = GTT_KIND_BIT(GTT_REC_SWITCH), .fn = div_fn, .ctx = c, .see = see_fn };
	ana_pipe *p = ana_pipe_start_divert(r, ANA_PIPE_PASS1_STREAM, skip_bad, threaded, &d);
	if (!p)
		abort();
	for (;;) {
		gtt_record *rec = NULL;
		uint64_t off = 0;
		int rc = ana_pipe_next(p, &rec, &off);
		use_of(ANA_PIPE_PASS1_STREAM, rc, off, ana_pipe_pos(p), rec, line, sizeof(line));
		seq_add(&q, line);
		*last_rc = rc;
		if (ends(rc, skip_bad))
			break;
	}
	ana_pipe_free(p);
	gtt_reader_close(r);
	return q;
}

static void test_divert(const char *what, const buf *t)
{
	for (int pf = 0; pf < 2; pf++) {
		seq sw = { 0 }, rest = { 0 }, all = { 0 };
		div_ctx c = { .fail_at = -1 };
		int last = 0;
		direct_split(t, 1, pf, &sw, &rest, &all);
		seq b = piped_divert(t, 1, pf, &c, &last);
		size_t at1, at2, at3;
		int ok1 = same(&sw, &c.q, &at1), ok2 = same(&rest, &b, &at2), ok3 = same(&all, &c.seen, &at3);
		th_check(ok1 && sw.n > 100, "%s, prefetch %d%s: the %zu switches go to the divert function, in order (%zu)",
		         what, pf, threaded ? "" : ", no thread", sw.n, c.q.n);
		th_check(ok2 && rest.n > 100, "%s, prefetch %d%s: the other %zu results come out as read (%zu)", what, pf,
		         threaded ? "" : ", no thread", rest.n, b.n);
		th_check(ok3 && all.n > sw.n, "%s, prefetch %d%s: every record read, diverted or not, is "
		         "seen first, in order (%zu of %zu)", what, pf, threaded ? "" : ", no thread", c.seen.n, all.n);
		seq_free(&b);
		seq_free(&c.q);
		seq_free(&c.seen);
		seq_free(&all);
		/* the function fails at the 100th switch: the reading ends there with its error */
		div_ctx f = { .fail_at = 100 };
		b = piped_divert(t, 1, pf, &f, &last);
		th_check(last == GTT_ENOMEM && f.q.n == 100 && b.n < rest.n, "%s, prefetch %d%s: the function's error ends the reading (%zu results)",
		         what, pf, threaded ? "" : ", no thread", b.n);
		seq_free(&b);
		seq_free(&f.q);
		seq_free(&f.seen);
		seq_free(&sw);
		seq_free(&rest);
	}
}

int main(void)
{
	buf z = make_trace(3), plain = make_trace(-1);
	compare("zstd", &z, 1);
	compare("stored", &plain, 1);
	threaded = 0; /* a window's pipe: the pass reads itself */
	compare("zstd", &z, 1);
	threaded = 1;

	/* damaged: a byte of a chunk in the middle flipped (a checksum mismatch) */
	buf d = { malloc(z.n), z.n };
	memcpy(d.p, z.p, z.n);
	d.p[z.n / 2] ^= 0x5a;
	compare("damaged", &d, 1);
	compare("damaged", &d, 0);

	/* cut inside a chunk */
	buf c = { z.p, z.n * 3 / 5 + 17 };
	compare("cut", &c, 1);

	test_divert("zstd", &z);
	test_divert("damaged", &d);
	threaded = 0;
	test_divert("zstd", &z);
	threaded = 1;

	/* the pass ends early (an error of its own): the thread stops, nothing leaks or hangs */
	for (size_t k = 0; k < 2800; k += 617) {
		seq a = piped(&z, k % 2 ? ANA_PIPE_PASS2 : ANA_PIPE_PASS3, 1, 1, k);
		th_check(a.n == k, "stopped after %zu of the records: the pipe frees cleanly", k);
		seq_free(&a);
	}
	free(d.p);
	free(z.p);
	free(plain.p);
	return th_report();
}
