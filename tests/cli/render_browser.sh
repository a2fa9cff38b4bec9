# render_browser.sh — gt-render's SVGs in a real browser (headless Chromium driven by
# playwright-core): zoom, search and tooltips work; screenshots land in $BUILD/browser/.
. "$(dirname "$0")/lib.sh"
R="$GT_BIN/gt-render"
[ -x "$R" ] || { fail "no $R"; exit 0; }
command -v node >/dev/null || { skip "node not installed"; exit 0; }
[ -x /usr/bin/chromium ] || [ -n "${CHROMIUM:-}" ] || { skip "chromium not installed (tests/deps.sh installs it)"; exit 0; }
[ -d "$GT_ROOT/tests/browser/node_modules/playwright-core" ] ||
	{ skip "playwright-core not installed (npm install in tests/browser)"; exit 0; }
SHOTS="$GT_ROOT/${BUILD:-build}/browser"
mkdir -p "$SHOTS"

cat >"$TMP/in.folded" <<'EOF2'
main;compute;matmul 600
main;compute;gelu 200
main;load 100
idle 100
EOF2
"$R" flame "$TMP/in.folded" -o "$TMP/flame.svg" || fail "gt-render flame"
set -- --flame "$TMP/flame.svg"
if [ -x "$GT_TESTS/test_render_timeline" ] && "$GT_TESTS/test_render_timeline" --write-trace "$TMP/t.gtt" >/dev/null 2>&1 &&
	"$R" timeline "$TMP/t.gtt" -o "$TMP/timeline.svg" 2>"$TMP/tl.err"; then
	set -- "$@" --timeline "$TMP/timeline.svg"
else
	skip "no timeline to open in the browser ($(head -c 200 "$TMP/tl.err" 2>/dev/null))"
fi
timeout 120 node "$GT_ROOT/tests/browser/render_test.js" "$@" --shots "$SHOTS"
rc=$?
# render_test.js prints a FAIL line for each check that fails and exits 1 then; any other exit
# (a crash before its checks, a timeout) is a failure of its own
case $rc in
0) ;;
124) fail "browser test timed out" ;;
*) fail "browser test exited with status $rc" ;;
esac
exit 0
