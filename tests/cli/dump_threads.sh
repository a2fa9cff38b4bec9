#!/usr/bin/env bash
# dump_threads.sh — acceptance for gt-record --dump on Python: tests/progs/dump_target.py (two
# threads deadlocked on two locks, one in os.read on a pipe, one in a ctypes nanosleep, a native
# pthread in sleep(), a pure-Python spinner, main in join) under every CPython 3.10+ on the
# machine. Each thread must show its state and system call, its GIL state, the right Python
# function and line, and native frames down to the libc system call wrapper; the process must
# keep running and dump the same way a second time; the JSON must parse and its native unwind
# must equal eu-stack's (libdw) address for address on every blocked thread; and -o must give a
# trace in which gt-analyze (libdw) finds the same merged stacks.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze T=$GT_ROOT/tests/progs/dump_target.py
[ -x "$REC" ] || { skip "gt-record not built"; exit 0; }
case "$(uname -m)" in x86_64) ;; *) skip "native unwinding is x86-64 only"; exit 0 ;; esac
pythons=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.1[0-9] 2>/dev/null)
[ -n "$pythons" ] || { skip "no CPython 3.10+ on this machine"; exit 0; }

line() { grep -n "# line:$1\$" "$T" | cut -d: -f1; }
L_AB=$(line lock_ab) L_BA=$(line lock_ba) L_READ=$(line read) L_CSLEEP=$(line csleep) L_SPIN=$(line spin) L_JOIN=$(line join)
tid_of() { awk -v r="$1" '$1 == r { print $2 }' "$2"; }
# block OUT TID: the lines of one thread in the text dump
block() { awk -v t="Thread $2 " 'index($0, t) == 1 { on = 1; print; next } on && /^$/ { exit } on' "$1"; }
# first native frame of a block (the leaf)
leaf() { sed -n '2,$p' | grep -v '^    kernel:' | head -1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap 'cleanup; rm -rf "$TMP"' EXIT

# check_dump LABEL OUT READY: every thread of the target as it must be; 0 when all held
check_dump() {
	local label=$1 out=$2 ready=$3 bad="" b gil_rel
	gil_rel='GIL (released|not held)'
	b=$(block "$out" "$(tid_of lock_ab "$ready")")
	echo "$b" | grep -Eq ": sleeping in futex.*, $gil_rel\$" || bad="$bad lock_ab-state"
	echo "$b" | grep -Eq "^    lock_ab \(.*dump_target\.py:$L_AB\)\$" || bad="$bad lock_ab-line"
	echo "$b" | grep -q "^    PyThread_acquire_lock_timed (" || bad="$bad lock_ab-native"
	echo "$b" | leaf | grep -Eq '^    __futex_abstimed_wait_common[0-9]* \(libc\.so\.6\)$' || bad="$bad lock_ab-leaf"
	b=$(block "$out" "$(tid_of lock_ba "$ready")")
	echo "$b" | grep -Eq ": sleeping in futex.*, $gil_rel\$" || bad="$bad lock_ba-state"
	echo "$b" | grep -Eq "^    lock_ba \(.*dump_target\.py:$L_BA\)\$" || bad="$bad lock_ba-line"
	b=$(block "$out" "$(tid_of reader "$ready")")
	echo "$b" | grep -Eq ": sleeping in read .*, $gil_rel\$" || bad="$bad reader-state"
	echo "$b" | grep -Eq "^    reader \(.*dump_target\.py:$L_READ\)\$" || bad="$bad reader-line"
	echo "$b" | grep -q "^    _Py_read (" || bad="$bad reader-native"
	echo "$b" | leaf | grep -Eq '^    (read|__libc_read|__GI___libc_read) \(libc\.so\.6\)$' || bad="$bad reader-leaf"
	b=$(block "$out" "$(tid_of csleep "$ready")")
	# a dump before this one interrupted the sleep: the kernel resumes it as restart_syscall
	echo "$b" | grep -Eq ": sleeping in (clock_nanosleep|nanosleep|restart_syscall).*, $gil_rel\$" || bad="$bad csleep-state"
	echo "$b" | grep -Eq "^    csleep \(.*dump_target\.py:$L_CSLEEP\)\$" || bad="$bad csleep-line"
	echo "$b" | grep -q "^    ffi_call (libffi" || bad="$bad csleep-ffi"
	echo "$b" | leaf | grep -Eq '^    (clock_nanosleep|__clock_nanosleep) \(libc\.so\.6\)$' || bad="$bad csleep-leaf"
	b=$(block "$out" "$(tid_of native "$ready")")
	echo "$b" | head -1 | grep -Eq ': sleeping in (clock_nanosleep|nanosleep|restart_syscall)( \(.*\))?$' || bad="$bad native-state"
	echo "$b" | grep -q '^    sleep (libc\.so\.6)$' || bad="$bad native-sleep"
	echo "$b" | grep -q '^    start_thread (libc\.so\.6)$' || bad="$bad native-root"
	echo "$b" | grep -q '\.py:' && bad="$bad native-has-python"
	b=$(block "$out" "$(tid_of spin0 "$ready")")
	echo "$b" | grep -Eq "^    spin \(.*dump_target\.py:($L_SPIN|$((L_SPIN - 1)))\)\$" || bad="$bad spin-line"
	echo "$b" | head -1 | grep -Eq ', GIL (holds|waiting)$' || bad="$bad spin-gil"
	b=$(block "$out" "$(tid_of main "$ready")")
	echo "$b" | head -1 | grep -q '(main): sleeping' || bad="$bad main-state"
	echo "$b" | grep -Eq "^    main \(.*dump_target\.py:$L_JOIN\)\$" || bad="$bad main-line"
	echo "$b" | grep -Eq '^    (Thread\.)?join \(' || bad="$bad main-join"
	[ "$(grep -c '^Thread ' "$out")" -eq 7 ] || bad="$bad thread-count($(grep -c '^Thread ' "$out"))"
	if [ -n "$bad" ]; then
		fail "$label: wrong:$bad (output in $out.keep)"
		cp "$out" "$out.keep" 2>/dev/null
		cp "$out" "$GT_ROOT/$BUILD/test-logs/dump_threads.$(basename "$out").txt" 2>/dev/null
		return 1
	fi
	return 0
}

covered="" i=0
for py in $pythons; do
	i=$((i + 1))
	ready=$TMP/ready$i
	"$py" "$T" "$ready" 1 >/dev/null 2>&1 &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 200); do [ -s "$ready" ] && break; sleep 0.05; done
	if [ ! -s "$ready" ]; then
		fail "$py: dump_target.py did not get ready"
		continue
	fi
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	ok=1
	for round in 1 2; do
		"$REC" --dump -p "$pid" >"$TMP/out$i.$round" 2>"$TMP/err$i.$round"
		rc=$?
		if [ $rc -ne 0 ]; then
			fail "$py round $round: gt-record --dump exit $rc: $(head -c 300 "$TMP/err$i.$round")"
			ok=0
			continue
		fi
		check_dump "CPython $ver ($py) dump $round" "$TMP/out$i.$round" "$ready" || ok=0
		# the target runs on: not stopped, not traced
		st=$(awk '/^State:/ { print $2 }' /proc/"$pid"/task/*/status | sort -u | tr -d '\n')
		tr=$(awk '/^TracerPid:/ { print $2 }' /proc/"$pid"/task/*/status | sort -u | tr -d '\n')
		if ! kill -0 "$pid" 2>/dev/null || [[ "$st" == *[tT]* ]] || [ "$tr" != 0 ]; then
			fail "$py round $round: the target is not running freely after the dump (states $st, tracers $tr)"
			ok=0
		fi
	done
	[ $ok = 1 ] && pass "CPython $ver ($py): every thread right twice (state, syscall, GIL, Python lines, native frames down to libc)"
	[ $ok = 1 ] && covered="$covered $ver"

	# JSON: parses; the native unwind equals eu-stack's for blocked threads
	"$REC" --dump --json -p "$pid" >"$TMP/j$i.json" 2>/dev/null
	if command -v eu-stack >/dev/null 2>&1; then
		eu-stack -q -p "$pid" >"$TMP/eu$i.txt" 2>/dev/null
	fi
	if python3 - "$TMP/j$i.json" "$TMP/eu$i.txt" "$ready" >"$TMP/jr$i" 2>&1 <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
