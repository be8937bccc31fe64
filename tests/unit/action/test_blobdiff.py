"""Sections built from blobs (gate/action/blobdiff.py), checked against git itself.

The oracle is ``git apply``: applying the section to the base blob must give the head
blob byte for byte, and ``split_diff`` must read the section as one file.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action import blobdiff
from gate.action.blobdiff import section_from_blobs
from gate.diff import select, split_diff

_LINES = st.lists(
    st.sampled_from([b"a\n", b"b\n", b"c\n", b"\n", b"x\r\n", b"d\x0ce\n"]), max_size=12
)


@st.composite
def blob(draw: st.DrawFn) -> bytes:
    lines = draw(_LINES)
    tail = draw(st.sampled_from([b"", b"end", b"z"]))
    return b"".join(lines) + tail


def _apply(old: bytes | None, section: bytes, path: str) -> bytes | None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=30)
        if old is not None:
            (root / path).write_bytes(old)
        (root / "change.diff").write_bytes(section)
        subprocess.run(
            ["git", "apply", "--whitespace=nowarn", "change.diff"],
            cwd=root,
            check=True,
            timeout=30,
            capture_output=True,
        )
        target = root / path
        return target.read_bytes() if target.exists() else None


@settings(max_examples=60, deadline=None)
@given(
    blob(),
    blob(),
    st.sampled_from(["modified", "added", "removed"]),
    st.sampled_from([None, 0, 4]),  # the default budget, or one that forces the one hunk
)
def test_git_apply_turns_base_into_head(
    old: bytes, new: bytes, kind: str, budget: int | None
) -> None:
    base = None if kind == "added" else old
    head = None if kind == "removed" else new
    with mock.patch.object(blobdiff, "MAX_DIFF_WORK", budget or blobdiff.MAX_DIFF_WORK):
        section = section_from_blobs("f.txt", base, head)
    if base == head:
        return
    parsed = split_diff(section.data)
    assert [s.path for s in parsed] == ["f.txt"]
    assert select(parsed).coverage.reviewed == ("f.txt",)
    assert _apply(base, section.data, "f.txt") == head


def test_binary_blob_is_a_binary_section() -> None:
    section = section_from_blobs("logo.png", b"\x89PNG\0\0", b"\x89PNG\0\1")
    assert section.binary
    assert split_diff(section.data)[0].binary


def test_a_change_difflib_aligns_at_the_middles_edge_still_applies() -> None:
    """Found by the fresh-clone run: difflib, given a window of the file, aligned a change
    onto the window's last line, and a hunk without trailing context is one git applies
    only at the end of the file."""
    old, new = b"a\na\na\na\na\n", b"b\na\na\na\na\n"
    assert _apply(old, section_from_blobs("f.txt", old, new).data, "f.txt") == new


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n"]), max_size=30),
    st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n"]), max_size=30),
)
def test_repetitive_files_apply_exactly(old_lines: list[bytes], new_lines: list[bytes]) -> None:
    """Few distinct lines, many repeats: where an aligner has the most equal choices."""
    old, new = b"".join(old_lines), b"".join(new_lines)
    if old == new:
        return
    assert _apply(old, section_from_blobs("f.txt", old, new).data, "f.txt") == new
