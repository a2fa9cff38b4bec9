"""gt_counters — emit counters onto a groundtruth trace's clock from Python.

Under `gt-record -- python3 prog.py`, GT_COUNTERS_DIR is set; each process appends lines to
GT_COUNTERS_DIR/counters.PID (docs/COUNTERS.md). Without it every call returns at once.
Copy this file next to your program or put its folder on PYTHONPATH:

    import gt_counters
    gt_counters.watermark("queue.ready", 9)
    gt_counters.counter("queue.ready", q.qsize())
"""
import math
import os
import re
import time

_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,128}\Z")
_fd = None
_pid = None


def _fd_now():
    global _fd, _pid
    pid = os.getpid()
    if _pid == pid:
        return _fd
    _pid = pid  # a forked child opens its own file
    d = os.environ.get("GT_COUNTERS_DIR")
    _fd = None
    if d:
        try:
            _fd = os.open(os.path.join(d, "counters.%d" % pid),
                          os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            _fd = None
    return _fd


def _emit(kind, name, value, t_ns):
    fd = _fd_now()
    if fd is None:
        return
    if not _NAME.match(name):
        raise ValueError("counter name must be 1..128 of A-Z a-z 0-9 _ . : / -: %r" % name)
    value = float(value)
    if not math.isfinite(value):
        raise ValueError("counter value must be finite: %r" % value)
    if t_ns is None:
        t_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    try:
        os.write(fd, ("%s %d %s %r\n" % (kind, t_ns, name, value)).encode())
    except OSError:
        pass  # a profiler never breaks the program it watches


def counter(name, value, t_ns=None):
    """The value of counter `name` now (or at CLOCK_MONOTONIC t_ns)."""
    _emit("c", name, value, t_ns)


def watermark(name, value):
    """A threshold of counter `name` (e.g. a queue's min_ready), drawn on its timeline row."""
    _emit("w", name, value, None)
