"""Draws images/icon.png (128x128): a `%` (MIL's var sigil) on a rounded square. Run it again
after changing it: python editors/vscode/images/make_icon.py"""
import os
import struct
import zlib

import numpy as np

N = 128
y, x = np.mgrid[0:N, 0:N] + 0.5
inside = np.maximum(np.abs(x - 64) - 48, 0) ** 2 + np.maximum(np.abs(y - 64) - 48, 0) ** 2 <= 14 ** 2
ring = lambda cx, cy: np.abs(np.hypot(x - cx, y - cy) - 12) <= 5.5   # noqa: E731
bar = (np.abs((x - 64) + (y - 64)) <= 6.5 * np.sqrt(2)) & (np.abs(x - y) <= 88)
glyph = (ring(42, 42) | ring(86, 86) | bar) & inside
image = np.zeros((N, N, 4), np.uint8)
image[inside] = (31, 84, 140, 255)
image[glyph] = (246, 190, 58, 255)


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


rows = b"".join(b"\x00" + image[r].tobytes() for r in range(N))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", N, N, 8, 6, 0, 0, 0)) + \
    chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "icon.png"), "wb") as f:
    f.write(png)
