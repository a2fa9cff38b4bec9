# analyze_health.sh — the report's sampler-health section against what really happened: an
# undisturbed recording gets >= 95% of its intended samples (its on-CPU time x rate, so also
# on a loaded machine); a recorder stopped (SIGSTOP) for one second shows a lag window of about
# one second at the right time (±100 ms; ±250 ms when the recorder is built with ASan).
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record A=$GT_BIN/gt-analyze PROG=$GT_TESTS/progs/known_tree
[ -x "$REC" ] || { skip "gt-record not built"; exit 0; }
[ -x "$PROG" ] || { skip "tests/progs/known_tree not built"; exit 0; }
mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
# ±100 ms is the target; a recorder built with ASan catches up more slowly after SIGCONT
tol=0.1
if ldd "$REC" 2>/dev/null | grep -q libasan; then tol=0.25; fi

if "$REC" -q -F 499 -o "$TMP/ok.gtt" -- "$PROG" 1.5 >"$TMP/rec.out" 2>&1; then
	"$A" report "$TMP/ok.gtt" >"$TMP/ok.report" 2>/dev/null
	read -r want got < <(sed -nE 's/^  total: ([0-9]+) intended, ([0-9]+) received.*/\1 \2/p' "$TMP/ok.report")
	# intended = the thread's measured on-CPU time (context switches) x rate, so a busy machine
	# lowers both numbers: no allowance for load (a time slice the kernel timer missed is a
	# real shortfall the report must show)
	if [ -n "$want" ] && [ "$want" -gt 20 ] && [ $((got * 100)) -ge $((want * 95)) ]; then
		pass "undisturbed: $got of $want intended samples received"
	else
		fail "undisturbed: '${got:-?}' of '${want:-?}' intended samples received (want >= 95% of > 20)"
		sed -n '/^Sampler health/,$p' "$TMP/ok.report"
	fi
	check "undisturbed: no under-sampling warning" sh -c "! grep -q 'WARNING: only' '$TMP/ok.report'"
else
	fail "gt-record failed: $(tail -3 "$TMP/rec.out")"
fi

# stop the recorder for one second in the middle of a 3 s recording at 999 Hz
"$REC" -q -F 999 -o "$TMP/stop.gtt" -- "$PROG" 3 >"$TMP/rec.out" 2>&1 &
rp=$!
sleep 0.8
t_stop=$(mono)
kill -STOP "$rp"
sleep 1
t_cont=$(mono)
kill -CONT "$rp"
wait "$rp"
"$A" report "$TMP/stop.gtt" >"$TMP/stop.report" 2>/dev/null
start=$(sed -nE 's/^start: +([0-9]+\.[0-9]+) s CLOCK_MONOTONIC/\1/p' "$TMP/stop.report")
# the perf sampler's lag window: "+A s .. +B s  LEN  perf sampler ..."
win=$(grep -E '^    \+[0-9.]+ s \.\. \+[0-9.]+ s .*perf sampler' "$TMP/stop.report" |
	awk '{ a = substr($1, 2); b = substr($4, 2); if (b - a > best) { best = b - a; w = a " " b } } END { print w }')
if [ -n "$start" ] && [ -n "$win" ]; then
	read -r ws we <<<"$win"
	if awk -v s="$start" -v ws="$ws" -v we="$we" -v ts="$t_stop" -v tc="$t_cont" -v tol="$tol" 'BEGIN {
		es = ts / 1e9 - s; ec = tc / 1e9 - s; d1 = ws - es; d2 = we - ec
		if (d1 < 0) d1 = -d1; if (d2 < 0) d2 = -d2
		printf "window +%.3f..+%.3f s, recorder stopped +%.3f..+%.3f s\n", ws, we, es, ec
		exit !(d1 <= tol && d2 <= tol) }' >"$TMP/cmp"; then
		pass "SIGSTOP for 1 s: lag window at the right time: $(cat "$TMP/cmp")"
	else
		fail "SIGSTOP for 1 s: $(cat "$TMP/cmp")"
	fi
else
	fail "SIGSTOP for 1 s: no perf sampler lag window in the report (start '$start')"
	sed -n '/^Sampler health/,$p' "$TMP/stop.report"
fi
