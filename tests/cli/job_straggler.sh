#!/usr/bin/env bash
# job_straggler.sh — the straggler view on a job of known pace: 4 ranks step every 20 ms, rank 2
# every 35 ms (tests/job/rank_steps.py, a train.step counter). The report's "Across ranks" must
# compare the 4 ranks step by step and name rank 2 as the slowest nearly every step, about 15 ms
# over the median; with every rank at the same pace no rank may stand out that way.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze LAUNCH=$GT_ROOT/tests/job/launch_ranks.sh
PY=$(command -v python3)
[ -x "$REC" ] && [ -x "$ANA" ] && [ -n "$PY" ] || { skip "gt-record, gt-analyze or python3 missing"; exit 0; }

check_rc "4 ranks, rank 2 slow, recorded" 0 "$REC" -q -F 49 -o "$TMP/s.gtt" -- \
	"$LAUNCH" 4 trainer -- "$PY" "$GT_ROOT/tests/job/rank_steps.py" 14 20 2 35
"$ANA" report "$TMP/s.gtt" >"$TMP/s.rep" 2>/dev/null
line=$(grep 'counter train.step:' "$TMP/s.rep")
echo "$line"
check "the straggler view compares train.step across 4 processes" grep -q 'counter train.step: 4 processes, 1[0-3] steps compared' <<<"$line"
check "rank 2 is the slowest most often (at least 10 steps)" \
	grep -qE 'slowest most often rank 2/4 L2 trainer \(pid [0-9]+\), (1[0-3]) of' <<<"$line"
ex=$(sed -nE 's/.*median excess ([0-9.]+) ms.*/\1/p' <<<"$line")
check "its median excess is the known 15 ms (8-25 ms: sleeps overshoot on a busy machine): ${ex:-none}" \
	awk -v e="${ex:-0}" 'BEGIN { exit !(e >= 8 && e <= 25) }'

check_rc "4 ranks at one pace, recorded" 0 "$REC" -q -F 49 -o "$TMP/e.gtt" -- \
	"$LAUNCH" 4 trainer -- "$PY" "$GT_ROOT/tests/job/rank_steps.py" 14 20
"$ANA" report "$TMP/e.gtt" >"$TMP/e.rep" 2>/dev/null
line=$(grep 'counter train.step:' "$TMP/e.rep")
echo "$line"
ex=$(sed -nE 's/.*median excess ([0-9.]+) ms.*/\1/p' <<<"$line")
check "even pace: compared, and the median excess stays small (${ex:-none} ms < 6 ms)" \
	awk -v e="${ex:-99}" 'BEGIN { exit !(e < 6) }'
