#!/usr/bin/env bash
# record_stall.sh — the stall watch of system-wide sampling (record/perf_sampler.c,
# rec_perf_watch): a CPU that is busy but whose cpu-clock event stopped delivering samples (seen
# on this VM: one CPU's timer went quiet for good, nothing lost or throttled, and a test's
# profile was 90 % short) is found within two of its windows (0.25 s at 199 Hz), its event switched off and on again, and
# the trace says so in a health note; a healthy recording, and sampling switched off on purpose
# (capture control), get no such note. The stall is made with GT_RECORD_TEST_STALL=CPU:SECONDS,
# which stops that CPU's event as the kernel did.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze P=$GT_TESTS/progs
for t in "$REC" "$ANA" "$P/calltree"; do
	[ -x "$t" ] || { skip "stall: $(basename "$t") not built"; exit 0; }
done
command -v taskset >/dev/null || { skip "stall: no taskset"; exit 0; }
cpu=$(awk '/^cpu[0-9]/ { c = substr($1, 4) } END { print c }' /proc/stat)
[ "${cpu:-0}" -ge 1 ] || { skip "stall: one CPU only"; exit 0; }
if ! "$REC" -q --scope system -o "$TMP/probe.gtt" -- true 2>"$TMP/probe.err"; then
	skip "stall: system-wide sampling not possible here ($(head -1 "$TMP/probe.err"))"
	exit 0
fi
# "total: 983 intended, 698 received (71.0%)" -> 71
ratio() { sed -n 's/^  total: .* (\([0-9]*\)\.[0-9]%)$/\1/p' "$1" | head -1; }
stall_notes() { grep -c "note (perf sampler): CPU [0-9]* delivered .* re-armed" "$1"; }

# a busy program on the last CPU for 5 s; that CPU's event stopped after 0.5 s
GT_RECORD_TEST_STALL=$cpu:0.5 "$REC" -q -F 199 --scope system -o "$TMP/st.gtt" -- taskset -c "$cpu" "$P/calltree" 5 2>"$TMP/rec.err"
"$ANA" report "$TMP/st.gtt" >"$TMP/st.rep" 2>&1
r=$(ratio "$TMP/st.rep")
check "stalled CPU $cpu: one note names it and says it was re-armed ($(grep -o 'CPU [0-9]* delivered [0-9]* samples' "$TMP/st.rep" | head -1))" \
	grep -q "note (perf sampler): CPU $cpu delivered .* re-armed" "$TMP/st.rep"
check "stalled CPU $cpu: re-armed once, not again and again ($(stall_notes "$TMP/st.rep") notes)" test "$(stall_notes "$TMP/st.rep")" = 1
# stopped from 0.5 s until the end of the watch's next window or the one after (<= 0.5 s): about
# 90 % arrive; without the watch, 10 % (the first half second)
check "stalled CPU $cpu: sampling came back: ${r:-?} % of the intended samples arrived (>= 70)" test "${r:-0}" -ge 70
check "stalled CPU $cpu: the report warns that samples are missing (${r:-?} % arrived)" \
	grep -Eq "WARNING: (only .* of the intended samples arrived.*notes of CPUs whose sampling stopped|a CPU's sampling stopped on its own)" "$TMP/st.rep"

# the same without a stall: no note, every sample
"$REC" -q -F 199 --scope system -o "$TMP/ok.gtt" -- taskset -c "$cpu" "$P/calltree" 3 2>/dev/null
"$ANA" report "$TMP/ok.gtt" >"$TMP/ok.rep" 2>&1
r=$(ratio "$TMP/ok.rep")
check "healthy recording: no stall note ($(stall_notes "$TMP/ok.rep"))" test "$(stall_notes "$TMP/ok.rep")" = 0
check "healthy recording: no warning of a stopped CPU" sh -c "! grep -q 'sampling stopped' '$TMP/ok.rep'"
check "healthy recording: ${r:-?} % of the intended samples (>= 90)" test "${r:-0}" -ge 90

# sampling off on purpose (a signal capture range never started) while the CPU is busy: nothing
# to judge, no note
GT_RECORD_TEST_STALL=$cpu:0.2 "$REC" -q -F 199 --scope system --capture-range=signal -o "$TMP/off.gtt" -- \
	taskset -c "$cpu" "$P/calltree" 3 2>/dev/null
"$ANA" report "$TMP/off.gtt" >"$TMP/off.rep" 2>&1
check "sampling switched off by capture control: no stall note ($(stall_notes "$TMP/off.rep"))" test "$(stall_notes "$TMP/off.rep")" = 0
