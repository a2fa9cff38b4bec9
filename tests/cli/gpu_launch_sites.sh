# gpu_launch_sites.sh — launch sites from the CUDA agent's launch stacks (issue 15, item 1) on a
# real H200 recording of tests/gpu/launch_sites.py (testdata/gpu/launch_sites_h200.gtt): the
# report, gt-analyze fold --weight gpu-time and gt-render flame --weight gpu-time attribute each
# kernel's launches and device time to the Python function and line that launched it
# (tests/gpu/launch_sites.expected.json), their counts agree with the raw cuda_callstack records
# (tests/gpu/callstack_dump.c + check_sites.py), and a trace without launch stacks gets none.
# GT_LAUNCH_TRACE and GT_LAUNCH_EXPECT check another recording of launch_sites.py (tests/gpu/
# launch_sites.sh on the GPU box brings back launch_sites.gtt and, in launch_sites_more.tar.gz,
# its launch_sites.expected.json) with the same assertions.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze R=$GT_BIN/gt-render
T=${GT_LAUNCH_TRACE:-$GT_ROOT/testdata/gpu/launch_sites_h200.gtt}
EXP=${GT_LAUNCH_EXPECT:-$GT_ROOT/tests/gpu/launch_sites.expected.json}
unset DEBUGINFOD_URLS
[ -x "$A" ] || { skip "gt-analyze not built"; exit 0; }
command -v python3 >/dev/null || { skip "python3 not installed"; exit 0; }

check_rc "report of the H200 launch-sites trace" 0 "$A" report "$T"
cp "$TMP/out" "$TMP/report"
check_rc "fold --weight gpu-time" 0 "$A" fold --weight gpu-time "$T"
cp "$TMP/out" "$TMP/folded"

# the raw records, independently of gt-analyze: launches with a stack per expected kernel
if gcc -std=gnu11 -O2 ${GT_SAN:-} -I"$GT_ROOT/lib" -o "$TMP/callstack_dump" "$GT_ROOT/tests/gpu/callstack_dump.c" \
	"$GT_BIN/../lib/libgtt.a" 2>"$TMP/cc.err" && "$TMP/callstack_dump" "$T" >"$TMP/dump.txt"; then
	python3 "$GT_ROOT/tests/gpu/check_sites.py" "$TMP/dump.txt" "$EXP" >"$TMP/raw.txt"
	check "raw records: every expected kernel has sampled launches ($(tr '\n' ' ' <"$TMP/raw.txt" | head -c 300))" \
		grep -q 'with a launch stack' "$TMP/raw.txt"
else
	fail "callstack_dump does not build or read the trace: $(head -c 300 "$TMP/cc.err")"
	: >"$TMP/raw.txt"
fi

# report: per expected kernel, its block's sampled count and the share of it at the expected line
check "report: launch sites per kernel, from launch stacks" python3 - "$TMP/report" "$EXP" "$TMP/raw.txt" <<'EOF'
import json, re, sys
rep, exp, raw = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), open(sys.argv[3]).read()
sec = rep[rep.index("Kernel launch sites"):]
assert re.search(r"stacks taken for the first \d+ calls .* then 1 in \d+", sec), sec[:400]
blocks = re.split(r"\n  (?=\S)", sec)
for k in exp["kernels"]:
    rx = re.compile(k["kernel_regex"])
    mine = [b for b in blocks if rx.search(b.split("\n")[0])]
    assert len(mine) == 1, (k, [b.split("\n")[0] for b in blocks])
    b = mine[0]
    m = re.search(r"(\d+) launches, ([\d.]+) ms GPU time; (\d+) of (\d+) launches sampled", b)
    n, ms, sampled = int(m.group(1)), float(m.group(2)), int(m.group(3))
    # the raw records' count of launches with a stack, for this kernel
    r = re.search(r"%s kernels .*?: (\d+) launches, (\d+) with a launch stack" % re.escape(k["site"]), raw)
    if r:
        assert (int(r.group(1)), int(r.group(2))) == (n, sampled), (r.group(0), n, sampled)
    right = est = 0.0
    site = "%s (%s:%d)" % (k["site"], exp["file"], k["line"])
    for row in re.finditer(r"^ +(\d+) +[\d.]+% +([\d.]+) +([\d.]+) +[\d.]+%  (.*)$", b, re.M):
        if row.group(4).startswith(site):
            right += int(row.group(1))
            est += float(row.group(2))
    share = right / sampled
    assert sampled > 0 and share >= exp["min_attributed"], (k, right, sampled)
    assert abs(est - n) <= 0.5 + 0.05 * n, (k, est, n)   # the site stands for (nearly) all launches
    print("%s: %d launches, %d sampled, %.1f %% at %s, ~%.0f launches there" % (k["site"], n, sampled,
          100 * share, site, est))
EOF

# fold: per kernel leaf, the GPU time under the expected function, and the whole kernel's time
check "fold --weight gpu-time: each kernel's device time under its launching function" \
	python3 - "$TMP/folded" "$TMP/report" "$EXP" <<'EOF'
