# faults.sh — gt-record when things go wrong around it, each fault a check: the recorder killed
# with SIGKILL, the target crashing with SIGSEGV, the disk filling up (a 256 KiB tmpfs, and
# RLIMIT_FSIZE), Ctrl-C to the whole process group, the target exiting while its memory is being
# read, and a second gt-record on the same PID. What must hold: no crash of the recorder, a
# clear first line where it gives up (one more line may say what happens next), and a trace
# that reads back to its last whole chunk.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze FACTS=$GT_TESTS/test_badgen F=$GT_TESTS/progs/faulty
for t in "$REC" "$FACTS" "$F"; do
	[ -x "$t" ] || { skip "faults: $(basename "$t") not built"; exit 0; }
done
if ! "$REC" -q -o "$TMP/probe.gtt" -- true 2>"$TMP/probe.err"; then
	skip "faults: gt-record cannot record here: $(head -1 "$TMP/probe.err")"; exit 0
fi
fact() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$2"; }
facts() { "$FACTS" --facts "$1" >"$2" 2>&1; }
no_signal() { [ "$1" -lt 128 ] || [ "$1" -eq 130 ] || [ "$1" -eq 139 ]; }
# report_ok TRACE: gt-analyze reads it (exit 0) without a signal; when a trace lacks its end,
# a warning is fine, an error is not
report_ok() {
	[ -x "$ANA" ] || return 0
	"$ANA" report "$1" >"$TMP/report.out" 2>"$TMP/report.err"; local rc=$?
	[ "$rc" -eq 0 ] || { echo "gt-analyze report exit $rc: $(head -1 "$TMP/report.err")"; return 1; }
}

# 1. SIGKILL to the recorder mid-run: everything flushed before the kill reads back
"$REC" -q -F 199 -o "$TMP/kill.gtt" -- "$F" spin 4 1 & rpid=$!
sleep 2.2; tpid=$(pgrep -P "$rpid" | head -1); kill -KILL "$rpid"; wait "$rpid" 2>/dev/null
facts "$TMP/kill.gtt" "$TMP/kill.facts"
check "SIGKILLed recorder: trace opens, no corrupt chunk ($(fact samples "$TMP/kill.facts") samples)" \
	test "$(fact corrupt "$TMP/kill.facts")" = 0 -a "$(fact samples "$TMP/kill.facts")" -gt 0
check "... no END record (it never finished)" test "$(fact ends "$TMP/kill.facts")" = 0
check "... gt-analyze reads it" report_ok "$TMP/kill.gtt"
[ -n "$tpid" ] && kill -KILL "$tpid" 2>/dev/null # the target, orphaned by the kill

# 2. the target dies of SIGSEGV: the trace is complete and says how it ended
"$REC" -q -F 199 -o "$TMP/segv.gtt" -- "$F" segv 1 2>"$TMP/segv.err"; rc=$?
check "target SIGSEGV: gt-record exits 128+11 ($rc)" test "$rc" -eq 139
facts "$TMP/segv.gtt" "$TMP/segv.facts"
end=$(fact end "$TMP/segv.facts")
# perf's exit record knows no status (-1); gt-record adds one with the wait status of the
# command it launched
exit_st=$(awk '$1 == "process-exit" && $3 != -1 { s = $3 } END { print s }' "$TMP/segv.facts")
check "... END record, reason target exit, wait status of SIGSEGV ($end)" \
	sh -c "set -- $end; test \"\$1\" = 1 && test \$((\$2 & 127)) -eq 11"
check "... the process exit record holds the signal (status ${exit_st:-none})" \
	test -n "$exit_st" -a $(( ${exit_st:-0} & 127 )) -eq 11
check "... samples up to the crash, trace not truncated" \
	test "$(fact samples "$TMP/segv.facts")" -gt 0 -a "$(fact truncated "$TMP/segv.facts")" = 0
check "... gt-analyze reads it" report_ok "$TMP/segv.gtt"

# 3a. the disk fills (a small tmpfs): one clear line, exit 2, a valid partial trace
mnt=$TMP/small
mkdir -p "$mnt"
# (32 KiB: format 1.1 traces are compact; a 4 s recording at 999 Hz takes ~200 KiB with its archive)
if mount -t tmpfs -o size=32k tmpfs "$mnt" 2>/dev/null; then
	"$REC" -q -F 999 -o "$mnt/full.gtt" -- "$F" spin 4 2 2>"$TMP/full.err"; rc=$?
	check "disk full: gt-record exits 2 ($rc)" test "$rc" -eq 2
	check "... a first line that says so, at most one more ($(head -1 "$TMP/full.err"))" \
		sh -c "test \$(wc -l <'$TMP/full.err') -le 2 && head -1 '$TMP/full.err' | grep -qi 'no space'"
	cp "$mnt/full.gtt" "$TMP/full.gtt"
	umount "$mnt"
	facts "$TMP/full.gtt" "$TMP/full.facts"
	check "... the partial trace reads to its last whole chunk ($(fact samples "$TMP/full.facts") samples, no corrupt chunk)" \
		test "$(fact corrupt "$TMP/full.facts")" = 0 -a "$(fact samples "$TMP/full.facts")" -gt 0
	check "... gt-analyze reads it" report_ok "$TMP/full.gtt"
else
	skip "disk full: cannot mount a tmpfs here (not root?)"
fi

