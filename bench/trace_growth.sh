#!/usr/bin/env bash
# trace_growth.sh — how fast a gt-record trace grows (issue 14): records a workload with the
# recorder's defaults for each duration, REPS times, the recorders interleaved, and reports per
# run the file size, the archive's share on disk and the records' growth in MB per second of
# recording (bench/gtt_stat), then the median and min-max per recorder and duration.
#
#   bench/trace_growth.sh [SECONDS...]          (default: 10 30)
#
# Environment:
#   REPS=3                     repetitions of each (recorder, duration)
#   GT_RECORD=build/bin/gt-record
#   GT_RECORD_BEFORE=PATH      a second gt-record (e.g. a build of an older commit), measured
#                              interleaved with the first, reported as "before"
#   WORKLOAD='python3 bench/gil_pingpong.py {S}'   the command; {S} becomes the duration
#                              (a command that does not stop by itself: add -d via RECORD_ARGS)
#   RECORD_ARGS=               more gt-record options (e.g. --no-cuda to compare)
#   OUT=build/bench/growth     where traces and results.tsv go (traces are deleted unless KEEP=1)
# On the GPU machine (torch workload of issue 13, CUDA agent on):
#   WORKLOAD='python3 bench/torch_workload.py --seconds {S}' bench/trace_growth.sh 10 30
# Benchmarks never fail on a number: exit 0 unless the suite itself could not run.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
REPS=${REPS:-3}
REC=${GT_RECORD:-$ROOT/$BUILD/bin/gt-record}
BEFORE=${GT_RECORD_BEFORE:-}
STAT=$ROOT/$BUILD/bench/gtt_stat
PY=${PY:-python3}
DEFAULT_WORKLOAD="$PY $ROOT/bench/gil_pingpong.py {S}"
WORKLOAD=${WORKLOAD:-$DEFAULT_WORKLOAD}
OUT=${OUT:-$ROOT/$BUILD/bench/growth}
RECORD_ARGS=${RECORD_ARGS:-}
DURATIONS=("$@")
[ ${#DURATIONS[@]} -gt 0 ] || DURATIONS=(10 30)
for t in "$REC" "$STAT"; do
	[ -x "$t" ] || { echo "trace_growth: $t not built (make all bench-tools)" >&2; exit 2; }
done
mkdir -p "$OUT"
RES=$OUT/results.tsv
printf 'recorder\tseconds\trep\ttotal_bytes\tarchive_bytes\trecord_bytes_per_s\n' >"$RES"
recorders=(after)
[ -n "$BEFORE" ] && recorders=(before after)
echo "trace_growth: $(uname -n), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), workload: $WORKLOAD" >&2
for rep in $(seq 1 "$REPS"); do
	for s in "${DURATIONS[@]}"; do
		# alternate the order every repetition so that drift hits both alike
		order=("${recorders[@]}")
		[ $((rep % 2)) -eq 0 ] && [ ${#order[@]} -eq 2 ] && order=(after before)
		for who in "${order[@]}"; do
			bin=$REC
			[ "$who" = before ] && bin=$BEFORE
			trace=$OUT/$who-$s-$rep.gtt
			cmd=${WORKLOAD//\{S\}/$s}
			# shellcheck disable=SC2086
			if ! "$bin" -q $RECORD_ARGS -o "$trace" -- $cmd >"$OUT/run.log" 2>&1; then
				echo "trace_growth: $who $s s rep $rep: gt-record failed: $(tail -2 "$OUT/run.log")" >&2
				continue
			fi
			"$STAT" --tsv "$trace" >"$OUT/stat.tsv" || { echo "trace_growth: gtt_stat failed on $trace" >&2; continue; }
			v() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/stat.tsv"; }
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$who" "$s" "$rep" "$(v total_bytes)" "$(v archive_bytes)" \
				"$(v record_bytes_per_s)" >>"$RES"
			printf '%-6s %4s s rep %s: %10s bytes, archive %9s bytes, records %8.3f MB/s\n' "$who" "$s" "$rep" \
				"$(v total_bytes)" "$(v archive_bytes)" "$(awk -v b="$(v record_bytes_per_s)" 'BEGIN { print b / 1e6 }')" >&2
			[ "${KEEP:-0}" = 1 ] || rm -f "$trace"
		done
	done
done
echo
printf '| recorder | recording | runs | records MB/s median (min-max) | archive MiB median (min-max) | file MiB median |\n'
printf '|---|---|---|---|---|---|\n'
for who in "${recorders[@]}"; do
	for s in "${DURATIONS[@]}"; do
		awk -F'\t' -v w="$who" -v s="$s" '
			$1 == w && $2 == s { n++; r[n] = $6 / 1e6; a[n] = $5 / 1048576; t[n] = $4 / 1048576 }
			function med(x, n,   i, j, k) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { k = x[i]; x[i] = x[j]; x[j] = k }
				return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
			END { if (!n) exit; rm = med(r, n); r1 = r[1]; rn = r[n]; am = med(a, n); a1 = a[1]; an = a[n]; tm = med(t, n)
				printf "| %s | %s s | %d | %.3f (%.3f-%.3f) | %.2f (%.2f-%.2f) | %.1f |\n", w, s, n, rm, r1, rn, am, a1, an, tm }' "$RES"
	done
done
exit 0
