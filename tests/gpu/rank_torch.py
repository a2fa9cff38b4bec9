#!/usr/bin/env python3
"""rank_torch.py OUT.json [--seconds S] -- one rank of a small PyTorch job on cuda:$LOCAL_RANK (or
--device): a two-layer MLP trained with SGD on random batches for S seconds. It writes what it knows
about itself, for tests/job/check_ranks.py: pid, rank (RANK), device, steps, tokens.consumed
(steps x batch rows), min_kernels (a lower bound: 3 kernels a step at least -- two matmuls forward
already), process_cpu_ns (the whole process's CPU), and, under gt-record, the counter
tokens.trained (its running total, as gt-pipeline does) through GT_COUNTERS_DIR's line format."""
import argparse
import json
import os
import time


def counter(fd, name, value):
    if fd is not None:
        os.write(fd, b"c %d %s %d\n" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC), name.encode(), value))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--device", type=int, default=None)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=1024)
    a = ap.parse_args()
    import torch
    dev = a.device if a.device is not None else int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count())
    torch.cuda.set_device(dev)
    d = os.environ.get("GT_COUNTERS_DIR")
    fd = os.open(os.path.join(d, "counters.%d" % os.getpid()), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if d else None
    w1 = torch.randn(a.hidden, a.hidden, device="cuda", requires_grad=True)
    w2 = torch.randn(a.hidden, 16, device="cuda", requires_grad=True)
    opt = torch.optim.SGD([w1, w2], lr=1e-4)
    steps = tokens = 0
    t_end = time.monotonic() + a.seconds
    while time.monotonic() < t_end:
        x = torch.randn(a.batch, a.hidden, device="cuda")
        loss = torch.relu(x @ w1).matmul(w2).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if steps % 10 == 0:
            loss.item()  # a sync now and then, as training loops log their loss
        steps += 1
        tokens += a.batch
        counter(fd, "tokens.trained", tokens)
    torch.cuda.synchronize()
    with open(a.out, "w") as f:
        json.dump({"format": "rank-telemetry", "pid": os.getpid(), "rank": int(os.environ.get("RANK", "-1")),
                   "device": dev, "steps": steps, "tokens": {"consumed": tokens}, "min_kernels": 3 * steps,
                   "process_cpu_ns": time.process_time_ns()}, f)
    print("rank %s: %d steps on cuda:%d" % (os.environ.get("RANK"), steps, dev))


if __name__ == "__main__":
    main()
