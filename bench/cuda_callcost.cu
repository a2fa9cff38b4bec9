// cuda_callcost.cu — what one CUDA runtime call costs the calling thread, for bench/gpu_callcost.sh
// (GPU box): an empty kernel launch, a 4-byte cudaMemsetAsync, a cudaStreamSynchronize of an idle
// stream (calls the agent's callbacks follow), cudaStreamQuery and cudaEventRecord (calls they do
// not follow). Each kind: N calls to warm up (the agent's first-K launch stacks, CUPTI's buffers),
// then the best of 5 loops of N calls, wall and thread-CPU ns per call. The agent, when injected
// (CUDA_INJECTION64_PATH), is configured by the environment the script sets for each mode.
// Prints "KIND wall_ns cpu_ns records_per_call".
// Build: nvcc -O2 -o cuda_callcost cuda_callcost.cu
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static double now(clockid_t c)
{
	timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "cuda_callcost: %s: %s\n", what, cudaGetErrorString(e));
		exit(2);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	if (n < 100) {
		fprintf(stderr, "usage: cuda_callcost [CALLS >= 100]\n");
		return 64;
	}
	cudaStream_t s;
	cudaEvent_t ev;
	void *buf;
	check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
	check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
	check(cudaMalloc(&buf, 256), "cudaMalloc");
	const char *kinds[] = { "launch", "memset", "sync_idle", "query", "event_record" };
	const double records[] = { 2, 2, 1, 1, 1 };    // API record (+ kernel / memset record)
	for (int k = 0; k < 5; k++) {
		double best_w = 1e30, best_c = 1e30;
		for (int loop = 0; loop < 6; loop++) {    // loop 0 warms up
			check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
			double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
			for (long i = 0; i < n; i++) {
				switch (k) {
				case 0: empty_kernel<<<1, 1, 0, s>>>(); break;
				case 1: cudaMemsetAsync(buf, 0, 4, s); break;
				case 2: cudaStreamSynchronize(s); break;
				case 3: cudaStreamQuery(s); break;
				case 4: cudaEventRecord(ev, s); break;
				}
			}
			double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_THREAD_CPUTIME_ID);
			if (loop && (w1 - w0) / n < best_w)
				best_w = (w1 - w0) / n;
			if (loop && (c1 - c0) / n < best_c)
				best_c = (c1 - c0) / n;
		}
		check(cudaGetLastError(), kinds[k]);
		printf("%s %.1f %.1f %.0f\n", kinds[k], best_w, best_c, records[k]);
	}
	check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
	return 0;
}
