/* gpucheck.h — GPU-only modes: CUDA kernels against their CPU twins (--check) and a benchmark (--bench). */
#ifndef PL_GPUCHECK_H
#define PL_GPUCHECK_H
#include <stddef.h>
#include <stdint.h>

typedef struct pl_check_result {
	char name[40];
	double rel_err;      /* ||gpu - cpu|| / ||cpu|| over the output */
	double max_abs_err;
	double tol;          /* rel_err must be below this */
	int64_t n_unwritten; /* output elements still holding the poison value */
	int ok;
} pl_check_result;

/* Runs every CUDA kernel and cuBLAS GEMM on device with fresh random inputs (from seed) and
 * its CPU twin on the same bf16-rounded inputs; fills out[0..*n_out). Returns 0 (look at each
 * ok), PL_ENODEV (no GPU / no CUDA) or PL_EBACKEND, with err filled. */
int pl_gpu_check(int device, uint32_t seed, pl_check_result *out, int max, int *n_out, char *err,
                 size_t errlen);

typedef struct pl_bench_result {
	char name[48];
	const char *unit;    /* "TFLOP/s" or "GB/s" */
	double value;        /* achieved, from the median of timed repetitions */
	double ceiling;      /* measured copy bandwidth (GB/s) or the bf16 dense peak lead (TFLOP/s) */
	double median_us;
	double work;         /* FLOP or bytes per call */
} pl_bench_result;

/* Measures device-to-device copy bandwidth, cuBLAS bf16/fp16 GEMM rates at large shapes and
 * each custom kernel's bandwidth (minimal bytes: inputs read once, outputs written once),
 * timed with CUDA events (median of repetitions after a warm-up). Same codes as pl_gpu_check. */
int pl_gpu_bench(int device, pl_bench_result *out, int max, int *n_out, char *err, size_t errlen);

#endif
