#!/usr/bin/env bash
# same_output.sh — byte-for-byte comparison of two gt-analyze builds' outputs (a speed change
# must not change a report): stdout, stderr and exit status of `report`, `report --top 3`,
# `report --from 0.5 --to 2`, `fold`, `diff` and `check` (the trace against itself),
# `export --format chrome` and `--format speedscope` (whole, --gil held, --gil nogil,nopy, a window,
# and -o FILE: the file's bytes too), on every .gtt under testdata/ (bad/ included) and on gen_trace
# traces made here (default, --fp, --unordered-switches, --stack-variants 500, format 1.0,
# --one-data-stream (the packed layout before the kinds' streams), and a copy of the default one
# cut mid-chunk), all written as format 1.1 so that a build before 1.2 reads them. Then the
# twins: the default, --fp, --unordered-switches and --stack-variants traces written again in
# the writer's own format (1.2: the samples' stack copies apart), which BEFORE may not read:
# AFTER on the twin against BEFORE on the 1.1 trace, the report's "format:" line aside (each run
# in the directory of its trace, which has the same name).
#
#   bench/same_output.sh BEFORE_GT_ANALYZE [AFTER_GT_ANALYZE]   (after: build/bin/gt-analyze)
#
# With FOLD_WEIGHTS=1, the traces (twins aside) get `fold --weight wall` and `--weight gpu-time`
# with their options instead (--threads, --tid, --gil, --python-only, --python-frames, windows,
# -o), the runs that show their streamed sums equal the kept records' folds.
#
# Environment: SECONDS_GEN=3 (length of the generated traces), EXTRA='a.gtt b.gtt' more traces,
# OUT=build/bench/same_output (traces and the differing outputs). Exit 0 when every output is the
# same, 1 when some differ (listed), 2 when it could not run.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
BEFORE=${1:-}
AFTER=${2:-$ROOT/$BUILD/bin/gt-analyze}
GEN=$ROOT/$BUILD/bench/gen_trace
OUT=${OUT:-$ROOT/$BUILD/bench/same_output}
SECONDS_GEN=${SECONDS_GEN:-3}
for t in "$BEFORE" "$AFTER" "$GEN"; do
	[ -n "$t" ] && [ -x "$t" ] || { echo "usage: bench/same_output.sh BEFORE_GT_ANALYZE [AFTER] ($t missing; make all bench-tools)" >&2; exit 2; }
done
rm -rf "$OUT"
mkdir -p "$OUT/gen" "$OUT/twin" "$OUT/diff"

gen() { # name, gen_trace options...
	local name=$1; shift
	"$GEN" -o "$OUT/gen/$name.gtt" --seconds "$SECONDS_GEN" --format 1.1 "$@" 2>>"$OUT/gen.log" ||
		echo "same_output: gen_trace $* failed: $(tail -1 "$OUT/gen.log")" >&2
}
twin() { # name, gen_trace options... (the writer's own format, into twin/)
	local name=$1; shift
	"$GEN" -o "$OUT/twin/$name.gtt" --seconds "$SECONDS_GEN" "$@" 2>>"$OUT/gen.log" ||
		echo "same_output: gen_trace $* failed: $(tail -1 "$OUT/gen.log")" >&2
}
gen default
gen fp --fp
gen unordered --unordered-switches
gen variants --stack-variants 500
gen v10 --format 1.0
gen onestream --one-data-stream
twin default
twin fp --fp
twin unordered --unordered-switches
twin variants --stack-variants 500
if [ -f "$OUT/gen/default.gtt" ]; then
	size=$(stat -c %s "$OUT/gen/default.gtt")
	head -c $((size * 2 / 3 + 1234)) "$OUT/gen/default.gtt" >"$OUT/gen/cut.gtt"
fi

