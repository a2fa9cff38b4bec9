/* encode_check.c — checks record/cupti_encode.c without a GPU: builds CUPTI activity buffers by
 * hand (the layout cuptiActivityGetNextRecord walks), translates them into a trace and reads it
 * back. Compiled and run by tests/cli/gpu_agent.sh where CUDA headers and libcupti exist.
 * Usage: encode_check OUT.gtt [AGENT.so SIDEDIR] — with an agent, also load it the way libcuda
 * does and check that it leaves a side file (a note on a machine without a GPU). */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cupti.h>
#include "cupti_agent.h"
#include "testhelp.h"

static uint8_t buf[1 << 16] __attribute__((aligned(8)));
static size_t used;

static void *put(const void *rec, size_t len)
{
	void *p = buf + used;
	memcpy(p, rec, len);
	used += (len + 7) & ~(size_t)7;
	return p;
}

static CUpti_ActivityAPI api(int kind, uint32_t cbid, uint64_t s, uint64_t e, uint32_t tid, uint32_t corr)
{
	CUpti_ActivityAPI a;
	memset(&a, 0, sizeof(a));
	a.kind = (CUpti_ActivityKind)kind;
	a.cbid = cbid;
	a.start = s;
	a.end = e;
	a.processId = 42;
	a.threadId = tid;
	a.correlationId = corr;
	return a;
}

static void kernel(const char *name, uint64_t s, uint64_t e, uint32_t stream, uint32_t corr)
{
	CUpti_ActivityKernel10 k;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = s;
	k.end = e;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = stream;
	k.correlationId = corr;
	k.gridX = 128; k.gridY = 1; k.gridZ = 1;
	k.blockX = 256; k.blockY = 1; k.blockZ = 1;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 2048;
	k.registersPerThread = 32;
	k.name = name;
	put(&k, sizeof(k));
}

static void marker(uint32_t flags, uint32_t id, uint64_t t, const char *name, const char *domain)
{
	CUpti_ActivityMarker2 m;
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = (CUpti_ActivityFlag)flags;
	m.timestamp = t;
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = 42;
	m.objectId.pt.threadId = 7;
	m.name = name;
	m.domain = domain;
	put(&m, sizeof(m));
}

/* One buffer of every kind; returns nothing, fills buf/used. */
static void fill(void)
{
	used = 0;
	/* thread 7: a driver call nested in a runtime launch (it ends first, so it comes first) */
	CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1020, 1080, 7, 5);
	put(&a, sizeof(a));
	a = api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1000, 1100, 7, 5);
	put(&a, sizeof(a));
	/* thread 8: a driver call of its own (the allocator), not nested */
	a = api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 1050, 1090, 8, 6);
	put(&a, sizeof(a));
	/* thread 7 again: runtime sync, then a nested driver call that comes after its runtime record */
	a = api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 2000, 3000, 7, 9);
	put(&a, sizeof(a));
	a = api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, 2010, 2990, 7, 9);
	put(&a, sizeof(a));

	static char name2[] = "_Z4gemmPfi";    /* same text at another address: one string */
	kernel("_Z4gemmPfi", 1500, 2500, 13, 5);
	kernel(name2, 2600, 2700, 14, 10);

	CUpti_ActivityMemcpy6 c;
	memset(&c, 0, sizeof(c));
	c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	c.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	c.bytes = 4096;
	c.start = 2800;
	c.end = 2900;
	c.streamId = 13;
	c.correlationId = 11;
	put(&c, sizeof(c));

	CUpti_ActivityMemset4 ms;
	memset(&ms, 0, sizeof(ms));
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.value = 0;
	ms.bytes = 512;
	ms.start = 2950;
	ms.end = 2960;
	put(&ms, sizeof(ms));

	CUpti_ActivitySynchronization2 sy;
	memset(&sy, 0, sizeof(sy));
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	sy.start = 2000;
	sy.end = 3000;
	sy.streamId = 13;
	sy.correlationId = 9;
	put(&sy, sizeof(sy));

	CUpti_ActivityMemory4 mem;
	memset(&mem, 0, sizeof(mem));
	mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	mem.address = 0x7f0000;
	mem.bytes = 1 << 20;
	mem.timestamp = 1060;
	put(&mem, sizeof(mem));
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	mem.timestamp = 3500;
	put(&mem, sizeof(mem));

	marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 77, 900, "step", "trainer");
	CUpti_ActivityMarkerData2 md;
	memset(&md, 0, sizeof(md));
	md.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
	md.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
	md.id = 77;
	md.color = 0xff00ff00;
	put(&md, sizeof(md));
	marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 78, 950, "forward", "trainer");
	marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 78, 1900, NULL, NULL);
	marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 77, 4000, NULL, NULL);
	marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 79, 1234, "checkpoint", NULL);

	CUpti_ActivityOverhead3 o;
	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.threadId = 99;
	o.start = 5000;
	o.end = 5100;
	put(&o, sizeof(o));
}

