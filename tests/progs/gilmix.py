"""gilmix.py — a Python target with known behaviour for the GIL tests: one thread in pure-Python
loops (holds the GIL), one in zlib/hashlib on large buffers (releases it), one mostly sleeping.

usage: python gilmix.py SECONDS [READY_FILE]
Writes "ROLE TID" lines (pyloop, native, sleeper, main) to READY_FILE (or stdout) once all
threads run, then runs for SECONDS and exits 0. Function names and the lines marked
`# line:NAME` are what the tests look for.
"""
import hashlib
import os
import sys
import threading
import time
import zlib

stop = threading.Event()
started = threading.Barrier(4)
tids = {}


def py_inner(n):
    total = 0
    for i in range(n):  # line:inner_loop
        total += i * i % 7  # line:inner_body
    return total


def py_spin():
    tids["pyloop"] = threading.get_native_id()
    started.wait()
    acc = 0
    while not stop.is_set():
        acc += py_inner(20000)  # line:spin_call
    return acc


def native_work():
    tids["native"] = threading.get_native_id()
    # 4 MiB of incompressible data (64 KiB of hashes repeated beyond deflate's 32 KiB window)
    data = b"".join(hashlib.sha256(i.to_bytes(4, "little")).digest() for i in range(2048)) * 64
    started.wait()
    n = 0
    while not stop.is_set():
        zlib.compress(data, 6)  # line:native_zlib
        hashlib.sha256(data).digest()  # line:native_hash
        n += 1
    return n


class Sleeper:
    def run(self):
        tids["sleeper"] = threading.get_native_id()
        started.wait()
        while not stop.is_set():
            time.sleep(0.05)  # line:sleep


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    threads = [threading.Thread(target=f) for f in (py_spin, native_work, Sleeper().run)]
    for t in threads:
        t.start()
    started.wait()
    tids["main"] = threading.get_native_id()
    text = "".join("%s %d\n" % (k, v) for k, v in sorted(tids.items()))
    if len(sys.argv) > 2:
        tmp = sys.argv[2] + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, sys.argv[2])
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    time.sleep(seconds)  # line:main_sleep
    stop.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
