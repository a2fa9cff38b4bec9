#!/usr/bin/env bash
# nvtx_capture.sh OUTDIR — NVTX capture ranges and counters on the GPU box (< 60 s, builds only a
# small dump tool: run `make record` first): tests/gpu/nvtx_capture.py recorded by gt-record with
# the capture rule train_step (GT_CUPTI_CAPTURE_NVTX, what --capture-range=nvtx:train_step passes),
# then without it. PASS/FAIL lines in OUTDIR/summary.txt:
#   - the ranges: 3 capture record pairs (2 push/pop, then 1 start/end), source nvtx
#   - kernels: every sin (inside push/pop ranges) launch kept, no cos (outside) and no tanh (inside
#     a range of another name); every exp (inside the start/end range) kept, no neg (after it);
#     without the rule all five kept
#   - API records only inside; the summary counts what was discarded
#   - counters (python/gt_nvtx.py: NVTX markers with payloads): every value, in order, also those
#     outside the ranges
#   env: BUILD (build), PYTHON (python3)
set -u
OUT=${1:?usage: nvtx_capture.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=${PYTHON:-python3}
mkdir -p "$OUT" || exit 2
SUM=$OUT/summary.txt
: >"$SUM"
log() { echo "$*" | tee -a "$SUM"; }
nfail=0
[ -x "$BUILD/bin/gt-record" ] && [ -f "$BUILD/lib/libgtcupti.so" ] ||
	{ log "FAIL: gt-record or the agent not built (make record)"; exit 1; }
gcc -std=gnu11 -O2 -I"$ROOT/lib" -o "$OUT/callstack_dump" "$ROOT/tests/gpu/callstack_dump.c" "$BUILD/lib/libgtt.a" \
	2>"$OUT/cc.err" || { log "FAIL: callstack_dump does not build: $(head -c 300 "$OUT/cc.err")"; exit 1; }
for run in rule norule; do
	cap=()
	[ "$run" = rule ] && cap=(GT_CUPTI_CAPTURE_NVTX=train_step)
	t0=$SECONDS
	env "${cap[@]}" GT_CUPTI_VERBOSE=1 timeout 120 "$BUILD/bin/gt-record" -q --no-archive -o "$OUT/$run.gtt" -- \
		"$PY" "$ROOT/tests/gpu/nvtx_capture.py" "$OUT/$run.json" >"$OUT/$run.log" 2>&1
	rc=$?
	log "$run: gt-record exit $rc in $((SECONDS - t0)) s"
	"$OUT/callstack_dump" "$OUT/$run.gtt" >"$OUT/$run.txt" 2>>"$OUT/$run.log" || log "FAIL: $run: the trace does not read"
done
"$PY" - "$OUT" >>"$SUM" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
fails = 0
def check(ok, what):
    global fails
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    fails += not ok
def load(run):
    try:
        exp = json.load(open(os.path.join(out, run + ".json")))
    except OSError:
        return None, []
    recs = []
    for line in open(os.path.join(out, run + ".txt")):
        kind, _, rest = line.rstrip("\n").partition(" ")
        d = {"kind": kind}
        if kind in ("note", "config", "dropped"):
            rest, _, d["text"] = rest.partition("text=")
        for kv in rest.split():
            k, _, v = kv.partition("=")
            d[k] = v
        if d.get("pid") == str(exp["pid"]):
            recs.append(d)
    return exp, recs
def kernels(recs, op):
    return [r for r in recs if r["kind"] == "kernel" and (op + "_kernel") in r.get("name", "")]
for run in ("rule", "norule"):
    exp, recs = load(run)
    if exp is None:
        check(False, "%s: the workload wrote no expectations (see %s.log)" % (run, run))
        continue
    n = exp["launches"]
    check(exp["gt_nvtx"], "%s: gt_nvtx found the NVTX tool (the agent) in a torch %s process" % (run, exp["torch"]))
    counts = {op: len(kernels(recs, op)) for op in ("sin", "cos", "tanh", "exp", "neg")}
    caps = [r for r in recs if r["kind"] == "capture"]
    got = [(r["name"], float(r["value"])) for r in recs if r["kind"] == "counter"]
    want = [tuple(c) for c in exp["counters"]]
    check(got == want, "%s: every NVTX counter with its value, in order (%d of %d)" % (run, len(got), len(want)))
    notes = [r["text"] for r in recs if r["kind"] == "note"]
    summary = [t for t in notes if t.startswith("cupti agent summary")]
    print("  %s: kernels %s; %d capture records; %s" % (run, counts, len(caps),
          " ".join(w for w in (summary[-1].split() if summary else []) if w.split("=")[0] in
                   ("records", "outside_capture", "capture_ranges", "counters", "callback_ids", "api_calls",
                    "api_nested", "callback_ns", "stacks", "stack_us", "app_ns_per_record"))))
    if run == "norule":
        check(all(counts[op] >= n for op in counts), "no rule: every kernel kind is in the trace (%s)" % counts)
        check(not caps, "no rule: no capture records")
        continue
    ev = [(r["event"], r["source"], r["name"]) for r in caps]
    check(ev[:4] == [("1", "2", "train_step"), ("2", "2", "train_step")] * 2,
          "rule: two push/pop capture ranges, each a start then a stop, source nvtx (%s)" % ev[:4])
    check(counts["sin"] == 2 * n, "rule: every sin launched inside the push/pop ranges is kept (%d of %d)" % (counts["sin"], 2 * n))
    check(counts["cos"] == 0, "rule: no cos launched outside the ranges (%d)" % counts["cos"])
    check(counts["tanh"] == 0, "rule: no tanh launched inside a range of another name (%d)" % counts["tanh"])
    check(ev[4:] == [("1", "2", "train_step"), ("2", "2", "train_step")],
          "rule: a start/end range (torch.cuda.nvtx.range_start/range_end) is a capture range too (%s)" % ev[4:])
    check(counts["exp"] == n and counts["neg"] == 0,
          "rule: every exp inside the start/end range kept (%d of %d), no neg after it (%d)" % (counts["exp"], n, counts["neg"]))
    times = [int(r["time"]) for r in caps]
    spans = list(zip(times[0::2], times[1::2]))
    kept = kernels(recs, "sin") + kernels(recs, "exp")
    check(kept and all(any(a <= int(k["start"]) <= b for a, b in spans) for k in kept),
          "rule: the kept kernels ran inside the capture ranges (each range ends with a synchronize)")
    check(summary and " outside_capture=0 " not in summary[-1] and " capture_ranges=3 " in summary[-1],
          "rule: the summary counts 3 ranges and the records discarded outside them")
sys.exit(1 if fails else 0)
PY
rc=$?
grep -c '^FAIL' "$SUM" >/dev/null && nfail=$(grep -c '^FAIL' "$SUM")
log "$nfail failed"
[ "$rc" -eq 0 ] && [ "$nfail" -eq 0 ]
