# analyze_inputs.sh — input that every tool must read the same way or refuse the same way, with one
# clear line: a trace whose END record disagrees with its chunks (warned, exit 1); folded and perf
# script text with CR LF or CR line ends (read like LF, not merged into one stack), NUL bytes and
# counts past 2^64 (refused by every tool alike); FlameGraph's two-count difference format (drawn
# as a differential flame graph, refused by diff); /dev/zero, traces and text on stdin and pipes
# (header checked first, streamed: memory stays bounded).
. "$(dirname "$0")/lib.sh"
A="$GT_BIN/gt-analyze" R="$GT_BIN/gt-render"
G=$GT_ROOT/testdata/golden/v1.0/pipeline_cpu.gtt
asan=0
if ldd "$A" 2>/dev/null | grep -q libasan; then asan=1; fi
# bounded(CMD...): runs CMD with at most 400 MiB (address space, or RSS under ASan) and 60 s
bounded() {
	if [ "$asan" = 1 ]; then
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=400:allocator_may_return_null=1" timeout -s KILL 60 "$@"
	else
		(ulimit -v $((400 * 1024)); exec timeout -s KILL 60 "$@")
	fi
}

# ---- END record ----
"$GT_TESTS/test_bounds" --dup-samples "$G" "$TMP/dup.gtt" || fail "cannot write the duplicated trace"
check_rc "report of a trace with every sample chunk twice: exit 1 (partial)" 1 "$A" report "$TMP/dup.gtt"
check "... with a warning naming both counts" grep -q "recorder wrote 77 samples (END record) but 154" "$TMP/err"
check_rc "fold: exit 1" 1 "$A" fold "$TMP/dup.gtt"
check_rc "export: exit 1" 1 "$A" export "$TMP/dup.gtt" --format speedscope -o "$TMP/d.json"
check_rc "gt-render flame: exit 1" 1 "$R" flame "$TMP/dup.gtt" -o "$TMP/d.svg"
check_rc "gt-render timeline: exit 1" 1 "$R" timeline "$TMP/dup.gtt" -o "$TMP/t.svg"
check_rc "diff against the original: exit 1 with the warning" 1 "$A" diff "$G" "$TMP/dup.gtt"
check "... the warning is shown" grep -q "END record" "$TMP/err"
check_rc "the original trace: exit 0, no warning" 0 "$A" report "$G"
check "... nothing on stderr" test ! -s "$TMP/err"

# ---- line ends ----
printf 'main;a;b 3\nmain;a;c 2\nmain;d 5\n' >"$TMP/lf.folded"
sed 's/$/\r/' "$TMP/lf.folded" >"$TMP/crlf.folded"
tr '\n' '\r' <"$TMP/lf.folded" >"$TMP/cr.folded"
"$R" flame "$TMP/lf.folded" -o "$TMP/lf.svg"
for k in crlf cr; do
	check_rc "gt-render flame of $k folded text" 0 "$R" flame "$TMP/$k.folded" -o "$TMP/$k.svg"
	check "... draws the same as LF text" cmp -s "$TMP/lf.svg" "$TMP/$k.svg"
	check_rc "diff LF vs $k folded" 0 "$A" diff "$TMP/lf.folded" "$TMP/$k.folded" --json
	check "... finds 10 samples on each side and no change" bash -c "grep -q '\"new\":{[^}]*\"samples\":10}' '$TMP/out' && ! grep -q '_change_pts\":[1-9-]' '$TMP/out'"
done
printf 'prog 1/1 [000] 1.0: 1000 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\t 401100 main+0x2 (/bin/prog)\n\nprog 1/1 [000] 1.1: 1000 cpu-clock:uhp: \n\t 401200 b+0x1 (/bin/prog)\n\t 401100 main+0x2 (/bin/prog)\n\n' >"$TMP/lf.perf"
sed 's/$/\r/' "$TMP/lf.perf" >"$TMP/crlf.perf"
check_rc "import-perf of CR LF perf script" 0 "$A" import-perf "$TMP/crlf.perf"
check "... two stacks, not one merged" test "$(cat "$TMP/out")" = "$(printf 'prog;main;a 1000\nprog;main;b 1000')"

