"""py_identity.py — Python identity for tests/cli/python_identity.sh: named threads, worker
processes, and <module> frames of two files.

usage: python py_identity.py threads SECONDS
         the main thread and two named threads ("drafter-0", "target-1") spin in Python;
         "target-1" renames itself "target-1b" after SECONDS/2 (a rename to pick up)
       python py_identity.py pool METHOD SECONDS [WORKERS]
         a multiprocessing Pool (METHOD: fork, spawn or forkserver) of WORKERS processes
         (default 3), one pool_work task each (they start together), running for about
         SECONDS; prints "worker PID" per worker
       python py_identity.py child PYTHON SECONDS
         runs PYTHON (another interpreter) as a child spinning at its top level for SECONDS,
         and waits for it; prints "child PID"
       python py_identity.py modules SECONDS
         spins for SECONDS at the top level of a generated module (mod_a.py) and then of
         another (mod_b.py): two <module> frames that a name alone would merge
Every mode prints "main PID" first.
"""
import os
import sys
import tempfile
import threading
import time


def spin_until(deadline):
    x = 0
    while time.monotonic() < deadline:
        for i in range(500):
            x = (x * 31 + i) & 0xFFFF
    return x


def drafter_loop(deadline):
    return spin_until(deadline)


def target_loop(deadline, rename_at):
    spin_until(rename_at)
    threading.current_thread().name = "target-1b"
    return spin_until(deadline)


def threads_mode(seconds):
    deadline = time.monotonic() + seconds
    ts = [threading.Thread(target=drafter_loop, args=(deadline,), name="drafter-0"),
          threading.Thread(target=target_loop, args=(deadline, time.monotonic() + seconds / 2), name="target-1")]
    for t in ts:
        t.start()
    spin_until(deadline)
    for t in ts:
        t.join()


_barrier = None


def pool_init(barrier):
    global _barrier
    _barrier = barrier


def pool_work(seconds):
    # every task waits for the others: each runs in its own worker, however late the last
    # worker starts (a loaded machine, a slow start method)
    _barrier.wait(60)
    os.write(1, b"worker %d\n" % os.getpid())  # one write: the workers print at the same time
    spin_until(time.monotonic() + seconds)
    return os.getpid()


def pool_mode(method, seconds, workers):
    import multiprocessing as mp
    ctx = mp.get_context(method)
    with ctx.Pool(workers, initializer=pool_init, initargs=(ctx.Barrier(workers),)) as pool:
        # one task per worker, all at once; each spins the whole time
        pids = pool.map(pool_work, [seconds] * workers, chunksize=1)
    print("pids", " ".join(str(p) for p in sorted(set(pids))), flush=True)


def modules_mode(seconds):
    d = tempfile.mkdtemp(prefix="gt-mods-")
    src = ("import time\n"
           "deadline = time.monotonic() + %r\n"
           "x = 0\n"
           "while time.monotonic() < deadline:\n"
           "    for i in range(500):\n"
           "        x = (x * 31 + i) & 0xFFFF\n")
    for name in ("mod_a", "mod_b"):
        with open(os.path.join(d, name + ".py"), "w") as f:
            f.write(src % (seconds / 2))
    sys.path.insert(0, d)
    import mod_a  # noqa: F401  (spins at its top level)
    import mod_b  # noqa: F401


def child_mode(python, seconds):
    import subprocess
    code = ("import time\n"
            "deadline = time.monotonic() + %r\n"
            "x = 0\n"
            "while time.monotonic() < deadline:\n"
            "    x = (x * 31 + 1) & 0xFFFF\n" % seconds)
    p = subprocess.Popen([python, "-c", code])
    print("child", p.pid, flush=True)
    p.wait()


def main():
    print("main", os.getpid(), flush=True)
    mode = sys.argv[1]
    if mode == "threads":
        threads_mode(float(sys.argv[2]))
    elif mode == "pool":
        pool_mode(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 3)
    elif mode == "child":
        child_mode(sys.argv[2], float(sys.argv[3]))
    elif mode == "modules":
        modules_mode(float(sys.argv[2]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
