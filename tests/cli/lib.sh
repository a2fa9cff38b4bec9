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
	if [ "$rc" -eq "$want" ]; then pass "$d"; else fail "$d (exit $rc, wanted $want; stderr: $(head -c 300 "$TMP/err"))"; fi; }
