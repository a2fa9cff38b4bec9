#!/usr/bin/env bash
# capture_nvtx.sh OUTDIR — on the GPU box (~25 s, builds nothing: `make record` first): records
# tests/gpu/capture_nvtx.py (torch matmuls inside 3 NVTX ranges named capture_me, the same
# outside them, and a decoy range of another name) under gt-record --capture-range=nvtx:capture_me
# and checks capture control end to end with the real CUDA agent:
#   - the agent reports each range's edges (capture records, pid != 0, name capture_me) and
#     gates its CUDA API records to inside the ranges (kernels: within 0.5 s after the range);
#   - gt-record switches CPU sampling with them (pid-0 records: stop at the start, then 3
#     start/stop pairs), each edge within LAT_MAX_MS (2000) after the agent's — the latency
#     docs/RECORD.md "Capture" describes; the report gives the measured median and max;
#   - no CPU sample and no Python stack outside gt-record's intervals (Python: 50 ms slack).
# OUTDIR gets capture_nvtx.txt (checks, latencies), capture_nvtx.gtt (fp, 49 Hz, no archive:
# small) and capture_nvtx_more.tar.gz (the log, the records as text).
#   env: BUILD (build), PYTHON (python3), RANGES (3), LAT_MAX_MS (2000)
set -u
OUT=${1:?usage: tests/gpu/capture_nvtx.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=${PYTHON:-python3}
LAT=${LAT_MAX_MS:-2000}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
RES=$OUT/capture_nvtx.txt
: >"$RES"
fails=0
say() { echo "$*" | tee -a "$RES"; }
check() { local d=$1; shift; if "$@"; then say "PASS: $d"; else say "FAIL: $d"; fails=$((fails + 1)); fi; }
say "capture_nvtx: $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $("$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
rm -f "$OUT/capture_nvtx.gtt"
timeout -k 5 120 "$BUILD/bin/gt-record" --no-archive --call-graph fp -F 49 -o "$OUT/capture_nvtx.gtt" \
	--capture-range=nvtx:capture_me -- "$PY" "$ROOT/tests/gpu/capture_nvtx.py" --ranges "${RANGES:-3}" \
	>"$OUT/capture_nvtx.edges" 2>"$OUT/capture_nvtx.log"
rc=$?
say "gt-record exit $rc: $(grep -E '^gt-record:' "$OUT/capture_nvtx.log" | tr '\n' ' ' | cut -c1-400)"
check "gt-record and the workload exit 0" test "$rc" -eq 0
[ -f "$OUT/capture_nvtx.gtt" ] || { say "no trace"; exit 2; }
gcc -std=gnu11 -O2 -I"$ROOT/lib" -o "$OUT/.capture_check" "$ROOT/tests/gpu/capture_check.c" "$BUILD/lib/libgtt.a" \
	-lpthread -ldl 2>>"$RES" || { say "capture_check does not build"; exit 2; }
"$OUT/.capture_check" "$OUT/capture_nvtx.gtt" >"$OUT/capture_nvtx.records"
R=$OUT/capture_nvtx.records
check "the trace reads whole ($(awk '$1 == "bad" || $1 == "truncated"' "$R" | tr '\n' ' '))" \
	bash -c "grep -q '^bad 0$' '$R' && grep -q '^truncated 0$' '$R'"
check "meta capture gives the rule" grep -q '^meta capture sampling inside NVTX ranges named "capture_me"$' "$R"
n_agent=$(awk '$1 == "capture" && $3 != 0 && $7 == "capture_me"' "$R" | wc -l)
check "the agent reported the ranges' edges ($n_agent capture records with pid != 0; 6 expected)" test "$n_agent" -eq $((2 * ${RANGES:-3}))
ev=$(awk '$1 == "capture" && $3 == 0 { printf "%s%s/%s", n++ ? " " : "", $5, $6 } END { print "" }' "$R")
want="2/2$(for i in $(seq "${RANGES:-3}"); do printf ' 1/2 2/2'; done)"
check "gt-record switched sampling with them ($ev)" test "$ev" = "$want"
# latencies: gt-record's k-th start (stop) after the agent's k-th start (stop)
awk '$1 == "capture" && $7 == "capture_me" { if ($3 == 0) g[$5, ++ng[$5]] = $2; else a[$5, ++na[$5]] = $2 }
	END { for (ev = 1; ev <= 2; ev++) for (i = 1; i <= na[ev]; i++) print (ev == 1 ? "start" : "stop"), (g[ev, i + (ev == 2)] - a[ev, i]) / 1e6 }' \
	"$R" >"$OUT/capture_nvtx.lat"
say "latency ms (gt-record's edge minus the agent's): $(tr '\n' ' ' <"$OUT/capture_nvtx.lat")"
say "latency ms median/max: $(awk '{ print $2 }' "$OUT/capture_nvtx.lat" | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f / %.1f", v[int((NR + 1) / 2)], v[NR] }')"
check "every edge within 0..$LAT ms after the agent's" \
	awk -v m="$LAT" '$2 < 0 || $2 > m { bad = 1 } END { exit bad }' "$OUT/capture_nvtx.lat"
