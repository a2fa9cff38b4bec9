#!/usr/bin/env bash
# record_launch.sh — gt-record launch mode: every thread (also ones created later), children
# (fork and exec), exit status passed through, fp callchains that match a known call tree.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs
SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] || { skip "gt-record or test_rec_trace not built"; exit 0; }
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }

# threads created later, exit status 3 passed through
check_rc "launch: exit status of the command is passed through" 3 "$REC" -q -o "$TMP/t.gtt" -- "$P/threads_late" 1.2 3
"$SUM" summary "$TMP/t.gtt" >"$TMP/t.sum"
early=$(awk '$1 == "thread" && $4 == "early" { print $5 }' "$TMP/t.sum")
late=$(awk '$1 == "thread" && $4 == "late" { print $5 }' "$TMP/t.sum")
check "launch: thread 'early' sampled (${early:-none})" test "${early:-0}" -gt 0
check "launch: thread 'late', created 0.5 s in by another thread, sampled (${late:-none})" test "${late:-0}" -gt 0
check "launch: trace not truncated" test "$(val truncated "$TMP/t.sum")" = 0
check "launch: END record with the command's wait status (3 << 8)" grep -q '^end 1 768 ' "$TMP/t.sum"
check "launch: executable mappings with build-ids" test "$(val mappings_build_id "$TMP/t.sum")" -ge 2
check "launch: context switches recorded" test "$(val switches "$TMP/t.sum")" -gt 0
check "launch: per-thread CPU records" test "$(val thread_cpu "$TMP/t.sum")" -gt 0
check "launch: meta clock CLOCK_MONOTONIC" grep -q '^meta clock CLOCK_MONOTONIC$' "$TMP/t.sum"
check "launch: ring buffer size in a CONFIG record" grep -q '^config 1 ring_bytes [1-9]' "$TMP/t.sum"
check "launch: the binary is in the symbol archive" grep -q "^archive .*/threads_late [1-9]" "$TMP/t.sum"
pct=$(val received_pct "$TMP/t.sum")
# per task, every sample is exactly one period of the thread's CPU time; system-wide, the CPU's
# timer samples whichever task runs when it fires: right on average, a few % either way
scope=$(awk '$1 == "meta" && $2 == "scope" { print $3 }' "$TMP/t.sum")
hi=105; [ "$scope" = system ] && hi=125
check "launch: samples received vs on-CPU time x rate ($pct%, scope $scope: 70..$hi)" \
	awk -v p="$pct" -v hi="$hi" 'BEGIN { exit !(p >= 70 && p <= hi) }'

# fork and exec: each process with its own samples and names
check_rc "launch: forking program exits 0" 0 "$REC" -q -o "$TMP/f.gtt" -- "$P/forker" 1
"$SUM" summary "$TMP/f.gtt" >"$TMP/f.sum"
check "launch: forked child followed" awk '$1 == "thread" && $4 == "forkchild" && $5 > 0 { ok = 1 } END { exit !ok }' "$TMP/f.sum"
check "launch: exec'd grandchild followed" awk '$1 == "thread" && $4 == "execd" && $5 > 0 { ok = 1 } END { exit !ok }' "$TMP/f.sum"
check "launch: PROCESS fork and exec records" sh -c "grep -q '^process [0-9]* [0-9]* 4 ' '$TMP/f.sum' && grep -q '^process [0-9]* [0-9]* 2 .*forker exec' '$TMP/f.sum'"
n_pid=$(awk '$1 == "mapping" && $6 ~ /forker$/ { print $2 }' "$TMP/f.sum" | sort -u | wc -l)
check "launch: every process has its own mapping of the binary ($n_pid)" test "$n_pid" -ge 3

# a known call tree: alpha 60%, beta 30%, gamma->delta 10% of samples (fp callchains)
check_rc "launch: calltree records (fp callchains)" 0 "$REC" -q --call-graph fp -o "$TMP/c.gtt" -- "$P/calltree" 2
"$SUM" summary "$TMP/c.gtt" "$P/calltree" alpha,beta,gamma_,delta,spin >"$TMP/c.sum"
n=$(val samples "$TMP/c.sum")
share() { awk -v f="$1" -v n="$n" '$1 == "func" && $2 == f { printf "%.1f", 100 * $3 / n }' "$TMP/c.sum"; }
a=$(share alpha) b=$(share beta) g=$(share gamma_) d=$(share delta)
# tolerance: 4 binomial standard deviations for the sample count this run got (busy machines
# give the program less CPU), plus 3 points
near() { awk -v x="$1" -v p="$2" -v n="$n" 'BEGIN { t = 400 * sqrt(p * (1 - p) / n) + 3; d = x - 100 * p; exit !(d <= t && -d <= t) }'; }
check "calltree: enough samples ($n)" test "$n" -ge 30
check "calltree: alpha ~60% ($a)" near "$a" 0.6
check "calltree: beta ~30% ($b)" near "$b" 0.3
check "calltree: gamma ~10% ($g), delta under it ($d)" sh -c "[ '$g' = '$d' ] && awk -v x='$g' 'BEGIN { exit !(x > 0) }'"
check "calltree: gamma ~10%" near "$g" 0.1

# the analysis side reads it
if [ -x "$GT_BIN/gt-analyze" ]; then
	check "gt-analyze report reads the launch trace" "$GT_BIN/gt-analyze" report "$TMP/t.gtt"
else
	skip "gt-analyze not built"
fi

# The recorder leaves the CPU to the command: its threads are SCHED_BATCH (the Python reader's
# loops real-time when permitted, else normal), the command keeps its own policy;
# GT_RECORD_SCHED=normal keeps the recorder as started. Field 41 of /proc/TID/stat is the
# policy: 0 normal, 1 FIFO, 3 batch.
pol='awk "{ sub(/.*\\) /, \"\"); print \$39 }"'
show="echo self \$($pol /proc/self/stat); echo main \$($pol /proc/\$PPID/stat); for t in /proc/\$PPID/task/*; do echo rec \$($pol \$t/stat); done"
"$REC" -q -o "$TMP/s.gtt" -- sh -c "$show" >"$TMP/sched.txt" 2>&1
check "launch: the command keeps normal scheduling ($(awk '$1 == "self" { print $2 }' "$TMP/sched.txt"))" grep -qx 'self 0' "$TMP/sched.txt"
check "launch: the recorder's main thread is SCHED_BATCH, its others batch, FIFO or normal ($(awk '$1 != "self" { printf "%s ", $2 }' "$TMP/sched.txt"))" \
	awk '$1 == "main" && $2 == 3 { m = 1 } $1 == "rec" { n++; if ($2 != 3 && $2 != 1 && $2 != 0) bad++ } END { exit !(m && n >= 1 && !bad) }' "$TMP/sched.txt"
GT_RECORD_SCHED=normal "$REC" -q -o "$TMP/s2.gtt" -- sh -c "$show" >"$TMP/sched2.txt" 2>&1
check "launch: GT_RECORD_SCHED=normal: no recorder thread in SCHED_BATCH" \
	awk '$1 == "rec" { n++; if ($2 == 3) b++ } END { exit !(n >= 1 && !b) }' "$TMP/sched2.txt"
