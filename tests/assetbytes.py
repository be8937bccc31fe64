"""Real, tiny asset files made here (no binary fixtures in the repository): a 1x1 PNG and
a one-glyph TrueType font, each a well-formed file of its format (checked against
decoders by tests/adversarial/test_asset_only_changes.py: zlib and the chunk CRCs for the
PNG, FreeType through ``fc-scan`` for the font)."""

from __future__ import annotations

import struct
import zlib


def png(width: int = 1, height: int = 1, *, text: bytes = b"") -> bytes:
    """A grey PNG of ``width`` x ``height``; ``text`` goes in a ``tEXt`` chunk."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + (chunk(b"tEXt", b"Comment\x00" + text) if text else b"")
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _checksum(data: bytes) -> int:
    padded = data + b"\x00" * (-len(data) % 4)
    return sum(struct.unpack(f">{len(padded) // 4}I", padded)) & 0xFFFFFFFF


def _name_table(family: str) -> bytes:
    records, strings = [], b""
    for name_id, value in ((1, family), (2, "Regular"), (4, family), (6, family)):
        encoded = value.encode("utf-16-be")
        records.append(struct.pack(">6H", 3, 1, 0x409, name_id, len(encoded), len(strings)))
        strings += encoded
    header = struct.pack(">3H", 0, len(records), 6 + 12 * len(records))
    return header + b"".join(records) + strings


def ttf(family: str = "GateTest") -> bytes:
    """A TrueType font with one empty glyph (``.notdef``), every table a renderer needs."""
    tables = {
        b"OS/2": struct.pack(">HhHHH10hh10s4I4s3H3h2H2I", 1, 500, 400, 5, 0, *[0] * 10, 0,
                             b"\x00" * 10, 0, 0, 0, 0, b"NONE", 0x40, 0x20, 0x20, 800, -200,
                             0, 800, 200, 1, 0),
        b"cmap": struct.pack(">HHHHI", 0, 1, 3, 1, 12)
        + struct.pack(">8H", 4, 24, 0, 2, 2, 0, 0, 0xFFFF) + struct.pack(">4H", 0, 0xFFFF, 1, 0),
        b"glyf": b"",
        b"head": struct.pack(">IIIIHHqqhhhhHHhhh", 0x00010000, 0x00010000, 0, 0x5F0F3CF5,
                             0x000B, 1000, 0, 0, 0, 0, 0, 0, 0, 8, 2, 0, 0),
        b"hhea": struct.pack(">I3hH3h3h4hhH", 0x00010000, 800, -200, 0, 500, 0, 0, 0, 1, 0, 0,
                             0, 0, 0, 0, 0, 1),
        b"hmtx": struct.pack(">Hh", 500, 0),
        b"loca": struct.pack(">HH", 0, 0),
        b"maxp": struct.pack(">IHHHHHHHHHHHHHH", 0x00010000, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0,
                             0, 0, 0),
        b"name": _name_table(family),
        b"post": struct.pack(">IIhhIIIII", 0x00030000, 0, -100, 50, 0, 0, 0, 0, 0),
    }  # fmt: skip
    count = len(tables)
    search = 1 << (count.bit_length() - 1)
    header = struct.pack(">IHHHH", 0x00010000, count, search * 16, search.bit_length() - 1,
                         count * 16 - search * 16)  # fmt: skip
    offset = len(header) + 16 * count
    directory, body = b"", b""
    for tag in sorted(tables):
        data = tables[tag]
        directory += struct.pack(">4sIII", tag, _checksum(data), offset + len(body), len(data))
        body += data + b"\x00" * (-len(data) % 4)
    font = bytearray(header + directory + body)
    head_at = font.find(b"head")
    head_offset = struct.unpack(">I", font[head_at + 8 : head_at + 12])[0]
    adjust = (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF
    font[head_offset + 8 : head_offset + 12] = struct.pack(">I", adjust)
    return bytes(font)
