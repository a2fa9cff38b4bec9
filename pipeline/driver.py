#!/usr/bin/env python3
"""driver.py — gt-pipeline's orchestration from Python threads, calling libgtpipeline.so through ctypes.

The shape of a PyTorch training program: Python threads (one per target or drafter) call into a
native library (ctypes.CDLL releases the GIL during each call, as PyTorch does for its kernels)
and between calls do --python-work MS of pure-Python bookkeeping per step. The library measures
each thread's CPU time inside its calls; this driver measures its bookkeeping sections and hands
them over, and the library writes the same telemetry JSON as gt-pipeline (driver "python").

usage: driver.py [gt-pipeline options] [--python-work MS] [--lib PATH] [--telemetry FILE.json]
Exit: 0 ok, 2 no GPU or a failure, 64 bad usage.
"""
import ctypes
import os
import sys
import threading
import time

USAGE_EXIT = 64
FATAL_EXIT = 2
PL_EUSAGE = -1


def die(msg, code):
    sys.stderr.write("driver.py: %s\n" % msg)
    sys.exit(code)


def load_library(path):
    if path is None:
        path = os.environ.get("GT_PIPELINE_LIB")
    if path is None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = os.path.join(root, os.environ.get("BUILD", "build"), "lib", "libgtpipeline.so")
    try:
        lib = ctypes.CDLL(path)  # CDLL: the GIL is released for the duration of every call
    except OSError as e:
        die("cannot load %s: %s (build it with make pipeline)" % (path, e), FATAL_EXIT)
    vp, cp, i64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64
    sigs = {
        "pl_config_new": (vp, []),
        "pl_config_free": (None, [vp]),
        "pl_config_set": (ctypes.c_int, [vp, cp, cp, cp, ctypes.c_size_t]),
        "pl_run_create": (ctypes.c_int, [vp, ctypes.POINTER(vp), cp, ctypes.c_size_t]),
        "pl_run_start": (ctypes.c_int, [vp, ctypes.c_int]),
        "pl_run_finish": (ctypes.c_int, [vp]),
        "pl_run_abort": (None, [vp]),
        "pl_run_error": (cp, [vp]),
        "pl_run_n_workers": (ctypes.c_int, [vp]),
        "pl_run_worker": (vp, [vp, ctypes.c_int]),
        "pl_run_set_driver": (None, [vp, cp, cp]),
        "pl_run_summary": (None, [vp, cp, ctypes.c_size_t]),
        "pl_run_write_telemetry": (ctypes.c_int, [vp, cp, cp, ctypes.c_size_t]),
        "pl_run_destroy": (None, [vp]),
        "pl_worker_name": (cp, [vp]),
        "pl_worker_begin": (ctypes.c_int, [vp]),
        "pl_worker_step": (ctypes.c_int, [vp]),
        "pl_worker_add_python": (None, [vp, i64, i64]),
        "pl_worker_end": (ctypes.c_int, [vp]),
        "pl_strerror": (cp, [ctypes.c_int]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def python_bookkeeping(state, units):
    """Pure-Python per-step work: logging records, running aggregates, a windowed median."""
    log, agg = state["log"], state["agg"]
    for i in range(units):
        rec = {"step": state["n"], "i": i, "tokens": (i * 7919 + state["n"]) % 1013, "tag": "t%d" % (i & 15)}
        log.append(rec)
        agg[rec["tag"]] = agg.get(rec["tag"], 0) + rec["tokens"]
        if len(log) > 256:
            window = sorted(log[-64:], key=lambda r: r["tokens"])
            state["median"] = window[32]["tokens"]
            del log[:128]
        state["n"] += 1


def new_state():
    return {"log": [], "agg": {}, "n": 0, "median": 0}


def calibrate_units_per_ms():
    """How many bookkeeping units one millisecond of this thread's CPU buys, on this machine."""
    state, units = new_state(), 256
    while True:
        c0 = time.thread_time_ns()
        python_bookkeeping(state, units)
        spent = time.thread_time_ns() - c0
        if spent > 20000000 or units > 1 << 24:
            return max(1.0, units / (spent / 1e6))
        units *= 4


def worker_loop(lib, run, w, units, failures):
    rc = lib.pl_worker_begin(w)
    state = new_state()
    try:
        while rc == 0:
            if lib.pl_worker_step(w) <= 0:
                break
            if units:
                c0, t0 = time.thread_time_ns(), time.monotonic_ns()
                python_bookkeeping(state, units)
                lib.pl_worker_add_python(w, time.thread_time_ns() - c0, time.monotonic_ns() - t0)
    except BaseException as e:  # keep the other workers from waiting forever
        failures.append(repr(e))
        lib.pl_run_abort(run)
    finally:
        lib.pl_worker_end(w)


def parse_args(argv):
    opts, telemetry, lib_path, quiet = [], None, None, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            sys.exit(0)
        if a == "--quiet":
            quiet = True
            i += 1
            continue
        if not a.startswith("--") or len(a) == 2:
            die("unexpected argument '%s' (see --help)" % a, USAGE_EXIT)
        if "=" in a:
            key, val = a[2:].split("=", 1)
        elif i + 1 < len(argv):
            key, val = a[2:], argv[i + 1]
            i += 1
        else:
            die("option %s needs a value" % a, USAGE_EXIT)
        i += 1
        if key == "telemetry":
            telemetry = val
        elif key == "lib":
            lib_path = val
        else:
            opts.append((key, val))
    return opts, telemetry, lib_path, quiet


def main(argv):
    opts, telemetry, lib_path, quiet = parse_args(argv)
    lib = load_library(lib_path)
    err = ctypes.create_string_buffer(512)
    cfg = lib.pl_config_new()
    if not cfg:
        die("out of memory", FATAL_EXIT)
    work_ms = 0.0
    for key, val in opts:
        if lib.pl_config_set(cfg, key.encode(), val.encode(), err, len(err)) < 0:
            die(err.value.decode(), USAGE_EXIT)
        if key in ("python-work", "python_work"):
            work_ms = float(val)
    run = ctypes.c_void_p()
    rc = lib.pl_run_create(cfg, ctypes.byref(run), err, len(err))
    lib.pl_config_free(cfg)
    if rc < 0:
        die(err.value.decode(), USAGE_EXIT if rc == PL_EUSAGE else FATAL_EXIT)
    units = int(round(calibrate_units_per_ms() * work_ms)) if work_ms > 0 else 0
    lib.pl_run_set_driver(run, b"python", ("%s %s" % (sys.implementation.name, sys.version.split()[0])).encode())
    status = 0
    if lib.pl_run_start(run, 0) < 0:
        die("cannot start the run", FATAL_EXIT)
    failures, threads = [], []
    n = lib.pl_run_n_workers(run)
    for i in range(n):
        w = lib.pl_run_worker(run, i)
        t = threading.Thread(target=worker_loop, args=(lib, run, w, units, failures),
                             name=lib.pl_worker_name(w).decode())
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    rc = lib.pl_run_finish(run)
    if rc < 0 or failures:
        msg = lib.pl_run_error(run).decode() or (failures[0] if failures else lib.pl_strerror(rc).decode())
        sys.stderr.write("driver.py: %s\n" % msg)
        status = FATAL_EXIT
    summary = ctypes.create_string_buffer(8192)
    lib.pl_run_summary(run, summary, len(summary))
    lines = summary.value.decode().splitlines(True)
    sys.stdout.write("".join(lines[1:3]) if quiet else "".join(lines))
    if not quiet:
        sys.stdout.write("python work: %.2f ms per step (%d bookkeeping units)\n" % (work_ms, units))
    if telemetry and lib.pl_run_write_telemetry(run, telemetry.encode(), err, len(err)) < 0:
        sys.stderr.write("driver.py: %s\n" % err.value.decode())
        status = FATAL_EXIT
    lib.pl_run_destroy(run)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
