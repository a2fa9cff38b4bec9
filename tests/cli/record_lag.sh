#!/usr/bin/env bash
# record_lag.sh — sampler health: stopping gt-record (SIGSTOP) for one second during a 1 kHz
# recording shows as a ~1 s LAG_WINDOW at the right time (its start within 100 ms of the stop; its
# end up to 300 ms after the continue: the loop is late until it has drained the second's backlog,
# slower under ASan on a loaded machine); schedules summarized.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs
SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] || { skip "gt-record or test_rec_trace not built"; exit 0; }
command -v python3 >/dev/null || { skip "python3 needed to time the stop on CLOCK_MONOTONIC"; exit 0; }

"$REC" -q -F 1000 -o "$TMP/s.gtt" -- "$P/calltree" 3 & rpid=$!
# stop the recorder 1 s in, for 1 s; print the CLOCK_MONOTONIC ns of SIGSTOP and of SIGCONT
python3 - "$rpid" >"$TMP/times" <<'PY'
import os, signal, sys, time
pid = int(sys.argv[1])
time.sleep(1.0)
os.kill(pid, signal.SIGSTOP); t0 = time.monotonic_ns()
time.sleep(1.0)
t1 = time.monotonic_ns(); os.kill(pid, signal.SIGCONT)
print(t0, t1)
PY
wait "$rpid"; check "lag: recording finished, exit 0" test $? -eq 0
read -r t0 t1 <"$TMP/times"
"$SUM" summary "$TMP/s.gtt" >"$TMP/s.sum"
# the longest perf (source 1) lag window
read -r ls le lmax < <(awk '$1 == "lag" && $2 == 1 { d = $4 - $3; if (d > best) { best = d; l = $3 " " $4 " " $5 } } END { print l }' "$TMP/s.sum")
check "lag: a perf-sampler lag window exists" test -n "$ls"
if [ -n "$ls" ]; then
	check "lag: it lasts ~1 s ($(( (le - ls) / 1000000 )) ms)" awk -v d=$((le - ls)) 'BEGIN { exit !(d >= 900e6 && d <= 1300e6) }'
	check "lag: it starts when gt-record was stopped (off by $(( (ls - t0) / 1000000 )) ms)" \
		awk -v d=$((ls - t0)) 'BEGIN { exit !(d >= -100e6 && d <= 100e6) }'
	check "lag: it ends when gt-record was continued (off by $(( (le - t1) / 1000000 )) ms)" \
		awk -v d=$((le - t1)) 'BEGIN { exit !(d >= -100e6 && d <= 300e6) }'
	check "lag: max lateness ~1 s" awk -v m="$lmax" 'BEGIN { exit !(m >= 900e6 && m <= 1100e6) }'
fi
check "lag: whole-recording schedule of the drain loop with max lateness ~1 s" \
	awk '$1 == "ticks_whole" && $2 == 1 && $14 >= 900e6 { ok = 1 } END { exit !ok }' "$TMP/s.sum"
check "lag: whole-recording schedule of the /proc loop" awk '$1 == "ticks_whole" && $2 == 4 { ok = 1 } END { exit !ok }' "$TMP/s.sum"
if [ -x "$GT_BIN/gt-analyze" ]; then
	"$GT_BIN/gt-analyze" report "$TMP/s.gtt" >"$TMP/report" 2>&1
	check "lag: gt-analyze report lists lag windows" grep -qi 'lag window' "$TMP/report"
else
	skip "gt-analyze not built"
fi
