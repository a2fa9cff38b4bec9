#!/usr/bin/env bash
# job_merge.sh — one clock inside a time namespace, and gt-analyze merge. One process is
# recorded twice at once: by a gt-record in the root time namespace (a.gtt) and by one inside
# `unshare --time --monotonic 4` (b.gtt), whose CLOCK_MONOTONIC is 4 s ahead while perf_event
# stamps stay on the host's clock. The process's exit (perf's exact task event) is the shared
# truth: b.gtt must have it 4 s later than a.gtt (within 1 ms), b.gtt's own clock reads
# (/proc thread stats, clock pairs) must agree with its perf records, and merged — through the
# one kernel clock, and through realtime pairs alone — both exits must fall within 1 ms, with
# the colliding pids kept apart. Then the output policy, bad inputs, 1.0 + 1.1, and every
# command on the merged trace.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze CAT=$GT_ROOT/${BUILD:-build}/bench/gtt_cat
PROG=$GT_TESTS/progs/known_tree
[ -x "$REC" ] && [ -x "$ANA" ] && [ -x "$CAT" ] && [ -x "$PROG" ] || { skip "gt-record, gt-analyze, gtt_cat or known_tree not built"; exit 0; }
if ! unshare --time --fork --monotonic 4 true 2>/dev/null; then
	skip "time namespaces: unshare --time needs root and Linux >= 5.6"
	exit 0
fi
absd() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.0f", d }'; }

"$PROG" 3 & P=$!
sleep 0.3
"$REC" -q -p "$P" -o "$TMP/a.gtt" 2>"$TMP/a.err" & RA=$!
unshare --time --fork --monotonic 4 "$REC" -q -p "$P" -o "$TMP/b.gtt" 2>"$TMP/b.err"
wait "$RA"; wait "$P"
check "both recordings made (attach, target exit)" test -s "$TMP/a.gtt" -a -s "$TMP/b.gtt"
"$CAT" "$TMP/a.gtt" >"$TMP/a.txt"; "$CAT" "$TMP/b.gtt" >"$TMP/b.txt"
meta() { awk -v k="$1" '$1 == "meta" && $2 == k { print $3 }' "$2"; }
check "root namespace: clock_perf_offset_ns 0 ($(meta clock_perf_offset_ns "$TMP/a.txt"))" \
	test "$(meta clock_perf_offset_ns "$TMP/a.txt")" = 0
check "time namespace: timens_monotonic_offset_ns 4000000000 ($(meta timens_monotonic_offset_ns "$TMP/b.txt"))" \
	test "$(meta timens_monotonic_offset_ns "$TMP/b.txt")" = 4000000000
check "time namespace: perf's records moved by 4 s (clock_perf_offset_ns $(meta clock_perf_offset_ns "$TMP/b.txt"))" \
	test "$(meta clock_perf_offset_ns "$TMP/b.txt")" = 4000000000
exit_at() { awk -v p="$2" '$1 == "process" && $4 == p && $6 == 3 { print $2; exit }' "$1"; }
ea=$(exit_at "$TMP/a.txt" "$P"); eb=$(exit_at "$TMP/b.txt" "$P")
check "both traces hold the target's exit (a ${ea:-none}, b ${eb:-none})" test -n "$ea" -a -n "$eb"
d=$(absd "$((eb - ea))" 4000000000)
check "b's clock is a's + 4 s: the exit 4 s later in b, within 1 ms (off by $d ns)" test "${d:-9999999999}" -lt 1000000
# the recorder's own reads (thread stats, clock pairs) on the same clock as perf's records
last_cpu=$(awk -v p="$P" '$1 == "thread_cpu" && $4 == p { t = $2 } END { print t }' "$TMP/b.txt")
d=$(absd "${last_cpu:-0}" "$eb")
check "b: the target's last /proc stat read lies within 1 s of its perf exit ($d ns)" test "$d" -lt 1000000000
end_pair=$(awk '$1 == "clock" && $8 == 3 { print $2 }' "$TMP/b.txt")
check "b: the end clock pair comes after the exit, within 2 s" \
	test -n "$end_pair" -a "${end_pair:-0}" -ge "$eb" -a "$((${end_pair:-0} - eb))" -lt 2000000000
check "b: start, end clock pairs with host and boot id ($(awk '$1 == "clock"' "$TMP/b.txt" | wc -l) pairs)" \
	sh -c "awk '\$1 == \"clock\" && \$8 == 1 && \$9 != \"\" && \$10 != \"\"' '$TMP/b.txt' | grep -q . && test -n '$end_pair'"

for how in kernel realtime; do
	opt=; [ $how = realtime ] && opt=--by-realtime
	check_rc "merge ($how) exits 0" 0 "$ANA" merge $opt "$TMP/a.gtt" "$TMP/b.gtt" -o "$TMP/m_$how.gtt"
	cp "$TMP/out" "$TMP/m_$how.out"
	"$CAT" "$TMP/m_$how.gtt" >"$TMP/m_$how.txt"
	ma=$(exit_at "$TMP/m_$how.txt" "$P"); mb=$(exit_at "$TMP/m_$how.txt" "$((P + 10000000))")
	check "merge ($how): b's pids kept apart as pid + 10^7 (${mb:+found})" test -n "$mb" -a -n "$ma"
	d=$(absd "${ma:-0}" "${mb:-0}")
	check "merge ($how): the two recordings of one exit fall within 1 ms ($d ns)" test "$d" -lt 1000000
	check "merge ($how): a's times untouched" test "$ma" = "$ea"
