#!/usr/bin/env python3
"""gil_pingpong.py — the GIL ping-pong stand-in of issue 13: THREADS Python threads (default 8)
alternate a little Python work (50 additions, GIL held) with two calls that release the GIL
(os.read of one byte from /dev/zero, time.sleep(0)), so the GIL changes hands tens of thousands
of times a second, each hand-over a context switch or two — the shape of a GIL-contended
PyTorch process, where per-task perf events cost the most.

usage: gil_pingpong.py [SECONDS] [THREADS]     (defaults 5 and 8)
prints: rounds_per_s (the throughput; a profiler's cost is the drop in it), rounds, seconds,
threads, switches_per_s (voluntary + involuntary context switches of the process per second),
cpu_us_per_round (user + system CPU time of the process per round), and where the kernel keeps
them (/proc/thread-self/sched, schedstat) migrations_per_kround (the workers' moves between
CPUs per 1000 rounds) and wait_us_per_round (their time runnable but not running). On a 2-CPU
machine the same run falls in one of two states, the workers' wake-ups mostly staying on their
CPU (a few migrations per 1000 rounds, ~7 us of CPU per round here) or mostly crossing to the
other (100-180, ~11-13 us): compare modes within one state, or with enough repetitions that
both states fall on every mode.
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


def sched_counts():
    """This thread's (migrations, ns runnable but waiting), None where the kernel keeps no
    such file (no CONFIG_SCHED_DEBUG / SCHEDSTATS)."""
    try:
        mig = None
        with open("/proc/thread-self/sched") as f:
            for line in f:
                if line.startswith("se.nr_migrations"):
                    mig = int(line.split(":")[1])
        with open("/proc/thread-self/schedstat") as f:
            wait_ns = int(f.read().split()[1])
        return None if mig is None else (mig, wait_ns)
    except (OSError, ValueError, IndexError):
        return None


def worker(deadline, counts, sched, i, start):
    fd = os.open("/dev/zero", os.O_RDONLY)
    n = 0
    x = 0
    start.wait()
    s0 = sched_counts()
    while time.monotonic() < deadline[0]:
        for k in range(50):
            x += k
        os.read(fd, 1)
        time.sleep(0)
        n += 1
    s1 = sched_counts()
    os.close(fd)
    counts[i] = n
    if s0 and s1:
        sched[i] = (s1[0] - s0[0], s1[1] - s0[1])


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    n_threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    counts = [0] * n_threads
    sched = [None] * n_threads
    deadline = [float("inf")]
    start = threading.Event()
    threads = [threading.Thread(target=worker, args=(deadline, counts, sched, i, start), name=f"ping{i}")
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
    if rounds and all(sched):
        print(f"migrations_per_kround {1000 * sum(m for m, _ in sched) / rounds:.1f}")
        print(f"wait_us_per_round {sum(w for _, w in sched) / 1e3 / rounds:.3f}")


if __name__ == "__main__":
    main()
