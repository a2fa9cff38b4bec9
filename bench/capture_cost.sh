#!/usr/bin/env bash
# capture_cost.sh [REPS] [SECONDS] — what gt-record costs while capture control has sampling
# off, against sampling on and against no recorder: the GIL ping-pong stand-in
# (bench/gil_pingpong.py, 8 threads, tens of thousands of context switches a second) attached
# for SECONDS (default 6) by gt-record in three modes, interleaved REPS times (default 3):
#   none    no recorder
#   on      gt-record -p PID (defaults: Python reader, /proc loop, system-wide when permitted)
#   off     gt-record -p PID --capture-range=signal, never signalled (events off, loops paused)
# Per mode: the workload's rounds/s (its throughput: the recorder's cost is the drop), gt-record's
# own CPU seconds (user + system, from /usr/bin/time), and the trace's size; median and range.
# SCOPE=process|system passes --scope to gt-record.
# Run it on a quiet machine: on a 2-core box shared with builds the spread swamps the costs.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-3} SECS=${2:-6}
REC=${BUILD:-$ROOT/build}/bin/gt-record
PY=${PYTHON:-python3}
T=$(mktemp -d /tmp/gt-capcost.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$REC" ] || { echo "capture_cost: $REC not built" >&2; exit 2; }
run() { # mode rep
	local mode=$1 k=$2
	"$PY" "$ROOT/bench/gil_pingpong.py" "$((SECS + 2))" 8 >"$T/$mode.$k.py" 2>&1 & local wp=$!
	sleep 1
	case $mode in
	none) sleep "$SECS" ;;
	on) /usr/bin/time -f "cpu %U %S" -o "$T/$mode.$k.time" "$REC" -q ${SCOPE:+--scope $SCOPE} -o "$T/$mode.$k.gtt" -p $wp -d "$SECS" ;;
	off) /usr/bin/time -f "cpu %U %S" -o "$T/$mode.$k.time" "$REC" -q ${SCOPE:+--scope $SCOPE} -o "$T/$mode.$k.gtt" -p $wp -d "$SECS" \
		--capture-range=signal ;;
	esac
	wait $wp
	rps=$(awk '$1 == "rounds_per_s" { print $2 }' "$T/$mode.$k.py")
	cpu=$(awk '$1 == "cpu" { print $2 + $3 }' "$T/$mode.$k.time" 2>/dev/null)
	size=$(stat -c %s "$T/$mode.$k.gtt" 2>/dev/null)
	echo "$mode $k ${rps:-?} ${cpu:--} ${size:--}" | tee -a "$T/all"
	rm -f "$T/$mode.$k.gtt"
}
for k in $(seq "$REPS"); do
	for mode in none off on; do run "$mode" "$k"; done
done
echo "mode  rounds/s median [min-max]   gt-record CPU s median [min-max]   trace bytes median"
for mode in none off on; do
	awk -v m="$mode" '$1 == m { r[++n] = $3; c[n] = $4; s[n] = $5 }
		function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int((n + 1) / 2)] }
		END { printf "%-5s %10s [%s-%s]", m, med(r, n), r[1], r[n]; printf "   %8s [%s-%s]", med(c, n), c[1], c[n]; printf "   %s\n", med(s, n) }' "$T/all"
done
