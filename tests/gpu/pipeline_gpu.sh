#!/usr/bin/env bash
# pipeline_gpu.sh — the whole GPU check of gt-pipeline in one command (about 2 minutes on an H200):
# build with CUDA, --check (CUDA kernels vs CPU twins), --bench, CUDA pipeline runs (churn, cached,
# several --gpus entries), the Python driver on CUDA, and telemetry consistency checks.
# usage: tests/gpu/pipeline_gpu.sh OUTDIR      (logs, telemetry JSON and summary.txt go to OUTDIR)
# Exit: 0 when every step passed, 1 when some failed, 2 when the build failed or no GPU answers.
set -u
OUTDIR=${1:?usage: tests/gpu/pipeline_gpu.sh OUTDIR}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build/gpu}
PL="$BUILD/bin/gt-pipeline"
SUMMARY="$OUTDIR/summary.txt"
PY=${PYTHON:-python3}
failures=0
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME SECONDS COMMAND...: runs with a time limit, logs to OUTDIR/NAME.log, keeps the tail.
step() {
	local name=$1 limit=$2; shift 2
	local t0=$SECONDS rc
	timeout -k 10 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1; rc=$?
	say "== $name: exit $rc in $((SECONDS - t0)) s: $*"
	tail -n 25 "$OUTDIR/$name.log" | sed 's/^/   /' >>"$SUMMARY"
	[ "$rc" -eq 0 ] || failures=$((failures + 1))
	return "$rc"
}

say "gt-pipeline GPU run, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
nvidia-smi >"$OUTDIR/nvidia-smi.txt" 2>&1 || say "nvidia-smi failed"
head -n 15 "$OUTDIR/nvidia-smi.txt" >>"$SUMMARY"

step build 400 make -j"$(nproc)" BUILD="$BUILD" pipeline || { say "build failed"; exit 2; }
step check 120 "$PL" --check
rc=$?
[ "$rc" -eq 2 ] && { say "no GPU answered --check: stopping"; exit 2; }
step bench 180 "$PL" --bench

# The pipeline on CUDA: churn (cudaMalloc/cudaFree per step) against the caching allocator.
step run_churn 90 "$PL" --backend cuda --seconds 8 --alloc churn --telemetry "$OUTDIR/cuda_churn.json"
step run_cached 90 "$PL" --backend cuda --seconds 8 --alloc cached --telemetry "$OUTDIR/cuda_cached.json"
# Every worker on its own entry of --gpus (all device 0 here): the placement code path.
step run_gpus 90 "$PL" --backend cuda --seconds 4 --gpus 0,0,0,0 --sync-every 4 --telemetry "$OUTDIR/cuda_gpus.json"
# Bad input must not hang: a device that does not exist.
timeout 30 "$PL" --backend cuda --gpus 0,99 --seconds 1 >"$OUTDIR/bad_gpu.log" 2>&1
rc=$?
say "== bad_gpu: exit $rc (want 2): $(head -c 200 "$OUTDIR/bad_gpu.log")"
[ "$rc" -eq 2 ] || failures=$((failures + 1))
# The Python driver over ctypes on CUDA.
step driver 120 env GT_PIPELINE_LIB="$PWD/$BUILD/lib/libgtpipeline.so" "$PY" pipeline/driver.py \
	--backend cuda --seconds 6 --python-work 2 --telemetry "$OUTDIR/cuda_python.json"

for j in cuda_churn cuda_cached cuda_gpus cuda_python; do
	drv=c; [ "$j" = cuda_python ] && drv=python
	[ -f "$OUTDIR/$j.json" ] || { say "== telemetry $j: missing"; failures=$((failures + 1)); continue; }
	step "telemetry_$j" 60 "$PY" tests/cli/pipeline_telemetry.py "$OUTDIR/$j.json" --backend cuda --driver "$drv"
done
say "== done: $failures failed step(s)"
[ "$failures" -eq 0 ]
