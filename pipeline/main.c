/* main.c — gt-pipeline's command line: parses options, runs the pipeline (or --check / --bench), prints results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucheck.h"
#include "gtt.h"
#include "pipeline.h"

#ifndef GT_VERSION
#define GT_VERSION "dev"
#endif

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gt-pipeline [options]\n"
	        "The reference target/drafter training pipeline; measures its own ground truth.\n"
	        "  --backend cpu|cuda     compute backend (default cpu)\n"
	        "  --targets N            target workers producing hidden states (default 5)\n"
	        "  --drafters N           drafter workers training on them (default 3)\n"
	        "  --queue-depth N        HS queue capacity (default 60)\n"
	        "  --min-ready N          drafters wait while fewer items are ready (default 9)\n"
	        "  --sync-every N         drafters read the loss back every N steps, 0 never (default 1)\n"
	        "  --alloc churn|cached   raw alloc/free per step, or a caching allocator (default churn)\n"
	        "  --steps N              steps per target (default: run for --seconds)\n"
	        "  --seconds S            targets stop producing after S seconds (default 2 cpu, 10 cuda)\n"
	        "  --hidden N --layers N --seq-min N --seq-max N --batch N --chunk N   sizes\n"
	        "                         (defaults: cpu 128/8/16/96/4/32, cuda 2048/20/128/2048/8/64)\n"
	        "  --gpus 0,1,...         devices; workers (targets first) go round robin (default 0)\n"
	        "  --seed N               seed for weights, inputs and lengths (default 1)\n"
	        "  --sample-ms N          queue depth sampling interval (default 10)\n"
	        "  --telemetry FILE.json  write the ground-truth telemetry\n"
	        "  --quiet                print only the tokens/s and queue lines\n"
	        "  --check                compare each CUDA kernel with its CPU twin (needs a GPU)\n"
	        "  --bench                GPU benchmark: GEMM TFLOP/s, kernel GB/s vs copy bandwidth\n"
	        "  --version, --help\n"
	        "Exit: 0 ok, 1 --check found a mismatch, 2 no GPU or a failure, 64 bad usage.\n");
}

static int run_check(const pl_config *c)
{
	pl_check_result res[32];
	char err[256] = "";
	int n = 0, bad = 0;
	int rc = pl_gpu_check(c->gpus[0], c->seed, res, 32, &n, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "gt-pipeline: --check: %s\n", err);
		return 2;
	}
	printf("%-28s %12s %12s %10s  %s\n", "kernel", "rel_err", "max_abs", "tol", "result");
	for (int i = 0; i < n; i++) {
		printf("%-28s %12.3e %12.3e %10.1e  %s\n", res[i].name, res[i].rel_err, res[i].max_abs_err, res[i].tol,
		       res[i].ok ? "ok" : (res[i].n_unwritten ? "MISMATCH (unwritten output)" : "MISMATCH"));
		bad += !res[i].ok;
	}
	printf("check: %d kernels, %d ok, %d mismatched\n", n, n - bad, bad);
	return bad ? 1 : 0;
}

static int run_bench(const pl_config *c)
{
	pl_bench_result res[48];
	char err[256] = "";
	int n = 0;
	int rc = pl_gpu_bench(c->gpus[0], res, 48, &n, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "gt-pipeline: --bench: %s\n", err);
		return 2;
	}
	printf("%-40s %10s %10s %10s %8s\n", "benchmark", "median_us", "achieved", "ceiling", "% ceil");
	for (int i = 0; i < n; i++)
		printf("%-40s %10.1f %10.1f %10.1f %7.1f%%  %s\n", res[i].name, res[i].median_us, res[i].value, res[i].ceiling,
		       res[i].ceiling > 0 ? 100.0 * res[i].value / res[i].ceiling : 0.0, res[i].unit);
	return 0;
}

/* 1 when path is a file starting with the trace magic: the telemetry (written at the end) must
 * not land on a trace, least of all the one gt-record is writing around this run. */
static int is_trace(const char *path)
{
	char head[GTT_MAGIC_LEN];
	FILE *f = fopen(path, "rb");
	int yes = f && fread(head, 1, sizeof(head), f) == sizeof(head) && memcmp(head, GTT_MAGIC, GTT_MAGIC_LEN) == 0;
	if (f)
		fclose(f);
	return yes;
}

int main(int argc, char **argv)
{
	pl_config cfg;
	pl_run *run = NULL;
	const char *telemetry = NULL;
	char err[512] = "";
	int check = 0, bench = 0, quiet = 0, rc, status = 0;

	pl_config_defaults(&cfg);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char key[64];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			printf("gt-pipeline %s\n", GT_VERSION);
			return 0;
		}
		if (strcmp(a, "--check") == 0 || strcmp(a, "--bench") == 0 || strcmp(a, "--quiet") == 0) {
			*(a[2] == 'c' ? &check : a[2] == 'b' ? &bench : &quiet) = 1;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || !a[2]) {
			fprintf(stderr, "gt-pipeline: unexpected argument '%s' (see --help)\n", a);
			return 64;
		}
		const char *eq = strchr(a, '=');
		size_t klen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		if (klen >= sizeof key) {
			fprintf(stderr, "gt-pipeline: unknown option %s\n", a);
			return 64;
		}
		memcpy(key, a + 2, klen);
		key[klen] = 0;
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			fprintf(stderr, "gt-pipeline: option --%s needs a value\n", key);
			return 64;
		}
		if (strcmp(key, "telemetry") == 0) {
			if (!*val) {
				fprintf(stderr, "gt-pipeline: --telemetry needs a file name\n");
				return 64;
			}
			if (is_trace(val)) {
				fprintf(stderr, "gt-pipeline: --telemetry %s is a groundtruth trace (gt-record's -o?): not "
				        "written over; choose another name\n", val);
				return 64;
			}
			telemetry = val;
			continue;
		}
		if (pl_config_set(&cfg, key, val, err, sizeof err) < 0) {
			fprintf(stderr, "gt-pipeline: %s\n", err);
			return 64;
		}
	}
	if (check || bench) {
		if (strcmp(cfg.backend, "cuda") != 0)
			strcpy(cfg.backend, "cuda");
		return check ? run_check(&cfg) : run_bench(&cfg);
	}

	rc = pl_run_create(&cfg, &run, err, sizeof err);
	if (rc < 0) {
		fprintf(stderr, "gt-pipeline: %s\n", err);
		return rc == PL_EUSAGE ? 64 : 2;
	}
	rc = pl_run_start(run, 1);
	if (rc == 0 || rc != PL_ENOMEM)
		rc = pl_run_finish(run);
	if (rc < 0) {
		fprintf(stderr, "gt-pipeline: %s\n", *pl_run_error(run) ? pl_run_error(run) : pl_strerror(rc));
		status = 2;
	}
	char *summary = malloc(8192);
	if (summary) {
		pl_run_summary(run, summary, 8192);
		if (quiet) {
			char *second = strchr(summary, '\n');
			char *third = second ? strchr(second + 1, '\n') : NULL;
			char *fourth = third ? strchr(third + 1, '\n') : NULL;
			if (fourth)
				fourth[1] = 0;
			fputs(second ? second + 1 : summary, stdout);
		} else {
			fputs(summary, stdout);
		}
		free(summary);
	}
	if (telemetry && pl_run_write_telemetry(run, telemetry, err, sizeof err) < 0) {
		fprintf(stderr, "gt-pipeline: %s\n", err);
		status = 2;
	}
	pl_run_destroy(run);
	return status;
}
