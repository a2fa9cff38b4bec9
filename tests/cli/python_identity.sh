#!/usr/bin/env bash
# python_identity.sh — Python identity in gt-record + gt-analyze + gt-render
# (tests/progs/py_identity.py):
# - thread names from the threading module under every CPython 3.10+ here (pyenv's and Debian's
#   /usr/bin/python3.11): "drafter-0 (pythonX.Y)" and the renamed "target-1b" in the report's
#   thread table, fold --threads roots, the Chrome export's thread names and the timeline;
# - a multiprocessing Pool started with fork, spawn and forkserver (all three under 3.12, one
#   under each other interpreter, in turn): Python frames (pool_work) for every worker process;
# - <module> frames of two files stay apart as "<module> (mod_a.py:LINE)" under every
#   interpreter, and --python-frames function merges them again;
# - a child Python that cannot be read (CPython 3.9, or --python=off) gets a WARNING naming it.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze REN=$GT_BIN/gt-render P=$GT_ROOT/tests/progs/py_identity.py
[ -x "$REC" ] && [ -x "$ANA" ] || { skip "gt-record or gt-analyze not built"; exit 0; }
pythons=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.1[0-9] 2>/dev/null)
[ -n "$pythons" ] || { skip "no CPython 3.10+ on this machine"; exit 0; }
py312=$(echo "$pythons" | grep -m1 '3\.12' || echo "$pythons" | head -1)

# ---- thread names, every interpreter ----
i=0
for py in $pythons; do
	i=$((i + 1))
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
	t=$TMP/th$i.gtt
	if ! "$REC" -q -F 199 -o "$t" -- "$py" "$P" threads 3 >"$TMP/out" 2>"$TMP/err"; then
		fail "$ver: gt-record failed: $(head -c 300 "$TMP/err")"
		continue
	fi
	"$ANA" report "$t" >"$TMP/rep" 2>/dev/null
	"$ANA" fold --threads "$t" >"$TMP/fold" 2>/dev/null
	comm=$(basename "$py")
	bad=""
	for name in drafter-0 target-1b MainThread; do
		# the report's Python table: PID TID NAME... (the name with the OS name in parentheses)
		grep -Eq "^ +[0-9]+ +[0-9]+  $name \($comm\) " "$TMP/rep" || bad="$bad report:$name"
		# fold --threads: "process PID;name TID;..."
		grep -Eq "^[^;]+;$name \($comm\) [0-9]+;" "$TMP/fold" || bad="$bad fold:$name"
	done
	# the name before the rename is gone (the last one wins), and never shown for another thread
	grep -q "target-1 (" "$TMP/fold" && bad="$bad fold:old-name"
	if [ -z "$bad" ]; then
		pass "CPython $ver ($py): drafter-0, target-1b (renamed), MainThread by name in the report and fold --threads"
	else
		fail "CPython $ver ($py): thread names missing:$bad ($(grep -m3 -E '^ +[0-9]+ +[0-9]+  ' "$TMP/rep" | tr -s ' ' | tr '\n' '|'))"
	fi
done

# the exports and the timeline carry them too (one interpreter is enough: the model names them)
t=$TMP/th.gtt
"$REC" -q -F 199 -o "$t" -- "$py312" "$P" threads 2 >/dev/null 2>&1
"$ANA" export --format chrome -o "$TMP/c.json" "$t" >/dev/null 2>&1
check "Chrome export: thread_name metadata says drafter-0 (python...)" grep -q '"name": *"drafter-0 (python' "$TMP/c.json"
"$ANA" export --format speedscope -o "$TMP/s.json" "$t" >/dev/null 2>&1
check "speedscope export: a profile named after drafter-0" grep -q 'drafter-0 (python' "$TMP/s.json"
if "$REN" timeline "$t" -o "$TMP/tl.svg" >/dev/null 2>&1; then
	check "timeline: a row labelled drafter-0 (python...)" grep -q 'drafter-0 (python' "$TMP/tl.svg"
else
	skip "gt-render timeline not available"
fi

# ---- multiprocessing: every worker's Python, whatever the start method, every interpreter ----
# (a few samples are proof enough; the work spins against the clock, so a loaded machine gives
# each worker less CPU: the thresholds stay low). Every start method under 3.12, one under each
# other interpreter in turn (the methods and the versions' layouts are apart: the thread and
# module checks read every version; all 15 pairs took 40 s of CI's budget)
i=0 k=0
methods=(fork spawn forkserver)
for py in $pythons; do
	i=$((i + 1))
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
	if [ "$py" = "$py312" ]; then
		these="${methods[*]}"
	else
		these=${methods[$((k % 3))]} k=$((k + 1))
	fi
	for method in $these; do
		t=$TMP/pool-$i-$method.gtt
		if ! "$REC" -q -F 199 -o "$t" -- "$py" "$P" pool "$method" 2 3 >"$TMP/out" 2>"$TMP/err"; then
			fail "CPython $ver pool $method: gt-record failed: $(head -c 300 "$TMP/err")"
			continue
		fi
		workers=$(awk '$1 == "worker" { print $2 }' "$TMP/out" | sort -u)
		"$ANA" fold --threads --python-only "$t" >"$TMP/fold" 2>/dev/null
		n_w=0 bad=""
		for w in $workers; do
			n_w=$((n_w + 1))
			# samples of the worker's process under pool_work (fold --threads: "comm PID;...")
			k=$(awk -v w="$w" '{ split($0, a, ";"); n = split(a[1], r, " ") } r[n] == w && /;pool_work;/ { k += $NF } END { print k + 0 }' "$TMP/fold")
			[ "$k" -ge 5 ] || bad="$bad $w:$k"
		done
		if [ "$n_w" -eq 3 ] && [ -z "$bad" ]; then
			pass "CPython $ver ($py) pool $method: Python frames (pool_work) in all 3 worker processes"
		else
			fail "CPython $ver ($py) pool $method: $n_w workers, some without >= 5 pool_work samples:${bad:- none} ($(grep -c . "$TMP/fold") stacks)"
			# what the trace says of them (samples at all? read by the Python reader? lost records?)
			"$ANA" report "$t" 2>&1 | grep -E "^ +[0-9]+ |lost records|python|Python|note" | head -40 | sed 's/^/    report: /'
			cp "$t" "$GT_ROOT/${BUILD:-build}/test-logs/python_identity-$ver-$method.gtt" 2>/dev/null
		fi
	done
