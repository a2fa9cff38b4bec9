# adversarial.sh — every tool on the hostile traces of tests/unit/test_advgen.c (records legal to
# encode, absurd or contradictory in value; docs/ADVERSARIAL.md): never a signal, a hang or a
# sanitizer report, exit 0/1/2 only, strict JSON from the JSON writers, and the numbers that the
# pass found wrong stay right: samples outside the captured intervals do not inflate rates, a
# 2^64 - 1 drop count does not wrap.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze
R=$GT_BIN/gt-render
GEN=$GT_TESTS/test_advgen
PY=$(command -v python3 || true)

# name | command (IN = the trace, OUT = an output file)
CMDS=(
	"report|$A report IN"
	"fold|$A fold --threads IN"
	"fold-python|$A fold --python-only --annotate IN"
	"chrome|$A export IN --format chrome -o OUT.json"
	"speedscope|$A export IN --format speedscope -o OUT.json"
	"pprof|$A export IN --format pprof -o OUT.pb.gz"
	"diff|$A diff --json IN IN -o OUT.json"
	"check|$A check IN --golden IN"
	"flame|$R flame IN -o OUT.svg"
	"flamechart|$R flame --flamechart --threads IN -o OUT.svg"
	"timeline|$R timeline IN -o OUT.svg"
)
strict_json() { "$PY" -c 'import json,sys
def bad(c): raise ValueError("non-JSON constant " + c)
json.load(open(sys.argv[1]), parse_constant=bad)' "$1"; }

for sc in $("$GEN" --list); do
	for minor in 1 0; do
		t=$TMP/$sc.1$minor.gtt
		if ! "$GEN" --write "$sc" "$t" "$minor"; then fail "$sc: the generator failed"; continue; fi
		for c in "${CMDS[@]}"; do
			name=${c%%|*} cmd=${c#*|}
			# 1.0 traces: the report only (the readers' paths are the same after decoding)
			[ "$minor" = 0 ] && [ "$name" != report ] && continue
			out=$TMP/out.$sc.$name
			cmd=${cmd//IN/$t}; cmd=${cmd//OUT/$out}
			timeout 120 $cmd >"$TMP/stdout" 2>"$TMP/stderr"; rc=$?
			what="$sc (1.$minor) $name"
			if [ "$rc" -gt 2 ] || grep -q 'Sanitizer\|runtime error' "$TMP/stderr"; then
				fail "$what: exit $rc: $(grep -v 'no symbols' "$TMP/stderr" | head -c 400)"
				continue
			fi
			pass "$what: exit $rc"
			if [ -n "$PY" ] && [ "$rc" -le 1 ] && [ -f "$out.json" ]; then
				check "$what: strict JSON" strict_json "$out.json"
			fi
			[ "$name" = report ] && cp "$TMP/stdout" "$TMP/$sc.1$minor.report"
			[ "$name" = report ] && cp "$TMP/stderr" "$TMP/$sc.1$minor.report.err"
		done
	done
done

# Capture records that contradict the samples (a start after every sample, nested or unclosed
# intervals, bogus events): the report says so and counts rates over the whole run, so one
# thread sampled at 99 Hz never shows more than 99 samples/s or 100 % of a CPU.
for sc in capture_nested capture_unclosed capture_bogus capture_many capture_late; do
	for minor in 0 1; do
		rep=$TMP/$sc.1$minor.report
		[ -f "$rep" ] || { fail "$sc: no report"; continue; }
		check "$sc (1.$minor): the report warns of samples outside the captured intervals" \
			grep -q 'samples lie outside the captured intervals' "$rep.err"
		rate=$(sed -n 's/^samples: *[0-9]* (\([0-9.]*\)\/s.*/\1/p' "$rep")
		check "$sc (1.$minor): samples/s ($rate) is at most the 99 Hz of the one thread" \
			awk -v r="$rate" 'BEGIN { exit !(r != "" && r <= 99.5) }'
		cpu=$(awk '$1 == 4242 && $2 == 4242 { print $6; exit }' "$rep")
		check "$sc (1.$minor): the thread's CPU% from samples ($cpu) is at most 100" \
			awk -v c="$cpu" 'BEGIN { exit !(c != "" && c <= 100.5) }'
	done
done
# a trace with consistent capture records gets no such warning (the generator's own base trace
# has none; tests/cli/record_capture.sh checks real recordings)
check "a trace without capture records gets no capture warning" \
	bash -c "! grep -q 'outside the captured' '$TMP/counters.11.report.err'"

# CUPTI drop counts of 2^64 - 1 and 2 saturate in the GPU section as in the health section
check "health_absurd: the GPU section's drop count saturates (no wrap to 1)" \
	grep -q 'CUPTI dropped 18446744073709551615 activity records' "$TMP/health_absurd.11.report"

# Names come from the target (a thread names itself; a Python function is what its code says):
# no control character of theirs reaches a terminal through the human-readable outputs (report,
# diff and check tables, warnings); newline and tab are the only control bytes left.
H=$GT_ROOT/testdata/bad/hostile-names.gtt
"$A" fold "$H" >"$TMP/h.folded" 2>/dev/null
ctl() { LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2[\x80-\x9f]' "$1"; }
for c in "report|$A report $H" "diff|$A diff $H $TMP/h.folded" "check|$A check $H --golden $TMP/h.folded" \
         "fold-warnings|$A fold $H --tid 1" "render-warnings|$R flame $H -o $TMP/h.svg"; do
	name=${c%%|*} cmd=${c#*|}
	$cmd >"$TMP/h.out" 2>"$TMP/h.err"
	check "hostile names: $name: no control characters on stdout ($(ctl "$TMP/h.out"))" [ "$(ctl "$TMP/h.out")" = 0 ]
	check "hostile names: $name: no control characters on stderr ($(ctl "$TMP/h.err"))" [ "$(ctl "$TMP/h.err")" = 0 ]
done
"$A" report "$H" >"$TMP/h.report" 2>/dev/null
check "hostile names: the report still shows the names (controls as ?)" grep -q 'ctrl??\[31mred?\[0m?' "$TMP/h.report"

# A trace that shrinks while it is read (another program truncates or rewrites it in place): the
# mapped pages past the new end fault with SIGBUS. One line and exit 2, never death by the signal.
# Deterministic part: the handler (a SIGBUS while the tool waits on a FIFO for its input).
mkfifo "$TMP/fifo"
(sleep 3 >"$TMP/fifo") &
holder=$!
"$A" report "$TMP/fifo" >/dev/null 2>"$TMP/bus.err" &
pid=$!
sleep 0.5
kill -BUS "$pid"
wait "$pid"; rc=$?
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
check "SIGBUS: exit 2, not death by the signal (exit $rc)" [ "$rc" -eq 2 ]
check "SIGBUS: one line saying a file shrank ($(head -c 200 "$TMP/bus.err"))" \
	grep -q '^gt-analyze: a file being read shrank while it was read' "$TMP/bus.err"
# The real thing, at several moments: whatever the moment, no signal reaches the shell.
"$GEN" --write renames "$TMP/big.gtt" 0
for d in 0.02 0.05 0.1 0.2 0.4; do
	cp "$TMP/big.gtt" "$TMP/shrink.gtt"
	"$A" report "$TMP/shrink.gtt" >/dev/null 2>"$TMP/shrink.err" &
	pid=$!
	sleep "$d"
	truncate -s 4096 "$TMP/shrink.gtt"
	wait "$pid"; rc=$?
	check "trace truncated after ${d}s of reading: exit <= 2 ($rc)" [ "$rc" -le 2 ]
done

# --scope system samples per CPU, so short threads share its periods: 500 children of 2 ms each
# are owed ~99 samples between them at 99 Hz (the sum of per-thread floors said 0, and a real
# recording of 500 forks showed "4 intended, 84 received (2100.0%)")
rep=$TMP/short_children.11.report
tot=$(sed -n 's/^  total: \([0-9]*\) intended, \([0-9]*\) received.*/\1 \2/p' "$rep")
check "short children (system scope): intended ~ on-CPU time x rate ($tot: 90..110 intended)" \
	awk -v t="$tot" 'BEGIN { split(t, a, " "); exit !(a[1] >= 90 && a[1] <= 110 && a[2] == 100) }'

# a pid taken again by a new process after the first one exited: the model cannot tell the two
# apart (threads, names, binaries are keyed by pid), so the report says so
check "pid reuse: the report warns that a process start took an exited process's pid" \
	grep -q 'took a pid that an exited process of the recording had (pid 4242 first)' "$TMP/pid_reuse.11.report.err"
check "pid reuse: real recordings without reuse get no such warning" \
	bash -c "! '$A' report '$GT_ROOT/testdata/gpu/torch_small.gtt' 2>&1 >/dev/null | grep -q 'took a pid'"

# records timed far outside the recording (a sample at 2^64 - 1 ns in a 0.5 s recording) stretch
# the span and every rate over it: the report says the trace's times disagree
check "time going wild: the report warns of records after the END record" \
	grep -q 'records are timed up to 18446744072.[0-9]* s after the END record' "$TMP/time_back.11.report.err"
check "time going wild: a hostile meta start_ns (2^64) alone is not blamed on the records" \
	bash -c "! grep -q 'before the recording' '$TMP/meta.11.report.err'"
check "time going wild: real recordings get no such warning" \
	bash -c "! '$A' report '$GT_ROOT/testdata/gpu/torch_small.gtt' 2>&1 >/dev/null | grep -q 'records are timed'"

# --tid at its limits: a tid past 2^32 - 1 is a usage error, not "out of memory" after the load
G=$GT_ROOT/testdata/bad/base.gtt
for t in 4294967296 99999999999999999999 '' , 1, abc; do
	check_rc "fold --tid '$t' is a usage error" 64 "$A" fold "$G" --tid "$t"
	check_rc "gt-render flame --tid '$t' is a usage error" 64 "$R" flame "$G" --tid "$t" -o "$TMP/tid.svg"
done
check_rc "fold --tid 4294967295 is taken (no such thread: nothing, exit 0)" 0 "$A" fold "$G" --tid 4294967295

# gt-record --top shows thread names the target sets itself: no escape sequence of theirs reaches
# the terminal (the live view and the final table), as in gt-analyze's report
if command -v script >/dev/null 2>&1 && [ -x "$GT_BIN/gt-record" ]; then
	printf '%s\n' "printf 'ev\\033[31mred\\r' > /proc/self/comm" \
		'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' >"$TMP/esc.sh"
	timeout 60 script -qec "'$GT_BIN/gt-record' --top -o '$TMP/esc.gtt' -- bash '$TMP/esc.sh'" /dev/null \
		>"$TMP/top.out" 2>&1
	check "--top: the thread's name is shown with its controls as ?" grep -aq 'ev?\[31mred?' "$TMP/top.out"
	check "--top: the raw escape sequence never reaches the terminal" \
		bash -c "! LC_ALL=C grep -aq \$'ev\\x1b\\\\[31m' '$TMP/top.out'"
else
	skip "--top names: needs script(1) from util-linux and gt-record"
fi

# gt-record --dump (text) prints thread names as the target set them: controls as '?'
if [ -x "$GT_BIN/gt-record" ] && command -v python3 >/dev/null 2>&1; then
	printf '%s\n' 'import sys, time' "open('/proc/self/comm', 'w').write('ev\\x1b[31mred\\r')" \
		"open(sys.argv[1], 'w').write('ok')" 'time.sleep(30)' >"$TMP/nm.py"
	python3 "$TMP/nm.py" "$TMP/nm.ready" & npid=$!
	for _ in $(seq 100); do [ -s "$TMP/nm.ready" ] && break; sleep 0.1; done
	"$GT_BIN/gt-record" --dump -p "$npid" >"$TMP/dump.out" 2>&1
	kill "$npid" 2>/dev/null; wait "$npid" 2>/dev/null
	check "--dump: the thread's name is shown with its controls as ?" grep -aq 'Thread [0-9]* "ev?\[31mred?"' "$TMP/dump.out"
	check "--dump: no control byte but newline and tab in the text dump ($(ctl "$TMP/dump.out"))" [ "$(ctl "$TMP/dump.out")" = 0 ]
else
	skip "--dump names: needs gt-record and python3"
fi
