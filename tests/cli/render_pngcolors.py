# render_pngcolors.py — prints how many distinct colours a PNG holds (every third pixel),
# with the standard library only; used by tests/cli/render_*.sh to tell a drawing from a blank.
# With a second argument RRGGBB: how many pixels have exactly that colour (every pixel), and the
# first and last row holding one ("N Y0 Y1"; counters.sh finds a drawn line with it).
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
pos, idat, w, h, ct = 8, b"", 0, 0, 0
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    body = d[pos + 8:pos + 8 + n]
    if t == b"IHDR":
        w, h, bd, ct = struct.unpack(">IIBB", body[:10])
    elif t == b"IDAT":
        idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4, 0: 1, 4: 2}[ct]
raw, stride, prev, seen, i = zlib.decompress(idat), w * bpp, bytearray(w * bpp), set(), 0
want = bytes.fromhex(sys.argv[2]) if len(sys.argv) > 2 else None
n_want, rows = 0, []
for y in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if want is not None and bpp >= 3:
        k = sum(1 for x in range(0, stride, bpp) if line[x:x + 3] == want)
        n_want += k
        if k:
            rows.append(y)
    for x in range(0, stride, bpp * 3):
        seen.add(bytes(line[x:x + 3]))
    prev = line
if want is not None:
    print(n_want, rows[0] if rows else -1, rows[-1] if rows else -1)
else:
    print(len(seen))
