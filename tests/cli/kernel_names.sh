# kernel_names.sh — CUDA kernel names (C++ mangled, as CUPTI reports them) are demangled in every
# place a user reads them: the report (kernels, GPU idle gaps, launch sites), the Chrome export
# and the timeline (diff and check compare kernels by the same names: analyze/demangle.c). testdata/gpu/torch_small.gtt holds real torch kernels.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze R=$GT_BIN/gt-render T=$GT_ROOT/testdata/gpu/torch_small.gtt
unset DEBUGINFOD_URLS
[ -x "$A" ] || { skip "gt-analyze not built"; exit 0; }
mangled() { grep -aoE '_ZN?[0-9]+[A-Za-z_]+[A-Za-z0-9_]*' "$1" | head -3 | tr '\n' ' '; }

"$A" report "$T" >"$TMP/report" 2>/dev/null
check "report: the trace has kernels" grep -q '^Kernels (' "$TMP/report"
check "report: no mangled name anywhere ($(mangled "$TMP/report"))" sh -c "! grep -aq '_ZN' '$TMP/report'"
check "report: gaps name the kernel that ended them, demangled" grep -q '     ended by void at::native::' "$TMP/report"
check "report: launch sites name kernels demangled" grep -qE '^  void at::native::[a-z_]+<.* \([0-9]+ launches\)$' "$TMP/report"

"$A" export "$T" --format chrome -o "$TMP/c.json" 2>/dev/null
check "chrome export: kernel events carry demangled names" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
k = [e["name"] for e in ev if e.get("cat") == "cuda_kernel"]
assert k and all(not n.startswith("_Z") for n in k) and any("at::native::" in n for n in k), k[:3]' "$TMP/c.json"

if [ -x "$R" ]; then
	"$R" timeline "$T" -o "$TMP/t.svg" 2>/dev/null
	check "timeline: kernel spans demangled ($(mangled "$TMP/t.svg"))" \
		sh -c "grep -q 'at::native::vectorized_elementwise_kernel' '$TMP/t.svg' && ! grep -aq '_ZN2at' '$TMP/t.svg'"
else
	skip "gt-render not built"
fi
exit 0
