# pyreader_cost_codes.py — a workload for bench/pyreader_cost.sh with a torch process's spread
# of code objects: 9 threads, each a chain of 35 functions of its own (315 distinct code
# objects on the stacks at once, all met in the reader's first pass), the leaf alternating a
# little arithmetic with 0.5 ms sleeps.
# usage: python3 bench/pyreader_cost_codes.py [SECONDS]     (default 10)
import sys
import threading
import time

DEPTH, THREADS = 35, 9


def build(seconds):
    src = []
    for t in range(THREADS):
        for d in range(DEPTH):
            callee = f"f_{t}_{d + 1}()" if d < DEPTH - 1 else "leaf()"
            src.append(f"def f_{t}_{d}():\n    x = {d}\n    return {callee}\n")
    src.append("def leaf():\n"
               "    end = time.time() + SECONDS\n"
               "    while time.time() < end:\n"
               "        s = 0\n"
               "        for i in range(2000):\n"
               "            s += i\n"
               "        time.sleep(0.0005)\n")
    env = {"time": time, "SECONDS": seconds}
    exec("".join(src), env)
    return env


def main():
    env = build(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
    workers = [threading.Thread(target=env[f"f_{t}_0"]) for t in range(THREADS - 1)]
    for w in workers:
        w.start()
    env[f"f_{THREADS - 1}_0"]()
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
