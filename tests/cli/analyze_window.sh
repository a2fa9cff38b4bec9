# analyze_window.sh — --from S --to S on every gt-analyze command, on a generated 1.1 trace
# (bench/gen_trace: threads, switches, Python stacks, GIL, CUDA): usage errors, the report's
# window line and figures, fold totals of two meeting windows against the whole, exports and
# diff/check of a window, a window after the end (exit 2), folded input refused.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze G=$GT_ROOT/${BUILD:-build}/bench/gen_trace
[ -x "$A" ] || { fail "gt-analyze not built"; exit 0; }
[ -x "$G" ] || { fail "bench/gen_trace not built (make bench-tools)"; exit 0; }
T=$TMP/g.gtt
check_rc "gen_trace writes 4 s" 0 "$G" -o "$T" --seconds 4 --threads 3 --cuda-rate 2000 --switch-rate 5000

for cmd in report fold export diff check; do
	check_rc "$cmd --help documents --from/--to" 0 "$A" $cmd --help
	check "$cmd --help names --from" grep -q -- '--from S, --to S' "$TMP/out"
done
check_rc "report --from x" 64 "$A" report --from x "$T"
check_rc "report --to 1 --from 2" 64 "$A" report --to 1 --from 2 "$T"
check "one line saying what" sh -c "[ \$(wc -l <'$TMP/err') -eq 1 ] && grep -q -- '--to must be after --from' '$TMP/err'"
check_rc "export --to 0" 64 "$A" export --to 0 --format folded "$T"

check_rc "report of the whole" 0 "$A" report "$T"
cp "$TMP/out" "$TMP/whole.txt"
check "no window line without a window" sh -c "! grep -q '^window:' '$TMP/whole.txt'"
check_rc "report --from 1 --to 2.5" 0 "$A" report --from 1 --to 2.5 "$T"
cp "$TMP/out" "$TMP/win.txt"
check "the report says the window" grep -q '^window:    1.000 s .. 2.500 s of the recording' "$TMP/win.txt"
check "its duration is the window's" grep -q '^duration:  1.500 s' "$TMP/win.txt"
n_whole=$(sed -n 's/^samples: *\([0-9]*\) .*/\1/p' "$TMP/whole.txt")
n_win=$(sed -n 's/^samples: *\([0-9]*\) .*/\1/p' "$TMP/win.txt")
# gen_trace samples 3 threads at 99 Hz: 1.5 s holds about 445 of them
check "the window holds its share of the samples ($n_win of $n_whole)" \
	sh -c "[ '$n_win' -ge 430 ] && [ '$n_win' -le 460 ] && [ '$n_whole' -ge 1150 ]"
check "no END mismatch warning for a window" sh -c "! grep -q 'END record' '$TMP/err'"

# fold: two windows that meet hold every sample's weight once
sum() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
check_rc "fold whole" 0 "$A" fold "$T"; cp "$TMP/out" "$TMP/f.all"
check_rc "fold --to 1.7" 0 "$A" fold --to 1.7 "$T"; cp "$TMP/out" "$TMP/f.a"
check_rc "fold --from 1.7" 0 "$A" fold --from 1.7 "$T"; cp "$TMP/out" "$TMP/f.b"
check "fold [0,1.7) + [1.7,end) = whole ($(sum "$TMP/f.a") + $(sum "$TMP/f.b") = $(sum "$TMP/f.all"))" \
	sh -c "[ $(( $(sum "$TMP/f.a") + $(sum "$TMP/f.b") )) -eq $(sum "$TMP/f.all") ] && [ $(sum "$TMP/f.a") -gt 0 ]"

for fmt in folded speedscope chrome pprof; do
	check_rc "export --format $fmt of a window" 0 "$A" export --format $fmt --from 1 --to 2 -o "$TMP/w.$fmt" "$T"
	check "export $fmt wrote something" test -s "$TMP/w.$fmt"
done
# (a sample's slice ends one period, 1/99 s, after it: the last one may reach past the window)
check "a chrome export of a window has events only inside it" python3 - "$TMP/w.chrome" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if "ts" in e and e.get("ph") in ("X", "i", "B", "E")]
ts = [e["ts"] for e in ev]
ok = ev and 0.95e6 <= max(ts) - min(ts) <= 1.0e6 + 10200
sys.exit(0 if ok else 1)
PY

check_rc "diff of two windows of one trace" 0 "$A" diff --from 0 --to 2 "$T" "$T"
check_rc "check of a window against itself" 0 "$A" check --from 1 --to 3 --golden "$T" "$T"
check_rc "fold to a file for diff" 0 "$A" fold -o "$TMP/x.folded" "$T"
check_rc "diff of folded stacks with a window is refused" 2 "$A" diff --from 1 "$TMP/x.folded" "$TMP/x.folded"
check "it says why in one line" sh -c "grep -q 'apply to traces only' '$TMP/err' && [ \$(wc -l <'$TMP/err') -eq 1 ]"

check_rc "a window after the end exits 2" 2 "$A" report --from 100 "$T"
check "it says so in one line" sh -c "grep -q \"after the recording's end\" '$TMP/err' && [ \$(wc -l <'$TMP/err') -eq 1 ]"

# chrome JSON holds every event: a big trace wants a window (a sparse file: refused before reading)
truncate -s 300M "$TMP/big.gtt"
check_rc "export chrome of a 300 MiB trace without a window is refused" 64 "$A" export --format chrome -o "$TMP/b.json" "$TMP/big.gtt"
check "it names --from/--to in one line" sh -c "grep -q -- '--from S --to S' '$TMP/err' && [ \$(wc -l <'$TMP/err') -eq 1 ]"
check "nothing was written" test ! -e "$TMP/b.json"
check_rc "with --from 0 it is read (and found not to be a trace)" 2 "$A" export --format chrome --from 0 -o "$TMP/b.json" "$TMP/big.gtt"
check_rc "folded export of it is not refused for size (not a trace: 2)" 2 "$A" export --format folded "$TMP/big.gtt"
