/* test_gpu_report.c — analyze/gpu.c on a hand-built model with known numbers: kernels on two
 * streams with known gaps, API calls, a sync, allocations, CPU samples with known stacks; checks
 * busy %, the tables, GPU-idle blame per thread and kernel launch sites exactly. */
#include <stdlib.h>
#include <string.h>
#include "gpu.h"
#include "testhelp.h"

#define US 1000ull
#define T0 1000000000ull    /* recording start */

static ana_model *M;

static void add_string(uint32_t id, const char *text)
{
	ana_string *s = ana_vec_push(M->strings);
	s->pid = 100;
	s->id = id;
	s->text = strdup(text);
}

static void add_kernel(uint64_t s_us, uint64_t e_us, uint32_t stream, uint32_t corr, uint32_t name_id)
{
	gtt_cuda_kernel *k = ana_vec_push(M->kernels);
	k->start_ns = T0 + s_us * US;
	k->end_ns = T0 + e_us * US;
	k->pid = 100;
	k->stream = stream;
	k->correlation = corr;
	k->name_id = name_id;
}

static void add_api(uint32_t tid, uint64_t s_us, uint64_t e_us, uint32_t corr, uint32_t name_id, uint32_t domain)
{
	gtt_cuda_api *a = ana_vec_push(M->apis);
	a->start_ns = T0 + s_us * US;
	a->end_ns = T0 + e_us * US;
	a->pid = 100;
	a->tid = tid;
	a->correlation = corr;
	a->name_id = name_id;
	a->domain = domain;
}

static uint32_t stack_of(const char *a, const char *b, const char *c)
{
	const char *names[3] = { a, b, c };
	uint32_t ids[3], n = 0;
	for (int i = 0; i < 3; i++) {
		if (!names[i])
			continue;
		ana_frame f = { .name = names[i], .module = "app" };
		ids[n++] = ana_frame_intern(M, &f);
	}
	return ana_stack_intern(M, ids, n);
}

static void add_sample(uint32_t tid, uint64_t t_us, int cls, uint32_t stack)
{
	ana_sample *s = ana_vec_push(M->samples);
	s->time_ns = T0 + t_us * US;
	s->weight_ns = 100 * US;
	s->pid = 100;
	s->tid = tid;
	s->stack_id = stack;
	s->cls = (uint8_t)cls;
	s->thread_idx = tid - 101;
}

static void add_thread(uint32_t tid, const char *name)
{
	ana_thread *t = ana_vec_push(M->threads);
	t->pid = 100;
	t->tid = tid;
	t->name = strdup(name);
}

