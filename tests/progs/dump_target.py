"""dump_target.py — a Python process in known, stable states for gt-record --dump tests.

usage: python dump_target.py READY_FILE [SPINNERS]
Threads: two deadlocked on two locks (lock_ab holds A and waits for B, lock_ba the reverse),
one blocked in os.read on a pipe nobody writes, one native thread (pthread_create'd through
ctypes, never registered with Python) in sleep() -> clock_nanosleep, one Python thread in a
ctypes call to nanosleep (GIL released), SPINNERS (default 0) pure-Python busy threads, and the
main thread waiting in join(). Once all are in place it writes "ROLE TID" lines to READY_FILE
(main, lock_ab, lock_ba, reader, native, csleep, spinN) and runs until killed. The lines marked
`# line:NAME` are what the tests look for.
"""
import ctypes
import os
import sys
import threading
import time

lock_a = threading.Lock()
lock_b = threading.Lock()
both_hold = threading.Barrier(2)
tids = {}
ready = threading.Event()


def lock_ab():
    tids["lock_ab"] = threading.get_native_id()
    with lock_a:
        both_hold.wait()
        lock_b.acquire()  # line:lock_ab


def lock_ba():
    tids["lock_ba"] = threading.get_native_id()
    with lock_b:
        both_hold.wait()
        lock_a.acquire()  # line:lock_ba


def reader(fd):
    tids["reader"] = threading.get_native_id()
    os.read(fd, 1)  # line:read


def csleep(libc):
    tids["csleep"] = threading.get_native_id()

    class timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    ts = timespec(100000, 0)
    while True:
        libc.nanosleep(ctypes.byref(ts), None)  # line:csleep


def spin(name):
    tids[name] = threading.get_native_id()
    x = 0
    while True:
        x = (x * 31 + 7) % 1000003  # line:spin


def main():
    ready_file = sys.argv[1]
    n_spin = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    tids["main"] = threading.get_native_id()
    libc = ctypes.CDLL(None, use_errno=True)
    r, _w = os.pipe()
    threads = [threading.Thread(target=lock_ab, daemon=True), threading.Thread(target=lock_ba, daemon=True),
               threading.Thread(target=reader, args=(r,), daemon=True),
               threading.Thread(target=csleep, args=(libc,), daemon=True)]
    threads += [threading.Thread(target=spin, args=("spin%d" % i,), daemon=True) for i in range(n_spin)]
    for t in threads:
        t.start()
    # a native thread that never touches Python: pthread_create(&t, NULL, sleep, 100000)
    pt = ctypes.c_ulong()
    libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    libc.pthread_create(ctypes.byref(pt), None, ctypes.cast(libc.sleep, ctypes.c_void_p), ctypes.c_void_p(100000))
    # its tid: the one task of ours that no Python thread claims, once it sleeps
    deadline = time.time() + 10
    while time.time() < deadline:
        known = set(tids.values())
        others = [int(t) for t in os.listdir("/proc/self/task") if int(t) not in known]
        if len(others) == 1 and len(tids) == 5 + n_spin:
            with open("/proc/self/task/%d/stat" % others[0]) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "S":
                    tids["native"] = others[0]
                    break
        time.sleep(0.01)
    time.sleep(0.2)  # everyone settles into its call
    with open(ready_file + ".tmp", "w") as f:
        for k, v in tids.items():
            f.write("%s %d\n" % (k, v))
    os.rename(ready_file + ".tmp", ready_file)
    threads[0].join()  # line:join


if __name__ == "__main__":
    main()
