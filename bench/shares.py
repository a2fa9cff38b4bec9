#!/usr/bin/env python3
"""shares.py — for bench/run.sh: the share of sampled time under alpha, beta and delta (the
functions of bench/pywork.py) in folded stacks (gt-analyze fold --python-only) or in Austin's
collapsed output (P<pid>;T<tid>;file:func:line;... VALUE). Prints "name share" lines."""
import sys

path = sys.argv[1]
tot = {"alpha": 0.0, "beta": 0.0, "delta": 0.0}
for line in open(path, errors="replace"):
    if line.startswith("#") or not line.strip():
        continue
    stack, _, count = line.rstrip("\n").rpartition(" ")
    try:
        c = float(count)
    except ValueError:
        continue
    frames = stack.split(";")
    if path.endswith(".austin"):
        frames = [f.split(":")[-2] if f.count(":") >= 2 else f for f in frames[2:]]
    for k in tot:
        if k in frames:
            tot[k] += c
s = sum(tot.values())
for k in tot:
    print(k, "%.4f" % (tot[k] / s if s else 0))
