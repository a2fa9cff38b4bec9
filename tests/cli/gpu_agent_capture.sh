#!/usr/bin/env bash
# gpu_agent_capture.sh — the CUDA agent's NVTX side without a GPU: tests/gpu/nvtx_play.c, a C
# program using NVTX's own header-only client (which loads the agent through
# NVTX_INJECTION64_PATH, which hands NVTX to the stand-in libcupti of tests/gpu/fake_cupti.c),
# recorded by gt-record with the real libgtcupti.so. Checked (tests/gpu/check_capture.py): capture
# ranges by NVTX range name (push/pop, start/end across threads, nested ranges, default domain,
# NAME@DOMAIN, NAME@*), kernels kept by the call that launched them (a kernel launched inside that
# runs after the range is kept, one launched before that runs inside is not), API records and
# launch stacks only inside, capture records in the trace, the time rule when the agent has no
# API callbacks; counters from NVTX markers with each payload type, in domains, with registered
# and wide-character messages; attach mode passing the rule through the control file; the same
# from Python through python/gt_nvtx.py's own NVTX client (tests/gpu/nvtx_py.py).
. "$(dirname "$0")/lib.sh"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
agent="$GT_BIN/../lib/libgtcupti.so"
if [ ! -x "$CUDA_HOME/bin/nvcc" ] || [ ! -f "$agent" ]; then
	skip "no CUDA at $CUDA_HOME (or the agent is not built): nothing to test"
	exit 0
fi
: >"$TMP/cc.err"
if ! build_fake_cupti ||
	! gcc -std=gnu11 -O2 -g -I"$CUDA_HOME/include" -o "$TMP/nvtx_play" "$GT_ROOT/tests/gpu/nvtx_play.c" \
		-ldl -pthread 2>>"$TMP/cc.err" ||
	! build_callstack_dump; then
	fail "test helpers do not compile: $(head -c 400 "$TMP/cc.err")"
	exit 0
fi

# play NAME RULE [ENV=VALUE...]: one recording of nvtx_play with capture rule RULE ("none": no rule)
play() {
	local name=$1 rule=$2
	shift 2
	local cap=()
	[ "$rule" != none ] && cap=(GT_CUPTI_CAPTURE_NVTX="$rule")
	env LD_LIBRARY_PATH="$TMP/fake" "${cap[@]}" "$@" timeout 60 "$GT_BIN/gt-record" -q --no-archive -F 49 \
		-o "$TMP/$name.gtt" -- "$TMP/nvtx_play" "$TMP/$name.exp" >"$TMP/$name.log" 2>&1
	local rc=$?
	if [ "$rc" -ne 0 ] || [ ! -s "$TMP/$name.exp" ]; then
		fail "$name: gt-record or nvtx_play failed (exit $rc): $(tail -c 400 "$TMP/$name.log")"
		return 1
	fi
	"$TMP/callstack_dump" "$TMP/$name.gtt" >"$TMP/$name.txt" || { fail "$name: trace does not read"; return 1; }
}
checker() { python3 "$GT_ROOT/tests/gpu/check_capture.py" "$@"; }

for rule in none train_step train_step@other 'train_step@*'; do
	name=cap_$(echo "$rule" | tr -c 'a-z_\n' '_')
	play "$name" "$rule" && checker "$TMP/$name.txt" "$TMP/$name.exp" "$rule" | sed "s/^\(PASS\|FAIL\): /\1: $name: /"
done
# gt-record --capture-range=nvtx:NAME hands the rule to the agent itself (no environment variable)
if env LD_LIBRARY_PATH="$TMP/fake" timeout 60 "$GT_BIN/gt-record" -q --no-archive -F 49 --capture-range=nvtx:train_step \
	-o "$TMP/byopt.gtt" -- "$TMP/nvtx_play" "$TMP/byopt.exp" >"$TMP/byopt.log" 2>&1 &&
	"$TMP/callstack_dump" "$TMP/byopt.gtt" >"$TMP/byopt.txt"; then
	checker "$TMP/byopt.txt" "$TMP/byopt.exp" train_step | sed 's/^\(PASS\|FAIL\): /\1: --capture-range=nvtx: /'
