#!/usr/bin/env bash
# gpu_agent.sh — the CUDA agent without a GPU: libgtcupti.so is built where CUDA is installed and
# exports the injection entry points; its encoder turns hand-made CUPTI buffers into the right
# trace records (tests/gpu/encode_check.c); loaded like libcuda loads it, it leaves a side file;
# gt-analyze reports the encoded trace's GPU section.
. "$(dirname "$0")/lib.sh"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
	skip "no CUDA at $CUDA_HOME: the agent is not built here"
	exit 0
fi
agent="$GT_BIN/../lib/libgtcupti.so"
check "make record built the agent ($agent)" test -f "$agent"
[ -f "$agent" ] || exit 0
exports=$(nm -D --defined-only "$agent" 2>/dev/null | awk '{print $3}')
check "agent exports InitializeInjection" grep -qx InitializeInjection <<<"$exports"
check "agent exports InitializeInjectionNvtx2" grep -qx InitializeInjectionNvtx2 <<<"$exports"
check "agent needs libcupti, not libcuda (the driver loads it)" \
	bash -c "readelf -d '$agent' | grep -q 'libcupti' && ! readelf -d '$agent' | grep -q 'NEEDED.*libcuda\.'"

cupti_lib=$CUDA_HOME/lib64
[ -e "$cupti_lib/libcupti.so" ] || cupti_lib=$CUDA_HOME/extras/CUPTI/lib64
if ! gcc -std=gnu11 -D_GNU_SOURCE -I"$GT_ROOT/lib" -iquote "$GT_ROOT/record" -I"$GT_ROOT/tests/unit" \
	-I"$CUDA_HOME/include" -I"$CUDA_HOME/extras/CUPTI/include" -o "$TMP/encode_check" \
	${GT_SAN:-} "$GT_ROOT/record/cupti_encode.c" "$GT_ROOT/record/cupti_nvtx.c" "$GT_ROOT/record/cupti_ring.c" "$GT_ROOT/tests/gpu/encode_check.c" "$GT_BIN/../lib/libgtt.a" \
	-L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti -ldl -pthread 2>"$TMP/cc.err"; then
	fail "encode_check does not compile: $(head -c 400 "$TMP/cc.err")"
	exit 0
fi
mkdir -p "$TMP/side"
"$TMP/encode_check" "$TMP/enc.gtt" "$agent" "$TMP/side"
echo "encode_check exit status $?"

# The encoded records through gt-analyze: kernels demangled, API calls, launch sites.
"$GT_BIN/gt-analyze" report "$TMP/enc.gtt" >"$TMP/report.txt" 2>"$TMP/report.err"
rc=$?
if [ "$rc" -ne 0 ]; then
	fail "gt-analyze report on the encoded trace exited $rc: $(head -c 300 "$TMP/report.err")"
elif ! grep -q '^== GPU ==' "$TMP/report.txt"; then
	skip "gt-analyze report has no GPU section yet (report.c does not call ana_gpu_report)"
else
	check "report lists the demangled kernel" grep -q 'gemm(float\*, int)' "$TMP/report.txt"
	check "report lists the runtime launch call" grep -q 'cudaLaunchKernel$' "$TMP/report.txt"
	check "report links the kernel to thread 7 through cudaLaunchKernel" \
		grep -q '1x thread 7 .* via cudaLaunchKernel' "$TMP/report.txt"
fi
