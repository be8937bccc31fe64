"""The lab sequence of issue 5, end to end, with the real CLI and real git.

In a git repository in a temporary folder, with the guard installed by
``review-gate hooks install``: a partial write is refused, the delete that
would follow it is refused, ``git commit`` is refused by the installed hook,
the full write applies, the marker is cleared and the commit goes through.
``git status`` never shows a deleted tracked file, and shows the marker as
untracked exactly while it exists.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gate.decide.envelope
from tests.gitrepo import git_env

REPO_ROOT = Path(__file__).resolve().parents[3]


def env(home: Path) -> dict[str, str]:
    return git_env(home) | {"PYTHONPATH": str(REPO_ROOT)}


def sh(cwd: Path, *argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        list(argv), cwd=cwd, input=stdin, capture_output=True, timeout=120, env=env(cwd.parent)
    )


def review_gate(
    repo: Path, *argv: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return sh(repo, sys.executable, "-m", "gate", *argv, stdin=stdin)


def tool_result(content: bytes, *, promised: bytes, **extra: Any) -> bytes:
    return json.dumps(
        {
            "tool": "write_file",
            "path": "src/mod.py",
            "content_length": len(promised),
            "sha256": hashlib.sha256(promised).hexdigest(),
            "encoding": "utf-8",
            "content": content.decode("utf-8"),
            **extra,
        }
    ).encode()


def assert_no_deleted_tracked_file(repo: Path, *, marker: bool) -> str:
    """No tracked file shows as deleted; the marker shows (untracked) exactly while it exists."""
    status = sh(repo, "git", "status", "--porcelain=v1", "--untracked-files=all").stdout.decode()
    for line in status.splitlines():
        assert "D" not in line[:2], status
    apply_lines = [line for line in status.splitlines() if ".apply" in line]
    assert apply_lines == (["?? .apply/incomplete"] if marker else []), status
    return status


def test_lab_sequence(tmp_path: Path) -> None:
    repo = tmp_path / "lab"
    repo.mkdir()
    old = b"def answer():\n    return 41\n"
    new = Path(gate.decide.envelope.__file__).read_bytes()
    assert sh(repo, "git", "init", "-q", "-b", "main").returncode == 0
    (repo / "src").mkdir()
    (repo / "src" / "mod.py").write_bytes(old)
    (repo / "README").write_text("lab\n")
    sh(repo, "git", "add", "src/mod.py", "README")
    assert sh(repo, "git", "commit", "-q", "-m", "init").returncode == 0
    installed = review_gate(repo, "hooks", "install", "--root", ".")
    assert installed.returncode == 0, installed.stderr
    assert_no_deleted_tracked_file(repo, marker=False)

    # 1. a partial write (the stream was cut) is refused: nothing on disk changes
    cut = new[: len(new) // 3]
    part = review_gate(
        repo,
        "apply",
        "-",
        "--root",
        ".",
        stdin=tool_result(cut, promised=new, stream_end_reason="socket_close", apply_id="lab-1"),
    )
    assert part.returncode == 1, part.stderr
    assert part.stdout.decode().splitlines() == [
        "apply.incomplete=true",
        "forbidden_tools=delete_path,git_rm",
        "required_next=retry_apply_or_abort",
        "apply.detail=the stream ended by socket_close, not its trailer; nothing was written; "
        "the target keeps its old bytes",
    ]
    (log,) = part.stderr.decode().splitlines()  # exactly one log line
    assert log.startswith(f"apply path=src/mod.py promised={len(new)} written=0 end=socket_close ")
    assert " incomplete=true digest_ok=false " in log
    assert (repo / "src" / "mod.py").read_bytes() == old
    marker = json.loads((repo / ".apply" / "incomplete").read_text())
    assert [(e["apply_id"], e["path"]) for e in marker["entries"]] == [("lab-1", "src/mod.py")]
    assert not list((repo / "src").glob(".*"))  # no temporary file left
    assert_no_deleted_tracked_file(repo, marker=True)

    # 2. the delete an agent loop would try next is refused, naming the apply
    delete = review_gate(
        repo, "apply", "-", "--root", ".", "--json",
        stdin=json.dumps({"tool": "delete_path", "path": "src/mod.py"}).encode(),
    )  # fmt: skip
    assert delete.returncode == 3
    record = json.loads(delete.stdout)
    assert record["apply.refused"] is True
    assert record["reason"] == "incomplete_pending"
    assert "apply_id=lab-1" in record["detail"]
    assert (repo / "src" / "mod.py").read_bytes() == old
    assert_no_deleted_tracked_file(repo, marker=True)

    # 3. git commit is refused by the installed hook, naming apply id and path
    (repo / "README").write_text("lab, changed\n")
    sh(repo, "git", "add", "README")
    head = sh(repo, "git", "rev-parse", "HEAD").stdout
    refused = sh(repo, "git", "commit", "-m", "would hide a cut write")
    assert refused.returncode != 0
    assert b"apply_id=lab-1 path=src/mod.py" in refused.stderr
    assert sh(repo, "git", "rev-parse", "HEAD").stdout == head
    assert_no_deleted_tracked_file(repo, marker=True)

    # 4. the full write applies byte-exactly
    full = review_gate(
        repo, "apply", "-", "--root", ".", "--json",
        stdin=tool_result(new, promised=new, stream_end_reason="trailer", apply_id="lab-2"),
    )  # fmt: skip
    assert full.returncode == 0, full.stderr
    record = json.loads(full.stdout)
    assert record["apply.ok"] is True
    assert record["bytes_written"] == len(new)
    assert (repo / "src" / "mod.py").read_bytes() == new

    # 5. the marker is cleared
    assert not (repo / ".apply" / "incomplete").exists()
    assert record["marker"] is None
    assert_no_deleted_tracked_file(repo, marker=False)

    # 6. the commit goes through, with the new bytes
    sh(repo, "git", "add", "src/mod.py", "README")
    done = sh(repo, "git", "commit", "-q", "-m", "apply lab-2")
    assert done.returncode == 0, done.stderr
    assert sh(repo, "git", "show", "HEAD:src/mod.py").stdout == new
    assert_no_deleted_tracked_file(repo, marker=False)
    assert sh(repo, "git", "status", "--porcelain").stdout == b""


def test_an_incomplete_apply_from_a_subfolder_blocks_a_commit_from_anywhere(
    tmp_path: Path,
) -> None:
    """``apply`` from a subfolder (``--root`` defaults to it): the installed hook still sees it."""
    repo = tmp_path / "lab"
    sub = repo / "pkg" / "deep"
    sub.mkdir(parents=True)
    old = b"kept = True\n"
    new = b"kept = False\n"
    assert sh(repo, "git", "init", "-q", "-b", "main").returncode == 0
    (sub / "mod.py").write_bytes(old)
    (repo / "README").write_text("lab\n")
    sh(repo, "git", "add", "pkg/deep/mod.py", "README")
    assert sh(repo, "git", "commit", "-q", "-m", "init").returncode == 0
    assert review_gate(repo, "hooks", "install").returncode == 0

    def write(content: bytes, apply_id: str) -> subprocess.CompletedProcess[bytes]:
        doc = json.loads(tool_result(content, promised=new, apply_id=apply_id))
        doc["path"] = "mod.py"
        return review_gate(sub, "apply", "-", stdin=json.dumps(doc).encode())

    assert write(new[:4], "sub-1").returncode == 1
    assert (sub / "mod.py").read_bytes() == old
    assert not (sub / ".apply").exists()
    marker = json.loads((repo / ".apply" / "incomplete").read_text())
    assert [(e["apply_id"], e["path"]) for e in marker["entries"]] == [("sub-1", "pkg/deep/mod.py")]

    (repo / "README").write_text("lab, changed\n")
    sh(repo, "git", "add", "README")
    head = sh(repo, "git", "rev-parse", "HEAD").stdout
    for where in (sub, repo / "pkg", repo):
        refused = sh(where, "git", "commit", "-m", "would hide a cut write")
        assert refused.returncode != 0, where
        assert b"apply_id=sub-1 path=pkg/deep/mod.py" in refused.stderr
    assert sh(repo, "git", "rev-parse", "HEAD").stdout == head
    check = review_gate(sub, "hooks", "check")
    assert check.returncode == 3
    assert b"path=pkg/deep/mod.py" in check.stderr

    assert write(new, "sub-2").returncode == 0
    assert not (repo / ".apply" / "incomplete").exists()
    sh(repo, "git", "add", "pkg/deep/mod.py")
    done = sh(sub, "git", "commit", "-q", "-m", "apply sub-2")
    assert done.returncode == 0, done.stderr
    assert sh(repo, "git", "show", "HEAD:pkg/deep/mod.py").stdout == new


def test_a_commit_past_the_hook_carries_the_marker_for_the_action_to_see(tmp_path: Path) -> None:
    """``git commit --no-verify`` skips the hook; the marker goes into the tree, not the lock."""
    repo = tmp_path / "lab"
    repo.mkdir()
    new = b"x = 2\n"
    assert sh(repo, "git", "init", "-q", "-b", "main").returncode == 0
    (repo / "src").mkdir()
    (repo / "src" / "mod.py").write_bytes(b"x = 1\n")
    sh(repo, "git", "add", "src/mod.py")
    assert sh(repo, "git", "commit", "-q", "-m", "init").returncode == 0
    assert review_gate(repo, "hooks", "install").returncode == 0
    part = review_gate(repo, "apply", "-", stdin=tool_result(new[:2], promised=new))
    assert part.returncode == 1
    assert sh(repo, "git", "add", "-A").returncode == 0
    assert sh(repo, "git", "commit", "-q", "-m", "hook skipped").returncode != 0
    done = sh(repo, "git", "commit", "-q", "--no-verify", "-m", "hook skipped")
    assert done.returncode == 0, done.stderr
    tree = sh(repo, "git", "ls-tree", "-r", "--name-only", "HEAD").stdout.decode().split()
    assert ".apply/incomplete" in tree  # what the action's head-tree guard looks for
    assert ".apply/lock" not in tree
    assert ".apply/.gitignore" not in tree
