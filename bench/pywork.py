"""pywork.py — a pure-Python CPU workload with a known shape for bench/run.sh: main -> alpha (6
units), beta (3 units), gamma -> delta (1 unit) per round, for ROUNDS rounds (argv[1], default 40).
Prints its own wall and CPU seconds."""
import sys, time

def spin(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return x

def alpha(u): return spin(6 * u)
def beta(u): return spin(3 * u)
def delta(u): return spin(u)
def gamma(u): return delta(u)

def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        alpha(20000)
        beta(20000)
        gamma(20000)
    print("wall_s %.4f cpu_s %.4f" % (time.perf_counter() - t0, time.process_time() - c0))

main()
