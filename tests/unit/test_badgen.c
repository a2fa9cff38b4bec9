/* test_badgen.c — the corpus of broken and hostile traces in testdata/bad/: makes every file,
 * checks that the committed copy is byte for byte what this program makes (the corpus is
 * reproducible), and checks what the reader makes of each file.
 *   test_badgen                compare with testdata/bad/ and check the reader (make check)
 *   test_badgen --write DIR    (re)write the corpus and its MANIFEST into DIR
 *   test_badgen --facts TRACE  print what a trace holds, one "key value..." per line (for the
 *                              fault tests in tests/cli/faults.sh; exit 2 when it does not open)
 * Besides traces (.gtt) there are folded stacks (.folded, for gt-render) and `perf script` text
 * (.perf-script, for gt-analyze import-perf).
 * testdata/bad/MANIFEST lists "NAME CLASS WHAT" per file; tests/cli/bad_inputs.sh runs every
 * tool that reads the file's kind on it and holds it to CLASS:
 *   ok        exit 0 and valid output (hostile content must come out escaped, not broken)
 *   truncated exit 0 and a warning on stderr (cut-off trace: analyzed up to the cut)
 *   broken    exit 2 and one clear line on stderr
 *   empty     nothing to show: exit 0, or 1/2 with a clear line
 *   hostile   absurd claims: exit 0 with valid output, exit 1 (partial, e.g. an END record that
 *             disagrees with the trace) with a warning and valid output, or exit 2 with a clear line
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtt.h"
#include "gtt_priv.h" /* varints and the index encoder, for the hand-made 1.1 files (badgen_packed.h) */
#include "testhelp.h"

typedef struct buf {
	uint8_t *p;
	size_t n;
} buf;

/* ---- writing through the real writer into memory ---- */

static int memfd = -1;

static gtt_writer *tw_begin(void)
{
	int err = 0;
	if (memfd < 0)
		memfd = memfd_create("badgen", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, 0) != 0 || lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	/* the corpus of 1.0 chunks: byte-level damage needs one record per chunk */
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = 0;
	gtt_writer *w = gtt_writer_fdopen_opts(dup(memfd), 0, &o, &err);
	if (!w)
		abort();
	return w;
}

static buf tw_end(gtt_writer *w)
{
	buf b = { 0 };
	if (gtt_writer_close(w) != 0)
		abort();
	off_t n = lseek(memfd, 0, SEEK_END);
	b.p = malloc((size_t)n + 1);
	if (!b.p || pread(memfd, b.p, (size_t)n, 0) != n)
		abort();
	b.n = (size_t)n;
	return b;
}

static void put(gtt_writer *w, gtt_record *r)
{
	if (gtt_write(w, r) != 0)
		abort();
}

#define REC(w, TAG, FIELD, ...) do { gtt_record r_; memset(&r_, 0, sizeof(r_)); r_.tag = TAG; \
	r_.u.FIELD = (typeof(r_.u.FIELD)){ __VA_ARGS__ }; put(w, &r_); } while (0)

/* Little-endian payload builder for records the writer would never make. */
typedef struct raw { uint8_t b[256]; size_t n; } raw;
static void r32(raw *r, uint32_t v) { for (int i = 0; i < 4; i++) r->b[r->n++] = (uint8_t)(v >> (8 * i)); }
static void r64(raw *r, uint64_t v) { for (int i = 0; i < 8; i++) r->b[r->n++] = (uint8_t)(v >> (8 * i)); }

/* Deterministic bytes (no rand(): the corpus must not depend on the libc). */
static uint32_t lcg_state = 12345;
static uint32_t lcg(void)
{
	lcg_state = lcg_state * 1103515245u + 12345u;
	return lcg_state >> 8;
}

#define PID 4242u
#define T0 1000000000ull
#define PERIOD 10101010ull /* 99 Hz */
#define PROG_START 0x400000ull
#define LIB_START 0x7f0000000000ull

static const char *const hostile[] = {
	"<script>alert(1)</script>",
	"a&b&amp;c&#0;",
	"\"double\" 'single' `back`",
	"]]><![CDATA[x]]>",
	"semi;colon;name",
	"new\nline\rname",
	"tab\tname 123",
	"ctrl\x01\x1b[31mred\x1b[0m\x7f",
	"bad utf8 \xff\xfe\xc3\x28",
	"%s%n%x%p",
	"back\\slash\\\"q",
	"</svg></text><!-- -->",
	"",
	" ",
};
#define N_HOSTILE (sizeof(hostile) / sizeof(hostile[0]))

static void meta_block(gtt_writer *w, const char *command)
{
	REC(w, GTT_REC_META, meta, .key = "command", .value = command);
	REC(w, GTT_REC_META, meta, .key = "hostname", .value = "bad-corpus");
	REC(w, GTT_REC_META, meta, .key = "recorder", .value = "test_badgen");
	REC(w, GTT_REC_META, meta, .key = "frequency_hz", .value = "99");
	REC(w, GTT_REC_META, meta, .key = "call_graph", .value = "fp");
	REC(w, GTT_REC_META, meta, .key = "clock", .value = "CLOCK_MONOTONIC");
	REC(w, GTT_REC_META, meta, .key = "start_ns", .value = "1000000000");
	REC(w, GTT_REC_META, meta, .key = "nr_cpus", .value = "2");
	REC(w, GTT_REC_META, meta, .key = "mode", .value = "launch");
}