static void build(void)
{
	M = calloc(1, sizeof(*M));
	M->start_ns = T0;
	M->end_ns = T0 + 100000 * US;
	add_thread(101, "main");
	add_thread(102, "loader");
	add_thread(103, "idle");
	/* strings sorted by (pid, id), as the loader leaves them */
	add_string(1, "_Z4gemmPfi");
	add_string(2, "relu");
	add_string(3, "cudaLaunchKernel");
	add_string(4, "cuLaunchKernel");
	add_string(5, "cudaStreamSynchronize");
	add_string(6, "cudaMalloc");
	add_string(7, "cudaMemcpyAsync");
	gtt_cuda_device *d = ana_vec_push(M->cuda_devices);
	d->pid = 100;
	d->cc_major = 9;
	d->sm_count = 132;
	d->global_mem_bytes = 80ull << 30;
	d->name = ana_intern_str(M, "TestGPU");
	d->uuid = ana_intern_str(M, "GPU-aaaa");

	/* device work: union [1,13) [21,26) [50,51) ms = 18 ms busy, gaps of 8 and 24 ms */
	add_kernel(1000, 11000, 7, 1, 1);
	add_kernel(6000, 13000, 8, 2, 1);
	add_kernel(21000, 25000, 7, 3, 2);
	add_kernel(50000, 51000, 7, 5, 2);
	gtt_cuda_memcpy *c = ana_vec_push(M->memcpys);
	c->start_ns = T0 + 25000 * US;
	c->end_ns = T0 + 26000 * US;
	c->pid = 100;
	c->correlation = 4;
	c->kind = GTT_MEMCPY_HTOD;
	c->flags = 1;
	c->bytes = 1048576;

	add_api(101, 500, 510, 1, 3, GTT_API_RUNTIME);
	add_api(101, 502, 508, 1, 4, GTT_API_DRIVER);    /* nested driver call, same correlation */
	add_api(101, 600, 610, 2, 3, GTT_API_RUNTIME);
	add_api(101, 12000, 20000, 10, 5, GTT_API_RUNTIME);
	add_api(101, 20500, 20600, 3, 3, GTT_API_RUNTIME);
	add_api(102, 17000, 19000, 11, 6, GTT_API_RUNTIME);
	add_api(102, 24000, 24050, 4, 7, GTT_API_RUNTIME);
	add_api(101, 49000, 49100, 5, 3, GTT_API_RUNTIME);

	gtt_cuda_sync *sy = ana_vec_push(M->syncs);
	sy->start_ns = T0 + 12000 * US;
	sy->end_ns = T0 + 20000 * US;
	sy->pid = 100;
	sy->kind = GTT_SYNC_STREAM;
	sy->correlation = 10;

	gtt_cuda_alloc *al = ana_vec_push(M->allocs);
	*al = (gtt_cuda_alloc){ .time_ns = T0 + 18000 * US, .pid = 100, .op = GTT_ALLOC_ALLOC, .address = 0x1000,
	                        .bytes = 2u << 20 };
	al = ana_vec_push(M->allocs);
	*al = (gtt_cuda_alloc){ .time_ns = T0 + 19000 * US, .pid = 100, .op = GTT_ALLOC_ALLOC, .address = 0x2000,
	                        .bytes = 1u << 20 };
	al = ana_vec_push(M->allocs);
	*al = (gtt_cuda_alloc){ .time_ns = T0 + 60000 * US, .pid = 100, .op = GTT_ALLOC_FREE, .address = 0x1000,
	                        .bytes = 2u << 20 };

	uint32_t s_launch = stack_of("main", "train_step", "matmul");
	uint32_t s_fwd = stack_of("main", "train_step", "forward");
	uint32_t s_gil = stack_of("loader_loop", "take_gil", NULL);
	uint32_t s_np = stack_of("main", "numpy_op", NULL);
	/* samples in time order */
	add_sample(101, 550, ANA_CLASS_NATIVE_NOGIL, s_launch);
	add_sample(102, 14000, ANA_CLASS_WAIT_GIL, s_gil);
	add_sample(102, 15000, ANA_CLASS_WAIT_GIL, s_gil);
	add_sample(102, 16000, ANA_CLASS_WAIT_GIL, s_gil);
	add_sample(101, 16500, ANA_CLASS_PY_GIL, s_fwd);    /* inside the sync call: counted as sync */
	add_sample(101, 20200, ANA_CLASS_PY_GIL, s_fwd);
	add_sample(101, 30000, ANA_CLASS_NATIVE_NOGIL, s_np);
	add_sample(101, 31000, ANA_CLASS_NATIVE_NOGIL, s_np);
	add_sample(101, 40000, ANA_CLASS_PY_GIL, s_fwd);
}

static char *report(const ana_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ana_gpu_report(m, f, 20);
	fclose(f);
	return buf;
}

static int has(const char *text, const char *want)
{
	if (strstr(text, want))
		return 1;
	printf("  missing: [%s]\n", want);
	return 0;
}

