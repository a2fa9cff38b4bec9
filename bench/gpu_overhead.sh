#!/usr/bin/env bash
# gpu_overhead.sh OUTDIR — what recording costs GPU processes (issue 13), on the GPU box: each
# workload runs with no profiler, under perf (system-wide and per-task), with bare CUPTI, under
# gt-record with its defaults, and under gt-record with one part off at a time; repetitions are
# interleaved (round r runs every mode once, in an order rotated by r) so drift hits all modes
# alike; the table gives, per mode, the median and min-max over rounds of the cost against the
# same round's no-profiler run, and the CUDA agent's own numbers (ns per record on application
# threads, callback time, stacks taken) from its summary. What one CUDA call costs, CUPTI's part
# and ours apart, is bench/gpu_callcost.sh's (throughput here varies by ~10 % per run).
#
# Builds nothing: `make record pipeline` first. perf comes from .perf/ (bench/pack_perf.sh on a
# machine that has perf; carry the folder). Modes whose gt-record options this build does not
# know (e.g. --scope before it exists) or whose perf cannot run are dropped with a note.
#
#   env  PRESET     all | headline | breakdown | pipelines: which workloads and modes (below); the
#                   GPU box's time is scarce, so one run of this script does one preset
#        WORKLOADS  overrides the preset's workloads ("torch pipeline driver"; torch1: the torch
#                   workload with one target thread and no drafters)
#        REPS       5      rounds wanted (each round runs every mode of every workload once)
#        BUDGET_S   420    no round starts when the last round's time would not fit any more
#        TORCH_S 2.5 TORCH_WARMUP 1 PIPE_S 2 DRIVER_S 2   measured seconds per run
#        RUN_TIMEOUT 90    per run;  PYTHON python3;  BUILD build;  PERF .perf/perf
#        PL_BACKEND cuda   the pipeline's backend (cpu: try the script on a machine without a GPU)
#        MODES      a file with mode lines replacing the built-in table (format below)
#        BRACKET=1  every mode's run is bracketed by runs without a profiler (none, A, none, B,
#                   none, ...) and its cost is against the mean of the two around it: the H200's
#                   throughput drifted 16 % within minutes, more than the effects measured, and a
#                   round's single no-profiler run can be a minute away from a mode's run
# Results (two files: the GPU box brings back at most 8 per run): OUTDIR/gpu_overhead.txt (the
# tables) and gpu_overhead_logs.tar.gz (every run's number in runs.txt, each run's output with
# the agent's summary).
set -u
OUT=${1:?usage: bench/gpu_overhead.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BIN=$BUILD/bin
AGENT=$BUILD/lib/libgtcupti.so
PY=${PYTHON:-python3}
PERF=${PERF:-$ROOT/.perf/perf}
REPS=${REPS:-5}
BUDGET_S=${BUDGET_S:-420}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
# presets: workloads, then the modes they run (empty: every mode of the table)
case ${PRESET:-all} in
headline) P_WL="torch"; P_MODES="none perf_a perf_task bare gtr gtr_no_stacks gtr_no_python" ;;
breakdown) P_WL="torch"; P_MODES="none bare agent agent_no_stacks agent_cb_empty agent_no_callbacks gtr gtr_no_cuda gtr_fp gtr_minimal gtr_scope_process" ;;
pipelines) P_WL="pipeline driver"; P_MODES="none perf_a bare agent agent_no_stacks gtr gtr_no_stacks gtr_no_python" ;;
all) P_WL="torch pipeline driver"; P_MODES="" ;;
*) echo "gpu_overhead: PRESET=${PRESET}: expected all, headline, breakdown or pipelines" >&2; exit 64 ;;
esac
WORKLOADS=${WORKLOADS:-$P_WL}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-overhead.XXXXXX")
LOGS=$W/logs
mkdir -p "$LOGS"
RES=$OUT/gpu_overhead.txt
RUNS=$LOGS/runs.txt
: >"$RES"
: >"$RUNS"
T0=$SECONDS
say() { echo "$*" | tee -a "$RES"; }

