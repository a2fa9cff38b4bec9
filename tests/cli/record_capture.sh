#!/usr/bin/env bash
# record_capture.sh — gt-record's capture control on real processes: --delay, --capture-range=
# signal (two start/stop pairs, launch and per-task attach), --capture-range=nvtx:NAME against
# capture records a stand-in agent writes (tests/progs/fake_nvtx.c: the CUDA agent's side file
# format), --max-size (stops cleanly, says so, the command runs on), usage errors. Samples must
# lie inside the captured intervals, the side loops must pause outside them, and the report's
# duration line and health must count captured time only. No timing is asserted beyond what a
# loaded 2-core machine keeps (edges within a second, lengths within wide bounds).
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze P=$GT_TESTS/progs
SHOW=$GT_TESTS/test_rec_capture
[ -x "$REC" ] && [ -x "$SHOW" ] || { skip "gt-record or test_rec_capture not built"; exit 0; }

# gt-record's own capture records (pid 0) as "EVENT/SOURCE ..." in order
events() { awk '$1 == "capture" && $3 == 0 { printf "%s%s/%s", n++ ? " " : "", $4, $5 } END { print "" }' "$1"; }
# samples outside the pid-0 [start, stop] intervals (a stop missing: open to the end)
outside() {
	awk '$1 == "capture" && $3 == 0 { if ($4 == 1) { s[++n] = $2; e[n] = 1e30 } else if (n) e[n] = $2 }
	     $1 == "sample" { t[++m] = $2 }
	     END { bad = 0; for (i = 1; i <= m; i++) { ok = 0; for (j = 1; j <= n; j++) if (t[i] >= s[j] && t[i] <= e[j]) ok = 1; bad += !ok }
	           print bad }' "$1"
}
# samples inside the K-th pid-0 interval
in_interval() {
	awk -v k="$2" '$1 == "capture" && $3 == 0 { if ($4 == 1) { s[++n] = $2; e[n] = 1e30 } else if (n) e[n] = $2 }
	     $1 == "sample" { t[++m] = $2 }
	     END { c = 0; for (i = 1; i <= m; i++) if (t[i] >= s[k] && t[i] <= e[k]) c++; print c }' "$1"
}
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
# the report's intended-vs-received percentage
health_pct() { sed -n 's/^  total: .* (\([0-9.]*\)%)$/\1/p' "$1" | head -1; }

# ---- usage: one line each, exit 64 ----
usage_case() { # description, args...
	local d=$1; shift
	"$REC" "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	local rc=$? lines; lines=$(wc -l <"$TMP/u.err")
	if [ "$rc" -eq 64 ] && [ "$lines" -eq 1 ]; then pass "usage: $d"; else fail "usage: $d (exit $rc, $lines lines: $(head -c 200 "$TMP/u.err"))"; fi
}
usage_case "--capture-range=foo" --capture-range=foo -- true
usage_case "--capture-range=nvtx: without a name" --capture-range=nvtx: -- true
usage_case "--delay -1" --delay -1 -- true
usage_case "--max-size 10 (under 64K)" --max-size 10 -- true
usage_case "--max-size 1Q" --max-size 1Q -- true
usage_case "--ring 0" --ring 0 -- true
usage_case "--ring with --capture-range=signal (both want SIGUSR2)" --ring 2 --capture-range=signal -- true
usage_case "--ring with --max-size" --ring 2 --max-size 1M -- true
usage_case "--capture-range=nvtx with --no-cuda" --capture-range=nvtx:x --no-cuda -- true
usage_case "-d shorter than --delay" -d 1 --delay 2 -- true
usage_case "--delay with --dump" --dump -p $$ --delay 1
check "usage: --help lists the capture options" \
	bash -c "'$REC' --help | grep -q -- '--capture-range=nvtx:NAME' && '$REC' --help | grep -q -- '--ring SECONDS' && '$REC' --help | grep -q -- '--max-size SIZE' && '$REC' --help | grep -q -- '--delay SECONDS'"