int main(void)
{
	build();
	char *r = report(M);
	printf("---- report ----\n%s---- end ----\n", r);

	th_check(has(r, "GPU 0: pid 100 device 0, TestGPU (cc 9.0, 132 SMs, 80.0 GiB)"), "device line");
	th_check(has(r, "CUDA records: 4 kernels, 1 copies, 0 memsets, 1 syncs, 8 API calls, 3 allocations, 0 NVTX"),
	         "record counts");
	th_check(has(r, "GPU 0: busy 18.0% of the recording (0.018 of 0.100 s); 36.0% between its first and last "
	                "work (0.050 s)"), "busy %% = union of overlapping kernels and the copy");
	th_check(has(r, "       0.0 s:  18\n"), "busy %% per 100 ms bucket");
	/* kernels: demangled, by total time */
	th_check(has(r, "          2       17.000    8500.000   10000.000   77.3  gemm(float*, int)\n"),
	         "gemm row: count/total/mean/max/%%, demangled");
	th_check(has(r, "          2        5.000    2500.000    4000.000   22.7  relu\n"), "relu row");
	th_check(strstr(r, "gemm(float*, int)") < strstr(r, "  relu\n"), "kernels sorted by total time");
	/* API */
	th_check(has(r, "CUDA API calls (7 runtime, 1 driver"), "API domain counts");
	th_check(has(r, "          1        8.000    8000.000    8000.000       0  cudaStreamSynchronize\n"), "sync API row");
	th_check(has(r, "          4        0.220      55.000     100.000       0  cudaLaunchKernel\n"), "launch API row");
	th_check(has(r, "          1        0.006       6.000       6.000       0  cuLaunchKernel (driver)\n"),
	         "driver API row marked");
	/* copies, syncs, allocations */
	th_check(has(r, "  HtoD              1         1        1048576        1.000       1.05\n"), "memcpy HtoD bandwidth");
	th_check(has(r, "          1        8.000    8000.000  stream synchronize\n"), "sync kinds");
	th_check(has(r, "allocations 2 (3.0 MiB), frees 1 (2.0 MiB), churn 30.0 ops/s"), "alloc counts and churn");
	th_check(has(r, "peak live 3.0 MiB at 0.019 s"), "peak live memory");
	/* idle gaps */
	th_check(has(r, "GPU 0: 32.000 ms idle in 2 gaps: 1-10 ms 1 (8.000 ms); >= 10 ms 1 (24.000 ms)"), "gap histogram");
	th_check(has(r, "    thread 101 main: synchronizing 7.000 ms (cudaStreamSynchronize), launching 0.200 ms "
	                "(cudaLaunchKernel), python+GIL ~0.200 ms (2 samples), native, no GIL ~0.200 ms (2 samples), "
	                "off-CPU/unsampled 24.400 ms\n"), "blame over all gaps, main thread");
	th_check(has(r, "    thread 102 loader: in the allocator 2.000 ms (cudaMalloc), waiting for GIL ~0.300 ms "
	                "(3 samples), off-CPU/unsampled 29.700 ms\n"), "blame over all gaps, loader thread");
	th_check(has(r, "    (1 thread off-CPU or unsampled during every gap)"), "idle thread summarized");
	th_check(has(r, "  #1 GPU 0 idle 24.000 ms from 0.026000 s\n"), "longest gap first");
	th_check(has(r, "     ended by relu, submitted by thread 101 main through cudaLaunchKernel at +23.000 ms from "
	                "the gap's start\n"), "gap linked to the launch that ended it");
	th_check(has(r, "  #2 GPU 0 idle 8.000 ms from 0.013000 s\n"), "second gap");
	th_check(has(r, "     thread 101 main: synchronizing 7.000 ms (cudaStreamSynchronize), launching 0.100 ms "
	                "(cudaLaunchKernel), python+GIL ~0.100 ms (1 sample), off-CPU/unsampled 0.800 ms; top frame "
	                "forward\n"), "gap 2 blame for main with its top frame");
	th_check(has(r, "     thread 102 loader: in the allocator 2.000 ms (cudaMalloc), waiting for GIL ~0.300 ms "
	                "(3 samples), off-CPU/unsampled 5.700 ms; top frame take_gil\n"), "gap 2 blame for loader");
	const char *g2 = strstr(r, "  #2 GPU 0");
	th_check(g2 && strstr(g2, "thread 101") < strstr(g2, "thread 102"), "more active thread listed first");
	/* launch sites */
	th_check(has(r, "  gemm(float*, int) (2 launches)\n    2x thread 101 main via cudaLaunchKernel; stack: "
	                "main;train_step;matmul\n"), "gemm launch site: runtime call and stack at launch");
	th_check(has(r, "  relu (2 launches)\n    2x thread 101 main via cudaLaunchKernel; stack: (no CPU sample "
	                "near the launch)\n"), "relu launch site without a nearby sample");

	char *again = report(M);
	th_check(strcmp(r, again) == 0, "output is deterministic");
	free(again);
	free(r);

	/* a second device (the multi-GPU case, issue 10): accounted on its own, device 0 unchanged */
	gtt_cuda_device *d1 = ana_vec_push(M->cuda_devices);
	d1->pid = 100;
	d1->device = 1;
	d1->cc_major = 9;
	d1->sm_count = 132;
	d1->global_mem_bytes = 80ull << 30;
	d1->name = ana_intern_str(M, "TestGPU");
	d1->uuid = ana_intern_str(M, "GPU-bbbb");
	size_t k0 = M->kernels.n;
	add_kernel(10000, 30000, 9, 20, 1); /* device 1: [10,30) [40,50) ms = 30 ms busy, one 10 ms gap */
	add_kernel(40000, 50000, 9, 21, 2);
	M->kernels.v[k0].device = M->kernels.v[k0 + 1].device = 1;
	add_api(101, 9000, 9010, 20, 3, GTT_API_RUNTIME);
	add_api(101, 39000, 39010, 21, 3, GTT_API_RUNTIME);
	r = report(M);
	printf("---- report, two devices ----\n%s---- end ----\n", r);
	th_check(has(r, "GPU 1: pid 100 device 1, TestGPU (cc 9.0, 132 SMs, 80.0 GiB)"), "second device listed");
	th_check(has(r, "GPU 0: busy 18.0% of the recording (0.018 of 0.100 s)"), "device 0 busy unchanged by device 1");
	th_check(has(r, "GPU 1: busy 30.0% of the recording (0.030 of 0.100 s); 75.0% between its first and last "
	                "work (0.040 s)"), "device 1 busy %% from its own kernels only");
	th_check(has(r, "  #1 GPU 0 idle 24.000 ms from 0.026000 s\n"), "device 0's gaps unchanged");
	th_check(has(r, "GPU 1 idle 10.000 ms from 0.030000 s"), "device 1's gap found on its own timeline");
	free(r);

	/* no CUDA data: no section */
	ana_model *empty = calloc(1, sizeof(*empty));
	r = report(empty);
	th_check(r && r[0] == 0, "nothing printed without CUDA records");
	free(r);
	ana_model_free(empty);
	ana_model_free(M);
	return th_report();
}
