#!/usr/bin/env bash
# fold_wall.sh — gt-analyze fold --weight wall (and gt-render flame --weight wall): the Python
# threads' wall time by Python stack from the Python reader's reads, on the golden GIL-mix
# trace: every read with a frame counted once, the GIL split adding up, threads as roots, a
# blocked thread seen (CPU samples do not see it), the usage rules, a trace without reads.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze R=$GT_BIN/gt-render CAT=$GT_TESTS/../bench/gtt_cat
T=$GT_ROOT/testdata/golden/v1.0/python_gilmix.gtt
[ -x "$CAT" ] || { skip "fold_wall: gtt_cat not built"; exit 0; }
sum() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

check_rc "wall: folds (exit 0)" 0 "$A" fold --weight wall "$T"
cp "$TMP/out" "$TMP/wall"
reads=$("$CAT" "$T" py_stack | awk '$7 > 0' | wc -l)
held=$("$CAT" "$T" py_stack | awk '$7 > 0 && $6 % 2 == 1' | wc -l)
check "wall: every read with a frame counted once ($(sum "$TMP/wall") of $reads)" test "$(sum "$TMP/wall")" -eq "$reads" -a "$reads" -gt 100
check "wall: stacks are Python frames, root first (Thread._bootstrap roots the workers)" \
	grep -q '^Thread._bootstrap;Thread._bootstrap_inner;Thread.run;' "$TMP/wall"
"$A" fold --weight wall --gil held "$T" >"$TMP/held" 2>/dev/null
"$A" fold --weight wall --gil released "$T" >"$TMP/rel" 2>/dev/null
check "wall: --gil held counts the reads that held the GIL ($(sum "$TMP/held") of $held)" test "$(sum "$TMP/held")" -eq "$held"
check "wall: held and released add up to all" test $(($(sum "$TMP/held") + $(sum "$TMP/rel"))) -eq "$reads"
"$A" fold --weight wall --threads "$T" >"$TMP/thr" 2>/dev/null
check "wall: --threads roots each stack at its process and thread" \
	awk -F';' '{ if ($1 !~ / [0-9]+$/ || $2 !~ / [0-9]+$/) bad++ } END { exit bad > 0 || NR == 0 }' "$TMP/thr"
# the main thread: its tid is its process's pid (the roots end in "PID" and "TID")
main_of() { awk -F';' '{ n = split($1, p, " "); m = split($2, t, " "); if (p[n] == t[m]) print }' "$1"; }
check "wall: the main thread, blocked in Thread.join, is there (CPU samples of it are few)" \
	sh -c "$(declare -f main_of); main_of '$TMP/thr' | grep -q ';Thread.join'"
"$A" fold --threads "$T" >"$TMP/cpu" 2>/dev/null
cpu_main=$(main_of "$TMP/cpu" | awk '{ s += $NF } END { print s + 0 }')
wall_main=$(main_of "$TMP/thr" | awk '{ s += $NF } END { print s + 0 }')
check "wall: the main thread has more reads than CPU samples ($wall_main against $cpu_main)" test "$wall_main" -gt "$cpu_main"
tid=$(awk -F';' 'NR == 1 { n = split($2, a, " "); print a[n] }' "$TMP/thr")
"$A" fold --weight wall --tid "$tid" --threads "$T" >"$TMP/tid" 2>/dev/null
check "wall: --tid $tid keeps that thread's reads only" awk -F';' -v t="$tid" '{ if ($2 !~ (" " t "$")) bad++ } END { exit bad > 0 || NR == 0 }' "$TMP/tid"
check_rc "wall: --annotate is refused (64)" 64 "$A" fold --weight wall --annotate "$T"
check_rc "wall: an unknown weight is refused (64)" 64 "$A" fold --weight walls "$T"
check_rc "wall: a trace without Python reads (exit 0)" 0 "$A" fold --weight wall "$GT_ROOT/testdata/golden/v1.0/pipeline_cpu.gtt"
check "wall: ... says it has no Python stack reads" grep -q 'has no Python stack reads' "$TMP/err"
if [ -x "$R" ]; then
	check_rc "render: flame --weight wall (exit 0)" 0 "$R" flame --weight wall "$T" -o "$TMP/w.svg"
	check "render: titled as wall time, counted in reads" sh -c "grep -q 'Python wall time' '$TMP/w.svg' && grep -q 'Python stack reads' '$TMP/w.svg'"
	check_rc "render: --weight wall is for flame graphs, not --flamechart (64)" 64 "$R" flame --weight wall --flamechart "$T" -o "$TMP/x.svg"
fi