# ---- nvtx without the agent: one line, exit 2, no trace left ----
GT_CUPTI_AGENT=$TMP/no-such-agent "$REC" -q -o "$TMP/na.gtt" --capture-range=nvtx:step -- true 2>"$TMP/na.err"
rc=$?
check "nvtx: without the CUDA agent refused (exit $rc, $(head -c 160 "$TMP/na.err"))" \
	bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/na.err') -eq 1 ] && grep -q 'needs the CUDA agent' '$TMP/na.err'"
check "nvtx: ... and leaves no trace file" test ! -e "$TMP/na.gtt"

# ---- --delay ----
"$REC" -q -o "$TMP/d.gtt" --delay 1 -- "$P/calltree" 3 2>"$TMP/d.err"
check "delay: exit 0" test $? -eq 0
"$SHOW" show "$TMP/d.gtt" >"$TMP/d.show"
check "delay: a stop (delay) at the start, then a start (delay) ($(events "$TMP/d.show"))" test "$(events "$TMP/d.show")" = "2/3 1/3"
check "delay: meta capture says the rule" grep -q '^meta capture sampling starts after 1 s$' "$TMP/d.show"
n=$(val samples "$TMP/d.show")
check "delay: samples after the start ($n), none before ($(outside "$TMP/d.show"))" \
	bash -c "[ ${n:-0} -gt 20 ] && [ $(outside "$TMP/d.show") -eq 0 ]"
cap=$(val captured_ns "$TMP/d.show")
start=$(awk '$1 == "meta" && $2 == "start_ns" { print $3 }' "$TMP/d.show")
first_on=$(awk '$1 == "capture" && $3 == 0 && $4 == 1 { print $2; exit }' "$TMP/d.show")
check "delay: sampling started 1 s after the recording (+$(( (first_on - start) / 1000000 )) ms)" \
	awk -v d=$((first_on - start)) 'BEGIN { exit !(d >= 0.95e9 && d <= 1.6e9) }'
check "delay: about 2 of 3 s captured (${cap} ns)" awk -v c="${cap:-0}" 'BEGIN { exit !(c >= 1.2e9 && c <= 2.6e9) }'
if [ -x "$ANA" ]; then
	"$ANA" report "$TMP/d.gtt" >"$TMP/d.rep" 2>&1
	check "delay: report's duration line: captured, the run's length, the rule ($(grep '^duration:' "$TMP/d.rep"))" \
		grep -qE '^duration: +[0-9.]+ s captured \(1 interval\) of a [0-9.]+ s run; capture: sampling starts after 1 s' "$TMP/d.rep"
	pct=$(health_pct "$TMP/d.rep")
	check "delay: health counts captured time only: received/intended ${pct:-?}% (>= 80)" \
		awk -v p="${pct:-0}" 'BEGIN { exit !(p >= 80) }'
fi

# ---- --capture-range=signal: two start/stop pairs ----
"$REC" -q -o "$TMP/s.gtt" --capture-range=signal -- "$P/calltree" 6 2>"$TMP/s.err" & rpid=$!
sleep 1; kill -USR1 $rpid; sleep 1; kill -USR2 $rpid; sleep 1.3; kill -USR1 $rpid; sleep 1; kill -USR2 $rpid
wait $rpid
check "signal: exit 0 (the command's)" test $? -eq 0
"$SHOW" show "$TMP/s.gtt" >"$TMP/s.show"
check "signal: stop at the start, then start/stop twice ($(events "$TMP/s.show"))" \
	test "$(events "$TMP/s.show")" = "2/1 1/1 2/1 1/1 2/1"
