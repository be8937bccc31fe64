"""The chunker (gate/review/chunks.py): lossless, headers repeated, consecutive sections.

Hypothesis generates git diffs of many files with hunks whose content imitates headers
(``diff --git``, ``@@``) and proves the properties stated in the module docstring for
any chunk size, including sizes that cut files at hunk boundaries or leave a file
``too_large``.
"""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.diff import SkipWhy, select, split_diff
from gate.review.chunks import (
    BYTES_PER_TOKEN,
    Chunk,
    FileEntry,
    Piece,
    context_window,
    estimate_tokens,
    file_list,
    halve,
    header_of,
    plan,
    section_header,
)

_LINE_TEXT = st.sampled_from(
    ["x = 1", "", "diff --git a/z b/z", "@@ -1,2 +1,2 @@", "--- a/q", "+++ b/q", "é ü", "```"]
)


@st.composite
def hunk(draw: st.DrawFn, start: int) -> bytes:
    lines = draw(st.lists(st.tuples(st.sampled_from(" -+"), _LINE_TEXT), min_size=1, max_size=8))
    old = sum(1 for kind, _ in lines if kind in " -")
    new = sum(1 for kind, _ in lines if kind in " +")
    out = f"@@ -{start},{old} +{start},{new} @@ ctx\n"
    out += "".join(f"{kind}{text}\n" for kind, text in lines)
    return out.encode()


@st.composite
def section(draw: st.DrawFn, index: int) -> bytes:
    path = f"src/f{index}.py"
    kind = draw(st.sampled_from(["modified", "added", "removed", "mode"]))
    head = f"diff --git a/{path} b/{path}\n"
    if kind == "mode":
        return (head + "old mode 100644\nnew mode 100755\n").encode()
    if kind == "added":
        head += "new file mode 100644\n--- /dev/null\n"
    else:
        head += "index 1111111..2222222 100644\n--- a/" + path + "\n"
    head += "+++ /dev/null\n" if kind == "removed" else f"+++ b/{path}\n"
    count = draw(st.integers(min_value=1, max_value=6))
    return head.encode() + b"".join(draw(hunk(10 * i + 1)) for i in range(count))


@st.composite
def diffs(draw: st.DrawFn) -> bytes:
    count = draw(st.integers(min_value=1, max_value=8))
    return b"".join(draw(section(i)) for i in range(count))


def _check(data: bytes, max_bytes: int) -> None:
    selected = select(split_diff(data), max_bytes=10**9)
    result = plan(selected.data, selected.coverage, max_chunk_bytes=max_bytes)
    sections = split_diff(selected.data)
    too_large = {item.path for item in result.too_large}
    kept = [sec for sec in sections if sec.path not in too_large]
    # lossless: the bodies concatenate to the kept sections, in order, byte for byte
    bodies = b"".join(p.body for chunk in result.chunks for p in chunk.pieces)
    assert bodies == b"".join(sec.data for sec in kept)
    if not too_large:
        assert bodies == selected.data
    # the coverage names exactly the bytes sent
    assert result.coverage.diff_sha == hashlib.sha256(bodies).hexdigest()
    assert set(result.coverage.reviewed) == {sec.path for sec in kept}
    assert {s.path for s in result.coverage.skipped if s.why is SkipWhy.TOO_LARGE} == too_large
    # every chunk fits and is the concatenation of its pieces; its sha is of those bytes
    for number, chunk in enumerate(result.chunks, start=1):
        assert chunk.number == number
        assert 0 < chunk.size <= max_bytes
        assert chunk.data == b"".join(p.data for p in chunk.pieces)
        assert chunk.sha == hashlib.sha256(chunk.data).hexdigest()
    # headers: a later part repeats its section's header exactly
    by_path = {sec.path: sec for sec in kept}
    for chunk in result.chunks:
        for piece in chunk.pieces:
            header, _ = section_header(by_path[piece.path].data)
            if piece.part > 1:
                assert piece.data[: piece.header_len] == header
                assert piece.header_len == len(header)
            else:
                assert piece.header_len == 0
                assert piece.data.startswith(header)
    # placement: each section's parts are in one chunk or consecutive ones, in order
    for sec in kept:
        where = [
            (chunk.number, piece.part)
            for chunk in result.chunks
            for piece in chunk.pieces
            if piece.path == sec.path
        ]
        numbers = [n for n, _ in where]
        assert numbers == sorted(numbers)
        assert numbers[-1] - numbers[0] <= len(set(numbers)) - 1
        assert [part for _, part in where] == list(range(1, len(where) + 1))
    # too_large: only when the header and some single hunk exceed the chunk
    for sec in sections:
        header, hunks = section_header(sec.data)
        cuttable = len(sec.data) <= max_bytes or (
            hunks and all(len(header) + len(h) <= max_bytes for h in hunks)
        )
        assert (sec.path in too_large) == (not cuttable)


@settings(max_examples=200, deadline=None)
@given(diffs(), st.integers(min_value=40, max_value=2000))
def test_plan_is_lossless_and_ordered(data: bytes, max_bytes: int) -> None:
    _check(data, max_bytes)


@settings(max_examples=100, deadline=None)
@given(diffs())
def test_one_chunk_when_it_fits(data: bytes) -> None:
    selected = select(split_diff(data), max_bytes=10**9)
    result = plan(selected.data, selected.coverage, max_chunk_bytes=len(selected.data))
    assert len(result.chunks) == 1
    assert result.chunks[0].data == selected.data
    assert result.chunks[0].sha == selected.coverage.diff_sha
    assert result.coverage == selected.coverage


