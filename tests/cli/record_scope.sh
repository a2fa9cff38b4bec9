#!/usr/bin/env bash
# record_scope.sh — gt-record --scope: system-wide sampling (one event per CPU for every task)
# keeps the target's process tree only — threads and children born later included, in launch
# and attach mode — while an unrelated busy process runs beside it and appears nowhere in the
# trace (no sample, no name, no mapping, no switch); --scope process still works; without the
# privilege the default falls back to per-task events with a one-line note; a child whose FORK
# record was lost is described from /proc.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record P=$GT_TESTS/progs SUM=$GT_TESTS/test_rec_trace
for t in "$REC" "$SUM" "$P/faulty" "$P/forker" "$P/threads_late" "$P/calltree"; do
	[ -x "$t" ] || { skip "scope: $(basename "$t") not built"; exit 0; }
done
val() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
meta() { awk -v k="$1" '$1 == "meta" && $2 == k { print $3; exit }' "$2"; }
samples_of() { awk -v n="$1" '$1 == "thread" && $4 == n { s += $5 } END { print s + 0 }' "$2"; }
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 9)
if ! "$REC" -q --scope system -o "$TMP/probe.gtt" -- true 2>"$TMP/probe.err"; then
	skip "scope: system-wide sampling not possible here ($(head -1 "$TMP/probe.err"))"
	system=0
else
	system=1
fi

# an unrelated process that spins on both CPUs for the whole test, under a name of its own
U=gtunrel$$
cp "$P/faulty" "$TMP/$U"
"$TMP/$U" spin 30 2 & upid=$!
trap 'kill $upid 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 0.2

# nothing of pid, word or gt-record itself in a trace: samples, names, mappings, switches
absent() { # TRACE WHAT
	"$SUM" find "$1" "$U" "$upid" >"$TMP/find.u"
	"$SUM" find "$1" "no-such-word-$$" "$2" >"$TMP/find.r"
	test "$(val text "$TMP/find.u")" -eq 0 -a "$(val pid "$TMP/find.u")" -eq 0 -a "$(val stack "$TMP/find.u")" -eq 0 \
		-a "$(val pid "$TMP/find.r")" -eq 0
}
# every process with samples is one the trace saw born, started or attached
sampled_pids_known() {
	awk '$1 == "process" { known[$2] = 1 } $1 == "thread" && $5 > 0 && !known[$2] { bad = 1; print "unknown pid " $2 }
	     END { exit bad }' "$1"
}

