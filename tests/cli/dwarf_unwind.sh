# dwarf_unwind.sh — a six-deep chain built -O2 -fomit-frame-pointer (tests/progs/deep6_nofp),
# recorded with --call-graph dwarf and unwound offline by gt-analyze: >= 95% of its samples carry
# the whole chain main;level1;...;level6, launched and attached; and after the binary is deleted,
# symbolization from the trace's embedded archive gives the very same folded stacks.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze PROG=$GT_TESTS/progs/deep6_nofp
[ -x "$REC" ] || { skip "gt-record not built"; exit 0; }
[ -x "$PROG" ] || { skip "tests/progs/deep6_nofp not built"; exit 0; }
CHAIN='main;level1;level2;level3;level4;level5;level6'

full_chain_share() { # folded -> "PERCENT TOTAL"
	awk -v c="$CHAIN" '{ n = $NF; t += n; if (index($0, c)) m += n }
		END { if (t == 0) print "0 0"; else printf "%.1f %d\n", 100 * m / t, t }' "$1"
}
check_chain() { # label folded
	local pct total
	read -r pct total < <(full_chain_share "$2")
	if [ "$total" -ge 50 ] && awk -v p="$pct" 'BEGIN { exit !(p >= 95) }'; then
		pass "$1: $pct% of $total samples carry the full six-deep chain"
	else
		fail "$1: $pct% of $total samples carry the full six-deep chain (want >= 95% of >= 50)"
		sort -t' ' -k2 -nr "$2" | head -5
	fi
}

# a private copy, so that it can be deleted afterwards
cp "$PROG" "$TMP/deep6copy"
if ! "$REC" -q -F 499 --call-graph dwarf -o "$TMP/d.gtt" -- "$TMP/deep6copy" 1.5 >"$TMP/rec.out" 2>&1; then
	fail "gt-record --call-graph dwarf failed: $(tail -3 "$TMP/rec.out")"; exit 0
fi
check_rc "fold of the dwarf recording" 0 "$ANA" fold "$TMP/d.gtt"
cp "$TMP/out" "$TMP/before.folded"
check_chain "launch, dwarf" "$TMP/before.folded"
"$ANA" fold --no-archive "$TMP/d.gtt" >"$TMP/noarch.folded" 2>/dev/null
check "with the binary present, disk and archive symbolize alike" cmp -s "$TMP/before.folded" "$TMP/noarch.folded"

rm -f "$TMP/deep6copy"
check_rc "fold after the binary was deleted" 0 "$ANA" fold "$TMP/d.gtt"
cp "$TMP/out" "$TMP/after.folded"
if cmp -s "$TMP/before.folded" "$TMP/after.folded"; then
	pass "binary deleted: symbolization from the embedded archive is identical"
else
	fail "binary deleted: folded stacks differ"; diff "$TMP/before.folded" "$TMP/after.folded" | head
fi
"$ANA" fold --no-archive "$TMP/d.gtt" >"$TMP/gone.folded" 2>"$TMP/gone.err"
check "binary deleted and --no-archive: addresses as [deep6copy+0xOFF]" grep -q '\[deep6copy+0x' "$TMP/gone.folded"
check "binary deleted and --no-archive: a warning names the missing binary" grep -q 'deep6copy' "$TMP/gone.err"

# attach mode: a running process, recorded for a second
"$PROG" 4 &
pid=$!
sleep 0.3
if "$REC" -q -F 499 --call-graph dwarf -d 1.5 -p "$pid" -o "$TMP/a.gtt" >"$TMP/rec.out" 2>&1; then
	"$ANA" fold "$TMP/a.gtt" >"$TMP/attach.folded"
	check_chain "attach, dwarf" "$TMP/attach.folded"
else
	fail "gt-record -p failed: $(tail -3 "$TMP/rec.out")"
fi
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0
