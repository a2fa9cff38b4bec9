#!/usr/bin/env bash
# analyze_scaling.sh — how gt-analyze's memory and speed scale with the trace (issue 14, item 4):
# resident memory (max RSS from /usr/bin/time), wall and user time and throughput (MB of trace
# per wall second) of `gt-analyze report` (and of each command in COMMANDS)
#   generated  on bench/gen_trace traces of each size in SIZES (the H200 torch workload's rates),
#   recorded   on gt-record recordings of bench/gil_pingpong.py for each of RECORD_SECONDS,
#   window     `report --from S --to S+10` (a 10 s window) out of a generated WINDOW_SECONDS trace,
# REPS times each, the binaries (and, for the windows, their positions) interleaved, then the
# median and min-max of each. GT_ANALYZE_BEFORE (another build, e.g. of an older commit) is
# measured beside GT_ANALYZE on the same traces, as "before".
#
#   bench/analyze_scaling.sh [generated|recorded|window ...]   (default: all three)
#
# Environment:
#   REPS=3                 repetitions
#   SIZES='1e9 3e9 1e10'   generated trace sizes in bytes (a size is skipped when the disk has not
#                          twice that free)
#   RECORD_SECONDS='10 30' recording lengths
#   WINDOW_SECONDS=3600    length of the generated trace the windows are taken from
#   GEN_ARGS=              more gen_trace options for the generated traces, e.g. '--stack-variants
#                          500' (stacks that repeat, as a training loop's do: by default nearly
#                          every Python read is a new stack, so distinct stacks grow with the trace)
#   MEM_LIMIT_GB=12        address-space limit of each gt-analyze run (ulimit -v, plus the trace's
#                          size, which it maps): a run that needs more fails with "out of memory"
#                          and is reported as such instead of taking the machine down
#   BEFORE_MAX_BYTES=1.1e9 GT_ANALYZE_BEFORE only on traces up to this size
#   COMMANDS=report        the gt-analyze commands measured on each trace, e.g. 'report fold
#                          diff check export-pprof export-speedscope fold-wall fold-gpu' (diff
#                          and check compare the trace with itself; export-FORMAT writes that
#                          format to /dev/null; fold-wall and fold-gpu are fold --weight wall and
#                          --weight gpu-time)
#   OUT=build/bench/scaling  traces (deleted unless KEEP=1) and results.tsv
# Benchmarks never fail on a number: exit 0 unless the suite itself could not run.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
REPS=${REPS:-3}
ANA=${GT_ANALYZE:-$ROOT/$BUILD/bin/gt-analyze}
BEFORE=${GT_ANALYZE_BEFORE:-}
REC=${GT_RECORD:-$ROOT/$BUILD/bin/gt-record}
GEN=$ROOT/$BUILD/bench/gen_trace
PY=${PY:-python3}
SIZES=${SIZES:-1e9 3e9 1e10}
RECORD_SECONDS=${RECORD_SECONDS:-10 30}
WINDOW_SECONDS=${WINDOW_SECONDS:-3600}
MEM_LIMIT_GB=${MEM_LIMIT_GB:-12}
BEFORE_MAX_BYTES=${BEFORE_MAX_BYTES:-1.1e9}
OUT=${OUT:-$ROOT/$BUILD/bench/scaling}
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(generated recorded window)
for t in "$ANA" "$GEN" /usr/bin/time; do
	[ -x "$t" ] || { echo "analyze_scaling: $t not built or missing (make all bench-tools; apt install time)" >&2; exit 2; }
done
mkdir -p "$OUT"
RES=$OUT/results.tsv
printf 'part\tanalyzer\ttrace\tbytes\targs\trep\trc\twall_s\tuser_s\tmax_rss_kb\n' >"$RES"
analyzers=(after)
[ -n "$BEFORE" ] && analyzers=(after before)
echo "analyze_scaling: $(uname -n), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)" >&2

# run PART WHO TRACE REP ARGS...: one timed gt-analyze command ($cmd, report unless set), a line
# in results.tsv
run() {
	local part=$1 who=$2 trace=$3 rep=$4; shift 4
	local bin=$ANA bytes rc c=${cmd:-report} twice=() label=${cmd:-report}
	case $c in
	diff | check) twice=("$trace") ;;
	export-*) twice=(--format "${c#export-}" -o /dev/null) c=export ;; # export-pprof: to nowhere
	fold-wall) twice=(--weight wall) c=fold ;;
	fold-gpu) twice=(--weight gpu-time) c=fold ;;
	esac
	[ "$who" = before ] && bin=$BEFORE
	bytes=$(stat -c %s "$trace")
	if [ "$who" = before ] && awk -v b="$bytes" -v m="$BEFORE_MAX_BYTES" 'BEGIN { exit !(b > m) }'; then
		return
	fi
	local limit_kb=$(( MEM_LIMIT_GB * 1048576 + bytes / 1024 ))
	(ulimit -v "$limit_kb"; /usr/bin/time -o "$OUT/time.txt" -f '%e %U %M' "$bin" "$c" "$@" "${twice[@]}" "$trace" \
		>/dev/null 2>"$OUT/err.txt")
	rc=$?
	read -r wall user rss <"$OUT/time.txt" 2>/dev/null || { wall=0 user=0 rss=0; }
	# /usr/bin/time writes "Command exited with non-zero status N" first on a failure
	[ "$rc" -ne 0 ] && read -r wall user rss < <(tail -1 "$OUT/time.txt")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$part" "$who" "$(basename "$trace")" "$bytes" "$label $*" "$rep" "$rc" \
		"$wall" "$user" "$rss" >>"$RES"
	printf '%-9s %-6s %-22s %-22s rep %s: rc %s, %6.2f s wall, %6.2f s user, %8.1f MiB RSS, %7.1f MB/s%s\n' \
		"$part" "$who" "$(basename "$trace")" "$label $*" "$rep" "$rc" "$wall" "$user" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
		"$(awk -v b="$bytes" -v w="$wall" 'BEGIN { print (w > 0 ? b / w / 1e6 : 0) }')" \
		"$([ "$rc" -ne 0 ] && echo " ($(head -1 "$OUT/err.txt"))")" >&2
}

