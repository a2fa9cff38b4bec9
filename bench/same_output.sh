#!/usr/bin/env bash
# same_output.sh — are two builds of gt-analyze byte-identical in what they print? Runs `report`,
# `report --top 3`, `report --from 0.5 --to 2`, `fold`, `diff T T`, `check T --golden T` and
# `export --format chrome` with each build on every trace of testdata/ (bad/ included) and on the
# traces given, and compares stdout, stderr and exit status. A performance change must leave all
# three alone (issue 14's throughput work). Prints each difference and a count; exit 1 when any.
#
#   bench/same_output.sh BEFORE AFTER [TRACE...]
#
# GEN=1 also makes gen_trace traces (default, --fp, --unordered-switches, format 1.0,
# --stack-variants 50, one cut in the middle of a chunk) under $OUT and compares on them.
# Environment: OUT=build/bench/same_output (work files), BUILD=build.
set -u
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/same_output.sh BEFORE AFTER [TRACE...]" >&2; exit 64; }
BEFORE=$1 AFTER=$2
shift 2
BUILD=${BUILD:-build}
OUT=${OUT:-$PWD/$BUILD/bench/same_output}
for b in "$BEFORE" "$AFTER"; do
	[ -x "$b" ] || { echo "same_output: $b is not an executable" >&2; exit 2; }
done
mkdir -p "$OUT"
traces=()
while IFS= read -r t; do traces+=("$t"); done < <(find testdata -name '*.gtt' | sort)
if [ "${GEN:-0}" = 1 ]; then
	GENT=$PWD/$BUILD/bench/gen_trace
	[ -x "$GENT" ] || { echo "same_output: $GENT not built (make bench-tools)" >&2; exit 2; }
	"$GENT" -o "$OUT/gen-default.gtt" --seconds 5 2>/dev/null &&
		"$GENT" -o "$OUT/gen-fp.gtt" --seconds 5 --fp 2>/dev/null &&
		"$GENT" -o "$OUT/gen-unordered.gtt" --seconds 5 --unordered-switches 2>/dev/null &&
		"$GENT" -o "$OUT/gen-v10.gtt" --seconds 3 --format 1.0 2>/dev/null &&
		"$GENT" -o "$OUT/gen-variants.gtt" --seconds 8 --stack-variants 50 2>/dev/null ||
		{ echo "same_output: gen_trace failed" >&2; exit 2; }
	head -c "$(($(stat -c %s "$OUT/gen-default.gtt") / 2 + 777))" "$OUT/gen-default.gtt" >"$OUT/gen-cut.gtt"
	traces+=("$OUT"/gen-default.gtt "$OUT"/gen-fp.gtt "$OUT"/gen-unordered.gtt "$OUT"/gen-v10.gtt
		"$OUT"/gen-variants.gtt "$OUT"/gen-cut.gtt)
fi
traces+=("$@")

# one WHO COMMAND...: stdout, stderr, status of one run into $OUT/WHO.{out,err,rc}
one() {
	local who=$1 bin=$BEFORE
	shift
	[ "$who" = after ] && bin=$AFTER
	timeout 600 "$bin" "$@" >"$OUT/$who.out" 2>"$OUT/$who.err"
	echo $? >"$OUT/$who.rc"
}

runs=0 diffs=0
for t in "${traces[@]}"; do
	while IFS= read -r args; do
		# shellcheck disable=SC2086 # args is a word list with TRACE in it
		set -- ${args//TRACE/$t}
		one before "$@"
		one after "$@"
		runs=$((runs + 1))
		for f in out err rc; do
			if ! cmp -s "$OUT/before.$f" "$OUT/after.$f"; then
				diffs=$((diffs + 1))
				echo "DIFFERS ($f): gt-analyze $*" >&2
				diff "$OUT/before.$f" "$OUT/after.$f" | head -5 >&2
			fi
		done
	done <<'EOF'
report TRACE
report --top 3 TRACE
report --from 0.5 --to 2 TRACE
fold TRACE
diff TRACE TRACE
check TRACE --golden TRACE
export TRACE --format chrome
EOF
done
echo "same_output: ${#traces[@]} traces, $runs runs, $diffs differences"
[ "$diffs" -eq 0 ]
