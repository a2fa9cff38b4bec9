#!/usr/bin/env bash
# record_output.sh — gt-record's output file is safe: created 0600, never written through a
# symbolic link (one planted in a shared directory), an existing file kept as FILE.old, left
# untouched by a launch that fails, locked against a second recorder, and in place (readable)
# as soon as the recording has begun; --no-stack-copy keeps stack bytes out of the trace.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] && [ -x "$P/stack_secret" ] || { skip "gt-record, test_rec_trace or stack_secret not built"; exit 0; }
if ! "$REC" -q -o "$TMP/probe.gtt" -- true 2>"$TMP/probe.err"; then
	skip "gt-record cannot record here: $(head -1 "$TMP/probe.err")"; exit 0
fi
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
one_line() { test "$(wc -l <"$TMP/err")" -eq 1; }
mode() { stat -c %a "$1"; }
leftovers() { ls -A "$1" | grep -c '\.tmp-' ; }
D=$TMP/o; mkdir -p "$D"

# a new trace is private, whatever the umask
(umask 022; "$REC" -q -o "$D/new.gtt" -- true); rc=$?
check "new trace: exit 0 ($rc), mode 600 under umask 022 ($(mode "$D/new.gtt"))" test "$rc" -eq 0 -a "$(mode "$D/new.gtt")" = 600
"$SUM" summary "$D/new.gtt" >"$TMP/new.sum"
check "new trace: complete (END record)" grep -q '^end ' "$TMP/new.sum"

# an existing file is kept as FILE.old, untouched; the new trace replaces it; one more line says so
printf 'precious data\n' >"$D/keep.gtt"; chmod 644 "$D/keep.gtt"; cp "$D/keep.gtt" "$TMP/keep.orig"
"$REC" -o "$D/keep.gtt" -- true 2>"$TMP/err"; rc=$?
check "existing file: exit 0 ($rc)" test "$rc" -eq 0
check "existing file: kept byte for byte as FILE.old" cmp -s "$TMP/keep.orig" "$D/keep.gtt.old"
"$SUM" summary "$D/keep.gtt" >"$TMP/keep.sum"
check "existing file: FILE is now the new trace, mode 600 ($(mode "$D/keep.gtt"))" \
	sh -c "grep -q '^end ' '$TMP/keep.sum' && test \$(stat -c %a '$D/keep.gtt') = 600"
check "existing file: the summary says where the old one went" grep -q 'kept as .*keep.gtt.old' "$TMP/err"
# a second round replaces FILE.old with the first trace, as perf does with perf.data.old
cp "$D/keep.gtt" "$TMP/keep.first"
"$REC" -q -o "$D/keep.gtt" -- true
check "second round: FILE.old is the previous trace" cmp -s "$TMP/keep.first" "$D/keep.gtt.old"
check "no temporary file left beside the trace" test "$(leftovers "$D")" -eq 0

# a launch that fails never touches an existing file (nor FILE.old), and leaves nothing
printf 'keep me\n' >"$D/fail.gtt"; printf 'old one\n' >"$D/fail.gtt.old"
cp "$D/fail.gtt" "$TMP/fail.orig"; cp "$D/fail.gtt.old" "$TMP/failold.orig"
check_rc "failed launch over an existing file: exit 127" 127 "$REC" -q -o "$D/fail.gtt" -- no_such_command_gt
check "failed launch: the existing file is intact" cmp -s "$TMP/fail.orig" "$D/fail.gtt"
check "failed launch: FILE.old intact" cmp -s "$TMP/failold.orig" "$D/fail.gtt.old"
check "failed launch: no temporary file left" test "$(leftovers "$D")" -eq 0
check_rc "failed attach (no such PID) over an existing file: exit 2" 2 "$REC" -q -p 99999999 -o "$D/fail.gtt"
check "failed attach: the existing file is intact" cmp -s "$TMP/fail.orig" "$D/fail.gtt"

# a link planted in a shared (sticky, world-writable) directory, pointing at a private file
S=$TMP/shared; mkdir -p "$S"; chmod 1777 "$S"; chmod 711 "$TMP" # others may reach the shared directory only
printf 'root secret\n' >"$TMP/victim"; chmod 600 "$TMP/victim"; cp "$TMP/victim" "$TMP/victim.orig"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$TMP/victim" "$S/t.gtt"
	who="another"
else
	ln -s "$TMP/victim" "$S/t.gtt"
	who="a"
fi
check_rc "symlink planted by $who user: refused, exit 2" 2 "$REC" -q -o "$S/t.gtt" -- true
check "symlink: one line saying so" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 'symbolic link' '$TMP/err'"
check "symlink: the file it points to is unchanged (content, mode $(mode "$TMP/victim"))" \
	sh -c "cmp -s '$TMP/victim.orig' '$TMP/victim' && test \$(stat -c %a '$TMP/victim') = 600"
