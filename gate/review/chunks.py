"""The chunker: the selected diff cut into sealed chunks that each fit the model's window.

A pull request larger than the reviewer's context window is reviewed in chunks, and every
chunk is bound to exactly its own bytes (its ``diff_sha``). :func:`plan` owns the cut:

1. the selected diff (:func:`gate.review.scope.select_diff`) is split into file sections
   (:func:`gate.diff.split_diff`, the same parser that selected them);
2. a section that fits ``max_chunk_bytes`` is one *piece*; a larger one is cut at hunk
   boundaries into parts, each part repeating the section's *header* (every line before
   its first hunk: ``diff --git``, modes, ``rename``, ``---``/``+++``), so every part is
   a valid one-file diff on its own;
3. a section whose header plus any single hunk is over ``max_chunk_bytes`` cannot be cut
   and is not sent: it is recorded as unreviewed (``too_large``), so coverage is partial;
4. the pieces are cut into *segments* at content-defined anchors, and each segment into
   chunks of at most ``max_chunk_bytes`` at content-defined cuts (a diff that fits one
   chunk is one chunk).

Stable boundaries (content-defined chunking). Greedy packing in diff order would move
every later boundary when one file is added near the top, and every chunk would be new.
Here no cut depends on a byte offset from the diff's start:

- a piece ends a segment (an *anchor*) when a hash of its identity (its path and, for a
  part of a cut file, its part number: never its position, its neighbours or its bytes;
  :func:`anchor_draw`) falls under ``size / (SEGMENT_CHUNKS * max_chunk_bytes)`` of the
  hash space (:func:`is_anchor`), so a segment holds about :data:`SEGMENT_CHUNKS`
  chunks' worth of diff, and no chunk crosses an anchor;
- inside a segment (:func:`window_cut`) each chunk ends after the piece with the least
  hash among those that leave the chunk between half full and full, so chunks are at
  least half full and, after an edit, the cuts fall back on the old ones within a chunk
  or two (the least hash of a window stays put when the window shifts a little).

So a push that edits, adds or removes one file changes only chunks of the segment
holding it (and of its neighbour, when the file's own anchor appears or goes with its
size); every other chunk keeps its exact bytes, and so its digest, and a pass given to
it can be carried (docs/decisions/0008-stable-boundaries.md). The price is fill: chunks are
less full than greedy packing makes them (measured by ``bench/incremental.py``), so a
chunked review takes somewhat more requests; ``max_chunks`` and the cost estimate count
the plan as it is cut.

What is proved (``tests/unit/chunks/test_plan.py``, Hypothesis): let ``sections`` be
``split_diff(selected)`` and ``kept`` those not ``too_large``. Then

- **lossless**: ``b"".join(piece.body for chunk in chunks for piece in chunk.pieces)`` is
  ``b"".join(s.data for s in kept)`` byte for byte, where ``piece.body`` is the piece's
  bytes without the repeated header (the whole piece for a section's first part); and
  with no ``too_large`` section that is the selected diff itself;
- **headers**: a later part's bytes are its section's header followed by its body;
- **placement**: each kept section's parts are in one chunk, or in consecutive chunks, in
  order; each chunk's bytes are the concatenation of its pieces, at most
  ``max_chunk_bytes`` long;
- **binding**: a chunk's ``sha`` is SHA-256 of its bytes, which are what its prompt shows;
- **locality** (``tests/unit/chunks/test_stable.py``): editing one file's hunks changes
  no chunk outside the segments that hold the file, and when every segment fits one
  chunk, at most two chunk digests of the plan are new.

Token estimate. Tokens are estimated from bytes at :data:`BYTES_PER_TOKEN` = 3 bytes per
token, rounded up. BPE tokenizers (OpenAI's o200k/cl100k, Anthropic's, Gemini's) average
about 3.5 to 4.5 bytes per token on source code and diffs, so 3 over-estimates the
tokens of ordinary code by 15 to 50%: a chunk sized by it fits. Text that tokenizes
worse (non-Latin scripts, long runs of symbols or base64) can still overflow; the
provider's context-overflow answer is then recognised and that chunk split in half
(:mod:`gate.review.chunked`), so the estimate is a budget, never a correctness assumption.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.diff import (
    _HUNK,
    Coverage,
    FileSection,
    SkippedFile,
    SkipWhy,
    _iter_lines,
    hunk_content,
    hunk_counts,
    split_diff,
)

#: the domain of the anchor hash (a new scheme gets a new name, so old plans never match)
ANCHOR_DOMAIN = b"review-gate.anchor/1\0"

#: a segment (between two anchors) holds about this many chunks' worth of diff: more
#: fills chunks better, fewer bounds how far one file's change can reach
SEGMENT_CHUNKS = 4

#: bytes per token assumed by :func:`estimate_tokens` (conservative; see the module docstring)
BYTES_PER_TOKEN = 3

#: the window assumed for a model the table below does not know
DEFAULT_CONTEXT_TOKENS = 100_000

#: known models' context windows (input + output tokens), by model-name prefix; the
#: longest matching prefix wins. Sources: each provider's model documentation.
CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2", 1_048_576),
)


def estimate_tokens(size: int) -> int:
    """Tokens ``size`` bytes may take, rounded up at :data:`BYTES_PER_TOKEN` bytes a token."""
    return math.ceil(size / BYTES_PER_TOKEN)


def context_window(model: str) -> int:
    """The model's context window from :data:`CONTEXT_WINDOWS`, else the default 100k."""
    best, window = -1, DEFAULT_CONTEXT_TOKENS
    for prefix, tokens in CONTEXT_WINDOWS:
        if model.startswith(prefix) and len(prefix) > best:
            best, window = len(prefix), tokens
    return window


