#!/usr/bin/env bash
# render_vs_flamegraph.sh — gt-render flame vs FlameGraph's flamegraph.pl on the same folded
# input: CPU time (user+sys, best of N) and SVG size. flamegraph.pl is taken from
# $FLAMEGRAPH (a path to flamegraph.pl) or cloned into a temp dir; it is never committed.
#   bench/render_vs_flamegraph.sh [RUNS]      (BUILD=build by default)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
R="$PWD/$BUILD/bin/gt-render"
RUNS=${1:-3}
[ -x "$R" ] || { echo "no $R; make render first" >&2; exit 2; }
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gt-bench.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
FG=${FLAMEGRAPH:-}
if [ -z "$FG" ]; then
	if git clone -q --depth 1 https://github.com/brendangregg/FlameGraph "$TMPD/FlameGraph" 2>/dev/null; then
		FG="$TMPD/FlameGraph/flamegraph.pl"
	else
		echo "cannot fetch FlameGraph; set FLAMEGRAPH=/path/to/flamegraph.pl" >&2
		exit 2
	fi
fi
command -v perl >/dev/null || { echo "perl not installed" >&2; exit 2; }

# Inputs: N distinct stacks (depth 8-40, shared prefixes, C++-style names), 10 x N samples
# with a heavy-tailed distribution, generated the same way every time (seeded).
gen() { python3 - "$1" "$2" <<'PY'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
random.seed(7)
mods = ["torch", "cuda", "libc", "python", "numpy", "std::vector<int>", "Foo<Bar&>"]
funcs = ["%s::fn_%d" % (random.choice(mods), i) for i in range(3000)]
seen, out = set(), []
while len(out) < n:
    d = random.randint(8, 40)
    base = [funcs[(i * 7 + 3) % 50] for i in range(min(d, 5))]
    s = ";".join(base + [random.choice(funcs) for _ in range(d - len(base))])
    if s not in seen:
        seen.add(s)
        out.append(s)
counts = [1] * n
for _ in range(9 * n):
    counts[min(int(random.paretovariate(1.2)) - 1, n - 1)] += 1
with open(path, "w") as f:
    for s, c in zip(out, counts):
        f.write("%s %d\n" % (s, c))
PY
}

# best CPU seconds (user+sys) of RUNS runs of a command writing to $out
cpu_best() {
	local best="" i t
	for i in $(seq "$RUNS"); do
		/usr/bin/time -o "$TMPD/time" -f "%U %S" "$@" >"$out" 2>/dev/null
		t=$(awk '{print $1 + $2}' "$TMPD/time")
		if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
	done
	echo "$best"
}

printf '%-22s %12s %12s %8s %12s %12s\n' input gt-render_s flamegraph_s speedup gt_svg_KB fg_svg_KB
for n in 1000 10000 100000; do
	in="$TMPD/in-$n.folded"
	gen "$n" "$in"
	out="$TMPD/gt.svg"; tg=$(cpu_best "$R" flame "$in" -o -); sg=$(stat -c %s "$out")
	out="$TMPD/fg.svg"; tf=$(cpu_best perl "$FG" "$in"); sf=$(stat -c %s "$out")
	printf '%-22s %12.3f %12.3f %7.1fx %12.1f %12.1f\n' "$n stacks/$((10 * n)) smp" "$tg" "$tf" \
		"$(awk -v a="$tf" -v b="$tg" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
		"$(awk -v s="$sg" 'BEGIN { print s / 1024 }')" "$(awk -v s="$sf" 'BEGIN { print s / 1024 }')"
done
