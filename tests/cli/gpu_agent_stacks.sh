#!/usr/bin/env bash
# gpu_agent_stacks.sh — the CUDA agent's API callbacks without a GPU: the real libgtcupti.so runs
# against a stand-in libcupti (tests/gpu/fake_cupti.c) inside Python programs recorded by
# gt-record (tests/gpu/fake_launch.py plays CUDA calls from known lines, on several threads, GIL
# released and held). Checked (tests/gpu/check_stacks.py): launch stacks for the first K calls of
# each (API, kernel) pair per thread and 1 in N after, long calls, Python function and line of
# every stack under CPython 3.10-3.13 and Debian's static 3.11, native frames from the caller of
# the CUDA library, correlation with API and kernel records, code ids that cannot collide with
# the recorder's, nested calls, the switches (off, Python off, depth cap, budget), and the
# in-flight table read from another process the way gt-record --dump reads it.
. "$(dirname "$0")/lib.sh"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
agent="$GT_BIN/../lib/libgtcupti.so"
if [ ! -x "$CUDA_HOME/bin/nvcc" ] || [ ! -f "$agent" ]; then
	skip "no CUDA at $CUDA_HOME (or the agent is not built): nothing to test"
	exit 0
fi
: >"$TMP/cc.err"
if ! build_fake_cupti ||
	! build_fake_cudart ||
	! gcc -std=gnu11 -O2 -g -iquote "$GT_ROOT/record" -o "$TMP/inflight_read" "$GT_ROOT/tests/gpu/inflight_read.c" 2>>"$TMP/cc.err" ||
	! build_callstack_dump; then
	fail "test helpers do not compile: $(head -c 400 "$TMP/cc.err")"
	exit 0
fi

# record NAME PYTHON [ENV=VALUE...] [-- GT-RECORD OPTIONS]: one recording of fake_launch.py
record() {
	local name=$1 py=$2
	shift 2
	local envs=() opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift && opts=("$@")
	env LD_LIBRARY_PATH="$TMP/fake" "${envs[@]}" timeout 120 "$GT_BIN/gt-record" -q --no-archive -F 49 \
		"${opts[@]}" -o "$TMP/$name.gtt" -- "$py" "$GT_ROOT/tests/gpu/fake_launch.py" "$TMP/$name.json" \
		--inflight-reader "$TMP/inflight_read" ${CALLS:+--calls $CALLS} >"$TMP/$name.log" 2>&1
	local rc=$?
	if [ "$rc" -ne 0 ] || [ ! -s "$TMP/$name.json" ]; then
		fail "$name: gt-record or the workload failed (exit $rc): $(tail -c 400 "$TMP/$name.log")"
		return 1
	fi
	"$TMP/callstack_dump" "$TMP/$name.gtt" >"$TMP/$name.txt" || { fail "$name: trace does not read"; return 1; }
}

pythons=()
for v in 3.10 3.11 3.12 3.13; do
	p=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python3 2>/dev/null | tail -1)
	[ -n "$p" ] && pythons+=("$p")
