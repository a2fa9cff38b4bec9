/* test_advgen.c — the hostile traces of the adversarial pass (docs/ADVERSARIAL.md), written
 * through lib's writer: records whose every field is legal to encode but whose values are
 * absurd or contradict each other (NaN counters, kernels ending before they start, undefined
 * string ids, capture records out of order, a million thread renames, pids reused, time going
 * backwards, 2^64 - 1 counts). tests/cli/adversarial.sh runs every tool on them.
 *   test_advgen                        write each scenario in 1.0 and 1.1 into memory and check
 *                                      that the reader gives back every record written
 *   test_advgen --write SCENARIO OUT MINOR   write one scenario (MINOR 0 or 1)
 *   test_advgen --list                 the scenario names */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "gtt.h"
#include "testhelp.h"

#define PID 4242u
#define T0 1000000000ull
#define PERIOD 10101010ull
#define PROG 0x400000ull
#define LIB 0x7f0000000000ull

static gtt_writer *w;
static void put(gtt_record *r)
{
	int rc = gtt_write(w, r);
	if (rc != 0) { fprintf(stderr, "write tag %u: %s\n", r->tag, gtt_strerror(rc)); abort(); }
}
#define REC(TAG, FIELD, ...) do { gtt_record r_; memset(&r_, 0, sizeof(r_)); r_.tag = TAG; \
	r_.u.FIELD = (typeof(r_.u.FIELD)){ __VA_ARGS__ }; put(&r_); } while (0)

static void meta(const char *k, const char *v) { REC(GTT_REC_META, meta, .key = k, .value = v); }
static void base_meta(void)
{
	meta("command", "prog --adv");
	meta("hostname", "adv");
	meta("recorder", "gen");
	meta("frequency_hz", "99");
	meta("call_graph", "fp");
	meta("clock", "CLOCK_MONOTONIC");
	meta("start_ns", "1000000000");
	meta("nr_cpus", "2");
	meta("mode", "launch");
}
static void base_proc(void)
{
	REC(GTT_REC_PROCESS, process, .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "prog");
	REC(GTT_REC_THREAD, thread, .time_ns = T0, .pid = PID, .tid = PID, .event = GTT_THREAD_START, .name = "main");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG, .end = PROG + 0x10000,
	    .build_id_len = 4, .build_id = { 1, 2, 3, 4 }, .path = "/opt/prog");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB, .end = LIB + 0x20000,
	    .build_id_len = 4, .build_id = { 1, 2, 3, 5 }, .path = "/opt/lib.so");
}
static void sample(uint64_t t, uint32_t pid, uint32_t tid, uint64_t period)
{
	uint64_t ips[3] = { LIB + 0x100, PROG + 0x1234, PROG + 0x1000 };
	REC(GTT_REC_SAMPLE, sample, .time_ns = t, .pid = pid, .tid = tid, .cpu = 0, .period_ns = period, .n_user = 3,
	    .ips = ips);
}
static void samples(int n)
{
	for (int i = 0; i < n; i++)
		sample(T0 + (uint64_t)(i + 1) * PERIOD, PID, PID, PERIOD);
}
static void end(uint64_t n_samples, uint64_t t)
{
	REC(GTT_REC_END, end, .time_ns = t, .reason = GTT_END_TARGET_EXIT, .n_samples = n_samples,
	    .n_records = gtt_writer_records(w));
}
static void str(uint32_t pid, uint32_t id, const char *s) { REC(GTT_REC_STRING, string, .pid = pid, .id = id, .text = s); }

