#!/usr/bin/env bash
# dump_errors.sh — gt-record --dump on a C target and in the situations users meet: native
# names through a signal frame without frame pointers; "not a Python process" said once; a
# SIGKILL of gt-record while it holds a thread stopped leaves the target running; the target
# dying mid-dump; a job-control-stopped target stays stopped; a thread held by another tracer;
# ptrace refused (another user, root without CAP_SYS_PTRACE); usage errors. Each error is one
# line on stderr with the fix, and the exit status says what happened (0, 1 partial, 2, 64).
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record NAT=$GT_TESTS/progs/dump_native HOLD=$GT_TESTS/progs/hold_trace
[ -x "$REC" ] && [ -x "$NAT" ] && [ -x "$HOLD" ] || { skip "gt-record or test programs not built"; exit 0; }
case "$(uname -m)" in x86_64) ;; *) skip "native unwinding is x86-64 only"; exit 0 ;; esac

pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap 'cleanup; rm -rf "$TMP"' EXIT
tid_of() { awk -v r="$1" '$1 == r { print $2 }' "$2"; }
block() { awk -v t="Thread $2 " 'index($0, t) == 1 { on = 1; print; next } on && /^$/ { exit } on' "$1"; }
states() { awk '/^State:/ { print $2 }' /proc/"$1"/task/*/status 2>/dev/null | sort -u | tr -d '\n'; }
tracers() { awk '/^TracerPid:/ { print $2 }' /proc/"$1"/task/*/status 2>/dev/null | sort -u | tr -d '\n'; }
# start_native READY: the C target, its pid in $npid once every thread is in place
start_native() {
	"$NAT" "$1" >/dev/null 2>&1 &
	npid=$!
	pids+=("$npid")
	for _ in $(seq 200); do [ -s "$1" ] && break; sleep 0.05; done
	[ -s "$1" ]
}

start_native "$TMP/r1" || { fail "dump_native did not get ready"; exit 0; }
"$REC" --dump -p "$npid" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] && pass "C target: exit 0" || fail "C target: exit $rc: $(head -c 300 "$TMP/err")"
n=$(grep -c 'not a Python process' "$TMP/out")
[ "$n" -eq 1 ] && grep -q '^not a Python process (no CPython interpreter found): native stacks only$' "$TMP/out" &&
	pass "not a Python process: said once" || fail "'not a Python process' said $n times"
b=$(block "$TMP/out" "$(tid_of nap "$TMP/r1")")
echo "$b" | tr '\n' '|' | grep -Eq 'sleeping in clock_nanosleep[^|]*\|.*    clock_nanosleep \(libc\.so\.6\)\|.*    nap_inner \(dump_native\)\|    nap_outer \(dump_native\)\|    napper \(dump_native\)\|.*    start_thread' &&
	pass "no frame pointers: nap_inner <- nap_outer <- napper from the syscall up" || fail "napper: $b"
b=$(block "$TMP/out" "$(tid_of read "$TMP/r1")")
echo "$b" | tr '\n' '|' | grep -Eq 'sleeping in read .*    read_inner \(dump_native\)\|    reader \(dump_native\)' &&
	pass "reader: read_inner <- reader" || fail "reader: $b"
b=$(block "$TMP/out" "$(tid_of sig "$TMP/r1")")
echo "$b" | tr '\n' '|' | grep -Eq 'sleeping in pause.*    handler_wait \(dump_native\)\|    on_usr1 \(dump_native\)\|    <signal handler called>\|.*    sig_outer \(dump_native\)\|    sig_thread \(dump_native\)' &&
	pass "through the signal trampoline: handler_wait <- on_usr1 <- <signal handler called> <- sig_outer" ||
	fail "signal thread: $b"
b=$(block "$TMP/out" "$npid")
echo "$b" | grep -q '^    main (dump_native)$' && pass "main thread: main (dump_native)" || fail "main: $b"

