#!/usr/bin/env bash
# record_capture_ring.sh — gt-record --ring SECONDS (flight recorder with its ring on disk) on
# real processes: the window written at exit, on SIGUSR2 (twice, while recording goes on) and on
# Ctrl-C (SIGINT); a recorder killed with SIGKILL leaves FILE holding its last complete window,
# readable and self-contained (definitions replayed), and FILE.ring after it; a later ring run
# keeps FILE.ring as FILE.ring.old. Window lengths are exact by construction (the copy cuts at
# the record); only the recording's own length is timing, with wide bounds.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze P=$GT_TESTS/progs
SHOW=$GT_TESTS/test_rec_capture
[ -x "$REC" ] && [ -x "$SHOW" ] || { skip "gt-record or test_rec_capture not built"; exit 0; }
events() { awk '$1 == "capture" && $3 == 0 { printf "%s%s/%s", n++ ? " " : "", $4, $5 } END { print "" }' "$1"; }
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
# a window file: whole, every sample in [start, stop] of its capture records, END's sample count
# right, LEN ns captured exactly (a window is cut at the record)
window_ok() { # description, show file, END reason, window ns
	local d=$1 f=$2 reason=$3 len=$4
	local n; n=$(val samples "$f")
	local s e; s=$(awk '$1 == "capture" && $3 == 0 && $4 == 1 { print $2; exit }' "$f")
	e=$(awk '$1 == "capture" && $3 == 0 && $4 == 2 { print $2 }' "$f" | tail -1)
	local early; early=$(awk -v s="$s" -v e="$e" '$1 == "sample" && ($2 < s || $2 > e) { c++ } END { print c + 0 }' "$f")
	check "$d: whole (bad $(val bad "$f"), truncated $(val truncated "$f"))" \
		bash -c "[ '$(val bad "$f")' = 0 ] && [ '$(val truncated "$f")' = 0 ]"
	check "$d: capture records say the window ($(events "$f"))" test "$(events "$f")" = "1/5 2/5"
	check "$d: $n samples, all inside the window ($early outside)" bash -c "[ ${n:-0} -gt 20 ] && [ $early -eq 0 ]"
	check "$d: END reason $reason counts them" grep -q "^end $reason $n\$" "$f"
	check "$d: it holds exactly the last $((len / 1000000000)) s ($(val captured_ns "$f") ns)" test "$(val captured_ns "$f")" = "$len"
	check "$d: with the thread's name and the run's start" \
		bash -c "grep -q '^thread .* calltree$' '$f' && grep -q '^meta run_start_ns [1-9]' '$f'"
}

# ---- at exit ----
cd "$TMP" || exit 1
"$REC" -q -o r.gtt --ring 2 -- "$P/calltree" 5 2>e.err
check "exit: exit 0" test $? -eq 0
"$SHOW" show r.gtt >r.show
window_ok "exit" r.show 1 2000000000
check "exit: no segment or temporary file left ($(ls | grep -c '^r\.gtt.'))" test "$(ls | grep -c '^r\.gtt.')" -eq 0
if [ -x "$ANA" ]; then
	"$ANA" report r.gtt >r.rep 2>&1
	check "exit: report's duration line: 2 s captured of the ~5 s run ($(grep '^duration:' r.rep))" \
		grep -qE '^duration: +2\.000 s captured \(1 interval\) of a [4-9]\.[0-9]+ s run; capture: ring: the last 2 s kept' r.rep
	check "exit: the window symbolizes (its archive): calltree's functions" grep -q 'spin (calltree)' r.rep
fi

# ---- SIGUSR2 twice while recording goes on, then Ctrl-C ----
"$REC" -o u.gtt --ring 2 -- "$P/calltree" 30 2>u.err & rpid=$!
sleep 3.5; kill -USR2 $rpid; sleep 1.5; kill -USR2 $rpid; sleep 1; kill -INT $rpid
wait $rpid; rc=$?
check "Ctrl-C: exit 130 (the command got SIGINT after its second)" test "$rc" -eq 130
check "SIGUSR2: said where each window went" \
	bash -c "grep -q 'SIGUSR2: the last 2.0 s written to u.1.gtt' u.err && grep -q 'SIGUSR2: the last 2.0 s written to u.2.gtt' u.err"
