#!/usr/bin/env bash
# job_ranks_h200.sh — a real 4-rank job recorded on the H200 (tests/gpu/job_ranks.sh, 1 s: two
# gt-pipeline --backend cuda ranks and two torch ranks sharing device 0 under one gt-record),
# analyzed here without a GPU: the report's per-process table against each rank's own telemetry
# (tests/job/check_ranks.py: pid and rank label, samples, threads, CPU, tokens, device, kernels
# and GPU busy of its own work), the timeline grouped by process, and the Chrome export naming
# each process by its rank.
. "$(dirname "$0")/lib.sh"
ANA=$GT_BIN/gt-analyze REN=$GT_BIN/gt-render
T=$GT_ROOT/testdata/gpu/job_ranks_h200.gtt D=$GT_ROOT/testdata/gpu/job_ranks_h200
[ -x "$ANA" ] || { fail "gt-analyze not built"; exit 0; }
[ -f "$T" ] || { fail "$T missing"; exit 0; }
check_rc "report of the H200 job" 0 "$ANA" report "$T"
cp "$TMP/out" "$TMP/report"
if command -v python3 >/dev/null; then
	python3 "$GT_ROOT/tests/job/check_ranks.py" "$TMP/report" "$D"/rank[0-3].json
else
	skip "no python3 for check_ranks.py"
fi
check "the report lists 4 ranks of 4" sh -c "[ \$(grep -cE 'rank [0-3]/4' '$TMP/report') -ge 4 ]"
check_rc "chrome export of the job" 0 "$ANA" export --format chrome "$T" -o "$TMP/job.json"
check "chrome export: every rank's process named with its rank" \
	sh -c "for r in 0 1 2 3; do grep -q \"rank \$r\" '$TMP/job.json' || exit 1; done"
if [ -x "$REN" ]; then
	check_rc "timeline of the job" 0 "$REN" timeline "$T" -o "$TMP/job.svg"
	check "timeline: a row group per rank" sh -c "for r in 0 1 2 3; do grep -q \"rank \$r\" '$TMP/job.svg' || exit 1; done"
else
	skip "gt-render not built"
fi
