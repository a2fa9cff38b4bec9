#!/usr/bin/env bash
# record_errors.sh — gt-record's bad inputs and bad endings: one line and a meaningful status;
# a recorder killed with SIGKILL or hitting a write error leaves a trace readable to its last chunk.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs
SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] || { skip "gt-record or test_rec_trace not built"; exit 0; }
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
one_line() { test "$(wc -l <"$TMP/err")" -eq 1; }

check_rc "errors: command not found -> 127" 127 "$REC" -q -o "$TMP/n.gtt" -- no_such_command_gt
check "errors: ... one line naming the command" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q no_such_command_gt '$TMP/err'"
check "errors: ... no trace file left" test ! -e "$TMP/n.gtt"
printf 'not a program\n' >"$TMP/noexec"; chmod 644 "$TMP/noexec"
check_rc "errors: not executable -> 126" 126 "$REC" -q -o "$TMP/n.gtt" -- "$TMP/noexec"
check_rc "errors: no command -> usage 64" 64 "$REC" -q
check "errors: ... one line" one_line
check_rc "errors: unknown option -> 64" 64 "$REC" --no-such-option -- true
check_rc "errors: bad -F -> 64" 64 "$REC" -F fast -- true
check_rc "errors: bad --call-graph -> 64" 64 "$REC" --call-graph lbr -- true
check_rc "errors: -p and a command -> 64" 64 "$REC" -p 1 -- true
check_rc "errors: unwritable output -> 2" 2 "$REC" -q -o /nonexistent-dir/x.gtt -- true
check "errors: ... one line naming the file" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q nonexistent-dir '$TMP/err'"
check_rc "errors: --version" 0 "$REC" --version
check "errors: --version prints gt-record VERSION" grep -q '^gt-record [0-9]' "$TMP/out"
check_rc "errors: --help" 0 "$REC" --help
check "errors: --help shows usage" grep -q 'call-graph' "$TMP/out"

# SIGKILL mid-run: the trace reads back up to its last whole chunk (flushed every second)
"$REC" -q -o "$TMP/k.gtt" -- "$P/calltree" 3 & rpid=$!
sleep 1.6; kill -KILL "$rpid"; wait "$rpid" 2>/dev/null
"$SUM" summary "$TMP/k.gtt" >"$TMP/k.sum"
check "errors: SIGKILLed recorder: trace readable with samples ($(val samples "$TMP/k.sum"))" test "$(val samples "$TMP/k.sum")" -gt 20
check "errors: ... and no END record" sh -c "! grep -q '^end ' '$TMP/k.sum'"
sleep 1.5  # the orphaned command ends by itself

# a write error mid-run (file size limit): one line, exit 2, readable trace
# (64 KiB: a 1.1 trace of this takes 15-20 KB a second in chunks flushed every second, so the
# limit falls after a few whole chunks; 24 KiB was one chunk's worth and failed on a loaded machine;
# it fell ~2 s in here. gt-record waits for the command, which runs on unrecorded: 8 s, not 20)
(ulimit -f 64; "$REC" -q -F 1000 --call-graph dwarf -o "$TMP/w.gtt" -- "$P/calltree" 8) 2>"$TMP/err"; rc=$?
check "errors: write error mid-run -> exit 2 ($rc)" test "$rc" -eq 2
check "errors: ... says so" grep -q 'File too large' "$TMP/err"
"$SUM" summary "$TMP/w.gtt" >"$TMP/w.sum"
check "errors: ... trace readable up to the last whole chunk ($(val samples "$TMP/w.sum") samples)" test "$(val samples "$TMP/w.sum")" -gt 20

# SIGINT: a clean end with an END record
"$REC" -q -o "$TMP/i.gtt" -- "$P/calltree" 5 & rpid=$!
sleep 1; kill -INT "$rpid"; wait "$rpid"; rc=$?
check "errors: SIGINT to gt-record alone ends it; the command gets SIGINT (exit $rc)" test "$rc" -eq 130
"$SUM" summary "$TMP/i.gtt" >"$TMP/i.sum"
check "errors: ... END record, reason signal" grep -q '^end 3 ' "$TMP/i.sum"

# -F at its limits: above 20 kHz DWARF stack copies stop the target (docs/RECORD.md, "The events")
check_rc "errors: -F 20001 with dwarf stack copies is a usage error" 64 "$REC" -q -F 20001 -o "$TMP/f.gtt" -- true
check "errors: ... saying why" grep -q 'dwarf.*stops the target' "$TMP/err"
check_rc "errors: -F 100000 with --call-graph fp is taken" 0 "$REC" -q -F 100000 --call-graph fp -o "$TMP/f.gtt" -- true
check_rc "errors: -F 100001 is a usage error" 64 "$REC" -q -F 100001 --call-graph fp -o "$TMP/f.gtt" -- true

# SIGHUP (the terminal closed): a clean end with an END record, the command gets SIGHUP; under
# nohup (SIGHUP ignored) it is ignored, by gt-record and the command alike
"$REC" -q -o "$TMP/h.gtt" -- "$P/calltree" 5 & rpid=$!
sleep 1; kill -HUP "$rpid"; wait "$rpid"; rc=$?
check "errors: SIGHUP ends the recording; the command gets SIGHUP (exit $rc)" test "$rc" -eq 129
"$SUM" summary "$TMP/h.gtt" >"$TMP/h.sum"
check "errors: ... END record, reason signal" grep -q '^end 3 ' "$TMP/h.sum"
(trap '' HUP; exec "$REC" -q -d 1.5 -o "$TMP/n.gtt" -- "$P/calltree" 5) & rpid=$!
sleep 0.5; kill -HUP "$rpid"; wait "$rpid"; rc=$?
check "errors: under nohup SIGHUP is ignored: -d ends the recording (exit $rc)" test "$rc" -eq 143
