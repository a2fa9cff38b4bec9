#!/usr/bin/env python3
"""torch_workload.py — the launch-bound PyTorch process of the GPU overhead benchmark (issue 13).

5 "target" threads, each on its own CUDA stream: variable-shape bf16 matmuls + gelu (a small MLP
forward on a freshly allocated batch of random length), torch.cuda.current_stream().synchronize()
every iteration. 3 "drafter" threads: small elementwise ops on a few thousand elements and a
.item() (a device-to-host read, so a sync) every iteration. Every thread hands the GIL back and
forth thousands of times a second, like the training process the issue measured.

Throughput = target iterations per second over a timed window after a warm-up (all threads run
during both). Prints one line:
  RESULT target_its_per_s=X drafter_its_per_s=Y target_iters=N seconds=S gil_switch_interval=...

usage: torch_workload.py [--seconds 4] [--warmup 1] [--targets 5] [--drafters 3] [--seed 1]
Exit: 0 ok, 2 no CUDA device or a failure.
"""
import argparse
import random
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0, help="measured window")
    ap.add_argument("--warmup", type=float, default=1.0, help="run before the window (not counted)")
    ap.add_argument("--targets", type=int, default=5)
    ap.add_argument("--drafters", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        print("torch_workload: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(a.seed)
    h = a.hidden
    weights = [torch.randn(h, h, device=dev, dtype=torch.bfloat16) * (h ** -0.5) for _ in range(a.layers)]
    torch.cuda.synchronize()
    counting = threading.Event()
    stop = threading.Event()
    n_target = [0] * a.targets
    n_drafter = [0] * a.drafters
    errors = []

    def target(i):
        rnd = random.Random(a.seed * 1000 + i)
        stream = torch.cuda.Stream()
        try:
            with torch.cuda.stream(stream):
                while not stop.is_set():
                    rows = 64 * rnd.randint(1, 16)          # variable batch length: 64..1024 rows
                    x = torch.randn(rows, h, device=dev, dtype=torch.bfloat16)
                    for w in weights:
                        x = torch.nn.functional.gelu(x @ w)
                    torch.cuda.current_stream().synchronize()
                    if counting.is_set():
                        n_target[i] += 1
        except Exception as e:  # report, never hang the other threads
            errors.append("target %d: %r" % (i, e))
            stop.set()

    def drafter(i):
        v = torch.full((4096,), 1.0 + i, device=dev)
        try:
            while not stop.is_set():
                v = torch.relu(v * 0.999 + 0.001)
                s = v.sum().item()
                if s != s:
                    raise RuntimeError("nan")
                if counting.is_set():
                    n_drafter[i] += 1
        except Exception as e:
            errors.append("drafter %d: %r" % (i, e))
            stop.set()

    threads = [threading.Thread(target=target, args=(i,), name="target-%d" % i) for i in range(a.targets)]
    threads += [threading.Thread(target=drafter, args=(i,), name="drafter-%d" % i) for i in range(a.drafters)]
    for t in threads:
        t.start()
    time.sleep(a.warmup)
    t0 = time.perf_counter()
    counting.set()
    stop.wait(a.seconds)
    counting.clear()
    t1 = time.perf_counter()
    stop.set()
    for t in threads:
        t.join()
    if errors:
        print("torch_workload: " + "; ".join(errors), file=sys.stderr)
        return 2
    dt = t1 - t0
    print("RESULT target_its_per_s=%.1f drafter_its_per_s=%.1f target_iters=%d seconds=%.3f threads=%d+%d"
          % (sum(n_target) / dt, sum(n_drafter) / dt, sum(n_target), dt, a.targets, a.drafters), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