static void proc_block(gtt_writer *w, const char *comm, const char *prog_path, const char *lib_path)
{
	REC(w, GTT_REC_PROCESS, process, .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = comm);
	REC(w, GTT_REC_THREAD, thread, .time_ns = T0, .pid = PID, .tid = PID, .event = GTT_THREAD_START, .name = "main");
	REC(w, GTT_REC_THREAD, thread, .time_ns = T0, .pid = PID, .tid = PID + 1, .event = GTT_THREAD_START,
	    .name = "worker");
	REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG_START,
	    .end = PROG_START + 0x10000, .pgoff = 0, .build_id_len = 4, .build_id = { 0xba, 0xd0, 0xc0, 0x01 },
	    .path = prog_path);
	REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB_START,
	    .end = LIB_START + 0x20000, .pgoff = 0, .build_id_len = 4, .build_id = { 0xba, 0xd0, 0xc0, 0x02 },
	    .path = lib_path);
	REC(w, GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000, .first_line = 10, .name = "train_step",
	    .qualname = "Trainer.train_step", .filename = "/opt/corpus/train.py");
	REC(w, GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x2000, .first_line = 1, .name = "<module>",
	    .qualname = "<module>", .filename = "/opt/corpus/train.py");
}

/* n samples alternating between the two threads, each with a 3-frame user stack and, on the
 * main thread, a 2-frame Python stack read at the same time. */
static void sample_block(gtt_writer *w, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t = T0 + (uint64_t)(i + 1) * PERIOD;
		uint32_t tid = PID + (uint32_t)(i & 1);
		uint64_t ips[3] = { LIB_START + 0x100 + (uint64_t)(i % 3) * 0x40, PROG_START + 0x1234,
		                    PROG_START + 0x1000 };
		REC(w, GTT_REC_SAMPLE, sample, .time_ns = t, .pid = PID, .tid = tid, .cpu = (uint32_t)i & 1,
		    .period_ns = PERIOD, .n_user = 3, .ips = ips);
		if (tid == PID) {
			gtt_py_frame pf[2] = { { 0x1000, 12 + i % 2, 0 }, { 0x2000, 3, GTT_PYFRAME_ENTRY } };
			REC(w, GTT_REC_PY_STACK, py_stack, .time_ns = t, .pid = PID, .tid = tid, .thread_id = 0x5000,
			    .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = 2, .frames = pf);
		}
	}
	REC(w, GTT_REC_GIL, gil, .time_ns = T0, .pid = PID, .holder_tid = PID, .locked = 1, .switches = 1);
}

static void end_block(gtt_writer *w, uint64_t n_samples, uint64_t t_end)
{
	REC(w, GTT_REC_THREAD_CPU, thread_cpu, .time_ns = t_end, .pid = PID, .tid = PID, .utime_ns = 200000000,
	    .stime_ns = 1000000, .nvcsw = 3, .nivcsw = 4, .state = 'R');
	REC(w, GTT_REC_TICKS, ticks, .start_ns = T0, .end_ns = t_end, .source = GTT_SRC_PERF,
	    .flags = GTT_TICKS_WHOLE, .period_ns = PERIOD, .intended = n_samples, .done = n_samples,
	    .late_p50_ns = 1000, .late_p99_ns = 5000, .late_max_ns = 9000);
	REC(w, GTT_REC_THREAD, thread, .time_ns = t_end, .pid = PID, .tid = PID + 1, .event = GTT_THREAD_EXIT,
	    .name = "worker");
	REC(w, GTT_REC_PROCESS, process, .time_ns = t_end, .pid = PID, .ppid = 1, .event = GTT_PROC_EXIT,
	    .status = 0, .comm = "prog");
	REC(w, GTT_REC_END, end, .time_ns = t_end, .reason = GTT_END_TARGET_EXIT, .status = 0,
	    .n_samples = n_samples, .n_records = gtt_writer_records(w));
}

#define BASE_SAMPLES 40

/* The well-formed trace that most broken files are made from. */
static buf base_trace(void)
{
	gtt_writer *w = tw_begin();
	meta_block(w, "prog --corpus");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	sample_block(w, BASE_SAMPLES);
	end_block(w, BASE_SAMPLES, T0 + (BASE_SAMPLES + 1) * PERIOD);
	return tw_end(w);
}

/* Offsets of the chunks of a well-formed image, in order; returns their number. */
static size_t chunk_offsets(const buf *b, size_t *off, size_t cap)
{
	size_t n = 0, at = GTT_HEADER_LEN;
	while (at + GTT_CHUNK_HEADER_LEN <= b->n && n < cap) {
		uint32_t len;
		memcpy(&len, b->p + at + 4, 4); /* little-endian host (x86-64) */
		off[n++] = at;
		at += GTT_CHUNK_HEADER_LEN + len;
	}
	return n;
}

/* Offset of the k-th chunk with the given tag. */
static size_t find_chunk(const buf *b, uint32_t tag, int k)
{
	size_t off[4096];
	size_t n = chunk_offsets(b, off, 4096);
	for (size_t i = 0; i < n; i++) {
		uint32_t t;
		memcpy(&t, b->p + off[i], 4);
		if (t == tag && k-- == 0)
			return off[i];
	}
	abort();
}

static void append(buf *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->n + n + 1);
	if (!b->p)
		abort();
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Append one chunk with a correct CRC around an arbitrary payload. */
static void append_chunk(buf *b, uint32_t tag, const void *payload, uint32_t len)
{
	uint8_t h[GTT_CHUNK_HEADER_LEN];
	for (int i = 0; i < 4; i++) {
		h[i] = (uint8_t)(tag >> (8 * i));
		h[4 + i] = (uint8_t)(len >> (8 * i));
	}
	uint32_t crc = gtt_crc32c(gtt_crc32c(0, h, 8), payload, len);
	for (int i = 0; i < 4; i++)
		h[8 + i] = (uint8_t)(crc >> (8 * i));
	append(b, h, sizeof(h));
	append(b, payload, len);
}

/* Base trace without its END chunk, then extra chunks, then END again. */
static buf base_with(void (*extra)(buf *))
{
	buf b = base_trace();
	size_t end_at = find_chunk(&b, GTT_REC_END, 0);
	buf out = { 0 };
	append(&out, b.p, end_at);
	extra(&out);
	append(&out, b.p + end_at, b.n - end_at);
	free(b.p);
	return out;
}

/* ---- the files ---- */

static buf mk_empty(void) { buf b = { malloc(1), 0 }; return b; }