done

# ---- <module> frames carry their place ----
i=0
for py in $pythons; do
	i=$((i + 1))
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)
	t=$TMP/mod$i.gtt
	"$REC" -q -F 199 -o "$t" -- "$py" "$P" modules 2 >/dev/null 2>&1
	"$ANA" fold --python-only "$t" >"$TMP/fold" 2>/dev/null
	a=$(awk '/;<module> \(mod_a\.py:[0-9]+\)( [0-9]+$|;)/ { k += $NF } END { print k + 0 }' "$TMP/fold")
	b=$(awk '/;<module> \(mod_b\.py:[0-9]+\)( [0-9]+$|;)/ { k += $NF } END { print k + 0 }' "$TMP/fold")
	check "CPython $ver ($py): <module> frames apart by file:line: mod_a $a, mod_b $b samples" [ "$a" -ge 5 -a "$b" -ge 5 ]
	if [ "$a" -lt 5 ] || [ "$b" -lt 5 ]; then
		# too few samples (seen twice on a busy VM: one CPU's sampling went quiet): what the
		# trace's health says, and the trace kept
		"$ANA" report "$t" 2>&1 | sed -n '/^Sampler health/,/^$/p' | head -40 | sed 's/^/    report: /'
		cp "$t" "$GT_ROOT/${BUILD:-build}/test-logs/python_identity-mod$i.gtt" 2>/dev/null
	fi
	check "CPython $ver ($py): the script's own <module> with its line" grep -Eq '^<module> \(py_identity\.py:[0-9]+\);' "$TMP/fold"
	[ "$py" = "$py312" ] && cp "$t" "$TMP/mod.gtt"
done
t=$TMP/mod.gtt
"$ANA" fold --python-only --python-frames function "$t" >"$TMP/fold2" 2>/dev/null
check "--python-frames function: plain <module> again" \
	sh -c "grep -q ';<module>;' '$TMP/fold2' && ! grep -q 'mod_a.py' '$TMP/fold2'"
"$ANA" fold --python-only --python-frames line "$t" >"$TMP/fold3" 2>/dev/null
check "--python-frames line: every frame with its place" grep -Eq 'modules_mode \(py_identity\.py:[0-9]+\)' "$TMP/fold3"
check_rc "--python-frames bogus: a usage error" 64 "$ANA" fold --python-frames bogus "$t"
if [ -x "$REN" ]; then
	"$REN" flame --python-frames function "$t" -o "$TMP/f.svg" >/dev/null 2>&1
	check "gt-render flame --python-frames function" sh -c "grep -q '&lt;module&gt;' '$TMP/f.svg' && ! grep -q 'mod_a.py' '$TMP/f.svg'"
fi

# ---- a child whose Python is not read gets a warning naming it ----
py39=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.9*/bin/python3.9 2>/dev/null | head -1)
if [ -n "$py39" ]; then
	t=$TMP/child.gtt
	"$REC" -q -F 199 -o "$t" -- "$py312" "$P" child "$py39" 2 >"$TMP/out" 2>/dev/null
	c=$(awk '$1 == "child" { print $2 }' "$TMP/out")
	"$ANA" report "$t" >"$TMP/rep" 2>"$TMP/err"
	check "CPython 3.9 child $c: WARNING in the report naming it, with the reason" \
		grep -Eq "WARNING: pid $c \(.*\): [0-9]+ samples .* but no Python stacks: CPython 3\.9 is not supported" "$TMP/rep"
	check "... and on stderr for every command" grep -q "warning: pid $c .*no Python stacks" "$TMP/err"
	check "the parent (3.12) is read" grep -q "^Python and the GIL (CPython 3.12" "$TMP/rep"
else
	skip "no CPython 3.9 for an unreadable child"
fi
t=$TMP/off.gtt
"$REC" -q -F 199 --python=off -o "$t" -- "$py312" "$P" pool fork 1 2 >"$TMP/out" 2>/dev/null
"$ANA" report "$t" >"$TMP/rep" 2>/dev/null
n=$(grep -c "WARNING: pid [0-9]* (.*) .* no Python stacks: recorded with --python=off" "$TMP/rep")
check "--python=off: a WARNING for each Python process with samples ($n)" [ "$n" -ge 3 ]
exit 0
