#!/usr/bin/env bash
# record_switches.sh — gt-record --switch-events: auto (the default) records every context switch
# while the recorded tree switches slowly, and above the limit closes the switch gate but for
# short windows (switch_gate records; no switch record outside an open stretch; the report takes
# on-CPU time from /proc and says so; the timeline shades the gaps); on records every switch; off
# none; per task and with a bad value as documented; a --ring window starts in the gate's state; under capture control a failed opening closes the gate for good.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze REN=$GT_BIN/gt-render CAT=$GT_TESTS/../bench/gtt_cat P=$GT_TESTS/progs
for t in "$REC" "$ANA" "$CAT" "$P/pingpong"; do
	[ -x "$t" ] || { skip "switches: $(basename "$t") not built"; exit 0; }
done
if ! "$REC" -q --scope system -o "$TMP/probe.gtt" -- true 2>"$TMP/probe.err"; then
	skip "switches: system-wide sampling not possible here ($(head -1 "$TMP/probe.err"))"
	exit 0
fi
meta() { "$CAT" "$2" meta | awk -v k="$1" '$2 == k { print $3; exit }'; }
count() { "$CAT" "$2" "$1" | wc -l; }
# every switch record in an open stretch of the gate (before the first gate record: open)
switches_inside() {
	"$CAT" "$1" switch_gate switch | sort -k2,2n -s |
		awk '$1 == "switch_gate" { open = ($6 == 1) } $1 == "switch" && !open { bad++; if (bad < 4) print "switch at " $2 " outside" }
		     END { exit bad > 0 }'
}

# auto, fast: two pairs handing a byte to and fro (hundreds of thousands of switches a second)
check_rc "auto: a fast-switching program records (exit 0)" 0 "$REC" -o "$TMP/a.gtt" -- "$P/pingpong" 6 2
cp "$TMP/err" "$TMP/a.err"
check "auto: meta switch_events auto,10000" test "$(meta switch_events "$TMP/a.gtt")" = "auto,10000"
"$CAT" "$TMP/a.gtt" switch_gate >"$TMP/a.gates"
check "auto: the gate starts open (event 1, reason start)" awk 'NR == 1 { exit !($6 == 1 && $7 == 1) }' "$TMP/a.gates"
check "auto: then closes for being over the limit, with the rate and the limit" \
	awk 'NR == 2 { exit !($6 == 2 && $7 == 2 && $8 > 10000 && $9 >= 10000) }' "$TMP/a.gates"
check "auto: a window opened (3.8 s after the close) and closed again" awk '$6 == 1 && $7 == 3 { o++ } $6 == 2 && $7 == 3 { c++ } END { exit !(o >= 1 && c >= 1) }' "$TMP/a.gates"
check "auto: every switch record lies in an open stretch" switches_inside "$TMP/a.gtt"
n_auto=$(count switch "$TMP/a.gtt")
check "auto: some switches recorded ($n_auto)" test "$n_auto" -gt 100
check "auto: said once on stderr" test "$(grep -c 'context switches a second at' "$TMP/a.err")" -eq 1
check "auto: the summary says how much was recorded" grep -q 'context switches recorded .* % of the time' "$TMP/a.err"
"$ANA" report "$TMP/a.gtt" >"$TMP/a.rep" 2>&1
check "auto: the report says switches were recorded over part of the time, on-CPU from /proc" \
	grep -q 'context switches recorded over [0-9.]*% of the time .*on-CPU time is from /proc readings' "$TMP/a.rep"
check "auto: the threads table shows no on-CPU time from switches" grep -q 'ONCPU_S "-": context switches recorded over only part' "$TMP/a.rep"
check "auto: the health table has intended samples (from /proc)" grep -q '  total: [1-9][0-9]* intended' "$TMP/a.rep"
if [ -x "$REN" ]; then
	"$REN" timeline "$TMP/a.gtt" -o "$TMP/a.svg" 2>"$TMP/ren.err"
	check "auto: the timeline shades the stretches without switches" grep -q 'context switches not recorded' "$TMP/a.svg"