static buf mk_bad_magic(void)
{
	/* The trace after a text-mode transfer: every CR LF became LF. */
	buf b = base_trace(), out = { 0 };
	for (size_t i = 0; i < b.n; i++)
		if (!(b.p[i] == '\r' && i + 1 < b.n && b.p[i + 1] == '\n'))
			append(&out, b.p + i, 1);
	free(b.p);
	return out;
}

/* Neither a trace nor folded text (tools that also read folded stacks must refuse it too):
 * an ELF header followed by binary noise with no "stack count" line in it. */
static buf mk_not_a_trace(void)
{
	buf b = { 0 };
	append(&b, "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0", 20);
	for (int i = 0; i < 200; i++) {
		uint8_t c = (uint8_t)lcg();
		if (c == '\n' || c == ' ')
			c = 0;
		append(&b, &c, 1);
	}
	return b;
}

static buf mk_newer_version(void)
{
	buf b = base_trace();
	b.p[8] = GTT_VERSION_MAJOR + 1;
	return b;
}

static buf mk_cut_in_header(void) { buf b = base_trace(); b.n = 11; return b; }
static buf mk_header_only(void) { buf b = base_trace(); b.n = GTT_HEADER_LEN; return b; }

static buf mk_zero_samples(void)
{
	gtt_writer *w = tw_begin();
	meta_block(w, "prog --idle");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	end_block(w, 0, T0 + 5 * PERIOD);
	return tw_end(w);
}

/* Cut the base trace inside the 30th sample chunk's header / payload, or right before it. */
static buf cut_sample(size_t extra)
{
	buf b = base_trace();
	b.n = find_chunk(&b, GTT_REC_SAMPLE, 30) + extra;
	return b;
}
static buf mk_cut_chunk_header(void) { return cut_sample(5); }
static buf mk_cut_payload(void) { return cut_sample(GTT_CHUNK_HEADER_LEN + 20); }
static buf mk_cut_at_chunk(void) { return cut_sample(0); }

static buf mk_bad_crc(void)
{
	buf b = base_trace();
	b.p[find_chunk(&b, GTT_REC_SAMPLE, 20) + GTT_CHUNK_HEADER_LEN + 30] ^= 0x40;
	return b;
}

static buf mk_huge_length(void)
{
	buf b = base_trace();
	size_t at = find_chunk(&b, GTT_REC_SAMPLE, 20);
	memcpy(b.p + at + 4, "\xf0\xff\xff\xff", 4);
	return b;
}

static buf mk_length_past_end(void)
{
	buf b = base_trace();
	uint8_t h[GTT_CHUNK_HEADER_LEN + 100] = { GTT_REC_SAMPLE, 0, 0, 0, 0, 0, 0xc0, 0x03 }; /* 60 MiB */
	append(&b, h, sizeof(h));
	return b;
}

static void extra_frames_2e32(buf *b)
{
	/* n_kernel + n_user = 2^32 in two ways, with three real ips behind them. */
	for (int k = 0; k < 2; k++) {
		raw r = { .n = 0 };
		r64(&r, T0 + 5 * PERIOD); r32(&r, PID); r32(&r, PID); r32(&r, 0); r32(&r, 0); r64(&r, PERIOD);
		r32(&r, k ? 0xffffffffu : 1); r32(&r, k ? 1 : 0xffffffffu);
		for (int i = 0; i < 3; i++)
			r64(&r, PROG_START + 0x1000);
		append_chunk(b, GTT_REC_SAMPLE, r.b, (uint32_t)r.n);
	}
}
static buf mk_frames_2e32(void) { return base_with(extra_frames_2e32); }

static void extra_pystack_huge(buf *b)
{
	raw r = { .n = 0 };
	r64(&r, T0 + 5 * PERIOD); r32(&r, PID); r32(&r, PID); r64(&r, 0x5000); r32(&r, 0); r32(&r, 0xffffffffu);
	r64(&r, 0x1000); r32(&r, 1); r32(&r, 0);
	append_chunk(b, GTT_REC_PY_STACK, r.b, (uint32_t)r.n);
}
static buf mk_pystack_huge(void) { return base_with(extra_pystack_huge); }

static void extra_string_huge(buf *b)
{
	raw r = { .n = 0 };
	r64(&r, T0); r32(&r, PID); r32(&r, PID + 2); r32(&r, GTT_THREAD_NAME); r32(&r, 0xffffffffu);
	for (int i = 0; i < 8; i++)
		r.b[r.n++] = 'x';
	append_chunk(b, GTT_REC_THREAD, r.b, (uint32_t)r.n);
}
static buf mk_string_huge(void) { return base_with(extra_string_huge); }

static buf mk_claims_2e32(void)
{
	gtt_writer *w = tw_begin();
	meta_block(w, "prog --claims");
	REC(w, GTT_REC_META, meta, .key = "nr_cpus", .value = "4294967296");
	REC(w, GTT_REC_META, meta, .key = "frequency_hz", .value = "-1");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	sample_block(w, 10);
	REC(w, GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0 + PERIOD, .source = GTT_SRC_PERF,
	    .kind = GTT_HEALTH_LOST, .tid = PID, .count = 1ull << 32, .text = "");
	REC(w, GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0 + PERIOD, .source = GTT_SRC_PERF,
	    .kind = GTT_HEALTH_CONFIG, .value = { 1ull << 40, 0, 1ull << 32, 0 }, .text = "");
	REC(w, GTT_REC_TICKS, ticks, .start_ns = T0, .end_ns = T0 + 11 * PERIOD, .source = GTT_SRC_PYSTACK,
	    .flags = GTT_TICKS_WHOLE, .period_ns = 0, .intended = 1ull << 32, .done = UINT64_MAX,
	    .late_p50_ns = UINT64_MAX, .late_p99_ns = 1, .late_max_ns = 0);
	uint8_t piece[64];
	memset(piece, 0x7f, sizeof(piece));
	REC(w, GTT_REC_ARCHIVE, archive, .build_id_len = 4, .build_id = { 0xba, 0xd0, 0xc0, 0x01 },
	    .path = "/opt/corpus/prog", .kind = GTT_ARCHIVE_ELF, .total_bytes = 1ull << 40,
	    .offset = (1ull << 40) - 64, .len = 64, .data = piece);
	REC(w, GTT_REC_ARCHIVE, archive, .build_id_len = 4, .build_id = { 0xba, 0xd0, 0xc0, 0x02 },
	    .path = "/opt/corpus/libfake.so", .kind = GTT_ARCHIVE_ELF, .total_bytes = UINT64_MAX,
	    .offset = 0, .len = 64, .data = piece);
	REC(w, GTT_REC_END, end, .time_ns = T0 + 11 * PERIOD, .reason = GTT_END_TARGET_EXIT,
	    .n_samples = 1ull << 32, .n_records = 1ull << 32);
	return tw_end(w);
}

