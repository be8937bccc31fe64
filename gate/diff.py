"""Diff handling: per-file sections, path filters, byte limit, coverage manifest.

This module owns what the reviewer is shown. It parses a unified (git) diff
into one section per file, keeps the files the configuration includes and
that fit the byte limit, and records every other file with why it was not
reviewed. The bytes it returns are exactly the bytes sent to the reviewer;
``diff_sha`` is their SHA-256. Pure functions only: no network, no files.

Why a file is not reviewed (:class:`SkipWhy`):

- ``filtered``: excluded by the ``include``/``exclude`` globs (intentional;
  does not make coverage partial);
- ``binary``: a binary change the reviewer cannot read;
- ``binary_asset``: an image, font, audio or video file, known by its name and its
  first bytes (:mod:`gate.assets`): not reviewable, and not blocking unless the config
  says ``binary_assets: block`` (then it is ``binary``);
- ``no_patch``: GitHub sent no patch for it (too large, or binary);
- ``over_byte_limit``: it would take the diff over ``max_diff_bytes``;
- ``unparseable``: a hunk header whose line counts cannot be read (fail closed);
- ``undecodable``: the section is not strict UTF-8 (see below);
- ``too_large``: one hunk is larger than a chunk can hold (:mod:`gate.review.chunks`).

All but ``filtered`` and ``binary_asset`` make coverage partial, which blocks unless the
configuration allows partial coverage.

The reviewer must be shown the bytes ``diff_sha`` names, so a file section that is
not strict UTF-8 (a GBK, Shift-JIS or Latin-1 file, a lone continuation byte, an
overlong form, a UTF-8-encoded surrogate, a sequence cut at the end) is not sent and
is counted as unreviewed (``undecodable``). Showing it with replacement characters
hid what the bytes say (in GBK, ``0x81 0x5C`` is one character whose second byte is
a backslash: the reviewer saw one string literal where Python sees a closed string
and a call). Showing the bytes losslessly (escaped) would still not show what the
file's own encoding makes of them, which is exactly where such an attack lives; so
the gate does not pretend the file was reviewed, and a person looks at it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any

from gate.memo import last_answer


class SkipWhy(StrEnum):
    FILTERED = "filtered"
    BINARY = "binary"
    BINARY_ASSET = "binary_asset"
    NO_PATCH = "no_patch"
    OVER_BYTE_LIMIT = "over_byte_limit"
    UNPARSEABLE = "unparseable"
    UNDECODABLE = "undecodable"
    TOO_LARGE = "too_large"


#: skip reasons that leave part of the change unreviewed
PARTIAL_REASONS = frozenset(
    {
        SkipWhy.BINARY,
        SkipWhy.NO_PATCH,
        SkipWhy.OVER_BYTE_LIMIT,
        SkipWhy.UNPARSEABLE,
        SkipWhy.UNDECODABLE,
        SkipWhy.TOO_LARGE,
    }
)


#: how each skip reason reads for people (its code, where that says enough)
SKIP_WORDS: dict[SkipWhy, str] = {
    SkipWhy.FILTERED: "filtered",
    SkipWhy.BINARY: "binary",
    SkipWhy.BINARY_ASSET: "not reviewable (binary asset)",
    SkipWhy.NO_PATCH: "no_patch",
    SkipWhy.OVER_BYTE_LIMIT: "over_byte_limit",
    SkipWhy.UNPARSEABLE: "unparseable",
    SkipWhy.UNDECODABLE: "undecodable",
    SkipWhy.TOO_LARGE: "too_large",
}


#: what would cover a file skipped for each reason (the blocked author's next step)
COVER_HINT: dict[SkipWhy, str] = {
    SkipWhy.FILTERED: "left out by include/exclude in the base config: not reviewed, and not "
    "blocking",
    SkipWhy.BINARY: "a binary file no reviewer can read: review it by hand (an image, font, "
    "audio or video file whose first bytes match its name is a binary asset and does not block)",
    SkipWhy.BINARY_ASSET: "a binary asset: not reviewable, and not blocking",
    SkipWhy.NO_PATCH: "GitHub sent no patch for it (too large): split the change or review "
    "it by hand",
    SkipWhy.OVER_BYTE_LIMIT: "over max_diff_bytes: raise max_diff_bytes in the base config or "
    "split the change",
    SkipWhy.UNPARSEABLE: "a hunk header that cannot be read: regenerate the diff with git",
    SkipWhy.UNDECODABLE: "not UTF-8: save it as UTF-8, or review it by hand",
    SkipWhy.TOO_LARGE: "one hunk larger than a chunk: split the change, or raise max_chunk_bytes",
}


@dataclass(frozen=True)
class FileSection:
    """One file's part of a diff: its path and its exact bytes.

    ``old_path`` is the file's other name when the section renames or copies it (or its
    ``---`` name differs), else ``""``: the section is in scope if either name is.
    """

    path: str
    data: bytes
    binary: bool = False
    no_patch: bool = False
    old_path: str = ""
    unparseable: bool = False
    #: for a binary section: the asset kind (``image``, ``font``, ...) its name and its
    #: first bytes, read from the blob, agree on (:func:`gate.assets.asset_kind`); else ""
    asset: str = ""


#: What to do about each kind of skipped file, naming the setting that decides it.
SKIP_FIX: dict[SkipWhy, str] = {
    SkipWhy.FILTERED: "check include/exclude in the config",
    SkipWhy.BINARY: "a binary change is never sent to the reviewer; a person must review it",
    SkipWhy.BINARY_ASSET: "an image, font, audio or video file is not reviewable and does not "
    "block (binary_assets: block in the config makes it block)",
    SkipWhy.NO_PATCH: "GitHub sent no patch for it; a person must review it",
    SkipWhy.OVER_BYTE_LIMIT: "raise max_diff_bytes in the config, or split the change",
    SkipWhy.UNPARSEABLE: "a hunk header's line counts cannot be read; make the diff with git diff",
    SkipWhy.UNDECODABLE: "it is not UTF-8 text, so it is not sent; a person must review it",
    SkipWhy.TOO_LARGE: "raise max_chunk_bytes in the config, or split the change",
}


@dataclass(frozen=True)
class SkippedFile:
    """A file not reviewed, why, and its size; ``detail`` says more for a message (e.g.
    a ``too_large`` file's largest hunk) and is not part of the record."""

    path: str
    why: SkipWhy
    size: int = 0
    detail: str = field(default="", compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "why": str(self.why), "bytes": self.size}


@dataclass(frozen=True)
class Coverage:
    """Which files the reviewer saw, and which it did not and why."""

    reviewed: tuple[str, ...]
    skipped: tuple[SkippedFile, ...]
    diff_bytes: int
    diff_sha: str
    source: str = "diff"  # "diff" (diff media type) or "files" (files API fallback)

    @property
    def gaps(self) -> tuple[SkippedFile, ...]:
        """Skipped files that make coverage partial (everything but ``filtered``)."""
        return tuple(s for s in self.skipped if s.why in PARTIAL_REASONS)

    @property
    def complete(self) -> bool:
        return not self.gaps

    @property
    def total(self) -> int:
        return len(self.reviewed) + len(self.skipped)

    def summary(self) -> str:
        """One short phrase, e.g. ``3 of 5 files reviewed (1 binary, 1 no_patch)``."""
        counts: dict[str, int] = {}
        for item in self.skipped:
            why = SKIP_WORDS[item.why]
            counts[why] = counts.get(why, 0) + 1
        text = f"{len(self.reviewed)} of {self.total} files reviewed"
        if counts:
            text += " (" + ", ".join(f"{n} {why}" for why, n in sorted(counts.items())) + ")"
        return text

    def asset_phrase(self) -> str:
        """``2 binary assets not reviewable`` for the assets left out ("" for none): the
        one wording of the status's count and of a pass on assets alone."""
        count = sum(1 for item in self.skipped if item.why is SkipWhy.BINARY_ASSET)
        if not count:
            return ""
        return f"{count} binary asset{'s' * (count != 1)} not reviewable"

    def advice(self) -> str:
        """What to do about the files left out, each kind named with the setting that
        decides it, e.g. ``a.py: its largest hunk is 70000 bytes, over max_chunk_bytes
        65536; raise max_chunk_bytes in the config, or split the change``."""
        said: list[str] = []
        for why in SkipWhy:
            kind = [item for item in self.skipped if item.why is why]
            if not kind:
                continue
            first = kind[0]
            more = f" (and {len(kind) - 1} more)" if len(kind) > 1 else ""
            cause = f": {first.detail}" if first.detail else f" ({why})"
            said.append(f"{first.path}{more}{cause}; {SKIP_FIX[why]}")
        return "; ".join(said)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "complete": self.complete,
            "diff_bytes": self.diff_bytes,
            "diff_sha": self.diff_sha,
            "reviewed": list(self.reviewed),
            "skipped": [s.to_json() for s in self.skipped],
        }


