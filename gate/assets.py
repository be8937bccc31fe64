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

The one rule, used by every front end (the command line, the action's diff and its
blob-built sections): a file is an asset only when its name has a listed extension AND
its first bytes are that type's signature AND it is a regular, non-executable file (mode
``100644``, :data:`ASSET_MODE`): :func:`asset_kind`. A change is an asset when the side
it leaves is one (the new file; the old one for a deletion) and, for a rename or a copy,
the old side is one too: :func:`change_kind`. The bytes are read from the blob itself by
the action (:mod:`gate.action.assets`, :mod:`gate.action.blobdiff`), or on the command
line from the diff's own ``GIT binary patch`` literals (:func:`literal_kind`). A ``.png``
that is not a PNG (an executable renamed, a text file), an executable PNG, one whose
bytes or mode could not be read (too large for the fetch budget, no blob to read, a
``delta`` patch) is no asset and blocks as any other binary. Pure: the caller reads the
bytes.

Why the mode: ``\x89PNG\r\n\x1a\n`` has no NUL before its first line break, so a shell
runs a ``.png`` of mode ``100755`` as a script (a hook or a run-parts directory would).
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass

#: bytes of a file's start :func:`asset_kind` needs (the longest signature check)
PROBE_BYTES = 16
#: the one git mode an asset may have: a regular, non-executable file (a symlink, a
#: submodule or an executable file is never an asset; module docstring)
ASSET_MODE = "100644"


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


def asset_kind(path: str, head: bytes | None, mode: str | None) -> str:
    """``image``/``font``/``audio``/``video`` when ``path`` has a listed extension, ``head``
    (the file's first bytes, None when they could not be read) is that type's signature
    and ``mode`` (its git mode, None when unknown) is :data:`ASSET_MODE`; "" otherwise
    (the file is no asset)."""
    kind = listed_type(path)
    if kind is None or head is None or mode != ASSET_MODE:
        return ""
    return kind.kind if kind.matches(head[:PROBE_BYTES]) else ""


@dataclass(frozen=True)
class Side:
    """One side of a binary change as its reader found it: the name, the git mode and
    the first bytes (None: not known, and so no asset)."""

    path: str
    mode: str | None
    head: bytes | None


def change_kind(new: Side | None, old: Side | None) -> str:
    """The asset kind of one binary change, "" when it is none: the rule every front end
    applies. ``new`` is the file the change leaves (None for a deletion, where the old
    file is judged), ``old`` the file it replaces (None for an added file). A rename or a
    copy (``old`` under another name) is an asset only when the old side is one too: git
    pairs a deleted script with an added PNG that holds its bytes in a text chunk, and the
    section's one binary line hides the script's removal."""
    if new is None:
        return "" if old is None else asset_kind(old.path, old.head, old.mode)
    kind = asset_kind(new.path, new.head, new.mode)
    if kind and old is not None and old.path != new.path:
        return kind if asset_kind(old.path, old.head, old.mode) else ""
    return kind


def renames(old_path: str, path: str) -> bool:
    """Whether a section with these names pairs two files (a rename or a copy), so
    :func:`change_kind` needs its old side's bytes too."""
    return bool(old_path) and old_path != path


_INDEX = re.compile(rb"index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: ([0-7]{6}))?\r?")
_MODE = re.compile(rb"(new file mode|deleted file mode|old mode|new mode) ([0-7]{6})\r?")
_MARKERS = (b"Binary files ", b"GIT binary patch", b"--- ", b"@@")


@dataclass(frozen=True)
class Header:
    """What a section's header says of its two sides: the abbreviated blob ids of its
    ``index`` line (all zeros: that side does not exist) and each side's mode (None:
    not written)."""

    old_id: str
    new_id: str
    old_mode: str | None
    new_mode: str | None

    @property
    def added(self) -> bool:
        return set(self.old_id) == {"0"}

    @property
    def deleted(self) -> bool:
        return set(self.new_id) == {"0"}


