# lib.sh — helpers for CLI tests (sourced): pass/fail lines counted by tests/run.sh.
# Not a test itself (run.sh only runs tests/cli/*.sh files that are not lib.sh).
GT_BIN=${GT_BIN:?run through tests/run.sh}
GT_TESTS=${GT_TESTS:?}
GT_ROOT=${GT_ROOT:?}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gt-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
skip() { echo "SKIP: $*"; }
# check DESCRIPTION COMMAND...: pass when the command succeeds.
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
# check_rc DESCRIPTION WANT COMMAND...: pass when the command exits with WANT.
check_rc() { local d=$1 want=$2; shift 2; "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then pass "$d"; else fail "$d (exit $rc, wanted $want; stderr: $(head -c 300 "$TMP/err" | tr "\n" " "); stdout: $(head -c 300 "$TMP/out" | tr "\n" " "))"; fi; }
# The CUDA agent's stand-ins, for tests without a GPU (CUDA_HOME: headers and the real CUPTI whose
# symbols the stand-in forwards to). Each builds into $TMP, returns the compiler's status and
# appends its words to $TMP/cc.err.
# build_fake_cupti: $TMP/fake/libcupti.so.13 (tests/gpu/fake_cupti.c), FAKE_CUPTI_REAL exported
build_fake_cupti() {
	local real=$CUDA_HOME/lib64/libcupti.so.13
	[ -e "$real" ] || real=$(ls "$CUDA_HOME"/extras/CUPTI/lib64/libcupti.so.* 2>/dev/null | head -1)
	export FAKE_CUPTI_REAL=$real
	mkdir -p "$TMP/fake"
	gcc -std=gnu11 -O2 -g -shared -fPIC -o "$TMP/fake/libcupti.so.13" "$GT_ROOT/tests/gpu/fake_cupti.c" \
		-Wl,--version-script="$GT_ROOT/tests/gpu/fake_cupti.map" -Wl,-soname,libcupti.so.13 \
		-I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" -ldl -pthread 2>>"$TMP/cc.err"
}
# build_fake_cudart: $TMP/fake/libcudart.so.13 (tests/gpu/fake_cudart.c), after build_fake_cupti
build_fake_cudart() {
	gcc -std=gnu11 -O0 -g -shared -fPIC -o "$TMP/fake/libcudart.so.13" "$GT_ROOT/tests/gpu/fake_cudart.c" \
		-Wl,-soname,libcudart.so.13 -L"$TMP/fake" -l:libcupti.so.13 2>>"$TMP/cc.err"
}
# build_callstack_dump: $TMP/callstack_dump (tests/gpu/callstack_dump.c, lib only)
build_callstack_dump() {
	gcc -std=gnu11 -O2 -g ${GT_SAN:-} -I"$GT_ROOT/lib" -o "$TMP/callstack_dump" "$GT_ROOT/tests/gpu/callstack_dump.c" \
		"$GT_BIN/../lib/libgtt.a" 2>>"$TMP/cc.err"
}
