#!/usr/bin/env python3
"""Regenerate the gatemesh placeholder icons (standard library only).

Run from anywhere: `python3 src-tauri/icons/generate.py`. Writes RGBA PNGs (Tauri's
codegen requires RGBA for the window icon), plus icon.ico (PNG-compressed entries,
for Windows builds) and icon.icns (PNG entries, for macOS bundles) next to this file.

The design: a blue rounded square with a white gate (two posts and a lintel) and a
small mesh dot above it. Edges are anti-aliased by 4x4 supersampling.
"""

import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLUE = (37, 99, 235)
WHITE = (255, 255, 255)
SS = 4  # supersampling factor per axis


def inside_rounded_rect(x, y, x0, y0, x1, y1, r):
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        return False
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def shape(u, v):
    """Colour at normalised point (u, v) in [0, 1]^2, or None if transparent."""
    if not inside_rounded_rect(u, v, 0.04, 0.04, 0.96, 0.96, 0.2):
        return None
    # gate: left post, right post, lintel
    if (
        inside_rounded_rect(u, v, 0.25, 0.36, 0.37, 0.80, 0.03)
        or inside_rounded_rect(u, v, 0.63, 0.36, 0.75, 0.80, 0.03)
        or inside_rounded_rect(u, v, 0.20, 0.30, 0.80, 0.41, 0.03)
    ):
        return WHITE
    # mesh node above the lintel
    if (u - 0.5) ** 2 + (v - 0.19) ** 2 <= 0.065**2:
        return WHITE
    return BLUE


def render(size):
    rows = []
    for py in range(size):
        row = bytearray([0])  # filter type 0
        for px in range(size):
            acc = [0, 0, 0]
            hits = 0
            for sy in range(SS):
                for sx in range(SS):
                    c = shape((px + (sx + 0.5) / SS) / size, (py + (sy + 0.5) / SS) / size)
                    if c is not None:
                        hits += 1
                        for i in range(3):
                            acc[i] += c[i]
            if hits:
                row += bytes([acc[0] // hits, acc[1] // hits, acc[2] // hits])
                row.append(round(255 * hits / (SS * SS)))
            else:
                row += b"\0\0\0\0"
        rows.append(bytes(row))
    raw = b"".join(rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def ico(pngs):
    """ICO with PNG-compressed images: {size: png_bytes}."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = 6 + 16 * len(pngs)
    entries, blobs = b"", b""
    for size, data in sorted(pngs.items()):
        dim = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    return header + entries + blobs


def icns(pngs):
    """ICNS with PNG entries: {ostype: png_bytes}."""
    body = b"".join(
        kind + struct.pack(">I", 8 + len(data)) + data for kind, data in pngs.items()
    )
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main():
    png = {size: render(size) for size in (32, 128, 256, 512)}
    (HERE / "32x32.png").write_bytes(png[32])
    (HERE / "128x128.png").write_bytes(png[128])
    (HERE / "128x128@2x.png").write_bytes(png[256])
    (HERE / "icon.png").write_bytes(png[512])
    (HERE / "icon.ico").write_bytes(ico({32: png[32], 256: png[256]}))
    (HERE / "icon.icns").write_bytes(icns({b"ic07": png[128], b"ic08": png[256], b"ic09": png[512]}))


if __name__ == "__main__":
    main()
