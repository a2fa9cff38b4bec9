"""gt_nvtx.py — NVTX from Python with nothing but ctypes, for groundtruth's CUDA agent: counters (NVTX
markers with a numeric payload, which the agent writes as counter records on the trace's clock) and
ranges (which `gt-record --capture-range=nvtx:NAME` follows). torch.cuda.nvtx has ranges and
markers but no payloads; this module is an NVTX client of its own: it loads the NVTX tool named by
NVTX_INJECTION64_PATH (set by gt-record for the programs it launches or prepares: the agent, which
hands NVTX on to CUPTI) and calls it the way NVTX's C header does. Without a tool (not under
gt-record) every call returns at once and records nothing.

    import gt_nvtx
    gt_nvtx.counter("queue.ready", len(queue))           # int -> int64 payload, float -> double
    gt_nvtx.counter("queue.ready@watermark", min_ready)  # the watermark line of queue.ready
    gt_nvtx.counter("loss", 0.25, domain="train")        # counter "train/loss"
    with gt_nvtx.range("train_step"):                    # push/pop; --capture-range=nvtx:train_step
        step()

Where the `nvtx` package (pip install nvtx) is installed, `nvtx.mark(message="queue.ready",
payload=n)` does the same; counters in C/C++ are nvtxMarkEx with payloadType set (docs/COUNTERS.md).
"""
import builtins
import ctypes
import os
import threading

__all__ = ["available", "counter", "range", "range_push", "range_pop", "range_start", "range_end"]

# NVTX's callback modules and the size of each one's function table (nvtxDetail/nvtxTypes.h)
_MODULES = {1: 16, 2: 9, 3: 15, 4: 7, 5: 16, 6: 7}    # CORE, CUDA, OPENCL, CUDART, CORE2, SYNC
_CORE, _CORE2 = 1, 5
_MARK_EX, _RANGE_START_A, _RANGE_END, _RANGE_PUSH_A, _RANGE_POP = 1, 5, 7, 9, 11    # CORE ids
_DOMAIN_MARK_EX, _DOMAIN_PUSH_EX, _DOMAIN_POP, _DOMAIN_CREATE_A = 1, 4, 5, 12       # CORE2 ids
_NVTX_VERSION = 3
_PAYLOAD_INT64, _PAYLOAD_DOUBLE = 2, 3
_MESSAGE_ASCII = 1


class _Payload(ctypes.Union):
    _fields_ = [("ull", ctypes.c_uint64), ("ll", ctypes.c_int64), ("d", ctypes.c_double),
                ("ui", ctypes.c_uint32), ("i", ctypes.c_int32), ("f", ctypes.c_float)]


class _EventAttributes(ctypes.Structure):    # nvtxEventAttributes_v2
    _fields_ = [("version", ctypes.c_uint16), ("size", ctypes.c_uint16), ("category", ctypes.c_uint32),
                ("colorType", ctypes.c_int32), ("color", ctypes.c_uint32), ("payloadType", ctypes.c_int32),
                ("reserved0", ctypes.c_int32), ("payload", _Payload), ("messageType", ctypes.c_int32),
                ("message", ctypes.c_char_p)]


_GET_MODULE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                               ctypes.POINTER(ctypes.c_uint))
_SET_VERSION = ctypes.CFUNCTYPE(None, ctypes.c_uint32)
_GET_EXPORT = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)


class _Callbacks(ctypes.Structure):          # NvtxExportTableCallbacks
    _fields_ = [("struct_size", ctypes.c_size_t), ("get_module", _GET_MODULE)]


class _VersionInfo(ctypes.Structure):        # NvtxExportTableVersionInfo
    _fields_ = [("struct_size", ctypes.c_size_t), ("version", ctypes.c_uint32), ("reserved0", ctypes.c_uint32),
                ("set_version", _SET_VERSION)]


