"""py_torch.py — a small multi-threaded PyTorch workload for recording on a GPU machine: the
main thread launches bf16 matmuls on the GPU and synchronizes, a "cpu_mm" thread runs CPU
matmuls (torch releases the GIL inside them), a "pyloop" thread runs pure Python.

usage: python py_torch.py SECONDS [READY_FILE]
Writes "ROLE TID" lines to READY_FILE (or stdout) once the threads run. Falls back to CPU
tensors for the main thread when no GPU is visible.
"""
import os
import sys
import threading
import time

import torch

stop = threading.Event()
tids = {}


def py_loop():
    tids["pyloop"] = threading.get_native_id()
    acc = 0
    while not stop.is_set():
        for i in range(5000):
            acc += i * i % 7
    return acc


def cpu_matmul():
    tids["cpu_mm"] = threading.get_native_id()
    torch.set_num_threads(1)
    x = torch.randn(384, 384)
    while not stop.is_set():
        y = x @ x
        x = y / y.norm()


def gpu_steps(seconds):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16 if dev == "cuda" else torch.float32)
    t0 = time.time()
    steps = 0
    while time.time() - t0 < seconds:
        for _ in range(8):
            b = a @ a
        if dev == "cuda":
            torch.cuda.synchronize()
        steps += 1
    return steps, b


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    threads = [threading.Thread(target=f) for f in (py_loop, cpu_matmul)]
    for t in threads:
        t.start()
    while len(tids) < 2:
        time.sleep(0.01)
    tids["main"] = threading.get_native_id()
    text = "".join("%s %d\n" % kv for kv in sorted(tids.items()))
    if len(sys.argv) > 2:
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(text)
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
    else:
        sys.stdout.write(text)
    steps, _ = gpu_steps(seconds)
    stop.set()
    for t in threads:
        t.join()
    print("steps %d" % steps)


if __name__ == "__main__":
    main()
