#!/usr/bin/env bash
# build_rules.sh — the Makefile's test rules (issue 17 item 8): each unit test and fuzz target
# is compiled and linked with lib/ and the modules it uses only (a recorder test needs no libdw
# or Cairo), module headers come in through -iquote (a plain <elf.h> never finds record/elf.h),
# nvcc objects get dependency files, and `make help` prints the Makefile's own summary.
. "$(dirname "$0")/lib.sh"
command -v make >/dev/null || { skip "no make"; exit 0; }
# run under `make check`: the outer make's flags (jobserver, -w) are not this test's
unset MAKEFLAGS MAKELEVEL MFLAGS
B="$TMP/build"
# the commands make would run for one target, from nothing (-B: every rule, nothing built)
plan() { make -s --no-print-directory -n -B -C "$GT_ROOT" BUILD="$B" "$B/$1" 2>&1; }
link_of() { plan "$1" | grep -e "-o $B/$1 " | tail -1; }
compile_of() { plan "$1" | grep -e "-c -o $B/obj/$2 " | tail -1; }

l=$(link_of tests/test_rec_elf)
check "a recorder test links lib/ and record/ only (no libdw, Cairo, analyze, CUDA)" \
	bash -c '[[ "$1" == *librec.a* && "$1" == *libgtt.a* && "$1" != *-ldw* && "$1" != *cairo* &&
	           "$1" != *libana.a* && "$1" != *libren.a* && "$1" != *cudart* ]]' _ "$l"
c=$(compile_of tests/test_rec_elf tests/unit/test_rec_elf.o)
check "a recorder test compiles without libdw's or analyze/'s headers, record/ through -iquote" \
	bash -c '[[ "$1" == *"-iquote record"* && "$1" != *-Irecord* && "$1" != *analyze* && "$1" != *cairo* ]]' _ "$c"
l=$(link_of tests/test_rec_archive)
check "a recorder test checked against libdw (UNIT_DW) links record/ and libdw, not analyze/" \
	bash -c '[[ "$1" == *librec.a* && "$1" == *-ldw* && "$1" != *libana.a* && "$1" != *cairo* ]]' _ "$l"
l=$(link_of tests/test_fold)
check "an analysis test links analyze/ and libdw, not render/, Cairo or record/" \
	bash -c '[[ "$1" == *libana.a* && "$1" == *-ldw* && "$1" != *libren.a* && "$1" != *cairo* && "$1" != *librec.a* ]]' _ "$l"
l=$(link_of tests/test_render_flame)
check "a render test links render/, analyze/ and Cairo" \
	bash -c '[[ "$1" == *libren.a* && "$1" == *libana.a* && "$1" == *cairo* && "$1" != *librec.a* ]]' _ "$l"
l=$(link_of tests/test_gtt)
check "a format test links lib/ alone" \
	bash -c '[[ "$1" == *libgtt.a* && "$1" != *libana.a* && "$1" != *librec.a* && "$1" != *-ldw* ]]' _ "$l"
l=$(link_of fuzz/fuzz_pyreader)
check "a fuzz target links what it uses (fuzz_pyreader: record/, no libdw)" \
	bash -c '[[ "$1" == *librec.a* && "$1" == *-fsanitize=fuzzer* && "$1" != *-ldw* && "$1" != *libana.a* ]]' _ "$l"

# every unit test source has a rule that names its modules: a test that includes a module's
# header but is not in that module's list would not compile; this checks the lists by name
missing=""
for f in "$GT_ROOT"/tests/unit/test_*.c; do
	n=$(basename "$f" .c)
	src=$f
	case $n in test_fuzz_*) src="$GT_ROOT/tests/fuzz/${n#test_}.c" ;; esac
	l=$(link_of "tests/$n")
	for pair in analyze:libana.a render:libren.a record:librec.a pipeline:libpl.a; do
		d=${pair%%:*} a=${pair#*:}
		for h in $(sed -n 's/^#include "\([^"/]*\.h\)"/\1/p' "$f" "$src" | sort -u); do
			if [ -f "$GT_ROOT/$d/$h" ] && [ ! -f "$GT_ROOT/lib/$h" ] && [[ "$l" != *"$a"* ]]; then
				missing="$missing $n($d/$h)"
			fi
		done
	done
done
check "each unit test links the modules whose headers it includes${missing:+ (not:$missing)}" test -z "$missing"

if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
	cu=$(cd "$GT_ROOT" && ls kernels/*.cu 2>/dev/null | head -1)
	if [ -n "$cu" ]; then
		c=$(plan "obj/${cu}.o" | grep nvcc | tail -1)
		check "nvcc objects write dependency files (-MMD -MP -MF)" \
			bash -c '[[ "$1" == *-MMD* && "$1" == *-MF* ]]' _ "$c"
	fi
else
	skip "nvcc not installed: the CUDA dependency rule is not checked"
fi

h=$(make -s --no-print-directory -C "$GT_ROOT" help 2>&1)
check "make help prints the summary (not tied to line numbers)" \
	bash -c '[[ "$1" == "make "* && "$1" == *"make check "* && "$1" == *"make install"* && "$1" != *"#"* ]]' _ "$h"
h=$(cd "$TMP" && make -s -f "$GT_ROOT/Makefile" help 2>&1)
check "make -f PATH help from another directory" bash -c '[[ "$1" == *"make check "* ]]' _ "$h"
