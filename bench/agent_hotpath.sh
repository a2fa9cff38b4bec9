#!/usr/bin/env bash
# agent_hotpath.sh [OUTDIR] — the CUDA agent's cost on the launching threads, measured without a
# GPU (runs here and on the GPU box alike): builds the stand-in libcupti and bench/agent_hotpath.c,
# runs the C benchmark (interleaved modes, median of repetitions), then the cost of one launch
# stack with Python frames (tests/gpu/fake_launch.py --bench under CPython, stacks off vs a stack
# at every call, shallow and 20 frames deeper). Needs `make record` (the agent) and CUDA headers.
#   env: BUILD (build), CUDA_HOME (/usr/local/cuda), PYTHON (python3), CALLS (200000), REPS (5)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${PYTHON:-python3}
OUTDIR=${1:-}
AGENT=$BUILD/lib/libgtcupti.so
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-hotpath.XXXXXX")
trap 'rm -rf "$W"' EXIT
say() { if [ -n "$OUTDIR" ]; then echo "$*" | tee -a "$OUTDIR/agent_hotpath.txt"; else echo "$*"; fi; }
[ -n "$OUTDIR" ] && mkdir -p "$OUTDIR" && : >"$OUTDIR/agent_hotpath.txt"
if [ ! -f "$AGENT" ]; then
	say "agent_hotpath: $AGENT missing (make record with CUDA installed)"
	exit 2
fi
real=$CUDA_HOME/lib64/libcupti.so.13
[ -e "$real" ] || real=$(ls "$CUDA_HOME"/extras/CUPTI/lib64/libcupti.so.* 2>/dev/null | head -1)
export FAKE_CUPTI_REAL=$real
mkdir -p "$W/fake"
gcc -std=gnu11 -O2 -g -shared -fPIC -o "$W/fake/libcupti.so.13" "$ROOT/tests/gpu/fake_cupti.c" \
	-Wl,--version-script="$ROOT/tests/gpu/fake_cupti.map" -Wl,-soname,libcupti.so.13 \
	-I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" -ldl -pthread || exit 2
gcc -std=gnu11 -O2 -g -o "$W/agent_hotpath" "$ROOT/bench/agent_hotpath.c" -ldl || exit 2

say "date: $(date -u +%FT%TZ)  commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')  host: $(hostname)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')  cores: $(nproc)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
LD_LIBRARY_PATH="$W/fake" "$W/agent_hotpath" "$AGENT" --calls "${CALLS:-200000}" --reps "${REPS:-5}" >"$W/c.txt" 2>"$W/c.err"
rc=$?
while IFS= read -r l; do say "$l"; done <"$W/c.txt"
[ "$rc" -eq 0 ] || say "agent_hotpath exited $rc: $(head -c 300 "$W/c.err")"

# One stack with Python frames: the same Python loop with stacks off and with one at every call.
if "$PY" -c 'import ctypes' 2>/dev/null; then
	say ""
	say "launch stack with Python frames ($("$PY" -c 'import sys; print(sys.version.split()[0])')), ns per cudaLaunchKernel from Python (best of 5 x 20000):"
	for mode in site deep; do
		line="  $mode:"
		for st in off every; do
			envs=(GT_CUPTI_DIR="$W" GT_CUPTI_STACKS=0)
			[ "$st" = every ] && envs=(GT_CUPTI_DIR="$W" GT_CUPTI_STACK_FIRST=1000000000 GT_CUPTI_STACK_BUDGET=0
				GT_CUPTI_STACK_BUDGET_NS=0)
			v=$(env LD_LIBRARY_PATH="$W/fake" CUDA_INJECTION64_PATH="$AGENT" "${envs[@]}" \
				"$PY" "$ROOT/tests/gpu/fake_launch.py" "$W/b.json" --calls 20000 --bench "$mode" >/dev/null 2>"$W/py.err" &&
				"$PY" -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["bench_ns_per_call"])' "$W/b.json")
			line="$line stacks $st ${v:-failed} ns;"
			eval "v_$st=\${v:-0}"
		done
		# shellcheck disable=SC2154
		say "$line one stack: $(( v_every - v_off )) ns"
	done
fi
