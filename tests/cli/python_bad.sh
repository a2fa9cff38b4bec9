#!/usr/bin/env bash
# python_bad.sh — the Python reader on bad input: a non-Python target with --python=on, an
# interpreter without symbols, an unsupported CPython, a Python that exits while being read.
# Each gives one clear message, no crash, and the CPU samples are still recorded.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze P=$GT_TESTS/progs G=$GT_ROOT/tests/progs/gilmix.py
[ -x "$REC" ] && [ -x "$ANA" ] && [ -x "$P/calltree" ] || { skip "gt-record, gt-analyze or tests/progs/calltree not built"; exit 0; }
samples() { "$ANA" report "$1" 2>/dev/null | awk '$1 == "samples:" { print $2; exit }'; }

# a C program with --python=on: exit 2, the reason, and a trace with its samples
check_rc "--python=on, non-Python target: exit 2" 2 "$REC" -o "$TMP/c.gtt" --python=on -- "$P/calltree" 0.5
check "--python=on, non-Python target: says no CPython was found" grep -q 'no CPython interpreter found in pid' "$TMP/err"
check "--python=on, non-Python target: CPU samples recorded ($(samples "$TMP/c.gtt"))" test "$(samples "$TMP/c.gtt")" -gt 0
# the same without --python=on: quiet, exit 0
check_rc "auto, non-Python target: exit 0" 0 "$REC" -o "$TMP/c2.gtt" -- "$P/calltree" 0.3
check "auto, non-Python target: no Python complaint" sh -c "! grep -qi 'cpython\|python:' '$TMP/err'"

# an executable named like an interpreter but without _PyRuntime (as a stripped static one)
cp "$P/calltree" "$TMP/python3.12"
check_rc "--python=on, interpreter without symbols: exit 2" 2 "$REC" -o "$TMP/s.gtt" --python=on -- "$TMP/python3.12" 0.5
check "interpreter without symbols: names the file and says stripped" grep -q "python3.12 has no _PyRuntime symbol (stripped interpreter?)" "$TMP/err"
check "interpreter without symbols: CPU samples recorded" test "$(samples "$TMP/s.gtt")" -gt 0

# an unsupported CPython (3.9) when one is installed
py39=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.9*/bin/python3.9 2>/dev/null | head -1)
if [ -n "$py39" ]; then
	check_rc "CPython 3.9, auto: exit 0" 0 "$REC" -o "$TMP/u.gtt" -- "$py39" -c 'for i in range(2000000): pass'
	"$ANA" report "$TMP/u.gtt" >"$TMP/u.rep" 2>&1
	check "CPython 3.9, auto: the report notes it is not supported" grep -q 'CPython 3.9 is not supported (3.10 to 3.13 are): CPU samples only' "$TMP/u.rep"
	check "CPython 3.9: CPU samples recorded" test "$(samples "$TMP/u.gtt")" -gt 0
	check_rc "CPython 3.9, --python=on: exit 2" 2 "$REC" -o "$TMP/u2.gtt" --python=on -- "$py39" -c 'pass'
	check "CPython 3.9, --python=on: says not supported" grep -q 'CPython 3.9 is not supported' "$TMP/err"
else
	skip "no CPython 3.9 to check the unsupported-version path"
fi

# a Python that exits while its threads are being read (attach mode: gt-record exits 1)
py=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.1[0-9] 2>/dev/null | tail -1)
if [ -n "$py" ]; then
	"$py" "$G" 0.5 "$TMP/ready" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -s "$TMP/ready" ] && break; sleep 0.05; done
	check_rc "Python exits mid-read (attach): gt-record exits 1, no crash" 1 "$REC" -o "$TMP/x.gtt" -p "$pid" -d 5
	wait "$pid" 2>/dev/null
	check "Python exits mid-read: summary says the target exited" grep -q 'python 3\.[0-9.]*: [0-9]* stacks.*(target exited)' "$TMP/err"
	"$ANA" report "$TMP/x.gtt" >"$TMP/x.rep" 2>&1
	check "Python exits mid-read: trace analyzes, with CPU samples and Python stack reads" \
		sh -c "grep -q '^Python and the GIL (CPython 3' '$TMP/x.rep' && test $(samples "$TMP/x.gtt") -gt 0"
	# launch mode: a Python that exits at once keeps its exit status
	check_rc "Python exiting at once (launch): its status passed through" 3 "$REC" -o "$TMP/q.gtt" -- "$py" -c 'import sys; sys.exit(3)'
else
	skip "no CPython 3.10+ for the exit-mid-read checks"
fi
