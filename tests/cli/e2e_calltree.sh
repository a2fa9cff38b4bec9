# e2e_calltree.sh — record programs with a known call tree and check that the stack shares in
# `gt-analyze fold` match it: known_tree in frame-pointer mode (every function keeps its frame
# pointer), and calltree (frame pointers except in its leaf) in DWARF mode, where the leaf's
# missing frame pointer does not matter. Expected: alpha 60%, beta 30%, gamma->delta 10%.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze
[ -x "$REC" ] || { skip "gt-record not built"; exit 0; }
[ -x "$ANA" ] || { fail "gt-analyze not built"; exit 0; }

# share PATTERN FOLDED: percent of samples whose stack matches the extended regex PATTERN
share() {
	awk -v pat="$1" '{ n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ pat) m += n }
		END { if (t == 0) print "0 0"; else printf "%.1f %d\n", 100 * m / t, t }' "$2"
}
# within GOT WANT TOL
within() { awk -v g="$1" -v w="$2" -v t="$3" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= t) }'; }

check_tree() { # label folded alpha beta delta (function names)
	local label=$1 f=$2 a b d total
	read -r a total < <(share "(^|;)main;$3(;|$)" "$f")
	read -r b _ < <(share "(^|;)main;$4(;|$)" "$f")
	read -r d _ < <(share "(^|;)main;[a-z_]*gamma[a-z_]*;$5(;|$)" "$f")
	if [ "$total" -lt 100 ]; then
		fail "$label: only $total samples recorded (want >= 100)"; return
	fi
	# ±8 points: with >= 100 samples the binomial spread of a 60% share is below 5 points
	if within "$a" 60 8 && within "$b" 30 8 && within "$d" 10 6; then
		pass "$label: shares alpha $a%, beta $b%, gamma;delta $d% of $total samples (want 60/30/10)"
	else
		fail "$label: shares alpha $a%, beta $b%, gamma;delta $d% of $total samples (want 60/30/10)"
		head -20 "$f"
	fi
}

KT=$GT_TESTS/progs/known_tree
if [ -x "$KT" ]; then
	if "$REC" -q -F 499 -o "$TMP/kt.gtt" -- "$KT" 1.5 >"$TMP/rec.out" 2>&1; then
		check_rc "fold of the fp recording" 0 "$ANA" fold "$TMP/kt.gtt"
		cp "$TMP/out" "$TMP/kt.folded"
		check_tree "fp known_tree" "$TMP/kt.folded" kt_alpha kt_beta kt_delta
		check "fold lines are 'stack count', sorted" \
			sh -c "grep -qvE '^.+ [0-9]+\$' '$TMP/kt.folded' && exit 1; LC_ALL=C sort -c '$TMP/kt.folded'"
		"$ANA" fold --threads "$TMP/kt.gtt" >"$TMP/kt.threads"
		check "--threads roots: 'known_tree PID;known_tree TID;...'" \
			grep -qE '^known_tree [0-9]+;known_tree [0-9]+;.*main;kt_alpha' "$TMP/kt.threads"
		"$ANA" fold "$TMP/kt.gtt" >"$TMP/kt.again"
		check "fold output is deterministic" cmp -s "$TMP/kt.folded" "$TMP/kt.again"
	else
		fail "gt-record of known_tree failed: $(tail -3 "$TMP/rec.out")"
	fi
else
	skip "tests/progs/known_tree not built"
fi

CT=$GT_TESTS/progs/calltree
if [ -x "$CT" ]; then
	if "$REC" -q -F 499 --call-graph dwarf -o "$TMP/ct.gtt" -- "$CT" 1.5 >"$TMP/rec.out" 2>&1; then
		"$ANA" fold "$TMP/ct.gtt" >"$TMP/ct.folded"
		check_tree "dwarf calltree" "$TMP/ct.folded" alpha beta delta
	else
		fail "gt-record --call-graph dwarf of calltree failed: $(tail -3 "$TMP/rec.out")"
	fi
else
	skip "tests/progs/calltree not built"
fi