static void kernel(uint64_t s, uint64_t e, uint32_t stream, uint32_t name_id, uint32_t dev, uint32_t corr)
{
	REC(GTT_REC_CUDA_KERNEL, kernel, .start_ns = s, .end_ns = e, .pid = PID, .device = dev, .context = 1,
	    .stream = stream, .correlation = corr, .grid = { 1, 1, 1 }, .block = { 32, 1, 1 }, .name_id = name_id);
}
static void api(uint64_t s, uint64_t e, uint32_t tid, uint32_t corr, uint32_t name_id)
{
	REC(GTT_REC_CUDA_API, api, .start_ns = s, .end_ns = e, .pid = PID, .tid = tid, .correlation = corr,
	    .domain = GTT_API_RUNTIME, .cbid = 211, .name_id = name_id);
}
static void device(void)
{
	REC(GTT_REC_CUDA_DEVICE, cuda_device, .pid = PID, .device = 0, .cc_major = 9, .sm_count = 132,
	    .global_mem_bytes = 1ull << 37, .name = "H200", .uuid = "GPU-0");
}

/* ---- scenarios ---- */
static void sc_counters(void)
{
	base_meta(); base_proc(); samples(50);
	str(PID, 1, "temp"); str(PID, 2, "power"); str(PID, 3, ""); str(PID, 0xffffffffu, "maxid");
	double v[] = { NAN, INFINITY, -INFINITY, 1e308, -1e308, -0.0, 5e-324, 42, -NAN, 1.7976931348623157e308 };
	for (int i = 0; i < 10; i++) {
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 1, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 2, .value = 100 + i);
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 3, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 0xffffffffu, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 777, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = 999, .name_id = 1, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = UINT64_MAX - (uint64_t)i, .pid = PID, .name_id = 2, .value = v[i]);
		REC(GTT_REC_COUNTER, counter, .time_ns = 0, .pid = PID, .name_id = 2, .value = v[i]);
	}
	end(50, T0 + 51 * PERIOD);
}
static void sc_counters_only_nan(void)
{
	base_meta(); base_proc(); samples(50);
	str(PID, 1, "temp");
	for (int i = 0; i < 10; i++)
		REC(GTT_REC_COUNTER, counter, .time_ns = T0 + (uint64_t)i * PERIOD, .pid = PID, .name_id = 1, .value = NAN);
	end(50, T0 + 51 * PERIOD);
}
static void sc_gpu(void)
{
	base_meta(); base_proc(); samples(50); device();
	str(PID, 1, "_Z6kernelv"); str(PID, 2, "cudaLaunchKernel"); str(PID, 3, "");
	for (uint32_t i = 0; i < 100; i++) {
		uint64_t s = T0 + i * 1000000ull;
		kernel(s, s + 500000, 7, 1, 0, i + 1);
		api(s - 1000, s - 500, PID, i + 1, 2);
	}
	kernel(T0 + 5, T0 + 1, 7, 1, 0, 1000);          /* end < start */
	kernel(T0 + 5, T0 + 5, 7, 1, 0, 1001);          /* zero length */
	kernel(0, UINT64_MAX, 8, 1, 0, 1002);           /* the whole of time */
	kernel(UINT64_MAX - 10, UINT64_MAX, 9, 1, 0, 1003);
	kernel(T0, T0 + 1000, 0xffffffffu, 0xffffffffu, 0xffffffffu, 1004); /* undefined name, device max */
	kernel(T0, T0 + 1000, 10, 777, 0, 1005);         /* undefined name */
	kernel(T0, T0 + 1000, 11, 3, 0, 0);              /* empty name */
	api(T0 + 10, T0 + 1, PID, 1000, 2);              /* end < start */
	api(0, UINT64_MAX, 99999, 1002, 2);              /* unknown tid, all of time */
	api(T0, T0 + 100, PID, 1, 0xffffffffu);          /* duplicate correlation */
	REC(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = T0, .end_ns = T0, .pid = PID, .stream = 7, .correlation = 2000,
	    .kind = GTT_MEMCPY_HTOD, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = T0 + 10, .end_ns = T0, .pid = PID, .stream = 7, .correlation = 2001,
	    .kind = 99, .bytes = 1 << 20);
	REC(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = T0, .end_ns = T0 + 1, .pid = PID, .stream = 7, .correlation = 2002,
	    .kind = GTT_MEMCPY_DTOH, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = T0, .end_ns = T0 + 1, .pid = PID, .stream = 7, .correlation = 2003,
	    .kind = GTT_MEMCPY_DTOH, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_MEMSET, memset, .start_ns = T0, .end_ns = UINT64_MAX, .pid = PID, .stream = 7, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_SYNC, sync, .start_ns = T0 + 100, .end_ns = T0, .pid = PID, .stream = 7, .kind = 77);
	REC(GTT_REC_CUDA_ALLOC, alloc, .time_ns = T0, .pid = PID, .op = GTT_ALLOC_ALLOC, .address = 0x1000, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_ALLOC, alloc, .time_ns = T0 + 1, .pid = PID, .op = GTT_ALLOC_ALLOC, .address = 0x2000, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_ALLOC, alloc, .time_ns = T0 + 2, .pid = PID, .op = GTT_ALLOC_FREE, .address = 0x3000, .bytes = 5);
	REC(GTT_REC_CUDA_ALLOC, alloc, .time_ns = T0 + 3, .pid = PID, .op = GTT_ALLOC_FREE, .address = 0x1000, .bytes = UINT64_MAX);
	REC(GTT_REC_CUDA_ALLOC, alloc, .time_ns = T0 + 4, .pid = PID, .op = 9, .address = 0x1000, .bytes = 1);
	REC(GTT_REC_NVTX, nvtx, .start_ns = T0 + 100, .end_ns = T0, .pid = PID, .tid = PID, .kind = GTT_NVTX_RANGE, .name_id = 2, .depth = 0xffffffffu);
	REC(GTT_REC_NVTX, nvtx, .start_ns = 0, .end_ns = UINT64_MAX, .pid = PID, .tid = PID, .kind = GTT_NVTX_RANGE, .name_id = 777, .depth = 0);
	REC(GTT_REC_NVTX, nvtx, .start_ns = T0, .end_ns = T0 + 5, .pid = PID, .tid = 99999, .kind = 9, .name_id = 1, .depth = 100000);
	end(50, T0 + 51 * PERIOD);
}
static void sc_gpu_streams(void)
{
	/* 20 000 distinct streams and devices: layout rows per stream */
	base_meta(); base_proc(); samples(50); device();
	str(PID, 1, "_Z6kernelv");
	for (uint32_t i = 0; i < 20000; i++)
		kernel(T0 + i * 100ull, T0 + i * 100ull + 50, i * 7919u, 1, i % 5000, i + 1);
	end(50, T0 + 51 * PERIOD);
}
static void sc_callstack(void)
{
	base_meta(); base_proc(); samples(50); device();
	str(PID, 2, "cudaLaunchKernel");
	REC(GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000, .first_line = 1, .name = "f", .qualname = "f", .filename = "a.py");
	static uint64_t ips[60000];
	static gtt_py_frame pf[60000];
	for (int i = 0; i < 60000; i++) { ips[i] = PROG + 0x1000 + (uint64_t)(i % 50); pf[i] = (gtt_py_frame){ i % 3 ? 0x1000 : 0xdead, -5, 0xffffffffu }; }
	uint32_t ns[] = { 0, 1, 60000, 255, 256, 4096 };
	for (int k = 0; k < 6; k++) {
		api(T0 + k * 1000ull, T0 + k * 1000ull + 500, PID, 50 + k, 2);
		REC(GTT_REC_CUDA_CALLSTACK, callstack, .time_ns = T0 + k * 1000ull, .call_ns = UINT64_MAX, .pid = PID, .tid = PID,
		    .correlation = 50 + (uint32_t)k, .domain = 9, .cbid = 211, .name_id = k & 1 ? 2 : 777, .flags = 0xffffffffu,
		    .function = UINT64_MAX, .n_native = ns[k], .ips = ips, .n_py = ns[5 - k], .py = pf);
		REC(GTT_REC_CUDA_CALLSTACK, callstack, .time_ns = UINT64_MAX, .call_ns = 0, .pid = 31337, .tid = 1,
		    .correlation = 0, .domain = 1, .cbid = 0, .name_id = 0, .flags = 0,
		    .function = 0, .n_native = ns[k], .ips = ips, .n_py = ns[k], .py = pf);
		kernel(T0 + k * 1000ull + 600, T0 + k * 1000ull + 900, 7, 2, 0, 50 + (uint32_t)k);
	}
	end(50, T0 + 51 * PERIOD);
}
static void cap(uint64_t t, uint32_t ev, uint32_t src, uint32_t pid, const char *name)
{
	REC(GTT_REC_CAPTURE, capture, .time_ns = t, .pid = pid, .tid = pid, .event = ev, .source = src, .name = name);
}
static void sc_capture(int variant)
{
	base_meta(); base_proc();
	switch (variant) {
	case 0: /* nested starts, then stops, out of order times */
		cap(T0 + 30 * PERIOD, GTT_CAPTURE_START, GTT_CAPTURE_SIGNAL, 0, "");
		cap(T0 + 10 * PERIOD, GTT_CAPTURE_START, GTT_CAPTURE_SIGNAL, 0, "");
		cap(T0 + 20 * PERIOD, GTT_CAPTURE_STOP, GTT_CAPTURE_SIGNAL, 0, "");
		cap(T0 + 5 * PERIOD, GTT_CAPTURE_STOP, GTT_CAPTURE_SIGNAL, 0, "");
		break;
	case 1: /* stop without start, start never closed */
		cap(T0 + 10 * PERIOD, GTT_CAPTURE_STOP, GTT_CAPTURE_DELAY, 0, "");
		cap(T0 + 40 * PERIOD, GTT_CAPTURE_START, GTT_CAPTURE_DELAY, 0, "");
		break;
	case 2: /* bogus events and sources, times at the ends of u64 */
		cap(0, 0, 0, 0, "");
		cap(UINT64_MAX, 99, 99, 0, "");
		cap(UINT64_MAX, GTT_CAPTURE_START, 99, 0, "");
		cap(0, GTT_CAPTURE_STOP, GTT_CAPTURE_RING, 0, "");
		cap(T0, GTT_CAPTURE_START, GTT_CAPTURE_NVTX, 77, "range\xff\n<&>");
		cap(T0 + 1, GTT_CAPTURE_STOP, GTT_CAPTURE_NVTX, 77, "");
		break;
	case 3: /* 100 000 alternating windows */
		for (int i = 0; i < 100000; i++)
			cap(T0 + (uint64_t)i * 500, i & 1 ? GTT_CAPTURE_STOP : GTT_CAPTURE_START, GTT_CAPTURE_SIGNAL, 0, "");
		break;
	case 4: /* a start after every sample */
		cap(T0 + 1000 * PERIOD, GTT_CAPTURE_START, GTT_CAPTURE_SIGNAL, 0, "");
		break;
	}
	samples(50);
	end(50, T0 + 51 * PERIOD);
}
static void sc_renames(void)
{
	base_meta(); base_proc();
	char name[64];
	for (int i = 0; i < 200000; i++) {
		snprintf(name, sizeof name, "n%d", i);
		REC(GTT_REC_THREAD, thread, .time_ns = T0 + (uint64_t)i, .pid = PID, .tid = PID, .event = GTT_THREAD_NAME, .name = name);
	}
	samples(50);
	end(50, T0 + 51 * PERIOD);
}
static void sc_pid_reuse(void)
{
	base_meta();
	/* the same pid started, exited and started again with other content; tid reused across pids */
	for (int k = 0; k < 3; k++) {
		uint64_t t = T0 + (uint64_t)k * 100 * PERIOD;
		char comm[32];
		snprintf(comm, sizeof comm, "gen%d", k);
		REC(GTT_REC_PROCESS, process, .time_ns = t, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = comm);
		REC(GTT_REC_THREAD, thread, .time_ns = t, .pid = PID, .tid = PID, .event = GTT_THREAD_START, .name = comm);
		REC(GTT_REC_THREAD, thread, .time_ns = t, .pid = PID + 1 + (uint32_t)k, .tid = 5000, .event = GTT_THREAD_START, .name = "shared-tid");
		REC(GTT_REC_MAPPING, mapping, .time_ns = t, .pid = PID, .prot = 5, .start = PROG, .end = PROG + 0x10000,
		    .build_id_len = 4, .build_id = { 1, 2, 3, (uint8_t)(10 + k) }, .path = k ? "/opt/other" : "/opt/prog");
		for (int i = 0; i < 10; i++) {
			sample(t + (uint64_t)(i + 1) * PERIOD, PID, PID, PERIOD);
			sample(t + (uint64_t)(i + 1) * PERIOD, PID + 1 + (uint32_t)k, 5000, PERIOD);
		}
		REC(GTT_REC_PROCESS, process, .time_ns = t + 20 * PERIOD, .pid = PID, .ppid = 1, .event = GTT_PROC_EXIT, .comm = comm);
	}
	end(60, T0 + 400 * PERIOD);
}
static void sc_time_back(void)
{
	base_meta(); base_proc();
	for (int i = 50; i > 0; i--)
		sample(T0 + (uint64_t)i * PERIOD, PID, PID, PERIOD);
	sample(0, PID, PID, PERIOD);
	sample(T0 - 1, PID, PID, PERIOD);
	sample(UINT64_MAX, PID, PID, PERIOD);
	sample(UINT64_MAX / 2, PID, PID, UINT64_MAX);
	end(54, T0);
}
static void sc_meta_hostile(void)
{
	meta("command", "");
	meta("frequency_hz", "nan");
	meta("frequency_hz", "-5");
	meta("start_ns", "18446744073709551616");
	meta("nr_cpus", "0");
	meta("call_graph", "dwarf\n");
	meta("clock", "CLOCK_REALTIME");
	meta("mode", "attach");
	meta("", "");
	base_proc(); samples(50);
	end(50, T0 + 51 * PERIOD);
}
static void sc_end_twice(void)
{
	base_meta(); base_proc(); samples(25);
	end(25, T0 + 26 * PERIOD);
	samples(25);
	end(50, T0 + 51 * PERIOD);
}
static void sc_threadcpu(void)
{
	base_meta(); base_proc(); samples(50);
	REC(GTT_REC_THREAD_CPU, thread_cpu, .time_ns = T0 + 10, .pid = PID, .tid = PID, .utime_ns = UINT64_MAX, .stime_ns = UINT64_MAX, .nvcsw = UINT64_MAX, .state = 0);
	REC(GTT_REC_THREAD_CPU, thread_cpu, .time_ns = T0 + 20, .pid = PID, .tid = PID, .utime_ns = 5, .stime_ns = 5, .nvcsw = 1, .state = 0xffffffffu);
	REC(GTT_REC_THREAD_CPU, thread_cpu, .time_ns = T0 + 30, .pid = PID, .tid = 31337, .utime_ns = UINT64_MAX, .stime_ns = 1, .state = 'Z');
	REC(GTT_REC_TICKS, ticks, .start_ns = T0 + 100, .end_ns = T0, .source = GTT_SRC_PERF, .flags = GTT_TICKS_WHOLE,
	    .period_ns = 0, .intended = 0, .done = UINT64_MAX, .late_p50_ns = UINT64_MAX, .late_p99_ns = 1, .late_max_ns = 0);
	REC(GTT_REC_TICKS, ticks, .start_ns = T0, .end_ns = UINT64_MAX, .source = 99, .flags = 0,
	    .period_ns = 1, .intended = UINT64_MAX, .done = UINT64_MAX, .late_p50_ns = UINT64_MAX, .late_p99_ns = UINT64_MAX, .late_max_ns = UINT64_MAX);
	REC(GTT_REC_HEALTH, health, .time_ns = T0 + 100, .end_ns = T0, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_LAG_WINDOW, .value = { UINT64_MAX }, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = 0, .end_ns = UINT64_MAX, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_THROTTLE, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = 0, .end_ns = UINT64_MAX, .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_OVERHEAD, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_LOST, .count = UINT64_MAX, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_LOST, .count = UINT64_MAX, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_DROPPED, .count = UINT64_MAX, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_CUPTI, .kind = GTT_HEALTH_DROPPED, .count = 2, .text = "");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = 77, .kind = 77, .count = 2, .text = "x");
	REC(GTT_REC_HEALTH, health, .time_ns = T0, .end_ns = T0, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_CONFIG, .value = { UINT64_MAX, 0, UINT64_MAX }, .text = "");
	REC(GTT_REC_SWITCH, sw, .time_ns = T0 + 5, .pid = PID, .tid = PID, .cpu = 0xffffffffu, .kind = GTT_SWITCH_IN);
	REC(GTT_REC_SWITCH, sw, .time_ns = T0 + 1, .pid = PID, .tid = PID, .cpu = 0xffffffffu, .kind = GTT_SWITCH_OUT);
	REC(GTT_REC_SWITCH, sw, .time_ns = T0 + 1, .pid = PID, .tid = PID, .cpu = 3, .kind = 99);
	REC(GTT_REC_SWITCH, sw, .time_ns = UINT64_MAX, .pid = PID, .tid = PID, .cpu = 3, .kind = GTT_SWITCH_OUT);
	REC(GTT_REC_GIL, gil, .time_ns = T0 + 5, .pid = PID, .holder_tid = 99999, .locked = 1, .switches = UINT64_MAX);
	REC(GTT_REC_GIL, gil, .time_ns = T0 + 1, .pid = PID, .holder_tid = PID, .locked = 7, .switches = 0);
	end(50, T0 + 51 * PERIOD);
}
static void sc_samples_odd(void)
{
	base_meta(); base_proc();
	for (int i = 0; i < 50; i++) {
		uint64_t t = T0 + (uint64_t)(i + 1) * PERIOD;
		uint64_t ips[3] = { LIB + 0x100, PROG + 0x1234, PROG + 0x1000 };
		REC(GTT_REC_SAMPLE, sample, .time_ns = t, .pid = i % 5 == 0 ? 0 : PID, .tid = i % 7 == 0 ? 0 : PID,
		    .cpu = i % 3 == 0 ? 0xffffffffu : 1, .period_ns = i % 4 == 0 ? 0 : UINT64_MAX / 3, .n_user = 3, .ips = ips,
		    .flags = GTT_SAMPLE_KERNEL);
	}
	end(50, T0 + 51 * PERIOD);
}
static void sc_pystack(void)
{
	base_meta(); base_proc();
	REC(GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000, .first_line = INT32_MIN, .name = "", .qualname = "", .filename = "");
	REC(GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0x1000, .first_line = 5, .name = "redef", .qualname = "redef", .filename = "b.py");
	REC(GTT_REC_PY_CODE, py_code, .pid = PID, .code_id = 0, .first_line = 5, .name = "zero", .qualname = "zero", .filename = "z.py");
	for (int i = 0; i < 50; i++) {
		uint64_t t = T0 + (uint64_t)(i + 1) * PERIOD;
		sample(t, PID, PID, PERIOD);
		gtt_py_frame pf[3] = { { 0x1000, INT32_MIN, 0xffffffffu }, { 0xdead, INT32_MAX, 0 }, { 0, -1, GTT_PYFRAME_ENTRY } };
		REC(GTT_REC_PY_STACK, py_stack, .time_ns = t + (i & 1 ? 0 : UINT64_MAX / 2), .pid = PID, .tid = i % 2 ? PID : 99999,
		    .thread_id = (uint64_t)i, .flags = 0xffffffffu, .n_frames = 3, .frames = pf);
	}
	end(50, T0 + 51 * PERIOD);
}
static void sc_mappings(void)
{
	base_meta();
	REC(GTT_REC_PROCESS, process, .time_ns = T0, .pid = PID, .ppid = 1, .event = GTT_PROC_START, .comm = "prog");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = 0, .end = UINT64_MAX, .pgoff = UINT64_MAX,
	    .build_id_len = 0, .path = "");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG, .end = PROG, .pgoff = 0,
	    .build_id_len = 4, .build_id = { 1, 2, 3, 4 }, .path = "/opt/prog");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG, .end = PROG + 0x100, .pgoff = UINT64_MAX - 5,
	    .build_id_len = 64, .build_id = { 1, 2, 3, 4 }, .path = "/opt/prog");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB, .end = LIB + 0x20000, .pgoff = 0,
	    .build_id_len = 4, .build_id = { 1, 2, 3, 4 }, .path = "/bin/sh");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB + 0x100, .end = LIB + 0x200, .pgoff = 0,
	    .build_id_len = 0, .path = "/proc/self/mem");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB + 0x300, .end = LIB + 0x400, .pgoff = 0,
	    .build_id_len = 0, .path = "/dev/zero");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = LIB + 0x500, .end = LIB + 0x600, .pgoff = 0,
	    .build_id_len = 0, .path = "/nonexistent/fifo");
	for (int i = 0; i < 50; i++) {
		uint64_t ips[6] = { LIB + 0x150, LIB + 0x350, LIB + 0x550, PROG + 0x10, UINT64_MAX, 0 };
		REC(GTT_REC_SAMPLE, sample, .time_ns = T0 + (uint64_t)(i + 1) * PERIOD, .pid = PID, .tid = PID, .period_ns = PERIOD,
		    .n_user = 6, .ips = ips);
	}
	end(50, T0 + 51 * PERIOD);
}
static void sc_many_threads_pids(void)
{
	base_meta();
	for (uint32_t p = 1; p <= 5000; p++) {
		REC(GTT_REC_PROCESS, process, .time_ns = T0, .pid = p, .ppid = p - 1, .event = GTT_PROC_START, .comm = "p");
		sample(T0 + p, p, p, PERIOD);
	}
	end(5000, T0 + 30000);
}

