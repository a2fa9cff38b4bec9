#!/usr/bin/env python3
"""launch_sites.py — a PyTorch program whose kernel launch sites are known, for checking launch
stacks (issue 15): softmax kernels are launched only from site_softmax (one line), layer-norm
kernels only from site_layer_norm (one line); everything else (inputs, weights) is made before
the loop. Two threads call both sites, alternating, so each kernel has launches on each thread.

usage: launch_sites.py [--iters N] [--threads T] [--expect FILE.json]
       launch_sites.py --expect-only FILE.json    (no torch needed: writes the expected sites)
The expected sites (function, file, line, kernel-name pattern) go to FILE.json; a recording
attributes >= 95 % of the sampled launches of each kernel to its site.
"""
import argparse
import json
import os
import sys
import threading

torch = None    # imported in main(): --expect-only runs without it


def marker_line(tag):
    with open(os.path.abspath(__file__)) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith("# " + tag):
                return n
    raise SystemExit("launch_sites.py: marker %s missing" % tag)


def expected():
    return {
        "file": "launch_sites.py",
        "min_attributed": 0.95,
        "kernels": [
            {"site": "site_softmax", "line": marker_line("SITE_SOFTMAX"), "kernel_regex": "(?i)softmax"},
            {"site": "site_layer_norm", "line": marker_line("SITE_LAYER_NORM"), "kernel_regex": "(?i)layer_?norm"},
        ],
        "rule": "a launch is attributed to the innermost Python frame in a file named `file`: its function "
                "and line must be `site` and `line`; kernel_regex is matched against the kernel's name "
                "(mangled or demangled)",
    }


def site_softmax(x):
    return x.softmax(dim=-1)  # SITE_SOFTMAX


def site_layer_norm(x, w, b):
    return torch.layer_norm(x, (x.shape[-1],), w, b)  # SITE_LAYER_NORM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--expect")
    ap.add_argument("--expect-only")
    a = ap.parse_args()
    if a.expect_only:
        with open(a.expect_only, "w") as f:
            json.dump(expected(), f, indent=1)
            f.write("\n")
        return 0
    global torch
    import torch
    if not torch.cuda.is_available():
        print("launch_sites: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(1)
    errors = []

    def worker(i):
        try:
            x = torch.randn(256, 1024, device=dev)
            w = torch.ones(1024, device=dev)
            b = torch.zeros(1024, device=dev)
            torch.cuda.synchronize()
            for k in range(a.iters):
                y = site_softmax(x)
                z = site_layer_norm(x, w, b)
                if k % 100 == 99:
                    torch.cuda.synchronize()
            del y, z
            torch.cuda.synchronize()
        except Exception as e:
            errors.append("thread %d: %r" % (i, e))

    ts = [threading.Thread(target=worker, args=(i,), name="sites-%d" % i) for i in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        print("launch_sites: " + "; ".join(errors), file=sys.stderr)
        return 2
    if a.expect:
        with open(a.expect, "w") as f:
            json.dump(expected(), f, indent=1)
            f.write("\n")
    print("launch_sites: %d threads x %d iterations of softmax + layer_norm" % (a.threads, a.iters))
    return 0


if __name__ == "__main__":
    sys.exit(main())