@dataclass(frozen=True)
class SelectedDiff:
    """The exact bytes to send to the reviewer, and the manifest that explains them."""

    data: bytes
    coverage: Coverage

    @property
    def sha256(self) -> str:
        return self.coverage.diff_sha


#: a SHA-256 in hex, as :func:`diff_sha` (and every digest the gate records) writes it
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
#: a full git object id: SHA-1 or SHA-256, lowercase hex
COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@last_answer
def diff_sha(data: bytes) -> str:
    """SHA-256 (hex) of the exact bytes sent to the reviewer: the one definition of the
    diff's digest. One review asks it of the same diff object five times (its coverage,
    the binding, the question, the result, the chunk plan): the last answer is kept
    (:func:`gate.memo.last_answer`)."""
    return hashlib.sha256(data).hexdigest()


# --- parsing ---------------------------------------------------------------------

_HEADER = b"diff --git "
#: git's C-style escapes (``quote_c_style``) and the bytes they stand for: the one table
#: :func:`quote_bytes` writes and :func:`unquote_bytes` reads (every other byte below
#: 0x20, DEL and every byte from 0x80 is written in octal, ``\\ooo``)
_C_ESCAPES: dict[int, bytes] = {
    0x07: b"\\a",
    0x08: b"\\b",
    0x09: b"\\t",
    0x0A: b"\\n",
    0x0B: b"\\v",
    0x0C: b"\\f",
    0x0D: b"\\r",
    0x22: b'\\"',
    0x5C: b"\\\\",
}
_C_UNESCAPES: dict[int, int] = {escape[1]: byte for byte, escape in _C_ESCAPES.items()}
_OCTAL = b"01234567"