# gt-record's intervals (pid 0) and the agent's ranges, then what falls outside
cat >"$OUT/.outside.awk" <<'AWK'
$1 == "capture" && $3 == 0 { if ($5 == 1) { gs[++gn] = $2; ge[gn] = 1e30 } else if (gn) ge[gn] = $2 }
$1 == "capture" && $3 != 0 && $7 == "capture_me" { if ($5 == 1) { as[++an] = $2; ae[an] = 1e30 } else if (an) ae[an] = $2 }
$1 == kind { t[++n] = $2; e[n] = $3 }
END {
	out = 0; inside_agent = 0
	for (i = 1; i <= n; i++) {
		ok = 0
		if (ref == "gt") { for (j = 1; j <= gn; j++) if (t[i] >= gs[j] - slack && t[i] <= ge[j] + slack) ok = 1 }
		else { for (j = 1; j <= an; j++) if (t[i] >= as[j] - slack && t[i] <= ae[j] + tail) ok = 1 }
		out += !ok
		for (j = 1; j <= an; j++) if (t[i] >= as[j] && t[i] <= ae[j]) inside_agent++
	}
	print n, out, inside_agent
}
AWK
read -r n out ins < <(awk -v kind=sample -v ref=gt -v slack=0 -f "$OUT/.outside.awk" "$R")
check "CPU samples: $n, none outside gt-record's intervals ($out)" bash -c "[ $n -gt 20 ] && [ $out -eq 0 ]"
check "CPU samples inside the agent's ranges ($ins) outnumber those in the latency tails ($((n - ins))) 3 to 1" \
	test "$ins" -ge $((3 * (n - ins)))
read -r n out ins < <(awk -v kind=pystack -v ref=gt -v slack=50e6 -f "$OUT/.outside.awk" "$R")
check "Python stacks: $n, none outside gt-record's intervals (+-50 ms: $out)" bash -c "[ $n -gt 10 ] && [ $out -eq 0 ]"
read -r n out ins < <(awk -v kind=api -v ref=agent -v slack=1e6 -v tail=1e6 -f "$OUT/.outside.awk" "$R")
check "CUDA API records: $n, none outside the agent's ranges (+-1 ms: $out)" bash -c "[ $n -gt 10 ] && [ $out -eq 0 ]"
read -r n out ins < <(awk -v kind=kernel -v ref=agent -v slack=0 -v tail=500e6 -f "$OUT/.outside.awk" "$R")
check "kernels: $n, none starting outside the agent's ranges (up to 0.5 s after: $out)" bash -c "[ $n -gt 10 ] && [ $out -eq 0 ]"
say "records: $(cut -d' ' -f1 "$R" | sort | uniq -c | tr '\n' ' ')"
say "$([ "$fails" -eq 0 ] && echo "capture_nvtx: all checks passed" || echo "capture_nvtx: $fails check(s) FAILED")"
more=()
for f in capture_nvtx.log capture_nvtx.edges capture_nvtx.records capture_nvtx.lat; do
	[ -f "$OUT/$f" ] && more+=("$f")
done
tar -C "$OUT" -czf "$OUT/capture_nvtx_more.tar.gz" "${more[@]}" && (cd "$OUT" && rm -f "${more[@]}")
rm -f "$OUT/.capture_check" "$OUT/.outside.awk"
[ "$fails" -eq 0 ]