check "symlink: the link itself is left as it was" test -L "$S/t.gtt" -a "$(readlink "$S/t.gtt")" = "$TMP/victim"
ln -s "$TMP/nowhere" "$S/dangling.gtt"
check_rc "dangling symlink: refused, exit 2" 2 "$REC" -q -o "$S/dangling.gtt" -- true
check "dangling symlink: nothing created where it points" test ! -e "$TMP/nowhere"
# a link at FILE.old is replaced as a name; what it points to stays untouched
printf 'x\n' >"$D/lo.gtt"; ln -s "$TMP/victim" "$D/lo.gtt.old"
"$REC" -q -o "$D/lo.gtt" -- true
check "a link at FILE.old: replaced by the old file, its target untouched" \
	sh -c "test ! -L '$D/lo.gtt.old' && grep -qx x '$D/lo.gtt.old' && cmp -s '$TMP/victim.orig' '$TMP/victim'"
mkdir "$D/dir.gtt"
check_rc "a directory as -o: exit 2" 2 "$REC" -q -o "$D/dir.gtt" -- true
check "a directory: one line saying so" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 'is a directory' '$TMP/err'"

# two recorders on one file: the second refuses, the first finishes a whole trace
"$REC" -q -o "$D/two.gtt" -- "$P/calltree" 1.5 2>"$TMP/first.err" & first=$!
for _ in $(seq 50); do [ -s "$D/two.gtt" ] && break; sleep 0.05; done
sleep 0.2
check_rc "second recorder on the same file: exit 2" 2 "$REC" -q -o "$D/two.gtt" -- true
check "second recorder: one line naming the other gt-record" \
	sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 'being written by another gt-record' '$TMP/err'"
wait "$first"; rc=$?
"$SUM" summary "$D/two.gtt" >"$TMP/two.sum"
check "first recorder: exit 0 ($rc), its trace whole (END, not truncated, $(val samples "$TMP/two.sum") samples)" \
	sh -c "test $rc -eq 0 && grep -q '^end ' '$TMP/two.sum' && grep -q '^truncated 0' '$TMP/two.sum' && test $(val samples "$TMP/two.sum") -gt 20"
check "second recorder left no FILE.old and no temporary file" test ! -e "$D/two.gtt.old" -a "$(leftovers "$D")" -eq 0

# SIGKILL over an existing file: the trace is in place as soon as recording began
printf 'before\n' >"$D/kill.gtt"
"$REC" -q -o "$D/kill.gtt" -- "$P/calltree" 3 & rpid=$!
sleep 1.6; kill -KILL "$rpid"; wait "$rpid" 2>/dev/null
"$SUM" summary "$D/kill.gtt" >"$TMP/kill.sum"
check "SIGKILLed recorder over an existing file: trace at FILE with samples ($(val samples "$TMP/kill.sum"))" \
	test "$(val samples "$TMP/kill.sum")" -gt 20
check "... and the earlier file is FILE.old" grep -qx before "$D/kill.gtt.old"
sleep 1.5 # the orphaned command ends by itself

# --no-stack-copy: what a thread keeps on its stack does not reach the trace
W=gtsecret$$
"$REC" -q -o "$TMP/dw.gtt" -- "$P/stack_secret" 1 "$W"
"$SUM" find "$TMP/dw.gtt" "$W-on-the-stack" >"$TMP/dw.find"
check "dwarf mode copies the stack: the secret is in $(val stack "$TMP/dw.find") samples' stack copies" \
	test "$(val stack "$TMP/dw.find")" -gt 0
check_rc "--no-stack-copy: exit 0" 0 "$REC" -q --no-stack-copy -o "$TMP/ns.gtt" -- "$P/stack_secret" 1 "$W"
"$SUM" find "$TMP/ns.gtt" "$W-on-the-stack" >"$TMP/ns.find"
"$SUM" summary "$TMP/ns.gtt" >"$TMP/ns.sum"
check "--no-stack-copy: no stack bytes at all ($(val samples_stack "$TMP/ns.sum") of $(val samples "$TMP/ns.sum") samples carry a copy)" \
	test "$(val samples_stack "$TMP/ns.sum")" -eq 0 -a "$(val samples_regs "$TMP/ns.sum")" -eq 0 -a "$(val samples "$TMP/ns.sum")" -gt 20
check "--no-stack-copy: the secret is nowhere in the file" sh -c "! grep -aq '$W-on-the-stack' '$TMP/ns.gtt' && test $(val stack "$TMP/ns.find") -eq 0"
check "--no-stack-copy: meta says fp, 0 stack bytes" sh -c "grep -q '^meta call_graph fp' '$TMP/ns.sum' && grep -q '^meta stack_bytes 0' '$TMP/ns.sum'"
check_rc "--no-stack-copy with --call-graph dwarf: usage error 64" 64 "$REC" --no-stack-copy --call-graph dwarf -- true
