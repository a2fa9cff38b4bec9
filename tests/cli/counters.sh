#!/usr/bin/env bash
# counters.sh — counters the program emits (docs/COUNTERS.md): gt-pipeline's queue.ready under
# gt-record reaches the trace and agrees with the pipeline's own telemetry.json at every sample;
# a Python program's counters (python/gt_counters.py) from threads and a forked child; hostile
# counter lines are dropped and noted, never recorded.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze PL=$GT_BIN/gt-pipeline
[ -x "$REC" ] && [ -x "$ANA" ] && [ -x "$PL" ] || { skip "tools not built"; exit 0; }
PY=$(command -v python3)

if ! "$REC" -q -o "$TMP/pl.gtt" -- "$PL" --backend cpu --seconds 1 --quiet --telemetry "$TMP/tel.json" >"$TMP/rec.out" 2>&1; then
	skip "gt-record cannot record here: $(tail -1 "$TMP/rec.out")"; exit 0
fi
check "the chrome export of the recording works" "$ANA" export "$TMP/pl.gtt" --format chrome -o "$TMP/pl.json"
out=$("$PY" - "$TMP/pl.json" "$TMP/tel.json" <<'PYEOF'
import bisect, json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
tel = json.load(open(sys.argv[2]))["queue"]
pts = sorted((round(e["ts"] * 1000), e["args"]["value"]) for e in ev if e.get("ph") == "C" and e["name"] == "queue.ready")
wm = [e["args"]["value"] for e in ev if e.get("ph") == "C" and e["name"] == "queue.ready@watermark"]
if not pts:
    print("none"); sys.exit()
t0 = pts[0][0]  # the queue's start: the pipeline writes 0 there
times = [t for t, _ in pts]
bad = 0
for t_rel, depth in tel["samples"]:
    i = bisect.bisect_right(times, t0 + t_rel) - 1
    if i < 0 or pts[i][1] != depth:
        bad += 1
print(len(pts), len(tel["samples"]), bad, wm[0] if wm else "none", tel["min_ready"], tel["puts"] + tel["gets"])
PYEOF
)
read -r n_pts n_tel bad wm min_ready changes <<<"$out"
check "queue.ready reaches the trace: one value per put and get, plus the start ($n_pts = $changes + 1)" test "$n_pts" = "$((changes + 1))"
check "the step function equals telemetry.json at all $n_tel samples ($bad differ)" test "$n_tel" -ge 50 -a "$bad" = 0
check "the watermark is queue.ready@watermark = --min-ready ($wm = $min_ready)" test "$wm" = "$min_ready"

# a Python program: threads and a forked child, and hostile lines beside good ones
cat >"$TMP/prog.py" <<PYEOF
import os, sys, threading
sys.path.insert(0, "$GT_ROOT/python")
import gt_counters
gt_counters.watermark("work.level", 3)
def w(k):
    for i in range(100):
        gt_counters.counter("work.t%d" % k, i)
ts = [threading.Thread(target=w, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
pid = os.fork()
if pid == 0:
    gt_counters.counter("child.value", 42)
    os._exit(0)
os.waitpid(pid, 0)
with open(os.path.join(os.environ["GT_COUNTERS_DIR"], "counters.%d" % os.getpid()), "a") as f:
    f.write("c 1 bad name 1\nc 1 good.one nan\nc x y 1\n" + "c 5 long" + "g" * 300 + " 1\n")
try:
    gt_counters.counter("bad name", 1)
    print("accepted a bad name")
except ValueError:
    pass
PYEOF
"$REC" -q -o "$TMP/py.gtt" -- "$PY" "$TMP/prog.py" >"$TMP/py.out" 2>&1
check "the Python helper refuses a bad name itself" sh -c "! grep -q 'accepted a bad name' '$TMP/py.out'"
"$ANA" export "$TMP/py.gtt" --format chrome -o "$TMP/py.json" 2>/dev/null
read -r nthr nchild nwm nbadrec < <("$PY" - "$TMP/py.json" <<'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
c = [e for e in ev if e.get("ph") == "C"]
print(sum(1 for e in c if e["name"].startswith("work.t")), sum(1 for e in c if e["name"] == "child.value"),
      sum(1 for e in c if e["name"] == "work.level@watermark"),
      sum(1 for e in c if not (e["name"].startswith("work.") or e["name"] == "child.value")))
PYEOF
)
check "400 counter values from 4 threads arrive ($nthr)" test "$nthr" = 400
check "a forked child's counter arrives ($nchild)" test "$nchild" = 1
check "the watermark arrives ($nwm)" test "$nwm" = 1
check "no malformed line became a counter ($nbadrec)" test "$nbadrec" = 0
"$ANA" report "$TMP/py.gtt" >"$TMP/py.report" 2>&1
check "the malformed lines are noted (4 of them)" grep -q "counters: 4 of .* lines from process .* were malformed" "$TMP/py.report"
