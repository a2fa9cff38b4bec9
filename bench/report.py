#!/usr/bin/env python3
"""report.py — turns bench/run.sh's measurements (results.tsv: section, config, metric, value)
into docs/PERFORMANCE.md. Only numbers that are in the file are written; a comparison whose
other side is missing is left out and the notes say why.
  report.py RESULTS NOTES DOC REPS STEPS ROUNDS PERF FLAMEGRAPH_DIR AUSTIN"""
import datetime
import os
import platform
import statistics
import subprocess
import sys

res_path, notes_path, doc_path, reps, steps, rounds, perf, fg, austin = sys.argv[1:10]
# when and on what the measurements were taken (written by run.sh before it starts)
meta = {}
meta_path = os.path.join(os.path.dirname(res_path), "meta.txt")
if os.path.exists(meta_path):
    for line in open(meta_path):
        k, _, v = line.rstrip("\n").partition(" ")
        meta[k] = v
data = {}  # (section, config) -> {metric: value}
for line in open(res_path):
    sec, cfg, metric, value = line.rstrip("\n").split("\t")
    try:
        v = float(value)
    except ValueError:
        continue
    data.setdefault((sec, cfg), {})[metric] = v


def series(sec, cfg, metric):
    """Values of metric.1 .. metric.N, by repetition number."""
    d = data.get((sec, cfg), {})
    out = {}
    for k, v in d.items():
        name, _, rep = k.rpartition(".")
        if name == metric and rep.isdigit() and v == v:  # skip NaN
            out[int(rep)] = v
    return out


def mmm(vals, fmt="%.3f", scale=1.0):
    vals = sorted(v * scale for v in vals)
    if not vals:
        return "-"
    return " / ".join(fmt % x for x in (vals[0], statistics.median(vals), vals[-1]))


def paired(sec, a, b, metric, f):
    """f(a_rep, b_rep) for every repetition both have."""
    sa, sb = series(sec, a, metric), series(sec, b, metric)
    return [f(sa[r], sb[r]) for r in sorted(sa) if r in sb]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def mem_gib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1048576
    return 0


def distro():
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "unknown"


L = []
w = L.append
now = meta.get("date") or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
commit = meta.get("commit") or sh("git rev-parse --short HEAD")
w("## `make bench`: gt against perf, FlameGraph and Austin, side by side")
w("")
w("Written by `make bench` (bench/run.sh, bench/report.py): every number below was measured in one")
w("run on the machine named here, each configuration repeated %s times with the order rotating" % reps)
w("between repetitions; cells are **min / median / max**. Benchmarks never fail the build on a")
w("number; rerun `make bench` to refresh this file. Raw measurements: `build/bench/results.tsv`.")
w("")
w("| | |")
w("|---|---|")
w("| date | %s |" % now)
w("| commit | %s |" % (commit or "unknown"))
w("| machine | %s, %d CPUs, %.1f GiB, kernel %s, %s |" % (cpu_model(), os.cpu_count() or 0, mem_gib(), platform.release(), distro()))
tools = []
if perf:
    tools.append(sh(perf + " --version") or "perf")
if fg:
    tools.append("FlameGraph " + (sh("git -C %s log -1 --format='%%h %%cs'" % fg) or "(unknown revision)"))
if austin:
    tools.append(sh(austin + " --version") or "austin")
w("| compared with | %s |" % ("; ".join(tools) or "nothing (none of perf, FlameGraph, Austin was found)"))
for note in open(notes_path):
    w("| note | %s |" % note.strip())
w("")
w("The machine is shared (other builds and tests may run at the same time; see the load averages):")
w("configurations alternate inside each repetition so such noise falls on all of them, and the")
w("spread between min and max shows how much there was.")
w("")

# ---- 1. overhead ----
w("### Recorder overhead on `gt-pipeline --backend cpu --steps %s`" % steps)
w("")
w("The reference pipeline (5 targets + 3 drafters: 9 threads on %d CPUs) does a fixed amount of" % (os.cpu_count() or 0))
w("work. *Slowdown* is the pipeline's own tokens/s without a profiler divided by its tokens/s under")
w("the profiler, minus one, paired repetition by repetition (the cost the workload feels while")
w("recorded); *wall ratio* is the end-to-end time including the profiler's start and finish")
w("(gt-record embeds the symbols of every binary hit at the end; `perf record` does not).")
w("CUDA backend: not measured here (no GPU on this machine).")
w("")
w("| profiler | rate | call graph | slowdown (%) | wall ratio |")
w("|---|---|---|---|---|")
for tool in ("gt", "perf"):
    for cg in ("fp", "dwarf"):
        for hz in ("99", "999"):
            cfg = "%s-%s-%s" % (tool, hz, cg)
            if (("overhead", cfg)) not in data:
                continue
            slow = paired("overhead", "base", cfg, "tokens_per_s", lambda b, c: (b / c - 1) * 100 if c else float("nan"))
            wall = paired("overhead", "base", cfg, "wall_s", lambda b, c: c / b if b else float("nan"))
            name = "gt-record" if tool == "gt" else "perf record"
            w("| %s | %s Hz | %s | %s | %s |" % (name, hz, cg, mmm(slow, "%.1f"), mmm(wall, "%.3f")))
