"""Class: a file name written raw into the diff the reviewer reads.

Cause: when GitHub refuses the diff (406, too large), the gate rebuilds each file's
section from the files API (``gate.diff.sections_from_files``), which gives names raw.
The header was written with the raw name: ``diff --git a/{old} b/{path}``, ``---``,
``+++``, ``rename from/to``. A pull request's file named
``x\\ndiff --git a/docs/y b/docs/y`` (git allows any byte but NUL in a name) wrote
lines of its own into the diff: a forged file header, a forged hunk, a CR that
redraws a line, in front of the reviewer and inside the bytes ``diff_sha`` names;
split again, the section was several files. The diff media type never does this:
git quotes such names (``"x\\ndiff..."``).

Fix: the fallback writes names as git does (``gate.diff.git_quote``: C-quoted when a
name holds a quote, a backslash, a control or a non-ASCII character; a tab after a
``---``/``+++`` name with a space), so both sources give the reviewer the same bytes.

Oracle: git itself. Hypothesis generates names from an alphabet of every character git
treats specially; for each, a real repository's ``git diff`` (its ``index`` line left
out, as the files API has none) must equal the rebuilt section byte for byte, and
:func:`gate.diff.split_diff` must read the rebuilt section back as one file of that name.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.diff import sections_from_files, split_diff

SPECIAL = ["\n", "\r", "\t", " ", '"', "\\", "\x1b", "\x7f", "\x01", "é", "\u2028", "日"]
NAME_CHARS = st.sampled_from(SPECIAL) | st.sampled_from(list("abcXYZ019._-"))
names = (
    st.lists(NAME_CHARS, min_size=1, max_size=12)
    .map("".join)
    .filter(lambda n: n not in (".", "..") and not n.startswith("-") and n.strip() == n)
)
# a name that would write a header of its own without quoting
FORGING = [
    "x\ndiff --git a/docs/y b/docs/y",
    "x\n@@ -0,0 +1 @@\n+import os",
    "x\n+++ b/docs/readme.md",
    "ok.py\rdiff --git a/z b/z",
]


def _git(repo: Path, *args: str) -> bytes:
    done = subprocess.run(
        ["git", "-c", "core.quotePath=true", *args],
        cwd=repo,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def _git_sections(files: list[str]) -> dict[str, bytes]:
    """``git diff`` of changing each file's one line a -> b, per file, without ``index``."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        _git(repo, "init", "-q")
        for name in files:
            (repo / name).write_bytes(b"a\n")
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
        for name in files:
            (repo / name).write_bytes(b"b\n")
        raw = _git(repo, "diff", "--no-color", "--no-ext-diff")
    out = {}
    for section in split_diff(raw):
        lines = section.data.split(b"\n")
        kept = b"\n".join(line for line in lines if not line.startswith(b"index "))
        out[section.path] = kept
    return out


def _rebuilt(name: str) -> bytes:
    entry = {"filename": name, "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"}
    (section,) = sections_from_files([entry])
    return section.data


@settings(max_examples=40, deadline=None)
@given(st.lists(names, min_size=1, max_size=6, unique=True))
def test_rebuilt_sections_are_what_git_writes(files: list[str]) -> None:
    by_git = _git_sections(files)
    assert sorted(by_git) == sorted(files)
    for name in files:
        assert _rebuilt(name) == by_git[name], name


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(FORGING) | names,
    st.sampled_from(["modified", "added", "removed", "renamed"]),
    st.sampled_from(FORGING) | names,
)
def test_a_rebuilt_section_reads_back_as_one_file(name: str, status: str, old: str) -> None:
    entry = {"filename": name, "status": status, "patch": "@@ -1 +1 @@\n-a\n+b"}
    if status == "renamed":
        entry["previous_filename"] = old
    (section,) = sections_from_files([entry])
    again = split_diff(section.data)
    assert [s.path for s in again] == [name]
    assert again[0].data == section.data
    if status == "renamed" and old != name:
        assert again[0].old_path == old
