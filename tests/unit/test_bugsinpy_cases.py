"""examples/bugsinpy_cases.py: a fix reversed is the bug again (git apply is the oracle),
and a BugsInPy-shaped folder becomes a cases file that ``backtest`` reads."""

from __future__ import annotations

import json
from pathlib import Path

from examples.bugsinpy_cases import build, reverse
from gate.backtest.cases import from_file
from tests.gitrepo import git, git_bytes

BUGGY = "def total(items):\n    return sum(items) - 1\n\n\ndef name():\n    return 'x'\n"
FIXED = "def total(items):\n    return sum(items)\n\n\ndef name():\n    return 'x'\n\n\nNEW = 1\n"


def fix_patch(repo: Path) -> bytes:
    (repo / "calc.py").write_text(BUGGY)
    (repo / "gone.py").write_text("old = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "buggy")
    (repo / "calc.py").write_text(FIXED)
    (repo / "gone.py").unlink()
    (repo / "added.py").write_text("new = 2\n")
    git(repo, "add", "-A")
    return git_bytes(repo, "diff", "--cached")


def test_the_reversed_fix_applies_to_the_fixed_tree_and_gives_the_bug(git_repo: Path) -> None:
    patch = fix_patch(git_repo)
    git(git_repo, "commit", "-q", "-m", "fixed")
    (git_repo.parent / "bug.diff").write_bytes(reverse(patch))
    git(git_repo, "apply", "--index", str(git_repo.parent / "bug.diff"))
    assert (git_repo / "calc.py").read_text() == BUGGY
    assert (git_repo / "gone.py").read_text() == "old = 1\n"
    assert not (git_repo / "added.py").exists()
    assert reverse(reverse(patch)) == patch


def test_a_bugsinpy_folder_becomes_a_cases_file(tmp_path: Path, git_repo: Path) -> None:
    patch = fix_patch(git_repo)
    bug = tmp_path / "BugsInPy" / "projects" / "demo" / "bugs" / "1"
    bug.mkdir(parents=True)
    (bug / "bug_patch.txt").write_bytes(patch)
    out = tmp_path / "cases" / "bugsinpy.jsonl"
    out.parent.mkdir()
    assert build(tmp_path / "BugsInPy", out) == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["label"]) for r in rows] == [
        ("demo-1-bug", "block"),
        ("demo-1-fix", "allow"),
    ]
    plan = from_file(out)
    assert [c.load() for c in plan.cases] == [reverse(patch), patch]