roles = dict(l.split() for l in open(sys.argv[3]))
p = d["processes"][0]
th = {t["tid"]: t for t in p["threads"]}
assert len(th) == 7, "threads: %d" % len(th)
assert p["python"] and p["python"]["version"], "no python"
ab = th[int(roles["lock_ab"])]
assert any(f["kind"] == "python" and f["function"] == "lock_ab" for f in ab["frames"]), "lock_ab frame"
assert ab["syscall"] == "futex" and ab["ptrace"] == "ok" and ab["registers"] == "ptrace", ab["syscall"]
assert th[int(roles["native"])]["gil"] is None, "native thread has a GIL state"
eu, cur = {}, None
try:
    for l in open(sys.argv[2]):
        m = re.match(r"TID (\d+):", l)
        if m:
            cur = int(m.group(1)); eu[cur] = []; continue
        m = re.match(r"#\d+\s+0x([0-9a-f]+)", l)
        if m and cur:
            eu[cur].append(int(m.group(1), 16))
except FileNotFoundError:
    print("no eu-stack"); sys.exit(0)
same = 0
for t in p["threads"]:
    if t["state"] != "S":
        continue
    mine = [int(x, 16) for x in t["native_pcs"]]
    assert mine == eu.get(t["tid"]), "tid %d: ours %s, eu-stack %s" % (t["tid"], [hex(x) for x in mine], [hex(x) for x in eu.get(t["tid"], [])])
    same += 1
