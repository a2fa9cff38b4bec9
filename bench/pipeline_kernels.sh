#!/usr/bin/env bash
# pipeline_kernels.sh — the pipeline's kernel benchmark: on a GPU, gt-pipeline --bench (cuBLAS TFLOP/s,
# custom kernels' GB/s against the measured copy bandwidth); always, CPU-backend throughput.
# usage: bench/pipeline_kernels.sh [OUTFILE]      (BUILD selects the build directory, default build)
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
PL="$BUILD/bin/gt-pipeline"
OUT=${1:-/dev/stdout}
[ -x "$PL" ] || { echo "pipeline_kernels: $PL not built (make pipeline)" >&2; exit 2; }
{
	echo "# gt-pipeline kernels, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -m), $(nproc) CPUs"
	if "$PL" --bench 2>/tmp/gt-bench.err; then
		:
	else
		echo "GPU benchmark skipped: $(cat /tmp/gt-bench.err)"
	fi
	rm -f /tmp/gt-bench.err
	echo "# CPU backend, 1 target + 1 drafter, 2 s (tokens/s per pair of cores shared with the system)"
	"$PL" --backend cpu --seconds 2 --targets 1 --drafters 1 --quiet
	echo "# CPU backend, default shape (5 targets, 3 drafters), 2 s"
	"$PL" --backend cpu --seconds 2 --quiet
} >"$OUT"
