# export_formats.sh — every export of the golden pipeline trace is read back by a consumer:
# JSON parsers, speedscope's own file-format schema (when its npm package is installed),
# structure checks of the Chrome trace (tracks named, OS tids, B/E slices paired and nested),
# protoc --decode_raw and gzip for pprof; folded equals `fold`; -o infers the format from the
# file's name or refuses. tests/cli/export_consumers.sh opens them in go tool pprof and speedscope.
. "$GT_ROOT/tests/cli/lib.sh"
A="$GT_BIN/gt-analyze"
T="$GT_ROOT/testdata/golden/v1.0/pipeline_cpu.gtt"
PY=$(command -v python3 || true)
[ -n "$PY" ] || { skip "python3 missing"; exit 0; }

for f in folded speedscope chrome pprof; do
	check_rc "export --format $f exits 0" 0 "$A" export "$T" --format "$f" -o "$TMP/out.$f"
done
"$A" fold "$T" >"$TMP/fold"
check "folded export equals gt-analyze fold" cmp -s "$TMP/out.folded" "$TMP/fold"

# speedscope: valid JSON, weights sum to the samples' ns per thread, and the schema shipped in
# speedscope's npm package accepts it (the package is looked up, not downloaded).
check "speedscope is valid JSON with one sampled profile per sampled thread" "$PY" - "$TMP/out.speedscope" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
profs = d["profiles"]
assert d["$schema"].endswith("file-format-schema.json")
assert len(profs) >= 2 and all(p["type"] == "sampled" and p["unit"] == "nanoseconds" for p in profs)
nf = len(d["shared"]["frames"])
for p in profs:
    assert len(p["samples"]) == len(p["weights"]) > 0
    assert all(0 <= i < nf for s in p["samples"] for i in s)
    assert p["endValue"] - p["startValue"] >= sum(p["weights"])
PYEOF
schema=""
for d in "$GT_ROOT/tests/consumers/node_modules/speedscope" "$(npm root -g 2>/dev/null)/speedscope"; do
	[ -f "$d/dist/release/file-format-schema.json" ] && schema="$d/dist/release/file-format-schema.json" && break
done
if [ -z "$schema" ]; then
	skip "speedscope npm package not installed (tests/deps.sh installs it in tests/consumers)"
elif ! "$PY" -c 'import jsonschema' 2>/dev/null; then
	skip "python3 jsonschema missing (Debian python3-jsonschema)"
else
	check "speedscope's own file-format schema accepts the export" "$PY" -c '
import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' "$TMP/out.speedscope" "$schema"
fi

check "Chrome trace: JSON with named tracks, OS tids, B/E slices nested and paired" "$PY" - "$TMP/out.chrome" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
be = [e for e in ev if e["ph"] in "BE"]
assert be, "no slices"
for e in be:
    assert e["ts"] > 0 and (e["pid"], e["tid"]) in named and e["pid"] in procs, e
    assert 0 < e["tid"] < 1 << 22, ("not an OS tid", e)
    assert e["cat"] in ("native", "python", "linux_kernel"), e
# per track, in file order: every E closes the innermost open B of its name, times never go back
stacks = {}
for e in be:
    st = stacks.setdefault((e["pid"], e["tid"]), [])
    if e["ph"] == "B":
        assert not st or e["ts"] >= st[-1]["ts"], ("begins before its parent", e)
        st.append(e)
    else:
        assert st and st[-1]["name"] == e["name"] and e["ts"] >= st[-1]["ts"], ("unpaired end", e)
        st.pop()
assert all(not st for st in stacks.values()), "slices left open"
for e in ev:
    if e["ph"] == "X":
        assert e["dur"] >= 0 and e["tid"] >= 1 << 30 and e["cat"] in ("gil", "cuda_api", "cuda_kernel",
            "cuda_memcpy", "cuda_memset", "cuda_sync", "nvtx"), e
PYEOF

