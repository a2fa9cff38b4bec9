# render_flame.sh — gt-render flame end to end on folded input: well-formed SVG holding the
# frames, widths proportional to counts, escaping, options, PNG/PDF, bad input and usage.
. "$(dirname "$0")/lib.sh"
R="$GT_BIN/gt-render"
[ -x "$R" ] || { fail "no $R"; exit 0; }

cat >"$TMP/in.folded" <<'EOF'
main;compute;matmul 600
main;compute;gelu 200
main;load<std::vector<int>, A&B> 100
main;"quoted" ]]> name 50
idle 50
EOF

check_rc "flame from a folded file" 0 "$R" flame "$TMP/in.folded" -o "$TMP/f.svg"
if command -v xmllint >/dev/null; then
	check "SVG is well-formed XML" xmllint --noout "$TMP/f.svg"
else
	skip "xmllint not installed (libxml2-utils)"
fi
check "frames are in the SVG" grep -q '<title>matmul (600 samples, 60.00%)</title>' "$TMP/f.svg"
check "C++ name escaped" grep -q 'load&lt;std::vector&lt;int&gt;, A&amp;B&gt;' "$TMP/f.svg"
check "quotes and ]]> escaped" grep -q '&quot;quoted&quot; ]]&gt; name' "$TMP/f.svg"
check "script embedded, nothing external" bash -c "grep -q '<script' '$TMP/f.svg' && ! grep -Eq '(href|src)=\"(https?:|//)' '$TMP/f.svg'"

# widths proportional to counts: matmul (600) is 3x gelu (200), root is 1000 samples
width_of() { grep -o "<title>$1 ([0-9]* samples[^<]*</title><rect [^>]*" "$TMP/f.svg" | sed -n 's/.* width="\([0-9.]*\)".*/\1/p' | head -1; }
wm=$(width_of matmul); wg=$(width_of gelu); wa=$(width_of all)
if [ -n "$wm" ] && [ -n "$wg" ] && [ -n "$wa" ]; then
	check "matmul is 3x gelu wide ($wm vs $wg)" awk -v a="$wm" -v b="$wg" 'BEGIN { exit !(a / b > 2.99 && a / b < 3.01) }'
	check "matmul is 60% of the root ($wm of $wa)" awk -v a="$wm" -v b="$wa" 'BEGIN { exit !(a / b > 0.599 && a / b < 0.601) }'
else
	fail "widths not found (matmul=$wm gelu=$wg all=$wa)"
fi

# stdin, title, width, inverted, reverse, colors
check_rc "flame from stdin" 0 bash -c "'$R' flame - --title 'My <title>' --width 800 <'$TMP/in.folded' >'$TMP/s.svg'"
check "title escaped" grep -q 'My &lt;title&gt;' "$TMP/s.svg"
check "width 800" grep -q 'width="800"' "$TMP/s.svg"
"$R" flame "$TMP/in.folded" --inverted -o "$TMP/inv.svg"
y_all=$(grep -o '<title>all ([^<]*</title><rect [^>]*' "$TMP/inv.svg" | sed -n 's/.* y="\([0-9.]*\)".*/\1/p')
y_mm=$(grep -o '<title>matmul ([^<]*</title><rect [^>]*' "$TMP/inv.svg" | sed -n 's/.* y="\([0-9.]*\)".*/\1/p')
check "inverted: root above leaves ($y_all < $y_mm)" awk -v a="$y_all" -v b="$y_mm" 'BEGIN { exit !(a + 0 < b + 0) }'
"$R" flame "$TMP/in.folded" --reverse -o "$TMP/rev.svg"
check "reverse: leaf frames under the root" grep -q '<title>matmul (600 samples' "$TMP/rev.svg"
check "reverse: main is now a leaf above matmul" bash -c "[ \$(grep -c '<title>main (' '$TMP/rev.svg') -ge 4 ]"
for p in hot mem io python gil aqua; do
	check_rc "--colors $p" 0 "$R" flame "$TMP/in.folded" --colors "$p" -o "$TMP/c.svg"
done
"$R" flame "$TMP/in.folded" --minwidth 10% -o "$TMP/mw.svg"
check "--minwidth 10% prunes small frames" bash -c "! grep -q '<title>idle (' '$TMP/mw.svg' && grep -q '<title>gelu (' '$TMP/mw.svg'"

