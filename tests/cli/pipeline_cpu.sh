#!/usr/bin/env bash
# pipeline_cpu.sh — gt-pipeline on the CPU backend: runs finish, print tokens/s and the queue summary,
# and write self-consistent telemetry (tests/cli/pipeline_telemetry.py).
. "$(dirname "$0")/lib.sh"
PL="$GT_BIN/gt-pipeline"
CHECK="$GT_ROOT/tests/cli/pipeline_telemetry.py"
[ -x "$PL" ] || { fail "gt-pipeline not built"; exit 1; }

# Default shape (5 targets, 3 drafters, depth 60, min_ready 9), one second.
timeout 60 "$PL" --seconds 1 --telemetry "$TMP/a.json" >"$TMP/a.out" 2>"$TMP/a.err"
rc=$?
check "default CPU run exits 0 (exit $rc: $(head -c 200 "$TMP/a.err"))" test "$rc" -eq 0
check "prints tokens/s" grep -Eq '^tokens/s: [0-9]+\.[0-9] \([0-9]+ tokens trained' "$TMP/a.out"
check "prints the queue depth summary" \
	grep -Eq '^queue depth: mean [0-9.]+, min [0-9]+, max [0-9]+ \(depth 60, min_ready 9\); at or below min_ready [0-9.]+% of the time' "$TMP/a.out"
check "prints per-phase times for targets and drafters" \
	sh -c "grep -q 'target .*forward' '$TMP/a.out' && grep -q 'drafter .*chunk_fwd' '$TMP/a.out'"
check "telemetry is valid JSON" python3 -m json.tool "$TMP/a.json" /dev/null
python3 "$CHECK" "$TMP/a.json" --driver c --backend cpu --label default
# The summary printed and the telemetry agree on the tokens trained.
printed=$(sed -n 's/^tokens\/s: [0-9.]* (\([0-9]*\) tokens trained.*/\1/p' "$TMP/a.out")
stored=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"]["consumed"])' "$TMP/a.json")
check "printed tokens ($printed) = telemetry tokens ($stored)" test "$printed" = "$stored"

# Fixed steps, caching allocator, loss read back every 3 steps, several workers per role.
timeout 60 "$PL" --steps 4 --targets 3 --drafters 2 --alloc cached --sync-every 3 --layers 2 \
	--telemetry "$TMP/b.json" >"$TMP/b.out" 2>&1
check "steps run exits 0" test $? -eq 0
python3 "$CHECK" "$TMP/b.json" --driver c --label steps
check "--steps 4 x 3 targets = 12 batches" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["queue"]["puts"] != 12)' "$TMP/b.json"
check "the caching allocator served requests from its cache" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(sum(t["alloc"]["cache_hits"] for t in d["threads"]) == 0)' "$TMP/b.json"

# Watermark at the full depth: drafters wait for a full queue, and still drain at the end.
timeout 60 "$PL" --steps 3 --targets 2 --drafters 3 --queue-depth 4 --min-ready 4 --layers 1 \
	--telemetry "$TMP/c.json" >"$TMP/c.out" 2>&1
check "min_ready = depth finishes (no hang) and drains" test $? -eq 0
python3 "$CHECK" "$TMP/c.json" --driver c --label "min_ready=depth"
# Depth 1, no watermark, more drafters than batches: idle consumers finish when producers stop.
timeout 60 "$PL" --steps 1 --targets 1 --drafters 4 --queue-depth 1 --min-ready 0 --layers 1 >"$TMP/d.out" 2>&1
check "idle drafters finish when the producers stop" test $? -eq 0

# The watermark shows: with targets the bottleneck the queue sits at or below min_ready.
timeout 60 "$PL" --seconds 1 --targets 1 --drafters 2 --layers 8 --telemetry "$TMP/e.json" >"$TMP/e.out" 2>&1
check "slow-target run exits 0" test $? -eq 0
check "one slow target: queue at or below min_ready most of the time" \
	python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["queue"]; sys.exit(not (q["pct_time_at_or_below_min_ready"] > 70 and q["max"] <= 12))' "$TMP/e.json"
