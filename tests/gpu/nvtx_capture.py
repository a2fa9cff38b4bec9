"""nvtx_capture.py — NVTX capture ranges and NVTX counters on a GPU, for tests/gpu/nvtx_capture.sh:
kernels of one kind inside ranges named "train_step" (sin), of other kinds outside them (cos) and
inside a range of another name (tanh); last, a start/end range named "train_step" (exp inside,
neg after it); counters through python/gt_nvtx.py inside and outside the ranges. Writes what it
did to EXPECT.json.

usage: python nvtx_capture.py EXPECT.json [--launches N]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gt_nvtx  # noqa: E402


def ops(fn, x, n):
    for _ in range(n):
        fn(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("expect")
    ap.add_argument("--launches", type=int, default=50)
    a = ap.parse_args()
    n = a.launches
    x = torch.randn(1 << 16, device="cuda")
    # warm up every kernel outside the ranges (module loading, caching allocator)
    for fn in (torch.sin, torch.cos, torch.tanh, torch.exp, torch.neg):
        fn(x)
    torch.cuda.synchronize()
    counters = []

    def counter(name, value):
        gt_nvtx.counter(name, value)
        counters.append([name, float(value)])

    ops(torch.cos, x, n)                               # outside
    counter("queue.ready", 3)
    torch.cuda.synchronize()
    for step in range(2):                              # two push/pop ranges
        torch.cuda.nvtx.range_push("train_step")
        ops(torch.sin, x, n)
        counter("queue.ready", 10 + step)
        counter("loss", 0.5 / (step + 1))
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        ops(torch.cos, x, n)                           # between
        torch.cuda.synchronize()
        time.sleep(0.05)
    torch.cuda.nvtx.range_push("other_step")           # another name: not captured
    ops(torch.tanh, x, n)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    ops(torch.cos, x, n)
    counter("queue.ready", 2)
    torch.cuda.synchronize()
    rid = torch.cuda.nvtx.range_start("train_step")    # start/end, last: its own checks
    ops(torch.exp, x, n)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_end(rid)
    ops(torch.neg, x, n)
    torch.cuda.synchronize()
    with open(a.expect, "w") as f:
        json.dump({"pid": os.getpid(), "launches": n, "counters": counters, "gt_nvtx": gt_nvtx.available(),
                   "torch": torch.__version__}, f)


if __name__ == "__main__":
    main()