/* Hostile text everywhere a name can come from: comm, thread names, mapping paths (frame
 * names of unsymbolized code), Python names and files, meta, CUDA strings. */
static buf mk_hostile_names(void)
{
	char cmd[1024] = "prog";
	for (size_t i = 0; i < N_HOSTILE; i++) {
		strcat(cmd, " ");
		strcat(cmd, hostile[i]);
	}
	gtt_writer *w = tw_begin();
	meta_block(w, cmd);
	REC(w, GTT_REC_META, meta, .key = "<key&\"]]>", .value = "]]>&<\"");
	REC(w, GTT_REC_PROCESS, process, .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START,
	    .comm = "<&\"]]>");
	for (uint32_t i = 0; i < N_HOSTILE; i++) {
		char path[256];
		uint32_t tid = PID + i;
		snprintf(path, sizeof(path), "/opt/<&\"]]>/%s.so", hostile[i]);
		REC(w, GTT_REC_THREAD, thread, .time_ns = T0, .pid = PID, .tid = tid, .event = GTT_THREAD_START,
		    .name = hostile[i]);
		REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5,
		    .start = LIB_START + i * 0x100000ull, .end = LIB_START + i * 0x100000ull + 0x10000,
		    .path = path);
		REC(w, GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000 + i, .first_line = 1,
		    .name = hostile[i], .qualname = hostile[i], .filename = hostile[(i + 3) % N_HOSTILE]);
		REC(w, GTT_REC_STRING, string, .pid = PID, .id = i + 1, .text = hostile[i]);
		REC(w, GTT_REC_CUDA_KERNEL, kernel, .start_ns = T0 + i * 1000, .end_ns = T0 + i * 1000 + 500,
		    .pid = PID, .stream = 7, .correlation = i, .grid = { 1, 1, 1 }, .block = { 32, 1, 1 },
		    .name_id = i + 1);
		REC(w, GTT_REC_NVTX, nvtx, .start_ns = T0, .end_ns = T0 + 1000, .pid = PID, .tid = tid,
		    .kind = GTT_NVTX_RANGE, .name_id = i + 1);
	}
	REC(w, GTT_REC_CUDA_DEVICE, cuda_device, .pid = PID, .device = 0, .cc_major = 9, .sm_count = 132,
	    .name = "<GPU & \"]]>", .uuid = "]]>");
	for (uint32_t k = 0; k < 4; k++)
		for (uint32_t i = 0; i < N_HOSTILE; i++) {
			uint64_t t = T0 + (k * N_HOSTILE + i + 1) * PERIOD;
			uint64_t ips[2] = { LIB_START + i * 0x100000ull + 0x40 * (k + 1),
			                    LIB_START + ((i + 1) % N_HOSTILE) * 0x100000ull + 0x80 };
			gtt_py_frame pf[2] = { { 0x1000 + i, (int32_t)k, 0 },
			                       { 0x1000 + (i + 5) % N_HOSTILE, 1, GTT_PYFRAME_ENTRY } };
			REC(w, GTT_REC_SAMPLE, sample, .time_ns = t, .pid = PID, .tid = PID + i, .period_ns = PERIOD,
			    .n_user = 2, .ips = ips);
			REC(w, GTT_REC_PY_STACK, py_stack, .time_ns = t, .pid = PID, .tid = PID + i,
			    .thread_id = 0x5000 + i, .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = 2, .frames = pf);
		}
	REC(w, GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_PERF,
	    .kind = GTT_HEALTH_NOTE, .text = "note <&\"]]> \x1b[2J");
	REC(w, GTT_REC_END, end, .time_ns = T0 + (4 * N_HOSTILE + 1) * PERIOD, .reason = GTT_END_TARGET_EXIT,
	    .n_samples = 4 * N_HOSTILE, .n_records = gtt_writer_records(w));
	return tw_end(w);
}

/* 64 KB names: comm, thread name, mapping path, Python name, qualname and file. */
static buf mk_long_names(void)
{
	size_t n = 65536;
	char *a = malloc(n + 1), *p = malloc(n + 1), *q = malloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		a[i] = (char)('a' + i % 26);
		p[i] = i % 64 == 0 ? '/' : (char)('A' + i % 26);
		q[i] = i % 100 == 99 ? '.' : (char)('k' + i % 10);
	}
	a[n] = p[n] = q[n] = 0;
	gtt_writer *w = tw_begin();
	meta_block(w, a);
	REC(w, GTT_REC_PROCESS, process, .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = a);
	REC(w, GTT_REC_THREAD, thread, .time_ns = T0, .pid = PID, .tid = PID, .event = GTT_THREAD_START, .name = a);
	REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG_START,
	    .end = PROG_START + 0x10000, .path = p);
	REC(w, GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000, .first_line = 1, .name = a,
	    .qualname = q, .filename = p);
	for (int i = 0; i < 20; i++) {
		uint64_t t = T0 + (uint64_t)(i + 1) * PERIOD;
		uint64_t ips[2] = { PROG_START + 0x100, PROG_START + 0x200 };
		gtt_py_frame pf[1] = { { 0x1000, 5, GTT_PYFRAME_ENTRY } };
		REC(w, GTT_REC_SAMPLE, sample, .time_ns = t, .pid = PID, .tid = PID, .period_ns = PERIOD,
		    .n_user = 2, .ips = ips);
		REC(w, GTT_REC_PY_STACK, py_stack, .time_ns = t, .pid = PID, .tid = PID, .thread_id = 0x5000,
		    .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = 1, .frames = pf);
	}
	REC(w, GTT_REC_END, end, .time_ns = T0 + 21 * PERIOD, .reason = GTT_END_TARGET_EXIT, .n_samples = 20,
	    .n_records = gtt_writer_records(w));
	free(a);
	free(p);
	free(q);
	return tw_end(w);
}

