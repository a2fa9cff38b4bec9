#!/usr/bin/env python3
"""gil_pingpong.py — the GIL ping-pong stand-in of issue 13: THREADS Python threads (default 8)
alternate a little Python work (50 additions, GIL held) with two calls that release the GIL
(os.read of one byte from /dev/zero, time.sleep(0)), so the GIL changes hands tens of thousands
of times a second, each hand-over a context switch or two — the shape of a GIL-contended
PyTorch process, where per-task perf events cost the most.

usage: gil_pingpong.py [SECONDS] [THREADS]     (defaults 5 and 8)
prints: rounds_per_s (the throughput; a profiler's cost is the drop in it), rounds, seconds,
threads, switches_per_s (voluntary + involuntary context switches of the process per second),
cpu_us_per_round (user + system CPU time of the process per round).
"""
import os
import resource
import sys
import threading
import time


def switches():
    """Context switches of this process so far, its finished threads included."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_nvcsw + ru.ru_nivcsw


def worker(deadline, counts, i, start):
    fd = os.open("/dev/zero", os.O_RDONLY)
    n = 0
    x = 0
    start.wait()
    while time.monotonic() < deadline[0]:
        for k in range(50):
            x += k
        os.read(fd, 1)
        time.sleep(0)
        n += 1
    os.close(fd)
    counts[i] = n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    counts = [0] * n_threads
    deadline = [float("inf")]
    start = threading.Event()
    threads = [threading.Thread(target=worker, args=(deadline, counts, i, start), name=f"ping{i}")
               for i in range(n_threads)]
    for t in threads:
        t.start()
    sw0 = switches()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    deadline[0] = t0 + seconds
    start.set()
    for t in threads:
        t.join()
    dt = time.monotonic() - t0
    sw = switches() - sw0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    rounds = sum(counts)
    print(f"rounds_per_s {rounds / dt:.0f}")
    print(f"rounds {rounds}")
    print(f"seconds {dt:.3f}")
    print(f"threads {n_threads}")
    print(f"switches_per_s {sw / dt:.0f}")
    # the process's own CPU time per round: what per-task perf events add on every context
    # switch lands here, and it moves less than throughput when other programs share the CPUs
    print(f"cpu_us_per_round {1e6 * cpu / rounds if rounds else 0:.3f}")


if __name__ == "__main__":
    main()
