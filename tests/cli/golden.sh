# golden.sh — the tools reproduce the expected outputs of every golden trace byte for byte
# (testdata/golden/*/NAME.gtt with NAME.report, NAME.fold, NAME.speedscope.json,
# NAME.chrome.json, NAME.pprof.gz beside it; traces with Python data also NAME.gil-held.fold
# and NAME.python-only.fold). Every format version ever released has a directory here (v1.0,
# ...), so old traces stay readable. GT_GOLDEN_UPDATE=1 rewrites the expected files from the
# current tools (review the diff before committing).
. "$GT_ROOT/tests/cli/lib.sh"
A="$GT_BIN/gt-analyze"
# libdwfl would fetch separate debug files from a debuginfod server: names would then depend
# on the network and the server's contents
unset DEBUGINFOD_URLS
G="$GT_ROOT/testdata/golden"

# produce TRACE KIND: run the command behind the expected file NAME.KIND, output in $TMP/KIND
produce() {
	local trace=$1 kind=$2 out="$TMP/$2"
	rm -f "$out"
	case $kind in
	report) "$A" report "$trace" >"$out" ;;
	fold) "$A" fold "$trace" >"$out" ;;
	gil-held.fold) "$A" fold --gil held "$trace" >"$out" ;;
	python-only.fold) "$A" fold --python-only "$trace" >"$out" ;;
	speedscope.json | chrome.json | pprof.gz) "$A" export "$trace" --format "${kind%%.*}" -o "$out" ;;
	esac 2>"$TMP/err.$kind"
}

n=0
for trace in "$G"/*/*.gtt; do
	[ -f "$trace" ] || continue
	n=$((n + 1))
	base=${trace%.gtt}
	name=${base#"$G"/}
	kinds="report fold speedscope.json chrome.json pprof.gz"
	produce "$trace" report
	rc_report=$?
	if grep -q '^Python and the GIL' "$TMP/report" || [ -f "$base.python-only.fold" ]; then
		kinds="$kinds gil-held.fold python-only.fold"
	fi
	for kind in $kinds; do
		got="$TMP/$kind"
		want="$base.$kind"
		if [ "$kind" = report ]; then rc=$rc_report; else produce "$trace" "$kind"; rc=$?; fi
		if [ $rc -ne 0 ] || [ ! -f "$got" ]; then
			fail "$name.$kind: gt-analyze failed (exit $rc): $(head -c 300 "$TMP/err.$kind")"
		elif [ "${GT_GOLDEN_UPDATE:-0}" = 1 ]; then
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

# goldens of different programs are refused by check, in both directions, with one line
py=$G/v1.0/python_gilmix.gtt pl=$G/v1.0/pipeline_cpu.gtt
if [ ! -f "$py" ] || [ ! -f "$pl" ]; then
	fail "python_gilmix.gtt or pipeline_cpu.gtt missing under testdata/golden/v1.0"
else
	check_rc "check python_gilmix against pipeline_cpu exits 2 (different programs)" 2 "$A" check "$py" --golden "$pl"
	check "its message is one line naming the problem" \
		test "$(wc -l <"$TMP/err")" = 1 -a "$(grep -c '^gt-analyze check: different programs: ' "$TMP/err")" = 1
	check_rc "check pipeline_cpu against python_gilmix exits 2 (different programs)" 2 "$A" check "$pl" --golden "$py"
fi
