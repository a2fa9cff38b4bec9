#!/usr/bin/env bash
# pipeline_driver.sh — pipeline/driver.py (Python threads over ctypes) under every CPython on the machine:
# it runs, prints tokens/s, and writes telemetry with the per-thread Python vs native CPU split.
. "$(dirname "$0")/lib.sh"
LIB="$GT_ROOT/$BUILD/lib/libgtpipeline.so"
DRIVER="$GT_ROOT/pipeline/driver.py"
CHECK="$GT_ROOT/tests/cli/pipeline_telemetry.py"
[ -f "$LIB" ] || { fail "libgtpipeline.so not built ($LIB)"; exit 1; }
export GT_PIPELINE_LIB="$LIB"

pythons=$(ls /root/.pyenv/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.11 2>/dev/null)
[ -n "$pythons" ] || pythons=$(command -v python3)
for py in $pythons; do
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || { skip "$py does not start"; continue; }
	name="python $ver ($py)"
	timeout 60 "$py" "$DRIVER" --seconds 0.5 --targets 2 --drafters 2 --layers 2 --python-work 0.5 \
		--telemetry "$TMP/py.json" >"$TMP/py.out" 2>"$TMP/py.err"
	rc=$?
	check "$name: driver exits 0 (exit $rc: $(head -c 200 "$TMP/py.err"))" test "$rc" -eq 0
	check "$name: prints tokens/s and the queue summary" \
		sh -c "grep -q '^tokens/s: ' '$TMP/py.out' && grep -q '^queue depth: mean' '$TMP/py.out'"
	"$py" "$CHECK" "$TMP/py.json" --driver python --backend cpu --label "$name" | grep -E '^(FAIL|SKIP):' || \
		pass "$name: telemetry consistent"
	check "$name: records the interpreter" \
		"$py" -c 'import json,sys,platform; d=json.load(open(sys.argv[1])); sys.exit(platform.python_version() not in d["driver_detail"])' "$TMP/py.json"
done

py=$(echo "$pythons" | head -n 1)
timeout 20 "$py" "$DRIVER" --min-ready 99 --queue-depth 3 >"$TMP/o" 2>"$TMP/e"
rc=$?
check "driver: min_ready above depth exits 64 with one line (exit $rc)" \
	sh -c "[ $rc -eq 64 ] && [ \$(wc -l <'$TMP/e') -eq 1 ] && grep -q 'min-ready 99' '$TMP/e'"
timeout 20 "$py" "$DRIVER" --lib /nonexistent/libgtpipeline.so >"$TMP/o" 2>"$TMP/e"
check "driver: a missing library exits 2" test $? -eq 2