class BadName(ValueError):
    """A quoted path that is not exactly what git writes (an unknown escape, a cut octal
    escape, no closing quote): its name cannot be known, so its section is unparseable."""


def quote_bytes(raw: bytes) -> bytes:
    """``raw`` as git writes a path (``quote_c_style``, ``core.quotePath`` on): unchanged
    when every byte is printable ASCII other than ``"`` and ``\\``, else in quotes with
    :data:`_C_ESCAPES` for those bytes and ``\\ooo`` for every other one."""
    if all(0x20 <= b < 0x7F and b not in (0x22, 0x5C) for b in raw):
        return raw
    body = bytearray(b'"')
    for b in raw:
        escape = _C_ESCAPES.get(b)
        if escape is not None:
            body += escape
        elif 0x20 <= b < 0x7F:
            body.append(b)
        else:
            body += b"\\%03o" % b
    return bytes(body + b'"')


def unquote_bytes(raw: bytes) -> bytes:
    """The exact inverse of git's quoting (``unquote_c_style``): the bytes of the name.

    An unquoted name is itself. A quoted one takes exactly git's escapes (the nine of
    :data:`_C_ESCAPES` and ``\\ooo`` with a first digit 0-3); anything else, or a name
    with no closing quote, raises :class:`BadName` (git itself refuses it), never a guess.
    """
    if not raw.startswith(b'"'):
        return raw
    if len(raw) < 2 or not raw.endswith(b'"'):
        raise BadName("a quoted path has no closing quote")
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        byte = body[i]
        if byte == 0x22:
            raise BadName("a quoted path holds an unescaped quote")
        if byte != 0x5C:
            out.append(byte)
            i += 1
            continue
        if i + 1 >= len(body):
            raise BadName("a quoted path ends in a lone backslash")
        nxt = body[i + 1]
        if nxt in _C_UNESCAPES:
            out.append(_C_UNESCAPES[nxt])
            i += 2
            continue
        digits = body[i + 1 : i + 4]
        if len(digits) == 3 and digits[0] in b"0123" and all(d in _OCTAL for d in digits):
            out.append(int(digits, 8))
            i += 4
            continue
        raise BadName(
            f"a quoted path holds the escape {bytes(body[i : i + 2])!r}, which git never writes"
        )
    return bytes(out)


def name_of(raw: bytes) -> str:
    """A path's bytes as the gate's name: UTF-8, and any byte that is not kept as itself
    (``surrogateescape``), so :func:`name_bytes` gives back exactly ``raw``."""
    return raw.decode("utf-8", "surrogateescape")


