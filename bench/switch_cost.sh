#!/usr/bin/env bash
# switch_cost.sh — what recording costs a task at each context switch (issue 13): the target's
# own CPU time per switch (bench/switch_cost.c: two threads pinned to one CPU handing a byte to
# and fro) with no recorder, under gt-record (system-wide where permitted; --python=off
# --call-graph fp, so that only the perf events differ), under perf record -a with and
# without --switch-events (the reference), and BASE (another gt-record, e.g. from before a
# change) when given. Modes interleaved, the order rotating every repetition; prints the
# median, first quartile and minimum ns per switch and the cost over no recorder. The pinned
# CPU time moves much less with other load than wall time (still: say the load).
# usage: bench/switch_cost.sh [REPS] [ROUND_TRIPS]   (defaults 10 and 200000; BUILD=build, BASE=)
# A benchmark, not a test: it never fails on a number.
set -u
cd "$(dirname "$0")/.."
REPS=${1:-10} N=${2:-200000}
B=${BUILD:-build}
SW=$B/bench/switch_cost
[ -x "$B/bin/gt-record" ] && [ -x "$SW" ] || { echo "switch_cost: $B/bin/gt-record or $SW not built (make tests)" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-swcost.XXXXXX"); trap 'rm -rf "$W"' EXIT
PERF=$(command -v perf || true)
modes=(none gt)
[ -n "${BASE:-}" ] && modes+=(base)
[ -n "$PERF" ] && modes+=(perf-a perf-a-sw)
run() {
	case $1 in
	none) "$SW" "$N" ;;
	gt) "$B/bin/gt-record" -q --python=off --call-graph fp -o "$W/t.gtt" -- "$SW" "$N" ;;
	base) "$BASE" -q --python=off --call-graph fp -o "$W/t.gtt" -- "$SW" "$N" ;;
	# -N -B: no build-id cache (perf record without them aborts on some machines)
	perf-a) "$PERF" record -N -B -q -a -g -F 99 -o "$W/p.data" -- "$SW" "$N" 2>/dev/null ;;
	perf-a-sw) "$PERF" record -N -B -q -a -g -F 99 --switch-events -o "$W/p.data" -- "$SW" "$N" 2>/dev/null ;;
	esac | awk '$1 == "cpu_ns_per_switch" { print $2 }'
}
: >"$W/res"
for ((r = 0; r < REPS; r++)); do
	n=${#modes[@]}
	for ((k = 0; k < n; k++)); do
		m=${modes[$(((k + r) % n))]}
		echo "$m $(run "$m")" >>"$W/res"
	done
done
echo "# switch_cost $N round trips x $REPS interleaved; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %H:%M') UTC $(git rev-parse --short HEAD 2>/dev/null)"
stats() { awk -v m="$1" '$1 == m && $2 != "" { print $2 }' "$W/res" | sort -n |
	awk '{ v[NR] = $1 } END { if (!NR) { print "0 0 0"; exit } printf "%s %s %s\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[int(NR / 4) + 1], v[1] }'; }
read -r base_med base_q1 _ < <(stats none)
printf '%-10s %9s %9s %9s %12s %9s\n' mode 'median' 'q1' 'min' 'cost(med)' 'cost(q1)'
for m in "${modes[@]}"; do
	read -r med q1 lo < <(stats "$m")
	awk -v m="$m" -v med="$med" -v q1="$q1" -v lo="$lo" -v b="$base_med" -v bq="$base_q1" 'BEGIN {
		printf "%-10s %9.1f %9.1f %9.1f %+11.1f ns %+8.1f ns\n", m, med, q1, lo, med - b, q1 - bq }'
done
