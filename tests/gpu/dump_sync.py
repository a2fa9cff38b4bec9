"""dump_sync.py — a PyTorch process stuck in torch.cuda.synchronize() behind a long kernel, for
gt-record --dump on a GPU machine (tests/gpu/dump_sync.sh).

usage: python dump_sync.py READY_FILE [KERNEL_SECONDS]
A thread "gpu_sync" queues a GPU kernel that spins for KERNEL_SECONDS (default 30) and calls
torch.cuda.synchronize() in wait_for_gpu(); a "pyloop" thread runs pure Python; the main
thread waits in join(). READY_FILE gets "ROLE TID" lines right before the synchronize.
"""
import os
import sys
import threading
import time

import torch

tids = {}
stop = threading.Event()


def wait_for_gpu():
    torch.cuda.synchronize()  # line:sync


def gpu_sync(ready_file, seconds):
    tids["gpu_sync"] = threading.get_native_id()
    torch.ones(1, device="cuda").sum().item()  # CUDA context and module loading first
    # torch.cuda._sleep spins the GPU for a number of clock cycles: measure cycles per second
    t0 = time.monotonic()
    torch.cuda._sleep(200_000_000)
    torch.cuda.synchronize()
    rate = 200_000_000 / max(time.monotonic() - t0, 1e-3)
    torch.cuda._sleep(int(seconds * rate))
    with open(ready_file + ".tmp", "w") as f:
        for k, v in tids.items():
            f.write("%s %d\n" % (k, v))
    os.rename(ready_file + ".tmp", ready_file)
    wait_for_gpu()


def py_loop():
    tids["pyloop"] = threading.get_native_id()
    acc = 0
    while not stop.is_set():
        acc += sum(i * i % 7 for i in range(1000))


def main():
    ready_file = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    tids["main"] = threading.get_native_id()
    threading.Thread(target=py_loop, daemon=True).start()
    while "pyloop" not in tids:
        time.sleep(0.01)
    t = threading.Thread(target=gpu_sync, args=(ready_file, seconds), daemon=True)
    t.start()
    t.join()  # line:join
    stop.set()


if __name__ == "__main__":
    main()
