#!/usr/bin/env bash
# pyreader_cost.sh — one Python stack pass, timed in the reader itself (bench/pyreader_cost.c,
# built by make bench-tools against the record/ archive): bench/pywork.py (one thread), tests/progs/py_threads.py
# 32 20 (33 threads ~23 frames deep), py_threads.py 8 50 (9 threads, the workers ~53 frames
# deep: a torch process's shape), bench/pyreader_cost_codes.py (9 threads, 315 distinct code objects
# on the stacks: a torch process's spread of code) and bench/gil_pingpong.py (8 threads handing the GIL over);
# on the GPU machine also `torch` (bench/torch_workload.py, the issue's process; WORKLOADS=torch,
# PYTHONS=the interpreter torch is installed for, TORCH_SETTLE seconds before the first pass, 20)
# under every CPython 3.10+ here, PASSES passes a GAP apart (1 ms: the caches cool down as they
# do between a recording's passes). Prints the harness's rows (median, min, max, mean over the
# passes, the first tenth left out; then the first three passes alone, which fill the code
# cache) per interpreter and workload. No wake-up cost is in these
# numbers; bench/py_overhead.sh measures whole recordings.
# usage: bench/pyreader_cost.sh [PASSES] [GAP_US]     (defaults 2000 and 1000; BUILD=build,
#        WORKLOADS="pywork threads deep codes pingpong", PYTHONS: the interpreters, default every 3.10+;
#        BASE=PATH another build's pyreader_cost, run on the same target alternately with this
#        one, REPS times each (default 1))
# A benchmark, not a test: it never fails on a number.
set -u
cd "$(dirname "$0")/.."
PASSES=${1:-2000} GAP=${2:-1000}
BUILD=${BUILD:-build}
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-prc.XXXXXX"); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$W"' EXIT
PRC="$BUILD/bench/pyreader_cost"
[ -x "$PRC" ] || { echo "pyreader_cost: make bench-tools first ($PRC missing)" >&2; exit 2; }
echo "# pyreader_cost.sh: $PASSES passes, $GAP us apart; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD 2>/dev/null)"
for py in ${PYTHONS:-$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.1[0-9] 2>/dev/null)}; do
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || continue
	for wl in ${WORKLOADS:-pywork threads deep codes pingpong}; do
		case $wl in
		pywork) "$py" bench/pywork.py 100000 >/dev/null & ;;
		threads) "$py" tests/progs/py_threads.py 32 20 600 >/dev/null & ;;
		deep) "$py" tests/progs/py_threads.py 8 50 600 >/dev/null & ;;
		codes) "$py" bench/pyreader_cost_codes.py 600 >/dev/null & ;;
		torch) "$py" bench/torch_workload.py --seconds 600 --warmup 1 >/dev/null & ;;
		pingpong) "$py" bench/gil_pingpong.py 600 >/dev/null & ;;
		esac
		pid=$!
		# torch imports for seconds before its threads run: the passes must see them
		if [ "$wl" = torch ]; then sleep "${TORCH_SETTLE:-20}"; else sleep 1; fi
		echo "## CPython $ver ($py), $wl"
		for ((r = 0; r < ${REPS:-1}; r++)); do
			for which in new ${BASE:+base}; do
				[ -n "${BASE:-}" ] && echo "### $which"
				if [ "$which" = new ]; then "$PRC" "$pid" "$PASSES" "$GAP"; else "$BASE" "$pid" "$PASSES" "$GAP"; fi |
					grep -E 'per (pass|stack)|^pass [123] '
			done
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
done
