#!/usr/bin/env bash
# record_gpu.sh OUTDIR — CUDA tracing on a GPU box, one pass (≤ 5 minutes), builds nothing:
# run `make record pipeline` first. Records (a) gt-pipeline --backend cuda and (b) a multi-threaded
# PyTorch training script (tests/gpu/torch_train.py) under gt-record, (c) a small PyTorch trace for
# testdata/ (< 2 MB), (d) attach mode (--prepare, then -p), and benchmarks throughput side by side:
# without tracing / bare CUPTI (agent collects, writes nothing) / our agent (default API filter and
# GT_CUPTI_API=all) / full gt-record / torch.profiler. Every step is guarded: a failure is logged
# and the next step runs. OUTDIR receives at most 8 files of at most 16 MiB (what a device run
# brings back): summary.txt (the tables), logs.tar.gz, pipeline_telemetry.json, and the traces
# (gzipped above 2 MB): pipeline, torch, torch_small (for testdata/), attach. Analyze them elsewhere
# with gt-analyze (the GPU box has no libdw).
#   env: BUILD (default build), PYTHON (default python3), REPS (default 3), BUDGET_S (default 290)
set -u
OUT=${1:?usage: record_gpu.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BIN=$BUILD/bin
AGENT=$BUILD/lib/libgtcupti.so
PY=${PYTHON:-python3}
REPS=${REPS:-3}
BUDGET=${BUDGET_S:-290}
TORCH=$ROOT/tests/gpu/torch_train.py
mkdir -p "$OUT" || exit 2
FINAL=$(cd "$OUT" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/gt-gpu.XXXXXX")    # scratch: logs and traces, packed at the end
SUM=$FINAL/summary.txt
T0=$SECONDS
: >"$SUM"
log() { echo "[$((SECONDS - T0))s] $*" | tee -a "$SUM"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

# step NAME LIMIT_S COMMAND...: run with a time limit unless the budget is spent; log its status.
step() {
	local name=$1 limit=$2
	shift 2
	if [ "$(left)" -lt "$limit" ] && [ "$(left)" -lt 20 ]; then
		log "$name: skipped (budget spent)"
		return 99
	fi
	[ "$limit" -gt "$(left)" ] && limit=$(left)
	timeout -k 5 "$limit" "$@" >"$OUT/$name.log" 2>&1
	local rc=$?
	log "$name: exit $rc ($(tail -n 1 "$OUT/$name.log" | cut -c1-150))"
	return $rc
}

# Traces move to FINAL, gzipped above 2 MB; one that stays over 15 MiB is left out (noted).
pack_traces() {
	local f base sz
	for f in "$OUT"/*.gtt; do
		[ -f "$f" ] || continue
		base=$(basename "$f")
		sz=$(stat -c %s "$f")
		if [ "$sz" -gt 2000000 ]; then
			gzip -1 -f "$f" && f=$f.gz && base=$base.gz
		fi
		if [ "$(stat -c %s "$f")" -gt 15728640 ]; then
			log "$base: $(stat -c %s "$f") bytes, too big to bring back: left out"
			continue
		fi
		mv "$f" "$FINAL/$base" && log "$base: $(stat -c %s "$FINAL/$base") bytes (trace $sz bytes)"
	done
}

{
	echo "date: $(date -u +%FT%TZ)"
	nvidia-smi -L 2>&1 | head -8
	nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>&1 | head -2
	"$BIN/gt-record" --version 2>&1 | head -1
	ls -l "$BIN" "$AGENT" 2>&1
	"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1
	nproc
} >"$OUT/env.txt" 2>&1
log "env: $(tr '\n' ' ' <"$OUT/env.txt" | cut -c1-300)"
[ -x "$BIN/gt-record" ] || log "WARNING: $BIN/gt-record missing: run make record pipeline"
[ -f "$AGENT" ] || log "WARNING: $AGENT missing (no CUDA found at build time?)"

export GT_CUPTI_VERBOSE=1    # the agent prints its per-kind counts and ns/record at exit

# (a) the reference pipeline, CUDA backend, with its own ground truth (launch counts, tokens/s)
step pipeline 60 "$BIN/gt-record" -o "$OUT/pipeline.gtt" -- "$BIN/gt-pipeline" --backend cuda --seconds 2 \
	--telemetry "$FINAL/pipeline_telemetry.json"

# (b) multi-threaded PyTorch training, with NVTX ranges
step torch 90 "$BIN/gt-record" --no-archive -o "$OUT/torch.gtt" -- "$PY" "$TORCH" --seconds 1 --nvtx

# (c) small trace for testdata/: few threads, paced iterations
step torch_small 60 "$BIN/gt-record" --no-archive -F 49 -o "$OUT/torch_small.gtt" -- "$PY" "$TORCH" \
	--seconds 0.4 --warmup 0.3 --matmul-threads 2 --item-threads 1 --sleep-ms 5 --nvtx --empty-cache-every 20

# (d) attach: start with the agent dormant, switch it on for 1.5 s from a second gt-record
attach_test() {
	"$BIN/gt-record" --prepare -- "$PY" "$TORCH" --seconds 6 --warmup 0.2 --matmul-threads 2 --item-threads 1 \
		>"$OUT/attach_target.log" 2>&1 &
	local pid=$!
	sleep 7    # python + torch import + CUDA start take ~5 s there
	"$BIN/gt-record" --no-archive -p "$pid" -d 1.5 -o "$OUT/attach.gtt"
	local rc=$?
	wait "$pid"
	echo "target exit $?, recorder exit $rc"
	ls /tmp/gt-cupti.*.ctl 2>/dev/null && echo "stale control files left" && return 1
	return $rc
}
export -f attach_test
export BIN PY TORCH OUT
step attach 45 bash -c attach_test

pack_traces

# ---- benchmarks: interleaved repetitions so drift hits every mode alike ----
bench_run() { # MODE PROGRAM... -> one number on stdout (empty on failure)
	local mode=$1
	shift
	local side
	side=$(mktemp -d)
	case $mode in
	none) env -u CUDA_INJECTION64_PATH "$@" ;;
	bare) CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_MODE=bare "$@" ;;
	ours) CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$side "$@" ;;
	ours_all) CUDA_INJECTION64_PATH=$AGENT NVTX_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$side GT_CUPTI_API=all "$@" ;;
	gt_record) "$BIN/gt-record" --no-archive -q -o "$side/t.gtt" -- "$@" ;;
	profiler) "$@" --profiler ;;
	esac
	local rc=$?
	echo "side files: $(du -sb "$side" | cut -f1) bytes" >&2
	rm -rf "$side"
	return $rc
}

export -f bench_run
export AGENT BIN

# bench NAME MODES PARSE_REGEX LIMIT_S -- PROGRAM...
bench() {
	local name=$1 modes=$2 regex=$3 limit=$4
	shift 5
	local rep mode v
	for rep in $(seq 1 "$REPS"); do
		for mode in $modes; do
			if [ "$(left)" -lt $((limit + 5)) ]; then
				log "$name $mode rep $rep: skipped (budget spent)"
				continue
			fi
			[ "$mode" = profiler ] && [ "$name" != torch ] && continue
			timeout -k 5 "$limit" bash -c 'bench_run "$@"' _ "$mode" "$@" \
				>"$OUT/bench_${name}_${mode}_$rep.log" 2>&1
			v=$(grep -oE "$regex" "$OUT/bench_${name}_${mode}_$rep.log" | tail -n 1 | grep -oE '[0-9]+(\.[0-9]+)?$')
			echo "$mode $rep ${v:-fail}" >>"$OUT/bench_$name.txt"
			log "bench $name $mode rep $rep: ${v:-failed}"
		done
	done
	# table: mean, min, max, relative to none
	awk -v name="$name" '
		$3 != "fail" { s[$1] += $3; n[$1]++; if (!($1 in mn) || $3 < mn[$1]) mn[$1] = $3; if ($3 > mx[$1]) mx[$1] = $3 }
		{ if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
		END {
			base = n["none"] ? s["none"] / n["none"] : 0
			printf "\n%s throughput (%s), %s\n", name, (name == "torch" ? "iterations/s" : "tokens/s"), "higher is better"
			printf "  %-10s %4s %12s %12s %12s %9s\n", "mode", "runs", "mean", "min", "max", "vs none"
			for (i = 1; i <= k; i++) {
				m = order[i]
				if (!n[m]) { printf "  %-10s %4d %12s\n", m, 0, "failed"; continue }
				mean = s[m] / n[m]
				printf "  %-10s %4d %12.1f %12.1f %12.1f %8.1f%%\n", m, n[m], mean, mn[m], mx[m], base ? 100 * (mean / base - 1) : 0
			}
		}' "$OUT/bench_$name.txt" | tee -a "$SUM"
}

: >"$OUT/bench_torch.txt"
: >"$OUT/bench_pipeline.txt"
bench torch "none bare ours ours_all gt_record profiler" 'its_per_s=[0-9.]+' 45 -- \
	"$PY" "$TORCH" --iters 400
bench pipeline "none bare ours gt_record" 'tokens/s: [0-9.]+' 40 -- \
	"$BIN/gt-pipeline" --backend cuda --seconds 3 --quiet

# the agent's own numbers (records per kind, nested driver calls dropped, ns per record)
grep -h 'gt-cupti\[' "$OUT"/*.log 2>/dev/null | sed 's/^/  /' | head -40 >>"$SUM"
tar -C "$OUT" -czf "$FINAL/logs.tar.gz" . && rm -rf "$OUT"
log "done in $((SECONDS - T0)) s; $FINAL: $(ls "$FINAL" | tr '\n' ' ')"