# ---- NUL bytes: refused by every tool, naming the line ----
printf 'main;a 1\nmain;b\0x 2\n' >"$TMP/nul.folded"
printf 'prog 1/1 [000] 1.0: 1000 cpu-clock:uhp: \n\t 401000 a\0b (/bin/prog)\n\n' >"$TMP/nul.perf"
check_rc "gt-render refuses folded text with a NUL byte" 2 "$R" flame "$TMP/nul.folded" -o "$TMP/n.svg"
check "... naming line 2" grep -q "NUL byte at line 2" "$TMP/err"
check_rc "diff refuses it too (it used to cut the frame silently)" 2 "$A" diff "$TMP/nul.folded" "$TMP/lf.folded"
check "... naming line 2" grep -q "NUL byte at line 2" "$TMP/err"
check_rc "import-perf refuses perf script with a NUL byte (it used to pass it through)" 2 "$A" import-perf "$TMP/nul.perf"
check "... naming line 2" grep -q "NUL byte at line 2" "$TMP/err"

# ---- counts past 2^64 ----
printf 'a 18446744073709551615\nb 1\n' >"$TMP/sum.folded"
check_rc "gt-render refuses counts summing past 2^64 (it drew 'all (0 samples, -nan%%)')" 2 "$R" flame "$TMP/sum.folded" -o "$TMP/s.svg"
check "... saying so" grep -q "past 2^64 - 1" "$TMP/err"
check_rc "diff refuses them too" 2 "$A" diff "$TMP/sum.folded" "$TMP/lf.folded"
printf 'prog 1/1 [000] 1.0: 18446744073709551615 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\nprog 1/1 [000] 1.1: 1 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\n' >"$TMP/sum.perf"
check_rc "import-perf refuses periods summing past 2^64 (they wrapped)" 2 "$A" import-perf "$TMP/sum.perf"
printf 'prog 1/1 [000] 1.0: 18446744073709551616 cpu-clock:uhp: \n\t 401000 a+0x1 (/bin/prog)\n\nprog 1/1 [000] 1.1: 7 cpu-clock:uhp: \n\t 401000 b+0x1 (/bin/prog)\n\n' >"$TMP/big.perf"
check_rc "import-perf: a period of 2^64 is an unrecognized line (exit 1; it counted as 1)" 1 "$A" import-perf "$TMP/big.perf"
check "... its sample is left out" test "$(cat "$TMP/out")" = "prog;b 7"

# ---- FlameGraph's difference format ----
printf 'main;a 10 20\nmain;b 30 10\nmain;c 0 5\n' >"$TMP/two.folded"
check_rc "gt-render draws the two-count difference format" 0 "$R" flame "$TMP/two.folded" -o "$TMP/two.svg"
check "... as a differential flame graph (widths from the second counts)" grep -q '<title>all (35 samples, 100.00%; base 100.00%, +0.00 pts)</title>' "$TMP/two.svg"
check "... colours from the change against the first (b fell from 75% to 28.57%)" grep -q '<title>b (10 samples, 28.57%; base 75.00%, -46.43 pts)</title>' "$TMP/two.svg"
check_rc "--diff on a difference is a usage error" 64 "$R" flame "$TMP/two.folded" --diff "$TMP/lf.folded" -o "$TMP/x.svg"
check_rc "diff refuses the difference format clearly" 2 "$A" diff "$TMP/two.folded" "$TMP/lf.folded"
check "... saying what it is" grep -q "difference format" "$TMP/err"

# ---- /dev/zero, stdin and pipes: header first, streamed, bounded ----
for c in "$A report /dev/zero" "$A fold /dev/zero" "$R flame /dev/zero" "$R timeline /dev/zero" "$A diff /dev/zero $TMP/lf.folded" "$A import-perf /dev/zero"; do
	set -- $c
	bounded "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	check "$(basename "$1") ${*:2}: refused at once, not read until memory runs out (exit $rc: $(head -1 "$TMP/err" | head -c 120))" \
		bash -c "[ $rc -eq 2 ] && [ \$(grep -c '' '$TMP/err') -eq 1 ] && ! grep -q 'out of memory' '$TMP/err'"
