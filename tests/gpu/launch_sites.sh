#!/usr/bin/env bash
# launch_sites.sh OUTDIR — on the GPU box (~30 s, builds nothing: `make record` first): records
# tests/gpu/launch_sites.py (two Python functions launching different kernels) under gt-record
# with launch stacks at 1 call in 8 and no per-call stack budget (the test is about where stacks
# point, not what they cost), small enough to commit as testdata (fp call graphs, 49 Hz, no
# archive), and checks the attribution right away (tests/gpu/check_sites.py: >= 95 % of the
# sampled launches of each kernel at the right function and line). OUTDIR gets three files (the
# GPU box brings back at most 8 per run): launch_sites.gtt, launch_sites.txt (the check, sizes,
# the agent's summary) and launch_sites_more.tar.gz (the expected sites as written, the log, the
# records as text).
#   env: BUILD (build), PYTHON (python3), ITERS (1500), EVERY (8)
set -u
OUT=${1:?usage: tests/gpu/launch_sites.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=${PYTHON:-python3}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
RES=$OUT/launch_sites.txt
: >"$RES"
say() { echo "$*" | tee -a "$RES"; }
say "launch_sites: $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $("$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
rm -f "$OUT/launch_sites.gtt"
env GT_CUPTI_STACK_EVERY="${EVERY:-8}" GT_CUPTI_STACK_BUDGET_NS=0 GT_CUPTI_VERBOSE=1 timeout -k 5 120 "$BUILD/bin/gt-record" --no-archive \
	--call-graph fp -F 49 -o "$OUT/launch_sites.gtt" -- "$PY" "$ROOT/tests/gpu/launch_sites.py" \
	--iters "${ITERS:-1500}" --expect "$OUT/launch_sites.expected.json" >"$OUT/launch_sites.log" 2>&1
rc=$?
say "gt-record exit $rc: $(grep -E '^gt-record:' "$OUT/launch_sites.log" | tr '\n' ' ' | cut -c1-300)"
grep -h 'cupti agent summary' "$OUT/launch_sites.log" | sed 's/^/  /' | cut -c1-600 | tee -a "$RES"
[ -f "$OUT/launch_sites.gtt" ] || { say "no trace"; exit 2; }
# the workload writes the expected sites when it succeeds; else they come from the script alone
[ -s "$OUT/launch_sites.expected.json" ] ||
	"$PY" "$ROOT/tests/gpu/launch_sites.py" --expect-only "$OUT/launch_sites.expected.json"
size=$(stat -c %s "$OUT/launch_sites.gtt")
say "trace: $size bytes ($([ "$size" -lt 2097152 ] && echo 'under 2 MiB: fits testdata/' || echo 'OVER 2 MiB: lower ITERS'))"
if gcc -std=gnu11 -O2 -I"$ROOT/lib" -o "$OUT/.callstack_dump" "$ROOT/tests/gpu/callstack_dump.c" "$BUILD/lib/libgtt.a" 2>>"$RES"; then
	"$OUT/.callstack_dump" "$OUT/launch_sites.gtt" >"$OUT/launch_sites.dump.txt"
	say "records: $(cut -d' ' -f1 "$OUT/launch_sites.dump.txt" | sort | uniq -c | tr '\n' ' ')"
	"$PY" "$ROOT/tests/gpu/check_sites.py" "$OUT/launch_sites.dump.txt" "$OUT/launch_sites.expected.json" | tee -a "$RES"
	rc=${PIPESTATUS[0]}
else
	rc=2
fi
more=()
for f in launch_sites.expected.json launch_sites.log launch_sites.dump.txt; do
	[ -f "$OUT/$f" ] && more+=("$f")
done
tar -C "$OUT" -czf "$OUT/launch_sites_more.tar.gz" "${more[@]}" && (cd "$OUT" && rm -f "${more[@]}")
rm -f "$OUT/.callstack_dump"
exit "$rc"