@dataclass(frozen=True)
class Piece:
    """One section, or one part of a section cut at hunk boundaries."""

    path: str
    data: bytes  # what the chunk holds: the header (again, for a later part) and hunks
    part: int = 1
    parts: int = 1
    header_len: int = 0  # bytes of ``data`` that repeat the header (0 for the first part)

    @property
    def body(self) -> bytes:
        """The bytes this piece adds to the selected diff (the repeated header excluded)."""
        return self.data[self.header_len :]


@dataclass(frozen=True)
class Chunk:
    """One request's worth of diff: its pieces, its bytes and their SHA-256."""

    number: int  # 1-based position in the plan
    pieces: tuple[Piece, ...]
    label: str = ""  # "3", or "3.2" for the second half of an overflowing chunk 3

    @property
    def data(self) -> bytes:
        return b"".join(piece.data for piece in self.pieces)

    @functools.cached_property
    def sha(self) -> str:
        """SHA-256 of :attr:`data`, hashed once per chunk (the plan, each prompt, each
        decision, the manifest and the certificate ask for it: 38 times per review of the
        bench's 5 chunks). The pieces are frozen, so the digest cannot go stale."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return sum(len(piece.data) for piece in self.pieces)

    @property
    def name(self) -> str:
        return self.label or str(self.number)

    def files(self) -> list[str]:
        """The files in this chunk, ``path (part i/n)`` for a part of a cut section."""
        return [
            piece.path if piece.parts == 1 else f"{piece.path} (part {piece.part}/{piece.parts})"
            for piece in self.pieces
        ]


#: ``json.dumps(text, ensure_ascii=False)`` for a str, without building an encoder per
#: call (json.dumps does, for any non-default option): the file list writes a line per
#: file into every chunk's prompt, 1,316 of them for the bench's 188 files and 5 chunks
_json_string = json.encoder.encode_basestring


@dataclass(frozen=True)
class FileEntry:
    """One changed file as every chunk's prompt lists it: the whole scope of the PR."""

    path: str
    status: str  # added, removed, renamed, modified, or why it was not reviewed
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "bytes": self.size}

    def line(self) -> str:
        """``modified 10571 "src/app.py"``: the prompt's line for the file. The change is
        the gate's own word; the path, the PR author's, is a JSON string (quotes, line
        breaks and controls escaped), so it cannot end the line or the list. About half
        the bytes of a JSON object per file: the list is in every chunk's prompt."""
        return f"{self.status} {self.size} {_json_string(self.path)}\n"


