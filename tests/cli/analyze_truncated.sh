# analyze_truncated.sh — honest stack completeness. tests/progs/bigframe_nofp spends most of its
# time under a 128 KiB stack frame that no DWARF stack copy can cover and has no frame pointers:
# the report's truncated count must equal the samples whose folded stack does not start at a
# root (within 1%), name the frame where they stopped and the remedy, and the folded stacks hang
# them under [truncated]. tests/progs/bigframe (the same with frame pointers) and gt-pipeline
# (kn_cpu_gemm keeps 128 KiB on the stack on purpose), recorded with the defaults, reach their
# roots: the frame-pointer callchain recorded with the copy completes them.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record A=$GT_BIN/gt-analyze P=$GT_TESTS/progs
[ -x "$REC" ] && [ -x "$A" ] || { skip "gt-record or gt-analyze not built"; exit 0; }
[ -x "$P/bigframe" ] && [ -x "$P/bigframe_nofp" ] || { skip "tests/progs/bigframe* not built"; exit 0; }
unset DEBUGINFOD_URLS
# where a process's or thread's stack really begins: the entries (and, for a stack completed
# from the frame-pointer chain whose callers no complete stack showed, glibc's thread entry)
# a kernel entry is the root of a kernel-only stack: a sample taken while a process exits, its user
# memory already gone (system-wide sampling catches these), has no user stack and is not truncated
ROOTS='^(_start|_dl_start_user|__clone3|__clone|clone3|clone|start_thread|__libc_start_call_main|entry_SYSCALL_64_after_hwframe|entry_SYSCALL_64|ret_from_fork|ret_from_fork_asm)$'

# fold FILE -> "TOTAL NOT_AT_ROOT MARKED": samples, samples whose stack (without the marker)
# does not start at a root, samples under [truncated]
count_roots() { # FILE [SKIP-REGEX]
	awk -v roots="$ROOTS" -v skip="${2:-}" '{
		if (skip != "" && $0 ~ skip) next
		n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s)
		marked = (s ~ /^\[truncated\]/); if (marked) { m += n; sub(/^\[truncated\];?/, "", s) }
		split(s, f, ";"); if (f[1] !~ roots) bad += n
	} END { printf "%d %d %d\n", t, bad, m }' "$1"
}
report_truncated() { sed -nE 's/^  truncated stacks: ([0-9]+) .*/\1/p' "$1"; }

# ---- without frame pointers: truncated, and said so ----
if ! "$REC" -q -F 499 -o "$TMP/nofp.gtt" -- "$P/bigframe_nofp" 1.5 >"$TMP/rec.out" 2>&1; then
	skip "gt-record cannot sample here: $(tail -1 "$TMP/rec.out")"; exit 0
fi
"$A" report "$TMP/nofp.gtt" >"$TMP/nofp.report" 2>/dev/null
"$A" fold "$TMP/nofp.gtt" >"$TMP/nofp.fold" 2>/dev/null
read -r total bad marked < <(count_roots "$TMP/nofp.fold")
rep=$(report_truncated "$TMP/nofp.report")
check "nofp: samples recorded ($total)" test "${total:-0}" -ge 100
check "nofp: most samples are under the big frame and truncated ($bad of $total)" test $((bad * 100)) -ge $((total * 40))
check "nofp: report's truncated count ($rep) = samples not starting at a root ($bad), within 1%" \
	awk -v a="${rep:-0}" -v b="$bad" -v t="$total" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d * 100 <= t) }'
check "nofp: every sample not starting at a root is under [truncated] ($marked), and only those" test "$marked" = "$bad"
check "nofp: [truncated] is a root, big_frame right under it" grep -q '^\[truncated\];big_frame;inner1;inner2;spin ' "$TMP/nofp.fold"
check "nofp: the complete stacks are untouched" grep -q '^_start;__libc_start_main;__libc_start_call_main;main;run;outer1;outer2;shallow ' "$TMP/nofp.fold"
check "nofp: the per-thread table names big_frame and why, for both threads" \
	test "$(grep -cE '^ +[0-9]+ +bigframe_nofp +[0-9]+ +[0-9.]+%  big_frame \(bigframe_nofp\) +stack copy too short$' "$TMP/nofp.report")" -eq 2