def name_bytes(name: str) -> bytes:
    """The bytes of ``name`` (the inverse of :func:`name_of`); a lone surrogate that no
    byte stands for keeps its UTF-8 form (``surrogatepass``), so it stays undecodable."""
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def exact_name(name: str) -> bool:
    """Whether ``name`` is a path the gate can compare exactly: strict UTF-8 text (no
    byte kept by ``surrogateescape``, no lone surrogate). Filters, the planner's lists
    and findings compare names as text, so a name that is not is never filtered out."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unquote(raw: bytes) -> str:
    """Decode a git path, undoing C-style quoting (``"a/caf\\303\\251"``) exactly."""
    return name_of(unquote_bytes(raw))


def _strip_prefix(path: str) -> str:
    return path[2:] if path[:2] in ("a/", "b/") else path


def _section_path(lines: Sequence[bytes]) -> str:
    """The file a section is about: new name, or old name for a deletion."""
    return _section_paths(lines)[0]


def _section_paths(lines: Sequence[bytes]) -> tuple[str, str]:
    """(path, old_path): the new name (old name for a deletion), and the other name of a
    rename or copy (``rename from``/``copy from``, or a differing ``---`` name), else ``""``."""
    old = new = source = None
    for line in lines[1:]:
        if line.startswith((b"@@", b"GIT binary patch")):
            break
        text = line.rstrip(b"\r\n")
        if text.startswith(b"rename from "):
            source = _unquote(text[len(b"rename from ") :])
        elif text.startswith(b"copy from "):
            source = _unquote(text[len(b"copy from ") :])
        elif text.startswith(b"rename to "):
            new = _unquote(text[len(b"rename to ") :])
        elif text.startswith(b"copy to "):
            new = _unquote(text[len(b"copy to ") :])
        elif text.startswith(b"+++ ") and new is None:
            value = _unquote(text[4:].split(b"\t")[0])
            if value != "/dev/null":
                new = _strip_prefix(value)
        elif text.startswith(b"--- "):
            value = _unquote(text[4:].split(b"\t")[0])
            if value != "/dev/null":
                old = _strip_prefix(value)
    path = new if new is not None else old if old is not None else _path_from_header(lines[0])
    others = [name for name in (source, old) if name is not None and name != path]
    return path, (others[0] if others else "")


def _quoted_end(raw: bytes) -> int:
    """The index just past the closing quote of the quoted name ``raw`` starts with (a
    backslash escapes the byte after it, so ``\\"`` never ends it), or -1."""
    i = 1
    while i < len(raw):
        if raw[i] == 0x5C:
            i += 2
        elif raw[i] == 0x22:
            return i + 1
        else:
            i += 1
    return -1


def _path_from_header(line: bytes) -> str:
    """The new name on a ``diff --git`` line (sections without ---/+++: mode changes,
    empty files, binary ones). A quoted name ends at its closing quote, never at an
    escaped one; an unquoted pair ``a/X b/X`` (git's equal names) splits in the middle."""
    rest = line[len(_HEADER) :].rstrip(b"\r\n")
    if rest.startswith(b'"'):
        end = _quoted_end(rest)
        if end < 0 or rest[end : end + 1] != b" ":
            raise BadName("the diff --git line's first quoted name does not end")
        return _strip_prefix(_unquote(rest[end + 1 :]))
    # "a/X b/X": with equal names the split point is the middle
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half : half + 1] == b" ":
        return _strip_prefix(_unquote(rest[half + 1 :]))
    marker = rest.rfind(b' "b/')
    if marker >= 0 and rest.endswith(b'"'):
        return _strip_prefix(_unquote(rest[marker + 1 :]))
    marker = rest.rfind(b" b/")
    if marker >= 0:
        return _unquote(rest[marker + 3 :])
    return _unquote(rest)


_HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
#: the first byte of a line inside a hunk body: context, removed, added, "\ No newline"
_HUNK_BODY = frozenset(b" -+\\")


def _lines(data: bytes) -> list[bytes]:
    """Lines ending in ``\n`` only (git's line end); never ``bytes.splitlines``.

    ``splitlines`` also breaks on ``\r``, ``\v``, ``\f``, ``\x1c``-``\x1e`` and ``\x85``,
    so an added line ``+x\rdiff --git a/docs/n b/docs/n`` would start a fake file section.
    """
    return list(_iter_lines(data))


def _iter_lines(data: bytes) -> Iterator[bytes]:
    """:func:`_lines`, one at a time (a 20 MB diff is not held twice as a list of lines)."""
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            yield data[start:]
            return
        yield data[start : end + 1]
        start = end + 1


def hunk_counts(header: re.Match[bytes]) -> tuple[int, int]:
    """The old and new line counts of a hunk header (:data:`_HUNK`'s match); an omitted
    count is 1. A count with more digits than ``int`` converts raises ``ValueError``: the
    hunk's extent is then unknown, and each caller fails closed on it."""
    old, new = header.group(2), header.group(4)
    return (int(old) if old is not None else 1, int(new) if new is not None else 1)


def hunk_content(line: bytes, old_left: int, new_left: int) -> tuple[int, int] | None:
    """The lines a hunk still owes after ``line``, or None when ``line`` is no hunk content.

    The one rule for where a hunk body ends (the chunker cuts sections at hunk boundaries
    with it; :func:`split_diff` needs no count: no hunk content can start a section):
    context (an empty line too: some tools drop the space) needs both sides, ``-`` the old,
    ``+`` the new; a ``\\ No newline`` marker is content and owes nothing.
    """
    first = line[:1]
    if (first == b" " or line == b"\n") and old_left > 0 and new_left > 0:
        return old_left - 1, new_left - 1
    if first == b"-" and old_left > 0:
        return old_left - 1, new_left
    if first == b"+" and new_left > 0:
        return old_left, new_left - 1
    if first == b"\\":
        return old_left, new_left
    return None


def split_diff(data: bytes) -> list[FileSection]:
    """Split a git unified diff into per-file sections; the sections concatenate to ``data``.

    A ``diff --git`` header starts a section: each ``@@ -a,b +c,d @@`` line is followed
    by ``b`` old and ``d`` new lines, each starting with a space, ``-`` or ``+``, and
    whatever they contain is the file's content. So no added, removed or context line
    can start a section or move other lines to another file (``+diff --git a/x b/x``
    is an added line). A line that cannot be hunk content (after a truncated hunk) is
    read as a header line.

    Bytes before the first ``diff --git`` header (there should be none) are
    returned as a section with an empty path so nothing is silently dropped.
    """
    if not isinstance(data, bytes):
        return list(_split_diff(bytes(data)))
    return list(_split_diff(data))