done
[ -x /usr/bin/python3.11 ] && pythons+=(/usr/bin/python3.11)
[ ${#pythons[@]} -gt 0 ] || pythons=(python3)
checker=python3
for py in "${pythons[@]}"; do
	name=py$("$py" -c 'import sys; print("%d%d" % sys.version_info[:2])')
	[ "$py" = /usr/bin/python3.11 ] && name=${name}deb
	# every 16th call after the first 4: enough NTH samples to check the rate; 64 KiB buffers:
	# CUPTI goes through a few dozen, each one back from the flush thread zeroed; both budgets off:
	# these runs check which calls get a stack, the budgets are checked below, and how fast stacks
	# are taken on a loaded machine (ASan build, CI) must not decide which calls have one
	record "$name" "$py" GT_CUPTI_STACK_EVERY=16 GT_CUPTI_BUFFER_KB=64 GT_CUPTI_STACK_BUDGET=0 \
		GT_CUPTI_STACK_BUDGET_NS=0 || continue
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/$name.txt" "$TMP/$name.json" default 4 16 |
		sed "s/^\(PASS\|FAIL\): /\1: $name: /"
done

py=${pythons[0]}
if record off "$py" -- --cuda-stacks=off; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/off.txt" "$TMP/off.json" off | sed 's/^\(PASS\|FAIL\): /\1: --cuda-stacks=off: /'
fi
if record envoff "$py" GT_CUPTI_STACKS=0; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/envoff.txt" "$TMP/envoff.json" off | sed 's/^\(PASS\|FAIL\): /\1: GT_CUPTI_STACKS=0: /'
fi
if record nopy "$py" GT_CUPTI_STACK_PYTHON=0; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/nopy.txt" "$TMP/nopy.json" nopython | sed 's/^\(PASS\|FAIL\): /\1: nopython: /'
fi
if record pydepth "$py" GT_CUPTI_STACK_PY_DEPTH=8; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/pydepth.txt" "$TMP/pydepth.json" pydepth | sed 's/^\(PASS\|FAIL\): /\1: pydepth: /'
fi
# every call chosen, a budget of 0.01 % and a 2 ms burst: the burst runs out, the rest is counted
if CALLS=3000 record budget "$py" GT_CUPTI_STACK_FIRST=1000000 GT_CUPTI_STACK_BUDGET=0.01 GT_CUPTI_STACK_BURST_MS=2; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/budget.txt" "$TMP/budget.json" budget 1000000 256 | sed 's/^\(PASS\|FAIL\): /\1: budget: /'
fi

# the per-call budget alone (no time budget): 1 ns per call and a 1 ms burst cannot pay for a stack
# at every call, and what it cannot pay for is counted
if CALLS=3000 record budgetns "$py" GT_CUPTI_STACK_FIRST=1000000 GT_CUPTI_STACK_BUDGET=0 GT_CUPTI_STACK_BUDGET_NS=1 \
	GT_CUPTI_STACK_BURST_MS=1; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/budgetns.txt" "$TMP/budgetns.json" budget 1000000 256 |
		sed 's/^\(PASS\|FAIL\): /\1: per-call budget: /'
fi

# API records written from the callbacks (GT_CUPTI_API=callbacks): one per followed call, CUPTI's off
if CALLS=60 record apicb "$py" GT_CUPTI_API=callbacks GT_CUPTI_BUFFER_KB=64; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/apicb.txt" "$TMP/apicb.json" apicb |
		sed 's/^\(PASS\|FAIL\): /\1: GT_CUPTI_API=callbacks: /'
fi
# many calls: each thread's queue (4096 calls, drained every 50 ms, early when half full) loses none
if CALLS=6000 record apicbmany "$py" GT_CUPTI_API=callbacks; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/apicbmany.txt" "$TMP/apicbmany.json" apicb |
		sed 's/^\(PASS\|FAIL\): /\1: GT_CUPTI_API=callbacks, 6000 calls: /'
fi

# The callback set: every non-trivial call (all), and the tracked set with an empty callback
if CALLS=40 record cball "$py" GT_CUPTI_CALLBACKS=all; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/cball.txt" "$TMP/cball.json" cball | sed 's/^\(PASS\|FAIL\): /\1: /'
fi
if CALLS=40 record cbempty "$py" GT_CUPTI_CALLBACKS=empty; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/cbempty.txt" "$TMP/cbempty.json" cbempty | sed 's/^\(PASS\|FAIL\): /\1: /'
fi

# Defaults: API records from the callbacks, every activity kind; GT_CUPTI_KINDS enables only the
# kinds it names (the agent's note says which); GT_CUPTI_API=cupti is the old way (CUPTI's records)
if CALLS=40 record kdefault "$py"; then
	check "defaults: the agent's note says api=callbacks and kinds=all" \
		grep -q 'cupti agent on: api=callbacks .* kinds=all$' "$TMP/kdefault.txt"
	check "defaults: kernels recorded" grep -q '^kernel ' "$TMP/kdefault.txt"
fi
if CALLS=40 record kinds "$py" GT_CUPTI_KINDS=memcpy,sync; then
	check "GT_CUPTI_KINDS=memcpy,sync: the agent's note names them" \
		grep -q 'cupti agent on: .* kinds=memcpy,sync$' "$TMP/kinds.txt"
	check "GT_CUPTI_KINDS=memcpy,sync: no kernel record" bash -c "! grep -q '^kernel ' '$TMP/kinds.txt'"
fi
if CALLS=40 record apicupti "$py" GT_CUPTI_API=cupti; then
	check "GT_CUPTI_API=cupti: the agent's note says api=cupti" grep -q 'cupti agent on: api=cupti ' "$TMP/apicupti.txt"
fi

# A stack at every call into the smallest ring: what does not fit is counted, never silently lost
if CALLS=1000 record ring "$py" GT_CUPTI_STACK_FIRST=1000000000 GT_CUPTI_STACK_BUDGET=0 GT_CUPTI_STACK_BUDGET_NS=0 \
	GT_CUPTI_STACK_RING_KB=64; then
	"$checker" "$GT_ROOT/tests/gpu/check_stacks.py" "$TMP/ring.txt" "$TMP/ring.json" ring 1000000000 256 | sed 's/^\(PASS\|FAIL\): /\1: ring: /'
fi

# Attach mode: a process started dormant under --prepare; `gt-record -p --cuda-stacks=off` passes
# the setting through the control file, a plain -p takes stacks (the agent's default).
for variant in off on; do
	opt=()
	[ "$variant" = off ] && opt=(--cuda-stacks=off)
	mkdir -p "$TMP/ctl"
	env LD_LIBRARY_PATH="$TMP/fake" GT_CUPTI_CTL_DIR="$TMP/ctl" "$GT_BIN/gt-record" --prepare -- \
		"$py" "$GT_ROOT/tests/gpu/fake_launch.py" "$TMP/att_$variant.json" --calls 50 --attach-wait 20 \
		>"$TMP/att_target_$variant.log" 2>&1 &
	tpid=$!
	sleep 1
	timeout 60 "$GT_BIN/gt-record" -q --no-archive "${opt[@]}" -p "$tpid" -o "$TMP/att_$variant.gtt" \
		>"$TMP/att_$variant.log" 2>&1
	wait "$tpid"
	"$TMP/callstack_dump" "$TMP/att_$variant.gtt" >"$TMP/att_$variant.txt" 2>/dev/null
	n_api=$(grep -c '^api ' "$TMP/att_$variant.txt")
	n_stack=$(grep -c '^stack ' "$TMP/att_$variant.txt")
	if [ "$variant" = off ]; then
		check "attach with --cuda-stacks=off: CUDA recorded ($n_api API records), no stacks ($n_stack), config says off" \
			bash -c "[ $n_api -gt 0 ] && [ $n_stack -eq 0 ] && grep -q 'text=cuda_callstack off' '$TMP/att_$variant.txt'"
	else
		check "attach with defaults: CUDA recorded ($n_api API records) with launch stacks ($n_stack)" \
			bash -c "[ $n_api -gt 0 ] && [ $n_stack -gt 0 ]"
	fi
done

# Another CUPTI tool holds the process: the agent steps back, leaves a note, and nothing breaks.
env LD_LIBRARY_PATH="$TMP/fake" FAKE_CUPTI_BUSY=1 timeout 60 "$GT_BIN/gt-record" -q --no-archive -o "$TMP/busy.gtt" -- \
	"$py" "$GT_ROOT/tests/gpu/fake_launch.py" "$TMP/busy.json" --calls 20 >"$TMP/busy.log" 2>&1
rc=$?
"$TMP/callstack_dump" "$TMP/busy.gtt" >"$TMP/busy.txt" 2>/dev/null
check "another CUPTI subscriber: the program runs (exit $rc), a note says why CUDA data is missing, no stacks" \
	bash -c "[ $rc -eq 0 ] && grep -q 'note.*another CUPTI tool holds the process' '$TMP/busy.txt' && ! grep -q '^stack' '$TMP/busy.txt'"