print("eu-stack agrees on %d blocked threads" % same)
EOF
	then
		pass "CPython $ver: --json parses, roles right; $(cat "$TMP/jr$i")"
	else
		fail "CPython $ver: --json: $(tail -c 400 "$TMP/jr$i")"
	fi
done

# -o: a one-snapshot trace; gt-analyze unwinds it with libdw and splices the Python frames
py=$(echo "$pythons" | grep -m1 '3\.12' || echo "$pythons" | head -1)
ready=$TMP/ready_o
"$py" "$T" "$ready" >/dev/null 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 200); do [ -s "$ready" ] && break; sleep 0.05; done
if [ -x "$ANA" ] && [ -s "$ready" ]; then
	check_rc "--dump -o writes a trace" 0 "$REC" --dump -p "$pid" -o "$TMP/snap.gtt"
	check_rc "--dump -o never replaces a file (exit 2)" 2 "$REC" --dump -p "$pid" -o "$TMP/snap.gtt"
	grep -q 'a dump never replaces a file' "$TMP/err" && pass "... and says so" || fail "no reason given: $(cat "$TMP/err")"
	"$ANA" fold "$TMP/snap.gtt" >"$TMP/snap.fold" 2>"$TMP/snap.err"
	ab=$(tid_of lock_ab "$ready") rd=$(tid_of reader "$ready")
	"$ANA" fold --tid "$ab" "$TMP/snap.gtt" >"$TMP/ab.fold" 2>/dev/null
	"$ANA" fold --tid "$rd" "$TMP/snap.gtt" >"$TMP/rd.fold" 2>/dev/null
	grep -Eq ';lock_ab;.*;PyThread_acquire_lock_timed;.*futex' "$TMP/ab.fold" &&
		grep -Eq ';reader;.*;_Py_read;' "$TMP/rd.fold" &&
		[ "$(wc -l <"$TMP/snap.fold")" -ge 6 ] &&
		pass "gt-analyze fold on the snapshot: Python frames spliced into libdw's native stacks ($(wc -l <"$TMP/snap.fold") stacks)" ||
		fail "gt-analyze fold on the snapshot: $(head -c 600 "$TMP/ab.fold") / $(head -c 300 "$TMP/snap.err")"
fi
echo "# versions covered:$covered"
