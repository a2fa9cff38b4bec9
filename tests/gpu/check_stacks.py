"""check_stacks.py — checks a recording of tests/gpu/fake_launch.py: the launch stacks the CUDA agent
wrote (through tests/gpu/callstack_dump's text) against what the workload says it did
(EXPECT.json). Prints PASS:/FAIL: lines (tests/run.sh counts them).

usage: check_stacks.py DUMP.txt EXPECT.json MODE [K N]
  MODE default: stacks on, sampling first=K every=N; full checks
  MODE off:     no cuda_callstack at all, configuration says off
  MODE pydepth: Python depth capped at 8 (deep stack cut, flagged)
  MODE nopython: Python frames switched off (flagged)
  MODE budget:  a tiny stack budget: some chosen calls have no stack, and the loss is recorded
  MODE ring:    a stack at every call into a tiny ring: taken + lost = chosen, losses recorded
  MODE cball:   GT_CUPTI_CALLBACKS=all: the untracked calls get callbacks (and first-K stacks) too
  MODE cbempty: GT_CUPTI_CALLBACKS=empty: the tracked calls' callbacks are on, but do nothing
"""
import json
import sys

FIRST, NTH, LONG, AT_EXIT = 0x1, 0x2, 0x4, 0x8
PY_NONE, PY_TRUNC, PY_FAIL, PY_OFF = 0x1000, 0x2000, 0x4000, 0x8000
import dumpcheck
from dumpcheck import check


