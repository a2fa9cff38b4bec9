# diff_check.sh — diff and check on real recordings: two runs of one program are not flagged,
# a shifted profile fails check with a readable explanation and JUnit XML, and bad inputs
# (different programs, empty, header-only, newer format version, broken folded text) exit 2.
. "$GT_ROOT/tests/cli/lib.sh"
A="$GT_BIN/gt-analyze"
R="$GT_BIN/gt-record"
P="$GT_TESTS/progs/calltree"
G="$GT_ROOT/testdata/golden/v1.0/pipeline_cpu.gtt"
[ -x "$P" ] || { skip "calltree test program not built"; exit 0; }
if ! "$R" -q -F 499 -o "$TMP/a.gtt" -- "$P" 1 >/dev/null 2>"$TMP/rec.err"; then
	skip "gt-record cannot sample here: $(head -c 200 "$TMP/rec.err")"
	exit 0
fi
"$R" -q -F 499 -o "$TMP/b.gtt" -- "$P" 1 >/dev/null 2>&1

# Two runs of one program pass. A run taken while the machine is loaded (make check's other
# tests) has once in a while shown a share 4-5 standard errors off the program's 6:3:1 (a CI run
# saw beta at 20 % in one run and 34 % in the next, steady over the whole second, which no
# sampling noise explains); the z-test assumes independent samples and flags that. Such a pair
# is logged and the pair recorded once more (either run can be the odd one): a check that flags
# two runs of the same program most of the time still fails.
if ! "$A" check "$TMP/b.gtt" --golden "$TMP/a.gtt" >"$TMP/first.out" 2>&1; then
	echo "NOTE: the first pair was flagged: $(tr '\n' ' ' <"$TMP/first.out" | head -c 400)"
	rm -f "$TMP/a.gtt" "$TMP/b.gtt"
	"$R" -q -F 499 -o "$TMP/a.gtt" -- "$P" 1 >/dev/null 2>&1
	"$R" -q -F 499 -o "$TMP/b.gtt" -- "$P" 1 >/dev/null 2>&1
fi
check_rc "check: a second run of the same program passes" 0 "$A" check "$TMP/b.gtt" --golden "$TMP/a.gtt" --junit "$TMP/ok.xml"
check "check: OK line" grep -q "^check: OK" "$TMP/out"
"$A" diff "$TMP/a.gtt" "$TMP/b.gtt" >"$TMP/diff.txt" 2>&1
check "diff: nothing significant between two runs" grep -q " 0 changed significantly" "$TMP/diff.txt"
check "diff: alpha listed with its shares" grep -q "alpha" "$TMP/diff.txt"
"$A" diff --json "$TMP/a.gtt" "$TMP/b.gtt" >"$TMP/diff.json"
check "diff --json is valid JSON with functions" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["functions"] and all("self_change_pts" in f and "total_z" in f for f in d["functions"])' "$TMP/diff.json"

# A regression: the golden is a's folded stacks; NEW has alpha's samples tripled.
"$A" fold "$TMP/a.gtt" >"$TMP/a.fold"
awk '{ n = $NF; if ($0 ~ /alpha/) n = n * 3; $NF = n; print }' "$TMP/a.fold" >"$TMP/shifted.fold"
check_rc "check: a shifted profile fails with exit 1" 1 "$A" check "$TMP/shifted.fold" --golden "$TMP/a.fold" --junit "$TMP/bad.xml"
check "check: the explanation names alpha and the move" grep -qE "REGRESSION.*|alpha" "$TMP/out"
check "check: explanation has 'points'" grep -q "points" "$TMP/out"
check_rc "check --only beta: only beta compared, it moved down" 1 "$A" check "$TMP/shifted.fold" --golden "$TMP/a.fold" --only '^beta$'
check_rc "check --tolerance 60 lets the move pass" 0 "$A" check "$TMP/shifted.fold" --golden "$TMP/a.fold" --tolerance 60
if command -v xmllint >/dev/null; then
	check "JUnit XML (pass) is well formed" xmllint --noout "$TMP/ok.xml"
	check "JUnit XML (fail) is well formed and has a failure" sh -c "xmllint --noout '$TMP/bad.xml' && grep -q '<failure' '$TMP/bad.xml'"
else
	skip "xmllint missing"
fi

# Broken inputs: one line each, exit 2.
check_rc "different programs: exit 2" 2 "$A" check "$TMP/a.gtt" --golden "$G"
check "different programs: says so in one line" sh -c "grep -q 'different programs' '$TMP/err' && [ \$(wc -l <'$TMP/err') -eq 1 ]"
: >"$TMP/empty"
check_rc "empty file: exit 2" 2 "$A" check "$TMP/empty" --golden "$TMP/a.gtt"
head -c 16 "$G" >"$TMP/header_only.gtt"
check_rc "trace without samples: exit 2" 2 "$A" diff "$TMP/header_only.gtt" "$TMP/a.gtt"
cp "$G" "$TMP/newer.gtt"
printf '\002' | dd of="$TMP/newer.gtt" bs=1 seek=8 conv=notrunc 2>/dev/null
check_rc "golden of a newer format version: exit 2" 2 "$A" check "$TMP/a.gtt" --golden "$TMP/newer.gtt"
check "newer version: one line saying it is newer" sh -c "grep -qi 'newer' '$TMP/err' && [ \$(wc -l <'$TMP/err') -eq 1 ]"
printf 'a;b 10\nthis is not folded\n' >"$TMP/broken.fold"
check_rc "broken folded text: exit 2" 2 "$A" diff "$TMP/a.fold" "$TMP/broken.fold"
check "broken folded text: the line number is given" grep -q "broken.fold:2" "$TMP/err"
check_rc "check without --golden: usage" 64 "$A" check "$TMP/a.gtt"
