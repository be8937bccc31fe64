"""Class: path aliasing across nested work trees unlocks deletes (issue 8, section 6).

Cause: an apply found "its" marker in one folder only, ``state_top(--root)``,
the nearest ``.git`` above the root. A work tree nested in another (its own
repository, a submodule, a linked work tree) has its own top, so an
incomplete write recorded by ``--root lib`` in ``lib/.apply/incomplete`` was
invisible to ``--root .``: deleting ``lib/x.py`` succeeded, and deleting
``lib`` removed ``lib/.git`` and the marker with it, after which the hook let
commits through. The pre-commit check had the mirror-image blind spot: run in
a nested work tree, it never read a marker above its top that names its files.

Fix: a delete consults every marker from the target up to the file-system
root (whichever root wrote it, by resolved path and by inode, so a symlinked
or case-folded spelling does not get around it) and never deletes a folder
that holds ``.git`` or ``.apply`` at any depth, in any spelling a file system
folds to them. An incomplete write is recorded at the nearest work tree
holding the target, where that tree's hook and ``git status`` see it; a whole
write clears the target from every marker at every level. The check reads the
markers above its work tree and refuses when one names a path inside it.

Variants: nesting depth 1-3; the marker at each level (left by an apply with
``--root`` there, or planted as an older version or a root outside a work
tree leaves it); ``--root`` of the delete at each other level; a delete of the
file, of its folder, of each nested work tree holding it; the path spelt
plainly, with ``./`` and ``//``, through a symlink, and through a name that
differs only in case (a symlink here: Linux is case-sensitive; on a
case-folding file system it is the same folder); ``.git`` folders and
``gitdir:`` files. Every generated variant fails on the code before the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.apply import Outcome, apply_tool_result, read_marker
from gate.apply import precommit as hooks
from gate.cli import main

OLD = b"old = 1\n"
NEW = b"def f():\n    return 'new'\n"
SPELLINGS = ("plain", "dotted", "symlink", "case")
#: Names a file system folds to .git or .apply (case, trailing dots and spaces, NTFS
#: 8.3 short names and stream suffixes, code points HFS+ ignores).
FOLDED = (
    ".git",
    ".GIT",
    ".Git.",
    ".git ",
    "git~1",
    "GIT~1",
    ".g\u200cit",
    ".git::$INDEX_ALLOCATION",
    ".apply",
    ".APPLY",
    ".apply.",
    "apply~1",
)


@pytest.fixture
def base(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs where there is one (hundreds of applies, each fsyncing a marker)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="rg-nested-") as name:
        yield Path(name).resolve()


def write_result(content: bytes, path: str, promised: bytes = NEW) -> bytes:
    return json.dumps(
        {
            "tool": "write_file",
            "path": path,
            "content_length": len(promised),
            "sha256": hashlib.sha256(promised).hexdigest(),
            "encoding": "utf-8",
            "content": content.decode(),
            "apply_id": "cut-nested",
        }
    ).encode()


def delete_result(path: str) -> bytes:
    return json.dumps({"tool": "delete_path", "path": path}).encode()


def make_tree(folder: Path, kind: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        (folder / ".git").mkdir()
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    else:  # a submodule or a linked work tree
        (folder / ".git").write_text(f"gitdir: /elsewhere/modules/{folder.name}\n")


def build(base: Path, depth: int, gitkind: str) -> list[Path]:
    """Work trees w0 / n1 / ... / n<depth>, each its own; the file is n<depth>/pkg/x.py."""
    levels = [base / "w0"]
    make_tree(levels[0], "folder")
    for index in range(1, depth + 1):
        levels.append(levels[-1] / f"n{index}")
        make_tree(levels[-1], gitkind)
    (levels[-1] / "pkg").mkdir()
    (levels[-1] / "pkg" / "x.py").write_bytes(OLD)
    return levels


def plant(folder: Path, path: str) -> None:
    """A marker as an older version, or an apply with its root at ``folder``, left it."""
    (folder / ".apply").mkdir(exist_ok=True)
    entry = {"apply_id": "cut-nested", "path": path, "reason": "length_short", "time": "t"}
    doc = {"version": 1, "entries": [entry]}
    (folder / ".apply" / "incomplete").write_text(json.dumps(doc))


def spell(root: Path, target: Path, spelling: str) -> str | None:
    """``target`` relative to ``root`` as ``spelling`` writes it (None: no such spelling)."""
    parts = target.relative_to(root).parts
    if spelling == "plain":
        return "/".join(parts)
    if spelling == "dotted":
        return "./" + "//".join(parts)
    if len(parts) < 2:
        return None  # the alias would be the target itself: deleting a link is allowed
    alias = "alias" if spelling == "symlink" else parts[0].swapcase()
    (root / alias).symlink_to(parts[0], target_is_directory=True)
    return "/".join((alias, *parts[1:]))


def listing(levels: list[Path], file: Path) -> list[str]:
    """Every marker entry, at any level, that names ``file``."""
    found = []
    for folder in levels:
        for entry in read_marker(folder):
            if (folder / entry.path).resolve() == file.resolve():
                found.append(f"{folder.name}:{entry.path}")
    return found


def git_dirs_intact(levels: list[Path]) -> bool:
    return all(os.path.lexists(level / ".git") for level in levels)


# --- deletes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DeleteCase:
    depth: int
    marker: int  # the level whose .apply/incomplete lists the file
    root: int  # the level given as --root to the delete (never the marker's)
    target: str  # file | dir | tree<k>: the file, its folder, the nested work tree n<k>
    spelling: str
    source: str  # apply (an incomplete write with --root at the marker's level) | planted
    gitkind: str

    def __str__(self) -> str:
        return (
            f"d{self.depth}-m{self.marker}-r{self.root}-{self.target}-{self.spelling}-"
            f"{self.source}-{self.gitkind}"
        )


def delete_cases() -> list[DeleteCase]:
    cases: list[DeleteCase] = []
    for depth in (1, 2, 3):
        for marker in range(depth + 1):
            for root in range(depth + 1):
                if root == marker:
                    continue  # the old code saw this one marker; every case here crosses a tree
                targets = {"file": depth - root + 2, "dir": depth - root + 1}
                targets.update({f"tree{k}": k - root for k in range(root + 1, depth + 1)})
                for target, parts in targets.items():
                    for spelling in SPELLINGS:
                        if spelling in ("symlink", "case") and parts < 2:
                            continue  # the alias would be the target: deleting a link is allowed
                        for source in ("apply", "planted"):
                            gitkind = ("folder", "gitfile")[len(cases) % 2]
                            case = DeleteCase(
                                depth, marker, root, target, spelling, source, gitkind
                            )
                            cases.append(case)
    return cases


def target_path(levels: list[Path], target: str) -> Path:
    if target == "file":
        return levels[-1] / "pkg" / "x.py"
    if target == "dir":
        return levels[-1] / "pkg"
    return levels[int(target.removeprefix("tree"))]


@pytest.mark.parametrize("case", delete_cases(), ids=str)
def test_no_delete_across_nested_work_trees_destroys_an_incomplete_write(
    base: Path, case: DeleteCase
) -> None:
    levels = build(base, case.depth, case.gitkind)
    file = levels[-1] / "pkg" / "x.py"
    marker_root = levels[case.marker]
    rel = file.relative_to(marker_root).as_posix()
    if case.source == "apply":
        made = apply_tool_result(write_result(NEW[:3], rel), marker_root)
        assert made.outcome is Outcome.INCOMPLETE
    else:
        plant(marker_root, rel)
    root = levels[case.root]
    spelt = spell(root, target_path(levels, case.target), case.spelling)
    assert spelt is not None
    result = apply_tool_result(delete_result(spelt), root)
    assert (result.outcome, result.reason) in (
        (Outcome.REFUSED, "incomplete_pending"),
        (Outcome.REFUSED, "reserved_inside"),
    ), result.detail
    assert file.read_bytes() == OLD
    assert git_dirs_intact(levels)
    assert listing(levels, file), "the record of the incomplete write is gone"
    if result.reason == "incomplete_pending":
        assert result.marker is not None
        assert "do not delete it" in result.detail
        assert "forbidden_tools=delete_path,git_rm" in result.hints()


@dataclass(frozen=True)
class FoldedCase:
    name: str
    as_dir: bool
    depth: int  # how deep below the deleted folder the reserved entry sits

    def __str__(self) -> str:
        kind = "dir" if self.as_dir else "file"
        return f"{self.name.encode('unicode_escape').decode()}-{kind}-depth{self.depth}"


@pytest.mark.parametrize(
    "case",
    [FoldedCase(n, d, k) for n in FOLDED for d in (True, False) for k in (1, 2, 3)],
    ids=str,
)
def test_a_folder_holding_git_or_apply_in_any_spelling_is_never_deleted(
    base: Path, case: FoldedCase
) -> None:
    root = base / "w"
    make_tree(root, "folder")
    folder = root / "vendor"
    holder = folder.joinpath(*(f"s{i}" for i in range(1, case.depth)))
    holder.mkdir(parents=True)
    (folder / "keep.py").write_bytes(OLD)
    entry = holder / case.name
    if case.as_dir:
        entry.mkdir()
        (entry / "HEAD").write_text("ref: refs/heads/main\n")
    else:
        entry.write_text("gitdir: /elsewhere\n")
    result = apply_tool_result(delete_result("vendor"), root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "reserved_inside")
    assert "vendor/" in result.detail
    assert os.path.lexists(entry)
    assert (folder / "keep.py").read_bytes() == OLD


def test_the_issue_sequence_is_refused_and_the_hook_still_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported sequence, through the CLI, with real git repositories."""
    outer = tmp_path / "outer"
    lib = outer / "lib"
    lib.mkdir(parents=True)
    git(outer, "init", "-q", "-b", "main")
    git(lib, "init", "-q", "-b", "main")
    (lib / "x.py").write_bytes(OLD)
    (tmp_path / "w.json").write_bytes(write_result(NEW[:3], "x.py"))
    (tmp_path / "d1.json").write_bytes(delete_result("lib/x.py"))
    (tmp_path / "d2.json").write_bytes(delete_result("lib"))
    assert main(["apply", "--root", str(lib), str(tmp_path / "w.json")]) == 1
    assert main(["apply", "--root", str(outer), str(tmp_path / "d1.json")]) == 3
    assert main(["apply", "--root", str(outer), str(tmp_path / "d2.json")]) == 3
    out = capsys.readouterr().out
    assert out.count("apply.reason=incomplete_pending") == 2
    assert (lib / "x.py").read_bytes() == OLD
    assert (lib / ".git").is_dir()
    assert hooks.check(outer).blocked
    assert hooks.check(lib).blocked


