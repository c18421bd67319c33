#!/usr/bin/env python3
"""Turns an X window dump (Xvfb's `-fbdir` screen file, or `xwd`) into a PNG, with the
standard library alone: TrueColor screens of 24 or 32 bits per pixel.

    scripts/xwd2png.py SCREEN.xwd OUT.png [X Y W H]

With X Y W H, only that rectangle of the screen is kept.
"""
import struct
import sys
import zlib


def read_xwd(path):
    data = open(path, "rb").read()
    fields = struct.unpack(">25I", data[:100])
    (header_size, version, _fmt, depth, width, height, _xoff, byte_order, _unit, _bit_order, _pad,
     bits_per_pixel, bytes_per_line, visual_class, red_mask, green_mask, blue_mask, _bits_rgb,
     _entries, ncolors) = fields[:20]
    if version != 7:
        raise SystemExit(f"{path}: not an X window dump (version {version})")
    if bits_per_pixel not in (24, 32) or visual_class not in (4, 5):
        raise SystemExit(f"{path}: {bits_per_pixel} bits per pixel of visual class {visual_class}; "
                         "only TrueColor screens of 24 or 32 bits are read")
    pixels = data[header_size + 12 * ncolors:]
    step = bits_per_pixel // 8
    order = "<" if byte_order == 0 else ">"
    shift = lambda mask: (mask & -mask).bit_length() - 1
    shifts = [(m, shift(m)) for m in (red_mask, green_mask, blue_mask)]
    rows = []
    for y in range(height):
        line = pixels[y * bytes_per_line:y * bytes_per_line + width * step]
        if step == 4:
            values = struct.unpack(f"{order}{width}I", line)
        else:
            values = [int.from_bytes(line[i:i + 3], "little" if order == "<" else "big")
                      for i in range(0, len(line), 3)]
        row = bytearray()
        for v in values:
            row += bytes(((v & m) >> s) & 0xFF for m, s in shifts)
        rows.append(row)
    return width, height, rows


def write_png(path, width, height, rows):
    raw = b"".join(b"\x00" + bytes(r) for r in rows)
    chunk = lambda kind, body: (struct.pack(">I", len(body)) + kind + body
                                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def main():
    if len(sys.argv) not in (3, 7):
        raise SystemExit(__doc__.strip())
    width, height, rows = read_xwd(sys.argv[1])
    if len(sys.argv) == 7:
        x, y, w, h = (int(v) for v in sys.argv[3:])
        if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > width or y + h > height:
            raise SystemExit(f"the rectangle {x} {y} {w} {h} is not inside the {width}x{height} screen")
        rows = [r[3 * x:3 * (x + w)] for r in rows[y:y + h]]
        width, height = w, h
    write_png(sys.argv[2], width, height, rows)


if __name__ == "__main__":
    main()