#: the diffs split most recently (by equal bytes): one run selects, cuts and estimates the
#: cost of the same bytes, so each distinct diff of a run is parsed once
SPLIT_MEMO = 2


@functools.lru_cache(maxsize=SPLIT_MEMO)
def _split_diff(data: bytes) -> tuple[FileSection, ...]:
    """:func:`split_diff`'s work, memoised: a pure function of the bytes, and a
    :class:`FileSection` is frozen, so the sections can be shared."""
    return tuple(_parse_sections(data))


def _parse_sections(data: bytes) -> list[FileSection]:
    """The sections of ``data``, parsed (see :func:`split_diff`).

    Each section starts at a line that begins with ``diff --git `` and runs to the next
    one. No hunk line needs counting for that: a line of a hunk's body begins with a
    space, ``-``, ``+`` or ``\\`` (or is empty), so it is never a ``diff --git`` line nor
    a ``@@`` line, inside a hunk or after a truncated one (:func:`hunk_content`, the one
    rule for a hunk's extent, is the chunker's). The section boundaries are found by
    C-level search and each section's bytes are one slice of ``data``: no list of the
    diff's lines is built (a tenth of a review's own work on the 0.9 MB bench diff).
    """
    starts = [0] if data.startswith(_HEADER) else []
    at = data.find(b"\n" + _HEADER)
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n" + _HEADER, at + 1)
    out: list[FileSection] = []
    if (starts[0] if starts else len(data)) > 0:
        out.append(FileSection(path="", data=data[: starts[0] if starts else len(data)]))
    for index, begin in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(data)
        sec = _header_lines(data, begin, end)
        unparseable = not _hunks_readable(data, begin, end)
        try:
            path, old_path = _section_paths(sec)
        except BadName:
            # a name that is not exactly what git writes: unknown, so never filtered
            path, old_path = git_quote(name_of(sec[0][len(_HEADER) :].rstrip(b"\r\n"))), ""
            unparseable = True
        out.append(
            FileSection(
                path=path,
                data=data[begin:end],
                binary=_is_binary(sec),
                old_path=old_path,
                unparseable=unparseable,
            )
        )
    return out


def _header_lines(data: bytes, begin: int, end: int) -> list[bytes]:
    """The section ``data[begin:end]`` as its lines before the first line that begins with
    ``@@``, then the rest as one piece (what :func:`_section_paths` and :func:`_is_binary`
    read: both stop at that line)."""
    first_at = data.find(b"\n@@", begin, end)
    if first_at < 0:
        return _lines(data[begin:end])
    return [*_lines(data[begin : first_at + 1]), data[first_at + 1 : end]]


def _hunks_readable(data: bytes, begin: int, end: int) -> bool:
    """Whether every hunk header of the section ``data[begin:end]`` has line counts
    ``int`` reads: more digits than it converts (4300) leave the hunk's extent unknown,
    so the whole section is unreviewable (fail closed, never a crash)."""
    at = data.find(b"\n@@ -", begin, end)
    while at >= 0:
        hunk = _HUNK.match(data, at + 1, end)
        at = data.find(b"\n@@ -", at + 1, end)
        if hunk is None:
            continue
        try:
            hunk_counts(hunk)
        except ValueError:
            return False
    return True


def _is_binary(section: Sequence[bytes]) -> bool:
    """A binary change: git's marker lines in the header part (never inside a hunk)."""
    for line in section[1:]:
        if line.startswith(b"@@"):
            return False
        if line.startswith(b"GIT binary patch") or (
            line.startswith(b"Binary files ") and line.rstrip(b"\r\n").endswith(b" differ")
        ):
            return True
    return False


def git_quote(name: str) -> str:
    """``name`` as git writes it in a diff header: C-quoted when it holds a quote, a
    backslash, a control character or a non-ASCII character (``core.quotePath``); the
    exact inverse of :func:`_unquote`."""
    return quote_bytes(name_bytes(name)).decode("ascii")


def git_blob_id(data: bytes, *, sha256: bool = False) -> str:
    """The git object id of a blob holding ``data`` (SHA-1, or SHA-256 for a repository in
    git's SHA-256 object format)."""
    framed = b"blob %d\0" % len(data) + data
    if sha256:
        return hashlib.sha256(framed).hexdigest()
    return hashlib.sha1(framed, usedforsecurity=False).hexdigest()


def git_label(prefix: str, name: str) -> str:
    """A ``---``/``+++`` name as git writes it (a tab after a name with a space)."""
    return git_quote(prefix + name) + ("\t" if " " in name else "")


