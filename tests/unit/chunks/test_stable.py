"""Stable chunk boundaries (gate/review/chunks.py, ``is_anchor``/``stable_pack``).

Hypothesis generates pull requests of many files and a second push that edits, adds or
removes one file, and proves what incremental review relies on:

- the plan still joins back to exactly the selected diff (the planner's properties are
  proved for every size in ``test_plan.py``; here for the many-file shapes pushes have);
- a push that touches one file changes at most ``1 + its pieces`` segments, so every
  chunk of every other segment keeps its digest; and when every segment fits one chunk,
  at most two chunk digests of the new plan are new.

Seeds: Hypothesis prints the falsifying example and its seed on failure
(``--hypothesis-seed`` reproduces a run).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.diff import select, split_diff
from gate.review.chunks import SEGMENT_CHUNKS, Piece, cut_section, is_anchor, plan, segments


@st.composite
def body(draw: st.DrawFn) -> bytes:
    hunks = draw(st.integers(min_value=1, max_value=4))
    out = b""
    for i in range(hunks):
        lines = draw(st.integers(min_value=1, max_value=12))
        tag = draw(st.integers(min_value=0, max_value=999))
        out += f"@@ -{10 * i + 1},{lines} +{10 * i + 1},{lines} @@\n".encode()
        out += b"".join(f"-old {tag} {j}\n+new {tag} {j}\n".encode() for j in range(lines))
    return out


def section(path: str, hunks: bytes) -> bytes:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n".encode() + hunks


def diff_of(files: dict[str, bytes]) -> bytes:
    return b"".join(section(path, hunks) for path, hunks in files.items())


def pieces_of(data: bytes, max_bytes: int) -> list[Piece]:
    out: list[Piece] = []
    for sec in split_diff(data):
        cut = cut_section(sec, max_bytes)
        assert cut is not None
        out += cut
    return out


@st.composite
def pushes(draw: st.DrawFn) -> tuple[dict[str, bytes], dict[str, bytes], str]:
    count = draw(st.integers(min_value=4, max_value=30))
    first = {f"pkg/mod_{i:03d}.py": draw(body()) for i in range(count)}
    second = dict(first)
    action = draw(st.sampled_from(["edit", "add", "remove"]))
    target = draw(st.sampled_from(sorted(first)))
    if action == "edit":
        second[target] = draw(body())
    elif action == "remove":
        del second[target]
    else:
        target = f"pkg/mod_{draw(st.integers(min_value=0, max_value=count)):03d}a.py"
        second[target] = draw(body())
        second = dict(sorted(second.items()))
    return first, second, target


def _plan(data: bytes, max_bytes: int) -> list[str]:
    selected = select(split_diff(data), max_bytes=10**9)
    result = plan(selected.data, selected.coverage, max_chunk_bytes=max_bytes)
    joined = b"".join(p.body for chunk in result.chunks for p in chunk.pieces)
    assert joined == selected.data  # joins back to exactly the selected diff
    assert all(0 < chunk.size <= max_bytes for chunk in result.chunks)
    return [chunk.sha for chunk in result.chunks]


@settings(max_examples=150, deadline=None)
@given(pushes(), st.integers(min_value=500, max_value=3000))
def test_one_file_changes_a_bounded_number_of_chunks(
    push: tuple[dict[str, bytes], dict[str, bytes], str], max_bytes: int
) -> None:
    first, second, target = push
    old_data, new_data = diff_of(first), diff_of(second)
    old_shas, new_shas = _plan(old_data, max_bytes), _plan(new_data, max_bytes)
    if len(old_data) <= max_bytes or len(new_data) <= max_bytes:
        return  # one whole chunk on either side: nothing to carry, nothing to bound
    old_segments = [
        tuple(p.data for p in seg) for seg in segments(pieces_of(old_data, max_bytes), max_bytes)
    ]
    new_pieces = pieces_of(new_data, max_bytes)
    new_segments = segments(new_pieces, max_bytes)
    changed = [seg for seg in new_segments if tuple(p.data for p in seg) not in old_segments]
    own = sum(1 for p in new_pieces if p.path == target)
    assert len(changed) <= max(1, own) + 1
    # every chunk outside the changed segments keeps its digest
    fresh = [sha for sha in new_shas if sha not in old_shas]
    if all(sum(len(p.data) for p in seg) <= max_bytes for seg in new_segments) and own <= 1:
        assert len(fresh) <= 2


def test_anchor_depends_on_identity_not_position() -> None:
    piece = Piece(path="pkg/a.py", data=b"x" * 500)
    moved = Piece(path="pkg/a.py", data=b"y" * 500)
    assert is_anchor(piece, 1000) == is_anchor(moved, 1000)  # same path, same size
    # about size / (SEGMENT_CHUNKS x max) of paths are anchors
    assert is_anchor(Piece(path="p", data=b"x" * SEGMENT_CHUNKS * 1000), 1000)
    share = sum(is_anchor(Piece(path=f"f{i}", data=b"x" * 400), 1000) for i in range(2000))
    expected = 2000 * 400 / (SEGMENT_CHUNKS * 1000)
    assert expected / 2 < share < expected * 1.5


def test_a_file_added_at_the_top_moves_no_chunk_outside_its_segment() -> None:
    files = {
        f"pkg/mod_{i:03d}.py": f"@@ -1,3 +1,3 @@\n-a{i}\n+b{i}\n c\n d\n".encode()
        for i in range(120)
    }
    before = _plan(diff_of(files), 600)
    new = diff_of({"aaa/new.py": b"@@ -0,0 +1 @@\n+x\n", **files})
    after = _plan(new, 600)
    assert len(before) > 10
    first = segments(pieces_of(new, 600), 600)[0]
    inside = {p.path for p in first}
    selected = select(split_diff(new), max_bytes=10**9)
    chunks = plan(selected.data, selected.coverage, max_chunk_bytes=600).chunks
    for chunk in chunks:
        if not {p.path for p in chunk.pieces} & inside:
            assert chunk.sha in before  # every chunk beyond the new file's segment is kept
    assert len(set(after) - set(before)) < len(before) // 4