check "signal: no sample outside the captured intervals ($(outside "$TMP/s.show"))" test "$(outside "$TMP/s.show")" -eq 0
a=$(in_interval "$TMP/s.show" 1) b=$(in_interval "$TMP/s.show" 2)
check "signal: samples in both intervals ($a, $b)" bash -c "[ ${a:-0} -gt 10 ] && [ ${b:-0} -gt 10 ]"
cap=$(val captured_ns "$TMP/s.show")
check "signal: about 2 s captured of ~6 ($cap ns)" awk -v c="${cap:-0}" 'BEGIN { exit !(c >= 1.4e9 && c <= 3.0e9) }'
# the /proc loop is paused outside capture: no reading between the first stop (plus a tick)
# and the second start
gap=$(awk '$1 == "capture" && $3 == 0 { ev[++n] = $2 } $1 == "thread_cpu" { t[++m] = $2 }
	END { c = 0; for (i = 1; i <= m; i++) if (t[i] > ev[3] + 150e6 && t[i] < ev[4]) c++; print c }' "$TMP/s.show")
check "signal: no /proc reading while sampling was off ($gap)" test "${gap:-1}" -eq 0
whole=$(awk '$1 == "ticks_whole" && $2 == 4 { print $3; exit }' "$TMP/s.show")
check "signal: the /proc loop's intended ticks cover captured time only (${whole:-none}, ~20 for 2 s at 10 Hz)" \
	bash -c "[ -n '$whole' ] && [ '$whole' -le 40 ]"
if [ -x "$ANA" ]; then
	"$ANA" report "$TMP/s.gtt" >"$TMP/s.rep" 2>&1
	check "signal: report says 2 intervals and the rule ($(grep '^duration:' "$TMP/s.rep"))" \
		grep -qE '^duration: .* captured \(2 intervals\) of a .* capture: SIGUSR1 starts sampling, SIGUSR2 stops it' "$TMP/s.rep"
	pct=$(health_pct "$TMP/s.rep")
	check "signal: health counts captured time only: received/intended ${pct:-?}% (>= 80)" \
		awk -v p="${pct:-0}" 'BEGIN { exit !(p >= 80) }'
fi

# per-task events of an attached process: the per-thread sampling events switch too
"$P/calltree" 4 & tpid=$!
sleep 0.3
"$REC" -q --scope process -o "$TMP/a.gtt" -p $tpid --capture-range=signal -d 2.5 2>"$TMP/a.err" & rpid=$!
sleep 0.8; kill -USR1 $rpid; sleep 1; kill -USR2 $rpid
wait $rpid; arc=$?
wait $tpid
check "signal, attach per task: exit 0 ($arc)" test "$arc" -eq 0
"$SHOW" show "$TMP/a.gtt" >"$TMP/a.show"
n=$(val samples "$TMP/a.show")
check "signal, attach per task: samples ($n) only in the interval ($(events "$TMP/a.show"); $(outside "$TMP/a.show") outside)" \
	bash -c "[ ${n:-0} -gt 10 ] && [ $(outside "$TMP/a.show") -eq 0 ] && [ '$(events "$TMP/a.show")' = '2/1 1/1 2/1' ]"

# ---- --capture-range=nvtx:NAME: ranges reported by a stand-in agent ----
GT_CUPTI_AGENT=/bin/true "$REC" -q -o "$TMP/n.gtt" --capture-range=nvtx:step -- "$P/fake_nvtx" step 2 1.5 1.5 \
	>"$TMP/n.out" 2>"$TMP/n.err"
check "nvtx: exit 0" test $? -eq 0
"$SHOW" show "$TMP/n.gtt" >"$TMP/n.show"
check "nvtx: gt-record switched with the ranges ($(events "$TMP/n.show"))" test "$(events "$TMP/n.show")" = "2/2 1/2 2/2 1/2 2/2"
check "nvtx: the agent's range edges are in the trace (pid != 0, name step)" \
	test "$(awk '$1 == "capture" && $3 != 0 && $6 == "step"' "$TMP/n.show" | wc -l)" -eq 4
# each of gt-record's edges follows the agent's (the latency docs/RECORD.md describes), by < 1 s
lat=$(awk '$1 == "capture" && $6 == "step" { if ($3 == 0) g[$4, ++ng[$4]] = $2; else a[$4, ++na[$4]] = $2 }
	END { worst = -1; for (ev = 1; ev <= 2; ev++) for (i = 1; i <= 2; i++) { d = g[ev, i + (ev == 2)] - a[ev, i];
	      if (d < 0 || d > 1e9) { print "bad"; exit } if (d > worst) worst = d } print worst }' "$TMP/n.show")
check "nvtx: sampling switched within 1 s after each range edge (worst ${lat} ns)" test "$lat" != bad
check "nvtx: no sample outside the captured intervals ($(outside "$TMP/n.show"))" test "$(outside "$TMP/n.show")" -eq 0
if [ -x "$ANA" ]; then
	"$ANA" fold "$TMP/n.gtt" >"$TMP/n.fold" 2>/dev/null
	ins=$(awk '/inside_range/ { s += $NF } END { print s + 0 }' "$TMP/n.fold")
	out=$(awk '/outside_range/ { s += $NF } END { print s + 0 }' "$TMP/n.fold")
	check "nvtx: samples inside the ranges ($ins) outnumber those at their edges ($out) 5 to 1" \
		bash -c "[ $ins -gt 20 ] && [ $ins -ge $((5 * out)) ]"
	"$ANA" report "$TMP/n.gtt" >"$TMP/n.rep" 2>&1
	check "nvtx: report says 2 intervals inside NVTX ranges named step" \
		grep -qE '^duration: .* captured \(2 intervals\) .* capture: sampling inside NVTX ranges named "step"' "$TMP/n.rep"
fi

# ---- --max-size: stops cleanly and says so; the command runs on ----
t0=$(date +%s%N)
"$REC" -F 999 --no-archive --max-size 1M -o "$TMP/m.gtt" -- "$P/noisy_stack" 3 2>"$TMP/m.err"
rc=$?; t1=$(date +%s%N)
check "max-size: exit 0, the command's status ($rc)" test "$rc" -eq 0
check "max-size: says the size was reached ($(grep -m1 max-size "$TMP/m.err"))" grep -q 'reached --max-size 1.0 MiB' "$TMP/m.err"
check "max-size: says the command runs on" grep -q 'the command keeps running, unrecorded' "$TMP/m.err"
check "max-size: gt-record waited for the command ($(( (t1 - t0) / 1000000 )) ms >= 2500)" test $(( (t1 - t0) / 1000000 )) -ge 2500
"$SHOW" show "$TMP/m.gtt" >"$TMP/m.show"
size=$(stat -c %s "$TMP/m.gtt")
check "max-size: the trace is about SIZE ($size bytes: 0.6-1.3 MiB)" bash -c "[ $size -ge 629145 ] && [ $size -le 1363148 ]"
check "max-size: whole, END reason 6 with its sample count" \
	bash -c "[ $(val bad "$TMP/m.show") -eq 0 ] && [ $(val truncated "$TMP/m.show") -eq 0 ] && grep -q '^end 6 $(val samples "$TMP/m.show")$' '$TMP/m.show'"
check "max-size: a stop record (source max-size) ($(events "$TMP/m.show"))" test "$(events "$TMP/m.show")" = "2/4"
if [ -x "$ANA" ]; then
	"$ANA" report "$TMP/m.gtt" >"$TMP/m.rep" 2>&1
	check "max-size: report says why it ended" grep -q '^duration: .*(--max-size reached)' "$TMP/m.rep"
fi
"$P/noisy_stack" 3 & tpid=$!
sleep 0.2
check_rc "max-size, attach: exit 0" 0 "$REC" -q -F 999 --no-archive --max-size 1M -o "$TMP/ma.gtt" -p $tpid
wait $tpid
"$SHOW" show "$TMP/ma.gtt" >"$TMP/ma.show"
check "max-size, attach: END reason 6" grep -q '^end 6 ' "$TMP/ma.show"
