#!/usr/bin/env bash
# pipeline_args.sh — gt-pipeline's bad arguments: one clear line on stderr and exit 64 (usage) or 2
# (no GPU / fatal), never a hang.
. "$(dirname "$0")/lib.sh"
PL="$GT_BIN/gt-pipeline"
[ -x "$PL" ] || { fail "gt-pipeline not built"; exit 1; }

# bad DESCRIPTION WANT PATTERN ARGS...: exit WANT within 20 s, one stderr line matching PATTERN.
bad() {
	local d=$1 want=$2 pat=$3; shift 3
	timeout 20 "$PL" "$@" >"$TMP/out" 2>"$TMP/err"
	local rc=$? lines
	lines=$(wc -l <"$TMP/err")
	if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -Eq "$pat" "$TMP/err"; then
		pass "$d"
	else
		fail "$d (exit $rc, wanted $want; $lines stderr lines: $(head -c 200 "$TMP/err"))"
	fi
}
bad "min_ready above depth" 64 'min-ready 10 is larger than --queue-depth 5' --queue-depth 5 --min-ready 10
bad "zero targets" 64 'targets 0 is out of range' --targets 0
bad "zero drafters" 64 'drafters 0 is out of range' --drafters 0
bad "unknown backend" 64 "unknown backend 'tpu'" --backend tpu
bad "non-numeric size" 64 "hidden wants an integer, got 'abc'" --hidden abc
bad "trailing garbage in a number" 64 "steps wants an integer, got '5x'" --steps 5x
bad "negative seconds" 64 'seconds -1 is out of range' --seconds -1
bad "hidden not a multiple of 8" 64 'hidden 12 must be a multiple of 8' --hidden 12
bad "seq-min above seq-max" 64 'seq-min 100 is larger than --seq-max 50' --seq-min 100 --seq-max 50
bad "a run that never ends" 64 'would never end' --steps 0 --seconds 0
bad "malformed --gpus" 64 'gpus' --gpus 0,,1
bad "unknown option" 64 'unknown option --frobnicate' --frobnicate 3
bad "option without its value" 64 'needs a value' --targets
bad "stray argument" 64 "unexpected argument 'extra'" extra
bad "unknown --alloc" 64 "alloc wants churn or cached" --alloc sometimes
# No GPU on this machine (or a build without CUDA): exit 2 with the reason, at once.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	skip "a GPU is present: the no-GPU exit codes are not testable here"
else
	bad "cuda backend without a GPU" 2 'backend cuda: (no usable GPU|this gt-pipeline was built without CUDA)' --backend cuda --seconds 1
	bad "--check without a GPU" 2 '(no usable GPU|built without CUDA)' --check
	bad "--bench without a GPU" 2 '(no usable GPU|built without CUDA)' --bench
fi
bad "unwritable telemetry" 2 'cannot write telemetry' --steps 1 --targets 1 --drafters 1 --layers 1 --telemetry /nonexistent-dir/t.json
check_rc "--help exits 0" 0 "$PL" --help
check "--help lists the knobs" grep -q -- '--min-ready' "$TMP/out"
# --telemetry naming a trace: refused at the start, the trace kept (gt-record -o run.gtt --
# gt-pipeline --telemetry run.gtt wrote the JSON over the trace being recorded at the end)
cp "$GT_ROOT/testdata/bad/base.gtt" "$TMP/run.gtt"
check_rc "--telemetry over a trace is refused" 64 "$PL" --steps 1 --targets 1 --drafters 1 --layers 1 --telemetry "$TMP/run.gtt"
check "... saying why" grep -q 'is a groundtruth trace' "$TMP/err"
check "... the trace is kept" cmp -s "$GT_ROOT/testdata/bad/base.gtt" "$TMP/run.gtt"
if [ -x "$GT_BIN/gt-record" ]; then
	"$GT_BIN/gt-record" -q -o "$TMP/rec.gtt" -- "$PL" --steps 1 --targets 1 --drafters 1 --layers 1 \
		--telemetry "$TMP/rec.gtt" >/dev/null 2>&1
	check "the trace gt-record writes around the run keeps its header" \
		bash -c "head -c 4 '$TMP/rec.gtt' | grep -q '^GTT'"
fi