fi

# on: every switch
check_rc "on: records (exit 0)" 0 "$REC" -q --switch-events=on -o "$TMP/on.gtt" -- "$P/pingpong" 2.5 2
check "on: meta switch_events on" test "$(meta switch_events "$TMP/on.gtt")" = on
check "on: no gate record" test "$(count switch_gate "$TMP/on.gtt")" -eq 0
n_on=$(count switch "$TMP/on.gtt")
# per second of recording (on: 2.5 s; auto: 6 s, with switches about 0.5 s of it)
check "on: many more switches a second than auto ($n_on in 2.5 s against $n_auto in 6 s)" \
	awk -v a="$n_auto" -v o="$n_on" 'BEGIN { exit !(o / 2.5 > 3 * a / 6) }'
"$ANA" report "$TMP/on.gtt" >"$TMP/on.rep" 2>&1
check "on: the report has on-CPU time from switches" awk '/pingpong/ && $7 ~ /^[0-9]+\.[0-9]+$/ { f = 1 } END { exit !f }' "$TMP/on.rep"

# off: none
check_rc "off: records (exit 0)" 0 "$REC" -q --switch-events=off -o "$TMP/off.gtt" -- "$P/pingpong" 1 2
check "off: meta switch_events off" test "$(meta switch_events "$TMP/off.gtt")" = off
check "off: no switch and no gate record" test "$(count switch "$TMP/off.gtt")" -eq 0 -a "$(count switch_gate "$TMP/off.gtt")" -eq 0
check_rc "off: the report reads it" 0 "$ANA" report "$TMP/off.gtt"

# auto, slow: a pair that works between hand-overs (~1 000 switches a second, more when the
# machine is loaded and preempts it) stays under the limit: every switch kept
check_rc "auto, slow: records (exit 0)" 0 "$REC" -q --switch-events=auto,20000 -o "$TMP/slow.gtt" -- "$P/pingpong" 1.5 1 400000
check "auto,RATE: meta switch_events auto,20000" test "$(meta switch_events "$TMP/slow.gtt")" = "auto,20000"
check "auto, slow: the gate never closed" test "$(count switch_gate "$TMP/slow.gtt")" -eq 1
check "auto, slow: switches recorded" test "$(count switch "$TMP/slow.gtt")" -gt 100
"$ANA" report "$TMP/slow.gtt" >"$TMP/slow.rep" 2>&1
check "auto, slow: no partial-switches line in the report" sh -c "! grep -q 'context switches recorded over' '$TMP/slow.rep'"

# a merged trace keeps each recording's gate to its own processes
check_rc "merge: the gated and the slow recording merge (exit 0)" 0 "$ANA" merge "$TMP/a.gtt" "$TMP/slow.gtt" -o "$TMP/m.gtt"
"$ANA" report "$TMP/m.gtt" >"$TMP/m.rep" 2>&1
pid_a=$(meta pid "$TMP/a.gtt") pid_s=$(meta pid "$TMP/slow.gtt")
check "merge: the gated recording's threads have no on-CPU time from switches" \
	awk -v p="$pid_a" '$1 == p && $3 == "pingpong" { n++; if ($8 != "-") bad++ } END { exit !(n > 0 && !bad) }' "$TMP/m.rep"
check "merge: the slow recording's threads keep theirs" \
	awk -v p="$pid_s" '$1 == p && $3 == "pingpong" { n++; if ($8 !~ /^[0-9]+\.[0-9]+$/) bad++ } END { exit !(n > 0 && !bad) }' "$TMP/m.rep"
check "merge: the report says in which of the recordings" grep -q 'not recorded over [0-9.]* s in 1 of the 2 recordings merged here' "$TMP/m.rep"

