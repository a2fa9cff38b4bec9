#!/usr/bin/env bash
# job_timens_agent.sh — a command that enters a time namespace of its own under gt-record
# (`gt-record -- unshare --time --monotonic 4 python3 ...`): its CUDA agent stamps API and kernel
# records on the namespace's clock, 4 s ahead of gt-record's. The merge of the agent's side files
# must move them onto the trace clock (the offset gt-record read when the process joined): every
# cuda_api record inside its thread's life as perf saw it, inside the recording. Runs the real agent
# against the stand-in CUPTI (tests/gpu/fake_cupti.c, as gpu_agent_stacks.sh does); without the
# namespace as the control.
. "$(dirname "$0")/lib.sh"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
agent="$GT_BIN/../lib/libgtcupti.so"
CAT=$GT_ROOT/${BUILD:-build}/bench/gtt_cat
if [ ! -x "$CUDA_HOME/bin/nvcc" ] || [ ! -f "$agent" ] || [ ! -x "$CAT" ]; then
	skip "no CUDA at $CUDA_HOME, the agent or gtt_cat not built: nothing to test"
	exit 0
fi
if ! unshare --time --fork --monotonic 4 true 2>/dev/null; then
	skip "time namespaces: unshare --time needs root and Linux >= 5.6"
	exit 0
fi
: >"$TMP/cc.err"
if ! build_fake_cupti ||
	! build_fake_cudart; then
	fail "the stand-in CUPTI does not compile: $(head -c 400 "$TMP/cc.err")"
	exit 0
fi
PY=$(command -v python3)
inside() { # TRACE: "N api records, M outside their thread's life or the recording"
	"$CAT" "$1" meta thread cuda_api clock | awk '
		$1 == "meta" && $2 == "start_ns" { start = $3 }
		$1 == "clock" && $8 == 3 { end = $2 }
		$1 == "thread" && $6 == 1 { s[$5] = $2 }
		$1 == "thread" && $6 == 3 { e[$5] = $2 }
		$1 == "cuda_api" { n++; a0[n] = $2; a1[n] = $3; at[n] = $5 }
		END { for (i = 1; i <= n; i++) { t = at[i]
			# a thread without a start record (the main thread of the launched command) began with the recording
			if (((t in s) && a0[i] < s[t]) || ((t in e) && a1[i] > e[t]) || a0[i] < start || a1[i] > end) bad++ }
			print n + 0, bad + 0 }'
}
for how in plain timens; do
	pre=()
	[ $how = timens ] && pre=(unshare --time --fork --monotonic 4)
	env LD_LIBRARY_PATH="$TMP/fake" timeout 120 "$GT_BIN/gt-record" -q --no-archive -F 49 -o "$TMP/$how.gtt" -- \
		"${pre[@]}" "$PY" "$GT_ROOT/tests/gpu/fake_launch.py" "$TMP/$how.json" --calls 50 >"$TMP/$how.log" 2>&1
	rc=$?
	check "$how: recorded (exit $rc)" test "$rc" -eq 0 -a -s "$TMP/$how.json"
	read -r n bad < <(inside "$TMP/$how.gtt")
	check "$how: every one of $n API records within its thread's life and the recording ($bad outside)" \
		test "${n:-0}" -gt 100 -a "${bad:-1}" -eq 0
done
