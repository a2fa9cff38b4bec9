#!/usr/bin/env bash
# run.sh — the benchmark suite (`make bench`): every number a ratio against another tool measured
# side by side in the same run, each configuration repeated (BENCH_REPS, default 5; the order
# rotates every repetition so drift hits all configurations alike), reported as min/median/max.
# Writes its section of docs/PERFORMANCE.md (between the "make bench" markers; the rest of the
# file is kept) with machine, date, commit, tool versions and tables, and keeps the raw
# measurements in $BUILD/bench/results.tsv. Benchmarks never fail on a number: the exit status
# is 0 unless the suite itself could not run.
#
# Comparisons: perf record/script (Debian linux-perf), FlameGraph's flamegraph.pl and
# stackcollapse-perf.pl (FLAMEGRAPH_DIR, default /tmp/FlameGraph), Austin (AUSTIN, default
# /tmp/austin/austin). None of them is part of this repository; a missing one leaves its rows out,
# and the document says so.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build}
B=$ROOT/$BUILD/bin
REPS=${BENCH_REPS:-5}
STEPS=${BENCH_STEPS:-40}
W=$ROOT/$BUILD/bench
FG=${FLAMEGRAPH_DIR:-/tmp/FlameGraph}
AUSTIN=${AUSTIN:-/tmp/austin/austin}
DOC=${BENCH_DOC:-$ROOT/docs/PERFORMANCE.md}
mkdir -p "$W"
RES=$W/results.tsv
: >"$RES"
NOTES=$W/notes.txt
: >"$NOTES"

for t in gt-record gt-analyze gt-render gt-pipeline; do
	[ -x "$B/$t" ] || { echo "bench: $B/$t not built (make all)" >&2; exit 2; }
done
faulty=$ROOT/$BUILD/tests/progs/faulty
if [ ! -x "$faulty" ]; then
	make --no-print-directory BUILD="$BUILD" "$BUILD/tests/progs/faulty" >/dev/null || exit 2
fi
PERF=$(command -v perf || true)
if [ -n "$PERF" ] && ! "$PERF" record -q -e cpu-clock -o "$W/probe.data" -- true >/dev/null 2>&1; then
	echo "perf is installed but cannot record here: perf rows left out" >>"$NOTES"; PERF=
fi
[ -n "$PERF" ] || echo "perf not found (apt-get install linux-perf): perf rows left out" >>"$NOTES"
[ -x "$FG/flamegraph.pl" ] || { echo "FlameGraph not found in $FG: flamegraph.pl rows left out" >>"$NOTES"; FG=; }
[ -x "$AUSTIN" ] || { echo "Austin not found at $AUSTIN: Austin rows left out" >>"$NOTES"; AUSTIN=; }

# put SECTION CONFIG METRIC VALUE: one measurement
put() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
# rotate N LIST...: the list rotated left by N
rotate() { local n=$1; shift; local a=("$@") k=${#a[@]} i; for ((i = 0; i < k; i++)); do echo "${a[$(((i + n) % k))]}"; done; }
gt_samples() { "$B/gt-analyze" report "$1" 2>/dev/null | awk '$1 == "samples:" { print $2; exit }'; }
perf_samples() { "$PERF" script -F tid -i "$1" 2>/dev/null | wc -l; }
progress() { printf 'bench: %s\n' "$*" >&2; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$NOTES"
{
	echo "date $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit $(git rev-parse --short HEAD 2>/dev/null)$([ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo ' (with uncommitted changes)')"
} >"$W/meta.txt"

# ---- 1. recorder overhead on gt-pipeline --backend cpu ----
PL=("$B/gt-pipeline" --backend cpu --steps "$STEPS" --quiet)
cfgs=(base gt-99-fp gt-999-fp gt-99-dwarf gt-999-dwarf)
[ -n "$PERF" ] && cfgs+=(perf-99-fp perf-999-fp perf-99-dwarf perf-999-dwarf)
for ((rep = 1; rep <= REPS; rep++)); do
	progress "overhead, repetition $rep/$REPS"
	for cfg in $(rotate "$rep" "${cfgs[@]}"); do
		IFS=- read -r tool hz cg <<<"$cfg"
		case $tool in
		base) pre=() ;;
		gt) pre=("$B/gt-record" -q -F "$hz" --call-graph "$cg" -o "$W/ovh.gtt" --) ;;
		perf) [ "$cg" = fp ] && g=(-g) || g=(--call-graph dwarf,8192)
		      pre=("$PERF" record -q -e cpu-clock -F "$hz" "${g[@]}" -o "$W/ovh.data" --) ;;
		esac
		t0=$(now); "${pre[@]}" "${PL[@]}" >"$W/pl.out" 2>"$W/pl.err"; t1=$(now)
		tps=$(sed -n 's|^tokens/s: \([0-9.]*\).*|\1|p' "$W/pl.out")
		put overhead "$cfg" "tokens_per_s.$rep" "${tps:-nan}"
		put overhead "$cfg" "wall_s.$rep" "$(elapsed "$t0" "$t1")"
	done