# perf samples cpu-clock, like gt-record (the GPU box's VMs have no hardware events).
# Mode table: WORKLOADS|NAME|KIND|OPTIONS. KIND none: no profiler; perf: perf record OPTIONS --
# CMD; bare: CUPTI injected, the agent only counting records (OPTIONS: VAR=VALUE settings, e.g.
# GT_CUPTI_API=none); agent: the agent injected and
# writing a side file, no gt-record (OPTIONS: VAR=VALUE settings); gtr: gt-record OPTIONS -- CMD
# (leading VAR=VALUE words of OPTIONS: its environment, which the agent inherits).
# WORKLOADS is "all" or a comma list. Options are split on spaces.
DEFAULT_MODES='
all|none|none|
all|perf_a|perf|-e cpu-clock -a -g -F 99
torch,driver|perf_task|perf|-e cpu-clock -g -F 99
all|bare|bare|
all|agent|agent|
all|agent_no_stacks|agent|GT_CUPTI_STACKS=0
all|agent_no_callbacks|agent|GT_CUPTI_STACKS=0 GT_CUPTI_INFLIGHT=0
all|agent_cb_empty|agent|GT_CUPTI_CALLBACKS=empty
all|gtr|gtr|
all|gtr_no_stacks|gtr|--cuda-stacks=off
torch,driver|gtr_no_cuda|gtr|--no-cuda
torch,driver|gtr_no_python|gtr|--python=off
torch|gtr_fp|gtr|--call-graph fp
torch|gtr_no_archive|gtr|--no-archive
torch,pipeline|gtr_scope_process|gtr|--scope process
torch|gtr_minimal|gtr|--call-graph fp --python=off --no-cuda --no-archive
'
if [ -n "${MODES:-}" ]; then
	table=$(cat "$MODES") || exit 2
else
	table=$DEFAULT_MODES
fi

{
	echo "gpu_overhead: $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(hostname)"
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -2
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, kernel $(uname -r), perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
	"$PY" -c 'import sys; print("python", sys.version.split()[0], end=" ")
try:
    import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)
except Exception as e: print("(no torch: %s)" % e)' 2>&1
	"$BIN/gt-record" --version 2>&1
	"$PERF" --version 2>&1 | head -1
} | tee -a "$RES"

# ---- which modes can run here ----
declare -a M_WL M_NAME M_KIND M_OPTS
while IFS='|' read -r wl name kind opts; do
	[ -n "$name" ] || continue
	[ -z "$P_MODES" ] || [[ " $P_MODES " == *" $name "* ]] || continue
	case $kind in
	gtr)
		# an option this gt-record does not know makes it exit 64 before --help
		# shellcheck disable=SC2086
		if ! "$BIN/gt-record" $(echo "$opts" | sed -E 's/^([A-Z_][A-Z0-9_]*=[^ ]* *)*//') --help >/dev/null 2>&1; then
			say "mode $name dropped: gt-record does not accept '$opts'"
			continue
		fi ;;
	perf)
		# shellcheck disable=SC2086
		if ! "$PERF" record -q -N -B $opts -o "$W/probe.data" -- true >"$W/probe.log" 2>&1; then
			say "mode $name dropped: perf record $opts fails here: $(head -c 200 "$W/probe.log" | tr '\n' ' ')"
			continue
		fi ;;
	bare | agent)
		[ -f "$AGENT" ] || { say "mode $name dropped: no agent at $AGENT"; continue; } ;;
	none) ;;
	*) say "mode $name dropped: unknown kind $kind"; continue ;;
	esac
	M_WL+=("$wl"); M_NAME+=("$name"); M_KIND+=("$kind"); M_OPTS+=("$opts")
done <<<"$table"
rm -f "$W/probe.data"