# differential
cat >"$TMP/base.folded" <<'EOF'
main;compute;matmul 300
main;compute;gelu 400
idle 300
EOF
check_rc "diff against a base" 0 "$R" flame "$TMP/in.folded" --diff "$TMP/base.folded" -o "$TMP/d.svg"
check "diff tooltip: matmul grew 30 pts" grep -q 'matmul (600 samples, 60.00%; base 30.00%, +30.00 pts)' "$TMP/d.svg"
check "diff tooltip: gelu shrank 20 pts" grep -q 'gelu (200 samples, 20.00%; base 40.00%, -20.00 pts)' "$TMP/d.svg"

# PNG and PDF through Cairo
check_rc "PNG output" 0 "$R" flame "$TMP/in.folded" -o "$TMP/f.png"
check "PNG signature" bash -c "head -c 8 '$TMP/f.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
check_rc "PDF output" 0 "$R" flame "$TMP/in.folded" -o "$TMP/f.pdf" --search matmul
check "PDF header" bash -c "head -c 5 '$TMP/f.pdf' | grep -q '%PDF-'"
if command -v pdftoppm >/dev/null; then
	pdftoppm -r 40 -png -singlefile "$TMP/f.pdf" "$TMP/pdfpage" 2>/dev/null
	check "PDF renders to a page" test -s "$TMP/pdfpage.png"
else
	skip "pdftoppm not installed (poppler-utils)"
fi
if command -v python3 >/dev/null; then
	# non-blank: count distinct colours of the PNGs (zlib + the PNG filter, stdlib only)
	colors() { python3 "$GT_ROOT/tests/cli/render_pngcolors.py" "$1"; }
	n=$(colors "$TMP/f.png")
	check "PNG is not blank ($n colours)" test "${n:-0}" -ge 8
	if [ -s "$TMP/pdfpage.png" ]; then
		n=$(colors "$TMP/pdfpage.png")
		check "PDF page is not blank ($n colours)" test "${n:-0}" -ge 8
	fi
else
	skip "python3 missing: PNG content not checked"
fi

# bad input: one line, exit 2
: >"$TMP/empty"
check_rc "empty input exits 2" 2 "$R" flame "$TMP/empty" -o "$TMP/x.svg"
check "empty input: one line" test "$(wc -l <"$TMP/err")" -eq 1
head -c 4096 /dev/urandom >"$TMP/random.bin"; printf '\0' >>"$TMP/random.bin"
check_rc "binary input exits 2" 2 "$R" flame "$TMP/random.bin" -o "$TMP/x.svg"
check "binary input: one line" test "$(wc -l <"$TMP/err")" -eq 1
printf 'just some text\nwithout counts\n' >"$TMP/text"
check_rc "text without counts exits 2" 2 "$R" flame "$TMP/text" -o "$TMP/x.svg"
check_rc "missing file exits 2" 2 "$R" flame "$TMP/nope" -o "$TMP/x.svg"
printf 'GTT\x19\r\n\x1a\n\1\0\0\0\0\0\0\0garbage-garbage-garbage' >"$TMP/corrupt.gtt"
check_rc "corrupt trace exits 2" 2 "$R" flame "$TMP/corrupt.gtt" -o "$TMP/x.svg"
check "corrupt trace: one line" test "$(wc -l <"$TMP/err")" -eq 1
printf 'a;b 5\nbroken line\n' >"$TMP/partial"
check_rc "a bad line among good ones is skipped with a warning, exit 1 (partial, as import-perf)" 1 "$R" flame "$TMP/partial" -o "$TMP/x.svg"
check "the drawing is still written" test -s "$TMP/x.svg"
check "warning names the line" grep -q 'line 2' "$TMP/err"
check_rc "unwritable output exits 2" 2 "$R" flame "$TMP/in.folded" -o /nonexistent/dir/x.svg

# usage: 64
check_rc "no arguments" 64 "$R"
check_rc "unknown command" 64 "$R" frob "$TMP/in.folded"
check_rc "missing input" 64 "$R" flame
check_rc "bad --width" 64 "$R" flame "$TMP/in.folded" --width abc
check_rc "bad --colors" 64 "$R" flame "$TMP/in.folded" --colors nosuch
check_rc "bad --search regex" 64 "$R" flame "$TMP/in.folded" --search '('
check_rc "unknown extension" 64 "$R" flame "$TMP/in.folded" -o "$TMP/x.bmp"
check_rc "unknown option" 64 "$R" flame "$TMP/in.folded" --frobnicate
check_rc "--help" 0 "$R" --help
check "--help shows usage" grep -q 'usage: gt-render flame' "$TMP/out"
check_rc "--version" 0 "$R" --version
check "--version prints the version" grep -q '^gt-render [0-9]' "$TMP/out"