def sections_from_files(files: Iterable[dict[str, Any]]) -> list[FileSection]:
    """Rebuild per-file sections from the files API (fallback when the diff is refused).

    Each entry is a GitHub "diff entry" (``filename``, ``status``, ``patch``,
    ``previous_filename``). An entry without ``patch`` becomes a ``no_patch``
    section: listed, never reviewed. Names are quoted as git quotes them
    (:func:`git_quote`): the API gives them raw, and a name holding a line break
    would otherwise write lines of its own (a forged header or hunk) into what the
    reviewer reads.
    """
    out: list[FileSection] = []
    for entry in files:
        path = str(entry["filename"])
        old = str(entry.get("previous_filename") or path)
        status = str(entry.get("status", "modified"))
        patch = entry.get("patch")
        other = old if old != path else ""
        head = f"diff --git {git_quote('a/' + old)} {git_quote('b/' + path)}\n"
        if status == "renamed" and old != path:
            head += f"rename from {git_quote(old)}\nrename to {git_quote(path)}\n"
        if patch is None:
            out.append(FileSection(path=path, data=b"", no_patch=True, old_path=other))
            continue
        src = "/dev/null" if status == "added" else git_label("a/", old)
        dst = "/dev/null" if status == "removed" else git_label("b/", path)
        text = f"{head}--- {src}\n+++ {dst}\n{patch}"
        if not text.endswith("\n"):
            text += "\n"
        # a lone surrogate (JSON "\ud800") keeps its bytes, so the section is
        # undecodable (never reviewed) instead of silently showing "?"
        data = text.encode("utf-8", "surrogatepass")
        out.append(FileSection(path=path, data=data, old_path=other))
    return out


def unlisted(count: int) -> FileSection:
    """A placeholder for changed files GitHub did not list (they were never reviewed)."""
    return FileSection(path=f"({count} changed files GitHub did not list)", data=b"", no_patch=True)


def possibly_unlisted(cap: int) -> FileSection:
    """A placeholder for a file list that reached GitHub's cap with no total to compare:
    more files may have changed than were listed, and none of those was reviewed."""
    return FileSection(
        path=f"(possibly more changed files: GitHub lists at most {cap})", data=b"", no_patch=True
    )


