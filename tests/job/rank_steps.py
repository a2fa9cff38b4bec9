#!/usr/bin/env python3
"""rank_steps.py STEPS STEP_MS [SLOW_RANK SLOW_MS] -- one rank of a job of known pace, for the
straggler view: STEPS steps of STEP_MS milliseconds each (SLOW_MS for rank SLOW_RANK), each a
sleep, then the counter train.step = the step count through GT_COUNTERS_DIR's line format
(docs/COUNTERS.md; nothing without gt-record)."""
import os
import sys
import time


def main():
    steps, step_ms = int(sys.argv[1]), float(sys.argv[2])
    slow_rank = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    slow_ms = float(sys.argv[4]) if len(sys.argv) > 4 else step_ms
    rank = int(os.environ.get("RANK", "0"))
    ms = slow_ms if rank == slow_rank else step_ms
    d = os.environ.get("GT_COUNTERS_DIR")
    fd = os.open(os.path.join(d, "counters.%d" % os.getpid()), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if d else None
    for k in range(1, steps + 1):
        time.sleep(ms / 1000.0)
        if fd is not None:
            os.write(fd, b"c %d train.step %d\n" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC), k))


if __name__ == "__main__":
    main()