# 3b. the file size limit (RLIMIT_FSIZE, SIGXFSZ ignored as a shell with ulimit -f leaves it)
# (48 KiB: a 1.1 trace of this takes ~40 KB a second; the limit falls after the first flush)
(ulimit -f 48; trap '' XFSZ; exec "$REC" -q -F 999 -o "$TMP/fsize.gtt" -- "$F" spin 4 2) 2>"$TMP/fsize.err"; rc=$?
check "file size limit: gt-record exits 2 ($rc)" test "$rc" -eq 2
check "... a first line that says so, at most one more ($(head -1 "$TMP/fsize.err"))" \
	sh -c "test \$(wc -l <'$TMP/fsize.err') -le 2 && head -1 '$TMP/fsize.err' | grep -qi 'too large'"
facts "$TMP/fsize.gtt" "$TMP/fsize.facts"
check "... partial trace valid ($(fact samples "$TMP/fsize.facts") samples, no corrupt chunk)" \
	test "$(fact corrupt "$TMP/fsize.facts")" = 0 -a "$(fact samples "$TMP/fsize.facts")" -gt 0

# 4. Ctrl-C: the terminal sends SIGINT to the whole foreground process group
setsid "$REC" -q -F 199 -o "$TMP/int.gtt" -- "$F" spin 6 1 2>"$TMP/int.err" & spid=$!
sleep 1.5; kill -INT -- "-$spid"; wait "$spid"; rc=$?
check "Ctrl-C: no crash (exit $rc)" no_signal "$rc"
facts "$TMP/int.gtt" "$TMP/int.facts"
check "... clean finish: one END record, not truncated ($(fact end "$TMP/int.facts"))" \
	test "$(fact ends "$TMP/int.facts")" = 1 -a "$(fact truncated "$TMP/int.facts")" = 0
check "... samples before it ($(fact samples "$TMP/int.facts"))" test "$(fact samples "$TMP/int.facts")" -gt 0

# 5. the target exits while its memory is being read (Python stacks read at 1 kHz; the
# process ends with os._exit from a thread while the others are deep in frames)
PY=$(ls /root/.pyenv/versions/3.1[0-3]*/bin/python3.1? 2>/dev/null | head -1)
[ -n "$PY" ] || PY=$(command -v python3.11 || command -v python3 || true)
if [ -n "$PY" ]; then
	cat >"$TMP/quit.py" <<'PYEOF'
import os, threading, time
def deep(n):
    if n == 0:
        t = time.time()
        while True:
            t += 1
    return deep(n - 1)
for _ in range(3):
    threading.Thread(target=deep, args=(200,), daemon=True).start()
time.sleep(0.7)
os._exit(7)
PYEOF
	"$REC" -q -F 999 -o "$TMP/quit.gtt" -- "$PY" "$TMP/quit.py" 2>"$TMP/quit.err"; rc=$?
	check "target exits mid-read: gt-record passes its status through (exit $rc)" test "$rc" -eq 7
	facts "$TMP/quit.gtt" "$TMP/quit.facts"
	check "... trace complete: END record, no corrupt chunk (read errors counted: $(fact read-errors "$TMP/quit.facts"))" \
		test "$(fact ends "$TMP/quit.facts")" = 1 -a "$(fact corrupt "$TMP/quit.facts")" = 0
	check "... gt-analyze reads it" report_ok "$TMP/quit.gtt"
else
	skip "target exits mid-read: no python3"
fi
# the same with a native target exiting from a thread
"$REC" -q -F 999 -o "$TMP/nexit.gtt" -- "$F" exit 1 5 2>"$TMP/nexit.err"; rc=$?
check "native target _exit(5) from a thread: status passed through ($rc)" test "$rc" -eq 5
facts "$TMP/nexit.gtt" "$TMP/nexit.facts"
check "... END record with the exit status ($(fact end "$TMP/nexit.facts"))" \
	sh -c "set -- $(fact end "$TMP/nexit.facts"); test \"\$1\" = 1 && test \$((\$2 >> 8)) -eq 5"

# 6. a second gt-record on the same PID: both work, or the second says why in one line
"$F" spin 5 1 & tpid=$!
sleep 0.3
"$REC" -q -p "$tpid" -d 2 -o "$TMP/first.gtt" 2>"$TMP/first.err" & r1=$!
sleep 0.5
"$REC" -q -p "$tpid" -d 1 -o "$TMP/second.gtt" 2>"$TMP/second.err"; rc2=$?
wait "$r1"; rc1=$?
kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null
check "second recorder on one PID: the first is unaffected (exit $rc1)" test "$rc1" -eq 0
facts "$TMP/first.gtt" "$TMP/first.facts"
check "... the first trace is complete ($(fact samples "$TMP/first.facts") samples, $(fact ends "$TMP/first.facts") END)" \
	test "$(fact samples "$TMP/first.facts")" -gt 0 -a "$(fact ends "$TMP/first.facts")" = 1
if [ "$rc2" -eq 0 ]; then
	facts "$TMP/second.gtt" "$TMP/second.facts"
	check "... the second works too ($(fact samples "$TMP/second.facts") samples)" \
		test "$(fact samples "$TMP/second.facts")" -gt 0 -a "$(fact ends "$TMP/second.facts")" = 1
else
	check "... the second refuses in one line, exit 2 (exit $rc2: $(head -1 "$TMP/second.err"))" \
		test "$rc2" -eq 2 -a "$(wc -l <"$TMP/second.err")" -eq 1
fi
