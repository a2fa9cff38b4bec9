# render_window.sh — gt-render's --from/--to read only the window's chunks (the loader's window,
# as gt-analyze's): on the synthetic trace, spans crossing the window's edge keep their real
# length in the timeline and the subtitle gives the whole recording's length; on a generated
# 60 s trace (bench/gen_trace, ~80 MB, the H200 torch workload's rates), a 1 s window draws under
# an address-space limit that the whole trace's timeline does not fit in.
. "$(dirname "$0")/lib.sh"
R=$GT_BIN/gt-render G=$GT_ROOT/${BUILD:-build}/bench/gen_trace
[ -x "$R" ] || { fail "no $R"; exit 0; }
[ -x "$GT_TESTS/test_render_timeline" ] || { fail "no test_render_timeline to write the trace"; exit 0; }
"$GT_TESTS/test_render_timeline" --write-trace "$TMP/t.gtt" >/dev/null || { fail "cannot write the synthetic trace"; exit 0; }

# 20 kernels of 30 ms, one every 100 ms: the window 1.07-1.5 s starts inside the one begun at ~1.055 s
check_rc "timeline of a window that cuts a kernel" 0 "$R" timeline "$TMP/t.gtt" --from 1.07 --to 1.5 -o "$TMP/w.svg"
check "the kernel crossing the window's start keeps its 30 ms (5 kernels, all 30 ms)" \
	test "$(grep -o 'kernel [0-9.]* ms' "$TMP/w.svg" | sort -u)" = "kernel 30 ms" -a "$(grep -c 'kernel 30 ms' "$TMP/w.svg")" -eq 5
check "the subtitle gives the whole recording's length and the window, in recording time" \
	grep -q '2 s recorded, showing 1.070 - 1.500 s (430 ms)' "$TMP/w.svg"
check "tooltips count from the recording's start: the cut kernel runs 1.050000 - 1.080000 s" \
	grep -q '^1.050000 - 1.080000 s</title>' "$TMP/w.svg"
check_rc "flame chart of a window" 0 "$R" flame --flamechart "$TMP/t.gtt" --from 1.0 --to 1.5 -o "$TMP/fc.svg"
check_rc "a window after the end exits 2" 2 "$R" flame "$TMP/t.gtt" --from 100 -o "$TMP/x.svg"

[ -x "$G" ] || { fail "bench/gen_trace not built (make bench-tools)"; exit 0; }
check_rc "gen_trace writes 60 s" 0 "$G" -o "$TMP/g.gtt" --seconds 60
if ldd "$R" 2>/dev/null | grep -q libasan; then
	skip "built with ASan: no address-space limit (ASan reserves terabytes)"
	exit 0
fi
# the limit: the trace is mapped (its size) plus 160 MiB; the whole timeline needs ~1 GB
lim=$(( $(stat -c %s "$TMP/g.gtt") / 1024 + 160 * 1024 ))
limited() { (ulimit -v "$lim"; exec timeout -s KILL 120 "$@") >/dev/null 2>"$TMP/err"; }
check "a 1 s timeline window of the 60 s trace fits in $((lim / 1024)) MiB of address space" \
	limited "$R" timeline "$TMP/g.gtt" --from 30 --to 31 -o "$TMP/g.svg"
check "a 1 s flame graph window fits too" limited "$R" flame "$TMP/g.gtt" --from 30 --to 31 -o "$TMP/gf.svg"
check "the window's samples are drawn (flame graph not empty)" grep -qE '<title>all \([1-9][0-9]* samples' "$TMP/gf.svg"
limited "$R" timeline "$TMP/g.gtt" -o "$TMP/gall.svg"; rc=$?
check "the whole trace's timeline does not fit there (so the window is what bounds it): exit $rc, not 0" test "$rc" -ne 0
exit 0