# order REP: the analyzers, reversed every other repetition so that drift hits both alike
order() { if [ $(($1 % 2)) -eq 0 ] && [ ${#analyzers[@]} -eq 2 ]; then echo before after; else echo "${analyzers[@]}"; fi; }

free_bytes() { df --output=avail -B1 "$OUT" | tail -1; }

for part in "${PARTS[@]}"; do
	case $part in
	generated)
		for size in $SIZES; do
			trace=$OUT/gen-$size.gtt
			if awk -v f="$(free_bytes)" -v s="$size" 'BEGIN { exit !(f < 2 * s) }'; then
				echo "analyze_scaling: skipped the $size-byte trace: $(free_bytes) bytes free" >&2
				continue
			fi
			# shellcheck disable=SC2086 # GEN_ARGS is a list of options
			"$GEN" -o "$trace" --seconds 1000000 --max-bytes "$size" ${GEN_ARGS:-} 2>>"$OUT/gen.log" ||
				{ echo "analyze_scaling: gen_trace failed: $(tail -1 "$OUT/gen.log")" >&2; continue; }
			for rep in $(seq 1 "$REPS"); do
				for cmd in ${COMMANDS:-report}; do
					for who in $(order "$rep"); do run generated "$who" "$trace" "$rep"; done
				done
			done
			[ "${KEEP:-0}" = 1 ] || rm -f "$trace"
		done
		;;
	recorded)
		[ -x "$REC" ] || { echo "analyze_scaling: $REC not built: no recordings" >&2; continue; }
		for s in $RECORD_SECONDS; do
			trace=$OUT/pingpong-$s.gtt
			"$REC" -q -o "$trace" -- "$PY" "$ROOT/bench/gil_pingpong.py" "$s" >"$OUT/rec.log" 2>&1 ||
				{ echo "analyze_scaling: gt-record failed: $(tail -2 "$OUT/rec.log")" >&2; continue; }
		done
		for rep in $(seq 1 "$REPS"); do
			for s in $RECORD_SECONDS; do
				for cmd in ${COMMANDS:-report}; do
					for who in $(order "$rep"); do
						[ -f "$OUT/pingpong-$s.gtt" ] && run recorded "$who" "$OUT/pingpong-$s.gtt" "$rep"
					done
				done
			done
		done
		[ "${KEEP:-0}" = 1 ] || rm -f "$OUT"/pingpong-*.gtt
		;;
	window)
		cmd=report # (the windows are report's)
		trace=$OUT/hour.gtt
		"$GEN" -o "$trace" --seconds "$WINDOW_SECONDS" 2>>"$OUT/gen.log" ||
			{ echo "analyze_scaling: gen_trace failed: $(tail -1 "$OUT/gen.log")" >&2; continue; }
		# windows at the start, the middle and near the end: the index, not a scan, finds each
		for rep in $(seq 1 "$REPS"); do
			for at in 60 $((WINDOW_SECONDS / 2)) $((WINDOW_SECONDS - 70)); do
				for who in $(order "$rep"); do
					run window "$who" "$trace" "$rep" --from "$at" --to $((at + 10))
				done
			done
		done
		[ "${KEEP:-0}" = 1 ] || rm -f "$trace"
		;;
	*) echo "analyze_scaling: unknown part '$part' (generated, recorded or window)" >&2 ;;
	esac
done

echo
printf '| part | analyzer | trace | MB | args | runs | wall s median (min-max) | MB/s median | max RSS MiB median (min-max) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
awk -F'\t' 'NR > 1 && $7 == 0 { k = $1 "\t" $2 "\t" $3 "\t" $5; if (!(k in n)) { keys[++nk] = k; bytes[k] = $4 }
		n[k]++; w[k, n[k]] = $8; r[k, n[k]] = $10 / 1024 }
	NR > 1 && $7 != 0 { failed[$1 "\t" $2 "\t" $3 "\t" $5]++ }
	function med(a, k, c,   i, j, t, x) { for (i = 1; i <= c; i++) x[i] = a[k, i]
		for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		lo = x[1]; hi = x[c]; return c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2 }
	END { for (i = 1; i <= nk; i++) { k = keys[i]; split(k, f, "\t"); c = n[k]
			wm = med(w, k, c); wl = lo; wh = hi; rm = med(r, k, c); rl = lo; rh = hi
			printf "| %s | %s | %s | %.0f | %s | %d | %.2f (%.2f-%.2f) | %.0f | %.1f (%.1f-%.1f) |\n", f[1], f[2], f[3],
				bytes[k] / 1e6, f[4], c, wm, wl, wh, bytes[k] / wm / 1e6, rm, rl, rh }
		for (k in failed) { split(k, f, "\t"); printf "| %s | %s | %s | | %s | %d failed | | | |\n", f[1], f[2], f[3], f[4], failed[k] } }' "$RES"
exit 0
