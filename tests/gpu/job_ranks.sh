#!/usr/bin/env bash
# job_ranks.sh OUTDIR — a 4-rank job sharing GPU 0 under one gt-record (on the GPU box, < 2 min;
# `make record pipeline bench-tools` first). tests/job/launch_ranks.sh starts RANK=0..3 with
# LOCAL_RANK 0..3 and GT_ROLE trainer; ranks 0 and 1 run gt-pipeline --backend cuda --gpus 0, ranks
# 2 and 3 tests/gpu/rank_torch.py --device 0; each writes its telemetry (rankR.json). Checks, with
# lib-only tools (the box may have no gt-analyze), PASS/FAIL lines in OUTDIR/summary.txt:
#   - process.PID.rank says 0..3, and on each rank's own pid its own rank (children of a rank
#     inherit its environment, and its rank)
#   - each rank's cuda_device records (device 0) and kernels are under its own pid; no kernel of
#     another pid; at least the kernels it launched (pipeline: its telemetry's kernels.total;
#     torch: 3 a step)
#   - each rank's threads (at least those its telemetry names) and its tokens.trained counter
#     (last value = its telemetry's tokens.consumed), all under its own pid
# and, where gt-analyze is built, the report's per-process table through tests/job/check_ranks.py.
# Kept in OUTDIR: job_ranks.gtt (no symbol archive: small), rank*.json, report.txt when made.
#   env: BUILD (build), PYTHON (python3), SECONDS_RUN (4)
set -u
OUT=${1:?usage: job_ranks.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
PY=${PYTHON:-python3}
S=${SECONDS_RUN:-4}
mkdir -p "$OUT" || exit 2
SUM=$OUT/summary.txt
: >"$SUM"
log() { echo "$*" | tee -a "$SUM"; }
CAT=$BUILD/bench/gtt_cat
[ -x "$BUILD/bin/gt-record" ] && [ -x "$BUILD/bin/gt-pipeline" ] && [ -x "$CAT" ] ||
	{ log "FAIL: gt-record, gt-pipeline or bench/gtt_cat not built (make record pipeline bench-tools)"; exit 1; }
rm -f "$OUT"/rank*.json "$OUT/job_ranks.gtt"
t0=$SECONDS
timeout 150 "$BUILD/bin/gt-record" -q --no-archive -o "$OUT/job_ranks.gtt" -- \
	"$ROOT/tests/job/launch_ranks.sh" 4 trainer -- bash -c '
		if [ "$RANK" -lt 2 ]; then
			exec "$0" --backend cuda --gpus 0 --seconds "$1" --targets 2 --drafters 1 --hidden 1024 --layers 8 \
				--quiet --telemetry "$2/rank$RANK.json"
		else
			exec "$3" "$4" "$2/rank$RANK.json" --seconds "$1" --device 0
		fi' "$BUILD/bin/gt-pipeline" "$S" "$OUT" "$PY" "$ROOT/tests/gpu/rank_torch.py" >"$OUT/run.log" 2>&1
rc=$?
log "gt-record exit $rc in $((SECONDS - t0)) s; trace $(stat -c %s "$OUT/job_ranks.gtt" 2>/dev/null) bytes"
"$CAT" "$OUT/job_ranks.gtt" >"$OUT/records.txt" 2>"$OUT/cat.err" || log "FAIL: the trace does not read: $(head -c 300 "$OUT/cat.err")"
"$PY" - "$OUT" >>"$SUM" 2>&1 <<'PY'
import collections, json, os, sys
out = sys.argv[1]
fails = 0
def check(ok, what):
    global fails
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    fails += not ok
ranks = {}
for r in range(4):
    try:
        ranks[r] = json.load(open(os.path.join(out, "rank%d.json" % r)))
    except (OSError, ValueError) as e:
        check(False, "rank %d wrote its telemetry (%s)" % (r, e))
meta_rank, kernels, devices, threads, last_tok = {}, collections.Counter(), collections.defaultdict(set), collections.defaultdict(set), {}
names = {}
for line in open(os.path.join(out, "records.txt")):
    f = line.split()
    if not f:
        continue
    if f[0] == "meta" and f[1].startswith("process.") and f[1].endswith(".rank"):
        meta_rank[int(f[1].split(".")[1])] = int(f[2])
    elif f[0] == "cuda_kernel":
        kernels[int(f[3])] += 1
    elif f[0] == "cuda_device":
        devices[int(f[3])].add(int(f[5]))
    elif f[0] == "thread" and f[5] != "3":
        threads[int(f[3])].add(int(f[4]))
    elif f[0] == "string":
        names[(int(f[3]), int(f[5]))] = f[6] if len(f) > 6 else ""
    elif f[0] == "counter":
        tok = (int(f[1]), float(f[6]))
        key = (int(f[3]), int(f[5]))
        if key not in last_tok or tok[0] >= last_tok[key][0]:
            last_tok[key] = tok
pid_of = {r: t["pid"] for r, t in ranks.items()}
# a rank's own children (forked workers) inherit its environment: the ranks are the distinct values
check(sorted(set(meta_rank.values())) == [0, 1, 2, 3], "ranks 0..3 found in process.PID.rank (%d processes)" % len(meta_rank))
for r, t in sorted(ranks.items()):
    pid = t["pid"]
    check(meta_rank.get(pid) == r, "rank %d: its pid %d carries rank %s" % (r, pid, meta_rank.get(pid)))
    check(devices.get(pid) == {0}, "rank %d: cuda_device records of its pid name device 0 (%s)" % (r, sorted(devices.get(pid, []))))
    want = t.get("min_kernels", (t.get("kernels") or {}).get("total", 1))
    check(kernels[pid] >= want, "rank %d: %d kernels under its pid, it launched at least %d" % (r, kernels[pid], want))
    tk = [v for (p, nid), (tt, v) in last_tok.items() if p == pid and names.get((p, nid)) == "tokens.trained"]
    want_tok = (t.get("tokens") or {}).get("consumed")
    check(len(tk) == 1 and int(tk[0]) == want_tok, "rank %d: its tokens.trained counter ends at %s, its telemetry %s" %
          (r, tk, want_tok))
    if isinstance(t.get("threads"), list):
        check(len(threads[pid]) >= len(t["threads"]), "rank %d: %d threads recorded, its telemetry names %d" %
              (r, len(threads[pid]), len(t["threads"])))
others = {p: n for p, n in kernels.items() if p not in pid_of.values()}
check(not others, "no kernel under a pid that is no rank (%s)" % others)
sys.exit(1 if fails else 0)
PY
if [ -x "$BUILD/bin/gt-analyze" ]; then
	"$BUILD/bin/gt-analyze" report "$OUT/job_ranks.gtt" >"$OUT/report.txt" 2>"$OUT/report.err"
	"$PY" "$ROOT/tests/job/check_ranks.py" "$OUT/report.txt" "$OUT"/rank[0-3].json | tee -a "$SUM"
else
	log "gt-analyze not built here: the per-process table is checked where it is, with"
	log "  gt-analyze report job_ranks.gtt >report.txt && tests/job/check_ranks.py report.txt rank[0-3].json"
fi
log "$(grep -c '^PASS' "$SUM") passed, $(grep -c '^FAIL' "$SUM") failed"
! grep -q '^FAIL' "$SUM"
