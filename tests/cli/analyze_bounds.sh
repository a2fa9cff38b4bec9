# analyze_bounds.sh — a trace with records at 0 and near 2^64 ns, counters that are not finite
# and names with U+FFFE (written by test_bounds --write-trace) through every command: no crash,
# exit 0, bounded output, every sample counted; gt-render PNG/PDF of names Cairo would refuse.
. "$(dirname "$0")/lib.sh"
A="$GT_BIN/gt-analyze" R="$GT_BIN/gt-render"
[ -x "$GT_TESTS/test_bounds" ] || { fail "test_bounds not built"; exit 0; }
"$GT_TESTS/test_bounds" --write-trace "$TMP/edge.gtt" || { fail "cannot write the edge trace"; exit 0; }

check_rc "report of a trace spanning 2^64 ns" 0 "$A" report "$TMP/edge.gtt"
cp "$TMP/out" "$TMP/report"
n=$(sed -n '/^  GPU 0 busy % per/,/^  GPU 1/{/^    /s/.* s://p}' "$TMP/report" | wc -w)
check "busy % per bucket: at most 200 buckets ($n values)" test "$n" -ge 1 -a "$n" -le 200
check "a kernel over the whole clock: GPU 1 busy 100%" grep -q "GPU 1: busy 100.0% of the recording" "$TMP/report"
check_rc "fold" 0 "$A" fold "$TMP/edge.gtt"
total=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/out")
check "fold counts all 5 samples, the one at 2^64 - 1 ns included (got $total)" test "$total" -eq 5
for f in speedscope chrome pprof; do
	check_rc "export $f" 0 "$A" export "$TMP/edge.gtt" --format "$f" -o "$TMP/e.$f"
done
for ext in svg png pdf; do
	check_rc "timeline .$ext (names with U+FFFE, U+FDD0, U+1FFFF)" 0 "$R" timeline "$TMP/edge.gtt" -o "$TMP/t.$ext"
	check_rc "flame .$ext" 0 "$R" flame "$TMP/edge.gtt" -o "$TMP/f.$ext"
done
check "the SVG shows U+FFFE as U+FFFD" bash -c "! grep -q \$'\\xef\\xbf\\xbe' '$TMP/t.svg' && grep -q \$'\\xef\\xbf\\xbd' '$TMP/t.svg'"
printf 'main;thread\xef\xbf\xbe;work 3\nmain;\xef\xbf\xbf 1\n' >"$TMP/nonchar.folded"
check_rc "flame PNG of folded frames with U+FFFE/U+FFFF" 0 "$R" flame "$TMP/nonchar.folded" -o "$TMP/n.png"
check_rc "flame PDF of the same" 0 "$R" flame "$TMP/nonchar.folded" -o "$TMP/n.pdf"
check_rc "timeline --width below the label column is a usage error" 64 "$R" timeline "$TMP/edge.gtt" --width 300 -o "$TMP/w.svg"
check "... which says the minimum" grep -q "at least 400" "$TMP/err"
check_rc "timeline --width 400 works" 0 "$R" timeline "$TMP/edge.gtt" --width 400 -o "$TMP/w.svg"
