#!/usr/bin/env python3
"""pipeline_telemetry.py — checks that a gt-pipeline telemetry JSON is self-consistent (prints PASS:/FAIL: lines).

usage: pipeline_telemetry.py FILE.json [--driver c|python] [--backend cpu|cuda] [--label TEXT]
Not a test by itself (tests/run.sh runs only *.sh); the pipeline_*.sh tests and
tests/gpu/pipeline_gpu.sh call it. Exit status 1 when any check failed.
"""
import json
import sys

failed = 0
label = ""


def check(cond, what):
    global failed
    if cond:
        print("PASS: %s%s" % (label, what))
    else:
        failed += 1
        print("FAIL: %s%s" % (label, what))


def main(argv):
    global label
    path, want_driver, want_backend = argv[0], None, None
    i = 1
    while i < len(argv):
        if argv[i] == "--driver":
            want_driver = argv[i + 1]
        elif argv[i] == "--backend":
            want_backend = argv[i + 1]
        elif argv[i] == "--label":
            label = argv[i + 1] + ": "
        i += 2
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        check(False, "telemetry %s is valid JSON (%s)" % (path, e))
        return 1
    check(d.get("format") == "gt-pipeline-telemetry" and d.get("format_version") == 1, "format and version")
    if want_driver:
        check(d["driver"] == want_driver, "driver is %s (got %s)" % (want_driver, d["driver"]))
    if want_backend:
        check(d["backend"] == want_backend, "backend is %s (got %s)" % (want_backend, d["backend"]))
    check(d["error"] == "", "no error recorded (%r)" % d["error"])
    cfg = d["config"]
    wall = d["wall_ns"]
    check(wall > 0 and d["end_ns"] - d["start_ns"] == wall, "run wall time is positive and consistent")

    threads = d["threads"]
    workers = [t for t in threads if t["role"] in ("target", "drafter")]
    targets = [t for t in workers if t["role"] == "target"]
    drafters = [t for t in workers if t["role"] == "drafter"]
    check(len(targets) == cfg["targets"] and len(drafters) == cfg["drafters"],
          "one thread record per worker (%d targets, %d drafters)" % (len(targets), len(drafters)))
    names = [t["name"] for t in workers]
    check(sorted(names) == sorted(["target-%d" % i for i in range(cfg["targets"])] +
                                  ["drafter-%d" % i for i in range(cfg["drafters"])]),
          "threads are named target-N / drafter-N")
    tids = [t["tid"] for t in threads]
    check(all(x > 0 for x in tids) and len(set(tids)) == len(tids), "thread ids are distinct and positive")

    slack_ns = 20 * 1000 * 1000
    bad_cpu = [t["name"] for t in workers
               if not (0 <= t["cpu_ns"] <= t["wall_ns"] * 1.02 + slack_ns)]
    check(not bad_cpu, "per-thread CPU time <= wall time %s" % (bad_cpu or ""))
    bad_native = [t["name"] for t in workers if not (0 <= t["cpu_native_ns"] <= t["cpu_ns"] + 1000000)]
    check(not bad_native, "native CPU <= thread CPU %s" % (bad_native or ""))
    if d["driver"] == "python":
        bad_py = [t["name"] for t in workers
                  if abs(t["cpu_python_ns"] + t["cpu_native_ns"] - t["cpu_ns"]) > 1000000
                  or t["cpu_python_work_ns"] > t["cpu_python_ns"] + 1000000]
        check(not bad_py, "python + native CPU = thread CPU, bookkeeping within python %s" % (bad_py or ""))
        if cfg["python_work_ms"] > 0:
            check(all(t["cpu_python_work_ns"] > 0 for t in workers if t["steps"] > 0),
                  "every stepping thread reports Python bookkeeping CPU")
    else:
        check(all(t["cpu_python_ns"] == 0 for t in threads), "no Python CPU in the C driver")

    # phases cover the steps: their sum is within the step total and close to it
    bad_phase = []
    for t in workers:
        if t["steps"] == 0:
            continue
        step = t["step"]
        total = sum(p["total_ns"] for p in t["phases"].values())
        if step["count"] != t["steps"] or not (0.95 * step["total_ns"] <= total <= step["total_ns"] + 1000):
            bad_phase.append("%s %d/%d" % (t["name"], total, step["total_ns"]))
        for name, p in list(t["phases"].items()) + [("step", step)]:
            if p["count"] and not (0 <= p["p50_ns"] <= p["p99_ns"] <= p["max_ns"] and p["mean_ns"] <= p["max_ns"]):
                bad_phase.append("%s %s percentiles" % (t["name"], name))
    check(not bad_phase, "phase wall times sum to 95-100%% of step time, percentiles ordered %s" % (bad_phase or ""))

    q = d["queue"]
    depths = [s[1] for s in q["samples"]]
    times = [s[0] for s in q["samples"]]
    check(q["depth"] == cfg["queue_depth"] and q["min_ready"] == cfg["min_ready"], "queue depth and watermark recorded")
    check(0 <= q["min"] <= q["max"] <= q["depth"], "queue depth never above its capacity (max %d of %d)" % (q["max"], q["depth"]))
    check(all(0 <= x <= q["depth"] for x in depths) and all(b > a for a, b in zip(times, times[1:])),
          "queue samples within [0, depth] and in time order (%d samples)" % len(depths))
    check(len(depths) >= min(int(wall / q["sample_interval_ns"]) - 1, 200000 - 1), "queue sampled over the whole run")
    check(q["min"] <= q["mean"] <= q["max"] and 0 <= q["pct_time_at_or_below_min_ready"] <= 100, "queue mean and % within range")
    tsteps = sum(t["steps"] for t in targets)
    dsteps = sum(t["steps"] for t in drafters)
    check(q["puts"] == tsteps and q["gets"] == dsteps, "queue puts/gets match target/drafter steps")
    check(tsteps == dsteps and d["tokens"]["produced"] == d["tokens"]["consumed"] > 0,
          "drafters drained every batch (%d tokens)" % d["tokens"]["consumed"])
    check(sum(t["tokens"] for t in drafters) == d["tokens"]["consumed"], "per-thread tokens add up")
    tps = d["tokens"]["consumed"] * 1e9 / wall
    check(abs(d["tokens"]["per_s"] - tps) <= 1e-6 * tps + 1e-6, "tokens/s = tokens / wall time")

    k = d["kernels"]
    launches = k["launches"]
    check(k["kind"] == ("cuda-launch" if d["backend"] == "cuda" else "cpu-call"), "launch counts' kind")
    check(k["total"] == sum(launches.values()), "launch total is the sum")
    check(launches["gemm"] == tsteps * cfg["layers"] + 5 * dsteps, "gemm count = target steps x layers + 5 x drafter steps")
    check(launches["act_fwd"] == tsteps * cfg["layers"] + dsteps and launches["embed"] == tsteps,
          "act_fwd and embed counts")
    check(all(launches[n] == dsteps for n in ("doc_ids", "pack_rows", "chunk_fwd", "loss_grad", "act_bwd"))
          and launches["adam"] == 2 * dsteps, "drafter kernel counts")
    reads = sum(t["loss_reads"] for t in drafters)
    if cfg["sync_every"] > 0:
        want = sum(t["steps"] // cfg["sync_every"] for t in drafters)
        check(reads == want, "loss read back every %d steps (%d reads)" % (cfg["sync_every"], reads))
        check(all(t["phases"]["sync"]["count"] == t["loss_reads"] for t in drafters), "one sync phase per read-back")
    alloc_ok = all(t["alloc"]["raw_allocs"] + t["alloc"]["cache_hits"] == t["alloc"]["requests"] for t in workers)
    check(alloc_ok, "allocator requests = raw allocations + cache hits")
    if cfg["alloc"] == "churn":
        check(all(t["alloc"]["cache_hits"] == 0 for t in workers), "churn never hits a cache")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