import json, re, sys
lines = [l.rsplit(" ", 1) for l in open(sys.argv[1]).read().splitlines()]
rep, exp = open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
tot = re.search(r"Kernels \((\d+) launches of (\d+) kernels, ([\d.]+) ms GPU time", rep)
kernel_ns = sum(int(c) for s, c in lines if s.split(";")[-1].startswith("[kernel "))
assert abs(kernel_ns / 1e6 - float(tot.group(3))) < 0.002, (kernel_ns, tot.group(0))
for k in exp["kernels"]:
    rx = re.compile(k["kernel_regex"])
    mine = [(s.split(";"), int(c)) for s, c in lines if s.split(";")[-1].startswith("[kernel ") and rx.search(s.split(";")[-1])]
    total = sum(c for f, c in mine)
    right = sum(c for f, c in mine if k["site"] in f)
    assert total > 0 and right / total >= exp["min_attributed"], (k, right, total)
    assert not any(f[0] == "[no launch stack]" for f, c in mine), k
    print("%s: %.3f ms of %.3f ms GPU time under it" % (k["site"], right / 1e6, total / 1e6))
EOF

# a trace without launch stacks: nothing attributed, said once
check_rc "report of a trace without launch stacks" 0 "$A" report "$GT_ROOT/testdata/gpu/torch_small.gtt"
check "report says there are no launch stacks, and guesses none" bash -c \
	"grep -q 'this trace has no launch stacks' '$TMP/out' && ! grep -q 'nearest' '$TMP/out'"
check_rc "fold --weight gpu-time of a trace without launch stacks" 0 "$A" fold --weight gpu-time \
	"$GT_ROOT/testdata/gpu/torch_small.gtt"
check "every line of it is under [no launch stack]" bash -c \
	"[ -s '$TMP/out' ] && ! grep -v '^\[no launch stack\];\[\(kernel\|memcpy\|memset\)' '$TMP/out'"
check_rc "fold: --weight wants a known word" 64 "$A" fold --weight banana "$T"
check_rc "fold: --gil does not go with --weight gpu-time" 64 "$A" fold --weight gpu-time --gil held "$T"

if [ -x "$R" ]; then
	check_rc "gt-render flame --weight gpu-time" 0 "$R" flame --weight gpu-time "$T" -o "$TMP/g.svg"
	check "flame: each site's GPU time as in the folded stacks" python3 - "$TMP/g.svg" "$TMP/folded" "$EXP" <<'EOF'
import html, json, re, sys
svg, exp = open(sys.argv[1]).read(), json.load(open(sys.argv[3]))
lines = [l.rsplit(" ", 1) for l in open(sys.argv[2]).read().splitlines()]
assert "GPU time by launch site" in svg
titles = {}
for t in re.findall(r"<title>([^<]*)</title>", svg):
    m = re.match(r"(.*) \((\d+) ns GPU time, [\d.]+%\)$", html.unescape(t))
    if m:
        titles[m.group(1)] = titles.get(m.group(1), 0) + int(m.group(2))
for k in exp["kernels"]:
    want = sum(int(c) for s, c in lines if k["site"] in s.split(";"))
    assert titles.get(k["site"]) == want, (k["site"], titles.get(k["site"]), want)
    kern = [n for n in titles if n.startswith("[kernel ") and re.search(k["kernel_regex"], n)]
    assert kern, k
EOF
	check_rc "gt-render: --weight gpu-time with --flamechart is refused" 64 "$R" flame --weight gpu-time --flamechart "$T"
	check_rc "timeline of the trace" 0 "$R" timeline "$T" -o "$TMP/t.svg"
	check "timeline: API ticks carry their call's launch stack, as many as the report's sampled launches" \
		python3 - "$TMP/t.svg" "$TMP/report" "$EXP" <<'EOF'
import html, json, re, sys
svg, rep, exp = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
tips = [html.unescape(t) for t in re.findall(r"<title>(cuda[A-Za-z_]*Launch[^<]*)</title>", svg)]
with_stack = [t for t in tips if "\nlaunch stack (" in t]
none = [t for t in tips if t.endswith("\nno launch stack captured for this call")]
assert with_stack and none and len(with_stack) + len(none) == len(tips), (len(with_stack), len(none), len(tips))
sec = rep[rep.index("Kernel launch sites"):]
for k in exp["kernels"]:
    b = [b for b in re.split(r"\n  (?=\S)", sec) if re.search(k["kernel_regex"], b.split("\n")[0])][0]
    sampled = int(re.search(r"(\d+) of \d+ launches sampled", b).group(1))
    site = "Python: %s (%s:%d)" % (k["site"], exp["file"], k["line"])
    n = sum(1 for t in with_stack if site in t)
    assert n == sampled, (k["site"], n, sampled)
    print("%s: %d API ticks show the stack (%d sampled launches)" % (k["site"], n, sampled))
EOF
else
	skip "gt-render not built"
fi
exit 0