done
bounded "$A" report - <"$G" >"$TMP/out" 2>"$TMP/err"
check "a trace on stdin: report works ($(head -1 "$TMP/out"))" grep -q "^gt-analyze report: stdin" "$TMP/out"
bounded "$R" flame - -o "$TMP/stdin.svg" <"$G" 2>"$TMP/err"
check "a trace on stdin: gt-render flame works" grep -q "<svg" "$TMP/stdin.svg"
bounded "$A" diff - "$G" <"$G" >"$TMP/out" 2>"$TMP/err"
check "a trace on stdin: diff against itself works ($(head -c 100 "$TMP/err"))" grep -q "0 changed significantly" "$TMP/out"
bounded bash -c "cat '$TMP/lf.folded' | '$A' diff - '$TMP/lf.folded'" >"$TMP/out" 2>"$TMP/err"
check "folded text on a pipe: diff reads it (it refused pipes)" grep -q "0 changed significantly" "$TMP/out"
# 100 MB of folded lines through a pipe, under a 400 MiB bound: memory follows distinct stacks
bounded bash -c "yes 'main;a;b 1' | head -c 100000000 | '$R' flame - -o '$TMP/big.svg'" 2>"$TMP/err"; rc=$?
check "100 MB of folded text on stdin is drawn within 400 MiB (exit $rc)" grep -q '<title>all (9090909 samples' "$TMP/big.svg"

# ---- the adversarial pass after issue 16: empty selections, a byte-order mark, write errors ----
check_rc "fold with a selection that keeps nothing: exit 0 (an empty answer)" 0 "$A" fold "$G" --gil wait
check "... with a warning that nothing was selected" grep -q "none of the 77 samples is in the selection" "$TMP/err"
check_rc "export --gil that keeps nothing: exit 0" 0 "$A" export "$G" --gil wait -o "$TMP/none.pb.gz"
check "... with a warning" grep -q "none of the 77 samples is of the --gil classes" "$TMP/err"
printf '\xef\xbb\xbfmain;a 3\nmain;b 2\n' >"$TMP/bom.folded"
check_rc "folded text with a UTF-8 byte-order mark: drawn" 0 "$R" flame "$TMP/bom.folded" -o "$TMP/bom.svg"
check "... the mark is not part of the first frame's name" \
	bash -c "grep -q '<title>main (5 samples' '$TMP/bom.svg' && ! grep -q \$'\xef\xbb\xbf' '$TMP/bom.svg'"
check_rc "diff reads it the same way" 0 "$A" diff "$TMP/bom.folded" "$TMP/lf.folded"
# a full disk: writes fail with EFBIG under a 1-block file size limit
full() { (trap '' XFSZ; ulimit -f 1; exec "$@"); }
for cmd in "$A report $G" "$A fold $G" "$A export $G --format chrome" "$R flame $G -o -"; do
	full $cmd >"$TMP/full.out" 2>"$TMP/err"; rc=$?
	check "write error: ${cmd#"$GT_BIN/"} exits 2 with a line saying so (exit $rc)" \
		bash -c "[ $rc -eq 2 ] && grep -q 'File too large' '$TMP/err'"
done
for out in x.pb.gz x.folded; do
	full "$A" export "$G" -o "$TMP/$out" 2>"$TMP/err"; rc=$?
	check "write error: export -o $out exits 2 (exit $rc)" test "$rc" -eq 2
done
for out in x.svg x.png x.pdf; do
	full "$R" timeline "$G" -o "$TMP/$out" 2>"$TMP/err"; rc=$?
	check "write error: gt-render timeline -o $out exits 2 (exit $rc)" test "$rc" -eq 2
done
# a trace that stops between two whole chunks (recorder killed after a write): no END record
python3 - "$G" "$TMP/noend.gtt" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off, last = 16, 16
while off + 12 <= len(d):
    last = off
    off += 12 + struct.unpack_from('<I', d, off + 4)[0]
open(sys.argv[2], 'wb').write(d[:last])  # every chunk but the last (the END record)
PY
check_rc "a trace without its END record: fold works, exit 0" 0 "$A" fold "$TMP/noend.gtt"
check "... with a warning that the recording did not finish" grep -q "no END record (recording interrupted?); analyzed the 77 samples" "$TMP/err"
check_rc "gt-render flame: the same warning" 0 "$R" flame "$TMP/noend.gtt" -o "$TMP/noend.svg"
check "... shown" grep -q "no END record" "$TMP/err"
head -c 16 "$G" >"$TMP/hdr.gtt"
check_rc "a trace of its header alone: fold exits 0" 0 "$A" fold "$TMP/hdr.gtt"
check "... saying it has no samples" grep -q "has no samples" "$TMP/err"