# per task: every switch (the gate needs the per-CPU events)
check_rc "per task: records (exit 0)" 0 "$REC" -q --scope process -o "$TMP/pt.gtt" -- "$P/pingpong" 0.5 1
check "per task: meta switch_events on" test "$(meta switch_events "$TMP/pt.gtt")" = on

# usage
for bad in bogus auto,0 auto,x auto, on,5; do
	check_rc "--switch-events=$bad: usage error (64)" 64 "$REC" --switch-events="$bad" -- true
done

# under capture control: the gate works from the start of sampling; no switch outside capture
check_rc "delay: records (exit 0)" 0 "$REC" --delay 0.5 -o "$TMP/d.gtt" -- "$P/pingpong" 2 2
check "delay: the gate closed once sampling began" awk '$6 == 2 && $7 == 2 { f = 1 } END { exit !f }' \
	<("$CAT" "$TMP/d.gtt" switch_gate)
start_cap=$("$CAT" "$TMP/d.gtt" capture | awk '$4 == 0 && $6 == 1 { print $2; exit }')
check "delay: sampling started (a capture start record)" test -n "$start_cap"
check "delay: no switch before sampling started" \
	test "$("$CAT" "$TMP/d.gtt" switch | awk -v s="${start_cap:-0}" '$2 + 0 < s + 0' | wc -l)" -eq 0
check "delay: every switch record lies in an open stretch" switches_inside "$TMP/d.gtt"
check "delay: the summary says windows, not a share of the run" grep -q 'recorded only in windows while sampling' "$TMP/err"

# a ring window starts in the gate's state: closed, the fast program going on
check_rc "ring: records (exit 0)" 0 "$REC" -q --ring 1 -o "$TMP/r.gtt" -- "$P/pingpong" 2.5 2
"$CAT" "$TMP/r.gtt" switch_gate >"$TMP/r.gates"
check "ring: the window's first gate record is its start state, closed" awk 'NR == 1 { exit !($6 == 2 && $7 == 1) }' "$TMP/r.gates"
check "ring: every switch record of the window lies in an open stretch" switches_inside "$TMP/r.gtt"

# capture control: the switch events open when sampling starts; when they cannot (no file
# descriptor left: prlimit lowers gt-record's limit before SIGUSR1), sampling still starts and
# the trace closes the gate for good (reason 5, failed) with a note, instead of claiming switches
if command -v prlimit >/dev/null 2>&1; then
	# (built with ASan, the leak checker would need a file descriptor at exit: it is off here)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$REC" -q --capture-range=signal -o "$TMP/f.gtt" -- "$P/pingpong" 3 1 >/dev/null 2>"$TMP/f.err" & rp=$!
	sleep 0.7
	prlimit --pid "$rp" --nofile=3:3
	kill -USR1 "$rp"
	sleep 0.8
	kill -USR2 "$rp"
	wait "$rp"; rc=$?
	check "capture, events would not open: the recording ends well (exit $rc)" test "$rc" -eq 0
	"$CAT" "$TMP/f.gtt" switch_gate >"$TMP/f.gates"
	check "capture, events would not open: the last gate record is closed, reason failed ($(tail -1 "$TMP/f.gates"))" \
		awk 'END { exit !($6 == 2 && $7 == 5) }' "$TMP/f.gates"
	check "capture, events would not open: every switch record lies in an open stretch" switches_inside "$TMP/f.gtt"
	"$ANA" report "$TMP/f.gtt" >"$TMP/f.rep" 2>&1
	check "capture, events would not open: the report has the note" \
		grep -q 'switch gate: the context-switch events could not be opened again (Too many open files)' "$TMP/f.rep"
	check "capture, events would not open: samples were taken ($(grep -o '^samples: *[0-9]*' "$TMP/f.rep"))" \
		awk '$1 == "samples:" && $2 > 0 { ok = 1 } END { exit !ok }' "$TMP/f.rep"
else
	skip "capture, events would not open: prlimit not installed"
fi