@settings(max_examples=100, deadline=None)
@given(diffs(), st.integers(min_value=200, max_value=2000))
def test_halve_keeps_the_bytes(data: bytes, max_bytes: int) -> None:
    selected = select(split_diff(data), max_bytes=10**9)
    for chunk in plan(selected.data, selected.coverage, max_chunk_bytes=max_bytes).chunks:
        halves = halve(chunk)
        if halves is None:
            continue
        assert len(halves) >= 2
        assert b"".join(p.body for h in halves for p in h.pieces) == b"".join(
            p.body for p in chunk.pieces
        )
        assert all(h.size <= -(-chunk.size // 2) for h in halves)
        assert [h.label for h in halves] == [f"{chunk.name}.{i + 1}" for i in range(len(halves))]


def test_section_header_keeps_hunk_lookalikes_in_the_body() -> None:
    data = (
        b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n"
        b"-@@ -9,9 +9,9 @@\n+diff --git a/g b/g\n x\n@@ -20 +20 @@\n-a\n+b\n"
    )
    header, hunks = section_header(data)
    assert header == b"diff --git a/f b/f\n--- a/f\n+++ b/f\n"
    assert len(hunks) == 2
    assert header + b"".join(hunks) == data


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=50).flatmap(section),
    st.lists(
        st.one_of(_LINE_TEXT, st.just("@@ not a hunk @@")).map(lambda t: (t + "\n").encode()),
        max_size=3,
    ),
)
def test_header_of_is_the_header_section_header_reads(data: bytes, junk: list[bytes]) -> None:
    """The file list reads only each section's header (:func:`header_of`); it is exactly
    the header :func:`section_header` finds reading the whole section, header lookalikes,
    sections without hunks, and a header that is all a cut section holds included."""
    for candidate in (data, data + b"".join(junk), b"".join(junk) + data, data[: len(data) // 2]):
        assert header_of(candidate) == section_header(candidate)[0]


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(["added", "modified", "not reviewed: binary"]), st.integers(0))
def test_file_line_is_the_json_string_of_the_path(path: str, status: str, size: int) -> None:
    """The prompt's file line writes the path as ``json.dumps(path, ensure_ascii=False)``
    does (quotes, backslashes, controls, line separators and lone surrogates escaped
    alike), without json.dumps' encoder per call."""
    line = FileEntry(path, status, size).line()
    assert line == f"{status} {size} {json.dumps(path, ensure_ascii=False)}\n"


def test_manifest_digest_covers_order() -> None:
    data = b"".join(
        f"diff --git a/f{i} b/f{i}\n--- a/f{i}\n+++ b/f{i}\n@@ -1 +1 @@\n-a\n+b\n".encode()
        for i in range(4)
    )
    selected = select(split_diff(data), max_bytes=10**9)
    result = plan(selected.data, selected.coverage, max_chunk_bytes=60)
    assert len(result.chunks) == 4
    manifest = result.manifest()
    assert [row["diff_sha"] for row in manifest["chunks"]] == [c.sha for c in result.chunks]
    swapped = type(result)(
        chunks=(result.chunks[1], result.chunks[0], *result.chunks[2:]),
        coverage=result.coverage,
        too_large=(),
        max_chunk_bytes=60,
    )
    assert swapped.manifest()["sha256"] != manifest["sha256"]


def test_token_estimate_and_windows() -> None:
    assert BYTES_PER_TOKEN == 3
    assert estimate_tokens(0) == 0
    assert estimate_tokens(1) == 1
    assert estimate_tokens(300_000) == 100_000
    assert context_window("gpt-4o-mini") == 128_000
    assert context_window("gpt-4.1-mini") == 1_047_576
    assert context_window("claude-sonnet-4-5") == 200_000
    assert context_window("some-local-model") == 100_000


def test_file_list_names_status_and_skips() -> None:
    data = (
        b"diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n"
        b"diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        b"diff --git a/m b/m\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-x\n+y\n"
    )
    selected = select(split_diff(data), exclude=("m",), max_bytes=10**9)
    entries = file_list(selected.data, selected.coverage)
    assert [(e.path, e.status) for e in entries] == [
        ("n", "added"),
        ("d", "removed"),
        ("m", "not reviewed: filtered"),
    ]


def test_chunk_files_name_parts() -> None:
    piece = Piece(path="f", data=b"xy", part=2, parts=3, header_len=1)
    chunk = Chunk(number=1, pieces=(piece,), label="1.2")
    assert chunk.files() == ["f (part 2/3)"]
    assert chunk.name == "1.2"
    assert piece.body == b"y"


def test_chunk_setup_is_cut_once_per_diff_object_and_config() -> None:
    """The cost estimate and the review ask for the same cut; the second ask gets the
    first's answer only for the very same bytes object, an equal config and coverage."""
    from dataclasses import replace

    from gate.config.model import Config
    from gate.review.budget import chunk_setup

    body = "".join(f"+line {i}\n" for i in range(400))
    one = "".join(
        f"diff --git a/f{n}.py b/f{n}.py\n--- a/f{n}.py\n+++ b/f{n}.py\n@@ -0,0 +1,400 @@\n{body}"
        for n in range(6)
    ).encode()
    config = Config(max_chunk_bytes=8_000)
    first = chunk_setup(one, config)
    assert first is not None
    assert chunk_setup(one, config) is first
    assert chunk_setup(one, replace(config)) is first  # equal config
    other = bytes(bytearray(one))  # equal bytes, another object: cut again, equal result
    again = chunk_setup(other, config)
    assert again is not first
    assert again == first
    smaller = chunk_setup(one, replace(config, max_chunk_bytes=6_000))
    assert smaller is not None
    assert len(smaller.plan.chunks) > len(first.plan.chunks)