if ("overhead", "perf-99-fp") in data:
    w("")
    w("gt-record against perf record at the same settings (ratio of end-to-end wall times, paired):")
    w("")
    w("| rate | call graph | gt-record wall / perf record wall |")
    w("|---|---|---|")
    for cg in ("fp", "dwarf"):
        for hz in ("99", "999"):
            r = paired("overhead", "perf-%s-%s" % (hz, cg), "gt-%s-%s" % (hz, cg), "wall_s", lambda p, g: g / p)
            w("| %s Hz | %s | %s |" % (hz, cg, mmm(r, "%.3f")))
base_tps = series("overhead", "base", "tokens_per_s").values()
w("")
w("Baseline: %s tokens/s (min / median / max)." % mmm(base_tps, "%.0f"))
w("")

# ---- 2. achieved vs intended ----
w("### Achieved vs intended samples, more busy threads than CPUs")
w("")
w("`tests/progs/faulty spin 2 N` keeps 4 x CPUs threads busy for 2 s; intended samples = the process's")
w("CPU time (getrusage) x 999 Hz, achieved = samples in the recording (fp call graphs).")
w("")
w("| profiler | achieved / intended | samples | CPU s |")
w("|---|---|---|---|")
for cfg, name in (("gt", "gt-record"), ("perf", "perf record")):
    if ("achieved", cfg) in data:
        w("| %s | %s | %s | %s |" % (name, mmm(series("achieved", cfg, "ratio").values(), "%.3f"),
                                     mmm(series("achieved", cfg, "samples").values(), "%.0f"),
                                     mmm(series("achieved", cfg, "cpu_s").values(), "%.2f")))
w("")

# ---- 3. analysis throughput ----
w("### Analysis throughput: samples to folded stacks")
w("")
w("The same pipeline run recorded at 999 Hz by each tool; `gt-analyze fold TRACE` against")
w("`perf script | stackcollapse-perf.pl` (symbolization included on both sides; gt-analyze reads the")
w("symbols embedded in the trace, DWARF mode unwinds offline with libdw).")
w("")
w("| input | samples | seconds | samples/s (median) |")
w("|---|---|---|---|")
for cg in ("fp", "dwarf"):
    for tool, name in (("gt", "gt-analyze fold"), ("perf", "perf script + stackcollapse-perf.pl")):
        cfg = "%s-%s" % (tool, cg)
        secs = list(series("analysis", cfg, "seconds").values())
        n = data.get(("bytes", cfg), {}).get("samples")
        if not secs or not n:
            continue
        w("| %s, %s | %.0f | %s | %.0f |" % (name, cg, n, mmm(secs, "%.3f"), n / statistics.median(secs)))
for cg in ("fp", "dwarf"):
    g = paired("analysis", "gt-%s" % cg, "perf-%s" % cg, "seconds", lambda a, b: b / a)
    ng, np_ = data.get(("bytes", "gt-%s" % cg), {}).get("samples"), data.get(("bytes", "perf-%s" % cg), {}).get("samples")
    if g and ng and np_:
        rate = [x * ng / np_ for x in g]  # throughput ratio = (ng/tg) / (np/tp)
        w("")
        w("%s: gt-analyze's samples/s over perf's: %s (min / median / max)." % (cg, mmm(rate, "%.2f")))
w("")

# ---- 4. bytes per sample ----
w("### Trace bytes per sample")
w("")
w("Same recordings. gt traces embed the symbols of every binary that a sample hit (so they analyze")
w("on another machine); the `--no-archive` row is a second recording without them. perf.data holds")
w("no binaries (perf reads them from the disk or its build-id cache at `perf script` time).")
w("")
w("| recording | samples | bytes | bytes/sample |")
w("|---|---|---|---|")
for cg in ("fp", "dwarf"):
    for cfg, name in (("gt-%s" % cg, "gt-record, %s" % cg), ("gt-%s-noarch" % cg, "gt-record --no-archive, %s" % cg),
                      ("perf-%s" % cg, "perf record, %s" % cg)):
        d = data.get(("bytes", cfg))
        if d and d.get("samples"):
            w("| %s | %.0f | %.0f | %.0f |" % (name, d["samples"], d["file_bytes"], d["file_bytes"] / d["samples"]))
w("")

