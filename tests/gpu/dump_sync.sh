#!/usr/bin/env bash
# dump_sync.sh OUTDIR — gt-record --dump on a GPU box (< 60 s, builds nothing: run
# `make record` first): tests/gpu/dump_sync.py, started under `gt-record --prepare` (the CUDA
# agent dormant, its in-flight table live), queues a 30 s GPU kernel and calls
# torch.cuda.synchronize() in wait_for_gpu() on its "gpu_sync" thread. Dumped as text, JSON and
# a snapshot trace, the gpu_sync thread must show the synchronize call in flight (CUDA
# cudaDeviceSynchronize or a stream/context synchronize) and wait_for_gpu at its line, and the
# process must keep running. OUTDIR gets summary.txt (PASS/FAIL lines, timings), dump.txt,
# dump.json, dump.gtt (--no-archive: analyze it where the same torch is installed, or skip
# symbols), and the logs.
#   env: BUILD (default build), PYTHON (default python3)
set -u
OUT=${1:?usage: dump_sync.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REC=$BUILD/bin/gt-record
PY=${PYTHON:-python3}
SCRIPT=$ROOT/tests/gpu/dump_sync.py
mkdir -p "$OUT" || exit 2
SUM=$OUT/summary.txt
: >"$SUM"
log() { echo "$*" | tee -a "$SUM"; }
nfail=0
pass() { log "PASS: $*"; }
fail() { log "FAIL: $*"; nfail=$((nfail + 1)); }
[ -x "$REC" ] || { fail "$REC not built (make record)"; exit 1; }
[ -f "$BUILD/lib/libgtcupti.so" ] || log "note: $BUILD/lib/libgtcupti.so missing: no CUDA agent, so no in-flight call"
"$PY" -c 'import torch; assert torch.cuda.is_available()' 2>"$OUT/torch.err" ||
	{ fail "torch with CUDA not available: $(tail -1 "$OUT/torch.err")"; exit 1; }

ready=$OUT/ready.txt
rm -f "$ready"
"$REC" --prepare -- "$PY" "$SCRIPT" "$ready" 30 >"$OUT/target.log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null' EXIT
for _ in $(seq 400); do [ -s "$ready" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if [ ! -s "$ready" ]; then
	fail "dump_sync.py did not get ready in 40 s: $(tail -3 "$OUT/target.log" | tr '\n' ' ')"
	exit 1
fi
sleep 2 # into the synchronize
sync_tid=$(awk '$1 == "gpu_sync" { print $2 }' "$ready")
line=$(grep -n '# line:sync$' "$SCRIPT" | cut -d: -f1)

t0=$(date +%s%N)
"$REC" --dump -p "$pid" >"$OUT/dump.txt" 2>"$OUT/dump.err"
rc=$?
t1=$(date +%s%N)
log "dump: exit $rc, $(( (t1 - t0) / 1000000 )) ms wall ($(grep -m1 'threads' "$OUT/dump.txt"))"
"$REC" --dump --json -p "$pid" >"$OUT/dump.json" 2>>"$OUT/dump.err"
"$REC" --dump --no-archive -p "$pid" -o "$OUT/dump.gtt" 2>>"$OUT/dump.err"
cat "$OUT/dump.err" >>"$SUM"
[ $rc -eq 0 ] && pass "gt-record --dump exit 0" || fail "gt-record --dump exit $rc"

b=$(awk -v t="Thread $sync_tid " 'index($0, t) == 1 { on = 1; print; next } on && /^$/ { exit } on' "$OUT/dump.txt")
echo "$b" | head -1 | grep -Eq ', CUDA (cudaDeviceSynchronize|cudaStreamSynchronize|cuCtxSynchronize|cuStreamSynchronize) for [0-9.]+ s$' &&
	pass "gpu_sync thread: $(echo "$b" | head -1 | sed 's/^Thread [0-9]* //')" ||
	fail "gpu_sync thread: no synchronize in flight: $(echo "$b" | head -1)"
echo "$b" | grep -Eq "^    wait_for_gpu \(.*dump_sync\.py:$line\)\$" &&
	pass "gpu_sync thread: wait_for_gpu (dump_sync.py:$line) on its stack" ||
	fail "gpu_sync thread: wait_for_gpu at line $line not on its stack"
echo "$b" | grep -Eq '\((libcuda\.so[^)]*|libcudart[^)]*|libtorch_cuda\.so|libc10_cuda\.so)\)$' &&
	pass "gpu_sync thread: native frames in the CUDA libraries" || fail "gpu_sync thread: no frame in libcuda/libcudart/libtorch_cuda"
"$PY" - "$OUT/dump.json" "$sync_tid" >>"$SUM" 2>&1 <<'PY' && pass "--json: the call on the gpu_sync thread only" || fail "--json: see above"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["processes"][0]
calls = {t["tid"]: t["cuda"]["api"] for t in p["threads"] if t["cuda"]}
print("cuda:", p["cuda"], "calls in flight:", calls)
assert int(sys.argv[2]) in calls, calls
PY
st=$(awk '/^State:/ { print $2 }' /proc/$pid/task/*/status 2>/dev/null | sort -u | tr -d '\n')
kill -0 $pid 2>/dev/null && [[ "$st" != *[tT]* ]] && pass "the process runs on (thread states $st)" ||
	fail "the process is stopped or gone (states '$st')"
log "gpu_sync thread as dumped:"
echo "$b" >>"$SUM"
log "$nfail failed"
[ $nfail -eq 0 ]
