#!/usr/bin/env bash
# dump_cuda.sh — the CUDA part of gt-record --dump without a GPU: tests/progs/cuda_inflight.c
# fills the in-flight table of a stand-in agent (tests/progs/fake_gtcupti.c, laid out by
# record/gtcupti_inflight.h, loaded as libgtcupti.so) the way the agent does. The thread inside
# cudaStreamSynchronize shows it with its duration; a thread with no call, and one whose slot
# is being written (odd seqlock), show none; CUDA without the agent gets the hint to use
# --prepare. The real thing (torch on a GPU) is tests/gpu/dump_sync.sh.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record TGT=$GT_TESTS/progs/cuda_inflight LIB=$GT_TESTS/progs/fake_gtcupti
[ -x "$REC" ] && [ -x "$TGT" ] && [ -f "$LIB" ] || { skip "gt-record or test programs not built"; exit 0; }
case "$(uname -m)" in x86_64) ;; *) skip "native unwinding is x86-64 only"; exit 0 ;; esac
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
tid_of() { awk -v r="$1" '$1 == r { print $2 }' "$2"; }
block() { awk -v t="Thread $2 " 'index($0, t) == 1 { on = 1; print; next } on && /^$/ { exit } on' "$1"; }

cp "$LIB" "$TMP/libgtcupti.so"
"$TGT" "$TMP/libgtcupti.so" "$TMP/ready" >/dev/null 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do [ -s "$TMP/ready" ] && break; sleep 0.05; done
check_rc "dump of a process with the agent: exit 0" 0 "$REC" --dump -p "$pid"
cp "$TMP/out" "$TMP/text"
s=$(block "$TMP/text" "$(tid_of sync "$TMP/ready")")
echo "$s" | head -1 | grep -Eq ', CUDA cudaStreamSynchronize for 2\.[5-9][0-9] s$' &&
	echo "$s" | grep -q '^    fake_sync_wait (cuda_inflight)$' &&
	pass "the thread in cudaStreamSynchronize: named, with its duration ($(echo "$s" | head -1 | sed 's/.*CUDA //'))" ||
	fail "sync thread: $s"
for role in idle writing; do
	b=$(block "$TMP/text" "$(tid_of $role "$TMP/ready")")
	echo "$b" | head -1 | grep -q 'CUDA' && fail "$role thread shows a CUDA call: $(echo "$b" | head -1)" ||
		pass "$role thread: no CUDA call shown"
done
"$REC" --dump --json -p "$pid" >"$TMP/j.json" 2>/dev/null
python3 - "$TMP/j.json" "$(tid_of sync "$TMP/ready")" <<'PY' && pass "--json: cuda {api, correlation 42, n_calls 7, elapsed, resolution} on the right thread only" || fail "--json cuda: $(head -c 300 "$TMP/j.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["processes"][0]
assert p["cuda"] == "agent", p["cuda"]
calls = {t["tid"]: t["cuda"] for t in p["threads"] if t["cuda"]}
assert list(calls) == [int(sys.argv[2])], calls
c = calls[int(sys.argv[2])]
assert c["api"] == "cudaStreamSynchronize" and c["correlation"] == 42 and c["n_calls"] == 7, c
assert c["domain"] == "runtime" and c["resolution_ns"] == 4000000 and c["elapsed_ns"] >= 2500000000, c
PY

# CUDA loaded, no agent
cp "$LIB" "$TMP/libcuda.so.1"
"$TGT" "$TMP/libcuda.so.1" "$TMP/ready2" plain >/dev/null 2>&1 &
pid=$!
pids+=("$pid")
for _ in $(seq 100); do [ -s "$TMP/ready2" ] && break; sleep 0.05; done
check_rc "dump of a CUDA process without the agent: exit 0" 0 "$REC" --dump -p "$pid"
grep -q '^CUDA is loaded but not the groundtruth agent: start the program with gt-record --prepare' "$TMP/out" &&
	! grep -q ', CUDA ' "$TMP/out" && pass "without the agent: one line saying how to get in-flight calls" ||
	fail "no-agent hint: $(head -5 "$TMP/out")"