# ---- 5. render ----
w("### Flame graph rendering against flamegraph.pl")
w("")
lines = data.get(("render", "input"), {}).get("lines", 0)
w("Input: the folded stacks (with `--threads` roots) of the DWARF recording above, %.0f lines." % lines)
w("")
w("| renderer | seconds | SVG bytes |")
w("|---|---|---|")
for cfg, name in (("gt", "gt-render flame"), ("flamegraph.pl", "flamegraph.pl")):
    if ("render", cfg) in data:
        w("| %s | %s | %.0f |" % (name, mmm(series("render", cfg, "seconds").values(), "%.3f"),
                                  data[("render", cfg)].get("svg_bytes", 0)))
r = paired("render", "gt", "flamegraph.pl", "seconds", lambda g, f: f / g)
if r:
    w("")
    w("flamegraph.pl time / gt-render time: %s." % mmm(r, "%.2f"))
w("")

# ---- 6. Python ----
pyvers = sorted({sec.split("-", 1)[1] for sec, _ in data if sec.startswith("python-")})
w("### Python: sampling cost and agreement against Austin")
w("")
if not pyvers:
    w("Not measured (no Python interpreter found).")
for v in pyvers:
    sec = "python-" + v
    w("#### CPython %s, `bench/pywork.py %s`" % (v, rounds))
    w("")
    w("Pure-Python CPU work, one thread: per round alpha 6 units, beta 3, gamma -> delta 1. Cost: the")
    w("workload's own wall time under the profiler over its time alone, minus one (paired).")
    w("gt-record samples native stacks with perf and reads Python stacks from memory at the same")
    w("rate; Austin reads Python stacks only.")
    w("")
    w("| profiler | workload wall s | cost (%) |")
    w("|---|---|---|")
    for cfg, name in (("base", "none"), ("gt-99", "gt-record -F 99"), ("gt-999", "gt-record -F 999"),
                      ("austin-100", "austin -i 10ms"), ("austin-1000", "austin -i 1ms")):
        if (sec, cfg) not in data:
            continue
        cost = paired(sec, "base", cfg, "wall_s", lambda b, c: (c / b - 1) * 100) if cfg != "base" else []
        w("| %s | %s | %s |" % (name, mmm(series(sec, cfg, "wall_s").values(), "%.3f"), mmm(cost, "%.1f") if cost else "-"))
    agree = "agree-" + v
    keys = ("alpha", "beta", "delta")
    truth = {"alpha": 0.6, "beta": 0.3, "delta": 0.1}

    def dist(a, b):
        return 0.5 * sum(abs(a[k] - b[k]) for k in keys)

    def runs(cfg):
        """{rep: {alpha, beta, delta}} for the repetitions that have all three shares."""
        per = [series(agree, cfg, k) for k in keys]
        return {r: dict(zip(keys, (p[r] for p in per))) for r in per[0] if all(r in p for p in per)}

    rows = [(cfg, runs(cfg)) for cfg in ("gt-99", "gt-999", "austin-100", "austin-1000") if runs(cfg)]
    if rows:
        w("")
        w("Share of the sampled time under each function (median over the repetitions) and the total")
        w("variation distance of each recording's split to the work split 60/30/10 (0 = the same")
        w("split, 1 = disjoint; min / median / max over the repetitions):")
        w("")
        w("| profiler | alpha | beta | delta | distance to 60/30/10 |")
        w("|---|---|---|---|---|")
        w("| work units | 0.600 | 0.300 | 0.100 | 0 |")
        for cfg, rr in rows:
            med = {k: statistics.median(x[k] for x in rr.values()) for k in keys}
            w("| %s | %.3f | %.3f | %.3f | %s |" % (cfg, med["alpha"], med["beta"], med["delta"],
                                                    mmm([dist(x, truth) for x in rr.values()], "%.3f")))
        w("")
        for g, a in (("gt-99", "austin-100"), ("gt-999", "austin-1000")):
            rg, ra = runs(g), runs(a)
            d = [dist(rg[r], ra[r]) for r in sorted(rg) if r in ra]
            if d:
                w("%s against %s, same repetition: distance %s." % (g, a, mmm(d, "%.3f")))
                w("")
    w("")
if not austin:
    w("Austin was not available, so no Austin rows: build it from its public source into /tmp")
    w("(`gcc -O3 -pthread src/*.c` of its `austin_SOURCES`) and set AUSTIN=/path/to/austin.")
    w("")

# The section between the markers is ours; the rest of the document (other benchmarks) is kept.
BEGIN = "<!-- begin: written by make bench (bench/run.sh, bench/report.py); edit those, not this -->"
END = "<!-- end: make bench -->"
body = BEGIN + "\n" + "\n".join(L) + "\n" + END + "\n"
old = open(doc_path).read() if os.path.exists(doc_path) else "# Performance\n\n"
if BEGIN in old and END in old:
    new = old[:old.index(BEGIN)] + body + old[old.index(END) + len(END):].lstrip("\n")
else:
    new = old.rstrip("\n") + "\n\n" + body
open(doc_path, "w").write(new)
