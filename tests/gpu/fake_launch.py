"""fake_launch.py — a CUDA program without a GPU, for testing the agent's launch stacks: loads the
stand-in libcupti (tests/gpu/fake_cupti.c, found through LD_LIBRARY_PATH) and the agent named by
CUDA_INJECTION64_PATH (set by gt-record), calls InitializeInjection as libcuda would, then plays
CUDA API calls from Python functions at known lines, on several threads, with the GIL released
(ctypes.CDLL) and held (ctypes.PyDLL). Writes what a correct recording must show to EXPECT.json.

usage: fake_launch.py EXPECT.json [--calls N] [--inflight-reader PATH] [--depth D] [--bench MODE]
                      [--attach-wait SECONDS]
"""
import argparse
import ctypes
import functools
import json
import os
import subprocess
import sys
import threading
import time

RUNTIME, DRIVER = 2, 1                    # CUPTI_CB_DOMAIN_*
LAUNCH, SYNC, MALLOC = 211, 131, 20       # cudaLaunchKernel_v7000, cudaStreamSynchronize_v3020, cudaMalloc_v3020
CU_LAUNCH, CU_CTX_GET = 307, 304          # cuLaunchKernel, cuCtxGetCurrent (trivial: no callbacks)
FN_A, FN_B, FN_DEEP = 0xA000, 0xB000, 0xD000
NVTX = 5                                  # CUPTI_CB_DOMAIN_NVTX
# calls the agent's callbacks do not follow by default (GT_CUPTI_CALLBACKS=tracked): queries,
# event records, attribute calls; CUPTI still records their activity
UNTRACKED = [(RUNTIME, 138, b"cudaEventQuery_v3020"), (RUNTIME, 135, b"cudaEventRecord_v3020"),
             (RUNTIME, 132, b"cudaStreamQuery_v3020"), (RUNTIME, 273, b"cudaFuncSetAttribute_v9000"),
             (DRIVER, 120, b"cuEventQuery")]

fake = ctypes.CDLL("libcupti.so.13", mode=ctypes.RTLD_GLOBAL)
fake_gil = ctypes.PyDLL("libcupti.so.13", mode=ctypes.RTLD_GLOBAL)    # same library, GIL held
for f in (fake.fake_cupti_call, fake_gil.fake_cupti_call):
    f.restype = ctypes.c_uint32
    f.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                  ctypes.c_int64, ctypes.c_uint32]
call = fake.fake_cupti_call
call_gil = fake_gil.fake_cupti_call
try:
    # a stand-in CUDA runtime between Python and the stand-in CUPTI, when built beside it
    cudart = ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    cudart.fake_cudart_launch.restype = ctypes.c_uint32
    cudart.fake_cudart_launch.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    if not hasattr(cudart, "fake_cudart_launch"):
        cudart = None    # the real libcudart, found through ld.so.conf: not ours
except (OSError, AttributeError):
    cudart = None

# cudaLaunchKernel of kernel_a, through the runtime when there is one; a partial, not a Python
# function, so the launching Python frame stays site_a's
launch_a = (functools.partial(cudart.fake_cudart_launch, FN_A, b"kernel_a") if cudart else
            functools.partial(call, RUNTIME, LAUNCH, b"cudaLaunchKernel_v7000", FN_A, b"kernel_a", 0, 0))


def marker_line(tag):
    """Line number of the line ending in the comment `# <tag>` in this file."""
    with open(__file__) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith("# " + tag):
                return n
    raise SystemExit("marker %s missing" % tag)


def site_a(n):
    for _ in range(n):
        launch_a()  # SITE_A


def site_b(n):
    for _ in range(n):
        call_gil(DRIVER, CU_LAUNCH, b"cuLaunchKernel", FN_B, b"kernel_b", 0, 0)  # SITE_B


def slow_sync():
    call(RUNTIME, SYNC, b"cudaStreamSynchronize_v3020", 0, None, 30_000_000, 0)  # SITE_SYNC


def deep(k):
    if k > 0:
        return deep(k - 1)
    call(RUNTIME, LAUNCH, b"cudaLaunchKernel_v7000", FN_DEEP, b"kernel_deep", 0, 0)  # SITE_DEEP


def worker(n):
    site_a(n)
    site_b(n)


def parked():
    call(RUNTIME, SYNC, b"cudaStreamSynchronize_v3020", 0, None, -1, 0)  # SITE_PARKED


def read_inflight(reader, tid):
    """Run the external reader while one thread sits inside a call; return its output."""
    t = threading.Thread(target=parked, name="parked")
    t.start()
    deadline = time.time() + 5
    out = ""
    while time.time() < deadline:
        time.sleep(0.05)
        out = subprocess.run([reader, str(os.getpid())], capture_output=True, text=True).stdout
        if "cbid=%d" % SYNC in out:
            break
    fake.fake_cupti_release()
    t.join()
    # join() returns when Python is done with the thread, a moment before the OS thread exits
    # and the agent's thread-exit handler gives its slot back
    deadline = time.time() + 5
    while True:
        after = subprocess.run([reader, str(os.getpid())], capture_output=True, text=True).stdout
        if "slot tid=%d " % t.native_id not in after or time.time() > deadline:
            break
        time.sleep(0.05)
    return out, after, t.native_id


