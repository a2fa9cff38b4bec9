#!/usr/bin/env bash
# gpu_agent_unwind.sh — the CUDA agent's fast native stack walk (record/cupti_cfi.c: unwind rules
# from .eh_frame cached per return address) gives exactly libgcc's frames: tests/gpu/unwind_check.c
# walks stacks of every frame shape both ways (rsp- and rbp-based frames, a 16 KiB frame, libc
# calling back, C++ std::sort and std::function), cut at the depth cap, ended at a stop object,
# from a signal handler (the fast walk declines, libgcc takes over), on four threads at once.
# Needs no CUDA: the walker is built from the agent's sources like the agent (-O2, frame pointers).
. "$(dirname "$0")/lib.sh"
if [ "$(uname -m)" != x86_64 ]; then
	skip "the fast walk is x86-64 only (elsewhere the agent uses libgcc's)"
	exit 0
fi
cxx=()
if ! gcc -std=gnu11 -O2 -g -fPIC -fno-omit-frame-pointer -shared -D_GNU_SOURCE -o "$TMP/libwalk.so" \
	"$GT_ROOT/record/cupti_unwind.c" "$GT_ROOT/record/cupti_cfi.c" -ldl -pthread 2>"$TMP/cc.err" ||
	! gcc -std=gnu11 -O2 -g -fPIC -fomit-frame-pointer -shared -o "$TMP/libdeep.so" "$GT_ROOT/tests/gpu/unwind_deep.c" 2>>"$TMP/cc.err" ||
	! gcc -std=gnu11 -O2 -g -fomit-frame-pointer -o "$TMP/unwind_check" "$GT_ROOT/tests/gpu/unwind_check.c" -ldl -pthread 2>>"$TMP/cc.err"; then
	fail "the walker or its test do not compile: $(head -c 400 "$TMP/cc.err")"
	exit 0
fi
if command -v g++ >/dev/null && g++ -O2 -g -fPIC -shared -o "$TMP/libcxx.so" "$GT_ROOT/tests/gpu/unwind_cxx.cc" 2>>"$TMP/cc.err"; then
	cxx=("$TMP/libcxx.so")
else
	skip "no g++: C++ frames not checked"
fi
timeout 120 "$TMP/unwind_check" "$TMP/libwalk.so" "$TMP/libdeep.so" "${cxx[@]}"
rc=$?
[ "$rc" -le 1 ] || fail "unwind_check exited $rc"