def decodable(data: bytes) -> bool:
    """Whether ``data`` is strict UTF-8 (no overlong form, surrogate or cut sequence)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed data (gunzip it first)"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
    (b"MC1 ", "an MC1 envelope (a saved reviewer response, not the diff it reviewed)"),
)


def not_a_diff(data: bytes) -> str | None:
    """What ``data`` looks like when it is not a git unified diff, else None.

    A diff has a line starting ``diff --git`` (an empty input is an empty diff, not
    this error). Sniffed from the first bytes: compressed or binary data, JSON (a
    review-gate certificate named as such), ``diff -u`` output without git's headers,
    or text, shown by its first line.
    """
    if not data.strip() or data.startswith(b"diff --git ") or b"\ndiff --git " in data:
        return None
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    head = data[:8192]
    if b"\0" in head or not decodable(head[: len(head) - 3] if len(head) == 8192 else head):
        return f"binary data ({len(data)} bytes, not UTF-8 text)"
    text = head.decode("utf-8", "replace").lstrip()
    if text.startswith(("{", "[")):
        if "review-gate.certificate" in text:
            return "a review-gate certificate (JSON)"
        return "JSON, not a diff"
    lines = text.splitlines()
    if any(ln.startswith("--- ") for ln in lines) and any(ln.startswith("@@ ") for ln in lines):
        return "a unified diff without git's 'diff --git' headers (diff -u output)"
    first = lines[0] if lines else ""
    shown = first if len(first) <= 60 else first[:57] + "..."
    return f"text whose first line is {shown!r}"


def file_count(sections: Sequence[FileSection]) -> int:
    return sum(1 for sec in sections if sec.path or sec.no_patch)


# --- filters ---------------------------------------------------------------------


# Glob tokens. ``**/`` is the three tokens OPT2 DSTAR "/": an optional "anything, then a
# slash" (the regex ``(?:.*/)?``); OPT2 consumes nothing and may skip the two after it.
_LIT, _ANY, _STAR, _DSTAR, _OPT2 = range(5)
#: a glob's cached automaton is dropped and rebuilt past this many states (memory bound)
MAX_GLOB_STATES = 4096


class Glob:
    """A path glob, matched in time linear in the path's length.

    ``**`` matches anything (``/`` included), ``**/`` any number of whole directories
    (none included), ``*`` anything within one segment, ``?`` one character other than
    ``/``; the whole path must match. A backtracking regex (``[^/]*`` per ``*``) takes
    time polynomial in the path's length with the number of stars as the exponent:
    ``**/*-*-*-*-*.lock`` took 1.7 s per 254-character name. Here the glob is a
    nondeterministic automaton (one state per token) run on all its states at once,
    one character at a time, and the set-of-states transitions are cached (a DFA built
    lazily): each character costs one dictionary look-up, or, the first time a
    (states, character) pair is met, one pass over the tokens. So a match does at most
    ``len(path) * (len(tokens) + 1)`` steps, whatever the pattern; :attr:`steps`
    counts them.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        tokens: list[tuple[int, str]] = []
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                tokens += [(_OPT2, ""), (_DSTAR, ""), (_LIT, "/")]
                i += 3
            elif pattern.startswith("**", i):
                tokens.append((_DSTAR, ""))
                i += 2
            elif pattern[i] == "*":
                tokens.append((_STAR, ""))
                i += 1
            elif pattern[i] == "?":
                tokens.append((_ANY, ""))
                i += 1
            else:
                tokens.append((_LIT, pattern[i]))
                i += 1
        self.tokens = tuple(tokens)
        self._final = 1 << len(tokens)
        self.steps = 0  # bound on the work done: path characters + tokens visited on misses
        self._reset()

    def _reset(self) -> None:
        # A DFA state is a plain dict from a character to the next state (the fastest
        # look-up CPython has); its set of automaton states is kept by the dict's id.
        self._states: list[dict[str, Any]] = []
        self._sets: dict[int, int] = {}  # id(state) -> set of automaton states (bits)
        self._by_set: dict[int, dict[str, Any]] = {}
        self._dead = self._intern(0)
        self._start = self._intern(self._closure(1))

    def _intern(self, states: int) -> dict[str, Any]:
        found = self._by_set.get(states)
        if found is None:
            found = self._by_set[states] = {}
            self._states.append(found)
            self._sets[id(found)] = states
        return found

    def _closure(self, states: int) -> int:
        """Add the states reachable without reading (edges only go forward: one pass)."""
        for index, (kind, _) in enumerate(self.tokens):
            if states >> index & 1:
                if kind in (_STAR, _DSTAR):
                    states |= 2 << index
                elif kind == _OPT2:
                    states |= (2 << index) | (8 << index)
        return states

    def _advance(self, current: dict[str, Any], char: str) -> dict[str, Any]:
        """The DFA state after ``char`` (computed once per state and character)."""
        states, out = self._sets[id(current)], 0
        self.steps += len(self.tokens)
        for index, (kind, literal) in enumerate(self.tokens):
            if not states >> index & 1:
                continue
            if kind == _LIT:
                if char == literal:
                    out |= 2 << index
            elif kind == _ANY:
                if char != "/":
                    out |= 2 << index
            elif kind == _STAR:
                if char != "/":
                    out |= 1 << index
            elif kind == _DSTAR:
                out |= 1 << index
        out = self._closure(out)
        if len(self._states) >= MAX_GLOB_STATES:
            self._reset()  # bounded memory; the work per character stays bounded too
            current = self._intern(states)
        nxt = self._intern(out)
        current[char] = nxt
        return nxt

    def match(self, path: str) -> bool:
        """Whether the whole of ``path`` matches."""
        self.steps += len(path)  # at most one look-up per character
        state, dead = self._start, self._dead
        for char in path:
            nxt = state.get(char)
            if nxt is None:
                nxt = self._advance(state, char)
                dead = self._dead  # _advance may have rebuilt the tables
            if nxt is dead:  # no automaton state left: nothing after this can match
                return False
            state = nxt
        return bool(self._sets[id(state)] & self._final)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    """The compiled glob of ``pattern`` (cached: each filter pattern is compiled once)."""
    return Glob(pattern)


def glob_match(path: str, pattern: str) -> bool:
    """Whether ``path`` matches ``pattern`` (a pattern without ``/`` also matches basenames)."""
    pattern = pattern.removeprefix("./").removeprefix("/")
    glob = compile_glob(pattern)
    if glob.match(path):
        return True
    return "/" not in pattern and glob.match(path.rsplit("/", 1)[-1])


def path_selected(path: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    included = any(glob_match(path, pat) for pat in include)
    return included and not any(glob_match(path, pat) for pat in exclude)


def section_selected(sec: FileSection, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """A section is in scope if its path OR its old name (rename/copy) is: moving a reviewed
    file into an excluded folder must not hide the changes made to it."""
    if path_selected(sec.path, include, exclude):
        return True
    return bool(sec.old_path) and path_selected(sec.old_path, include, exclude)


#: an added file takes a deleted one's place when it holds this share of its lines
MOVE_SHARE = 0.25
#: lines shorter than this (stripped) say nothing about where a file came from
MOVE_LINE_CHARS = 6


def _header_has(sec: FileSection, *markers: bytes) -> bool:
    end = sec.data.find(b"\n@@")
    head = sec.data[: end if end >= 0 else len(sec.data)]  # the header only is copied
    return any(marker in head for marker in markers)


def _side_lines(sec: FileSection, sign: bytes) -> set[bytes]:
    """The distinct, telling lines a section adds (``+``) or removes (``-``)."""
    start = sec.data.find(b"\n@@")
    body = sec.data[start + 1 :] if start >= 0 else b""
    return {
        text
        for line in _iter_lines(body)
        if line[:1] == sign and len(text := line[1:].strip()) >= MOVE_LINE_CHARS
    }


def moved_out_of_scope(
    sections: Sequence[FileSection], include: Sequence[str], exclude: Sequence[str]
) -> set[int]:
    """Indexes of added files the filters exclude that take the place of an in-scope file
    deleted in the same change: git did not pair the move (over half rewritten), so the
    rename rule of :func:`section_selected` cannot see it. Paired when the names' last
    parts are equal, or the added file holds :data:`MOVE_SHARE` of the deleted file's
    telling lines. Such a file is in scope (reviewed, or a gap): moving a reviewed file
    into an excluded folder while rewriting it must not hide it. Best effort: a move
    that shares neither name nor lines looks like any new file."""
    deleted = [
        sec
        for sec in sections
        if sec.path
        and _header_has(sec, b"\ndeleted file mode ", b"\n+++ /dev/null")
        and path_selected(sec.path, include, exclude)
    ]
    if not deleted:
        return set()
    names = {sec.path.rsplit("/", 1)[-1] for sec in deleted}
    owners: dict[bytes, list[int]] = {}
    sizes: list[int] = []
    for number, sec in enumerate(deleted):
        lines = _side_lines(sec, b"-")
        sizes.append(len(lines))
        for text in lines:
            owners.setdefault(text, []).append(number)
    out: set[int] = set()
    for index, sec in enumerate(sections):
        if not sec.path or section_selected(sec, include, exclude):
            continue
        if not (sec.no_patch or _header_has(sec, b"\nnew file mode ", b"\n--- /dev/null")):
            continue
        if sec.path.rsplit("/", 1)[-1] in names:
            out.add(index)
            continue
        hits: dict[int, int] = {}
        for text in _side_lines(sec, b"+"):
            for number in owners.get(text, ()):
                hits[number] = hits.get(number, 0) + 1
        if any(sizes[n] and count >= MOVE_SHARE * sizes[n] for n, count in hits.items()):
            out.add(index)
    return out


def select(
    sections: Sequence[FileSection],
    *,
    include: Sequence[str] = ("**",),
    exclude: Sequence[str] = (),
    max_bytes: int = 1_000_000,
    source: str = "diff",
    original: bytes | None = None,
    assets: bool = True,
) -> SelectedDiff:
    """Choose what the reviewer sees; record every file it does not see and why.

    Files are taken in diff order; a file that would take the diff over
    ``max_bytes`` is skipped (``over_byte_limit``) and later, smaller files
    may still fit. ``original`` is the diff ``sections`` were split from: when every
    section is kept, the selected bytes are that very object (the sections concatenate
    to it), so a large diff is not held twice. ``assets``: a binary section whose bytes
    were found to be a listed asset is ``binary_asset`` (False: ``binary``, as any other).
    """
    kept: list[bytes] = []
    reviewed: list[str] = []
    skipped: list[SkippedFile] = []
    size = 0
    moved = moved_out_of_scope(sections, include, exclude)
    for index, sec in enumerate(sections):
        if sec.path == "" and not sec.no_patch:
            # stray bytes before the first header: keep them with the diff (never drop bytes)
            if not decodable(sec.data):
                skipped.append(SkippedFile("(preamble)", SkipWhy.UNDECODABLE, len(sec.data)))
                continue
            if size + len(sec.data) > max_bytes:
                skipped.append(SkippedFile("(preamble)", SkipWhy.OVER_BYTE_LIMIT, len(sec.data)))
                continue
            kept.append(sec.data)
            size += len(sec.data)
            continue
        if sec.unparseable:
            # checked before the filters: a section that cannot be read may hide anything
            skipped.append(SkippedFile(sec.path, SkipWhy.UNPARSEABLE, len(sec.data)))
        elif not (exact_name(sec.path) and exact_name(sec.old_path)):
            # a name that is not strict UTF-8 cannot be compared exactly with a filter:
            # never filtered out, never reviewed (named as git quotes it: ASCII, exact)
            skipped.append(SkippedFile(git_quote(sec.path), SkipWhy.UNDECODABLE, len(sec.data)))
        elif index not in moved and not section_selected(sec, include, exclude):
            skipped.append(SkippedFile(sec.path, SkipWhy.FILTERED, len(sec.data)))
        elif sec.no_patch:
            skipped.append(SkippedFile(sec.path, SkipWhy.NO_PATCH, 0))
        elif sec.binary and sec.asset and assets:
            skipped.append(SkippedFile(sec.path, SkipWhy.BINARY_ASSET, len(sec.data)))
        elif sec.binary:
            skipped.append(SkippedFile(sec.path, SkipWhy.BINARY, len(sec.data)))
        elif not decodable(sec.data):
            skipped.append(SkippedFile(sec.path, SkipWhy.UNDECODABLE, len(sec.data)))
        elif size + len(sec.data) > max_bytes:
            skipped.append(SkippedFile(sec.path, SkipWhy.OVER_BYTE_LIMIT, len(sec.data)))
        else:
            kept.append(sec.data)
            reviewed.append(sec.path)
            size += len(sec.data)
    whole = original is not None and len(kept) == len(sections) and size == len(original)
    data = original if whole and original is not None else b"".join(kept)
    coverage = Coverage(
        reviewed=tuple(reviewed),
        skipped=tuple(skipped),
        diff_bytes=len(data),
        diff_sha=diff_sha(data),
        source=source,
    )
    return SelectedDiff(data=data, coverage=coverage)