@dataclass(frozen=True)
class Plan:
    """The chunks, and the coverage once ``too_large`` sections are taken out."""

    chunks: tuple[Chunk, ...]
    coverage: Coverage
    too_large: tuple[SkippedFile, ...]
    max_chunk_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(chunk.size for chunk in self.chunks)

    def manifest(self) -> dict[str, Any]:
        """The ordered chunk digests, their files, and one digest over them (the certificate's)."""
        rows = [
            {
                "chunk": chunk.name,
                "diff_sha": chunk.sha,
                "bytes": chunk.size,
                "files": chunk.files(),
            }
            for chunk in self.chunks
        ]
        canonical = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return {
            "chunks": rows,
            "sha256": hashlib.sha256(canonical.encode("ascii")).hexdigest(),
        }


def section_header(data: bytes) -> tuple[bytes, list[bytes]]:
    """A section's header (every line before its first hunk) and its hunks, in order.

    Hunk extents are counted as :func:`gate.diff.split_diff` counts them (a ``@@`` line
    inside a hunk body is content, never a new hunk), so ``header + b"".join(hunks)`` is
    ``data``. Lines after a hunk that are not hunk content stay with that hunk. Each
    section is read once per run: the file list, the plan and its cuts ask for the same
    sections (a memo of the most recent ones, by equal bytes).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    header, hunks = _section_header(data)
    return header, list(hunks)


#: the sections whose header and hunks are kept (a pull request's files, several times over)
HEADER_MEMO = 4096


@functools.lru_cache(maxsize=HEADER_MEMO)
def _section_header(data: bytes) -> tuple[bytes, tuple[bytes, ...]]:
    """:func:`section_header`'s work, memoised (a pure function of the bytes)."""
    header: list[bytes] = []
    hunks: list[list[bytes]] = []
    old_left = new_left = 0
    for line in _iter_lines(data):
        if old_left > 0 or new_left > 0:
            owed = hunk_content(line, old_left, new_left)
            if owed is not None:
                old_left, new_left = owed
                hunks[-1].append(line)
                continue
            old_left = new_left = 0
        match = _HUNK.match(line)
        if match is not None:
            hunks.append([line])
            try:
                old_left, new_left = hunk_counts(match)
            except ValueError:  # never in a selected diff (split_diff marks it unparseable)
                old_left = new_left = 0
        elif hunks:
            hunks[-1].append(line)
        else:
            header.append(line)
    return b"".join(header), tuple(b"".join(hunk) for hunk in hunks)


def cut_section(section: FileSection, max_bytes: int) -> list[Piece] | None:
    """``section`` as pieces of at most ``max_bytes``, or None when it cannot be cut."""
    if len(section.data) <= max_bytes:
        return [Piece(path=section.path, data=section.data)]
    header, hunks = section_header(section.data)
    groups: list[list[bytes]] = []
    size = 0
    for hunk in hunks:
        if len(header) + len(hunk) > max_bytes:
            return None
        if groups and size + len(hunk) <= max_bytes:
            groups[-1].append(hunk)
            size += len(hunk)
        else:
            groups.append([hunk])
            size = len(header) + len(hunk)
    if not groups:
        return None  # a header alone over the limit
    parts = len(groups)
    return [
        Piece(
            path=section.path,
            data=header + b"".join(group),
            part=index + 1,
            parts=parts,
            header_len=0 if index == 0 else len(header),
        )
        for index, group in enumerate(groups)
    ]


def oversize(section: FileSection, max_bytes: int) -> str:
    """Why ``section`` cannot be cut into pieces of ``max_bytes``: its largest hunk."""
    header, hunks = section_header(section.data)
    largest = max((len(hunk) for hunk in hunks), default=0)
    return (
        f"its largest hunk is {len(header) + largest} bytes with the file's header, "
        f"over max_chunk_bytes {max_bytes}"
    )


