# export_consumers.sh — gt-analyze's exports read by the tools people open them in: go tool pprof
# (Debian golang-go) on the pprof export, and the speedscope app (npm, in headless Chromium through
# playwright-core) on the speedscope and Chrome trace exports. tests/deps.sh installs all three;
# a missing one is a SKIP line naming what to install.
. "$(dirname "$0")/lib.sh"
A="$GT_BIN/gt-analyze"
G="$GT_ROOT/testdata/golden/v1.0"
E="$GT_TESTS/test_export"

# ---- go tool pprof ----
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	export HOME="$TMP" GOFLAGS=-mod=mod # pprof keeps nothing in the real home
	"$A" export "$G/python_gilmix.gtt" -o "$TMP/py.pb.gz" || fail "export python_gilmix"
	go tool pprof -top -nodecount=100000 "$TMP/py.pb.gz" >"$TMP/py.top" 2>"$TMP/py.err"
	# names with parentheses are what pprof's C++ name tidying cuts: "<module> (file:line)" must survive it
	check "pprof: Python's <module> frames keep their name and place ($(grep -c '<module>' "$TMP/py.top") rows)" \
		grep -Eq ' <module> \(gilmix\.py:[0-9]+\)$' "$TMP/py.top"
	check "pprof: no frame shows as <unknown> (its name tidied away)" bash -c "! grep -q '<unknown>' '$TMP/py.top'"
	go tool pprof -tags "$TMP/py.pb.gz" >"$TMP/py.tags" 2>&1
	check "pprof: samples carry thread, tid, pid and gil labels" bash -c \
		"grep -q 'gil:' '$TMP/py.tags' && grep -q 'thread:' '$TMP/py.tags' && grep -q 'python+GIL' '$TMP/py.tags'"
	"$A" export "$G/pipeline_cpu.gtt" -o "$TMP/pl.pb.gz" || fail "export pipeline_cpu"
	go tool pprof -lines -top -nodecount=100000 "$TMP/pl.pb.gz" >"$TMP/pl.lines" 2>&1
	lines=$(grep -o 'kn_cpu_gemm_block kernels/cpu_gemm.c:[0-9]*' "$TMP/pl.lines" | sed 's/.*://' | sort -un | tr '\n' ' ')
	check "pprof -lines: the hot loop at the lines it runs ($lines), not the function's declaration (46)" \
		bash -c "[ \$(echo '$lines' | wc -w) -ge 2 ] && ! echo ' $lines' | grep -q ' 46 '"
	go tool pprof -top "$TMP/pl.pb.gz" >"$TMP/pl.top" 2>&1
	check "pprof -top ranks the CPU GEMM first" bash -c "grep -A1 'flat%' '$TMP/pl.top' | tail -1 | grep -q kn_cpu_gemm_block"
else
	skip "go tool pprof not installed (Debian golang-go; tests/deps.sh installs it)"
fi

# ---- speedscope ----
why=""
command -v node >/dev/null || why="node not installed (Debian nodejs)"
[ -z "$why" ] && ! { [ -x "${CHROMIUM:-/usr/bin/chromium}" ]; } && why="chromium not installed (Debian chromium)"
[ -z "$why" ] && [ ! -d "$GT_ROOT/tests/browser/node_modules/playwright-core" ] && why="playwright-core not installed (npm install in tests/browser)"
[ -z "$why" ] && [ ! -f "$GT_ROOT/tests/consumers/node_modules/speedscope/dist/release/index.html" ] && why="speedscope not installed (npm install in tests/consumers)"
if [ -n "$why" ]; then
	skip "speedscope: $why"
	exit 0
fi
"$E" --write speedscope "$TMP/timeline.speedscope.json" || fail "test_export --write speedscope"
"$E" --write chrome "$TMP/timeline.json" || fail "test_export --write chrome"
# Chrome traces as .json: speedscope takes a *.chrome.json name for a DevTools performance profile
for n in pipeline_cpu python_gilmix; do
	"$A" export "$G/$n.gtt" --format chrome -o "$TMP/$n.json" || fail "export $n chrome"
	"$A" export "$G/$n.gtt" -o "$TMP/$n.speedscope.json" || fail "export $n speedscope"
done
# the timeline model: alpha for the first second, two seconds off-CPU, beta for the fourth
timeout -s KILL 300 node "$GT_ROOT/tests/consumers/speedscope_check.js" \
	"$TMP/timeline.speedscope.json" alpha@0.125/1 @0.5/0 @0.6/1 beta@0.875/1 -- \
	"$TMP/timeline.json" main@0.125/0 alpha@0.125/1 @0.5/0 beta@0.875/1 -- \
	"$TMP/pipeline_cpu.json" -- "$TMP/python_gilmix.json" -- \
	"$TMP/pipeline_cpu.speedscope.json" -- "$TMP/python_gilmix.speedscope.json"
rc=$?
[ $rc -eq 0 ] || fail "speedscope_check.js exited $rc"