_ATTR_P = ctypes.POINTER(_EventAttributes)
_MARK_EX_T = ctypes.CFUNCTYPE(None, _ATTR_P)
_PUSH_A_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)
_POP_T = ctypes.CFUNCTYPE(ctypes.c_int)
_START_A_T = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_char_p)
_END_T = ctypes.CFUNCTYPE(None, ctypes.c_uint64)
_DOMAIN_CREATE_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)
_DOMAIN_MARK_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, _ATTR_P)
_DOMAIN_PUSH_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _ATTR_P)
_DOMAIN_POP_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _Client:
    """One NVTX client: function tables the tool fills in, then calls through them."""

    def __init__(self):
        self.ok = False
        self.domains = {}
        self.slots, self.tables = {}, {}
        path = os.environ.get("NVTX_INJECTION64_PATH")
        if not path:
            return
        for module, size in _MODULES.items():
            slots = (ctypes.c_void_p * size)()              # the function pointers, ids 1..size-1
            table = (ctypes.c_void_p * (size + 1))()        # [0] and [size] NULL, [id] = &slots[id]
            for i in builtins.range(1, size):    # this module's range is NVTX's
                table[i] = ctypes.addressof(slots) + i * ctypes.sizeof(ctypes.c_void_p)
            self.slots[module], self.tables[module] = slots, table
        # the export tables and the callbacks in them must live as long as the process
        self._get_module = _GET_MODULE(self._module_table)
        self._set_version = _SET_VERSION(lambda v: None)
        self._get_export = _GET_EXPORT(self._export_table)
        self.callbacks = _Callbacks(ctypes.sizeof(_Callbacks), self._get_module)
        self.version = _VersionInfo(ctypes.sizeof(_VersionInfo), _NVTX_VERSION, 0, self._set_version)
        try:
            lib = ctypes.CDLL(path)
            init = lib.InitializeInjectionNvtx2
        except (OSError, AttributeError):
            return
        init.argtypes = [_GET_EXPORT]
        init.restype = ctypes.c_int
        if init(self._get_export) == 0:
            return
        self.mark_ex = self._fn(_CORE, _MARK_EX, _MARK_EX_T)
        self.push_a = self._fn(_CORE, _RANGE_PUSH_A, _PUSH_A_T)
        self.pop = self._fn(_CORE, _RANGE_POP, _POP_T)
        self.start_a = self._fn(_CORE, _RANGE_START_A, _START_A_T)
        self.end = self._fn(_CORE, _RANGE_END, _END_T)
        self.domain_create = self._fn(_CORE2, _DOMAIN_CREATE_A, _DOMAIN_CREATE_T)
        self.domain_mark = self._fn(_CORE2, _DOMAIN_MARK_EX, _DOMAIN_MARK_T)
        self.domain_push = self._fn(_CORE2, _DOMAIN_PUSH_EX, _DOMAIN_PUSH_T)
        self.domain_pop = self._fn(_CORE2, _DOMAIN_POP, _DOMAIN_POP_T)
        self.ok = True

    def _module_table(self, module, out_table, out_size):
        table = self.tables.get(module)
        if table is None:
            return 0
        if out_table:
            out_table[0] = ctypes.addressof(table)
        if out_size:
            out_size[0] = _MODULES[module]
        return 1

    def _export_table(self, etid):
        if etid == 1:
            return ctypes.addressof(self.callbacks)
        if etid == 3:
            return ctypes.addressof(self.version)
        return None

    def _fn(self, module, cbid, ftype):
        addr = self.slots[module][cbid]
        return ftype(addr) if addr else None

    def domain(self, name):
        if name is None or not self.domain_create:
            return None
        h = self.domains.get(name)
        if h is None:
            h = self.domains[name] = self.domain_create(name.encode())
        return h


_client = None
_lock = threading.Lock()


def _get():
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = _Client()
    return _client


def available():
    """True when a tool (the agent) took NVTX: counters and ranges are recorded."""
    return _get().ok


def _attrs(message, value=None):
    a = _EventAttributes()
    a.version = _NVTX_VERSION
    a.size = ctypes.sizeof(_EventAttributes)
    a.messageType = _MESSAGE_ASCII
    a.message = message.encode() if isinstance(message, str) else message
    if isinstance(value, bool) or isinstance(value, int):
        a.payloadType = _PAYLOAD_INT64
        a.payload.ll = int(value)
    elif value is not None:
        a.payloadType = _PAYLOAD_DOUBLE
        a.payload.d = float(value)
    return a


def counter(name, value, domain=None):
    """The value of counter `name` now: an NVTX marker with an int64 (int) or double (float)
    payload. In a domain, the counter is named "DOMAIN/name"."""
    c = _get()
    if not c.ok:
        return
    a = _attrs(name, value)
    if domain is None:
        if c.mark_ex:
            c.mark_ex(ctypes.byref(a))
    elif c.domain_mark:
        c.domain_mark(c.domain(domain), ctypes.byref(a))


def range_push(name, domain=None):
    """Open a range on this thread (nvtxRangePushA; nvtxDomainRangePushEx in a domain)."""
    c = _get()
    if not c.ok:
        return
    if domain is None:
        if c.push_a:
            c.push_a(name.encode())
    elif c.domain_push:
        c.domain_push(c.domain(domain), ctypes.byref(_attrs(name)))


def range_pop(domain=None):
    """Close this thread's innermost range (of the domain)."""
    c = _get()
    if not c.ok:
        return
    if domain is None:
        if c.pop:
            c.pop()
    elif c.domain_pop:
        c.domain_pop(c.domain(domain))


def range_start(name):
    """Open a range that any thread may end (nvtxRangeStartA); returns its id for range_end."""
    c = _get()
    return c.start_a(name.encode()) if c.ok and c.start_a else 0


def range_end(range_id):
    c = _get()
    if c.ok and c.end and range_id:
        c.end(range_id)


class range:    # noqa: A001 (the NVTX word)
    """with gt_nvtx.range("train_step"): ... — a push/pop range around the block."""

    def __init__(self, name, domain=None):
        self.name, self.domain = name, domain

    def __enter__(self):
        range_push(self.name, self.domain)
        return self

    def __exit__(self, *exc):
        range_pop(self.domain)
        return False
