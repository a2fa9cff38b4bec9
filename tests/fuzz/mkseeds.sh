#!/usr/bin/env bash
# mkseeds.sh — seeds for fuzz targets that are made here rather than committed:
# - the whole-command targets (fuzz_analyze, fuzz_render) get thinned copies of the traces in
#   testdata/ that are too large to fuzz whole (inputs stay under 64 KiB): every record kind
#   kept, at most 24 chunks of each tag, embedded binaries (archive chunks) left out;
# - fuzz_pyreader gets CPython 3.13's real _Py_DebugOffsets block (the start of _PyRuntime in
#   libpython3.13, read from the ELF file) followed by a thread-state pointer into it.
# Writes build/fuzz/seeds/; quietly does nothing for what is not installed.
set -u
cd "$(dirname "$0")/../.."
out=build/fuzz/seeds
mkdir -p "$out"
py=$(command -v python3) || exit 0
# shellcheck disable=SC2046 # the paths have no blanks
"$py" - "$out" $(find testdata -name '*.gtt' -size +60k | sort) <<'PY'
import os, struct, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    d = open(path, "rb").read()
    if len(d) < 16 or d[:8] != b"GTT\x19\r\n\x1a\n":
        continue
    keep, seen, off = [d[:16]], {}, 16
    while off + 12 <= len(d):
        tag, n = struct.unpack_from("<II", d, off)
        if off + 12 + n > len(d):
            break
        if tag != 30 and seen.get(tag, 0) < 24 and sum(map(len, keep)) + 12 + n < 60000:
            seen[tag] = seen.get(tag, 0) + 1
            keep.append(d[off:off + 12 + n])
        off += 12 + n
    name = path.replace("/", "_").replace("testdata_", "thin-")
    open(os.path.join(out, name), "wb").write(b"".join(keep))
PY
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