/* 10 000-frame stacks: native (recursion through the same 8 addresses) and Python. */
static buf mk_deep_stack(void)
{
	enum { DEPTH = 10000 };
	uint64_t *ips = malloc(DEPTH * sizeof(*ips));
	gtt_py_frame *pf = malloc(DEPTH * sizeof(*pf));
	for (int i = 0; i < DEPTH; i++) {
		ips[i] = PROG_START + 0x1000 + (uint64_t)(i % 8) * 0x10;
		pf[i] = (gtt_py_frame){ 0x1000 + (uint64_t)(i % 2) * 0x1000, i, i == DEPTH - 1 ? GTT_PYFRAME_ENTRY : 0 };
	}
	gtt_writer *w = tw_begin();
	meta_block(w, "prog --deep");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	for (int i = 0; i < 2; i++) {
		uint64_t t = T0 + (uint64_t)(i + 1) * PERIOD;
		REC(w, GTT_REC_SAMPLE, sample, .time_ns = t, .pid = PID, .tid = PID, .period_ns = PERIOD,
		    .n_user = DEPTH - (uint32_t)i, .ips = ips + i);
		REC(w, GTT_REC_PY_STACK, py_stack, .time_ns = t, .pid = PID, .tid = PID, .thread_id = 0x5000,
		    .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = DEPTH - (uint32_t)i, .frames = pf + i);
	}
	end_block(w, 2, T0 + 3 * PERIOD);
	free(ips);
	free(pf);
	return tw_end(w);
}

static void extra_unknown_tags(buf *b)
{
	static const uint8_t junk[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	append_chunk(b, 99, junk, sizeof(junk));
	append_chunk(b, 1000, junk, 0);
	append_chunk(b, 0xffffffffu, junk, 17);
}
static buf mk_unknown_tags(void) { return base_with(extra_unknown_tags); }

/* Times out of order, zero and at the top of the range; periods 0 and 2^64-1 (sums overflow);
 * a thread that ends before it starts; a mapping with start > end; ips at 0, -1 and in the
 * kernel half with no kernel frames counted; Python frames of code never described; a
 * DWARF-mode sample whose registers and stack copy are noise. */
static buf mk_time_chaos(void)
{
	gtt_writer *w = tw_begin();
	meta_block(w, "prog --chaos");
	proc_block(w, "prog", "/opt/corpus/prog", "/opt/corpus/libfake.so");
	REC(w, GTT_REC_THREAD, thread, .time_ns = T0 + 100, .pid = PID, .tid = PID + 7, .event = GTT_THREAD_EXIT,
	    .name = "backwards");
	REC(w, GTT_REC_THREAD, thread, .time_ns = T0 + 200, .pid = PID, .tid = PID + 7, .event = GTT_THREAD_START,
	    .name = "backwards");
	REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = 0x900000, .end = 0x800000,
	    .pgoff = UINT64_MAX, .path = "/opt/corpus/inverted.so");
	REC(w, GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = 0, .end = UINT64_MAX,
	    .path = "/opt/corpus/everything.so");
	static const uint64_t times[] = { T0 + 5 * PERIOD, T0 + PERIOD, 0, UINT64_MAX, T0 + PERIOD, T0 + 3 * PERIOD,
	                                  UINT64_MAX - 1, 1 };
	static const uint64_t periods[] = { PERIOD, 0, UINT64_MAX, UINT64_MAX, PERIOD, 1, PERIOD, UINT64_MAX / 2 };
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		uint64_t ips[5] = { 0, UINT64_MAX, 0xffffffff81000000ull, PROG_START + 0x10, 0x850000 };
		gtt_py_frame pf[3] = { { 0xdead0000 + i, -1, 0 }, { 0x1000, INT32_MIN, 0 }, { 0, INT32_MAX, 0xff } };
		REC(w, GTT_REC_SAMPLE, sample, .time_ns = times[i], .pid = PID, .tid = PID + (uint32_t)(i % 3) * 7,
		    .cpu = UINT32_MAX, .period_ns = periods[i], .n_kernel = i & 1, .n_user = 5 - (i & 1), .ips = ips);
		REC(w, GTT_REC_PY_STACK, py_stack, .time_ns = times[i], .pid = PID, .tid = PID + (uint32_t)(i % 3) * 7,
		    .thread_id = 0x5000, .flags = (uint32_t)i, .n_frames = 3, .frames = pf);
		REC(w, GTT_REC_GIL, gil, .time_ns = times[(i + 1) % 8], .pid = PID, .holder_tid = (uint32_t)lcg(),
		    .locked = (uint32_t)i);
		REC(w, GTT_REC_SWITCH, sw, .time_ns = times[(i + 2) % 8], .pid = PID, .tid = PID, .cpu = 0,
		    .kind = (uint32_t)i);
	}
	uint64_t regs[64];
	uint8_t stack[4096];
	for (int i = 0; i < 64; i++)
		regs[i] = i == 7 ? 0x7ffd00000000ull : ((uint64_t)lcg() << 32 | lcg());
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)lcg();
	for (int k = 0; k < 4; k++) {
		uint64_t ips[1] = { PROG_START + 0x1234 };
		REC(w, GTT_REC_SAMPLE, sample, .time_ns = T0 + (uint64_t)k * PERIOD, .pid = PID, .tid = PID,
		    .flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK, .period_ns = PERIOD, .n_user = k & 1, .ips = ips,
		    .regs_abi = (uint32_t)k, .regs_mask = k ? UINT64_MAX : 0xff0fffull, .n_regs = k == 3 ? 0 : 64,
		    .regs = regs, .stack_len = k == 2 ? 0 : sizeof(stack), .stack = stack);
	}
	REC(w, GTT_REC_THREAD_CPU, thread_cpu, .time_ns = T0 + 2 * PERIOD, .pid = PID, .tid = PID,
	    .utime_ns = UINT64_MAX, .stime_ns = UINT64_MAX, .state = 0);
	REC(w, GTT_REC_THREAD_CPU, thread_cpu, .time_ns = T0 + PERIOD, .pid = PID, .tid = PID, .utime_ns = 5,
	    .stime_ns = 0, .state = 'Z');
	REC(w, GTT_REC_CUDA_KERNEL, kernel, .start_ns = T0 + 10, .end_ns = T0, .pid = PID, .name_id = 12345);
	REC(w, GTT_REC_CUDA_API, api, .start_ns = UINT64_MAX, .end_ns = 0, .pid = PID, .tid = PID, .name_id = 0);
	REC(w, GTT_REC_COUNTER, counter, .time_ns = T0, .pid = PID, .name_id = 1, .value = NAN);
	REC(w, GTT_REC_END, end, .time_ns = T0, .reason = 999, .status = -1, .n_samples = 0,
	    .n_records = gtt_writer_records(w));
	return tw_end(w);
}