workload_cmd() { # WORKLOAD -> the command line (words, one per line)
	case $1 in
	torch) printf '%s\n' "$PY" "$ROOT/bench/torch_workload.py" --seconds "${TORCH_S:-2.5}" --warmup "${TORCH_WARMUP:-1}" ;;
	# one target thread, no drafters: the per-launch costs without the 8 threads' GIL scheduling
	# noise (the torch workload's rounds differ by +-10 %)
	torch1) printf '%s\n' "$PY" "$ROOT/bench/torch_workload.py" --seconds "${TORCH_S:-2.5}" --warmup "${TORCH_WARMUP:-1}" \
		--targets 1 --drafters 0 ;;
	pipeline) printf '%s\n' "$BIN/gt-pipeline" --backend "${PL_BACKEND:-cuda}" --seconds "${PIPE_S:-2}" --quiet ;;
	driver) printf '%s\n' env GT_PIPELINE_LIB="$BUILD/lib/libgtpipeline.so" "$PY" "$ROOT/pipeline/driver.py" \
		--backend "${PL_BACKEND:-cuda}" --seconds "${DRIVER_S:-2}" --quiet ;;
	esac
}
workload_metric() { # WORKLOAD LOG -> the throughput number
	case $1 in
	torch | torch1) grep -oE 'target_its_per_s=[0-9.]+' "$2" | tail -n 1 | cut -d= -f2 ;;
	*) grep -oE 'tokens/s: [0-9.]+' "$2" | tail -n 1 | awk '{print $2}' ;;
	esac
}
applies() { [ "$1" = all ] || [[ ",$1," == *",$2,"* ]]; }

# run_one WORKLOAD MODE_INDEX ROUND: one run, appends "workload mode round value" to RUNS
run_one() {
	local wl=$1 i=$2 r=$3 name=${M_NAME[$2]} kind=${M_KIND[$2]} log rc v
	local -a cmd opts pre=() envs=()
	mapfile -t cmd < <(workload_cmd "$wl")
	read -r -a opts <<<"${M_OPTS[$i]}"
	# bare and gtr: leading VAR=VALUE words are the environment (the agent's GT_CUPTI_* settings)
	if [ "$kind" = bare ] || [ "$kind" = gtr ]; then
		while [ "${#opts[@]}" -gt 0 ] && [[ ${opts[0]} =~ ^[A-Z_][A-Z0-9_]*= ]]; do
			envs+=("${opts[0]}"); opts=("${opts[@]:1}")
		done
	fi
	log=$LOGS/${wl}_${name}_$r.log
	case $kind in
	none) pre=(env -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH) ;;
	# -N -B: no build-id collection after the run (perf 6.1 crashes in it on new kernels; it
	# happens after the workload ends, so it is no part of the cost measured)
	perf) pre=("$PERF" record -q -N -B "${opts[@]}" -o "$W/perf.data" --) ;;
	bare) pre=(env CUDA_INJECTION64_PATH="$AGENT" GT_CUPTI_MODE=bare GT_CUPTI_VERBOSE=1 "${envs[@]}") ;;
	agent)
		rm -rf "$W/side" && mkdir -p "$W/side"
		pre=(env CUDA_INJECTION64_PATH="$AGENT" NVTX_INJECTION64_PATH="$AGENT" GT_CUPTI_DIR="$W/side"
		     GT_CUPTI_VERBOSE=1 "${opts[@]}") ;;
	gtr) pre=(env GT_CUPTI_VERBOSE=1 "${envs[@]}" "$BIN/gt-record" "${opts[@]}" -o "$W/t.gtt" --) ;;
	esac
	timeout -k 5 "$RUN_TIMEOUT" "${pre[@]}" "${cmd[@]}" >"$log" 2>&1
	rc=$?
	v=$(workload_metric "$wl" "$log")
	[ "$rc" -eq 0 ] || v=
	echo "$wl $name $r ${v:-fail} rc=$rc $(( SECONDS - T0 ))s" >>"$RUNS"
	[ -n "$v" ] || echo "  $wl $name round $r failed (exit $rc): $(tail -n 2 "$log" | tr '\n' ' ' | cut -c1-200)" | tee -a "$RES"
	rm -rf "$W/perf.data" "$W/t.gtt" "$W/side"
}