for k in 1 2; do
	"$SHOW" show u.$k.gtt >u$k.show
	window_ok "SIGUSR2 window $k" u$k.show 7 2000000000
done
e1=$(awk '$1 == "capture" && $3 == 0 && $4 == 2 { print $2 }' u1.show)
e2=$(awk '$1 == "capture" && $3 == 0 && $4 == 2 { print $2 }' u2.show)
check "SIGUSR2: the second window ends about 1.5 s after the first ($(( (e2 - e1) / 1000000 )) ms)" \
	awk -v d=$((e2 - e1)) 'BEGIN { exit !(d >= 1.2e9 && d <= 2.5e9) }'
"$SHOW" show u.gtt >u.show
window_ok "Ctrl-C window" u.show 3 2000000000
check "Ctrl-C: no segment left" test ! -e u.gtt.ring

# ---- SIGKILL: FILE is the last complete window ----
# segments begin at 2 and 4 s; the trace is flushed every second, so the one begun at 4 s has
# data on disk by 5.6 s
"$REC" -q -o k.gtt --ring 2 -- "$P/calltree" 30 2>k.err & rpid=$!
sleep 5.6
cpid=$(pgrep -P $rpid | head -1)
kill -KILL $rpid; wait $rpid 2>/dev/null
[ -n "$cpid" ] && kill -KILL "$cpid" 2>/dev/null
"$SHOW" show k.gtt >k.show
check "SIGKILL: FILE is whole (bad $(val bad k.show), truncated $(val truncated k.show))" \
	bash -c "[ '$(val bad k.show)' = 0 ] && [ '$(val truncated k.show)' = 0 ]"
s=$(awk '$1 == "capture" && $3 == 0 && $4 == 1 { print $2; exit }' k.show)
last=$(val last_ns k.show)
check "SIGKILL: FILE says from when it holds data (a start, source ring: $(events k.show))" test "$(events k.show)" = "1/5"
check "SIGKILL: ... a complete window of ~2 s ($(( (last - s) / 1000000 )) ms)" \
	awk -v d=$((last - s)) 'BEGIN { exit !(d >= 1.6e9 && d <= 2.6e9) }'
check "SIGKILL: its samples ($(val samples k.show)) and definitions: thread name, run start, its own start" \
	bash -c "[ $(val samples k.show) -gt 10 ] && grep -q '^thread .* calltree$' k.show && grep -q '^meta run_start_ns [1-9]' k.show && grep -q '^meta start_ns $s\$' k.show"
"$SHOW" show k.gtt.ring >kr.show 2>/dev/null
check "SIGKILL: FILE.ring holds what came after (readable, $(val samples kr.show) samples)" \
	bash -c "[ '$(val bad kr.show)' = 0 ] && [ '$(val samples kr.show)' -gt 0 ]"
if [ -x "$ANA" ]; then
	"$ANA" report k.gtt >k.rep 2>&1
	arc=$?
	check "SIGKILL: gt-analyze reads it (exit $arc): ~2 s captured, calltree's functions named" \
		bash -c "[ $arc -le 1 ] && grep -qE '^duration: +[12]\.[0-9]+ s captured \(1 interval\)' k.rep && grep -q 'spin (calltree)' k.rep"
fi

# ---- a later ring run keeps what a killed one left ----
"$REC" -o k.gtt --ring 1 -- "$P/calltree" 1.5 2>k2.err
check "leftover: exit 0" test $? -eq 0
check "leftover: FILE.ring kept as FILE.ring.old, and said so" \
	bash -c "[ -f k.gtt.ring.old ] && [ ! -e k.gtt.ring ] && grep -q 'k.gtt.ring.*kept as k.gtt.ring.old' k2.err"
check "leftover: the killed run's FILE kept as FILE.old" test -f k.gtt.old