check "nofp: the remedy is given" grep -q 'stack copy too short: .* --call-graph dwarf,65528' "$TMP/nofp.report"
check "nofp: the root line does not claim them" \
	grep -qE "^  stacks reaching their root \(_start, thread start\): $((total - bad)) of $total " "$TMP/nofp.report"
if [ -x "$GT_BIN/gt-render" ]; then
	"$GT_BIN/gt-render" flame "$TMP/nofp.gtt" -o "$TMP/nofp.svg" 2>/dev/null
	check "nofp: the flame graph has a [truncated] box holding them ($bad samples)" \
		grep -q "\[truncated\] ($bad samples" "$TMP/nofp.svg"
fi
# the largest copy perf allows cannot hold 128 KiB: still truncated, still counted
if "$REC" -q -F 499 --call-graph dwarf,65528 -o "$TMP/big.gtt" -- "$P/bigframe_nofp" 1 >/dev/null 2>&1; then
	"$A" report "$TMP/big.gtt" >"$TMP/big.report" 2>/dev/null
	"$A" fold "$TMP/big.gtt" >"$TMP/big.fold" 2>/dev/null
	read -r t2 b2 m2 < <(count_roots "$TMP/big.fold")
	r2=$(report_truncated "$TMP/big.report")
	check "nofp, dwarf,65528: truncated count ($r2) = samples not at a root ($b2 of $t2)" test "${r2:-0}" = "$b2" -a "$b2" = "$m2" -a "$b2" -gt 0
else
	fail "gt-record --call-graph dwarf,65528 failed"
fi