# SIGKILL of gt-record while it holds a thread stopped: the kernel lets the thread go
GT_DUMP_TEST_HOLD_MS=5000 "$REC" --dump -p "$npid" >/dev/null 2>&1 &
g=$!
held=""
for _ in $(seq 100); do
	case "$(states "$npid")" in *t*) held=1; break ;; esac
	sleep 0.02
done
kill -9 "$g"
wait "$g" 2>/dev/null
sleep 0.1
st=$(states "$npid") tr=$(tracers "$npid")
if [ -z "$held" ]; then
	fail "SIGKILL mid-dump: never saw a thread held stopped"
elif kill -0 "$npid" 2>/dev/null && [[ "$st" != *[tT]* ]] && [ "$tr" = 0 ]; then
	pass "SIGKILL of gt-record mid-dump: the target runs on (states $st, no tracer)"
else
	fail "SIGKILL mid-dump left the target stopped or traced (states $st, tracers $tr)"
fi
check_rc "... and it can be dumped again" 0 "$REC" --dump -p "$npid"
grep -q '^    nap_outer (dump_native)$' "$TMP/out" && pass "... with the same stacks" || fail "second dump: $(head -c 300 "$TMP/out")"

# the target dies while gt-record holds one of its threads
start_native "$TMP/r2" || fail "dump_native did not get ready"
victim=$npid
GT_DUMP_TEST_HOLD_MS=400 "$REC" --dump -p "$victim" >"$TMP/gone.out" 2>"$TMP/gone.err" &
g=$!
sleep 0.2
kill -9 "$victim"
wait "$g"
rc=$?
[ $rc -eq 1 ] && grep -q "process $victim exited during the dump" "$TMP/gone.err" &&
	pass "process gone mid-dump: exit 1, '$(head -1 "$TMP/gone.err" | cut -c1-70)'" ||
	fail "process gone mid-dump: exit $rc, stderr: $(head -c 300 "$TMP/gone.err")"
check_rc "no such process: exit 2" 2 "$REC" --dump -p "$victim"
grep -q "no process with PID $victim" "$TMP/err" && pass "... 'no process with PID'" || fail "no such process: $(cat "$TMP/err")"

# a target stopped by job control stays stopped
kill -STOP "$npid" 2>/dev/null
start_native "$TMP/r3" && kill -STOP "$npid"
sleep 0.1
check_rc "job-control-stopped target: exit 0" 0 "$REC" --dump -p "$npid"
grep -q ': stopped (job control)' "$TMP/out" && pass "... threads shown as stopped (job control)" || fail "stopped: $(head -c 400 "$TMP/out")"
grep -q '^    nap_outer (dump_native)$' "$TMP/out" && pass "... with their stacks" || fail "stopped target: no stacks"
st=$(states "$npid")
[ "$st" = T ] && pass "... and still stopped afterwards" || fail "a stopped target was resumed (states $st)"
kill -CONT "$npid"

# another tracer holds one thread: that thread is reported, the others dumped, exit 1
start_native "$TMP/r4" || fail "dump_native did not get ready"
nt=$(tid_of nap "$TMP/r4")
"$HOLD" "$nt" >"$TMP/hold.out" 2>&1 &
h=$!
pids+=("$h")
for _ in $(seq 100); do grep -q seized "$TMP/hold.out" && break; sleep 0.02; done
"$REC" --dump -p "$npid" >"$TMP/out" 2>"$TMP/err"
rc=$?
b=$(block "$TMP/out" "$nt")
[ $rc -eq 1 ] && echo "$b" | grep -q "(not stopped: thread held by tracer $h" &&
	grep -q '^    read_inner (dump_native)$' "$TMP/out" &&
	pass "a thread held by another tracer: named, the rest dumped, exit 1" ||
	fail "another tracer: exit $rc: $b"
