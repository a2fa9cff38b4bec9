"""gil_pingpong.py — the GIL ping-pong stand-in (issues 13 and 14): 8 Python threads each
alternate 50 additions with os.read and time.sleep(0), so the GIL changes hands tens of thousands
of times a second, as in a launch-bound PyTorch process. Usage: gil_pingpong.py [SECONDS] [THREADS]
(default 10 s, 8 threads). Prints the iterations done, a throughput for overhead comparisons."""
import os
import sys
import threading
import time


def worker(fd, stop, counts, i):
    n = 0
    while not stop.is_set():
        x = 0
        for k in range(50):
            x += k
        os.read(fd, 1)  # releases and retakes the GIL
        time.sleep(0)   # likewise
        n += 1
    counts[i] = n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    fd = os.open("/dev/zero", os.O_RDONLY)
    stop = threading.Event()
    counts = [0] * n_threads
    threads = [threading.Thread(target=worker, args=(fd, stop, counts, i), name=f"pingpong-{i}")
               for i in range(n_threads)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    dt = time.monotonic() - t0
    total = sum(counts)
    print(f"iterations {total} seconds {dt:.3f} per_second {total / dt:.0f}")


if __name__ == "__main__":
    main()
