#!/usr/bin/env bash
# overhead_breakdown.sh OUTDIR — where full gt-record's cost on a PyTorch script comes from:
# the same fixed-work run (tests/gpu/torch_train.py --iters) without a profiler and under
# gt-record with one part switched off at a time, interleaved repetitions; prints a table of
# iterations/s (mean, min, max, change against no profiler). Builds nothing: `make record` first.
#   env: BUILD (default build), PYTHON (default python3), REPS (default 3), ITERS (default 400)
set -u
OUT=${1:?usage: overhead_breakdown.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/${BUILD:-build}/bin
PY=${PYTHON:-python3}
REPS=${REPS:-3}
ITERS=${ITERS:-400}
mkdir -p "$OUT" || exit 2
RES=$OUT/breakdown.txt
: >"$RES"
run_mode() { # MODE -> the RESULT line's its_per_s on stdout
	local rec=("$BIN/gt-record" -q --no-archive -o "$OUT/t.gtt")
	case $1 in
	none) rec=(env) ;;
	full) ;;
	no_python) rec+=(--python=off) ;;
	fp) rec+=(--call-graph fp) ;;
	no_cuda) rec+=(--no-cuda) ;;
	fp_no_python) rec+=(--call-graph fp --python=off) ;;
	esac
	[ "$1" = none ] || rec+=(--)
	"${rec[@]}" "$PY" "$ROOT/tests/gpu/torch_train.py" --iters "$ITERS" 2>"$OUT/$1.err" |
		grep -oE 'its_per_s=[0-9.]+' | tail -n 1 | cut -d= -f2
}
modes="none full no_python fp no_cuda fp_no_python"
for rep in $(seq 1 "$REPS"); do
	for m in $modes; do
		v=$(timeout 60 bash -c "$(declare -f run_mode); BIN='$BIN' PY='$PY' ROOT='$ROOT' OUT='$OUT' ITERS='$ITERS' run_mode $m")
		echo "$m $rep ${v:-fail}" | tee -a "$RES"
	done
done
rm -f "$OUT/t.gtt"
awk '$3 != "fail" { s[$1] += $3; n[$1]++; if (!($1 in mn) || $3 < mn[$1]) mn[$1] = $3; if ($3 > mx[$1]) mx[$1] = $3 }
	{ if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
	END { base = n["none"] ? s["none"] / n["none"] : 0
		printf "%-14s %4s %10s %10s %10s %9s\n", "mode", "runs", "mean", "min", "max", "vs none"
		for (i = 1; i <= k; i++) { m = order[i]; if (!n[m]) { printf "%-14s failed\n", m; continue }
			printf "%-14s %4d %10.1f %10.1f %10.1f %8.1f%%\n", m, n[m], s[m]/n[m], mn[m], mx[m], base ? 100 * (s[m]/n[m]/base - 1) : 0 } }' "$RES"