PAIRS=$LOGS/pairs.txt
: >"$PAIRS"
inone=-1
for k in "${!M_NAME[@]}"; do [ "${M_KIND[$k]}" = none ] && inone=$k; done
if [ "${BRACKET:-0}" = 1 ] && [ "$inone" -lt 0 ]; then
	say "BRACKET=1 needs a mode of kind none; running plain rounds"
fi
say ""
say "preset ${PRESET:-all}: modes ${M_NAME[*]}; workloads: $WORKLOADS; rounds wanted: $REPS; budget ${BUDGET_S}s"
round_s=0
for r in $(seq 1 "$REPS"); do
	used=$(( SECONDS - T0 ))
	if [ "$r" -gt 1 ] && [ $(( used + round_s )) -gt "$BUDGET_S" ]; then
		say "round $r not started: ${used}s used, a round takes ~${round_s}s, budget ${BUDGET_S}s"
		break
	fi
	t_round=$SECONDS
	n=${#M_NAME[@]}
	for wl in $WORKLOADS; do
		if [ "${BRACKET:-0}" = 1 ] && [ "$inone" -ge 0 ]; then
			run_one "$wl" "$inone" "$r.0"
			j=0
			for k in $(seq 0 $(( n - 1 ))); do
				i=$(( (k + r - 1) % n ))
				[ "$i" -ne "$inone" ] && applies "${M_WL[$i]}" "$wl" || continue
				j=$(( j + 1 ))
				run_one "$wl" "$i" "$r.$j"
				run_one "$wl" "$inone" "$r.$j"
				# the pair's baseline: the mean of the no-profiler runs before and after
				awk -v wl="$wl" -v m="${M_NAME[$i]}" -v a="$r.$(( j - 1 ))" -v b="$r.$j" '
					$1 == wl && $2 == "none" && $3 == a { x = $4 } $1 == wl && $2 == "none" && $3 == b { y = $4 }
					$1 == wl && $2 == m && $3 == b { v = $4 }
					END { if (x != "" && x != "fail" && y != "" && y != "fail" && v != "" && v != "fail")
						printf "%s %s %s %s %.3f\n", wl, m, b, v, (x + y) / 2 }' "$RUNS" >>"$PAIRS"
			done
		else
			for k in $(seq 0 $(( n - 1 ))); do
				i=$(( (k + r - 1) % n ))    # rotated order
				applies "${M_WL[$i]}" "$wl" && run_one "$wl" "$i" "$r"
			done
		fi
	done
	round_s=$(( SECONDS - t_round ))
	echo "round $r: ${round_s}s" | tee -a "$RES"
done

# ---- tables ----
for wl in $WORKLOADS; do
	unit=tokens/s
	case $wl in torch | torch1) true ;; *) false ;; esac && unit="target iterations/s"
	say ""
	if [ -s "$PAIRS" ]; then
		say "== $wl ($unit; cost = 1 - mode / the mean of the no-profiler runs just before and after it; median and min-max over rounds)"
		awk -v wl="$wl" -v order="${M_NAME[*]}" '
			FILENAME == ARGV[1] && $1 == wl && $2 == "none" && $4 != "fail" { nn[++k] = $4 + 0 }
			FILENAME == ARGV[2] && $1 == wl { c[$2, ++nc[$2]] = 100 * (1 - $4 / $5); seen[$2] = 1; val[$2, nc[$2]] = $4 + 0 }
			function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
				return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
			END {
				printf "  %-18s %4s %12s %24s\n", "mode", "runs", "median", "cost median (min..max)"
				if (k) { lo = hi = nn[1]; for (i = 1; i <= k; i++) { if (nn[i] < lo) lo = nn[i]; if (nn[i] > hi) hi = nn[i] }
					printf "  %-18s %4d %12.1f   (runs %.1f..%.1f)\n", "none", k, med(nn, k), lo, hi }
				n = split(order, names, " ")
				for (q = 1; q <= n; q++) {
					m = names[q]; if (!(m in seen)) continue
					for (i = 1; i <= nc[m]; i++) { x[i] = c[m, i]; y[i] = val[m, i] }
					mv = med(y, nc[m]); cm = med(x, nc[m])
					printf "  %-18s %4d %12.1f %24s\n", m, nc[m], mv, sprintf("%+.1f%% (%+.1f..%+.1f)", cm, x[1], x[nc[m]])
					delete x; delete y
				}
			}' "$RUNS" "$PAIRS" | tee -a "$RES"
		continue
	fi
	say "== $wl ($unit; cost = 1 - mode/none of the same round; median and min-max over rounds)"
	awk -v wl="$wl" -v order="${M_NAME[*]}" '
		$1 == wl { v[$2, $3] = $4; rounds[$3] = 1; seen[$2] = 1 }
		function sort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
		END {
			printf "  %-18s %4s %12s %24s\n", "mode", "runs", "median", "cost median (min..max)"
			n = split(order, names, " ")
			for (k = 1; k <= n; k++) {
				m = names[k]
				if (!(m in seen)) continue
				nv = 0; nc = 0
				for (r in rounds) {
					if (v[m, r] == "" || v[m, r] == "fail") continue
					x[++nv] = v[m, r] + 0
					if (m != "none" && v["none", r] != "" && v["none", r] != "fail")
						c[++nc] = 100 * (1 - v[m, r] / v["none", r])
				}
				if (!nv) { printf "  %-18s %4d %12s\n", m, 0, "failed"; continue }
				sort(x, nv); med = nv % 2 ? x[(nv+1)/2] : (x[nv/2] + x[nv/2+1]) / 2
				cost = ""
				if (nc) { sort(c, nc); cm = nc % 2 ? c[(nc+1)/2] : (c[nc/2] + c[nc/2+1]) / 2
					cost = sprintf("%+.1f%% (%+.1f..%+.1f)", cm, c[1], c[nc]) }
				printf "  %-18s %4d %12.1f %24s\n", m, nv, med, cost
				delete x; delete c
			}
		}' "$RUNS" | tee -a "$RES"
