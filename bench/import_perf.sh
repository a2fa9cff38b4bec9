#!/usr/bin/env bash
# import_perf.sh — `gt-analyze import-perf` against FlameGraph's stackcollapse-perf.pl on the
# same `perf script` text: wall time (best of N), throughput, and whether the outputs are
# byte-equal. The input is a real `perf record -g` of the test programs, repeated to SIZE_MB.
# stackcollapse-perf.pl comes from $STACKCOLLAPSE or a temporary clone; never committed.
#   bench/import_perf.sh [SIZE_MB] [RUNS]      (BUILD=build by default)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
A="$PWD/$BUILD/bin/gt-analyze"
SIZE_MB=${1:-60}
RUNS=${2:-3}
[ -x "$A" ] || { echo "no $A; make analyze first" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf not installed (apt-get install linux-perf)" >&2; exit 2; }
command -v perl >/dev/null || { echo "perl not installed" >&2; exit 2; }
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gt-bench.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
SC=${STACKCOLLAPSE:-}
if [ -z "$SC" ]; then
	git clone -q --depth 1 https://github.com/brendangregg/FlameGraph "$TMPD/FlameGraph" 2>/dev/null ||
		{ echo "cannot fetch FlameGraph; set STACKCOLLAPSE=/path/to/stackcollapse-perf.pl" >&2; exit 2; }
	SC="$TMPD/FlameGraph/stackcollapse-perf.pl"
fi

# A system-wide recording while the test programs and a Python one-liner run: kernel frames,
# [unknown] frames, C++ and libc names, several processes.
make -s BUILD="$BUILD" "$BUILD/tests/progs/calltree" "$BUILD/tests/progs/known_tree" >/dev/null 2>&1
perf record -q -a -g -F 999 -o "$TMPD/perf.data" -- sh -c \
	"'$BUILD/tests/progs/calltree' 1; '$BUILD/tests/progs/known_tree' 1; python3 -c 'sum(range(10**7))'" \
	>/dev/null 2>&1 || { echo "perf record failed" >&2; exit 2; }
perf script -i "$TMPD/perf.data" >"$TMPD/one.txt" 2>/dev/null
: >"$TMPD/in.txt"
while [ "$(stat -c %s "$TMPD/in.txt")" -lt $((SIZE_MB * 1048576)) ]; do cat "$TMPD/one.txt" >>"$TMPD/in.txt"; done
bytes=$(stat -c %s "$TMPD/in.txt")
lines=$(wc -l <"$TMPD/in.txt")

best() { # command... ; prints the best wall time in seconds over RUNS
	local b=999999 t0 t1
	for _ in $(seq "$RUNS"); do
		t0=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s.%N)
		b=$(awk -v a="$t0" -v z="$t1" -v b="$b" 'BEGIN { t = z - a; print (t < b) ? t : b }')
	done
	echo "$b"
}
t_gt=$(best "$A" import-perf "$TMPD/in.txt")
t_pl=$(best perl "$SC" "$TMPD/in.txt")
"$A" import-perf "$TMPD/in.txt" >"$TMPD/gt.folded" 2>/dev/null
perl "$SC" "$TMPD/in.txt" >"$TMPD/pl.folded" 2>/dev/null
same=$(cmp -s "$TMPD/gt.folded" "$TMPD/pl.folded" && echo "byte-equal" || echo "DIFFERENT ($(diff "$TMPD/pl.folded" "$TMPD/gt.folded" | grep -c '^[<>]') lines)")
awk -v b="$bytes" -v l="$lines" -v g="$t_gt" -v p="$t_pl" -v s="$same" 'BEGIN {
	printf "input: %.1f MB, %d lines of perf script\n", b / 1048576, l
	printf "%-28s %8.2f s  %8.1f MB/s\n", "stackcollapse-perf.pl", p, b / 1048576 / p
	printf "%-28s %8.2f s  %8.1f MB/s\n", "gt-analyze import-perf", g, b / 1048576 / (g > 0 ? g : 0.001)
	printf "speed-up: %.1fx; outputs %s\n", p / (g > 0 ? g : 0.001), s
}'
