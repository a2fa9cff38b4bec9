#!/usr/bin/env bash
# mkseeds.sh — seeds for fuzz targets that are taken from this machine rather than committed:
# fuzz_pyreader gets CPython 3.13's real _Py_DebugOffsets block (the start of _PyRuntime in
# libpython3.13, read from the ELF file) followed by a thread-state pointer into it.
# Writes build/fuzz/seeds/; quietly does nothing for what is not installed.
set -u
cd "$(dirname "$0")/../.."
out=build/fuzz/seeds
mkdir -p "$out"
py=$(command -v python3) || exit 0
for lib in /root/.pyenv/versions/3.13*/lib/libpython3.13.so* /usr/lib/x86_64-linux-gnu/libpython3.13.so*; do
	[ -f "$lib" ] || continue
	"$py" - "$lib" "$out/py313-debug-offsets.pymem" <<'PY' && break
import struct, sys
lib, dst = sys.argv[1], sys.argv[2]
d = open(lib, "rb").read()
if d[:4] != b"\x7fELF" or d[4] != 2:
    sys.exit(1)
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
def sec_file_off(vaddr):
    for s in secs:
        if s[1] == 1 and s[3] <= vaddr < s[3] + s[5]:   # PROGBITS holding vaddr
            return vaddr - s[3] + s[4]
for s in secs:
    if s[1] not in (2, 11):                              # SYMTAB, DYNSYM
        continue
    strtab = secs[s[6]]
    for i in range(s[5] // 24):
        name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", d, s[4] + i * 24)
        end = d.index(b"\0", strtab[4] + name)
        if d[strtab[4] + name:end] == b"_PyRuntime":
            off = sec_file_off(value)
            if off is None:
                sys.exit(1)
            block = d[off:off + 1024]
            if block[:8] != b"xdebugpy":
                sys.exit(1)
            # mode byte 3 (3.13), the block, then a thread-state pointer into the fake memory
            open(dst, "wb").write(b"\x03" + block + struct.pack("<Q", 0x1000 + 64) + bytes(512))
            sys.exit(0)
sys.exit(1)
PY
done
exit 0