/* --scope system: 500 short children of 2 ms on-CPU each (switch records), a sample in one of
 * five: 1 s of CPU between them, 99 samples owed at 99 Hz, 100 taken */
static void sc_short_children(void)
{
	meta("command", "sh -c fork");
	meta("frequency_hz", "99");
	meta("call_graph", "fp");
	meta("start_ns", "1000000000");
	meta("scope", "system");
	meta("mode", "launch");
	REC(GTT_REC_MAPPING, mapping, .time_ns = T0, .pid = PID, .prot = 5, .start = PROG, .end = PROG + 0x10000,
	    .build_id_len = 4, .build_id = { 1, 2, 3, 4 }, .path = "/opt/prog");
	for (uint32_t k = 0; k < 500; k++) {
		uint32_t pid = PID + 1 + k;
		uint64_t t = T0 + k * 2000000ull;
		REC(GTT_REC_PROCESS, process, .time_ns = t, .pid = pid, .ppid = PID, .event = GTT_PROC_FORK, .comm = "sh");
		REC(GTT_REC_THREAD, thread, .time_ns = t, .pid = pid, .tid = pid, .event = GTT_THREAD_START, .name = "sh");
		REC(GTT_REC_SWITCH, sw, .time_ns = t, .pid = pid, .tid = pid, .cpu = 0, .kind = GTT_SWITCH_IN);
		if (k % 5 == 0)
			sample(t + 1000000, pid, pid, PERIOD);
		REC(GTT_REC_SWITCH, sw, .time_ns = t + 2000000, .pid = pid, .tid = pid, .cpu = 0, .kind = GTT_SWITCH_OUT);
		REC(GTT_REC_THREAD, thread, .time_ns = t + 2000000, .pid = pid, .tid = pid, .event = GTT_THREAD_EXIT, .name = "sh");
	}
	end(100, T0 + 500 * 2000000ull);
}

