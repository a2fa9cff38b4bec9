"""check_capture.py — checks a recording of tests/gpu/nvtx_play.c (through tests/gpu/callstack_dump's
text) against what the program says it did (EXPECT): capture ranges and NVTX counters. Prints
PASS:/FAIL: lines (tests/run.sh counts them).

usage: check_capture.py DUMP.txt EXPECT RULE [bytime]
  RULE: the capture rule the agent had (train_step, train_step@other, train_step@*), or "none"
  bytime: the agent had no API callbacks (GT_CUPTI_CALLBACKS=none), so device records are kept
          by their start time, not by the call that launched them; no launch stacks
"""
import sys

import dumpcheck
from dumpcheck import check


def main():
    dump, expect, rule = sys.argv[1], sys.argv[2], sys.argv[3]
    bytime = len(sys.argv) > 4 and sys.argv[4] == "bytime"
    kernels, syncs, counters, plains, pid, ranges = [], [], {}, [], None, {}
    with open(expect) as f:
        for line in f:
            w = line.split()
            if w[0] == "pid":
                pid = w[1]
            elif w[0] == "ranges":
                ranges[w[1]] = int(w[2])
            elif w[0] == "kernel":
                kernels.append((w[1], w[2], w[3]))
            elif w[0] == "sync":
                syncs.append((w[1], w[2]))
            elif w[0] == "counter":
                counters[w[1]] = float(w[2])
            elif w[0] == "plain":
                plains.append(w[1])
    recs = [r for r in dumpcheck.parse_dump(dump) if r.get("pid") == pid]
    kept_classes = {"none": {"in", "out", "dom", "late", "early"}, "train_step": {"in", "late"},
                    "train_step@other": {"dom"}, "train_step@*": {"in", "late", "dom"}}[rule]
    if bytime:
        kept_classes = kept_classes - {"late"} | {"early"}
    n_ranges = ranges[rule]

    got_k = {r["corr"]: r for r in recs if r["kind"] == "kernel"}
    want_k = {c for _, c, cls in kernels if cls in kept_classes}
    miss = [(n, c, cls) for n, c, cls in kernels if cls in kept_classes and c not in got_k]
    extra = [(n, c, cls) for n, c, cls in kernels if cls not in kept_classes and c in got_k]
    check(not miss, "rule %s: every kernel launched inside a capture range is in the trace (missing: %s)" % (rule, miss))
    check(not extra, "rule %s: no kernel launched outside the capture ranges is (extra: %s)" % (rule, extra))
    if rule == "train_step" and not bytime and any(cls == "late" for _, _, cls in kernels):
        late = [c for n, c, cls in kernels if cls == "late"]
        early = [c for n, c, cls in kernels if cls == "early"]
        check(late and all(c in got_k for c in late),
              "a kernel launched inside a range that runs after it closed is kept (by its launch)")
        check(early and not any(c in got_k for c in early),
              "a kernel launched before a range that runs inside it is not")
    api = {r["corr"] for r in recs if r["kind"] == "api"}
    # API records go by the time of the call, whatever rule the device records follow
    call_classes = {"none": {"in", "out", "dom", "late", "early"}, "train_step": {"in", "late"},
                    "train_step@other": {"dom"}, "train_step@*": {"in", "late", "dom"}}[rule]
    want_api = {c for _, c, cls in kernels if cls in call_classes} | {c for c, cls in syncs if cls in call_classes}
    check(api == want_api, "rule %s: API records are those of the calls inside (%d, wanted %d; extra %s, missing %s)"
          % (rule, len(api), len(want_api), sorted(api - want_api)[:5], sorted(want_api - api)[:5]))

    caps = [r for r in recs if r["kind"] == "capture"]
    events = [r["event"] for r in caps]
    check(len(caps) == 2 * n_ranges and events == ["1", "2"] * n_ranges,
          "rule %s: %d capture ranges, each a start then a stop (%s)" % (rule, n_ranges, events))
    if caps:
        times = [int(r["time"]) for r in caps]
        check(times == sorted(times) and all(r["source"] == "2" and r["name"] == rule for r in caps),
              "capture records: in time order, source nvtx, named by the rule")
        spans = [(times[i], times[i + 1]) for i in range(0, len(times) - 1, 2)]
        inside = [r for c, r in got_k.items() if c in want_api and
                  [n for n, cc, cls in kernels if cc == c][0] in ("k_in", "k_in_b", "k_in_main2", "k_in4", "k_dom")]
        # the stand-in's kernels start 1 us after their launch returns: at most that past the stop
        check(inside and all(any(a <= int(r["start"]) <= b + 1000000 for a, b in spans) for r in inside),
              "the kept kernels that ran at once ran between a start and its stop (%d)" % len(inside))
    stacks = [r for r in recs if r["kind"] == "stack"]
    bad = [r["corr"] for r in stacks if r["corr"] not in want_api]
    if bytime:
        check(not stacks, "no API callbacks: no launch stacks (%d)" % len(stacks))
    else:
        check(stacks and not bad, "rule %s: launch stacks only for calls inside a capture range (%d stacks, %d outside)"
              % (rule, len(stacks), len(bad)))

    got_c = {}
    for r in recs:
        if r["kind"] == "counter":
            got_c.setdefault(r["name"], []).append(float(r["value"]))
    check(all(got_c.get(n) == [v] for n, v in counters.items()),
          "every NVTX marker with a payload is one counter record with its value (%s)" %
          {n: (got_c.get(n), v) for n, v in counters.items() if got_c.get(n) != [v]})
    check(not [n for n in plains if n in got_c] and len(got_c) == len(counters),
          "a marker without a payload is no counter; no other counters (%s)" % sorted(got_c))
    notes = [r["text"] for r in recs if r["kind"] == "note"]
    summary = [t for t in notes if t.startswith("cupti agent summary")]
    kv = dict(w.split("=", 1) for w in summary[-1].split() if "=" in w) if summary else {}
    if rule == "none":
        check(kv.get("outside_capture") == "0" and not [t for t in notes if t.startswith("capture nvtx:")],
              "no rule: nothing discarded, no capture note")
    else:
        note = [t for t in notes if t.startswith("capture nvtx:%s: %d capture range(s)" % (rule, n_ranges))]
        check(note and int(kv.get("outside_capture", "0")) > 0,
              "the side file's note counts the ranges and the records discarded outside them (%s)" % (note or notes[-3:]))
        check(kv.get("capture_ranges") == str(n_ranges) and kv.get("counters") == str(len(counters)),
              "summary: capture_ranges=%s counters=%s" % (kv.get("capture_ranges"), kv.get("counters")))


if __name__ == "__main__":
    main()
    sys.exit(1 if dumpcheck.failures else 0)