#include "badgen_packed.h"

/* ---- folded stacks and perf script text (for gt-render and gt-analyze import-perf) ---- */

static void append_str(buf *b, const char *s) { append(b, s, strlen(s)); }

static buf mk_folded_hostile(void)
{
	buf b = { 0 };
	for (size_t i = 0; i < N_HOSTILE; i++) {
		char line[512];
		if (strchr(hostile[i], '\n') || strchr(hostile[i], '\r'))
			continue; /* a newline ends a folded line: nothing to escape there */
		snprintf(line, sizeof(line), "main;%s;leaf<&>%zu %zu\n", hostile[i], i, i + 1);
		append_str(&b, line);
	}
	return b;
}

static buf mk_folded_counts(void)
{
	buf b = { 0 };
	append_str(&b, "main;a 18446744073709551615\nmain;b 18446744073709551615\nmain;c 0\n"
	               "main;d 99999999999999999999999\nmain;e 1\n");
	return b;
}

static buf mk_folded_no_counts(void)
{
	buf b = { 0 };
	append_str(&b, "main;a\nmain;b x\nmain;c -5\nmain;d 1.5\n\n   \n");
	return b;
}

static buf mk_folded_deep(void)
{
	buf b = { 0 };
	for (int i = 0; i < 10000; i++) {
		char f[32];
		snprintf(f, sizeof(f), "%sf%d", i ? ";" : "", i % 97);
		append_str(&b, f);
	}
	append_str(&b, " 7\nmain;shallow 3\n");
	return b;
}

static buf mk_folded_long(void)
{
	buf b = { 0 };
	append_str(&b, "main;");
	for (int i = 0; i < 65536; i++)
		append(&b, &"abcdefghijklmnopqrstuvwxyz"[i % 26], 1);
	append_str(&b, ";leaf 5\nmain;other 5\n");
	return b;
}

static buf mk_folded_crlf(void)
{
	buf b = { 0 };
	append_str(&b, "main;a;b 3\r\nmain;a;c 2\r\nmain;d 1\r\n");
	return b;
}

static buf mk_folded_nul(void)
{
	buf b = { 0 };
	append(&b, "main;a\0b;c 3\nmain;\0 2\nmain;d 1\n", 32);
	return b;
}

static buf mk_folded_empty(void) { buf b = { malloc(1), 0 }; return b; }

