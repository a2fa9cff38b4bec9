#!/usr/bin/env bash
# gpu_session.sh STEP... — one run on the GPU box (device time is scarce: one command does a whole
# session's measurements): builds `make record pipeline bench-tools`, then runs each STEP under its
# own time limit, a failing step never stopping the next, and packs what came out into at most 8
# files under $OUT (the device tool's limit): summary.txt (each step's key lines), results.tgz
# (every step's texts and logs) and the small traces named by the steps.
#   steps: headline  bench/gpu_overhead.sh PRESET=headline (torch workload, budget HEADLINE_S=240)
#          pipelines bench/gpu_overhead.sh PRESET=pipelines (budget PIPELINES_S=200)
#          sites     tests/gpu/launch_sites.sh (trace kept: launch_sites.gtt)
#          dump      tests/gpu/dump_sync.sh
#          capture   tests/gpu/capture_nvtx.sh (trace kept: capture_nvtx.gtt)
#          growth    bench/trace_growth.sh on the torch workload, 10 s, defaults; gtt_stat per kind
#          callcost  bench/gpu_callcost.sh: ns per CUDA call, CUPTI's part and the agent's (~1 min)
#          nvtx      tests/gpu/nvtx_capture.sh: NVTX capture ranges and counters on torch (< 1 min)
#          ranks     tests/gpu/job_ranks.sh: 4 ranks (2 gt-pipeline cuda, 2 torch) sharing GPU 0 under
#                    one gt-record, attributed per process (< 1 min; trace kept: job_ranks.gtt and
#                    ranks.tgz with each rank's telemetry, for the per-process table checked here)
#          STEP=CMD  any other command, run from the repository root with $R/STEP as its folder
#                    (limit STEP_S seconds, default 300)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:?gpu_session.sh: OUT is not set}
R=$(mktemp -d /tmp/gt-session.XXXXXX)
SUM=$OUT/summary.txt
T0=$SECONDS
say() { echo "$*" | tee -a "$SUM"; }
say "gpu_session: $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null) host $(hostname) $(nproc) cpus"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  gpu: /' | tee -a "$SUM"
python3 -c 'import sys, torch; print("  python", sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1 | tee -a "$SUM"
if ! make -j"$(nproc)" record pipeline bench-tools >"$R/build.log" 2>&1; then
	say "build failed:"; tail -30 "$R/build.log" | tee -a "$SUM"
	tar -C "$R" -czf "$OUT/results.tgz" . 2>/dev/null
	exit 2
fi
say "built in $((SECONDS - T0)) s"
step() { # NAME LIMIT CMD...
	local name=$1 limit=$2 t=$SECONDS rc
	shift 2
	mkdir -p "$R/$name"
	timeout -k 10 "$limit" "$@" >"$R/$name/out.txt" 2>&1
	rc=$?
	say "== $name: exit $rc in $((SECONDS - t)) s (limit $limit)"
	grep -hE "$(step_keys "$name")" "$R/$name"/*.txt 2>/dev/null | grep -v '^--$' | cut -c1-400 |
		head -60 | sed 's/^/  /' | tee -a "$SUM"
}
step_keys() {
	case $1 in
	headline | pipelines) echo '^ |median|mode|cost|dropped|agent|rounds' ;;
	sites) echo 'PASS|FAIL|attrib|size|sites|%' ;;
	dump) echo 'PASS|FAIL|SKIP|took|ms' ;;
	capture) echo 'PASS|FAIL|latency|exit|records' ;;
	growth) echo 'MB/s|archive|median|size|bytes' ;;
	callcost) echo '^ |==|failed|done' ;;
	nvtx) echo 'PASS|FAIL|exit|kernels|failed' ;;
	ranks) echo 'PASS|FAIL|exit|passed|gt-analyze' ;;
	*) echo '.' ;;
	esac
}
for s in "$@"; do
	case $s in
	headline) step headline $((${HEADLINE_S:-240} + 60)) env PRESET=headline BUDGET_S="${HEADLINE_S:-240}" bench/gpu_overhead.sh "$R/headline" ;;
	pipelines) step pipelines $((${PIPELINES_S:-200} + 60)) env PRESET=pipelines BUDGET_S="${PIPELINES_S:-200}" bench/gpu_overhead.sh "$R/pipelines" ;;
	sites) step sites 150 tests/gpu/launch_sites.sh "$R/sites"; cp "$R/sites/launch_sites.gtt" "$OUT/" 2>/dev/null ;;
	dump) step dump 100 tests/gpu/dump_sync.sh "$R/dump" ;;
	capture) step capture 150 tests/gpu/capture_nvtx.sh "$R/capture"; cp "$R/capture/capture_nvtx.gtt" "$OUT/" 2>/dev/null ;;
	callcost) step callcost 150 env REPS="${CALLCOST_REPS:-5}" bench/gpu_callcost.sh "$R/callcost" ;;
	nvtx) step nvtx 120 tests/gpu/nvtx_capture.sh "$R/nvtx" ;;
	ranks) step ranks 170 tests/gpu/job_ranks.sh "$R/ranks"
		if [ -f "$R/ranks/job_ranks.gtt" ] && [ "$(stat -c %s "$R/ranks/job_ranks.gtt")" -lt $((16 << 20)) ]; then
			cp "$R/ranks/job_ranks.gtt" "$OUT/"
			tar -C "$R/ranks" -czf "$OUT/ranks.tgz" $(cd "$R/ranks" && ls rank*.json summary.txt 2>/dev/null)
		fi ;;
	growth) step growth 150 env REPS=1 KEEP=1 OUT="$R/growth" WORKLOAD="python3 $ROOT/bench/torch_workload.py --seconds {S}" bench/trace_growth.sh 10
		for t in "$R"/growth/*.gtt; do [ -f "$t" ] && build/bench/gtt_stat "$t" >"$t.stat.txt" 2>&1 && rm -f "$t"; done
		cat "$R"/growth/*.stat.txt 2>/dev/null | head -60 | sed 's/^/  /' | tee -a "$SUM" ;;
	*=*) step "${s%%=*}" "${STEP_S:-300}" bash -c "${s#*=}" ;;
	*) say "unknown step $s" ;;
	esac
done
say "total $((SECONDS - T0)) s"
tar -C "$R" -czf "$OUT/results.tgz" . 2>/dev/null
ls -la "$OUT" | tee -a "$SUM" >/dev/null