# --- writes ----------------------------------------------------------------------------


def write_cases() -> list[tuple[int, int, str]]:
    return [
        (depth, root, spelling)
        for depth in (1, 2, 3)
        for root in range(depth)  # a root above the nested tree holding the file
        for spelling in SPELLINGS
    ]


@pytest.mark.parametrize(("depth", "root", "spelling"), write_cases())
def test_an_incomplete_write_is_recorded_in_the_nested_tree_holding_the_file(
    base: Path, depth: int, root: int, spelling: str
) -> None:
    levels = build(base, depth, "folder")
    file = levels[-1] / "pkg" / "x.py"
    spelt = spell(levels[root], file, spelling)
    assert spelt is not None
    result = apply_tool_result(write_result(NEW[:3], spelt), levels[root])
    assert result.outcome is Outcome.INCOMPLETE
    assert [e.path for e in read_marker(levels[-1])] == ["pkg/x.py"]
    assert result.marker == str(levels[-1] / ".apply" / "incomplete")
    assert not os.path.lexists(levels[root] / ".apply" / "incomplete")
    assert apply_tool_result(delete_result("pkg/x.py"), levels[-1]).reason == ("incomplete_pending")


def clear_cases() -> list[tuple[int, int, int, str]]:
    return [
        (depth, marker, root, spelling)
        for depth in (1, 2, 3)
        for marker in range(depth + 1)
        for root in range(depth + 1)
        if marker != root
        for spelling in SPELLINGS
    ]


