# render_trace.sh — gt-render on a .gtt trace (a synthetic one with known contents, written by
# test_render_timeline --write-trace): timeline as SVG/PNG/PDF, flame graph, flame chart,
# GIL filter, windows and thread filters, and the errors a user can make.
. "$(dirname "$0")/lib.sh"
R="$GT_BIN/gt-render"
[ -x "$R" ] || { fail "no $R"; exit 0; }
[ -x "$GT_TESTS/test_render_timeline" ] || { fail "no test_render_timeline to write the trace"; exit 0; }
"$GT_TESTS/test_render_timeline" --write-trace "$TMP/t.gtt" || { fail "cannot write the synthetic trace"; exit 0; }
colors() { python3 "$GT_ROOT/tests/cli/render_pngcolors.py" "$1"; }

check_rc "timeline SVG" 0 "$R" timeline "$TMP/t.gtt" -o "$TMP/t.svg"
if command -v xmllint >/dev/null; then
	check "timeline SVG is well-formed XML" xmllint --noout "$TMP/t.svg"
else
	skip "xmllint not installed (libxml2-utils)"
fi
check "timeline has the thread rows" bash -c "grep -q '>loader 101<' '$TMP/t.svg' && grep -q '>MainThread 100<' '$TMP/t.svg'"
check "timeline has the GPU stream row" grep -q '>GPU 0 stream 7<' "$TMP/t.svg"
check "kernel names escaped" grep -q 'gemm_kernel&lt;float&gt;' "$TMP/t.svg"
check "sampler lag window in the timeline" grep -q 'perf sampler behind for 150 ms' "$TMP/t.svg"
check "legend names the classes and GPU work" bash -c "grep -q '>holds the GIL<' '$TMP/t.svg' && grep -q '>kernel<' '$TMP/t.svg'"
check_rc "timeline PNG" 0 "$R" timeline "$TMP/t.gtt" -o "$TMP/t.png"
n=$(colors "$TMP/t.png")
check "timeline PNG is not blank ($n colours)" test "${n:-0}" -ge 10
check_rc "timeline PDF" 0 "$R" timeline "$TMP/t.gtt" -o "$TMP/t.pdf"
if command -v pdftoppm >/dev/null; then
	pdftoppm -r 50 -png -singlefile "$TMP/t.pdf" "$TMP/tpage" 2>/dev/null
	n=$(colors "$TMP/tpage.png" 2>/dev/null)
	check "timeline PDF page is not blank ($n colours)" test "${n:-0}" -ge 10
else
	skip "pdftoppm not installed (poppler-utils)"
fi
check_rc "timeline window" 0 "$R" timeline "$TMP/t.gtt" --from 1.0 --to 1.5 -o "$TMP/w.svg"
check "window shows 5 kernels" test "$(grep -c 'kernel 30 ms' "$TMP/w.svg")" -eq 5
check_rc "timeline --threads" 0 "$R" timeline "$TMP/t.gtt" --threads '^load' -o "$TMP/th.svg"
check "--threads keeps only matching rows" bash -c "grep -q '>loader 101<' '$TMP/th.svg' && ! grep -q '>MainThread 100<' '$TMP/th.svg'"

# flame graph and flame chart from the trace
check_rc "flame from a trace" 0 "$R" flame "$TMP/t.gtt" -o "$TMP/f.svg"
check "flame from a trace holds all samples" grep -q '<title>all (310 samples, 100.00%)' "$TMP/f.svg"
check_rc "flame chart from a trace" 0 "$R" flame "$TMP/t.gtt" --flamechart -o "$TMP/fc.svg"
check "flame chart: a root frame per thread" bash -c "grep -q '<title>loader 101 (180 samples' '$TMP/fc.svg' && grep -q '<title>launcher 102 (50 samples' '$TMP/fc.svg'"
check_rc "flame --threads --tid" 0 "$R" flame "$TMP/t.gtt" --threads --tid 100 -o "$TMP/ft.svg"
check "--tid keeps one thread" grep -q '<title>all (80 samples' "$TMP/ft.svg"
check_rc "flame window" 0 "$R" flame "$TMP/t.gtt" --from 1.0 --to 1.5 -o "$TMP/fw.svg"
check "flame window counts only its samples" grep -q '<title>all (40 samples' "$TMP/fw.svg"
check_rc "flame --gil on a trace without Python (nothing to draw)" 2 "$R" flame "$TMP/t.gtt" --gil held -o "$TMP/g.svg"
check_rc "flame PNG from a trace" 0 "$R" flame "$TMP/t.gtt" -o "$TMP/f.png"
check_rc "diff of a trace against itself" 0 "$R" flame "$TMP/t.gtt" --diff "$TMP/t.gtt" -o "$TMP/d.svg"
check "self-diff has no change" grep -q '+0.00 pts)' "$TMP/d.svg"

# errors
printf 'a;b 3\n' >"$TMP/f.folded"
check_rc "timeline of folded stacks exits 2" 2 "$R" timeline "$TMP/f.folded" -o "$TMP/x.svg"
check_rc "timeline window past the end exits 2" 2 "$R" timeline "$TMP/t.gtt" --from 100 -o "$TMP/x.svg"
check_rc "timeline --threads matching nothing exits 2" 2 "$R" timeline "$TMP/t.gtt" --threads nosuch -o "$TMP/x.svg"
check_rc "--to before --from is usage" 64 "$R" timeline "$TMP/t.gtt" --from 2 --to 1 -o "$TMP/x.svg"
check_rc "--flamechart on folded input is usage" 64 "$R" flame "$TMP/f.folded" --flamechart -o "$TMP/x.svg"
head -c $(($(stat -c %s "$TMP/t.gtt") - 5)) "$TMP/t.gtt" >"$TMP/cut.gtt" # inside the last chunk, whatever the format
"$R" flame "$TMP/cut.gtt" -o "$TMP/cut.svg" 2>"$TMP/cut.err"; rc=$?
if [ $rc -eq 0 ]; then
	check "a cut-off trace renders with a warning" grep -qi 'warning' "$TMP/cut.err"
else
	check "a cut-off trace with no samples left: one line, exit 2 (rc $rc)" bash -c "[ $rc -eq 2 ] && [ \$(wc -l <'$TMP/cut.err') -eq 1 ]"
fi
