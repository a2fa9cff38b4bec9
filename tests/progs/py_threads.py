"""py_threads.py — many Python threads with deep stacks, for reader cost and overhead checks.

usage: python py_threads.py THREADS DEPTH SECONDS [READY_FILE [idle]]
THREADS threads each recurse DEPTH frames and then alternate short pure-Python work with
short sleeps (so every thread has a live, deep stack and the GIL changes hands); with "idle"
they only sleep there (10 ms at a time), so the main thread has the GIL to itself. The main
thread runs a fixed pure-Python workload for SECONDS and prints "ops_per_s N" (its
throughput, for overhead comparisons) before stopping the others.
"""
import sys
import threading
import time

stop = threading.Event()
idle = len(sys.argv) > 5 and sys.argv[5] == "idle"


def worker_leaf():
    x = 0
    if idle:
        while not stop.is_set():
            time.sleep(0.01)
        return x
    while not stop.is_set():
        for i in range(200):
            x += i
        time.sleep(0.001)
    return x


def recurse(n):
    if n <= 0:
        return worker_leaf()
    return recurse(n - 1) + 1


def main():
    n_threads = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    threads = [threading.Thread(target=recurse, args=(depth,)) for _ in range(n_threads)]
    for t in threads:
        t.start()
    if len(sys.argv) > 4 and sys.argv[4] != "-":
        with open(sys.argv[4] + ".tmp", "w") as f:
            f.write("main %d\n" % threading.get_native_id())
        import os
        os.rename(sys.argv[4] + ".tmp", sys.argv[4])
    ops = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        s = 0
        for i in range(1000):
            s += i * i
        ops += 1
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    print("ops_per_s %.0f" % (ops / elapsed))


if __name__ == "__main__":
    main()
