"""Classes: a change with nothing for the reviewer to read; one asset rule in two places.

A pull request that only adds an image crashed the gate (issue 34, finding 1): the
command line's ``nothing_reviewed`` looked up ``SkipWhy.BINARY_ASSET`` in a table that had
no entry for it (``KeyError``), and the action blocked it as an outage ("unavailable ...
please report this bug"). The class is a table keyed by an enum that misses a member
(tests/unit/test_enum_tables.py holds every such table to every member). What such a
change is: with nothing reviewable and nothing unreviewed that blocks, a pass with no
reviewer call, "no code changed: N binary assets not reviewable"; under
``binary_assets: block``, a block. The same for a change whose every file the base config
excludes (finding 4): "nothing in scope: N files excluded by config", unless
``nothing_in_scope: block``.

An executable PNG was an asset on the command line (finding 2): the action refused mode
100755, the command line's literal reader checked only the name and the first bytes, and
the action's blob-built sections (above 300 files) neither the mode nor the old side of a
rename. The fix: one rule, :func:`gate.assets.change_kind`, which every reader feeds.

Variants, each a real ``git diff --binary`` of real tiny files (tests/assetbytes.py),
through ``review`` and through the action against the fake GitHub: asset only, font only,
asset plus an executable asset, code plus an executable asset, a script renamed into a
PNG, a deleted PNG, and excluded files only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.action.blobdiff import section_from_blobs
from gate.action.github.mark import plain
from gate.cli import main
from gate.lab.sim import ReviewerSimulator
from tests.assetbytes import png, ttf
from tests.gitrepo import git, git_bytes
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

SCRIPT = b"".join(b"def check_%d(user):\n    return user.is_admin\n" % i for i in range(30))


def test_the_files_are_real(tmp_path: Path) -> None:
    """The oracles: ``file`` names each format; FreeType (``fc-scan``) loads the font."""
    (tmp_path / "a.png").write_bytes(png())
    (tmp_path / "a.ttf").write_bytes(ttf())
    if shutil.which("file"):
        said = subprocess.run(
            ["file", "-b", str(tmp_path / "a.png"), str(tmp_path / "a.ttf")],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        assert "PNG image data, 1 x 1" in said
        assert "TrueType Font data" in said
    if shutil.which("fc-scan"):
        family = subprocess.run(
            ["fc-scan", "--format", "%{family}", str(tmp_path / "a.ttf")],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
        assert family == "GateTest"


def change(
    root: Path,
    files: dict[str, tuple[bytes, int]],
    *,
    before: dict[str, bytes] | None = None,
    binary: bool = True,
    rename: bool = False,
) -> bytes:
    """The diff real git writes for ``files`` (bytes, file mode) over a base commit of
    ``before``: ``--binary`` (a local diff, with literals) or not (GitHub's diff media
    type, ``Binary files ... differ``); a file of ``before`` absent from ``files`` is
    deleted."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name, data in (before or {"README.md": b"hello\n"}).items():
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for name in before or {}:
        if name not in files:
            (repo / name).unlink()
    for name, (data, mode) in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    git(repo, "add", "-A")
    args = ["diff", "--cached", "-M" if rename else "--no-renames"]
    return git_bytes(repo, *args, *(["--binary"] if binary else []))