static buf mk_perf_hostile(void)
{
	buf b = { 0 };
	for (size_t i = 0; i < N_HOSTILE; i++) {
		char s[512];
		if (strchr(hostile[i], '\n') || strchr(hostile[i], '\r'))
			continue;
		snprintf(s, sizeof(s),
		         "prog<&> 4242/4242 [000] 1000.%06zu: 10101010 cpu-clock:uhp: \n"
		         "\t    55555555%04zx %s+0x10 (/opt/<&\"]]>/lib.so)\n"
		         "\t    555555550000 main+0x5 (/opt/corpus/prog)\n\n", i, i, hostile[i]);
		append_str(&b, s);
	}
	/* one 10 000-frame sample and one 64 KB symbol */
	append_str(&b, "prog 4242/4242 [000] 1001.000000: 10101010 cpu-clock:uhp: \n");
	for (int i = 0; i < 10000; i++) {
		char s[96];
		snprintf(s, sizeof(s), "\t    %x f%d+0x1 (/opt/corpus/prog)\n", 0x1000 + i, i % 13);
		append_str(&b, s);
	}
	append_str(&b, "\nprog 4242/4242 [001] 1001.100000: 10101010 cpu-clock:uhp: \n\t    1234 ");
	for (int i = 0; i < 65536; i++)
		append(&b, &"ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26], 1);
	append_str(&b, "+0x1 (/opt/corpus/prog)\n\n");
	return b;
}

static buf mk_perf_garbage(void)
{
	buf b = { 0 };
	for (int i = 0; i < 4096; i++) {
		uint8_t c = (uint8_t)lcg();
		append(&b, &c, 1);
	}
	return b;
}

/* ---- the table ---- */

typedef struct spec {
	const char *name;
	const char *cls;      /* what every tool must do (see the top of this file) */
	const char *what;
	buf (*make)(void);
	int open_rc;          /* gtt_reader_open result */
	int truncated;        /* gtt_reader_truncated at the end */
	int corrupt;          /* GTT_ECORRUPT results */
	int inval;            /* GTT_EINVAL results */
} spec;

static const spec specs[] = {
	{ "base.gtt", "ok", "the well-formed trace most others are made from", base_trace, 0, 0, 0, 0 },
	{ "empty.gtt", "broken", "zero-byte file", mk_empty, GTT_EEMPTY, 0, 0, 0 },
	{ "bad-magic.gtt", "broken", "trace after a text-mode transfer (CR LF became LF)", mk_bad_magic, GTT_EFORMAT, 0, 0, 0 },
	{ "not-a-trace.gtt", "broken", "an ELF header and binary noise", mk_not_a_trace, GTT_EFORMAT, 0, 0, 0 },
	{ "newer-version.gtt", "broken", "format major version 2", mk_newer_version, GTT_EVERSION, 0, 0, 0 },
	{ "cut-in-header.gtt", "empty", "cut off after 11 bytes of header", mk_cut_in_header, 0, 1, 0, 0 },
	{ "header-only.gtt", "empty", "header and no chunks", mk_header_only, 0, 0, 0, 0 },
	{ "zero-samples.gtt", "empty", "a complete recording without samples", mk_zero_samples, 0, 0, 0, 0 },
	{ "cut-chunk-header.gtt", "truncated", "cut inside a chunk header", mk_cut_chunk_header, 0, 1, 0, 0 },
	{ "cut-payload.gtt", "truncated", "cut inside a sample payload", mk_cut_payload, 0, 1, 0, 0 },
	{ "cut-at-chunk.gtt", "ok", "ends at a chunk boundary, no end record", mk_cut_at_chunk, 0, 0, 0, 0 },
	{ "bad-crc.gtt", "broken", "one flipped bit in a sample payload", mk_bad_crc, 0, 0, 1, 0 },
	{ "huge-length.gtt", "broken", "a chunk length of 4 GiB", mk_huge_length, 0, 0, 1, 0 },
	{ "length-past-end.gtt", "truncated", "last chunk claims 60 MiB, 100 bytes follow", mk_length_past_end, 0, 1, 0, 0 },
	{ "frames-2e32.gtt", "broken", "samples claiming 2^32 frames (valid CRC)", mk_frames_2e32, 0, 0, 0, 2 },
	{ "pystack-huge.gtt", "broken", "a Python stack claiming 2^32-1 frames", mk_pystack_huge, 0, 0, 0, 1 },
	{ "string-huge.gtt", "broken", "a thread name claiming 4 GiB", mk_string_huge, 0, 0, 0, 1 },
	{ "claims-2e32.gtt", "hostile", "end/health/ticks/archive claiming 2^32..2^64 of things", mk_claims_2e32, 0, 0, 0, 0 },
	{ "hostile-names.gtt", "ok", "names with < & \" ]]> ; newlines, escapes, bad UTF-8", mk_hostile_names, 0, 0, 0, 0 },
	{ "long-names.gtt", "ok", "64 KB names and paths", mk_long_names, 0, 0, 0, 0 },
	{ "deep-stack.gtt", "hostile", "10 000-frame native and Python stacks", mk_deep_stack, 0, 0, 0, 0 },
	{ "unknown-tags.gtt", "ok", "chunks with tags 99, 1000, 2^32-1", mk_unknown_tags, 0, 0, 0, 0 },
	{ "hostile-names.folded", "ok", "frames with < & \" ]]> escapes, bad UTF-8", mk_folded_hostile, 0, 0, 0, 0 },
	{ "huge-counts.folded", "hostile", "counts of 2^64-1 twice (the sum overflows), 0, and 10^23", mk_folded_counts, 0, 0, 0, 0 },
	{ "no-counts.folded", "broken", "no line ends in a count", mk_folded_no_counts, 0, 0, 0, 0 },
	{ "deep.folded", "hostile", "a 10 000-frame stack", mk_folded_deep, 0, 0, 0, 0 },
	{ "long-frame.folded", "ok", "a 64 KB frame name", mk_folded_long, 0, 0, 0, 0 },
	{ "crlf.folded", "ok", "CR LF line ends", mk_folded_crlf, 0, 0, 0, 0 },
	{ "nul-bytes.folded", "hostile", "NUL bytes inside frame names", mk_folded_nul, 0, 0, 0, 0 },
	{ "empty.folded", "empty", "zero bytes", mk_folded_empty, 0, 0, 0, 0 },
	{ "hostile.perf-script", "ok", "perf script with hostile names, 10 000 frames, a 64 KB symbol", mk_perf_hostile, 0, 0, 0, 0 },
	{ "garbage.perf-script", "broken", "4 KB of binary noise", mk_perf_garbage, 0, 0, 0, 0 },
	{ "time-chaos.gtt", "hostile", "times and periods 0 / 2^64-1 / backwards, inverted mappings, noise regs", mk_time_chaos, 0, 0, 0, 0 },
	{ "packed.gtt", "ok", "format 1.1: the base content in packed chunks (zstd frames of raw blocks) with an index", packed_trace, 0, 0, 0, 0 },
	{ "packed-corrupt.gtt", "broken", "1.1: a zstd frame that does not expand (reserved block type; valid CRC) in the second data chunk", mk_packed_corrupt, 0, 0, 1, 0 },
	{ "packed-huge.gtt", "broken", "1.1: a packed chunk claiming to expand to 4 GiB (valid CRC)", mk_packed_huge, 0, 0, 1, 0 },
	{ "packed-cut.gtt", "truncated", "1.1: cut inside the second packed data chunk", mk_packed_cut, 0, 1, 0, 0 },
	{ "packed-records.gtt", "broken", "1.1: hostile records in a block: undefined callchain, bad task, 11-byte varint, length past the block", mk_packed_records, 0, 0, 0, 4 },
	{ "packed-bad-index.gtt", "ok", "1.1: an index whose entries point into the middle of chunks (valid CRC)", mk_packed_bad_index, 0, 0, 0, 0 },
};
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

/* What the reader makes of one image. */
static void check_reader(const spec *s, const buf *b)
{
	int err = 0, rc, n_ok = 0, n_corrupt = 0, n_inval = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(b->p, b->n, &err);
	th_check(err == s->open_rc, "%s: open gives %s (got %s)", s->name,
	         s->open_rc ? gtt_strerror(s->open_rc) : "ok", err ? gtt_strerror(err) : "ok");
	if (!r)
		return;
	for (int guard = 0; guard < 100000 && (rc = gtt_reader_next(r, &rec)) != 0; guard++) {
		if (rc == 1)
			n_ok++;
		else if (rc == GTT_ECORRUPT)
			n_corrupt++;
		else if (rc == GTT_EINVAL)
			n_inval++;
	}
	th_check(gtt_reader_truncated(r) == s->truncated && n_corrupt == s->corrupt && n_inval == s->inval,
	         "%s: truncated %d, %d corrupt, %d undecodable (got %d, %d, %d; %d records)", s->name,
	         s->truncated, s->corrupt, s->inval, gtt_reader_truncated(r), n_corrupt, n_inval, n_ok);
	gtt_reader_close(r);
}

static int read_file(const char *path, buf *b)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	if (fstat(fileno(f), &st) != 0) {
		fclose(f);
		return -1;
	}
	b->n = (size_t)st.st_size;
	b->p = malloc(b->n + 1);
	size_t got = b->p ? fread(b->p, 1, b->n, f) : 0;
	fclose(f);
	return got == b->n ? 0 : -1;
}

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t put_n = fwrite(p, 1, n, f);
	return (fclose(f) == 0 && put_n == n) ? 0 : -1;
}