done

# ---- the agent's own numbers, from its summaries (median per mode) ----
say ""
say "== CUDA agent summaries (median over runs): app ns/record = the agent's cost on application threads per activity record; cb ns = one API callback; enc ns = translation per record on its flush thread"
for f in "$LOGS"/*.log; do
	grep -h 'cupti agent summary' "$f" 2>/dev/null | tail -n 1 | sed "s|^|$(basename "$f" .log) |"
done >"$W/summaries.txt"
awk '{
	split($1, p, "_"); key = $1; sub(/_[0-9][0-9.]*$/, "", key)
	for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[2] != "") val[key, kv[1]] = val[key, kv[1]] " " kv[2] }
	keys[key] = 1
} function med(s,   a, n, i, j, t) { n = split(s, a, " "); if (!n) return "-"
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
END {
	for (k in keys) printf "  %-28s %10s %10s %8s %8s %8s %8s %9s %9s %10s %8s\n", k, med(val[k, "records"]), med(val[k, "api_calls"]),
		med(val[k, "api_nested"]), med(val[k, "app_ns_per_record"]), med(val[k, "callback_ns"]), med(val[k, "ns_per_record"]),
		med(val[k, "stacks"]), med(val[k, "stack_us"]), med(val[k, "stacks_skipped_budget"]), med(val[k, "dropped"])
}' "$W/summaries.txt" | sort >"$W/agent_table.txt"
printf "  %-28s %10s %10s %8s %8s %8s %8s %9s %9s %10s %8s\n" workload_mode records api_calls nested "app ns/r" "cb ns" "enc ns" \
	stacks "stack us" "skip budg" dropped | tee -a "$RES"
tee -a "$RES" <"$W/agent_table.txt"

tar -C "$W" -czf "$OUT/gpu_overhead_logs.tar.gz" logs 2>/dev/null
rm -rf "$W"
say ""
say "done in $(( SECONDS - T0 ))s; $OUT: $(ls "$OUT" | tr '\n' ' ')"