def run_review(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    diff: bytes,
    sim: ReviewerSimulator,
    config: str = "",
) -> tuple[int, dict]:
    path, conf = tmp_path / "change.diff", tmp_path / "review-gate.yml"
    path.write_bytes(diff)
    conf.write_text(config or "{}\n")
    argv = ["review", "--diff", str(path), "--model", "sim-model", "--base-url", sim.base_url]
    code = main([*argv, "--config", str(conf), "--json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef-not-real")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


ONLY = {
    "png": {"assets/logo.png": (png(), 0o644)},
    "font": {"fonts/GateTest.ttf": (ttf(), 0o644)},
    "png+font": {"assets/logo.png": (png(), 0o644), "fonts/GateTest.ttf": (ttf(), 0o644)},
}


# --- the command line ------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(ONLY))
def test_assets_alone_pass_on_the_command_line_with_no_call(
    tmp_path, capsys, sim_factory, case: str
) -> None:
    diff = change(tmp_path, ONLY[case])
    assert b"GIT binary patch" in diff
    sim = sim_factory()
    code, out = run_review(tmp_path, capsys, diff, sim)
    count = len(ONLY[case])
    assert code == 0, out
    assert sim.requests == []
    assert out["reason"] == "no_code_changed"
    plural = "s" if count > 1 else ""
    assert out["description"] == (f"no code changed: {count} binary asset{plural} not reviewable")
    assert [s["why"] for s in out["coverage"]["skipped"]] == ["binary_asset"] * count


@pytest.mark.parametrize("case", sorted(ONLY))
def test_assets_alone_block_under_binary_assets_block(
    tmp_path, capsys, sim_factory, case: str
) -> None:
    sim = sim_factory()
    code, out = run_review(
        tmp_path, capsys, change(tmp_path, ONLY[case]), sim, "binary_assets: block\n"
    )
    assert code == 3
    assert sim.requests == []
    assert out["state"] == "needs_human"


@pytest.mark.parametrize("other", ["assets/other.png", "a.py"])
def test_an_executable_png_blocks_on_the_command_line(
    tmp_path, capsys, sim_factory, other: str
) -> None:
    """Finding 2: beside a real asset or beside code, a PNG of mode 100755 is no asset."""
    second = (png(), 0o644) if other.endswith(".png") else (b"print('hi')\n", 0o644)
    diff = change(tmp_path, {"logo.png": (png(text=b"\necho ran\n"), 0o755), other: second})
    assert b"new file mode 100755" in diff
    sim = sim_factory()
    code, out = run_review(tmp_path, capsys, diff, sim)
    assert code == 3, out
    assert sim.requests == []  # never paid for
    skipped = {s["path"]: s["why"] for s in out["coverage"]["skipped"]}
    assert skipped["logo.png"] == "binary"
    assert "logo.png" in out["detail"]


def test_a_script_renamed_into_a_png_blocks_on_the_command_line(
    tmp_path, capsys, sim_factory
) -> None:
    """The old side of a rename is judged on the command line too (it was in the action)."""
    diff = change(
        tmp_path,
        {"logo.png": (png(text=SCRIPT), 0o644)},
        before={"auth_check.py": SCRIPT, "README.md": b"x\n"},
        rename=True,
    )
    assert b"rename from auth_check.py" in diff
    sim = sim_factory()
    code, out = run_review(tmp_path, capsys, diff, sim)
    assert code == 3, out
    assert sim.requests == []
    assert out["coverage"]["skipped"][0]["why"] == "binary"


def test_a_deleted_png_is_an_asset_on_the_command_line(tmp_path, capsys, sim_factory) -> None:
    """Its old side is judged from the reverse literal, as the action reads the base blob."""
    diff = change(tmp_path, {}, before={"logo.png": png(), "README.md": b"x\n"})
    diff = b"".join(s for s in diff.split(b"diff --git ") if b"logo.png" in s)
    code, out = run_review(tmp_path, capsys, b"diff --git " + diff, sim_factory())
    assert code == 0, out
    assert out["reason"] == "no_code_changed"


# --- nothing in scope (finding 4) --------------------------------------------------------


def test_excluded_files_alone_pass_with_nothing_in_scope(tmp_path, capsys, sim_factory) -> None:
    diff = change(tmp_path, {"README.md": (b"new words\n", 0o644), "docs/x.md": (b"x\n", 0o644)})
    sim = sim_factory()
    code, out = run_review(tmp_path, capsys, diff, sim, 'exclude: ["*.md"]\n')
    assert code == 0, out
    assert sim.requests == []
    assert out["reason"] == "nothing_in_scope"
    assert out["description"] == "nothing in scope: 2 files excluded by config"


def test_excluded_files_and_an_asset_pass_naming_both(tmp_path, capsys, sim_factory) -> None:
    diff = change(tmp_path, {"README.md": (b"new\n", 0o644), "logo.png": (png(), 0o644)})
    code, out = run_review(tmp_path, capsys, diff, sim_factory(), 'exclude: ["*.md"]\n')
    assert code == 0, out
    assert out["description"] == (
        "nothing in scope: 1 file excluded by config, 1 binary asset not reviewable"
    )


def test_nothing_in_scope_block_restores_the_block(tmp_path, capsys, sim_factory) -> None:
    diff = change(tmp_path, {"README.md": (b"new words\n", 0o644)})
    config = 'exclude: ["*.md"]\nnothing_in_scope: block\n'
    code, out = run_review(tmp_path, capsys, diff, sim_factory(), config)
    assert code == 3
    assert out["reason"] == "nothing_reviewed"


def test_code_beside_excluded_files_is_still_reviewed(tmp_path, capsys, sim_factory) -> None:
    diff = change(tmp_path, {"README.md": (b"new\n", 0o644), "a.py": (b"x = 1\n", 0o644)})
    sim = sim_factory()
    code, out = run_review(tmp_path, capsys, diff, sim, 'exclude: ["*.md"]\n')
    assert code == 0, out
    assert len(sim.requests) == 1
    assert out["reason"] == "reviewer_pass"


# --- the action against the fake GitHub ----------------------------------------------------


def _on_github(fake, tmp_path: Path, files: dict[str, tuple[bytes, int]], config: str = "") -> None:
    """The pull request GitHub would show: the diff media type (no literals) of real git,
    and each file in the head's tree with its mode."""
    diff = change(tmp_path, files, binary=False)
    assert b"GIT binary patch" not in diff
    setup_pull(fake, diff=diff, config=config or None)
    for name, (data, mode) in files.items():
        fake.set_file(HEAD, name, data, mode=f"100{mode:o}")


@pytest.mark.parametrize("case", sorted(ONLY))
def test_assets_alone_pass_in_the_action_with_no_call(tmp_path, fake, sim_factory, case) -> None:
    _on_github(fake, tmp_path, ONLY[case])
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    count = len(ONLY[case])
    assert result.code == 0, result.stdout
    assert sim.requests == []
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "success"]
    plural = "s" if count > 1 else ""
    assert plain(statuses[-1]["description"]) == (
        f"no code changed: {count} binary asset{plural} not reviewable"
    )
    assert result.outputs["reason"] == "no_code_changed"
    assert result.certificate["decision"]["state"] == "pass"


