# golden.sh — the tools reproduce the expected outputs of every golden trace byte for byte
# (testdata/golden/*/NAME.gtt with NAME.report, NAME.fold, NAME.speedscope.json,
# NAME.chrome.json, NAME.pprof.gz beside it). Every format version ever released has a
# directory here (v1.0, ...), so old traces stay readable. GT_GOLDEN_UPDATE=1 rewrites the
# expected files from the current tools (review the diff before committing).
. "$GT_ROOT/tests/cli/lib.sh"
A="$GT_BIN/gt-analyze"
n=0
for trace in "$GT_ROOT"/testdata/golden/*/*.gtt; do
	[ -f "$trace" ] || continue
	n=$((n + 1))
	base=${trace%.gtt}
	name=${base#"$GT_ROOT"/testdata/golden/}
	"$A" report "$trace" >"$TMP/report" 2>"$TMP/err.report"
	"$A" fold "$trace" >"$TMP/fold" 2>"$TMP/err.fold"
	"$A" export "$trace" --format speedscope -o "$TMP/speedscope.json" 2>"$TMP/err.speedscope"
	"$A" export "$trace" --format chrome -o "$TMP/chrome.json" 2>"$TMP/err.chrome"
	"$A" export "$trace" --format pprof -o "$TMP/pprof.gz" 2>"$TMP/err.pprof"
	for kind in report fold speedscope.json chrome.json pprof.gz; do
		got="$TMP/$kind"
		want="$base.$kind"
		if [ "${GT_GOLDEN_UPDATE:-0}" = 1 ]; then
			cp "$got" "$want"
			pass "$name.$kind rewritten"
		elif [ ! -f "$want" ]; then
			fail "$name.$kind: expected file missing (GT_GOLDEN_UPDATE=1 creates it)"
		elif cmp -s "$got" "$want"; then
			pass "$name.$kind reproduced byte for byte"
		else
			fail "$name.$kind differs: $(diff "$want" "$got" 2>/dev/null | head -5 | tr '\n' '|')"
		fi
	done
	# the same trace analyzed twice gives the same bytes (nothing machine- or time-dependent)
	"$A" report "$trace" >"$TMP/report2" 2>/dev/null
	check "$name: report is the same on a second run" cmp -s "$TMP/report" "$TMP/report2"
	# a golden compared with itself passes check
	check_rc "$name: check against itself exits 0" 0 "$A" check "$trace" --golden "$trace"
done
[ "$n" -gt 0 ] || fail "no golden traces under testdata/golden"