def check_apicb(exp, recs, stacks, notes, untracked):
    """GT_CUPTI_API=callbacks: the followed calls' API records come from the agent's callbacks, one
    per call, CUPTI's for them off; the other calls' still from CUPTI."""
    api = [r for r in recs if r["kind"] == "api"]
    by_corr = {}
    for r in api:
        by_corr.setdefault(r["corr"], []).append(r)
    kernels = [r for r in recs if r["kind"] == "kernel"]
    summary = [t for t in notes if t.startswith("cupti agent summary")]
    check(summary and " api=callbacks " in summary[-1], "the summary says api=callbacks")
    n_cb = int(summary[-1].split(" api_from_callbacks=")[1].split()[0]) if summary else 0
    lost = int(summary[-1].split(" api_from_callbacks_lost=")[1].split()[0]) if summary else -1
    check(all(len(v) == 1 for v in by_corr.values()),
          "one API record per call: CUPTI's own is off where the callbacks write it (%d duplicated)"
          % sum(1 for v in by_corr.values() if len(v) > 1))
    launched = [k for k in kernels if k["corr"] in by_corr and by_corr[k["corr"]][0]["cbid"] in ("211", "307")]
    check(kernels and len(launched) == len(kernels),
          "every kernel's correlation id names its launch's API record (%d of %d)" % (len(launched), len(kernels)))
    linked = [s for s in stacks if s["corr"] in by_corr and by_corr[s["corr"]][0]["tid"] == s["tid"]
              and by_corr[s["corr"]][0]["cbid"] == s["cbid"]]
    check(stacks and len(linked) == len(stacks),
          "every launch stack names its call's API record, same call and thread (%d of %d)" % (len(linked), len(stacks)))
    tracked = [r for r in api if r["cbid"] not in untracked]
    check(n_cb > 0 and n_cb == len(tracked) and lost == 0,
          "the callbacks wrote the followed calls' records: %d in the summary, %d in the trace, %d lost"
          % (n_cb, len(tracked), lost))
    check(all(any(r["cbid"] == c for r in api) for c in untracked),
          "the calls without callbacks keep CUPTI's API records")
    syncs = [r for r in api if r["cbid"] == "131" and r["tid"] == str(exp["main_tid"])]
    check(len(syncs) == 5 and all(int(r["end"]) - int(r["start"]) >= 25_000_000 for r in syncs),
          "five 30 ms synchronizes: their records last >= 25 ms (%s)"
          % [(int(r["end"]) - int(r["start"])) // 1000 for r in syncs])
    check(all(0 < int(r["start"]) <= int(r["end"]) and r["status"] == "0" for r in tracked),
          "every record starts before it ends, with the call's status (0)")
    nest = by_corr.get(str(exp["nested_corr"]), [])
    check(len(nest) == 1 and nest[0]["cbid"] == "20" and not [r for r in api if r["cbid"] == "243"],
          "a driver call inside a runtime call: one record, the runtime call's")


def main():
    dump, expect, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    k = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 256
    exp = json.load(open(expect))
    pid = str(exp["pid"])
    recs = [r for r in dumpcheck.parse_dump(dump) if r.get("pid") == pid]
    stacks = [r for r in recs if r["kind"] == "stack"]
    codes = {}
    for r in recs:
        if r["kind"] == "code":
            codes.setdefault(int(r["id"], 16), set()).add((r["name"], r["file"]))
    configs = [r for r in recs if r["kind"] == "config" and r["text"].startswith("cuda_callstack")]
    notes = [r["text"] for r in recs if r["kind"] == "note"]
    py = exp["python"]

    cbs = exp.get("callbacks", {})
    untracked = {str(c) for c in exp.get("untracked_cbids", [])}
    if mode == "cball":
        check(all(n in cbs.get("runtime", []) for n in ("cudaEventQuery_v3020", "cudaFuncSetAttribute_v9000")),
              "callbacks=all: queries and attribute calls have callbacks too")
        check({s["cbid"] for s in stacks if s["cbid"] in untracked} == untracked,
              "callbacks=all: the untracked calls get their first-K stacks")
        return
    if mode == "cbempty":
        summary = [t for t in notes if t.startswith("cupti agent summary")]
        check(len(cbs.get("runtime", [])) > 100 and "cudaLaunchKernel_v7000" in cbs.get("runtime", []),
              "callbacks=empty: the tracked calls' callbacks are on (%d runtime)" % len(cbs.get("runtime", [])))
        check(not stacks and summary and " callbacks=empty " in summary[-1] and " api_calls=0 " in summary[-1],
              "callbacks=empty: they do nothing (no stacks, no calls counted)")
        check(exp.get("inflight_during", "").startswith("table pid=%s flags=0 " % pid),
              "callbacks=empty: the in-flight table says it is not kept")
        return
    if mode == "apicb":
        check_apicb(exp, recs, stacks, notes, untracked)
        return
    if mode == "off":
        check(not stacks, "stacks off: no cuda_callstack records (%d)" % len(stacks))
        check(configs and configs[0]["text"].startswith("cuda_callstack off"),
              "stacks off: the configuration record says so")
        check(any(r["kind"] == "api" for r in recs), "API records are still written")
        return
    check(len(configs) == 1 and configs[0]["text"].startswith("cuda_callstack on")
          and configs[0]["v0"] == str(k) and configs[0]["v1"] == str(n),
          "one configuration record: on, first=%d every=%d" % (k, n))

    by_fn = {}
    for s in stacks:
        by_fn.setdefault(int(s["fn"], 16), []).append(s)

    def frames(s):
        out = []
        for f in s["frames"].split(",") if s["frames"] else []:
            cid, _, line = f.rpartition(":")
            out.append((int(cid, 16), int(line)))
        return out

    def leaf(s):
        fr = frames(s)
        if not fr:
            return None, None
        names = codes.get(fr[0][0], set())
        return (sorted(names)[0][0] if names else None), fr[0][1]

    if mode == "nopython":
        check(stacks and all(int(s["flags"], 16) & PY_OFF and s["py"] == "0" for s in stacks),
              "Python off: every stack flagged PY_OFF, no Python frames")
        check(all(int(s["native"]) > 0 for s in stacks), "native frames are still taken")
        return
    if mode == "pydepth":
        deep = by_fn.get(exp["fn"]["deep"], [])
        check(deep and all(s["py"] == "8" and int(s["flags"], 16) & PY_TRUNC for s in deep),
              "a Python stack deeper than GT_CUPTI_STACK_PY_DEPTH=8 is cut at 8 and flagged PY_TRUNC")
        check(deep and leaf(deep[0]) == ("deep", exp["sites"]["deep"]), "the cut keeps the leaf frames")
        return
    if mode == "ring":
        summary = [t for t in notes if t.startswith("cupti agent summary")]
        kv = dict(w.split("=", 1) for w in summary[-1].split() if "=" in w) if summary else {}
        chosen = int(kv.get("stacks_first", 0)) + int(kv.get("stacks_nth", 0)) + int(kv.get("stacks_long_at_exit", 0))
        taken, lost = int(kv.get("stacks", 0)), int(kv.get("stacks_lost_ring", 0))
        dropped = sum(int(r["v0"]) for r in recs if r["kind"] == "dropped" and r["text"].startswith("cuda_callstack"))
        check(lost > 0 and taken + lost == chosen,
              "a 64 KiB ring and a stack at every call: every chosen call is taken or counted lost "
              "(%d taken + %d lost = %d chosen)" % (taken, lost, chosen))
        check(dropped == lost, "the losses are in the trace as dropped records (%d)" % dropped)
        check(len(stacks) == taken, "every stack taken is in the trace (%d of %d)" % (len(stacks), taken))
        return
    if mode == "budget":
        dropped = [r for r in recs if r["kind"] == "dropped" and r["text"].startswith("cuda_callstack")]
        skipped = sum(int(r["v1"]) for r in dropped)
        check(skipped > 0, "over the stack budget: calls chosen but not taken are recorded (%d)" % skipped)
        chosen = 3 * 2 * exp["calls"]
        check(0 < len(stacks) < chosen, "some stacks were taken, not all %d (%d)" % (chosen, len(stacks)))
        return

    # ---- default mode: everything ----
    check(("launch stacks: Python %s frames read in-process" % py) in notes,
          "the agent found Python %s in-process" % py)
    api = {r["corr"]: r for r in recs if r["kind"] == "api"}
    kernels = {r["corr"]: r for r in recs if r["kind"] == "kernel"}
    n_threads = 1 + len(exp["worker_tids"])
    for site, kname in (("site_a", "kernel_a"), ("site_b", "kernel_b")):
        ss = by_fn.get(exp["fn"][site], [])
        want = (site, exp["sites"][site])
        right = [s for s in ss if leaf(s) == want]
        check(ss and len(right) == len(ss),
              "%s: every stack's Python leaf is %s line %d (%d of %d)" % (kname, site, want[1], len(right), len(ss)))
        per_tid = {}
        for s in ss:
            per_tid.setdefault(s["tid"], []).append(int(s["flags"], 16))
        firsts = sorted(sum(1 for f in fl if f & FIRST) for fl in per_tid.values())
        check(len(per_tid) == n_threads and firsts == [k] * n_threads,
              "%s: the first %d calls on each of the %d threads have a stack (%s)" % (kname, k, n_threads, firsts))
        nth = sum(1 for s in ss if int(s["flags"], 16) & NTH)
        mean = n_threads * (exp["calls"] - k) / n
        check(0.5 * mean <= nth <= 1.6 * mean,
              "%s: 1-in-%d sampling afterwards: %d stacks, %.1f expected" % (kname, n, nth, mean))
        linked = sum(1 for s in ss if s["corr"] in api and api[s["corr"]]["cbid"] == s["cbid"]
                     and api[s["corr"]]["tid"] == s["tid"] and kernels.get(s["corr"], {}).get("name") == kname)
        check(linked == len(ss), "%s: each stack's correlation id names its API record (same call, thread) "
              "and the kernel it launched (%d of %d)" % (kname, linked, len(ss)))
        natives = [s for s in ss if int(s["native"]) >= 3 and s["ipmap"].split(",")[0].find("ffi") >= 0]
        via = " and the runtime's" if exp.get("cudart") and site == "site_a" else ""
        check(len(natives) == len(ss), "%s: native stacks start at the caller of the CUDA libraries "
              "(libffi here), the agent's and CUPTI's%s frames left out (%d of %d)" % (kname, via, len(natives), len(ss)))
    sync = [s for s in stacks if s["cbid"] == "131" and s["tid"] == str(exp["main_tid"])]
    fl = [int(s["flags"], 16) for s in sync]
    check(len(sync) == 5 and all(f & LONG for f in fl) and all(int(s["call_ns"]) >= 25_000_000 for s in sync)
          and all(leaf(s) == ("slow_sync", exp["sites"]["slow_sync"]) for s in sync),
          "five 30 ms synchronizes: five stacks flagged LONG with their duration, at slow_sync's line (%s)"
          % ["%s %.1fms %s:%s" % ((hex(f), int(s["call_ns"]) / 1e6) + tuple(str(x) for x in leaf(s)))
             for f, s in zip(fl, sync)])
    check(sum(1 for f in fl if f & FIRST) == k and sum(1 for f in fl if f & (AT_EXIT | NTH)) == 5 - k,
          "the first %d taken at entry, the next one (not sampled) at its exit: %s" % (k, [hex(f) for f in fl]))
    short_long = [s for s in stacks if s["cbid"] in ("211", "307") and int(s["flags"], 16) & LONG]
    check(not short_long, "no launch of a few microseconds is flagged LONG (%d)" % len(short_long))
    deep = by_fn.get(exp["fn"]["deep"], [])
    check(len(deep) == 1 and int(deep[0]["py"]) == exp["depth"] + 3 and leaf(deep[0]) == ("deep", exp["sites"]["deep"])
          and not int(deep[0]["flags"], 16) & PY_TRUNC,
          "a %d-deep Python recursion: %d frames, leaf first" % (exp["depth"], exp["depth"] + 3))
    nested = [s for s in stacks if s["corr"] == str(exp["nested_corr"])]
    check(len(nested) == 1 and nested[0]["cbid"] == "20" and not [s for s in stacks if s["cbid"] == "243"],
          "a driver call inside a runtime call: one stack, for the runtime call")
    check(exp["trivial_callback_on"] == 0 and exp["launch_callback_on"] == 1,
          "callbacks on for launches, off for trivial queries (cuCtxGetCurrent)")
    # the subscription: the calls that matter, and no others (the stand-in gives a callback only
    # for an enabled id, so a call outside the set can get neither a stack nor an in-flight slot)
    rt, drv = set(cbs.get("runtime", [])), set(cbs.get("driver", []))
    must = {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020",
            "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020", "cudaEventSynchronize_v3020",
            "cudaStreamWaitEvent_v3020", "cudaMalloc_v3020", "cudaFree_v3020", "cudaMallocAsync_v11020",
            "cudaHostAlloc_v3020", "cudaGraphLaunch_v10000"}
    must_drv = {"cuLaunchKernel", "cuLaunchKernelEx", "cuMemcpyAsync", "cuStreamSynchronize", "cuStreamWaitEvent",
                "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemMap", "cuMemUnmap", "cuMemCreate",
                "cuModuleLoadData", "cuLibraryLoadData"}
    never = {"cudaEventQuery_v3020", "cudaEventRecord_v3020", "cudaStreamQuery_v3020", "cudaGetDevice_v3020",
             "cudaFuncSetAttribute_v9000", "cudaGraphAddKernelNode_v10000", "cudaStreamIsCapturing_v10000",
             "cuCtxGetCurrent", "cuEventQuery", "cuKernelGetName", "cuCtxSetCurrent"}
    check(must <= rt and must_drv <= drv, "callbacks on for launches, copies, syncs, waits, allocations, loading "
          "(missing: %s)" % sorted((must - rt) | (must_drv - drv)))
    check(not (never & (rt | drv)), "callbacks off for queries, event records, attribute calls, graph editing "
          "(on: %s)" % sorted(never & (rt | drv)))
    check(200 < len(rt) + len(drv) < 450, "%d of ~1300 API calls have callbacks" % (len(rt) + len(drv)))
    check(sorted(cbs.get("nvtx", [])) == [3, 30, 39, 40, 41, 42],
          "NVTX callbacks without a capture rule: markers and names only (%s)" % cbs.get("nvtx"))
    check(cbs.get("refused", 0) >= 6 * len(untracked) and not [s for s in stacks if s["cbid"] in untracked],
          "the untracked calls got no callback (%d held back) and so no stack" % cbs.get("refused", 0))
    check(all(any(r["kind"] == "api" and r["cbid"] == c for r in recs) for c in untracked),
          "... while their API records are still written")
    ids = [cid for s in stacks for cid, _ in frames(s)]
    check(ids and all(cid & 1 for cid in ids) and all(cid in codes for cid in ids),
          "every Python frame names an agent code id (bit 0 set) that has a py_code record")
    check(all(len(v) == 1 for v in codes.values()), "no code id names two different code objects")
    check(not [r for r in recs if r["kind"] == "dropped"], "nothing dropped")
    summary = [t for t in notes if t.startswith("cupti agent summary")]
    nbuf = int(summary[-1].split(" buffers=")[1].split()[0]) if summary else 0
    npre = int(summary[-1].split(" unwind_tables_prefetched=")[1].split()[0]) if summary else 0
    check(npre >= 3, "the unwind tables of the loaded objects were read in ahead, off the launching threads "
          "(%d objects)" % npre)
    check(nbuf >= 4, "64 KiB buffers: CUPTI went through %d of them (reused from the flush thread)" % nbuf)
    fc = exp.get("fake_counts", {})
    check(fc.get("dropped") == 0 and fc.get("dirty_buffers") == 0 and fc.get("records", 0) > 0,
          "CUPTI got a buffer for every record, each one zeroed as the agent promised (%s)" % fc)
    if "inflight_during" in exp:
        during, after, tid = exp["inflight_during"], exp["inflight_after"], exp["parked_tid"]
        line = [l for l in during.splitlines() if l.startswith("slot tid=%d " % tid)]
        check(during.startswith("table pid=%s flags=1 " % pid), "in-flight table: found by symbol, active")
        check(len(line) == 1 and " cbid=131 domain=1 " in line[0] and "name=cudaStreamSynchronize_v3020" in line[0]
              and " depth=0 " in line[0] and "in_flight_ms=" in line[0],
              "in-flight table: the parked thread is inside cudaStreamSynchronize (%s)" % (line[0] if line else "none"))
        check("slot tid=%d " % tid not in after and not [l for l in after.splitlines() if " cbid=0 " not in l
                                                        and l.startswith("slot")],
              "in-flight table: after the call, no thread is in a call and the exited thread's slot is free")
        check(not [l for l in during.splitlines() if l.startswith("changing")], "no slot seen half-written")


if __name__ == "__main__":
    main()
    sys.exit(1 if dumpcheck.failures else 0)