def test_assets_alone_block_in_the_action_under_binary_assets_block(
    tmp_path, fake, sim_factory
) -> None:
    _on_github(fake, tmp_path, ONLY["png+font"], config="binary_assets: block\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3
    assert sim.requests == []
    assert fake.status_list(HEAD)[-1]["state"] == "error"
    assert "not about the code" not in fake.status_list(HEAD)[-1]["description"]


def test_an_asset_beside_an_executable_asset_blocks_in_the_action(
    tmp_path, fake, sim_factory
) -> None:
    files = {"logo.png": (png(text=b"\necho ran\n"), 0o755), "assets/ok.png": (png(), 0o644)}
    _on_github(fake, tmp_path, files)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert sim.requests == []
    skipped = {s["path"]: s["why"] for s in result.certificate["context"]["coverage"]["skipped"]}
    assert skipped == {"logo.png": "binary", "assets/ok.png": "binary_asset"}
    assert "not about the code" not in fake.status_list(HEAD)[-1]["description"]


def test_excluded_files_alone_pass_in_the_action(tmp_path, fake, sim_factory) -> None:
    _on_github(fake, tmp_path, {"README.md": (b"new words\n", 0o644)}, 'exclude: ["*.md"]\n')
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    assert sim.requests == []
    status = fake.status_list(HEAD)[-1]
    assert (status["state"], plain(status["description"])) == (
        "success",
        "nothing in scope: 1 file excluded by config",
    )


def test_excluded_files_alone_block_in_the_action_when_asked(tmp_path, fake, sim_factory) -> None:
    config = 'exclude: ["*.md"]\nnothing_in_scope: block\n'
    _on_github(fake, tmp_path, {"README.md": (b"new words\n", 0o644)}, config)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 3
    assert fake.status_list(HEAD)[-1]["state"] == "error"
    assert result.outputs["reason"] == "nothing_reviewed"


# --- the one rule: every reader gives it the same facts -----------------------------------


@pytest.mark.parametrize("mode", ["100644", "100755"])
def test_a_blob_built_section_applies_the_mode(mode: str) -> None:
    """The action's sections built from blobs (above 300 files) read the mode too."""
    data = png(text=b"\necho ran\n")
    section = section_from_blobs("logo.png", None, data, new_mode=mode)
    assert section.binary
    assert (section.asset == "image") is (mode == "100644")


def test_a_blob_built_rename_applies_the_old_side() -> None:
    section = section_from_blobs("logo.png", SCRIPT + b"\x00", png(text=SCRIPT), old_path="a.py")
    assert section.binary
    assert section.asset == ""
    moved = section_from_blobs("new/logo.png", png(), png(text=b"x"), old_path="old/logo.png")
    assert moved.asset == "image"


def test_the_rule_itself() -> None:
    from gate.assets import Side, change_kind

    image = Side("a.png", "100644", png())
    assert change_kind(image, None) == "image"  # added
    assert change_kind(None, image) == "image"  # deleted
    assert change_kind(Side("a.png", "100755", png()), None) == ""
    assert change_kind(Side("a.png", None, png()), None) == ""  # mode unknown
    assert change_kind(Side("a.png", "100644", None), None) == ""  # bytes unknown
    assert change_kind(image, Side("a.py", "100644", SCRIPT)) == ""  # renamed from code
    assert change_kind(image, Side("a.png", "100755", SCRIPT)) == "image"  # same file changed


def test_a_pass_with_nothing_in_scope_holds_for_a_sibling_only_with_the_same_files_left_out(
    tmp_path, fake, sim_factory
) -> None:
    """The same head is also the head of a pull request into another base, whose diff
    holds the same image and a plain binary: its selected bytes are empty too, so the
    question key alone matched, but the success would pass a change with a gap. It is
    withheld (``sibling_pull``); with the same files left out, it holds."""
    other_base = "4" * 40
    logo = {"logo.png": (png(), 0o644)}
    both = {**logo, "tool.bin": (b"\x00\x01binary", 0o644)}
    _on_github(fake, tmp_path / "a", logo)
    fake.add_pull(
        8, head_sha=HEAD, base_sha=other_base, base_ref="release",
        diff=change(tmp_path / "b", both, binary=False),
    )  # fmt: skip
    fake.set_file(HEAD, "tool.bin", both["tool.bin"][0])
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert result.outputs["reason"] == "sibling_pull"
    assert fake.status_list(HEAD)[-1]["state"] != "success"
    # the sibling's diff is the same image alone: the pass holds for both
    fake.add_pull(
        8, head_sha=HEAD, base_sha=other_base, base_ref="release",
        diff=change(tmp_path / "c", logo, binary=False),
    )  # fmt: skip
    (tmp_path / "d").mkdir()
    again = run_gate(tmp_path / "d", fake, sim, pr_payload())
    assert again.code == 0, again.stdout
    assert fake.status_list(HEAD)[-1]["state"] == "success"
    assert sim.requests == []