typedef struct seen {
	int tags[32];
	int n_api_drv, n_api_rt, gemm_strings, range_ok, range_nested_ok, marker_ok, kernel_ok, names_ok;
	int memcpy_ok, alloc_ok, sync_ok, overhead_ok;
	uint32_t gemm_id, kernel_ids[2];
} seen;

static void read_trace(const char *path, seen *s)
{
	memset(s, 0, sizeof(*s));
	int err = 0, nk = 0;
	gtt_reader *r = gtt_reader_open(path, &err);
	gtt_record rec;
	char names[8][64];
	uint32_t ids[8];
	int n_names = 0;
	while (r && gtt_reader_next(r, &rec) == 1) {
		if (rec.tag < 32)
			s->tags[rec.tag]++;
		switch (rec.tag) {
		case GTT_REC_STRING:
			if (strcmp(rec.u.string.text, "_Z4gemmPfi") == 0) {
				s->gemm_strings++;
				s->gemm_id = rec.u.string.id;
			}
			if (n_names < 8) {
				snprintf(names[n_names], sizeof(names[0]), "%s", rec.u.string.text);
				ids[n_names++] = rec.u.string.id;
			}
			break;
		case GTT_REC_CUDA_API:
			if (rec.u.api.domain == GTT_API_DRIVER)
				s->n_api_drv++;
			else
				s->n_api_rt++;
			for (int i = 0; i < n_names; i++)
				if (ids[i] == rec.u.api.name_id && rec.u.api.correlation == 5 &&
				    strcmp(names[i], "cudaLaunchKernel") == 0 && rec.u.api.tid == 7 && rec.u.api.pid == 42)
					s->names_ok = 1;
			break;
		case GTT_REC_CUDA_KERNEL:
			if (nk < 2)
				s->kernel_ids[nk++] = rec.u.kernel.name_id;
			if (rec.u.kernel.start_ns == 1500 && rec.u.kernel.end_ns == 2500 && rec.u.kernel.stream == 13 &&
			    rec.u.kernel.correlation == 5 && rec.u.kernel.grid[0] == 128 && rec.u.kernel.block[0] == 256 &&
			    rec.u.kernel.shared_bytes == 3072 && rec.u.kernel.registers == 32 && rec.u.kernel.pid == 42)
				s->kernel_ok = 1;
			break;
		case GTT_REC_CUDA_MEMCPY:
			s->memcpy_ok = rec.u.memcpy.kind == GTT_MEMCPY_DTOH && rec.u.memcpy.flags == 1 &&
			               rec.u.memcpy.bytes == 4096 && rec.u.memcpy.correlation == 11;
			break;
		case GTT_REC_CUDA_SYNC:
			s->sync_ok = rec.u.sync.kind == GTT_SYNC_STREAM && rec.u.sync.start_ns == 2000 && rec.u.sync.stream == 13;
			break;
		case GTT_REC_CUDA_ALLOC:
			s->alloc_ok += (rec.u.alloc.op == GTT_ALLOC_ALLOC && rec.u.alloc.time_ns == 1060) ||
			               (rec.u.alloc.op == GTT_ALLOC_FREE && rec.u.alloc.time_ns == 3500 &&
			                rec.u.alloc.bytes == 1 << 20);
			break;
		case GTT_REC_NVTX:
			if (rec.u.nvtx.kind == GTT_NVTX_RANGE && rec.u.nvtx.start_ns == 900 && rec.u.nvtx.end_ns == 4000 &&
			    rec.u.nvtx.color == 0xff00ff00 && rec.u.nvtx.tid == 7 && rec.u.nvtx.depth == 0 && rec.u.nvtx.domain_id)
				s->range_ok = 1;
			if (rec.u.nvtx.kind == GTT_NVTX_RANGE && rec.u.nvtx.start_ns == 950 && rec.u.nvtx.end_ns == 1900 &&
			    rec.u.nvtx.depth == 1)
				s->range_nested_ok = 1;
			if (rec.u.nvtx.kind == GTT_NVTX_MARKER && rec.u.nvtx.start_ns == 1234 && rec.u.nvtx.end_ns == 1234 &&
			    rec.u.nvtx.domain_id == 0)
				s->marker_ok = 1;
			break;
		case GTT_REC_HEALTH:
			if (rec.u.health.kind == GTT_HEALTH_OVERHEAD && rec.u.health.source == GTT_SRC_CUPTI &&
			    rec.u.health.tid == 99 && rec.u.health.end_ns - rec.u.health.time_ns == 100)
				s->overhead_ok = 1;
			break;
		}
	}
	gtt_reader_close(r);
}

