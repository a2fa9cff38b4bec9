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
check "queue.ready reaches the trace: one value per put and get, plus the start and the end ($n_pts = $changes + 2)" test "$n_pts" = "$((changes + 2))"
check "the step function equals telemetry.json at all $n_tel samples ($bad differ)" test "$n_tel" -ge 50 -a "$bad" = 0
check "the watermark is queue.ready@watermark = --min-ready ($wm = $min_ready)" test "$wm" = "$min_ready"
# the report's counters section against the pipeline's own accounting
"$ANA" report "$TMP/pl.gtt" >"$TMP/pl.report" 2>/dev/null
out=$("$PY" - "$TMP/pl.report" "$TMP/tel.json" <<'PYEOF'
import json, re, sys
rep, q = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["queue"]
m = re.search(r"^ +\d+  queue\.ready +(\d+) +(\S+) +(\S+) +(\S+) +([\d.]+)  (\S+): ([\d.]+) s \(([\d.]+) % of the span\)", rep, re.M)
if not m:
    print("missing"); sys.exit()
n, lo, mean, hi, span, wm, below_s, pct = m.groups()
print(n, float(lo) == q["min"] and float(hi) == q["max"], wm, pct, q["pct_time_at_or_below_min_ready"],
      abs(float(pct) - q["pct_time_at_or_below_min_ready"]) <= 0.5, abs(float(mean) - q["mean"]) <= 0.05 * max(q["mean"], 1))
PYEOF
)
read -r r_n r_minmax r_wm r_pct t_pct r_close r_mean <<<"$out"
check "report: counters section lists queue.ready with all its samples ($r_n = $changes + 2)" test "$r_n" = "$((changes + 2))"
check "report: min and max as telemetry.json's" test "$r_minmax" = True
check "report: the watermark is min_ready ($r_wm = $min_ready)" test "$r_wm" = "$min_ready"
check "report: at or below min_ready $r_pct % of the span, telemetry.json $t_pct % (within 0.5 points)" test "$r_close" = True
check "report: time-weighted mean within 5 % of telemetry.json's" test "$r_mean" = True

# the timeline: one row for queue.ready, its watermark a line at 9 on the row's scale
if [ -x "$GT_BIN/gt-render" ]; then
	"$GT_BIN/gt-render" timeline "$TMP/pl.gtt" -o "$TMP/pl.svg" 2>/dev/null
	check "timeline SVG: queue.ready's row carries its watermark as a line at $min_ready" "$PY" - "$TMP/pl.svg" "$min_ready" <<'PYEOF'
import re, sys
svg, wm = open(sys.argv[1]).read(), float(sys.argv[2])
items = re.findall(r'<title>([^<]*)</title><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="#([0-9a-f]{6})"', svg)
labels = re.findall(r"<title>counter ([^ ]+) \(pid", svg)
assert "queue.ready" in labels and not any(l.endswith("@watermark") for l in labels), labels  # X@watermark is not a row of its own
bars = [(float(re.match(r"queue\.ready = (\S+)", t).group(1)), float(y), float(h)) for t, x, y, w, h, c in items
        if re.match(r"queue\.ready = ", t)]
line = [(float(y), float(w)) for t, x, y, w, h, c in items if t.startswith("queue.ready@watermark = %g" % wm) and c == "8b0000"]
assert bars and line, (len(bars), line)
bars = [b for b in bars if b[2] > 1.001]             # a bar is at least 1 px: tiny values are off the scale
(v1, y1, h1), (v2, y2, h2) = min(bars), max(bars)  # bar tops lie on a line in the value
assert v2 > v1
slope = ((y2) - (y1)) / (v2 - v1)
want = y1 + slope * (wm - v1)
assert all(abs((y + 1) - want) < 0.05 for y, w in line), (want, line)
assert "at or below its watermark" in svg
print("watermark line at y %.2f (bars say %.2f), %d segment(s)" % (line[0][0] + 1, want, len(line)))
PYEOF
	if "$GT_BIN/gt-render" timeline "$TMP/pl.gtt" -o "$TMP/pl.png" 2>/dev/null; then
		read -r n_px y0 y1 < <("$PY" "$GT_ROOT/tests/cli/render_pngcolors.py" "$TMP/pl.png" 8b0000)
		check "timeline PNG: the watermark line is drawn ($n_px pixels, rows $y0-$y1)" test "${n_px:-0}" -ge 300
	else
		skip "gt-render writes no PNG here (no Cairo)"
	fi
else
	skip "gt-render not built"
fi

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