@pytest.mark.parametrize(("depth", "marker", "root", "spelling"), clear_cases())
def test_a_whole_write_clears_the_entry_at_every_level(
    base: Path, depth: int, marker: int, root: int, spelling: str
) -> None:
    levels = build(base, depth, "folder")
    file = levels[-1] / "pkg" / "x.py"
    plant(levels[marker], file.relative_to(levels[marker]).as_posix())
    spelt = spell(levels[root], file, spelling)
    assert spelt is not None
    result = apply_tool_result(write_result(NEW, spelt), levels[root])
    assert result.outcome is Outcome.OK, result.detail
    assert result.marker is None
    assert listing(levels, file) == []
    assert file.read_bytes() == NEW


# --- the pre-commit check ----------------------------------------------------------------


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return env


def git(repo: Path, *args: str, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
        env=git_env(repo.parent),
        **kw,
    )


def git_levels(base: Path, depth: int) -> list[Path]:
    """Real repositories w0 / n1 / ... nested in each other; the file is n<depth>/pkg/x.py."""
    levels = [base / "w0"]
    for index in range(1, depth + 1):
        levels.append(levels[-1] / f"n{index}")
    for level in levels:
        level.mkdir(parents=True, exist_ok=True)
        git(level, "init", "-q", "-b", "main")
    (levels[-1] / "pkg").mkdir()
    (levels[-1] / "pkg" / "x.py").write_bytes(OLD)
    git(levels[-1], "add", "pkg/x.py")
    git(levels[-1], "commit", "-q", "-m", "init")
    return levels