done
check "merge (kernel): said to be exact through one kernel clock" grep -q 'same boot: one kernel clock, time namespace' "$TMP/m_kernel.out"
err_us=$(sed -n 's/^estimated alignment error: \([0-9]*\) us.*/\1/p' "$TMP/m_realtime.out")
check "merge (realtime): the error is stated (${err_us:-none} us) and is under 1 ms" test -n "$err_us" -a "${err_us:-9999}" -lt 1000
if [ -z "$err_us" ] || [ "$err_us" -ge 1000 ]; then
	# why (CI got 28 000 us once, with the exits 1.3 us apart): each trace's clock pairs
	# (mono, realtime, uncertainty, kind) and merge's own words
	for x in a b; do awk -v x="$x" '$1 == "clock" { print "    " x ": " $0 }' "$TMP/$x.txt" | head -12; done
	sed 's/^/    merge: /' "$TMP/m_realtime.out" | head -12
fi
check "merge (realtime): ... and says the hosts' realtime disagreement cannot be known" grep -q 'cannot know' "$TMP/m_realtime.out"
check "merged meta: merge.1.shift_ns -4000000000" grep -q '^meta merge.1.shift_ns -4000000000$' "$TMP/m_kernel.txt"

# every command reads the merged trace
check_rc "report reads the merged trace" 0 "$ANA" report "$TMP/m_kernel.gtt"
check "... and shows both processes" sh -c "grep -q ' $P ' '$TMP/out' && grep -q ' $((P + 10000000)) ' '$TMP/out'"
check_rc "fold reads it" 0 "$ANA" fold "$TMP/m_kernel.gtt"
check "... kt_alpha from both recordings" test "$(grep -c kt_alpha "$TMP/out")" -ge 1
check_rc "export chrome reads it" 0 "$ANA" export --format chrome "$TMP/m_kernel.gtt" -o "$TMP/m.json"
if [ -x "$GT_BIN/gt-render" ]; then
	check_rc "gt-render timeline reads it" 0 "$GT_BIN/gt-render" timeline "$TMP/m_kernel.gtt" -o "$TMP/m.svg"
	check "... one row group per recording of the process" \
		sh -c "grep -q 'pid $P ' '$TMP/m.svg' && grep -q 'pid $((P + 10000000)) ' '$TMP/m.svg'"
fi
check_rc "check against itself passes" 0 "$ANA" check --golden "$TMP/m_kernel.gtt" "$TMP/m_kernel.gtt"

# output policy and bad input
before=$(md5sum <"$TMP/m_kernel.gtt")
check_rc "an existing -o is refused (exit 2)" 2 "$ANA" merge "$TMP/a.gtt" "$TMP/b.gtt" -o "$TMP/m_kernel.gtt"
check "... with one line saying --force" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q -- --force '$TMP/err'"
check "... and the file is untouched" test "$(md5sum <"$TMP/m_kernel.gtt")" = "$before"
check_rc "--force replaces it" 0 "$ANA" merge --force "$TMP/a.gtt" "$TMP/b.gtt" -o "$TMP/m_kernel.gtt"
check_rc "--force never writes over an input" 2 "$ANA" merge --force "$TMP/a.gtt" "$TMP/b.gtt" -o "$TMP/a.gtt"
check "... which stays whole" test "$("$CAT" "$TMP/a.gtt" | wc -l)" = "$(wc -l <"$TMP/a.txt")"
check_rc "one input: usage error (64)" 64 "$ANA" merge "$TMP/a.gtt" -o "$TMP/x.gtt"
check_rc "no -o: usage error (64)" 64 "$ANA" merge "$TMP/a.gtt" "$TMP/b.gtt"
echo "not a trace" >"$TMP/bad.gtt"
check_rc "a file that is not a trace: exit 2" 2 "$ANA" merge "$TMP/a.gtt" "$TMP/bad.gtt" -o "$TMP/x.gtt"
check "... one line naming it, no output left" sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q bad.gtt '$TMP/err' && test ! -e '$TMP/x.gtt' && ! ls '$TMP'/x.gtt.merge-* 2>/dev/null"
check_rc "a merged trace is not merged again: exit 2" 2 "$ANA" merge "$TMP/m_kernel.gtt" "$TMP/a.gtt" -o "$TMP/x.gtt"

# format minors: a 1.0 trace (meta pair only) with a 1.1 one
OLD=$GT_ROOT/testdata/golden/v1.0/pipeline_cpu.gtt
if [ -f "$OLD" ]; then
	check_rc "1.0 + 1.1 merge" 0 "$ANA" merge "$OLD" "$TMP/a.gtt" -o "$TMP/old.gtt"
	check "... the 1.0 pair's uncertainty is said to be unrecorded" grep -q 'unrecorded uncertainty' "$TMP/out"
	check_rc "... and the result reports" 0 "$ANA" report "$TMP/old.gtt"
else
	skip "testdata/golden/v1.0/pipeline_cpu.gtt missing"
fi
