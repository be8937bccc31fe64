"""Unit tests for gate/apply/precommit.py: the hook text, install/chain/uninstall, the check.

Each test uses a real ``git init`` repository in a temporary folder and real
``git commit`` runs of the installed hook.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.apply import precommit as hooks
from gate.cli import build_parser, main
from gate.errors import UsageError
from tests.gitrepo import git, git_env

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def repo(git_repo: Path) -> Path:
    """The shared git repository (tests/conftest.py) with mod.py and other.py committed."""
    (git_repo / "mod.py").write_text("x = 1\n")
    (git_repo / "other.py").write_text("y = 1\n")
    git(git_repo, "add", "mod.py", "other.py")
    git(git_repo, "commit", "-q", "-m", "init")
    return git_repo


def mark(repo: Path, *entries: tuple[str, str]) -> None:
    (repo / ".apply").mkdir(exist_ok=True)
    doc = {
        "version": 1,
        "entries": [
            {
                "apply_id": a,
                "path": p,
                "reason": "length_short",
                "time": "2026-01-01T00:00:00+00:00",
            }
            for a, p in entries
        ],
    }
    (repo / ".apply" / "incomplete").write_text(json.dumps(doc))


def commit_change(repo: Path) -> subprocess.CompletedProcess[str]:
    with (repo / "other.py").open("a") as handle:
        handle.write("# change\n")
    git(repo, "add", "other.py")
    return git(repo, "commit", "-m", "change", check=False)


def test_the_hook_text_is_valid_sh_and_embeds_the_interpreter(tmp_path: Path) -> None:
    text = hooks.render_hook("/opt/my python/bin/python3")
    script = tmp_path / "hook"
    script.write_text(text)
    subprocess.run(["sh", "-n", str(script)], check=True, timeout=30)
    assert text.startswith("#!/bin/sh\n")
    assert "py='/opt/my python/bin/python3'" in text
    assert hooks.HOOK_MARK in text
    assert hooks.CHECK_PY.strip() in text
    compile(hooks.CHECK_PY, "CHECK_PY", "exec")


def test_install_then_a_clean_commit_goes_through(repo: Path) -> None:
    report = hooks.install(repo)
    assert report.action == "installed"
    assert report.chained is None
    assert report.hook == repo / ".git" / "hooks" / "pre-commit"
    assert os.access(report.hook, os.X_OK)
    assert commit_change(repo).returncode == 0


def test_a_marker_refuses_the_commit_naming_apply_id_and_path(repo: Path) -> None:
    hooks.install(repo)
    mark(repo, ("cut-42", "mod.py"))
    done = commit_change(repo)
    assert done.returncode != 0
    assert "commit refused: incomplete apply apply_id=cut-42 path=mod.py" in done.stderr
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"


def test_a_staged_deletion_of_a_listed_path_is_named(repo: Path) -> None:
    hooks.install(repo)
    mark(repo, ("cut-1", "mod.py"))
    git(repo, "rm", "-q", "mod.py")
    done = git(repo, "commit", "-m", "rm", check=False)
    assert done.returncode != 0
    assert "staged deletion refused: path=mod.py apply_id=cut-1" in done.stderr


def test_a_rename_of_a_listed_path_counts_as_its_deletion(repo: Path) -> None:
    hooks.install(repo)
    mark(repo, ("cut-2", "mod.py"))
    git(repo, "mv", "mod.py", "moved.py")
    done = git(repo, "commit", "-m", "mv", check=False)
    assert done.returncode != 0
    assert "staged deletion refused: path=mod.py apply_id=cut-2" in done.stderr


def test_an_unreadable_marker_still_refuses(repo: Path) -> None:
    hooks.install(repo)
    (repo / ".apply").mkdir()
    (repo / ".apply" / "incomplete").write_text("{cut")
    done = commit_change(repo)
    assert done.returncode != 0
    assert "is unreadable" in done.stderr


def run_hook_with_only(repo: Path, tmp_path: Path, *tools: str) -> subprocess.CompletedProcess[str]:
    """Run the installed-hook text with no Python anywhere and only ``tools`` on PATH."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(hooks.render_hook("/nonexistent/python3"))
    hook.chmod(0o755)
    only = tmp_path / "bin"
    only.mkdir(parents=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found is not None, tool
        (only / tool).symlink_to(found)
    env = git_env(tmp_path) | {"PATH": str(only)}
    return subprocess.run(
        ["/bin/sh", str(hook)], cwd=repo, capture_output=True, text=True, timeout=60, env=env
    )


def test_the_hook_refuses_without_any_python(repo: Path, tmp_path: Path) -> None:
    mark(repo, ("cut-3", "mod.py"))
    done = run_hook_with_only(repo, tmp_path, "git", "find")
    assert done.returncode == 1
    assert "commit refused while" in done.stderr
    assert str(repo / ".apply" / "incomplete") in done.stderr


def test_the_hook_finds_a_marker_below_the_top_without_python(repo: Path, tmp_path: Path) -> None:
    (repo / "sub").mkdir()
    mark(repo / "sub", ("cut-3b", "f.txt"))
    done = run_hook_with_only(repo, tmp_path, "git", "find")
    assert done.returncode == 1
    assert str(repo / "sub" / ".apply" / "incomplete") in done.stderr
    (repo / "sub" / ".apply" / "incomplete").unlink()
    assert run_hook_with_only(repo, tmp_path / "again", "git", "find").returncode == 0


def test_a_search_that_cannot_run_refuses(repo: Path, tmp_path: Path) -> None:
    done = run_hook_with_only(repo, tmp_path, "git")  # no find: the search fails
    assert done.returncode == 1
    assert "the search for .apply/incomplete failed" in done.stderr


def test_an_existing_hook_is_chained_not_overwritten(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    earlier = folder / "pre-commit"
    body = '#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/../chained-ran"\nexit 0\n'
    earlier.write_text(body)
    earlier.chmod(0o755)
    report = hooks.install(repo)
    assert report.chained == folder / hooks.CHAINED_NAME
    assert report.chained.read_text() == body
    assert commit_change(repo).returncode == 0
    assert (repo.parent / "chained-ran").read_text() == "ran\n"
    mark(repo, ("cut-4", "mod.py"))
    assert commit_change(repo).returncode != 0
    assert (repo.parent / "chained-ran").read_text() == "ran\n"  # the guard runs first


def test_a_failing_chained_hook_still_fails_the_commit(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    (folder / "pre-commit").write_text("#!/bin/sh\necho earlier-says-no >&2\nexit 7\n")
    (folder / "pre-commit").chmod(0o755)
    hooks.install(repo)
    done = commit_change(repo)
    assert done.returncode != 0
    assert "earlier-says-no" in done.stderr


def test_reinstall_updates_and_keeps_the_chain(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    (folder / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    hooks.install(repo)
    again = hooks.install(repo)
    assert again.action == "updated"
    assert again.chained is not None
    assert again.chained.read_text() == "#!/bin/sh\nexit 0\n"


def test_a_conflict_is_refused_and_nothing_is_touched(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    (folder / "pre-commit").write_text("#!/bin/sh\necho mine\n")
    (folder / hooks.CHAINED_NAME).write_text("#!/bin/sh\necho older\n")
    with pytest.raises(UsageError, match="refusing to overwrite"):
        hooks.install(repo)
    assert (folder / "pre-commit").read_text() == "#!/bin/sh\necho mine\n"
    assert (folder / hooks.CHAINED_NAME).read_text() == "#!/bin/sh\necho older\n"


def test_uninstall_restores_the_earlier_hook(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    folder.mkdir(exist_ok=True)
    (folder / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    hooks.install(repo)
    report = hooks.uninstall(repo)
    assert report.chained == folder / "pre-commit"
    assert (folder / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (folder / hooks.CHAINED_NAME).exists()
    with pytest.raises(UsageError, match="not installed by review-gate"):
        hooks.uninstall(repo)


def test_core_hooks_path_is_honoured(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", "githooks")
    report = hooks.install(repo)
    assert report.hook == repo / "githooks" / "pre-commit"
    mark(repo, ("cut-5", "mod.py"))
    assert commit_change(repo).returncode != 0


def test_outside_a_work_tree_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="git work tree"):
        hooks.install(tmp_path)


def test_check_command_exit_codes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hooks", "check", "--root", str(repo)]) == 0
    out, err = capsys.readouterr()
    assert out == "no incomplete apply; commits allowed\n"
    assert err == ""
    mark(repo, ("cut-6", "mod.py"))
    assert main(["hooks", "check", "--root", str(repo)]) == 3
    assert "apply_id=cut-6 path=mod.py" in capsys.readouterr().err
    assert hooks.check(repo).blocked
    assert main(["hooks", "install", "--root", str(repo)]) == 0
    assert "installed review-gate pre-commit guard" in capsys.readouterr().out
    assert main(["hooks", "check", "--root", str(repo / "nowhere")]) == 2


def test_pre_commit_framework_manifest_runs_the_same_check(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = manifest
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert hook["always_run"] is True
    program, *argv = hook["entry"].split()
    assert program == "review-gate"
    args = build_parser().parse_args(argv)
    assert args.command == "hooks"
    monkeypatch.chdir(repo)
    assert main(argv) == 0
    mark(repo, ("cut-7", "mod.py"))
    assert main(argv) == 3


def test_check_py_needs_no_review_gate(repo: Path) -> None:
    mark(repo, ("cut-8", "mod.py"))
    done = subprocess.run(
        [sys.executable, "-I", "-c", hooks.CHECK_PY, str(repo)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        env=git_env(repo.parent),
    )
    assert done.returncode == 1
    assert "apply_id=cut-8 path=mod.py" in done.stderr


def test_a_marker_below_the_top_refuses_a_commit_from_a_subfolder(repo: Path) -> None:
    """A marker an apply left below the top (outside a work tree then, or an older version)."""
    hooks.install(repo)
    sub = repo / "sub"
    sub.mkdir()
    (sub / "f.txt").write_text("kept\n")
    git(repo, "add", "sub/f.txt")
    git(repo, "commit", "-q", "-m", "sub")
    mark(sub, ("cut-9", "f.txt"))
    git(repo, "rm", "-q", "sub/f.txt")
    done = subprocess.run(
        ["git", "commit", "-m", "from the subfolder"],
        cwd=sub,
        capture_output=True,
        text=True,
        timeout=60,
        env=git_env(repo.parent),
    )
    assert done.returncode != 0
    assert "apply_id=cut-9 path=sub/f.txt" in done.stderr
    assert "staged deletion refused: path=sub/f.txt apply_id=cut-9" in done.stderr
    assert git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "2"
    assert hooks.check(sub).blocked
    assert hooks.check(repo).blocked


def test_an_unknown_hooks_action_names_the_choices_not_a_dest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["hooks", "frob"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "argument {install,check,uninstall}: invalid choice: 'frob'" in err
    assert "argument action" not in err