def callbacks_enabled():
    """Names of the API calls (per domain) and NVTX callback ids the agent enabled, and the
    callbacks the stand-in gave to the agent / held back so far."""
    name_fn = fake.cuptiGetCallbackName
    name_fn.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p)]
    out = {}
    delivered, refused = ctypes.c_uint64(), ctypes.c_uint64()
    for label, dom in (("driver", DRIVER), ("runtime", RUNTIME), ("nvtx", NVTX)):
        arr = (ctypes.c_uint32 * 4096)()
        n = fake.fake_cupti_callbacks_enabled(dom, arr, 4096, ctypes.byref(delivered), ctypes.byref(refused))
        if dom == NVTX:
            out[label] = list(arr[:n])
            continue
        names = []
        for cbid in arr[:n]:
            nm = ctypes.c_char_p()
            names.append(nm.value.decode() if name_fn(dom, cbid, ctypes.byref(nm)) == 0 and nm.value else str(cbid))
        out[label] = names
    out["delivered"], out["refused"] = delivered.value, refused.value
    return out


def bench(mode, n):
    """ns per played launch on this thread (best of 5 runs of n calls)."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        if mode == "deep":
            for _ in range(n):
                deep(20)
        else:
            site_a(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("expect")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--depth", type=int, default=40)
    ap.add_argument("--inflight-reader")
    ap.add_argument("--bench")
    ap.add_argument("--attach-wait", type=float, default=0,
                    help="started dormant (gt-record --prepare): wait up to this long for gt-record -p")
    a = ap.parse_args()
    agent = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    if agent.InitializeInjection() != 1:
        raise SystemExit("InitializeInjection failed")
    if a.attach_wait:
        # the agent polls its control file every 200 ms: give it time to switch on
        ctl = os.path.join(os.environ.get("GT_CUPTI_CTL_DIR", "/tmp"), "gt-cupti.%d.ctl" % os.getpid())
        deadline = time.time() + a.attach_wait
        while time.time() < deadline:
            try:
                if open(ctl).read().startswith("on "):
                    break
            except OSError:
                pass
            time.sleep(0.05)
        time.sleep(0.6)
    exp = {"pid": os.getpid(), "cudart": cudart is not None, "python": "%d.%d" % sys.version_info[:2], "file": os.path.abspath(__file__),
           "calls": a.calls, "depth": a.depth,
           "sites": {"site_a": marker_line("SITE_A"), "site_b": marker_line("SITE_B"),
                     "slow_sync": marker_line("SITE_SYNC"), "deep": marker_line("SITE_DEEP")},
           "fn": {"site_a": FN_A, "site_b": FN_B, "deep": FN_DEEP},
           "main_tid": threading.get_native_id(), "worker_tids": []}
    if a.bench:
        exp["bench_ns_per_call"] = bench(a.bench, a.calls)
    else:
        # trivial query: the agent enables no callback for it
        call(DRIVER, CU_CTX_GET, b"cuCtxGetCurrent", 0, None, 0, 0)
        exp["trivial_callback_on"] = fake.fake_cupti_callback_on(DRIVER, CU_CTX_GET)
        exp["launch_callback_on"] = fake.fake_cupti_callback_on(RUNTIME, LAUNCH)
        for _ in range(6):
            for dom, cbid, name in UNTRACKED:
                call(dom, cbid, name, 0, None, 0, 0)
        exp["untracked_cbids"] = [cbid for _, cbid, _ in UNTRACKED]
        worker(a.calls)
        ts = [threading.Thread(target=worker, args=(a.calls,), name="launcher-%d" % i) for i in range(a.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        exp["worker_tids"] = [t.native_id for t in ts]
        for _ in range(5):    # the fifth is past the first 4: a stack at its exit
            slow_sync()
        deep(a.depth)
        # a runtime call that enters the driver: one stack, for the runtime call
        exp["nested_corr"] = call(RUNTIME, MALLOC, b"cudaMalloc_v3020", 0, None, 0, 243)
        if a.inflight_reader:
            during, after, tid = read_inflight(a.inflight_reader, 0)
            exp["inflight_during"] = during
            exp["inflight_after"] = after
            exp["parked_tid"] = tid
    if not a.bench:
        exp["callbacks"] = callbacks_enabled()
    counts = [ctypes.c_uint64() for _ in range(4)]
    fake.fake_cupti_counts(*[ctypes.byref(c) for c in counts])
    exp["fake_counts"] = {"calls": counts[0].value, "records": counts[1].value, "dropped": counts[2].value,
                          "dirty_buffers": counts[3].value}
    with open(a.expect, "w") as f:
        json.dump(exp, f, indent=1)


if __name__ == "__main__":
    main()
