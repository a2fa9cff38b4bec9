#!/usr/bin/env bash
# gil_overhead.sh — what gt-record costs a GIL-contended Python process (issue 13): the
# ping-pong stand-in (bench/gil_pingpong.py: 8 threads handing the GIL over ~50 000 times a
# second) run under each mode, interleaved (the order rotates every repetition so drift hits
# all modes alike), throughput compared with no profiler: median, min and max of REPS runs.
# A second measure, the process's own CPU time per round, catches what per-task events add on
# every context switch even when other programs share the CPUs (throughput then moves with them).
# Cost: the throughput lost, and the CPU time per round added, relative to no profiler.
# Modes: none; gt-record defaults (system-wide when permitted; the switch gate closed above its
# limit: docs/RECORD.md "Context switches"); defaults with every switch (--switch-events=on);
# --scope process; each of those with --python=off; and perf record -a -g / per-task -g when
# perf is installed. The last column is the workers' migrations per 1000 rounds (median): a
# 2-CPU machine falls in one of two states run to run (bench/gil_pingpong.py says why).
# BASE=PATH (another gt-record, e.g. from before a change) adds "base" (its defaults).
# usage: bench/gil_overhead.sh [REPS] [SECONDS]   (defaults 5 and 5; BUILD=build, PYTHON=python3)
# A benchmark, not a test: it never fails on a number. On a shared machine the numbers are noise.
set -u
cd "$(dirname "$0")/.."
REPS=${1:-5} SECS=${2:-5}
B=${BUILD:-build}/bin PY=${PYTHON:-python3}
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-gil.XXXXXX"); trap 'rm -rf "$W"' EXIT
[ -x "$B/gt-record" ] || { echo "gil_overhead: $B/gt-record not built" >&2; exit 2; }
PERF=$(command -v perf || true)
modes=(none defaults sw-on defaults-nopy sw-on-nopy process process-nopy)
[ -n "${BASE:-}" ] && modes+=(base)
[ -n "$PERF" ] && modes+=(perf-a perf-task)
run() { # MODE -> rounds per second on stdout
	local p=(bench/gil_pingpong.py "$SECS")
	case $1 in
	none) "$PY" "${p[@]}" ;;
	defaults) "$B/gt-record" -q -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	sw-on) "$B/gt-record" -q --switch-events=on -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	sw-on-nopy) "$B/gt-record" -q --switch-events=on --python=off -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	base) "$BASE" -q -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	process) "$B/gt-record" -q --scope process -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	defaults-nopy) "$B/gt-record" -q --python=off -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	process-nopy) "$B/gt-record" -q --scope process --python=off -o "$W/t.gtt" -- "$PY" "${p[@]}" ;;
	perf-a) "$PERF" record -q -a -g -F 99 -o "$W/p.data" -- "$PY" "${p[@]}" 2>/dev/null ;;
	perf-task) "$PERF" record -q -g -F 99 -o "$W/p.data" -- "$PY" "${p[@]}" 2>/dev/null ;;
	esac | awk '$1 == "rounds_per_s" { r = $2 } $1 == "cpu_us_per_round" { c = $2 } $1 == "migrations_per_kround" { g = $2 }
		END { print r + 0, c + 0, g + 0 }'
}
: >"$W/res"
for ((r = 0; r < REPS; r++)); do
	n=${#modes[@]}
	for ((k = 0; k < n; k++)); do
		m=${modes[$(((k + r) % n))]}
		v=$(run "$m"); echo "$m ${v:-0 0 0}" >>"$W/res"
	done
done
echo "# gil_pingpong.py $SECS s x $REPS interleaved; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F) $(git rev-parse --short HEAD 2>/dev/null)"
# COLUMN (2 throughput, 3 CPU per round) of MODE: "median min max"
stats() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$W/res" | sort -n |
	awk '{ v[NR] = $1 } END { if (!NR) { print "0 0 0"; exit } printf "%s %s %s\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }
read -r base _ _ < <(stats none 2)
read -r cbase _ _ < <(stats none 3)
printf '%-14s %11s %11s %11s %7s   %9s %9s %9s %7s  %8s\n' mode 'rounds/s' min max cost 'cpu_us/r' min max cost migr/kr
for m in "${modes[@]}"; do
	read -r med lo hi < <(stats "$m" 2)
	read -r cmed clo chi < <(stats "$m" 3)
	read -r gmed _ _ < <(stats "$m" 4)
	awk -v m="$m" -v med="$med" -v lo="$lo" -v hi="$hi" -v b="$base" -v cmed="$cmed" -v clo="$clo" -v chi="$chi" -v cb="$cbase" -v g="$gmed" 'BEGIN {
		printf "%-14s %11.0f %11.0f %11.0f %6.1f%%   %9.3f %9.3f %9.3f %6.1f%%  %8.1f\n", m, med, lo, hi,
		       (b > 0 ? 100 * (b - med) / b : 0), cmed, clo, chi, (cb > 0 ? 100 * (cmed - cb) / cb : 0), g }'
done