check "pprof export is a gzip stream" gzip -t "$TMP/out.pprof"
if command -v protoc >/dev/null; then
	gzip -dc "$TMP/out.pprof" >"$TMP/profile.pb"
	protoc --decode_raw <"$TMP/profile.pb" >"$TMP/raw.txt" 2>"$TMP/raw.err"
	check "protoc --decode_raw parses the profile" test -s "$TMP/raw.txt"
	check "profile has samples, locations, functions, mappings, string table" "$PY" - "$TMP/raw.txt" <<'PYEOF'
import re, sys
top = [l.split()[0].rstrip(":") for l in open(sys.argv[1]) if l.strip() and not l.startswith(" ") and l[0] != "}"]
for field in ("1", "2", "3", "4", "5", "6"):
    assert field in top, "missing top-level field " + field
PYEOF
else
	skip "protoc missing (Debian protobuf-compiler)"
fi
if command -v go >/dev/null && go tool pprof -h >/dev/null 2>&1; then
	go tool pprof -top "$TMP/out.pprof" >"$TMP/pprof.top" 2>&1
	check "go tool pprof reads the profile and ranks kn_cpu_gemm_block" grep -q kn_cpu_gemm_block "$TMP/pprof.top"
else
	skip "go tool pprof not installed (Debian golang-go; tests/cli/export_consumers.sh checks more)"
fi
check_rc "unknown format is a usage error" 64 "$A" export "$T" --format svg
check_rc "-o x.pb.gz without --format writes pprof" 0 "$A" export "$T" -o "$TMP/infer.pb.gz"
check "... a gzip stream (folded text before)" gzip -t "$TMP/infer.pb.gz"
check_rc "-o x.speedscope.json without --format writes speedscope" 0 "$A" export "$T" -o "$TMP/infer.speedscope.json"
check "... with speedscope's schema URL" grep -q 'speedscope.app/file-format-schema.json' "$TMP/infer.speedscope.json"
check_rc "-o x.json without --format writes a Chrome trace" 0 "$A" export "$T" -o "$TMP/infer.json"
check "... with traceEvents" grep -q '"traceEvents"' "$TMP/infer.json"
check_rc "-o x.folded without --format writes folded" 0 "$A" export "$T" -o "$TMP/infer.folded"
check "... equal to fold" cmp -s "$TMP/infer.folded" "$TMP/fold"
check_rc "-o with a name that does not say the format: usage error, nothing written" 64 "$A" export "$T" -o "$TMP/out.bin"
check "... the file is not created" test ! -e "$TMP/out.bin"
check_rc "--gil on export" 0 "$A" export "$GT_ROOT/testdata/golden/v1.0/python_gilmix.gtt" --gil held -o "$TMP/held.folded"
"$A" fold "$GT_ROOT/testdata/golden/v1.0/python_gilmix.gtt" --gil held >"$TMP/held.fold"
check "... selects the same samples as fold --gil held" cmp -s "$TMP/held.folded" "$TMP/held.fold"
check_rc "--gil with an unknown word is a usage error" 64 "$A" export "$T" --gil sometimes
if [ -x "$GT_BIN/gt-render" ]; then
	# one vocabulary: gt-render's --gil released draws the samples fold --gil released keeps
	# (before, render's released was nogil only and fold's nogil and waiting)
	for w in released held nogil,wait; do
		want=$("$A" fold "$GT_ROOT/testdata/golden/v1.0/python_gilmix.gtt" --gil "$w" | awk '{ s += $NF } END { print s }')
		"$GT_BIN/gt-render" flame "$GT_ROOT/testdata/golden/v1.0/python_gilmix.gtt" --gil "$w" -o "$TMP/g.svg" 2>/dev/null
		check "gt-render --gil $w draws the $want samples fold --gil $w keeps" grep -q "<title>all ($want samples" "$TMP/g.svg"
	done
fi
check_rc "missing trace is broken input" 2 "$A" export "$TMP/nope.gtt" --format chrome