echo "$b" | grep -q '^    nap_outer (dump_native)$' && pass "... its stack still unwound from /proc's stack pointer and pc" ||
	fail "... no stack from /proc for the traced thread: $b"
kill "$h"

# a thread in uninterruptible sleep (waiting for a CLONE_VFORK child) is not interrupted: its
# stack comes from /proc; --children dumps the child process too
"$NAT" "$TMP/r6" vfork >/dev/null 2>&1 &
vp=$!
pids+=("$vp")
for _ in $(seq 200); do [ -s "$TMP/r6" ] && break; sleep 0.05; done
vc=$(tid_of vchild "$TMP/r6") vt=$(tid_of vfork "$TMP/r6")
[ -n "$vc" ] && pids+=("$vc")
check_rc "--children with a thread in uninterruptible sleep: exit 0" 0 "$REC" --dump --children -p "$vp"
b=$(block "$TMP/out" "$vt")
echo "$b" | head -1 | grep -q ': in uninterruptible sleep in clone' && echo "$b" | grep -q '^    __clone (libc\.so\.6)$' &&
	echo "$b" | grep -q '(not stopped: uninterruptible sleep; native stack from /proc' &&
	pass "a D-state thread: not stopped, its stack from /proc's sp and pc, said so" || fail "D-state thread: $b"
[ "$(grep -c '^Process ' "$TMP/out")" -eq 2 ] && grep -q "^Process $vc: " "$TMP/out" &&
	block "$TMP/out" "$vc" | grep -q '^    vchild (dump_native)$' &&
	pass "--children: the vfork child dumped as a second process (vchild on its stack)" ||
	fail "--children: $(grep '^Process' "$TMP/out" | tr '\n' ' ')"
st=$(awk '/^State:/ { print $2 }' /proc/"$vp"/task/*/status 2>/dev/null | sort -u | tr -d '\n')
[[ "$st" != *[tT]* ]] && pass "... and it runs on ($st)" || fail "left stopped: $st"
kill -9 "$vc" "$vp" 2>/dev/null

# ptrace refused: a process of another user, and root without CAP_SYS_PTRACE
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	# the other user writes its ready file where it may
	chmod 711 "$TMP" && mkdir -m 777 "$TMP/pub"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$NAT" "$TMP/pub/r5" >/dev/null 2>&1 &
	other=$!
	pids+=("$other")
	for _ in $(seq 200); do [ -s "$TMP/pub/r5" ] && break; sleep 0.05; done
	check_rc "root without CAP_SYS_PTRACE, another user's process: exit 2" 2 \
		setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace "$REC" --dump -p "$other"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "belongs to uid 65534: run gt-record as that user or as root" "$TMP/err" &&
		pass "... one line with the fix: $(cut -c1-80 "$TMP/err")" || fail "... stderr: $(cat "$TMP/err")"
	check_rc "root without CAP_SYS_PTRACE, a root process (a container): exit 2" 2 \
		setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace "$REC" --dump -p "$npid"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "no CAP_SYS_PTRACE.*--cap-add=SYS_PTRACE" "$TMP/err" &&
		pass "... one line with the fix (--cap-add=SYS_PTRACE)" || fail "... stderr: $(cat "$TMP/err")"
	check_rc "an unprivileged user on root's process: exit 2" 2 \
		setpriv --reuid=65534 --regid=65534 --clear-groups "$REC" --dump -p "$npid"
	[ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "belongs to uid 0" "$TMP/err" &&
		pass "... one line with the fix" || fail "... stderr: $(cat "$TMP/err")"
else
	skip "ptrace-refused cases need root and setpriv"
fi

# usage
check_rc "--dump without -p: 64" 64 "$REC" --dump
check_rc "--dump with a command: 64" 64 "$REC" --dump -p 1 -- true
check_rc "--json with -o: 64" 64 "$REC" --dump --json -o "$TMP/x.gtt" -p "$npid"
check_rc "--children without --dump: 64" 64 "$REC" --children -p "$npid"
