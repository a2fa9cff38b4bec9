# export_formats.sh — every export of the golden pipeline trace is read back by a consumer:
# JSON parsers, speedscope's own file-format schema (when its npm package is installed),
# structure checks of the Chrome trace (tracks named, small tids, slices well formed),
# protoc --decode_raw and gzip for pprof; folded equals `fold`.
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

check "Chrome trace: JSON with named tracks, small tids, well-formed slices" "$PY" - "$TMP/out.chrome" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
named = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
xs = [e for e in ev if e["ph"] == "X"]
assert xs, "no slices"
for e in xs:
    assert e["dur"] >= 0 and e["ts"] > 0 and (e["pid"], e["tid"]) in named and e["pid"] in procs, e
    assert 0 < e["tid"] < 10000
# slices on one track nest: sorted by start, each either inside or after the previous ones
for key in {(e["pid"], e["tid"]) for e in xs}:
    open_ends = []
    for e in sorted((e for e in xs if (e["pid"], e["tid"]) == key), key=lambda e: (e["ts"], -e["dur"])):
        while open_ends and open_ends[-1] <= e["ts"] + 1e-9:
            open_ends.pop()
        end = e["ts"] + e["dur"]
        assert not open_ends or end <= open_ends[-1] + 1e-6, ("overlap", e)
        open_ends.append(end)
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
	skip "go tool pprof not installed (optional consumer)"
fi
check_rc "unknown format is a usage error" 64 "$A" export "$T" --format svg
check_rc "missing trace is broken input" 2 "$A" export "$TMP/nope.gtt" --format chrome
