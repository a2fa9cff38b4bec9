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
check "launch: thread 'early' sampled (${early:-none})" test "${early:-0}" -gt 5
check "launch: thread 'late', created 0.5 s in by another thread, sampled (${late:-none})" test "${late:-0}" -gt 3
check "launch: trace not truncated" test "$(val truncated "$TMP/t.sum")" = 0
check "launch: END record with the command's wait status (3 << 8)" grep -q '^end 1 768 ' "$TMP/t.sum"
check "launch: executable mappings with build-ids" test "$(val mappings_build_id "$TMP/t.sum")" -ge 2
check "launch: context switches recorded" test "$(val switches "$TMP/t.sum")" -gt 0
check "launch: per-thread CPU records" test "$(val thread_cpu "$TMP/t.sum")" -gt 0
check "launch: meta clock CLOCK_MONOTONIC" grep -q '^meta clock CLOCK_MONOTONIC$' "$TMP/t.sum"
check "launch: ring buffer size in a CONFIG record" grep -q '^config 1 ring_bytes [1-9]' "$TMP/t.sum"
check "launch: the binary is in the symbol archive" grep -q "^archive .*/threads_late [1-9]" "$TMP/t.sum"
pct=$(val received_pct "$TMP/t.sum")
check "launch: samples received vs on-CPU time x rate ($pct%)" awk -v p="$pct" 'BEGIN { exit !(p >= 80 && p <= 105) }'

# fork and exec: each process with its own samples and names
check_rc "launch: forking program exits 0" 0 "$REC" -q -o "$TMP/f.gtt" -- "$P/forker" 1
"$SUM" summary "$TMP/f.gtt" >"$TMP/f.sum"
check "launch: forked child followed" awk '$1 == "thread" && $4 == "forkchild" && $5 > 3 { ok = 1 } END { exit !ok }' "$TMP/f.sum"
check "launch: exec'd grandchild followed" awk '$1 == "thread" && $4 == "execd" && $5 > 3 { ok = 1 } END { exit !ok }' "$TMP/f.sum"
check "launch: PROCESS fork and exec records" sh -c "grep -q '^process [0-9]* [0-9]* 4 ' '$TMP/f.sum' && grep -q '^process [0-9]* [0-9]* 2 .*forker exec' '$TMP/f.sum'"
n_pid=$(awk '$1 == "mapping" && $6 ~ /forker$/ { print $2 }' "$TMP/f.sum" | sort -u | wc -l)
check "launch: every process has its own mapping of the binary ($n_pid)" test "$n_pid" -ge 3

# a known call tree: alpha 60%, beta 30%, gamma->delta 10% of samples (fp callchains)
check_rc "launch: calltree records" 0 "$REC" -q -o "$TMP/c.gtt" -- "$P/calltree" 2
"$SUM" summary "$TMP/c.gtt" "$P/calltree" alpha,beta,gamma_,delta,spin >"$TMP/c.sum"
n=$(val samples "$TMP/c.sum")
share() { awk -v f="$1" -v n="$n" '$1 == "func" && $2 == f { printf "%.1f", 100 * $3 / n }' "$TMP/c.sum"; }
a=$(share alpha) b=$(share beta) g=$(share gamma_) d=$(share delta)
check "calltree: enough samples ($n)" test "$n" -ge 60
check "calltree: alpha ~60% ($a)" awk -v x="$a" 'BEGIN { exit !(x >= 45 && x <= 75) }'
check "calltree: beta ~30% ($b)" awk -v x="$b" 'BEGIN { exit !(x >= 18 && x <= 42) }'
check "calltree: gamma ~10% ($g), delta under it ($d)" awk -v x="$g" -v y="$d" 'BEGIN { exit !(x >= 3 && x <= 20 && x == y) }'

# the analysis side reads it
if [ -x "$GT_BIN/gt-analyze" ]; then
	check "gt-analyze report reads the launch trace" "$GT_BIN/gt-analyze" report "$TMP/t.gtt"
else
	skip "gt-analyze not built"
fi