traces=()
while IFS= read -r f; do traces+=("$f"); done < <(find testdata -name '*.gtt' | sort)
traces+=("$OUT"/gen/*.gtt)
# shellcheck disable=SC2206 # EXTRA is a list of paths
[ -n "${EXTRA:-}" ] && traces+=($EXTRA)

n=0 bad=0
# one BIN ARGS...: stdout, stderr and status of one run (in $DIR), in $OUT/{before,after}.{out,err,rc}
DIR=$OUT
one() {
	local who=$1 bin=$2; shift 2
	(cd "$DIR" && "$bin" "$@" >"$OUT/$who.out" 2>"$OUT/$who.err" </dev/null; echo $? >"$OUT/$who.rc")
	if [ -f "$DIR/fw.folded" ]; then # what -o wrote, compared with the rest
		cat "$DIR/fw.folded" >>"$OUT/$who.out"
		rm -f "$DIR/fw.folded"
	fi
}
# one_o BIN ARGS...: the same with -o FILE (one name for both builds: messages may name it), the
# file's bytes (or that there is none) after stdout
one_o() {
	local who=$1 bin=$2 f=$OUT/o.speedscope.json; shift 2
	rm -f "$f"
	one "$who" "$bin" "$@" -o "$f"
	if [ -f "$f" ]; then { echo "-- $f:"; cat "$f"; } >>"$OUT/$who.out"; else echo "-- no $f" >>"$OUT/$who.out"; fi
	rm -f "$f"
}
compare() { # label, args...   (label -o: with -o FILE)
	local label=$1 run=one; shift
	[ "$label" = -o ] && run=one_o
	$run before "$BEFORE" "$@"
	$run after "$AFTER" "$@"
	n=$((n + 1))
	local w
	for w in out err rc; do
		if ! cmp -s "$OUT/before.$w" "$OUT/after.$w"; then
			bad=$((bad + 1))
			local d="$OUT/diff/$bad"
			mkdir -p "$d"
			cp "$OUT"/before.* "$OUT"/after.* "$d/"
			echo "DIFFERS ($w): gt-analyze $*" | tee "$d/what" >&2
			return
		fi
	done
}
fold_weights() { # trace: the wall and GPU-time folds, with a thread of the trace for --tid
	local p=$1 w tid
	tid=$("$BEFORE" fold --weight wall --threads "$p" 2>/dev/null | head -1 | cut -d';' -f2 | awk '{print $NF}')
	[ -n "$tid" ] || tid=$("$BEFORE" fold --threads "$p" 2>/dev/null | head -1 | cut -d';' -f2 | awk '{print $NF}')
	for w in wall gpu-time; do
		compare fw fold --weight $w "$p"
		compare fw fold --weight $w --threads "$p"
		compare fw fold --weight $w --python-only "$p"
		compare fw fold --weight $w --threads --python-only --python-frames line "$p"
		compare fw fold --weight $w --from 0.5 --to 2 "$p"
		compare fw fold --weight $w --threads --from 1 "$p"
		compare fw fold --weight $w --to 0.25 "$p"
		[ -n "$tid" ] && compare fw fold --weight $w --threads --tid "$tid" "$p"
		compare fw fold --weight $w --tid 1,2 "$p"
		compare fw fold --weight $w -o fw.folded "$p"
	done
	compare fw fold --weight wall --gil held "$p"
	compare fw fold --weight wall --gil released --threads "$p"
	compare fw fold --weight wall --gil python,nogil --from 0.5 "$p"
	compare fw fold --weight gpu-time --gil held "$p"
}
for t in "${traces[@]}"; do
	case $t in /*) p=$t ;; *) p=$ROOT/$t ;; esac
	if [ -n "${FOLD_WEIGHTS:-}" ]; then
		fold_weights "$p"
		continue
	fi
	compare report report "$p"
	compare top3 report --top 3 "$p"
	compare window report --from 0.5 --to 2 "$p"
	compare fold fold "$p"
	compare diff diff "$p" "$p"
	compare check check "$p" "$p"
	compare chrome export --format chrome "$p"
	compare speedscope export --format speedscope "$p"
	compare speedscope export --format speedscope --gil held "$p"
	compare speedscope export --format speedscope --gil nogil,nopy "$p"
	compare speedscope export --format speedscope --from 0.5 --to 2 "$p"
	compare -o export --format speedscope "$p"
done
# the twins: BEFORE in gen/ on the 1.1 trace, AFTER in twin/ on the same records in 1.2
ntwin=0
[ -n "${FOLD_WEIGHTS:-}" ] && rm -f "$OUT"/twin/*.gtt
for t in "$OUT"/twin/*.gtt; do
	[ -f "$t" ] && [ -f "$OUT/gen/$(basename "$t")" ] || continue
	b=$(basename "$t")
	ntwin=$((ntwin + 1))
	for args in "report $b" "report --top 3 $b" "report --from 0.5 --to 2 $b" "fold $b" "diff $b $b" "check $b $b" \
		"export --format chrome $b" "export --format speedscope $b"; do
		# shellcheck disable=SC2086 # args are words
		DIR=$OUT/gen; one before "$BEFORE" $args
		# shellcheck disable=SC2086
		DIR=$OUT/twin; one after "$AFTER" $args
		sed -i 's/^format:    1\.2/format:    1.1/' "$OUT/after.out"
		n=$((n + 1))
		for w in out err rc; do
			if ! cmp -s "$OUT/before.$w" "$OUT/after.$w"; then
				bad=$((bad + 1))
				mkdir -p "$OUT/diff/$bad"
				cp "$OUT"/before.* "$OUT"/after.* "$OUT/diff/$bad/"
				echo "DIFFERS ($w): gt-analyze $args (1.1 against its 1.2 twin)" | tee "$OUT/diff/$bad/what" >&2
				break
			fi
		done
	done
done
DIR=$OUT
echo "same_output: $n runs over ${#traces[@]} traces and $ntwin twins, $bad differ$([ "$bad" -gt 0 ] && echo " (outputs under $OUT/diff)")"
[ "$bad" -eq 0 ]
