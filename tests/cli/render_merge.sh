# render_merge.sh — a timeline over its span budget (gt-render timeline --max-spans) merges the
# CUDA, API, NVTX and GIL spans narrower than a pixel per lane and pixel column: on an H200
# launch-sites trace (12 223 such spans), with the budget at 100, every span the unmerged
# timeline draws is either still drawn alone or counted in exactly one merged rectangle's
# tooltip (per kind, where a rectangle holds one kind), the rectangles are few, stderr says so
# once, the subtitle gives the counts; under the budget nothing changes. A trace over 256 MiB
# wants a window.
. "$(dirname "$0")/lib.sh"
R=$GT_BIN/gt-render
T=$GT_ROOT/testdata/gpu/launch_sites_h200.gtt
[ -x "$R" ] || { fail "no $R"; exit 0; }
check_rc "timeline with every span drawn (--max-spans 0)" 0 "$R" timeline "$T" --max-spans 0 -o "$TMP/all.svg"
check "--max-spans 0: no note on stderr" bash -c "! grep -q \"merged per pixel\" \"$TMP/err\""
check_rc "timeline over a budget of 100 spans" 0 "$R" timeline "$T" --max-spans 100 -o "$TMP/m.svg"
check "one line on stderr says the spans under a pixel are merged" \
	test "$(grep -c 'CUDA, API, NVTX and GIL spans (over --max-spans 100): those narrower than a pixel are merged' "$TMP/err")" -eq 1
check_rc "the default budget (200 000) leaves this trace as it was" 0 "$R" timeline "$T" -o "$TMP/d.svg"
check "under the budget the SVG is the same as with --max-spans 0" cmp -s "$TMP/d.svg" "$TMP/all.svg"
# a trace over 256 MiB wants a window (the timeline keeps every record it draws): one line, exit 64,
# before reading it; --from 0 reads it (this one is 300 MiB of zeros: not a trace, exit 2)
truncate -s 300M "$TMP/big.gtt"
check_rc "a 300 MiB trace without --from/--to: exit 64" 64 "$R" timeline "$TMP/big.gtt" -o "$TMP/big.svg"
check "one line says why and how (--from S --to S, or --from 0)" \
	test "$(wc -l <"$TMP/err")" -eq 1 -a "$(grep -c 'give a window with --from S --to S (or --from 0 for all of it)' "$TMP/err")" -eq 1
check "no output file" test ! -e "$TMP/big.svg"
check_rc "with --from 0 it is read (and found not to be a trace: exit 2)" 2 "$R" timeline "$TMP/big.gtt" --from 0 -o "$TMP/big.svg"
rm -f "$TMP/big.gtt"
python3 - "$TMP/all.svg" "$TMP/m.svg" <<'PY'
import re, sys
def tips(path):
    return [t for t in re.findall(r"<title>(.*?)</title>", open(path).read(), re.S)]
KINDS = [("kernel", re.compile(r"^kernel ", re.M)), ("copy", re.compile(r"^memcpy ", re.M)),
         ("memset", re.compile(r"^memset\n")), ("synchronize", re.compile(r"^synchronize ")),
         ("API call", re.compile(r"^CUDA (runtime|driver) API", re.M)), ("GIL hold", re.compile(r"^holds the GIL ")),
         ("NVTX range", re.compile(r"^NVTX range ", re.M)), ("NVTX marker", re.compile(r"^NVTX marker ", re.M))]
PLURAL = {"kernel": "kernels", "copy": "copies", "memset": "memsets", "synchronize": "synchronizes",
          "API call": "API calls", "GIL hold": "GIL holds", "NVTX range": "NVTX ranges", "NVTX marker": "NVTX markers"}
def count(path):
    per = {k: 0 for k, _ in KINDS}
    merged = {k: 0 for k, _ in KINDS}
    mixed = rects = 0
    for t in tips(path):
        m = re.match(r"^(\d+) (.+?) under a pixel, merged", t)
        if m:
            rects += 1
            n, what = int(m.group(1)), m.group(2)
            kind = [k for k in per if what in (k, PLURAL[k])]
            if kind:
                merged[kind[0]] += n
            else:
                mixed += n
            continue
        for k, rx in KINDS:
            if rx.search(t):
                per[k] += 1
                break
    return per, merged, mixed, rects
def ok(cond, what):
    print(("PASS: " if cond else "FAIL: ") + what)
a, am, amix, arects = count(sys.argv[1])
b, bm, bmix, brects = count(sys.argv[2])
total_a = sum(a.values())
ok(arects == 0 and total_a > 10000, "unmerged: no merged rectangle, %d spans drawn one by one" % total_a)
svg = open(sys.argv[2]).read()
n_attr = int(re.search(r'data-merged_spans="(\d+)"', svg).group(1))
sub = re.search(r"; (\d+) spans under a pixel merged into (\d+)</text>", svg)
ok(sub and int(sub.group(1)) == n_attr == sum(bm.values()) + bmix and int(sub.group(2)) == brects,
   "the subtitle and data-merged_spans give the merged spans (%d) and rectangles (%d) the tooltips count" %
   (n_attr, brects))
# this trace has kernels but no copies or memsets: no rectangle holds two kinds, so each kind adds up
ok(bmix == 0, "no merged rectangle mixes kinds (%d spans in mixed ones)" % bmix)
for k in a:
    ok(a[k] == b[k] + bm[k], "%s: %d drawn alone = %d alone + %d in merged tooltips" % (k, a[k], b[k], bm[k]))
ok(total_a == sum(b.values()) + sum(bm.values()) + bmix,
   "every span accounted for: %d = %d alone + %d merged" % (total_a, sum(b.values()), sum(bm.values()) + bmix))
# each merged rectangle's figures are its own: busy no longer than its stretch (a run's sums
# carried into the lane's next column made them grow along the row)
UNIT = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1.0}
def secs(v, u):
    return float(v) * UNIT.get(u, float("nan"))
over = []
for t in tips(sys.argv[2]):
    m = re.match(r"^\d+ .+? under a pixel, merged: ([0-9.]+) (\S+) busy in ([0-9.]+) (\S+) \((\d+)%\)", t)
    if m and secs(m.group(1), m.group(2)) > secs(m.group(3), m.group(4)) * 1.01 + 1e-9:
        over.append(t.split("\n")[0])
ok(brects > 0 and not over, "no merged rectangle is busier than its stretch (%d of %d: %s)" % (len(over), brects, over[:2]))
ok(brects + sum(b.values()) < total_a / 20,
   "merged: %d rectangles and %d spans alone, against %d" % (brects, sum(b.values()), total_a))
PY
exit 0
