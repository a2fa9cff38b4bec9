#!/usr/bin/env bash
# record_dwarf.sh — --call-graph dwarf on a -fomit-frame-pointer program, launched and attached:
# every sample carries registers and a stack copy that holds the whole six-deep chain; with
# gt-analyze present, >= 95% of the unwound stacks are complete.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs ANA=$GT_BIN/gt-analyze
SUM=$GT_TESTS/test_rec_trace
[ -x "$REC" ] && [ -x "$SUM" ] || { skip "gt-record or test_rec_trace not built"; exit 0; }
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
FUNCS=main,level1,level2,level3,level4,level5,level6
CHAIN='main;level1;level2;level3;level4;level5;level6'

full_share() { # TRACE: percent of samples whose folded stack holds the whole chain
	"$ANA" fold "$1" | awk -v c="$CHAIN" '{ n = $NF; t += n; if (index($0, c)) f += n } END { if (t) printf "%.1f", 100 * f / t; else print 0 }'
}

# a 20 KB environment variable sits above main's frames: the copy must stop short of it
BIG=$(head -c 20000 /dev/zero | tr '\0' x)
check_rc "dwarf: launch records" 0 env GT_TEST_BIG="$BIG" "$REC" -q --call-graph dwarf,16384 -o "$TMP/l.gtt" -- "$P/deep6_nofp" 1.5
"$SUM" summary "$TMP/l.gtt" "$P/deep6_nofp" $FUNCS >"$TMP/l.sum"
n=$(val samples "$TMP/l.sum")
check "dwarf: samples ($n)" test "${n:-0}" -ge 20
# a sample that lands in the kernel after the process gave up its memory (at exit: system-wide
# events still see it there) has no user state to copy; every other one has both
kn=$(val samples_kernel_noregs "$TMP/l.sum")
check "dwarf: every sample has user registers (or is in the kernel with none left: $kn)" \
	test "$(( $(val samples_regs "$TMP/l.sum") + kn ))" = "$n" -a "$kn" -le 2
check "dwarf: every sample has a stack copy (but those $kn)" test "$(( $(val samples_stack "$TMP/l.sum") + kn ))" = "$n"
sb=$(val stack_bytes_avg "$TMP/l.sum")
check "dwarf: only the used part of the 16384-byte copy is kept, not the environment (avg $sb)" test "$sb" -gt 0 -a "$sb" -lt 4096
check "dwarf: CONFIG says stack 16384" grep -q '^config 1 .* stack_bytes 16384$' "$TMP/l.sum"
l1=$(awk '$1 == "func" && $2 == "level1" { print $3 }' "$TMP/l.sum")
check "dwarf: the stack copies reach level1 in >= 95% of samples ($l1 of $n)" test $((l1 * 100)) -ge $((n * 95))
check "dwarf: IP in level6 (the leaf) in >= 95% of samples" awk -v n="$n" '$1 == "func" && $2 == "level6" { exit !($4 * 100 >= n * 95) }' "$TMP/l.sum"

# attach mode, same program
"$P/deep6_nofp" 4 & pid=$!
sleep 0.3
check_rc "dwarf: attach records" 0 "$REC" -q --call-graph dwarf -p "$pid" -d 1.5 -o "$TMP/a.gtt"
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
"$SUM" summary "$TMP/a.gtt" "$P/deep6_nofp" $FUNCS >"$TMP/a.sum"
na=$(val samples "$TMP/a.sum")
l1a=$(awk '$1 == "func" && $2 == "level1" { print $3 }' "$TMP/a.sum")
check "dwarf attach: samples with stack copies ($na)" test "${na:-0}" -ge 20 -a "$(val samples_stack "$TMP/a.sum")" = "$na"
check "dwarf attach: the stack copies reach level1 in >= 95% ($l1a of $na)" test $((l1a * 100)) -ge $((na * 95))

if [ -x "$ANA" ]; then
	s=$(full_share "$TMP/l.gtt")
	check "dwarf: gt-analyze unwinds the full six-deep chain in >= 95% of samples ($s%)" awk -v s="$s" 'BEGIN { exit !(s >= 95) }'
	s=$(full_share "$TMP/a.gtt")
	check "dwarf attach: gt-analyze unwinds the full chain in >= 95% of samples ($s%)" awk -v s="$s" 'BEGIN { exit !(s >= 95) }'
	# symbolization from the archive alone: the binary is gone
	cp "$P/deep6_nofp" "$TMP/deep6_copy"
	check_rc "dwarf: record a copy of the binary" 0 "$REC" -q --call-graph dwarf -o "$TMP/g.gtt" -- "$TMP/deep6_copy" 1
	"$ANA" fold "$TMP/g.gtt" >"$TMP/g1.fold" 2>/dev/null
	rm -f "$TMP/deep6_copy"
	"$ANA" fold "$TMP/g.gtt" >"$TMP/g2.fold" 2>/dev/null
	check "dwarf: the same folded stacks after the binary was deleted (symbols from the archive)" \
		sh -c "grep -q '$CHAIN' '$TMP/g1.fold' && cmp -s '$TMP/g1.fold' '$TMP/g2.fold'"
else
	skip "gt-analyze not built: full-chain unwinding not checked"
fi
