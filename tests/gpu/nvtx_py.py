"""nvtx_py.py — python/gt_nvtx.py without a GPU: counters and capture ranges from Python through
gt_nvtx's own NVTX client, with kernel launches played by the stand-in libcupti
(tests/gpu/fake_cupti.c) under the real agent (CUDA_INJECTION64_PATH, set by gt-record). Writes
what a correct recording must show to EXPECT in tests/gpu/nvtx_play.c's format, for
tests/gpu/check_capture.py.

usage: nvtx_py.py EXPECT
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gt_nvtx  # noqa: E402

fake = ctypes.CDLL("libcupti.so.13", mode=ctypes.RTLD_GLOBAL)
fake.fake_cupti_call.restype = ctypes.c_uint32
fake.fake_cupti_call.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_int64, ctypes.c_uint32]
out = None


def launch(name, fn, cls, n):
    for _ in range(n):
        corr = fake.fake_cupti_call(2, 211, b"cudaLaunchKernel_v7000", fn, name.encode(), 0, 0)
        out.write("kernel %s %d %s\n" % (name, corr, cls))


def main():
    global out
    agent = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    if agent.InitializeInjection() != 1:
        raise SystemExit("InitializeInjection failed")
    out = open(sys.argv[1], "w")
    out.write("pid %d\nranges none 0\nranges train_step 2\nranges train_step@other 1\nranges train_step@* 3\n"
              % os.getpid())
    out.write("available %d\n" % gt_nvtx.available())
    for name, value, domain, shown in (("py.int", 42, None, "py.int"), ("py.float", 0.5, None, "py.float"),
                                       ("py.neg", -3, None, "py.neg"), ("py.big", 2 ** 40, None, "py.big"),
                                       ("py.ready", 7, "pipe", "pipe/py.ready")):
        gt_nvtx.counter(name, value, domain=domain)
        out.write("counter %s %r\n" % (shown, float(value)))
    launch("k_before", 0xA0, "out", 2)
    with gt_nvtx.range("train_step"):
        launch("k_in", 0xA1, "in", 3)
        with gt_nvtx.range("inner"):
            launch("k_in", 0xA1, "in", 1)
    launch("k_between", 0xA3, "out", 2)
    # start/end across threads: another thread ends the range
    rid = gt_nvtx.range_start("train_step")
    launch("k_in_start", 0xA4, "in", 2)
    t = threading.Thread(target=gt_nvtx.range_end, args=(rid,))
    t.start()
    t.join()
    launch("k_between", 0xA3, "out", 1)
    with gt_nvtx.range("train_step", domain="other"):
        launch("k_dom", 0xA5, "dom", 2)
    launch("k_after", 0xA8, "out", 2)
    out.close()


if __name__ == "__main__":
    main()
