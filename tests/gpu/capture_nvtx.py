"""capture_nvtx.py — the GPU workload of tests/gpu/capture_nvtx.sh: torch matmuls in
inside_range() between torch.cuda.nvtx.range_push(NAME) and range_pop(), the same in
outside_range() elsewhere, and a decoy range of another name (which must not start capture).
Prints each edge on stdout as "start|stop|decoy_start|decoy_stop NS" (CLOCK_MONOTONIC, the
trace's clock).

usage: python capture_nvtx.py [--name capture_me] [--ranges 3] [--inside 2.0] [--outside 2.0]
"""
import argparse
import sys
import time

import torch


def edge(kind):
    print(kind, time.monotonic_ns(), flush=True)


def work(x, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(8):
            x = x @ x
            x = x / x.norm()
        torch.cuda.synchronize()
    return x


def inside_range(x, seconds):
    return work(x, seconds)


def outside_range(x, seconds):
    return work(x, seconds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="capture_me")
    ap.add_argument("--ranges", type=int, default=3)
    ap.add_argument("--inside", type=float, default=2.0)
    ap.add_argument("--outside", type=float, default=2.0)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    x = torch.randn(1024, 1024, device="cuda")
    x = outside_range(x, 1.0)  # warm-up, outside any range
    for i in range(a.ranges):
        torch.cuda.nvtx.range_push(a.name)
        edge("start")
        x = inside_range(x, a.inside)
        edge("stop")
        torch.cuda.nvtx.range_pop()
        # a range of another name: it must not start capture
        torch.cuda.nvtx.range_push(a.name + "_decoy")
        edge("decoy_start")
        x = outside_range(x, a.outside / 2)
        edge("decoy_stop")
        torch.cuda.nvtx.range_pop()
        x = outside_range(x, a.outside / 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