static void encode(const char *path, int api_mode, ag_stats *st)
{
	gtt_writer *w = gtt_writer_open(path, NULL);
	ag_enc *e = ag_enc_create(w, 42, 1, api_mode);
	memset(st, 0, sizeof(*st));
	fill();
	ag_enc_buffer(e, buf, used, st);
	ag_enc_destroy(e);
	gtt_writer_close(w);
}

static void load_agent(const char *agent, const char *dir)
{
	setenv("GT_CUPTI_DIR", dir, 1);
	void *h = dlopen(agent, RTLD_NOW);
	th_check(h != NULL, "agent loads with dlopen (%s)", h ? "ok" : dlerror());
	if (!h)
		return;
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	th_check(init && dlsym(h, "InitializeInjectionNvtx2"), "agent exports both injection entry points");
	if (!init)
		return;
	th_check(init() == 1, "InitializeInjection returns 1");
	/* without a GPU the agent gives up at once and leaves a note; with one it traces until exit */
	DIR *d = opendir(dir);
	int n_side = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n_side += strncmp(de->d_name, "cupti-", 6) == 0 && strstr(de->d_name, ".gtt") != NULL;
	if (d)
		closedir(d);
	th_check(n_side == 1, "the agent made one side file named by pid (%d)", n_side);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: encode_check OUT.gtt [AGENT.so SIDEDIR]\n");
		return 64;
	}
	ag_stats st;
	seen s;
	encode(argv[1], AG_API_DEFAULT, &st);
	read_trace(argv[1], &s);
	th_check(st.n_records == 19, "all buffer records walked (%llu)", (unsigned long long)st.n_records);
	th_check(st.n_driver_nested == 2 && s.n_api_drv == 1 && s.n_api_rt == 2,
	         "default mode: 2 nested driver calls dropped (before and after their runtime record), the "
	         "thread's own cuMemCreate kept (nested %llu, driver %d, runtime %d)",
	         (unsigned long long)st.n_driver_nested, s.n_api_drv, s.n_api_rt);
	th_check(s.names_ok, "API name without the _v7000 tag, tid and correlation kept");
	th_check(s.gemm_strings == 1 && s.kernel_ids[0] == s.gemm_id && s.kernel_ids[1] == s.gemm_id,
	         "kernel name interned once for two name pointers");
	th_check((s.gemm_id >> 24) == 1, "string ids carry the side-file generation (%#x)", s.gemm_id);
	th_check(s.kernel_ok, "kernel fields: times, stream, correlation, grid, block, shared, registers, pid");
	th_check(s.memcpy_ok, "memcpy: direction, async flag, bytes");
	th_check(s.tags[GTT_REC_CUDA_MEMSET] == 1, "memset record");
	th_check(s.sync_ok, "sync: kind and times");
	th_check(s.alloc_ok == 2, "allocation and free");
	th_check(s.range_ok && s.range_nested_ok, "NVTX ranges paired by id, colour from marker data, nesting depth");
	th_check(s.marker_ok, "NVTX instantaneous marker in the default domain");
	th_check(s.overhead_ok, "CUPTI overhead as a health record");

	encode(argv[1], AG_API_ALL, &st);
	read_trace(argv[1], &s);
	th_check(s.n_api_drv == 3 && st.n_driver_nested == 0, "all mode keeps every driver call (%d)", s.n_api_drv);
	encode(argv[1], AG_API_RUNTIME, &st);
	read_trace(argv[1], &s);
	th_check(s.n_api_rt == 2, "runtime mode translates what CUPTI delivers (%d runtime)", s.n_api_rt);
	th_check(ag_api_trivial("cudaGetDevice_v3020") && ag_api_trivial("cuDevicePrimaryCtxGetState") &&
	         ag_api_trivial("cuGetProcAddress_v2") && ag_api_trivial("cudaStreamIsCapturing_ptsz_v10000") &&
	         ag_api_trivial("cuKernelGetName"), "trivial state queries recognised with their suffixes");
	th_check(!ag_api_trivial("cudaLaunchKernel_v7000") && !ag_api_trivial("cuLaunchKernelEx") &&
	         !ag_api_trivial("cudaStreamSynchronize_v3020") && !ag_api_trivial("cuMemMap") &&
	         !ag_api_trivial("cudaMalloc_v3020") && !ag_api_trivial("cudaGetDeviceFlags"),
	         "launches, syncs and allocator calls are not trivial");
	/* leave the default-mode trace for the caller */
	encode(argv[1], AG_API_DEFAULT, &st);

	ag_stats bare = { 0 };
	fill();
	ag_enc_count(buf, used, &bare);
	th_check(bare.n_records == 19 && bare.n_kernel == 2 && bare.n_driver == 3 && bare.n_runtime == 2,
	         "bare mode counts by kind");
	if (argc >= 4)
		load_agent(argv[2], argv[3]);
	return th_report();
}