# ---- with frame pointers, default recording: every stack reaches its root ----
if "$REC" -q -F 499 -o "$TMP/fp.gtt" -- "$P/bigframe" 1.5 >"$TMP/rec.out" 2>&1; then
	"$A" report "$TMP/fp.gtt" >"$TMP/fp.report" 2>/dev/null
	"$A" fold "$TMP/fp.gtt" >"$TMP/fp.fold" 2>/dev/null
	read -r total bad marked < <(count_roots "$TMP/fp.fold")
	rep=$(report_truncated "$TMP/fp.report")
	check "fp: samples whose stack does not start at a root: $bad of $total (want <= 1%)" test $((bad * 100)) -le "$total" -a "$total" -ge 100
	check "fp: report's truncated count (${rep:-0}) = those ($bad)" test "${rep:-0}" = "$bad" -a "$marked" = "$bad"
	# the stitched stacks are the real ones: the whole chain, from each thread's own root
	full=$(awk '{ s = $0; sub(/ [0-9]+$/, "", s) }
		s ~ /^_start;__libc_start_main;__libc_start_call_main;main;run;outer1;outer2;big_frame;inner1;inner2;spin(;|$)/ ||
		s ~ /^__clone3;start_thread;worker;run;outer1;outer2;big_frame;inner1;inner2;spin(;|$)/ { f += $NF }
		/;spin( |;)/ { t += $NF } END { printf "%d %d\n", f, t }' "$TMP/fp.fold")
	read -r f t <<<"$full"
	check "fp: samples in spin carry the whole chain from their thread's root ($f of $t, want >= 99%)" \
		test "$t" -gt 50 -a $((f * 100)) -ge $((t * 99))
	check "fp: the report says how many were completed from the frame-pointer callchain" \
		grep -qE '^  stacks reaching their root .*; [1-9][0-9]* of them completed from the frame-pointer callchain' "$TMP/fp.report"
else
	fail "gt-record of bigframe failed: $(tail -3 "$TMP/rec.out")"
fi

# ---- make demo's recording: gt-pipeline on the CPU, defaults as tests/demo.sh uses them ----
PL=$GT_BIN/gt-pipeline
if [ -x "$PL" ] && "$REC" -q -F 199 -o "$TMP/pl.gtt" -- "$PL" --backend cpu --seconds 1.5 >"$TMP/rec.out" 2>&1; then
	"$A" report "$TMP/pl.gtt" >"$TMP/pl.report" 2>/dev/null
	"$A" fold "$TMP/pl.gtt" >"$TMP/pl.fold" 2>/dev/null
	"$A" fold --threads "$TMP/pl.gtt" >"$TMP/pl.threads.fold" 2>/dev/null
	read -r total bad marked < <(count_roots "$TMP/pl.fold")
	rep=$(report_truncated "$TMP/pl.report")
	check "pipeline: kn_cpu_gemm is no root of its own" sh -c "! grep -q '^kn_cpu_gemm' '$TMP/pl.fold'"
	check "pipeline: kn_cpu_gemm's samples reach their root" \
		sh -c "grep -q '^__clone3;start_thread;worker_main;pl_worker_step;[a-z_]*;cpu_gemm;kn_cpu_gemm' '$TMP/pl.fold'"
	check "pipeline: report's truncated count (${rep:-0}) = stacks not starting at a root ($bad)" \
		test "${rep:-0}" = "$bad" -a "$marked" = "$bad"
	# built with ASan, the leak checker's tracer (a clone whose child has no outermost CFI) runs
	# at exit: truncated, rightly, but not the pipeline's own stacks
	read -r total bad marked < <(count_roots "$TMP/pl.fold" '__sanitizer::|__lsan::')
	check "pipeline: stacks not starting at a root: $bad of $total (want <= 1%)" test $((bad * 100)) -le "$total" -a "$total" -ge 50
	check "pipeline: the report says kn_cpu_gemm's stacks were completed from the frame-pointer callchain" \
		grep -qE '^  stacks reaching their root .*; [1-9][0-9]* of them completed from the frame-pointer callchain' "$TMP/pl.report"
	# every worker thread's flame graph has one root; built with ASan, a sample taken inside
	# the runtime (no frame pointers there) under kn_cpu_gemm's 128 KiB frame cannot be
	# completed and is rightly [truncated] (counted by the checks above): those are left out
	san=0
	ldd "$PL" 2>/dev/null | grep -q libasan && san=1
	roots=$(awk -v san="$san" '/__asan|__interceptor_|__sanitizer|__lsan|__ubsan/ { next }
		{ split($0, f, ";"); if (san && f[3] == "[truncated]") next
		  if (f[2] ~ /^(target|drafter)-/) r[f[2]] = r[f[2]] " " f[3] }
		END { for (t in r) { split(r[t], x, " "); delete seen; n = 0; for (i in x) if (!(x[i] in seen)) { seen[x[i]] = 1; n++ } print t, n } }' \
		"$TMP/pl.threads.fold")
	nthreads=$(echo "$roots" | grep -c .)
	check "pipeline: each of the $nthreads worker threads has a single root" \
		sh -c "[ '$nthreads' -ge 8 ] && ! echo '$roots' | grep -qv ' 1\$'" ||
		{ echo "$roots" | sed 's/^/# roots per thread: /'
		  awk -F';' '$2 ~ /^(target|drafter)-/ && $3 !~ /^__clone3$/' "$TMP/pl.threads.fold" | cut -c1-400 | head -5 |
			sed 's/^/# other root: /'
		  cp "$TMP/pl.gtt" "$GT_ROOT/${BUILD:-build}/test-logs/analyze_truncated-pl.gtt" 2>/dev/null; }
	pct=$(awk '{ n = $NF; split($0, f, ";"); if (f[2] ~ /^(target|drafter)-/) { t += n; if (index($0, ";pl_worker_step;")) w += n } }
		END { if (t) printf "%d", 100 * w / t; else print 0 }' "$TMP/pl.threads.fold")
	check "pipeline: pl_worker_step holds >= 90% of the worker threads' samples ($pct%)" test "$pct" -ge 90
else
	skip "gt-pipeline not built or not recordable"
fi
exit 0
