#!/usr/bin/env bash
# diff_check.sh — time of `gt-analyze diff` and `check` on two synthetic traces of N samples
# each (default 10 M): a generator written against lib/gtt.h emits samples of 8 threads over
# 2000 distinct frame-pointer callchains in one mapped binary (not on disk, so frames stay
# "[module+0xOFF]" and symbolization costs are the loader's cache hits only).
#   bench/diff_check.sh [N] (BUILD=build by default)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
A="$PWD/$BUILD/bin/gt-analyze"
N=${1:-10000000}
[ -x "$A" ] || { echo "no $A; make analyze first" >&2; exit 2; }
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/gt-bench.XXXXXX")
trap 'rm -rf "$TMPD"' EXIT
cat >"$TMPD/gen.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gtt.h"
/* gen OUT N SEED SHIFT: samples over 2000 stacks; SHIFT moves weight towards stack 0 */
int main(int argc, char **argv)
{
	int err;
	gtt_writer *w = gtt_writer_open(argv[1], &err);
	unsigned long long n = strtoull(argv[2], NULL, 10);
	unsigned seed = (unsigned)atoi(argv[3]);
	double shift = atof(argv[4]);
	if (!w)
		return 2;
	gtt_record r;
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_META;
	r.u.meta.key = "command";
	r.u.meta.value = "/opt/synthetic/bench-prog --run";
	gtt_write(w, &r);
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_MAPPING;
	r.u.mapping = (gtt_mapping){ .pid = 1000, .prot = 5, .start = 0x400000, .end = 0x800000,
	                             .build_id_len = 4, .build_id = {1, 2, 3, 4}, .path = "/opt/synthetic/bench-prog" };
	gtt_write(w, &r);
	for (int t = 0; t < 8; t++) {
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_THREAD;
		r.u.thread = (gtt_thread){ .time_ns = 1, .pid = 1000, .tid = 1000 + t, .event = GTT_THREAD_NAME, .name = "worker" };
		gtt_write(w, &r);
	}
	uint64_t ips[8];
	srand(seed);
	for (unsigned long long i = 0; i < n; i++) {
		unsigned s = (unsigned)(rand() % 2000);
		if (shift > 0 && (double)rand() / RAND_MAX < shift)
			s = 0;
		/* a tree: each stack is a path of 8 nodes chosen by the digits of s */
		for (int d = 0; d < 8; d++)
			ips[7 - d] = 0x401000 + 0x100 * (uint64_t)((s >> d) & 0xff) + 0x10 * (uint64_t)d;
		memset(&r, 0, sizeof(r));
		r.tag = GTT_REC_SAMPLE;
		r.u.sample = (gtt_sample){ .time_ns = 1000000 + i * 1000, .pid = 1000, .tid = 1000 + (uint32_t)(i % 8),
		                           .period_ns = 1000000, .n_user = 8, .ips = ips };
		if (gtt_write(w, &r) < 0)
			return 2;
	}
	return gtt_writer_close(w) < 0 ? 2 : 0;
}
C
cc -O2 -D_GNU_SOURCE -Ilib -o "$TMPD/gen" "$TMPD/gen.c" lib/gtt.c lib/gtt_codec.c -pthread || exit 2
"$TMPD/gen" "$TMPD/a.gtt" "$N" 1 0 && "$TMPD/gen" "$TMPD/b.gtt" "$N" 2 0 && "$TMPD/gen" "$TMPD/c.gtt" "$N" 3 0.05 || exit 2
echo "traces: $N samples each, $(du -m "$TMPD/a.gtt" | cut -f1) MB each"
# timeit SAMPLES CMD...: wall time, exit status, and wall µs per sample loaded
timeit() { local t0 t1 rc n=$1; shift; t0=$(date +%s.%N); "$@" >"$TMPD/out" 2>"$TMPD/err"; rc=$?; t1=$(date +%s.%N)
	awk -v a="$t0" -v z="$t1" -v rc="$rc" -v n="$n" 'BEGIN { printf "%7.2f s (exit %d, %.2f us/sample)", z - a, rc, (z - a) * 1e6 / n }'; }
echo "report (one trace, load + symbolize):   $(timeit "$N" "$A" report "$TMPD/a.gtt")"
echo "diff a b (same distribution):           $(timeit $((2 * N)) "$A" diff "$TMPD/a.gtt" "$TMPD/b.gtt")  $(grep -o '[0-9]* changed significantly' "$TMPD/out")"
echo "check b --golden a:                     $(timeit $((2 * N)) "$A" check "$TMPD/b.gtt" --golden "$TMPD/a.gtt")"
echo "check c --golden a (5% moved to one):   $(timeit $((2 * N)) "$A" check "$TMPD/c.gtt" --golden "$TMPD/a.gtt")  $(head -1 "$TMPD/out" | cut -c1-60)"
"$A" fold "$TMPD/a.gtt" >"$TMPD/a.fold" 2>/dev/null; "$A" fold "$TMPD/c.gtt" >"$TMPD/c.fold" 2>/dev/null
echo "check on folded stacks of the same:     $(timeit $((2 * N)) "$A" check "$TMPD/c.fold" --golden "$TMPD/a.fold")"
cat <<'REF'
reference, 10 M samples on the 2-core dev VM (docs/ANALYZE.md, Performance), wall time:
  before a50e382 (file read and CRC-checked twice, every address of every sample looked up,
  BASE then NEW): report 11.3 s, diff 16.1 s, check 15.7 s (about 0.8 us per sample)
  after (callchains interned in pass 1 and symbolized once per address space, one read of the
  file, BASE and NEW on two threads): report 4.5 s, diff 4.2-5.8 s, check 5.0 s (about
  0.2 us of CPU per sample; the upper ends with the VM loaded by other work)
REF