if [ "$system" = 1 ]; then
	# launch: a shell that starts a multi-threaded program (a thread born 0.5 s in) and a
	# forking one (a child, and a child that execs)
	"$REC" -q --scope system -o "$TMP/s.gtt" -- sh -c "'$P/threads_late' 1.5 & '$P/forker' 1.5; wait" & rpid=$!
	wait "$rpid"; rc=$?
	check "system, launch: exit 0 ($rc)" test "$rc" -eq 0
	"$SUM" summary "$TMP/s.gtt" >"$TMP/s.sum"
	check "system, launch: meta scope system" test "$(meta scope "$TMP/s.sum")" = system
	for n in early late forkchild execd forker; do
		check "system, launch: '$n' sampled ($(samples_of $n "$TMP/s.sum"))" test "$(samples_of $n "$TMP/s.sum")" -gt 0
	done
	check "system, launch: the unrelated process and gt-record ($rpid) appear nowhere" absent "$TMP/s.gtt" "$rpid"
	check "system, launch: every sampled process is one of the tree's" sampled_pids_known "$TMP/s.sum"
	check "system, launch: context switches of the tree recorded ($(val switches "$TMP/s.sum"))" \
		test "$(val switches "$TMP/s.sum")" -gt 0
	check "system, launch: a note counts the other processes' records dropped" \
		grep -q '^health 1 8 system-wide sampling: [1-9][0-9]* records of other processes dropped' "$TMP/s.sum"
	# the drain merges the CPUs' rings (each in time order) into one time order; the writer keeps
	# each kind's order (samples and switches have packed chunks of their own: docs/FORMAT.md,
	# "Streams"), so each kind is checked on its own
	CAT=$GT_ROOT/${BUILD:-build}/bench/gtt_cat
	if [ -x "$CAT" ]; then
		"$CAT" "$TMP/s.gtt" sample switch | awk '$2 < last[$1] { bad++ } { n++; last[$1] = $2 } END { print n + 0, bad + 0 }' >"$TMP/order"
		read -r n_ord bad_ord <"$TMP/order"
		check "system, launch: samples and switches each in time order across CPUs ($bad_ord of $n_ord out of order)" \
			test "$n_ord" -gt 100 -a "$bad_ord" -eq 0
	fi
	check "system, launch: trace whole (END, not truncated)" \
		sh -c "grep -q '^end 1 ' '$TMP/s.sum' && grep -q '^truncated 0' '$TMP/s.sum'"
	# a busy single-threaded program: received samples match on-CPU time x rate on average
	"$REC" -q --scope system -F 499 -o "$TMP/c.gtt" -- "$P/calltree" 1.5
	"$SUM" summary "$TMP/c.gtt" >"$TMP/c.sum"
	pct=$(val received_pct "$TMP/c.sum")
	check "system: samples vs on-CPU time x rate on a busy program ($pct%, $(val samples "$TMP/c.sum") samples)" \
		awk -v p="$pct" 'BEGIN { exit !(p >= 75 && p <= 125) }'

	# attach: existing threads and a thread born after the attach
	"$P/threads_late" 2.5 & tpid=$!
	sleep 0.2
	check_rc "system, attach: -d ends it, exit 0" 0 "$REC" -q --scope system -p "$tpid" -d 1.2 -o "$TMP/a.gtt"
	wait "$tpid"
	"$SUM" summary "$TMP/a.gtt" >"$TMP/a.sum"
	check "system, attach: meta scope system" test "$(meta scope "$TMP/a.sum")" = system
	check "system, attach: existing thread sampled ($(samples_of early "$TMP/a.sum"))" test "$(samples_of early "$TMP/a.sum")" -gt 0
	check "system, attach: thread born after the attach sampled ($(samples_of late "$TMP/a.sum"))" \
		test "$(samples_of late "$TMP/a.sum")" -gt 0
	check "system, attach: the unrelated process appears nowhere" absent "$TMP/a.gtt" 0
	check "system, attach: mappings synthesized for the target" test "$(val mappings_build_id "$TMP/a.sum")" -ge 2

	# a child forked while the rings were full (gt-record stopped: the unrelated spinner's
	# samples fill them in ~4 s at 999 Hz): its FORK record is lost, and the child is found
	# through /proc at its first record, named, with its threads and mappings, and a note
	ANA=$GT_BIN/gt-analyze CAT=$GT_TESTS/../bench/gtt_cat
	if [ -x "$ANA" ] && [ -x "$CAT" ] && [ -x "$P/known_tree" ]; then
		"$REC" -q -F 999 --switch-events=on -o "$TMP/lost.gtt" -- sh -c "sleep 5.5; '$P/known_tree' 2.5; true" \
			>/dev/null 2>"$TMP/lost.err" & rpid=$!
		sleep 0.5
		kill -STOP "$rpid"
		sleep 6.5
		kill -CONT "$rpid"
		wait "$rpid"; rc=$?
		check "system, lost fork: the recording ends well (exit $rc)" test "$rc" -eq 0
		"$ANA" report "$TMP/lost.gtt" >"$TMP/lost.rep" 2>&1
		kpid=$(awk '$NF == "2.5" && $(NF-1) ~ /\/known_tree$/ { print $1; exit }' "$TMP/lost.rep")
		[ -n "$kpid" ] || sed -n '/^Processes/,/^Top func/p' "$TMP/lost.rep"
		check "system, lost fork: the child is in the process table by its command (pid ${kpid:-none})" test -n "$kpid"
		check "system, lost fork: its thread is named and its samples symbolized (kt_spin)" \
			awk -v p="$kpid" '$1 == p && $3 == "known_tree" && / kt_spin/ { ok = 1 } END { exit !ok }' "$TMP/lost.rep"
		check "system, lost fork: the unrelated process still appears nowhere" absent "$TMP/lost.gtt" 0
		# process records: tag time time pid tid event ppid comm (event 4: fork, 1: start)
		if [ -n "$kpid" ] && "$CAT" "$TMP/lost.gtt" process | awk -v p="$kpid" '$4 == p && $6 == 4 { f = 1 } END { exit !f }'; then
			skip "system, lost fork: the child's FORK record was not among the lost ones ($(grep -o 'lost records: [0-9]*' "$TMP/lost.rep"))"
		else
			check "system, lost fork: the child's process record is a start read from /proc" \
				sh -c "'$CAT' '$TMP/lost.gtt' process | awk -v p='$kpid' '\$4 == p && \$6 == 1 { f = 1 } END { exit !f }'"
			check "system, lost fork: a note says its fork record was lost and /proc described it" \
				grep -q "pid $kpid (.*known_tree.*): its fork record was among the lost records" "$TMP/lost.rep"
		fi
	fi
