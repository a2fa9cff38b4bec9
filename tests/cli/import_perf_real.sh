# import_perf_real.sh — import-perf on real `perf script` output of the calltree program:
# the known call paths appear under the process name, counts add up to the periods perf
# printed, options change the roots/annotations, bad lines are reported with their number.
. "$GT_ROOT/tests/cli/lib.sh"
A="$GT_BIN/gt-analyze"
P="$GT_TESTS/progs/calltree"
[ -x "$P" ] || { skip "calltree test program not built"; exit 0; }
command -v perf >/dev/null || { skip "perf not installed (Debian linux-perf)"; exit 0; }
if ! perf record -q -g -F 499 -o "$TMP/perf.data" -- "$P" 1 >/dev/null 2>"$TMP/perf.err"; then
	skip "perf record does not work here: $(head -c 200 "$TMP/perf.err")"
	exit 0
fi
perf script -i "$TMP/perf.data" >"$TMP/script.txt" 2>/dev/null
[ -s "$TMP/script.txt" ] || { skip "perf script printed nothing"; exit 0; }

check_rc "import-perf exits 0 on perf script output" 0 "$A" import-perf "$TMP/script.txt"
cp "$TMP/out" "$TMP/folded"
check "the known path calltree;...;main;alpha is there" grep -q '^calltree;.*main;alpha' "$TMP/folded"
check "lines are sorted by stack" sh -c "LC_ALL=C sort -c -t' ' -k1,1 '$TMP/folded' 2>/dev/null || LC_ALL=C sort -c '$TMP/folded'"
want=$(awk '/^[^ \t#]/ { for (i = 1; i <= NF; i++) if ($i ~ /^cpu-clock/) { s += $(i - 1); break } } END { print s }' "$TMP/script.txt")
got=$(awk '{ s += $NF } END { print s }' "$TMP/folded")
check "counts sum to the periods perf printed ($got vs $want)" test "$got" = "$want"
"$A" import-perf <"$TMP/script.txt" >"$TMP/stdin.folded" 2>/dev/null
check "reading stdin gives the same" cmp -s "$TMP/stdin.folded" "$TMP/folded"
"$A" import-perf --tid --kernel "$TMP/script.txt" >"$TMP/tid.folded" 2>/dev/null
check "--tid puts comm-?/TID roots" grep -qE '^calltree-\?/[0-9]+;' "$TMP/tid.folded"
# the imported profile feeds check: against itself it passes
check_rc "check accepts imported folded stacks" 0 "$A" check "$TMP/folded" --golden "$TMP/folded"

{ head -n 20 "$TMP/script.txt"; echo "garbage that is no perf line"; tail -n +21 "$TMP/script.txt"; } >"$TMP/bad.txt"
check_rc "an unrecognized line gives exit 1 (partial)" 1 "$A" import-perf "$TMP/bad.txt" -o "$TMP/bad.folded"
check "the bad line is reported with its number" grep -q "bad.txt:21: unrecognized line" "$TMP/err"
check "the rest is still imported" cmp -s "$TMP/bad.folded" "$TMP/folded"
printf '# only a comment\n' >"$TMP/none.txt"
check_rc "no samples: exit 2" 2 "$A" import-perf "$TMP/none.txt"
check_rc "missing file: exit 2" 2 "$A" import-perf "$TMP/nope.txt"
check_rc "unknown option: usage" 64 "$A" import-perf --bogus "$TMP/script.txt"