def anchor_draw(piece: Piece) -> int:
    """SHA-256 of the piece's identity (its path and part number: never its position,
    its neighbours or its bytes), read as a 64-bit number."""
    key = ANCHOR_DOMAIN + piece.path.encode("utf-8", "surrogatepass") + b"\0%d" % piece.part
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def is_anchor(piece: Piece, max_bytes: int) -> bool:
    """Whether ``piece`` ends a segment: its :func:`anchor_draw`, as a fraction of the
    hash space, is under ``len(piece.data) / (SEGMENT_CHUNKS * max_bytes)``, so a segment
    holds about :data:`SEGMENT_CHUNKS` chunks' worth of diff. Inserting or removing
    another file moves no anchor."""
    return anchor_draw(piece) * SEGMENT_CHUNKS * max_bytes < len(piece.data) << 64


def segments(pieces: Sequence[Piece], max_bytes: int) -> list[list[Piece]]:
    """``pieces`` in order, cut after every anchor (:func:`is_anchor`); the last segment
    ends with the last piece whether or not it is an anchor."""
    out: list[list[Piece]] = [[]]
    for piece in pieces:
        out[-1].append(piece)
        if is_anchor(piece, max_bytes):
            out.append([])
    return [segment for segment in out if segment]


def window_cut(segment: Sequence[Piece], max_bytes: int) -> list[list[Piece]]:
    """A segment cut into groups of at most ``max_bytes``: from each group's start, the
    group ends after the piece of least :func:`anchor_draw` among those that would leave
    it between half full and full (after the last piece that fits when none does); what
    is left once it fits is the last group. The least draw in a window is the same piece
    when the window shifts a little, so after an edit the cuts fall back on the old ones
    within a group or two (winnowing); the segment's anchors bound how far a change can
    reach. Bounded: every group takes at least one piece."""
    out: list[list[Piece]] = []
    start, count = 0, len(segment)
    half = max_bytes // 2
    while start < count:
        size, end, best = 0, start, -1
        best_draw = 1 << 64
        while end < count and (end == start or size + len(segment[end].data) <= max_bytes):
            size += len(segment[end].data)
            if size >= half and (draw := anchor_draw(segment[end])) < best_draw:
                best, best_draw = end, draw
            end += 1
        if end == count:
            out.append(list(segment[start:]))
            break
        cut = best if best >= 0 else end - 1
        out.append(list(segment[start : cut + 1]))
        start = cut + 1
    return out


def stable_pack(pieces: Sequence[Piece], max_bytes: int) -> list[Chunk]:
    """The pieces cut into segments at anchors and each segment into groups by
    :func:`window_cut`, one chunk per group: every cut is chosen by the pieces'
    identities within a window, never at a byte offset from the diff's start. A diff
    that fits one chunk is one chunk."""
    if sum(len(piece.data) for piece in pieces) <= max_bytes:
        return pack(pieces, max_bytes)
    groups = [g for seg in segments(pieces, max_bytes) for g in window_cut(seg, max_bytes)]
    return [Chunk(number=i + 1, pieces=tuple(group)) for i, group in enumerate(groups)]


def pack(pieces: Sequence[Piece], max_bytes: int, *, first: int = 1) -> list[Chunk]:
    """Pieces in order, greedily, into chunks of at most ``max_bytes`` (numbered from ``first``)."""
    groups: list[list[Piece]] = []
    size = 0
    for piece in pieces:
        if groups and size + len(piece.data) <= max_bytes:
            groups[-1].append(piece)
            size += len(piece.data)
        else:
            groups.append([piece])
            size = len(piece.data)
    return [Chunk(number=first + i, pieces=tuple(group)) for i, group in enumerate(groups)]