/* MANIFEST text: "NAME CLASS WHAT" lines after a comment header. */
static char *manifest(void)
{
	size_t cap = 16384, n = 0;
	char *m = malloc(cap);
	n += (size_t)snprintf(m + n, cap - n,
	                      "# testdata/bad: broken and hostile traces, written by tests/unit/test_badgen.c --write.\n"
	                      "# NAME CLASS WHAT; CLASS says what every tool must do (see tests/cli/bad_inputs.sh).\n");
	for (size_t i = 0; i < N_SPECS; i++)
		n += (size_t)snprintf(m + n, cap - n, "%s %s %s\n", specs[i].name, specs[i].cls, specs[i].what);
	return m;
}

/* --facts: the reader's view of a trace as "key value" lines. */
static int facts(const char *path)
{
	int err = 0, rc;
	gtt_record rec;
	uint64_t n = 0, samples = 0, corrupt = 0, inval = 0, ends = 0, read_err = 0, lost = 0;
	gtt_reader *r = gtt_reader_open(path, &err);
	if (!r) {
		printf("open-error %s\n", gtt_strerror(err));
		return 2;
	}
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc == GTT_ECORRUPT) {
			corrupt++;
			continue;
		}
		if (rc < 0) {
			inval++;
			continue;
		}
		n++;
		switch (rec.tag) {
		case GTT_REC_SAMPLE: samples++; break;
		case GTT_REC_PROCESS:
			if (rec.u.process.event == GTT_PROC_EXIT)
				printf("process-exit %u %d\n", rec.u.process.pid, rec.u.process.status);
			break;
		case GTT_REC_HEALTH:
			if (rec.u.health.kind == GTT_HEALTH_READ_ERRORS)
				read_err += rec.u.health.count;
			if (rec.u.health.kind == GTT_HEALTH_LOST)
				lost += rec.u.health.count;
			break;
		case GTT_REC_END:
			ends++;
			printf("end %u %d %llu\n", rec.u.end.reason, rec.u.end.status,
			       (unsigned long long)rec.u.end.n_samples);
			break;
		default: break;
		}
	}
	printf("records %llu\nsamples %llu\ncorrupt %llu\nundecodable %llu\ntruncated %d\nends %llu\n"
	       "read-errors %llu\nlost %llu\n", (unsigned long long)n, (unsigned long long)samples,
	       (unsigned long long)corrupt, (unsigned long long)inval, gtt_reader_truncated(r),
	       (unsigned long long)ends, (unsigned long long)read_err, (unsigned long long)lost);
	gtt_reader_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096];
	if (argc == 3 && strcmp(argv[1], "--facts") == 0)
		return facts(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		for (size_t i = 0; i < N_SPECS; i++) {
			lcg_state = 12345;
			buf b = specs[i].make();
			snprintf(path, sizeof(path), "%s/%s", argv[2], specs[i].name);
			if (write_file(path, b.p, b.n) != 0) {
				fprintf(stderr, "test_badgen: %s: %s\n", path, strerror(errno));
				return 2;
			}
			free(b.p);
		}
		char *m = manifest();
		snprintf(path, sizeof(path), "%s/MANIFEST", argv[2]);
		int rc = write_file(path, m, strlen(m));
		free(m);
		return rc ? 2 : 0;
	}
	const char *root = getenv("GT_ROOT") ? getenv("GT_ROOT") : ".";
	for (size_t i = 0; i < N_SPECS; i++) {
		buf b, have = { 0 };
		lcg_state = 12345;
		b = specs[i].make();
		if (strstr(specs[i].name, ".gtt"))
			check_reader(&specs[i], &b);
		snprintf(path, sizeof(path), "%s/testdata/bad/%s", root, specs[i].name);
		int same = read_file(path, &have) == 0 && have.n == b.n && memcmp(have.p, b.p, b.n) == 0;
		th_check(same, "testdata/bad/%s is what the generator makes (else: %s --write testdata/bad)",
		         specs[i].name, argv[0]);
		free(b.p);
		free(have.p);
	}
	char *m = manifest();
	buf have = { 0 };
	snprintf(path, sizeof(path), "%s/testdata/bad/MANIFEST", root);
	th_check(read_file(path, &have) == 0 && have.n == strlen(m) && memcmp(have.p, m, have.n) == 0,
	         "testdata/bad/MANIFEST matches the generator's table");
	free(m);
	free(have.p);
	return th_report();
}