done

# ---- 2. achieved vs intended samples, more busy threads than cores ----
NCPU=$(nproc)
NTHR=$((NCPU * 4))
for ((rep = 1; rep <= REPS; rep++)); do
	progress "achieved vs intended ($NTHR busy threads on $NCPU CPUs), repetition $rep/$REPS"
	for cfg in $(rotate "$rep" gt ${PERF:+perf}); do
		if [ "$cfg" = gt ]; then
			FAULTY_CPU_FILE=$W/cpu.txt "$B/gt-record" -q -F 999 --call-graph fp -o "$W/busy.gtt" -- \
				"$faulty" spin 2 "$((NTHR - 1))" >/dev/null 2>&1
			n=$(gt_samples "$W/busy.gtt")
		else
			FAULTY_CPU_FILE=$W/cpu.txt "$PERF" record -q -e cpu-clock -F 999 -g -o "$W/busy.data" -- \
				"$faulty" spin 2 "$((NTHR - 1))" >/dev/null 2>&1
			n=$(perf_samples "$W/busy.data")
		fi
		cpu=$(cat "$W/cpu.txt" 2>/dev/null)
		put achieved "$cfg" "ratio.$rep" "$(awk -v n="${n:-0}" -v c="${cpu:-0}" 'BEGIN { printf "%.4f", (c > 0 ? n / (c * 999) : 0) }')"
		put achieved "$cfg" "samples.$rep" "${n:-0}"
		put achieved "$cfg" "cpu_s.$rep" "${cpu:-0}"
	done
done

# ---- 3./4. analysis throughput and bytes per sample, same workload recorded by both ----
progress "recording the analysis inputs"
for cg in fp dwarf; do
	"$B/gt-record" -q -F 999 --call-graph "$cg" -o "$W/ana-$cg.gtt" -- "${PL[@]}" >/dev/null 2>&1
	"$B/gt-record" -q -F 999 --call-graph "$cg" --no-archive -o "$W/ana-$cg-noarch.gtt" -- "${PL[@]}" >/dev/null 2>&1
	n=$(gt_samples "$W/ana-$cg.gtt"); put bytes "gt-$cg" samples "$n"
	put bytes "gt-$cg" file_bytes "$(stat -c %s "$W/ana-$cg.gtt")"
	n2=$(gt_samples "$W/ana-$cg-noarch.gtt"); put bytes "gt-$cg-noarch" samples "$n2"
	put bytes "gt-$cg-noarch" file_bytes "$(stat -c %s "$W/ana-$cg-noarch.gtt")"
	if [ -n "$PERF" ]; then
		[ "$cg" = fp ] && g=(-g) || g=(--call-graph dwarf,8192)
		"$PERF" record -q -e cpu-clock -F 999 "${g[@]}" -o "$W/ana-$cg.data" -- "${PL[@]}" >/dev/null 2>&1
		put bytes "perf-$cg" samples "$(perf_samples "$W/ana-$cg.data")"
		put bytes "perf-$cg" file_bytes "$(stat -c %s "$W/ana-$cg.data")"
	fi
