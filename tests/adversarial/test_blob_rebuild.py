"""Class: a section rebuilt from blobs that is not what ``git diff base...head`` shows.

Cause: for a file GitHub sent no patch for, the rebuild (``gate.action.blobdiff``) always
wrote ``new file mode 100644``, never ``old mode``/``new mode``, and equal blobs gave a
bare ``diff --git`` line: a mode-only change (100644 -> 100755) was "reviewed" as an empty
section, a new symlink or executable was shown as a text file, and a copy was written as
a rename. And it diffed against the base *tip*, where every patch and the file list are
relative to the merge base: with a base that moved on, the reviewer saw the pull request
"revert" the base's later changes.

Fix: modes, types and sizes from the trees of the comparison's ``merge_base_commit`` and
of ``head`` (:mod:`gate.action.blobfetch`), git's header lines
(:func:`gate.action.blobdiff.section_from_blobs`: ``new file mode`` with the real mode,
``old mode``/``new mode``, ``copy from/to``, a symlink's target, a submodule's
``Subproject commit``); a type change, or a side that cannot be read, is left
unreviewed (``no_patch``), never shown as something else.

Oracle: real ``git diff`` on generated repositories (``index``/``similarity`` lines aside,
which the rebuild does not write), one repository per kind of change, each with a base
that moved on after the merge base.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.action.blobfetch import Side, rebuild
from gate.diff import FileSection, name_of, sections_from_files, split_diff
from tests.gitrepo import git, git_bytes

LINES = b"".join(b"line %d of the file\n" % i for i in range(40))
STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "C": "copied"}


def _write(repo: Path, path: str, data: bytes, mode: int = 0o644) -> None:
    full = repo / path
    full.parent.mkdir(parents=True, exist_ok=True)
    if full.is_symlink() or full.exists():
        full.unlink()
    full.write_bytes(data)
    full.chmod(mode)


def _link(repo: Path, path: str, target: str) -> None:
    full = repo / path
    full.parent.mkdir(parents=True, exist_ok=True)
    if full.is_symlink() or full.exists():
        full.unlink()
    os.symlink(target, full)


def _submodule(repo: Path, path: str, commit: str) -> None:
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},{path}")


# each case: (name, base commit, change on the head branch); every case also moves the base
def _cases() -> list[tuple[str, Any, Any]]:
    def mode_only(r: Path) -> None:
        _write(r, "bin/tool.sh", LINES, 0o755)

    def new_exec(r: Path) -> None:
        _write(r, "bin/new.sh", b"#!/bin/sh\necho hi\n", 0o755)

    def new_link(r: Path) -> None:
        _link(r, "docs/link", "../src/app.py")

    def retarget(r: Path) -> None:
        _link(r, "cfg/current", "prod.yml")

    def rename_mode(r: Path) -> None:
        (r / "src/old.py").unlink()
        _write(r, "src/new.py", LINES.replace(b"line 3 ", b"LINE 3 "), 0o755)

    def copy(r: Path) -> None:
        _write(r, "src/copy.py", (r / "src/app.py").read_bytes())

    def delete_exec(r: Path) -> None:
        (r / "bin/tool.sh").unlink()

    def both_moved(r: Path) -> None:
        _write(r, "src/app.py", (r / "src/app.py").read_bytes().replace(b"line 30 ", b"HEAD 30 "))

    def empty(r: Path) -> None:
        _write(r, "src/empty.py", b"")

    def binary_mode(r: Path) -> None:
        _write(r, "img/logo.png", b"\x89PNG\0\x01\x02", 0o755)

    return [
        (f.__name__, f, None)
        for f in (
            mode_only, new_exec, new_link, retarget, rename_mode, copy, delete_exec,
            both_moved, empty, binary_mode,
        )
    ]  # fmt: skip


from typing import Any  # noqa: E402


def _base(r: Path) -> None:
    _write(r, "src/app.py", LINES)
    _write(r, "src/old.py", LINES)
    _write(r, "bin/tool.sh", LINES)
    _write(r, "img/logo.png", b"\x89PNG\0\x01\x02")
    _write(r, "cfg/prod.yml", b"a: 1\n")
    _link(r, "cfg/current", "dev.yml")


def _tree(repo: Path, rev: str) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for record in git_bytes(repo, "ls-tree", "-r", "-l", "-z", rev).split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, oid, size = meta.split()
        out[name_of(path)] = Side(
            oid.decode(), mode.decode(), 0 if kind == b"commit" else int(size)
        )
    return out


def _entries(repo: Path, base: str, head: str) -> list[dict[str, Any]]:
    raw = git_bytes(
        repo, "diff", "-z", "--name-status", "-M", "-C", "--find-copies-harder", base, head
    ).split(b"\0")
    tree = _tree(repo, head)
    entries: list[dict[str, Any]] = []
    i = 0
    while i < len(raw) - 1:
        status = raw[i].decode()
        if status[0] in "RC":
            old, new = name_of(raw[i + 1]), name_of(raw[i + 2])
            i += 3
        else:
            old = new = name_of(raw[i + 1])
            i += 2
        entry: dict[str, Any] = {"filename": new, "status": STATUS.get(status[0], "changed")}
        if old != new:
            entry["previous_filename"] = old
        if new in tree and entry["status"] != "removed":
            entry["sha"] = tree[new].oid
        entries.append(entry)
    return entries


def _without_index(data: bytes) -> bytes:
    """A git section without the lines the rebuild does not write."""
    skip = (b"index ", b"similarity index ", b"dissimilarity index ")
    out, body = [], False
    for line in data.splitlines(keepends=True):
        body = body or line.startswith((b"@@", b"Binary files", b"GIT binary"))
        if body or not line.startswith(skip):
            out.append(line)
    return b"".join(out)


@pytest.mark.parametrize("case", _cases(), ids=[c[0] for c in _cases()])
def test_a_rebuilt_section_is_what_git_shows(tmp_path: Path, case: tuple[str, Any, Any]) -> None:
    name, change, _ = case
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    _base(repo)
    _submodule(repo, "vendor/lib", "1" * 40)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "merge base")
    merge_base = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "checkout", "-q", "-b", "pr")
    change(repo)
    if name == "mode_only":
        _submodule(repo, "vendor/lib", "2" * 40)  # and a submodule moved
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the pull request")
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "checkout", "-q", "-")
    # the base moves on: later changes the pull request never made
    _write(repo, "src/app.py", LINES.replace(b"line 5 ", b"BASE 5 "))
    _write(repo, "src/later.py", b"added on the base later\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the base moves on")
    tip = git(repo, "rev-parse", "HEAD").stdout.strip()

    shown = split_diff(
        git_bytes(repo, "diff", "-M", "-C", "--find-copies-harder", f"{tip}...{head}")
    )
    entries = _entries(repo, merge_base, head)
    sections = sections_from_files(entries)
    assert all(s.no_patch for s in sections)
    trees = (_tree(repo, merge_base), _tree(repo, head))

    def blob(oid: str) -> bytes:
        return git_bytes(repo, "cat-file", "blob", oid)

    count = rebuild(entries, sections, trees=lambda: trees, blob=blob, budget=None)
    by_path: dict[str, list[FileSection]] = {}
    for section in shown:
        by_path.setdefault(section.path, []).append(section)
    assert count.requests <= 2 + 2 * len(entries)
    for entry, section in zip(entries, sections, strict=True):
        expected = by_path[entry["filename"]]
        if len(expected) > 1 or entry["status"] == "changed":
            # a type change: git shows a deletion and an addition; never rebuilt as one
            assert section.no_patch, (name, entry)
            continue
        assert not section.no_patch, (name, entry, count.left)
        assert section.data == _without_index(expected[0].data), (name, entry)
        assert section.old_path == expected[0].old_path