def read_header(data: bytes) -> Header | None:
    """The :class:`Header` of a section's bytes, or None without an ``index`` line. Lines
    end at ``\n`` only, as git's do (never ``bytes.splitlines``, which also breaks at
    ``\r``, ``\v``, ``\f`` and more)."""
    ids: tuple[str, str] | None = None
    modes: dict[bytes, str] = {}
    for line in data.split(b"\n")[1:]:
        if line.startswith(_MARKERS):
            break
        found = _INDEX.fullmatch(line)
        if found is not None:
            ids = found.group(1).decode("ascii"), found.group(2).decode("ascii")
            if found.group(3):
                modes[b"index"] = found.group(3).decode("ascii")
            continue
        mode = _MODE.fullmatch(line)
        if mode is not None:
            modes[mode.group(1)] = mode.group(2).decode("ascii")
    if ids is None:
        return None
    both = modes.get(b"index")
    old = modes.get(b"deleted file mode") or modes.get(b"old mode") or both
    new = modes.get(b"new file mode") or modes.get(b"new mode") or both
    added, deleted = set(ids[0]) == {"0"}, set(ids[1]) == {"0"}
    return Header(ids[0], ids[1], None if added else old, None if deleted else new)


def literal_kind(path: str, old_path: str, data: bytes) -> str:
    """The asset kind of a local diff's binary section (``git diff --binary``), from what
    the section itself carries: the modes of its header and the bytes of its ``GIT binary
    patch`` literals (the forward one writes the new file, the reverse one the old).
    "" when any fact the rule needs is not there (:func:`change_kind`)."""
    header = read_header(data)
    if header is None:
        return ""
    forward, reverse = literal_heads(data)
    new = None if header.deleted else Side(path, header.new_mode, forward)
    old = None if header.added else Side(old_path or path, header.old_mode, reverse)
    return change_kind(new, old)


def extensions() -> list[str]:
    """Every listed extension, for the docs and ``--help``."""
    return [ext for kind in ASSET_TYPES for ext in kind.extensions]


def literal_heads(section: bytes) -> tuple[bytes | None, bytes | None]:
    """The first bytes of the files a ``GIT binary patch`` section writes: its forward
    patch (the new file) and its reverse one (the old file), each when it is a
    ``literal`` (the whole content, deflated and base85-encoded, each line led by its
    decoded length): what a local diff (``git diff --binary``) carries instead of a blob.
    None for anything else (a ``delta`` needs the other file, ``Binary files ... differ``
    carries no bytes, a malformed patch proves nothing). Only the first
    :data:`PROBE_BYTES` are inflated, so a deflate bomb costs nothing."""
    lines = section.split(b"\n")
    try:
        start = lines.index(b"GIT binary patch")
    except ValueError:
        return None, None
    forward, end = _literal(lines, start + 1)
    reverse, _ = _literal(lines, end + 1) if end < len(lines) else (None, end)
    return forward, reverse


def _literal(lines: list[bytes], at: int) -> tuple[bytes | None, int]:
    """The first bytes one hunk of a binary patch writes (None unless a well-formed
    ``literal``), and the index of the blank line that ends the hunk."""
    end = at + 1
    while end < len(lines) and lines[end]:
        end += 1
    header = lines[at] if at < len(lines) else b""
    if not header.startswith(b"literal "):
        return None, end
    packed = bytearray()
    for line in lines[at + 1 : end]:
        size = line[0]
        length = size - 64 if 65 <= size <= 90 else size - 70 if 97 <= size <= 122 else -1
        try:
            chunk = base64.b85decode(line[1:])
        except ValueError:
            return None, end
        if length < 1 or length > len(chunk):
            return None, end
        packed += chunk[:length]
    try:
        return zlib.decompressobj().decompress(bytes(packed), PROBE_BYTES), end
    except zlib.error:
        return None, end
