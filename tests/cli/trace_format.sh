#!/usr/bin/env bash
# trace_format.sh — formats 1.1 and 1.2 end to end: gt-record writes packed, compressed chunks and
# an index (format 1.2: a writer with zstd may keep the samples' stack copies apart); the same
# recording made without libzstd (GT_LIBZSTD=none) is stored uncompressed, says so in its meta,
# is format 1.1 (nothing of it needs 1.2), and analyzes to the same folded stacks; a compressed trace read where libzstd
# is missing fails with one line naming libzstd.so.1; a trace cut off inside a packed chunk is
# analyzed up to its last whole chunk with a warning.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze STAT=$GT_ROOT/${BUILD:-build}/bench/gtt_stat FACTS=$GT_TESTS/test_badgen
PROG=$GT_TESTS/progs/known_tree
[ -x "$REC" ] && [ -x "$PROG" ] || { skip "gt-record or tests/progs/known_tree not built"; exit 0; }

check_rc "records (fp, 1.5 s)" 0 "$REC" -q --call-graph fp -F 499 -o "$TMP/z.gtt" -- "$PROG" 1.5
check_rc "records again without libzstd" 0 env GT_LIBZSTD=none "$REC" -q --call-graph fp -F 499 -o "$TMP/n.gtt" -- "$PROG" 1.5
ver() { head -c 12 "$1" | od -An -tu1 | awk '{ print $9 "." $11 }'; }
check "the trace is format 1.2 ($(ver "$TMP/z.gtt"))" test "$(ver "$TMP/z.gtt")" = "1.2"
check "the one stored without zstd is format 1.1 ($(ver "$TMP/n.gtt"))" test "$(ver "$TMP/n.gtt")" = "1.1"
if [ -x "$STAT" ]; then
	"$STAT" "$TMP/z.gtt" >"$TMP/z.stat"
	"$STAT" "$TMP/n.gtt" >"$TMP/n.stat"
	check "its records travel in packed chunks ($(head -1 "$TMP/z.stat" | grep -o '[0-9]* packed'))" \
		grep -q '[1-9][0-9]* packed' "$TMP/z.stat"
	check "compressed, it is smaller than stored ($(stat -c %s "$TMP/z.gtt") vs $(stat -c %s "$TMP/n.gtt") bytes)" \
		test "$(stat -c %s "$TMP/z.gtt")" -lt "$(stat -c %s "$TMP/n.gtt")"
	# the same records of DWARF samples as 1.1 and as 1.2 (their registers and stacks apart):
	# gtt_stat counts the samples' raw bytes alike, the side section's included
	GEN=$GT_ROOT/${BUILD:-build}/bench/gen_trace
	if [ -x "$GEN" ]; then
		for v in 1.1 1.2; do
			"$GEN" -o "$TMP/g$v.gtt" --seconds 0.3 --threads 2 --switch-rate 2000 --cuda-rate 2000 --format $v 2>/dev/null
			"$STAT" --tsv "$TMP/g$v.gtt" | awk '$1 == "sample" { print $2, $3 }' >"$TMP/g$v.raw"
		done
		check "gtt_stat: the samples of a 1.2 trace have the raw bytes of their 1.1 twin's ($(cat "$TMP/g1.2.raw") vs $(cat "$TMP/g1.1.raw"))" \
			sh -c "test -s '$TMP/g1.1.raw' && cmp -s '$TMP/g1.1.raw' '$TMP/g1.2.raw' && test \"\$(head -c 12 '$TMP/g1.2.gtt' | od -An -tu1 | awk '{ print \$11 }')\" = 2"
	fi
else
	skip "bench/gtt_stat not built"
fi
if [ -x "$ANA" ]; then
	check_rc "the stored trace analyzes" 0 "$ANA" fold "$TMP/n.gtt"
	cp "$TMP/out" "$TMP/n.fold"
	check_rc "the compressed trace analyzes" 0 "$ANA" fold "$TMP/z.gtt"
	cp "$TMP/out" "$TMP/z.fold"
	check "both hold the program's tree (kt_alpha, kt_beta, kt_gamma;kt_delta)" \
		sh -c "grep -q kt_alpha '$TMP/z.fold' && grep -q kt_beta '$TMP/n.fold' && grep -q 'kt_gamma;kt_delta' '$TMP/z.fold'"
	check_rc "a compressed trace where libzstd is missing: exit 2" 2 env GT_LIBZSTD=none "$ANA" report "$TMP/z.gtt"
	check "... with one line that names libzstd.so.1 ($(head -1 "$TMP/err"))" \
		sh -c "test \$(wc -l <'$TMP/err') -eq 1 && grep -q 'libzstd.so.1' '$TMP/err'"
	check_rc "the stored trace reads without libzstd" 0 env GT_LIBZSTD=none "$ANA" report "$TMP/n.gtt"
	# cut inside the last packed chunk before the index: a warning, the rest analyzed
	size=$(stat -c %s "$TMP/z.gtt")
	head -c $((size * 3 / 4)) "$TMP/z.gtt" >"$TMP/cut.gtt"
	check_rc "a trace cut inside a packed chunk analyzes (exit 0)" 0 "$ANA" fold "$TMP/cut.gtt"
	check "... with a warning that it is cut off" grep -qi 'cut off' "$TMP/err"
else
	skip "gt-analyze not built"
fi
if [ -x "$FACTS" ]; then
	"$FACTS" --facts "$TMP/n.gtt" >"$TMP/n.facts"
	"$FACTS" --facts "$TMP/z.gtt" >"$TMP/z.facts"
	check "both read whole: no corrupt chunk, an end record each" \
		sh -c "grep -qx 'corrupt 0' '$TMP/n.facts' && grep -qx 'corrupt 0' '$TMP/z.facts' && grep -qx 'ends 1' '$TMP/z.facts' && grep -qx 'ends 1' '$TMP/n.facts'"
fi
grep -a -q 'libzstd.so.1 could not be loaded' "$TMP/n.gtt" && pass "the stored trace's meta says libzstd.so.1 was missing" ||
	fail "the stored trace's meta says libzstd.so.1 was missing"
