#!/usr/bin/env bash
# job_ranks_cpu.sh — a 4-rank job on the CPU under one gt-record: tests/job/launch_ranks.sh starts
# 4 gt-pipeline processes (--backend cpu) with RANK=0..3 and GT_ROLE in their environment, each
# writing its own telemetry. The report's per-process table must show the 4 ranks with the right
# pids, their threads, CPU seconds matching each rank's own process CPU, and per-process counters
# whose last tokens.trained is each rank's telemetry tokens.consumed (tests/job/check_ranks.py,
# which tests/gpu/job_ranks.sh's traces are checked with too).
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze PL=$GT_BIN/gt-pipeline
LAUNCH=$GT_ROOT/tests/job/launch_ranks.sh
[ -x "$REC" ] && [ -x "$ANA" ] && [ -x "$PL" ] || { skip "gt-record, gt-analyze or gt-pipeline not built"; exit 0; }
command -v python3 >/dev/null || { skip "python3 needed to read the telemetry"; exit 0; }

check_rc "4 ranks recorded under one gt-record (exit 0)" 0 "$REC" -q -F 199 -o "$TMP/job.gtt" -- \
	"$LAUNCH" 4 trainer -- "$PL" --backend cpu --seconds 1.5 --targets 2 --drafters 1 --quiet \
	--telemetry "$TMP/rank{RANK}.json"
check "each rank wrote its telemetry" test -s "$TMP/rank0.json" -a -s "$TMP/rank3.json"
"$ANA" report "$TMP/job.gtt" >"$TMP/report" 2>"$TMP/report.err"
check "the report has a per-process table before the thread table" \
	sh -c "grep -n '^Processes (' '$TMP/report' | cut -d: -f1 | { read a; b=\$(grep -n '^Threads (' '$TMP/report' | cut -d: -f1); test \"\$a\" -lt \"\$b\"; }"
# pid, label, samples, threads, CPU and tokens of each rank against its own telemetry
python3 "$GT_ROOT/tests/job/check_ranks.py" "$TMP/report" "$TMP"/rank[0-3].json
# (a rank's children — ASan's leak checker forks one at exit — are marked "(child)", not ranks)
check "exactly 4 rank processes in the table" test "$(grep -cE '^ +[0-9]+ rank [0-3]/4 L[0-3] trainer  ' "$TMP/report")" -eq 4
check "the launcher itself carries no rank" sh -c "! grep -E '^ +[0-9]+ rank .*launch_ranks' '$TMP/report'"

# an exiting thread's last switches (perf says tid -1) belong to it or are left out: no thread
# "4294967295" in the trace or the report
check "no switch record of tid -1 ($("$GT_ROOT/${BUILD:-build}/bench/gtt_cat" "$TMP/job.gtt" switch | awk '$5 == 4294967295' | wc -l))" \
	test "$("$GT_ROOT/${BUILD:-build}/bench/gtt_cat" "$TMP/job.gtt" switch | awk '$5 == 4294967295' | wc -l)" -eq 0
check "no thread 4294967295 in the report" sh -c "! grep -q 4294967295 '$TMP/report'"

# the timeline groups rows by process, ranks in order, each process's threads under it
REN=$GT_BIN/gt-render
if [ -x "$REN" ]; then
	check_rc "timeline of the job renders" 0 "$REN" timeline "$TMP/job.gtt" -o "$TMP/job.svg"
	grep -oE 'pid [0-9]+  rank [0-3]/4 L[0-3] trainer( \(child\))?|>[a-z]+-[0-9]+ [0-9]+<' "$TMP/job.svg" |
		tr -d '<>' >"$TMP/rows"
	check "one group per rank, in rank order ($(grep -c '^pid' "$TMP/rows") groups, children after their rank)" \
		test "$(grep '^pid' "$TMP/rows" | grep -v child | grep -o 'rank [0-3]' | tr -d '\n')" = "rank 0rank 1rank 2rank 3"
	# every worker thread row sits under its own process's header: its tid is a thread of that pid
	bad=$(awk '/^pid/ { pid = $2; next } { print $2, pid }' "$TMP/rows" | while read -r tid pid; do
			grep -q "\"tid\": $tid," "$TMP"/rank*.json || continue
			f=$(grep -l "\"tid\": $tid," "$TMP"/rank*.json | head -1)
			grep -q "\"pid\": $pid," "$f" || echo "$tid"
		done)
	n=$(grep -vc '^pid' "$TMP/rows")
	check "each worker thread's row is under its own process ($n rows; misplaced: ${bad:-none})" test -z "$bad" -a "$n" -ge 12
else
	skip "gt-render not built"
fi

# the Chrome/Perfetto export names each process with its rank and role
check_rc "chrome export of the job" 0 "$ANA" export --format chrome "$TMP/job.gtt" -o "$TMP/job.json"
check "each rank's process is named 'rank R trainer: ...' ($(grep -o '"name":"rank [0-3] trainer: [^"]*"' "$TMP/job.json" | sort -u | wc -l) of 4)" \
	test "$(grep -o '"name":"rank [0-3] trainer: [^"]*"' "$TMP/job.json" | grep -o 'rank [0-3]' | sort -u | wc -l)" -eq 4
