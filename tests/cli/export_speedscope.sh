# export_speedscope.sh — the speedscope export keeps no sample: the loader hands each one over as
# it merges them and the export sets them aside by thread in a temporary file (in $TMPDIR) past
# 1 MiB. On a generated trace that goes to that file twice (4 threads at 2 kHz, 96 000 samples:
# 2.2 MiB, so a thread's runs are chained across blocks), every stack weighs what the folded
# export counts for it, whole and by GIL class, and nothing is left in $TMPDIR; a temporary file
# that cannot be made or written (a full disk: `ulimit -f`) is one line and exit 2 with no output
# file; stdout and -o FILE are the same bytes.
. "$GT_ROOT/tests/cli/lib.sh"
A=$GT_BIN/gt-analyze G=$GT_ROOT/${BUILD:-build}/bench/gen_trace
PY=$(command -v python3 || true)
[ -n "$PY" ] || { skip "python3 missing"; exit 0; }
[ -x "$G" ] || { fail "bench/gen_trace not built (make bench-tools)"; exit 0; }
T=$TMP/hz.gtt
check_rc "gen_trace writes 12 s of 4 threads at 2 kHz" 0 "$G" -o "$T" --seconds 12 --threads 4 --sample-hz 2000

# every stack's weight in the speedscope file (its runs' weights summed) against the folded
# export's count of it times the period (gen_trace's samples all weigh one period); folded
# puts a [truncated] frame where the native stack was cut short, speedscope has none
cat >"$TMP/same.py" <<'PYEOF'
import collections, json, sys
d = json.load(open(sys.argv[1]))
frames = d["shared"]["frames"]
weight = collections.Counter()
for p in d["profiles"]:
    assert len(p["samples"]) == len(p["weights"])
    for s, w in zip(p["samples"], p["weights"]):
        if s:
            weight[";".join(frames[i]["name"].replace(";", ":") for i in s)] += w
count = collections.Counter()
for line in open(sys.argv[2]):
    path, n = line.rstrip("\n").rsplit(" ", 1)
    count[";".join(f for f in path.split(";") if f != "[truncated]")] += int(n)
want = int(sys.argv[3])
n = sum(count.values())
period = sum(weight.values()) // n if n else 0
bad = [k for k in set(weight) | set(count) if weight[k] != count[k] * period]
if n < want or bad:
    print("%d samples (want >= %d), period %d, %d of %d stacks differ, e.g. %s: %d ns, %d samples"
          % (n, want, period, len(bad), len(count), bad[:1], weight[bad[0]] if bad else 0, count[bad[0]] if bad else 0))
    sys.exit(1)
PYEOF
mkdir -p "$TMP/tmpdir"
for gil in any held native; do
	check_rc "export --format speedscope --gil $gil of $T" 0 env TMPDIR="$TMP/tmpdir" "$A" export "$T" \
		--format speedscope --gil "$gil" -o "$TMP/$gil.speedscope.json"
	"$A" export "$T" --format folded --gil "$gil" -o "$TMP/$gil.folded" 2>/dev/null
	min=1
	[ "$gil" = any ] && min=96000
	check "... every stack weighs what the folded export counts for it (--gil $gil)" \
		"$PY" "$TMP/same.py" "$TMP/$gil.speedscope.json" "$TMP/$gil.folded" "$min"
done
check "... nothing left in TMPDIR" test -z "$(ls -A "$TMP/tmpdir")"
"$A" export "$T" --format speedscope >"$TMP/stdout.json" 2>/dev/null
check "stdout and -o FILE are the same bytes" cmp -s "$TMP/stdout.json" "$TMP/any.speedscope.json"

# a temporary file that cannot be made, or written (a full disk): one line, exit 2, no output
check_rc "TMPDIR that does not exist: exit 2" 2 env TMPDIR="$TMP/nope" "$A" export "$T" --format speedscope \
	-o "$TMP/nodir.speedscope.json"
check "... one line naming the temporary file's directory" \
	grep -q "setting the samples aside: a temporary file in $TMP/nope: No such file" "$TMP/err"
check "... and no output file" test ! -e "$TMP/nodir.speedscope.json"
check_rc "a full disk (ulimit -f 256): exit 2" 2 bash -c 'ulimit -f 256; trap "" XFSZ; exec "$@"' sh \
	env TMPDIR="$TMP/tmpdir" "$A" export "$T" --format speedscope -o "$TMP/full.speedscope.json"
check "... one line: the temporary file is too large" \
	test "$(grep -c 'setting the samples aside: a temporary file in .*: File too large' "$TMP/err")" = 1
check "... and no output file, nothing left behind" \
	test ! -e "$TMP/full.speedscope.json" -a -z "$(ls -A "$TMP/tmpdir")"