typedef struct scenario { const char *name; void (*fn)(void); } scenario;
static void sc_capture0(void) { sc_capture(0); }
static void sc_capture1(void) { sc_capture(1); }
static void sc_capture2(void) { sc_capture(2); }
static void sc_capture3(void) { sc_capture(3); }
static void sc_capture4(void) { sc_capture(4); }
static const scenario scenarios[] = {
	{ "counters", sc_counters },       { "counters_nan", sc_counters_only_nan },
	{ "gpu", sc_gpu },                 { "gpu_streams", sc_gpu_streams },
	{ "callstack", sc_callstack },     { "capture_nested", sc_capture0 },
	{ "capture_unclosed", sc_capture1 }, { "capture_bogus", sc_capture2 },
	{ "capture_many", sc_capture3 },   { "capture_late", sc_capture4 },
	{ "renames", sc_renames },         { "pid_reuse", sc_pid_reuse },
	{ "time_back", sc_time_back },     { "meta", sc_meta_hostile },
	{ "end_twice", sc_end_twice },     { "health_absurd", sc_threadcpu },
	{ "samples_odd", sc_samples_odd }, { "pystack", sc_pystack },
	{ "mappings", sc_mappings },       { "many_pids", sc_many_threads_pids },
	{ "short_children", sc_short_children },
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

/* Write scenario k in format 1.minor to fd; the number of records written. */
static uint64_t write_scenario(size_t k, int fd, uint32_t minor)
{
	int err = 0;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	if (!(w = gtt_writer_fdopen_opts(fd, 0, &o, &err)))
		return 0;
	scenarios[k].fn();
	uint64_t n = gtt_writer_records(w);
	return gtt_writer_close(w) == 0 ? n : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (size_t k = 0; k < N_SCENARIOS; k++)
			printf("%s\n", scenarios[k].name);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "--write") == 0) {
		for (size_t k = 0; k < N_SCENARIOS; k++) {
			if (strcmp(scenarios[k].name, argv[2]) != 0)
				continue;
			FILE *f = fopen(argv[3], "w");
			if (!f) {
				fprintf(stderr, "test_advgen: %s: %s\n", argv[3], strerror(errno));
				return 2;
			}
			uint64_t n = write_scenario(k, dup(fileno(f)), (uint32_t)atoi(argv[4]));
			fclose(f);
			return n ? 0 : 2;
		}
		fprintf(stderr, "test_advgen: no scenario %s (--list)\n", argv[2]);
		return 64;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: test_advgen [--list | --write SCENARIO OUT MINOR]\n");
		return 64;
	}
	/* each scenario reads back whole: absurd values are legal to encode and must decode as
	 * written (the tools, not the reader, judge them) */
	for (size_t k = 0; k < N_SCENARIOS; k++) {
		for (uint32_t minor = 0; minor <= 1; minor++) {
			int fd = memfd_create("advgen", MFD_CLOEXEC), err = 0, rc;
			uint64_t written = fd >= 0 ? write_scenario(k, dup(fd), minor) : 0, read = 0, bad = 0;
			gtt_record rec;
			char path[64];
			snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
			gtt_reader *r = gtt_reader_open(path, &err);
			while (r && (rc = gtt_reader_next(r, &rec)) != 0) {
				if (rc < 0)
					bad++;
				else if (rec.tag != GTT_REC_CALLCHAIN &&
				         !(rec.tag == GTT_REC_META && strcmp(rec.u.meta.key, "compression") == 0))
					read++; /* the 1.1 writer's own records (interned chains, its codec) aside */
			}
			th_check(written && r && !bad && read == written && !gtt_reader_truncated(r),
			         "%s (1.%u): the reader gives back the %llu records written (%llu read, %llu errors)",
			         scenarios[k].name, minor, (unsigned long long)written, (unsigned long long)read,
			         (unsigned long long)bad);
			gtt_reader_close(r);
			close(fd);
		}
	}
	return th_report();
}