else
	fail "--capture-range=nvtx:train_step: gt-record or nvtx_play failed: $(tail -c 400 "$TMP/byopt.log")"
fi
# no API callbacks: kernels kept by their start time
play bytime train_step GT_CUPTI_CALLBACKS=none &&
	checker "$TMP/bytime.txt" "$TMP/bytime.exp" train_step bytime | sed 's/^\(PASS\|FAIL\): /\1: callbacks=none: /'
# a malformed rule: one warning, every record kept
play badrule '@nothing' && check "a malformed rule is named and ignored (every kernel kept)" \
	bash -c "grep -q \"ignoring capture rule '@nothing'\" '$TMP/badrule.log' && ! grep -q '^capture ' '$TMP/badrule.txt' &&
		[ \$(grep -c '^kernel' '$TMP/badrule.txt') -eq \$(grep -c '^kernel' '$TMP/badrule.exp') ]"

# Python: counters and ranges through python/gt_nvtx.py (its own NVTX client, nothing but ctypes)
py=$(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | tail -1)
[ -n "$py" ] || py=python3
for rule in none train_step 'train_step@*'; do
	name=py_$(echo "$rule" | tr -c 'a-z_\n' '_')
	cap=()
	[ "$rule" != none ] && cap=(GT_CUPTI_CAPTURE_NVTX="$rule")
	env LD_LIBRARY_PATH="$TMP/fake" "${cap[@]}" timeout 60 "$GT_BIN/gt-record" -q --no-archive -F 49 -o "$TMP/$name.gtt" -- \
		"$py" "$GT_ROOT/tests/gpu/nvtx_py.py" "$TMP/$name.exp" >"$TMP/$name.log" 2>&1
	if [ $? -ne 0 ] || ! grep -q '^available 1' "$TMP/$name.exp" 2>/dev/null; then
		fail "$name: gt_nvtx found no NVTX tool, or the program failed: $(tail -c 300 "$TMP/$name.log")"
		continue
	fi
	"$TMP/callstack_dump" "$TMP/$name.gtt" >"$TMP/$name.txt" &&
		checker "$TMP/$name.txt" "$TMP/$name.exp" "$rule" | sed "s/^\(PASS\|FAIL\): /\1: $name: /"
done
env -u NVTX_INJECTION64_PATH "$py" -c "import sys; sys.path.insert(0, '$GT_ROOT/python'); import gt_nvtx
gt_nvtx.counter('x', 1); gt_nvtx.range_push('y'); gt_nvtx.range_pop(); print(gt_nvtx.available())" >"$TMP/notool.txt" 2>&1
check "gt_nvtx without an NVTX tool: every call returns, nothing recorded ($(cat "$TMP/notool.txt"))" grep -qx False "$TMP/notool.txt"

# Attach mode: started dormant under --prepare; gt-record -p passes the rule in the control file
mkdir -p "$TMP/ctl"
env LD_LIBRARY_PATH="$TMP/fake" GT_CUPTI_CTL_DIR="$TMP/ctl" "$GT_BIN/gt-record" --prepare -- \
	"$TMP/nvtx_play" "$TMP/att.exp" --attach-wait 20 >"$TMP/att_target.log" 2>&1 &
tpid=$!
sleep 1
env GT_CUPTI_CAPTURE_NVTX=train_step timeout 60 "$GT_BIN/gt-record" -q --no-archive -p "$tpid" -o "$TMP/att.gtt" \
	>"$TMP/att.log" 2>&1
wait "$tpid"
if "$TMP/callstack_dump" "$TMP/att.gtt" >"$TMP/att.txt" 2>/dev/null && [ -s "$TMP/att.exp" ]; then
	checker "$TMP/att.txt" "$TMP/att.exp" train_step | sed 's/^\(PASS\|FAIL\): /\1: attach: /'
else
	fail "attach: no trace or no expectations ($(tail -c 300 "$TMP/att.log"))"
fi
