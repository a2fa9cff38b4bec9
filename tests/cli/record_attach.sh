#!/usr/bin/env bash
# record_attach.sh — gt-record -p PID: every existing thread and threads born later, without
# stopping the target; the target's exit ends it (exit 1, trace readable); bad PIDs fail cleanly.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs
SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] || { skip "gt-record or test_rec_trace not built"; exit 0; }
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }

"$P/threads_late" 2.5 & pid=$!
sleep 0.2
check_rc "attach: -d ends the recording, exit 0" 0 "$REC" -q -p "$pid" -d 1.2 -o "$TMP/a.gtt"
check "attach: the target keeps running" kill -0 "$pid"
wait "$pid"; check "attach: the target finished normally" test $? -eq 0
"$SUM" summary "$TMP/a.gtt" >"$TMP/a.sum"
early=$(awk '$1 == "thread" && $4 == "early" { print $5 }' "$TMP/a.sum")
late=$(awk '$1 == "thread" && $4 == "late" { print $5 }' "$TMP/a.sum")
check "attach: existing thread sampled (${early:-none})" test "${early:-0}" -gt 0
check "attach: thread born after the attach sampled (${late:-none})" test "${late:-0}" -gt 0
check "attach: PROCESS start synthesized from /proc" grep -q "^process $pid [0-9]* 1 .*threads_late" "$TMP/a.sum"
check "attach: mappings from /proc/PID/maps with build-ids" test "$(val mappings_build_id "$TMP/a.sum")" -ge 2
check "attach: END reason duration" grep -q '^end 2 ' "$TMP/a.sum"
check "attach: meta mode attach" grep -q '^meta mode attach$' "$TMP/a.sum"

# the target exits during the recording: one line, exit 1, the trace is complete
"$P/threads_late" 0.8 & pid=$!
sleep 0.2
check_rc "attach: target exits during the recording -> exit 1" 1 "$REC" -q -p "$pid" -o "$TMP/e.gtt"
check "attach: ... with one line saying so" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 'exited' '$TMP/err'"
wait "$pid" 2>/dev/null
"$SUM" summary "$TMP/e.gtt" >"$TMP/e.sum"
check "attach: that trace is readable, not truncated, END reason target exit" \
	sh -c "grep -q '^truncated 0' '$TMP/e.sum' && grep -q '^end 1 ' '$TMP/e.sum'"

# bad PIDs
check_rc "attach: a PID that does not exist -> exit 2" 2 "$REC" -q -p 99999999 -o "$TMP/x.gtt"
check "attach: ... one line naming the PID" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 99999999 '$TMP/err'"
check "attach: ... and no trace file left" test ! -e "$TMP/x.gtt"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	sleep 5 & spid=$!
	check_rc "attach: another user's process -> exit 2" 2 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$REC" -q -p "$spid" -o /tmp/gt-attach-$$.gtt
	check "attach: ... one line saying permission denied" grep -q 'permission denied' "$TMP/err"
	kill "$spid"; rm -f /tmp/gt-attach-$$.gtt
else
	skip "another user's process: needs root and setpriv"
fi
