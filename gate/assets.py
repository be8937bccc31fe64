"""Binary assets: images, fonts, audio and video, known by their name AND their first bytes.

No reviewer can read a PNG, so a pull request that touches one would otherwise always
block on partial coverage, after the model was paid. A file of a type listed here is
recorded as ``not reviewable (binary asset)`` (:data:`gate.diff.SkipWhy.BINARY_ASSET`):
named in the coverage manifest, the status description's count, the summary and the
comment, and not blocking unless the config says ``binary_assets: block``.

What is listed, and why: formats that are data to a decoder (pixels, glyph outlines,
samples, frames), that no build step or interpreter runs or imports. What is never
listed: executables, libraries, archives (a ``.zip``, ``.jar`` or ``.whl`` holds code),
``.svg`` (text that can carry script, and reviewable as text), ``.pdf`` (it can carry
script), ``.pyc``, ``.wasm``, and anything else a build or an interpreter loads as code.

A file is an asset only when its name has a listed extension AND its first bytes are
that type's signature, read from the blob itself (:func:`asset_kind`), or on the command line from
the diff's own ``GIT binary patch`` literal (:func:`literal_head`). A ``.png`` that is
not a PNG (an executable renamed, a text file) is no asset and blocks as any other
binary; so does one whose bytes could not be read (too large for the fetch budget, no
blob to read). Pure: the caller reads the bytes.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable
from dataclasses import dataclass

#: bytes of a file's start :func:`asset_kind` needs (the longest signature check)
PROBE_BYTES = 16


def _starts(*magics: bytes) -> Callable[[bytes], bool]:
    return lambda head: any(head.startswith(m) for m in magics)


def _riff(form: bytes) -> Callable[[bytes], bool]:
    return lambda head: head[:4] == b"RIFF" and head[8:12] == form


def _ftyp(*brands: bytes) -> Callable[[bytes], bool]:
    """ISO base media (MP4, MOV, M4A, AVIF): ``ftyp`` at offset 4, then the major brand."""
    return lambda head: head[4:8] == b"ftyp" and (not brands or head[8:12] in brands)


@dataclass(frozen=True)
class AssetType:
    """A listed type: its kind (image, font, audio, video), extensions and signature."""

    kind: str
    extensions: tuple[str, ...]
    matches: Callable[[bytes], bool]


#: the listed asset types (module docstring says what is left out and why)
ASSET_TYPES: tuple[AssetType, ...] = (
    AssetType("image", (".png",), _starts(b"\x89PNG\r\n\x1a\n")),
    AssetType("image", (".jpg", ".jpeg"), _starts(b"\xff\xd8\xff")),
    AssetType("image", (".gif",), _starts(b"GIF87a", b"GIF89a")),
    AssetType("image", (".webp",), _riff(b"WEBP")),
    AssetType("image", (".bmp",), _starts(b"BM")),
    AssetType("image", (".ico",), _starts(b"\x00\x00\x01\x00")),
    AssetType("image", (".tif", ".tiff"), _starts(b"II*\x00", b"MM\x00*")),
    AssetType("image", (".avif",), _ftyp(b"avif", b"avis")),
    AssetType("font", (".woff",), _starts(b"wOFF")),
    AssetType("font", (".woff2",), _starts(b"wOF2")),
    AssetType("font", (".ttf",), _starts(b"\x00\x01\x00\x00", b"true")),
    AssetType("font", (".otf",), _starts(b"OTTO")),
    AssetType("audio", (".mp3",), _starts(b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")),
    AssetType("audio", (".wav",), _riff(b"WAVE")),
    AssetType("audio", (".ogg", ".oga"), _starts(b"OggS")),
    AssetType("audio", (".flac",), _starts(b"fLaC")),
    AssetType("audio", (".m4a",), _ftyp(b"M4A ")),
    AssetType("video", (".mp4", ".m4v"), _ftyp()),
    AssetType("video", (".mov",), _ftyp(b"qt  ")),
    AssetType("video", (".webm",), _starts(b"\x1a\x45\xdf\xa3")),
)


def listed_type(path: str) -> AssetType | None:
    """The listed type ``path``'s extension names (case-insensitive), or None."""
    name = path.rsplit("/", 1)[-1].lower()
    for kind in ASSET_TYPES:
        if any(name.endswith(ext) and len(name) > len(ext) for ext in kind.extensions):
            return kind
    return None


def asset_kind(path: str, head: bytes | None) -> str:
    """``image``/``font``/``audio``/``video`` when ``path`` has a listed extension and
    ``head`` (the file's first bytes, None when they could not be read) is that type's
    signature; "" otherwise (the file is no asset)."""
    kind = listed_type(path)
    if kind is None or head is None or not kind.matches(head[:PROBE_BYTES]):
        return ""
    return kind.kind


def extensions() -> list[str]:
    """Every listed extension, for the docs and ``--help``."""
    return [ext for kind in ASSET_TYPES for ext in kind.extensions]


def literal_head(section: bytes) -> bytes | None:
    """The first bytes of the file a ``GIT binary patch`` section writes, when its forward
    patch is a ``literal`` (the whole new content, deflated and base85-encoded, each line
    led by its decoded length): what a local diff (``git diff --binary``) carries instead
    of a blob. None for anything else (a ``delta`` needs the old file, ``Binary files ...
    differ`` carries no bytes, a malformed patch proves nothing). Only the first
    :data:`PROBE_BYTES` are inflated, so a deflate bomb costs nothing."""
    lines = section.split(b"\n")
    try:
        start = lines.index(b"GIT binary patch")
    except ValueError:
        return None
    header = lines[start + 1] if start + 1 < len(lines) else b""
    if not header.startswith(b"literal "):
        return None
    packed = bytearray()
    for line in lines[start + 2 :]:
        if not line:
            break
        size = line[0]
        length = size - 64 if 65 <= size <= 90 else size - 70 if 97 <= size <= 122 else -1
        try:
            chunk = base64.b85decode(line[1:])
        except ValueError:
            return None
        if length < 1 or length > len(chunk):
            return None
        packed += chunk[:length]
    try:
        return zlib.decompressobj().decompress(bytes(packed), PROBE_BYTES)
    except zlib.error:
        return None
