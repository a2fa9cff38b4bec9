#!/usr/bin/env python3
"""torch_train.py — a small launch-bound PyTorch training load for recording on a GPU box.

Threads of variable-shape bf16 matmuls (a two-layer MLP trained with plain SGD, one CUDA stream
per thread) and threads of small ops that read a scalar back with .item() (a sync each time).
Prints one line "RESULT its_per_s=... matmul=... item=..." with iterations per second, so runs
with and without a profiler compare side by side. Two ways to measure:
  --seconds S  a timed window after a warm-up (for recordings)
  --iters N    fixed work: every matmul thread does N iterations, every item thread 4N, after a
               warm-up; throughput = all iterations / time until the last thread is done. Use this
               for benchmarks: with a timed window, slowing one kind of thread hands the GIL to the
               other and can raise the total.

  --profiler   run under torch.profiler (CPU + CUDA activities); exits without processing it
  --nvtx       NVTX range around each matmul iteration of thread 0
"""
import argparse
import os
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--iters", type=int, default=0, help="fixed work per thread instead of a time window")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--matmul-threads", type=int, default=5)
    ap.add_argument("--item-threads", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--sleep-ms", type=float, default=0.0, help="pause per iteration (small traces)")
    ap.add_argument("--empty-cache-every", type=int, default=200,
                    help="thread 0 returns cached blocks every N iterations (allocator churn), 0 never")
    ap.add_argument("--profiler", action="store_true")
    ap.add_argument("--nvtx", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        print("torch_train: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(a.seed)
    h = a.hidden
    stop = threading.Event()
    n_mm = [0] * a.matmul_threads
    n_item = [0] * a.item_threads
    errors = []
    n_threads = a.matmul_threads + a.item_threads
    barrier = threading.Barrier(n_threads + 1) if a.iters else None
    warm_iters = 20

    def os_name(name):
        # the OS thread name, so reports name threads like the script does
        try:
            import ctypes
            ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)
        except Exception:
            pass

    def keep_going(count, target):
        if barrier is not None:
            if count == warm_iters:
                barrier.wait()
            return count < warm_iters + target
        return not stop.is_set()

    def matmul_worker(i):
        os_name("matmul%d" % i)
        try:
            g = torch.Generator(device="cpu").manual_seed(a.seed + i)
            stream = torch.cuda.Stream()
            w1 = (torch.randn(h, h, generator=g) * 0.02).to(dev, torch.bfloat16).requires_grad_()
            w2 = (torch.randn(h, h, generator=g) * 0.02).to(dev, torch.bfloat16).requires_grad_()
            with torch.cuda.stream(stream):
                while keep_going(n_mm[i], a.iters):
                    rows = 64 * int(torch.randint(1, 17, (1,), generator=g))
                    if a.nvtx and i == 0:
                        torch.cuda.nvtx.range_push("step rows=%d" % rows)
                    x = torch.randn(rows, h, device=dev, dtype=torch.bfloat16)
                    y = torch.relu(x @ w1) @ w2
                    loss = y.float().pow(2).mean()
                    loss.backward()
                    with torch.no_grad():
                        w1 -= 1e-3 * w1.grad
                        w2 -= 1e-3 * w2.grad
                        w1.grad = None
                        w2.grad = None
                    if a.nvtx and i == 0:
                        torch.cuda.nvtx.range_pop()
                    n_mm[i] += 1
                    if i == 0 and a.empty_cache_every and n_mm[i] % a.empty_cache_every == 0:
                        stream.synchronize()
                        torch.cuda.empty_cache()
                    if a.sleep_ms:
                        time.sleep(a.sleep_ms / 1000)
                stream.synchronize()
        except Exception as e:  # report, never hang the run
            errors.append("matmul %d: %r" % (i, e))
            stop.set()
            if barrier is not None:
                barrier.abort()

    def item_worker(i):
        os_name("item%d" % i)
        try:
            v = torch.zeros(16, device=dev)
            while keep_going(n_item[i], 4 * a.iters):
                v = (v * 0.5 + 1.0).tanh()
                s = v.sum().item()
                if s != s:
                    raise RuntimeError("nan")
                n_item[i] += 1
                if a.sleep_ms:
                    time.sleep(a.sleep_ms / 1000)
        except Exception as e:
            errors.append("item %d: %r" % (i, e))
            stop.set()
            if barrier is not None:
                barrier.abort()

    def run():
        threads = [threading.Thread(target=matmul_worker, args=(i,), name="matmul%d" % i)
                   for i in range(a.matmul_threads)]
        threads += [threading.Thread(target=item_worker, args=(i,), name="item%d" % i)
                    for i in range(a.item_threads)]
        for t in threads:
            t.start()
        if barrier is not None:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass
            t0 = time.monotonic()
            for t in threads:
                t.join()
            torch.cuda.synchronize()
            dt = time.monotonic() - t0
            mm = a.matmul_threads * a.iters / dt
            it = a.item_threads * 4 * a.iters / dt
        else:
            time.sleep(a.warmup)
            t0, mm0, it0 = time.monotonic(), sum(n_mm), sum(n_item)
            time.sleep(a.seconds)
            t1, mm1, it1 = time.monotonic(), sum(n_mm), sum(n_item)
            stop.set()
            for t in threads:
                t.join()
            torch.cuda.synchronize()
            dt = t1 - t0
            mm, it = (mm1 - mm0) / dt, (it1 - it0) / dt
        if errors:
            print("torch_train: " + "; ".join(errors), file=sys.stderr)
            return
        print("RESULT its_per_s=%.1f matmul=%.1f item=%.1f seconds=%.3f" % (mm + it, mm, it, dt), flush=True)

    if a.profiler:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            run()
            # Processing the profile takes long and is not what we measure.
            sys.stdout.flush()
            os._exit(3 if errors else 0)
    run()
    return 3 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