done
for ((rep = 1; rep <= REPS; rep++)); do
	progress "analysis throughput, repetition $rep/$REPS"
	for cg in fp dwarf; do
		t0=$(now); "$B/gt-analyze" fold "$W/ana-$cg.gtt" >"$W/gt-$cg.folded" 2>/dev/null; t1=$(now)
		put analysis "gt-$cg" "seconds.$rep" "$(elapsed "$t0" "$t1")"
		if [ -n "$PERF" ] && [ -n "$FG" ]; then
			t0=$(now)
			"$PERF" script -i "$W/ana-$cg.data" 2>/dev/null | "$FG/stackcollapse-perf.pl" >"$W/perf-$cg.folded"
			t1=$(now)
			put analysis "perf-$cg" "seconds.$rep" "$(elapsed "$t0" "$t1")"
		fi
	done
done

# ---- 5. render time and SVG size against flamegraph.pl, same folded input ----
"$B/gt-analyze" fold "$W/ana-dwarf.gtt" --threads >"$W/render.folded" 2>/dev/null
put render input lines "$(wc -l <"$W/render.folded")"
for ((rep = 1; rep <= REPS; rep++)); do
	progress "render, repetition $rep/$REPS"
	t0=$(now); "$B/gt-render" flame "$W/render.folded" -o "$W/gt.svg" 2>/dev/null; t1=$(now)
	put render gt "seconds.$rep" "$(elapsed "$t0" "$t1")"
	if [ -n "$FG" ]; then
		t0=$(now); "$FG/flamegraph.pl" "$W/render.folded" >"$W/fg.svg" 2>/dev/null; t1=$(now)
		put render flamegraph.pl "seconds.$rep" "$(elapsed "$t0" "$t1")"
	fi
done
put render gt svg_bytes "$(stat -c %s "$W/gt.svg" 2>/dev/null || echo 0)"
[ -n "$FG" ] && put render flamegraph.pl svg_bytes "$(stat -c %s "$W/fg.svg" 2>/dev/null || echo 0)"

# ---- 6. Python: sampling cost and agreement against Austin ----
PYS=()
for p in /usr/bin/python3.11 /root/.pyenv/versions/3.12*/bin/python3.12; do [ -x "$p" ] && PYS+=("$p"); done
ROUNDS=${BENCH_PY_ROUNDS:-60}
for py in "${PYS[@]}"; do
	pyv=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	pcfgs=(base gt-99 gt-999)
	[ -n "$AUSTIN" ] && pcfgs+=(austin-100 austin-1000)
	for ((rep = 1; rep <= REPS; rep++)); do
		progress "python $pyv, repetition $rep/$REPS"
		for cfg in $(rotate "$rep" "${pcfgs[@]}"); do
			case $cfg in
			base) pre=() ;;
			gt-*) pre=("$B/gt-record" -q -F "${cfg#gt-}" --call-graph fp --python=on -o "$W/py-$cfg.gtt" --) ;;
			austin-100) pre=("$AUSTIN" -i 10ms -o "$W/py-$cfg.austin") ;;
			austin-1000) pre=("$AUSTIN" -i 1ms -o "$W/py-$cfg.austin") ;;
			esac
			"${pre[@]}" "$py" "$ROOT/bench/pywork.py" "$ROUNDS" >"$W/py.out" 2>"$W/py.err"
			put "python-$pyv" "$cfg" "wall_s.$rep" "$(awk '$1 == "wall_s" { print $2 }' "$W/py.out")"
			# agreement: share of the time under alpha, beta and delta (work units 6:3:1)
			case $cfg in
			gt-*) "$B/gt-analyze" fold --python-only "$W/py-$cfg.gtt" >"$W/py-$cfg.folded" 2>/dev/null
			      sh_in=$W/py-$cfg.folded ;;
			austin-*) sh_in=$W/py-$cfg.austin ;;
			*) continue ;;
			esac
			python3 "$ROOT/bench/shares.py" "$sh_in" | while read -r k v; do put "agree-$pyv" "$cfg" "$k.$rep" "$v"; done
		done
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$NOTES"

progress "writing $DOC"
python3 "$ROOT/bench/report.py" "$RES" "$NOTES" "$DOC" "$REPS" "$STEPS" "$ROUNDS" "${PERF:-}" "${FG:-}" "${AUSTIN:-}" || exit 2
sed -n '/^<!-- begin: written by make bench/,/^<!-- end: make bench -->/p' "$DOC"
