#!/usr/bin/env bash
# run.sh — runs every unit test (build/tests/test_*) and CLI test (tests/cli/*.sh),
# counts their PASS:/FAIL:/SKIP: lines and ends with one line "N passed, N failed".
# A test program that crashes or exits non-zero without a FAIL line counts as one failure.
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
export GT_BIN="$PWD/$BUILD/bin" GT_TESTS="$PWD/$BUILD/tests" GT_ROOT="$PWD"
LOG="$BUILD/test-logs"; mkdir -p "$LOG"
only=${TESTS:-}
passed=0; failed=0; skipped=0
: >"$LOG/times.txt"
run_one() { # name, command...
	local name=$1; shift
	local log="$LOG/$name.log" rc t0=$EPOCHREALTIME
	"$@" >"$log" 2>&1 </dev/null; rc=$?
	# seconds it took, for the slowest-tests list at the end (CI has a time budget)
	local dt; dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	echo "$dt $name" >>"$LOG/times.txt"
	local p f s
	p=$(grep -c '^PASS: ' "$log"); f=$(grep -c '^FAIL: ' "$log"); s=$(grep -c '^SKIP: ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1; echo "FAIL: $name exited with status $rc" >>"$log"
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
		f=1; echo "FAIL: $name checked nothing" >>"$log"
	fi
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	if [ "$f" -gt 0 ]; then
		printf '%-28s %3d passed, %d failed  (log: %s)\n' "$name" "$p" "$f" "$log"
		grep -E '^(FAIL|SKIP): ' "$log" | head -20 | sed 's/^/    /'
	else
		printf '%-28s %3d passed%s\n' "$name" "$p" "$([ "$s" -gt 0 ] && echo ", $s skipped")"
		grep -E '^SKIP: ' "$log" | head -5 | sed 's/^/    /'
	fi
}
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	n=$(basename "$t"); [ -n "$only" ] && [[ ! "$n" =~ $only ]] && continue
	run_one "$n" "$t"
done
for t in tests/cli/*.sh; do
	[ "$(basename "$t")" = lib.sh ] && continue
	[ -f "$t" ] || continue
	n=$(basename "$t" .sh); [ -n "$only" ] && [[ ! "$n" =~ $only ]] && continue
	run_one "$n" bash "$t"
done
echo "slowest: $(sort -rn "$LOG/times.txt" | head -8 | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')"
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