fi

# --scope process: per-task events, the same tree
check_rc "process, launch: exit 0" 0 "$REC" -q --scope process -o "$TMP/p.gtt" -- sh -c "'$P/threads_late' 1.2 & '$P/forker' 1.2; wait"
"$SUM" summary "$TMP/p.gtt" >"$TMP/p.sum"
check "process, launch: meta scope process" test "$(meta scope "$TMP/p.sum")" = process
for n in late forkchild execd; do
	check "process, launch: '$n' sampled ($(samples_of $n "$TMP/p.sum"))" test "$(samples_of $n "$TMP/p.sum")" -gt 0
done
check "process, launch: the unrelated process appears nowhere" absent "$TMP/p.gtt" 0
check_rc "--scope other: usage error 64" 64 "$REC" --scope cluster -- true

# not permitted (another user, perf_event_paranoid > 0): per-task events, with one line and a note
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ "$paranoid" -gt 0 ]; then
	NB=$TMP/nobody; mkdir -p "$NB"; chmod 777 "$NB"; chmod 711 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$REC" --no-cuda -o "$NB/n.gtt" -- "$P/calltree" 0.5 \
		>/dev/null 2>"$TMP/n.err"; rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'perf_event_open' "$TMP/n.err"; then
		skip "not root: perf_event_open refused even per task here ($(head -1 "$TMP/n.err"))"
	else
		check "not root: records, exit 0 ($rc)" test "$rc" -eq 0
		check "not root: one line says system-wide needs root and per-task is used" \
			test "$(grep -c 'system-wide sampling needs root or perf_event_paranoid <= 0; using per-task events' "$TMP/n.err")" -eq 1
		"$SUM" summary "$NB/n.gtt" >"$TMP/n.sum"
		check "not root: meta scope process, samples ($(val samples "$TMP/n.sum"))" \
			test "$(meta scope "$TMP/n.sum")" = process -a "$(val samples "$TMP/n.sum")" -gt 0
		check "not root: the trace has the note" grep -q '^health 1 8 system-wide sampling needs root' "$TMP/n.sum"
		setpriv --reuid=65534 --regid=65534 --clear-groups "$REC" -q --no-cuda --scope system -o "$NB/f.gtt" -- true \
			>/dev/null 2>"$TMP/f.err"; rc=$?
		check "not root, --scope system: exit 2 ($rc), one line naming perf_event_paranoid" \
			sh -c "test $rc -eq 2 && test \$(wc -l <'$TMP/f.err') -eq 1 && grep -q 'perf_event_paranoid' '$TMP/f.err'"
		check "not root, --scope system: no trace left" test ! -e "$NB/f.gtt"
	fi
else
	skip "not root: needs root, setpriv and kernel.perf_event_paranoid > 0 (now $paranoid) to run gt-record unprivileged"
fi
kill "$upid" 2>/dev/null