def check_cases() -> list[tuple[int, int, int]]:
    """(depth, marker level, checked level) with the marker above the checked work tree."""
    return [
        (depth, marker, checked)
        for depth in (1, 2, 3)
        for marker in range(depth + 1)
        for checked in range(marker + 1, depth + 1)
    ]


@pytest.mark.parametrize(("depth", "marker", "checked"), check_cases())
def test_the_check_of_a_nested_work_tree_reads_markers_above_it(
    tmp_path: Path, depth: int, marker: int, checked: int
) -> None:
    levels = git_levels(tmp_path, depth)
    file = levels[-1] / "pkg" / "x.py"
    plant(levels[marker], file.relative_to(levels[marker]).as_posix())
    report = hooks.check(levels[checked])
    assert report.blocked
    inside = file.relative_to(levels[checked]).as_posix()
    assert any(f"apply_id=cut-nested path={inside} " in line for line in report.messages)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_installed_hook_of_a_nested_work_tree_refuses_its_commit(
    tmp_path: Path, depth: int
) -> None:
    levels = git_levels(tmp_path, depth)
    inner = levels[-1]
    hooks.install(inner)
    plant(levels[0], (inner / "pkg" / "x.py").relative_to(levels[0]).as_posix())
    git(inner, "rm", "-q", "pkg/x.py")
    done = git(inner, "commit", "-m", "drop x", check=False)
    assert done.returncode != 0
    assert "staged deletion refused: path=pkg/x.py apply_id=cut-nested" in done.stderr
    assert git(inner, "rev-list", "--count", "HEAD").stdout.strip() == "1"


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_without_python_a_marker_above_refuses_the_commit(tmp_path: Path, depth: int) -> None:
    levels = git_levels(tmp_path, depth)
    inner = levels[-1]
    plant(levels[0], (inner / "pkg" / "x.py").relative_to(levels[0]).as_posix())
    hook = inner / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(hooks.render_hook("/nonexistent/python3"))
    only = tmp_path / "bin"
    only.mkdir()
    for tool in ("git", "find"):
        found = shutil.which(tool)
        assert found is not None
        (only / tool).symlink_to(found)
    done = subprocess.run(
        ["/bin/sh", str(hook)],
        cwd=inner,
        capture_output=True,
        text=True,
        timeout=60,
        env=git_env(tmp_path) | {"PATH": str(only)},
    )
    assert done.returncode == 1
    assert str(levels[0] / ".apply" / "incomplete") in done.stderr


def test_a_marker_above_for_a_path_outside_does_not_block(tmp_path: Path) -> None:
    """Not a hole (passes before the fix too): the check refuses only for its own files."""
    levels = git_levels(tmp_path, 1)
    plant(levels[0], "elsewhere/y.py")
    report = hooks.check(levels[1])
    assert not report.blocked, report.messages
