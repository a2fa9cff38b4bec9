#!/usr/bin/env python3
"""fixcrc.py — give every whole chunk of .gtt files its right CRC-32C, in place: a crash input that
a whole-command fuzz target saved (the target fixes CRCs itself before use) becomes a file that
gt-analyze and gt-render reproduce directly, to be kept in testdata/bad/fuzz/.
    tests/fuzz/fixcrc.py FILE..."""
import struct
import sys

TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    TABLE.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


for path in sys.argv[1:]:
    d = bytearray(open(path, "rb").read())
    if d[:8] != b"GTT\x19\r\n\x1a\n":
        d[0:0] = b"GTT\x19\r\n\x1a\n" + bytes([1]) + bytes(7)
    off = 16
    while off + 12 <= len(d):
        n = struct.unpack_from("<I", d, off + 4)[0]
        if off + 12 + n > len(d):
            break
        struct.pack_into("<I", d, off + 8, crc32c(d[off + 12:off + 12 + n], crc32c(d[off:off + 8])))
        off += 12 + n
    open(path, "wb").write(d)