def plan(
    data: bytes,
    coverage: Coverage,
    *,
    max_chunk_bytes: int,
    sections: Sequence[FileSection] | None = None,
) -> Plan:
    """Cut the selected diff ``data`` (whose manifest is ``coverage``) into chunks.

    A section that cannot be cut to fit is taken out of the review and added to the
    coverage manifest as ``too_large``; the coverage then names the bytes actually sent.
    """
    if max_chunk_bytes < 1:
        raise ValueError("max_chunk_bytes must be positive")
    pieces: list[Piece] = []
    too_large: list[SkippedFile] = []
    kept: list[bytes] = []
    for section in split_diff(data) if sections is None else sections:
        cut = cut_section(section, max_chunk_bytes)
        if cut is None:
            too_large.append(
                SkippedFile(
                    section.path,
                    SkipWhy.TOO_LARGE,
                    len(section.data),
                    detail=oversize(section, max_chunk_bytes),
                )
            )
            continue
        pieces += cut
        kept.append(section.data)
    chunks = tuple(stable_pack(pieces, max_chunk_bytes))
    if too_large:
        names = {item.path for item in too_large}
        sent = b"".join(kept)
        coverage = Coverage(
            reviewed=tuple(path for path in coverage.reviewed if path not in names),
            skipped=coverage.skipped + tuple(too_large),
            diff_bytes=len(sent),
            diff_sha=hashlib.sha256(sent).hexdigest(),
            source=coverage.source,
        )
    return Plan(
        chunks=chunks,
        coverage=coverage,
        too_large=tuple(too_large),
        max_chunk_bytes=max_chunk_bytes,
    )


def halve(chunk: Chunk) -> list[Chunk] | None:
    """Chunk ``chunk`` again at half its size (after a context overflow), or None if it
    cannot be cut smaller (one piece that has no hunk boundary left to cut at)."""
    limit = max(1, math.ceil(chunk.size / 2))
    pieces: list[Piece] = []
    for piece in chunk.pieces:
        section = FileSection(path=piece.path, data=piece.data)
        cut = cut_section(section, limit)
        if cut is None:
            return None
        # a re-cut part keeps the header it repeats; its parts repeat it again
        for sub in cut:
            repeated = piece.header_len if sub.part == 1 else sub.header_len
            pieces.append(
                Piece(
                    path=piece.path,
                    data=sub.data,
                    part=piece.part,
                    parts=piece.parts,
                    header_len=repeated,
                )
            )
    halves = pack(pieces, limit)
    if len(halves) < 2:
        return None
    return [
        Chunk(number=chunk.number, pieces=half.pieces, label=f"{chunk.name}.{i + 1}")
        for i, half in enumerate(halves)
    ]


def header_of(data: bytes) -> bytes:
    """A section's header: :func:`section_header`'s first part, read without its hunks.

    Before the first hunk no line is hunk content, so the header is exactly the lines
    before the first ``@@`` hunk line: a few lines, where :func:`section_header` reads the
    whole section (the file list asks for every file's header, and only that).
    """
    end = 0
    for line in _iter_lines(data):
        if _HUNK.match(line) is not None:
            break
        end += len(line)
    return bytes(data[:end])


def file_status(section: FileSection) -> str:
    """added, removed, renamed or modified, from the section's header lines."""
    header = header_of(section.data)
    if b"\nnew file mode " in header:
        return "added"
    if b"\ndeleted file mode " in header:
        return "removed"
    if b"\nrename from " in header or b"\ncopy from " in header:
        return "renamed"
    return "modified"


def file_list(
    data: bytes, coverage: Coverage, sections: Sequence[FileSection] | None = None
) -> tuple[FileEntry, ...]:
    """Every file of the PR as the prompt lists it: reviewed ones with their change kind,
    the others with why they are not reviewed (in diff order, then the skipped ones)."""
    entries = [
        FileEntry(section.path, file_status(section), len(section.data))
        for section in (split_diff(data) if sections is None else sections)
        if section.path
    ]
    entries += [
        FileEntry(item.path, f"not reviewed: {item.why}", item.size) for item in coverage.skipped
    ]
    return tuple(entries)


def plan_file_list(
    data: bytes, cut: Plan, sections: Sequence[FileSection] | None = None
) -> tuple[FileEntry, ...]:
    """:func:`file_list` as the plan ``cut`` reviews the PR: a section it leaves out
    (``too_large``) is listed once, as not reviewed and why, with every other skip."""
    left_out = {(item.path, item.size) for item in cut.too_large}
    kept = [
        section
        for section in (split_diff(data) if sections is None else sections)
        if (section.path, len(section.data)) not in left_out
    ]
    return file_list(data, cut.coverage, kept)
