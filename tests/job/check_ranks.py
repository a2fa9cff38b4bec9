#!/usr/bin/env python3
"""check_ranks.py -- does gt-analyze report's per-process table agree with each rank's own telemetry?

    check_ranks.py REPORT TELEMETRY.json...

REPORT is `gt-analyze report` output; each TELEMETRY is what one rank wrote about itself: `pid`,
`rank` (else the RANK its file name says: rank3.json), and any of `process_cpu_ns` (the process's
CPU, else the sum of `threads[].cpu_ns`), `threads` (a list: the report must show at least as many),
`tokens.consumed` (the last `tokens.trained` counter of its process), `device` (the report's GPUS of
the process must be exactly it), `min_kernels` (kernels recorded for it, at least). Prints one
PASS:/FAIL: line per check (tests/run.sh counts them) and exits 1 when any failed.
Tolerance: CPU within 10% + 60 ms (the report's CPU comes from context switches, exact to the
scheduler; it counts from the process's fork, the telemetry's clock from its start; traces without
switch records fall back to /proc readings, which miss up to one period of the /proc loop per
thread that ended)."""
import json
import os
import re
import sys

failed = 0


def check(ok, what):
    global failed
    print(("PASS: " if ok else "FAIL: ") + what)
    failed += 0 if ok else 1


def parse_report(path):
    procs, counters, sec, host = {}, {}, None, False
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("Processes ("):
            sec = "p"
            continue
        if line.startswith("Counters per process"):
            sec = "c"
            continue
        if not line.startswith("  "):
            sec = None
            continue
        if sec == "p":
            if line.split()[0] == "PID":
                host = "HOST" in line.split()
                continue
            m = re.match(r"\s+(\d+) ", line)
            if not m:
                continue
            rest = line[m.end():]
            if host:
                rest = rest[16:]
            label, fields = rest[:28].strip(), rest[28:].split()
            if len(fields) < 8:
                continue
            procs[int(m.group(1))] = dict(label=label, threads=int(fields[0]), samples=int(fields[1]),
                                          cpu=float(fields[2].lstrip("~")), gil=fields[3], gpus=fields[4],
                                          gpu_busy_s=float(fields[5]), kernels=int(fields[7]))
        elif sec == "c":
            f = line.split()
            if len(f) >= 3 and f[0] != "COUNTER" and f[1].isdigit():
                m = re.search(r"\s(-?[\d.e+]+)\s+(-?[\d.e+]+)\s+(-?[\d.e+]+)\s+(\d+)$", line)
                if m:
                    counters[(f[0], int(f[1]))] = float(m.group(1))
    return procs, counters


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 64
    procs, counters = parse_report(sys.argv[1])
    check(len(procs) > 0, "the report has a per-process table (%d processes)" % len(procs))
    for path in sys.argv[2:]:
        try:
            t = json.load(open(path))
        except (OSError, ValueError) as e:
            check(False, "telemetry %s: %s" % (path, e))
            continue
        rank = t.get("rank")
        if rank is None:
            m = re.search(r"rank(\d+)", os.path.basename(path))
            rank = int(m.group(1)) if m else -1
        pid = t["pid"]
        p = procs.get(pid)
        check(p is not None, "rank %s: its pid %d is in the table" % (rank, pid))
        if not p:
            continue
        check(re.match(r"rank %s(/|\b)" % rank, p["label"]) is not None,
              "rank %s: labelled '%s'" % (rank, p["label"]))
        check(p["samples"] > 0, "rank %s: sampled (%d samples)" % (rank, p["samples"]))
        if isinstance(t.get("threads"), list):
            check(p["threads"] >= len(t["threads"]),
                  "rank %s: %d threads shown, its telemetry names %d" % (rank, p["threads"], len(t["threads"])))
        cpu = t.get("process_cpu_ns")
        if cpu is None and isinstance(t.get("threads"), list):
            cpu = sum(th.get("cpu_ns", 0) for th in t["threads"])
        if cpu is not None:
            cpu /= 1e9
            check(abs(p["cpu"] - cpu) <= 0.1 * cpu + 0.06,
                  "rank %s: CPU %.3f s in the report, %.3f s in its telemetry (10%% + 60 ms)" % (rank, p["cpu"], cpu))
        tokens = (t.get("tokens") or {}).get("consumed")
        if tokens is not None:
            got = counters.get(("tokens.trained", pid))
            check(got is not None and int(got) == int(tokens),
                  "rank %s: tokens.trained %s in its own process = telemetry %d" % (rank, got, tokens))
        if "device" in t:
            check(p["gpus"] == str(t["device"]),
                  "rank %s: its GPU work on device %s (report: %s)" % (rank, t["device"], p["gpus"]))
            check(p["gpu_busy_s"] > 0, "rank %s: GPU busy %.3f s of its own work" % (rank, p["gpu_busy_s"]))
        if "min_kernels" in t:
            check(p["kernels"] >= t["min_kernels"],
                  "rank %s: %d kernels attributed to it, at least %d launched" % (rank, p["kernels"], t["min_kernels"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
