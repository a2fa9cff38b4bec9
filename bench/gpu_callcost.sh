#!/usr/bin/env bash
# gpu_callcost.sh OUTDIR — what the CUDA agent costs one CUDA call on the calling thread, split into
# CUPTI's part and ours, on the GPU box (~1 minute): bench/cuda_callcost.cu (built here with nvcc)
# times launches, memsets and idle-stream syncs (calls the agent's callbacks follow) and stream
# queries and event records (calls they do not) under each mode, in interleaved rounds:
#   none      no injection
#   bare      CUPTI activity collection, the agent only counting records (GT_CUPTI_MODE=bare)
#   nocb      the agent writing records, no API callbacks (GT_CUPTI_INFLIGHT=0 GT_CUPTI_STACKS=0)
#   empty     + callbacks enabled for the tracked calls, returning at once (GT_CUPTI_CALLBACKS=empty)
#   inflight  + the in-flight table (GT_CUPTI_STACKS=0)
#   default   + launch stacks at their default sampling and budget
#   cb_all    default, with callbacks for every non-trivial call (GT_CUPTI_CALLBACKS=all)
# The differences per call: bare-none = CUPTI's activity collection, nocb-bare = our buffer
# hand-over, empty-nocb = CUPTI's callback dispatch (not ours), inflight-empty and default-inflight
# = our callback body and our stacks. Divided by the activity records a call makes (launch and
# memset 2, the others 1) they are the per-record costs of issue 13 (<= 30 ns of ours). The agent's
# own summary (callback_ns by the TSC, stacks, stack_us, api_nested) is kept per run.
#   env: BUILD (build), CUDA_HOME (/usr/local/cuda), CALLS (20000), REPS (5)
set -u
OUT=${1:?usage: bench/gpu_callcost.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
AGENT=$BUILD/lib/libgtcupti.so
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REPS=${REPS:-5}
CALLS=${CALLS:-20000}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-callcost.XXXXXX")
trap 'rm -rf "$W"' EXIT
RES=$OUT/gpu_callcost.txt
: >"$RES"
say() { echo "$*" | tee -a "$RES"; }
[ -f "$AGENT" ] || { say "gpu_callcost: $AGENT missing (make record with CUDA)"; exit 2; }
if ! "$CUDA_HOME/bin/nvcc" -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
	-o "$W/cuda_callcost" "$ROOT/bench/cuda_callcost.cu" >"$W/nvcc.log" 2>&1; then
	say "gpu_callcost: nvcc failed: $(tail -c 300 "$W/nvcc.log")"
	exit 2
fi
say "gpu_callcost: $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(hostname), $(nproc) cpus, $CALLS calls x 5 loops, $REPS rounds"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1 | tee -a "$RES"

modes="none bare nocb empty inflight default cb_all"
mode_env() {
	case $1 in
	none) ;;
	bare) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_MODE=bare" ;;
	nocb) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$W/side GT_CUPTI_INFLIGHT=0 GT_CUPTI_STACKS=0" ;;
	empty) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$W/side GT_CUPTI_CALLBACKS=empty" ;;
	inflight) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$W/side GT_CUPTI_STACKS=0" ;;
	default) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$W/side" ;;
	cb_all) echo "CUDA_INJECTION64_PATH=$AGENT GT_CUPTI_DIR=$W/side GT_CUPTI_CALLBACKS=all" ;;
	esac
}
: >"$W/runs.txt"
for r in $(seq 1 "$REPS"); do
	set -- $modes
	n=$#
	for k in $(seq 0 $((n - 1))); do
		i=$(( (k + r - 1) % n + 1 ))
		m=${!i}
		rm -rf "$W/side" && mkdir -p "$W/side"
		# shellcheck disable=SC2046
		env -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH $(mode_env "$m") GT_CUPTI_VERBOSE=1 \
			timeout 120 "$W/cuda_callcost" "$CALLS" >"$W/out.txt" 2>"$W/err_${m}_$r.txt"
		rc=$?
		if [ "$rc" -ne 0 ]; then
			say "  $m round $r failed (exit $rc): $(tail -c 200 "$W/err_${m}_$r.txt")"
			continue
		fi
		sed "s/^/$m $r /" "$W/out.txt" >>"$W/runs.txt"
		grep -h 'cupti agent summary' "$W/err_${m}_$r.txt" | tail -1 | sed "s/^/$m $r /" >>"$W/summaries.txt"
	done
done

say ""
say "== ns per call on the calling thread, wall (median over $REPS rounds; min-max)"
awk -v order="$modes" '
	$3 ~ /^[a-z_]+$/ && NF == 6 { v[$1, $3] = v[$1, $3] " " $4; kinds[$3] = 1; rec[$3] = $6 }
	function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (!n) return -1
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		lo[0] = a[1]; hi[0] = a[n]
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
	END {
		nm = split(order, M, " "); nk = split("launch memset sync_idle query event_record", K, " ")
		printf "  %-13s", "call"; for (i = 1; i <= nm; i++) printf " %16s", M[i]; printf "\n"
		for (k = 1; k <= nk; k++) {
			printf "  %-13s", K[k]
			for (i = 1; i <= nm; i++) { m = med(v[M[i], K[k]]); x[M[i], K[k]] = m
				printf " %16s", m < 0 ? "-" : sprintf("%.0f (%.0f-%.0f)", m, lo[0], hi[0]) }
			printf "\n"
		}
		printf "\n== per activity record (launch and memset make 2, the others 1): who pays what\n"
		printf "  %-13s %12s %12s %12s %12s %12s %12s\n", "call", "CUPTI act.", "our buffers", "CUPTI cb", "our cb", "our stacks", "ours total"
		for (k = 1; k <= nk; k++) { c = K[k]; r = rec[c] ? rec[c] : 1
			printf "  %-13s %12.1f %12.1f %12.1f %12.1f %12.1f %12.1f\n", c, (x["bare", c] - x["none", c]) / r,
				(x["nocb", c] - x["bare", c]) / r, (x["empty", c] - x["nocb", c]) / r, (x["inflight", c] - x["empty", c]) / r,
				(x["default", c] - x["inflight", c]) / r, (x["default", c] - x["empty", c] + x["nocb", c] - x["bare", c]) / r }
	}' "$W/runs.txt" | tee -a "$RES"
say ""
say "== the agent's own numbers (median over runs): callback_ns by the TSC, stacks"
awk '{ m = $1; for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] ~ /^(callback_ns|api_calls|api_nested|callback_ids|stacks|stack_us|stacks_skipped_budget|callbacks_preempted|app_ns_per_record)$/) val[m, kv[1]] = val[m, kv[1]] " " kv[2] } ; ms[m] = 1 }
	function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (!n) return "-"
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
	END { split("callback_ids api_calls api_nested callback_ns callbacks_preempted stacks stack_us stacks_skipped_budget app_ns_per_record", F, " ")
		printf "  %-10s", "mode"; for (f = 1; f <= 9; f++) printf " %14s", F[f]; printf "\n"
		for (m in ms) { printf "  %-10s", m; for (f = 1; f <= 9; f++) printf " %14s", med(val[m, F[f]]); printf "\n" } }' \
	"$W/summaries.txt" 2>/dev/null | sort | tee -a "$RES"
cp "$W/runs.txt" "$OUT/gpu_callcost_runs.txt"
say "done"
