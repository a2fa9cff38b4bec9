"""check_sites.py — launch attribution of a recording against expected sites (launch_sites.py's
JSON): for each expected kernel, the launches that have a launch stack (cuda_callstack with the
kernel's correlation id) and how many of them name the right Python function and line (the
innermost frame in the expected file). Reads tests/gpu/callstack_dump's text. Prints PASS:/FAIL:
lines and a table; exit 1 when a kernel is under the expected share or has no sampled launch.

usage: check_sites.py DUMP.txt EXPECT.json
"""
import json
import os
import re
import sys


def parse(path):
    for line in open(path):
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind not in ("kernel", "code", "stack"):
            continue
        d = {"kind": kind}
        for kv in rest.split(" "):
            k, _, v = kv.partition("=")
            d[k] = v
        yield d


def main():
    dump, expect = sys.argv[1], sys.argv[2]
    exp = json.load(open(expect))
    kernels, codes, stacks = {}, {}, {}
    for d in parse(dump):
        key = (d.get("pid"), d.get("corr"))
        if d["kind"] == "kernel":
            kernels.setdefault(key, d["name"])
        elif d["kind"] == "code":
            codes[(d["pid"], int(d["id"], 16))] = (d["name"], os.path.basename(d["file"]))
        else:
            stacks[key] = d
    bad = 0
    for k in exp["kernels"]:
        rx = re.compile(k["kernel_regex"])
        launches = [key for key, name in kernels.items() if rx.search(name)]
        sampled = [key for key in launches if key in stacks]
        right = 0
        for key in sampled:
            s = stacks[key]
            for f in s["frames"].split(",") if s["frames"] else []:
                cid, _, line = f.rpartition(":")
                name, file = codes.get((s["pid"], int(cid, 16)), ("?", "?"))
                if file == exp["file"]:
                    right += name == k["site"] and int(line) == k["line"]
                    break
        share = right / len(sampled) if sampled else 0.0
        ok = bool(sampled) and share >= exp["min_attributed"]
        bad += not ok
        print("%s: %s kernels (/%s/): %d launches, %d with a launch stack, %d (%.1f %%) at %s line %d" %
              ("PASS" if ok else "FAIL", k["site"], k["kernel_regex"], len(launches), len(sampled), right,
               100 * share, k["site"], k["line"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
