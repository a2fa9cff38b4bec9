#!/usr/bin/env bash
# scaling.sh — how the analyzer's and renderer's cost grows with distinct threads and processes:
# each command on traces of N and 4N threads (and processes), interleaved repetitions, median time;
# the ratio 4N/N is about 4 for n log n work and 16 for the quadratic work this replaced (100 000
# threads took 54.6 s for `report`). Ratios, not absolute times, are the result: other load on the
# machine moves both sides alike.
#   bench/scaling.sh [N]        (default N = 25000; needs make tests for test_bounds)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${1:-25000}
REPS=${BENCH_REPS:-3}
B=$BUILD/bin T=$BUILD/tests/test_bounds W=$BUILD/bench/scaling
[ -x "$T" ] && [ -x "$B/gt-analyze" ] && [ -x "$B/gt-render" ] || { echo "scaling: make all tests first" >&2; exit 2; }
mkdir -p "$W"
for n in "$N" $((4 * N)); do
	"$T" --write-threads "$n" "$W/threads-$n.gtt" || exit 2
	"$T" --write-procs "$n" "$W/procs-$n.gtt" || exit 2
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
run() { # seconds of one run of "$@"
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}
printf '%-8s %-36s %10s %10s %6s\n' kind command "t(N)" "t(4N)" ratio
for kind in threads procs; do
	for cmd in "gt-analyze report" "gt-analyze fold --threads" "gt-analyze export --format chrome -o /dev/null" \
		"gt-render timeline --threads . -o $W/t.svg" "gt-render flame --threads -o $W/f.svg"; do
		read -r -a argv <<<"$cmd"
		small=() big=()
		for ((r = 0; r < REPS; r++)); do
			small+=("$(run "$B/${argv[0]}" "${argv[1]}" "$W/$kind-$N.gtt" "${argv[@]:2}")")
			big+=("$(run "$B/${argv[0]}" "${argv[1]}" "$W/$kind-$((4 * N)).gtt" "${argv[@]:2}")")
		done
		ts=$(printf '%s\n' "${small[@]}" | median) tb=$(printf '%s\n' "${big[@]}" | median)
		printf '%-8s %-36s %9.3fs %9.3fs %6.1f\n' "$kind" "${cmd%% -o*}" "$ts" "$tb" \
			"$(awk -v a="$ts" -v b="$tb" 'BEGIN { print (a > 0 ? b / a : 0) }')"
	done
done
