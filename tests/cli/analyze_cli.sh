# analyze_cli.sh — gt-analyze's command line: usage errors (64), --help/--version, broken input
# (one line, exit 2), a cut-off trace (one warning, exit 0), and the report's sections and
# determinism on testdata/bad/base.gtt and, when gt-record is built, on a fresh recording.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze
[ -x "$A" ] || { fail "gt-analyze not built"; exit 0; }
BASE=$GT_ROOT/testdata/bad/base.gtt

check_rc "no arguments is a usage error" 64 "$A"
check_rc "--help" 0 "$A" --help
check "--help lists report and fold" grep -q 'report' "$TMP/out"
check_rc "--version" 0 "$A" --version
check "--version names the tool" grep -q '^gt-analyze [0-9]' "$TMP/out"
check_rc "report --help" 0 "$A" report --help
check "report --help documents --top, --symfs, --no-archive" \
	sh -c "grep -q -- --top '$TMP/out' && grep -q -- --symfs '$TMP/out' && grep -q -- --no-archive '$TMP/out'"
check_rc "fold --help" 0 "$A" fold --help
check_rc "unknown command" 64 "$A" frobnicate "$BASE"
check_rc "report without TRACE" 64 "$A" report
check_rc "report with two traces" 64 "$A" report "$BASE" "$BASE"
check_rc "report --top x" 64 "$A" report --top x "$BASE"
check_rc "report --bogus" 64 "$A" report --bogus "$BASE"
check_rc "fold --gil sometimes" 64 "$A" fold --gil sometimes "$BASE"
check_rc "fold --tid 1,a" 64 "$A" fold --tid 1,a "$BASE"
check_rc "fold --from -1" 64 "$A" fold --from -1 "$BASE"
check_rc "fold --from 2 --to 1" 64 "$A" fold --from 2 --to 1 "$BASE"
check "usage errors say what was wrong in one line" sh -c "[ \$(wc -l <'$TMP/err') -eq 1 ] && grep -q -- '--to' '$TMP/err'"

# broken input: one clear line, exit 2
: >"$TMP/empty.gtt"
printf 'just some text\n' >"$TMP/text.gtt"
for f in "$TMP/empty.gtt" "$TMP/text.gtt" "$TMP/missing.gtt"; do
	for cmd in report fold; do
		check_rc "$cmd $(basename "$f"): exit 2" 2 "$A" $cmd "$f"
		check "$cmd $(basename "$f"): one line on stderr, nothing on stdout" \
			sh -c "[ \$(wc -l <'$TMP/err') -eq 1 ] && [ ! -s '$TMP/out' ]"
	done
done
grep -q 'empty' "$TMP/err" 2>/dev/null
"$A" report "$TMP/empty.gtt" 2>"$TMP/e1"; "$A" report "$TMP/text.gtt" 2>"$TMP/e2"
check "empty file named as such" grep -q 'empty file' "$TMP/e1"
check "text file named as not a trace" grep -q 'not a groundtruth trace' "$TMP/e2"

if [ -f "$BASE" ]; then
	size=$(stat -c %s "$BASE")
	# a flipped byte in the middle of the file: corrupt chunk, exit 2 with its offset
	python3 - "$BASE" "$TMP/flip.gtt" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read()); d[len(d) // 2] ^= 0x20
open(sys.argv[2], 'wb').write(d)
PY
	check_rc "corrupt chunk: exit 2" 2 "$A" report "$TMP/flip.gtt"
	check "corrupt chunk: one line naming the byte offset" \
		sh -c "[ \$(wc -l <'$TMP/err') -eq 1 ] && grep -q 'corrupt chunk at byte [0-9]' '$TMP/err'"
	# a sample chunk skipped: fewer samples than the END record says, a partial result
	check_rc "--skip-corrupt analyzes around it (exit 1: partial)" 1 "$A" report --skip-corrupt "$TMP/flip.gtt"
	check "--skip-corrupt: the skipped chunk and the END count are warned about" \
		sh -c "grep -q 'skipped 1 corrupt chunk' '$TMP/err' && grep -q 'END record' '$TMP/err'"

	# cut off inside the last chunk: analyzed up to the cut, one warning, exit 0
	head -c $((size - 3)) "$BASE" >"$TMP/cut.gtt"
	check_rc "cut-off trace: exit 0" 0 "$A" fold "$TMP/cut.gtt"
	check "cut-off trace: exactly one warning line about the cut" \
		sh -c "[ \$(grep -c 'cut off' '$TMP/err') -eq 1 ] && [ \$(wc -l <'$TMP/err') -le 2 ]"
	check "cut-off trace: folded output up to the cut" test -s "$TMP/out"

	check_rc "report on base.gtt" 0 "$A" report "$BASE"
	cp "$TMP/out" "$TMP/report1"
	for section in '^command:' '^duration:' '^samples:' '^Threads' '^Top functions by self samples' \
	               '^Top functions by total samples' '^Sampler health' 'intended' 'lost records' 'lag windows'; do
		check "report has '$section'" grep -q "$section" "$TMP/report1"
	done
	"$A" report "$BASE" >"$TMP/report2" 2>/dev/null
	check "report is deterministic" cmp -s "$TMP/report1" "$TMP/report2"
	check_rc "report --top 1" 0 "$A" report --top 1 "$BASE"
	n=$(sed -n '/^Top functions by self/,/^$/p' "$TMP/out" | grep -cE '^ +[0-9]+ +[0-9.]+%')
	check "--top 1 gives one row per function table ($n)" [ "$n" -eq 1 ]
else
	skip "testdata/bad/base.gtt missing"
fi

# a real recording: CPU from samples and /proc side by side, intended vs received
REC=$GT_BIN/gt-record PROG=$GT_TESTS/progs/known_tree
if [ -x "$REC" ] && [ -x "$PROG" ]; then
	if "$REC" -q -F 199 -o "$TMP/r.gtt" -- "$PROG" 1 >"$TMP/rec.out" 2>&1; then
		check_rc "report of a recording" 0 "$A" report "$TMP/r.gtt"
		line=$(grep -E '^ +[0-9]+ +[0-9]+  known_tree' "$TMP/out" | head -1)
		# columns: PID TID NAME SAMPLES %TOTAL CPU%smp CPU%proc ONCPU_S HOTTEST
		read -r _ _ _ samples _ smp proc oncpu hot <<<"$line"
		check "thread row: samples, CPU% from samples and /proc, on-CPU seconds ($line)" \
			awk -v s="$samples" -v a="$smp" -v b="$proc" -v o="$oncpu" \
			'BEGIN { exit !(s > 0 && a > 0 && b > 0 && o > 0) }'
		check "CPU% from samples and from /proc agree within 25 points ($smp vs $proc)" \
			awk -v a="$smp" -v b="$proc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 25) }'
		check "hottest self function of the thread is kt_spin ($hot)" [ "$hot" = kt_spin ]
		check "health: intended vs received total" grep -qE '^  total: [0-9]+ intended, [0-9]+ received' "$TMP/out"
	else
		fail "gt-record failed: $(tail -3 "$TMP/rec.out")"
	fi
else
	skip "gt-record or known_tree not built: no live recording checked"
fi
