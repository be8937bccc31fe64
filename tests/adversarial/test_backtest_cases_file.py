"""Class: a backtest cases file that reads a file outside its own folder.

A cases file names each diff "a path relative to the file" (gate.backtest.cases). A
file handed over from elsewhere (a shared benchmark, a colleague's labels) is not the
operator's own words: an absolute path or a ``..`` in ``diff`` made the backtest read any
file the user can (``~/.aws/credentials``, ``/etc/passwd``) and send it to the model
provider as a diff. A diff named by the file must stay inside the file's folder; every
such line is reported with the other malformed ones, before anything is asked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.backtest.cases import from_file
from gate.errors import UsageError

DIFF = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"


def _cases(folder: Path, diff: str) -> Path:
    path = folder / "cases" / "cases.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": "c1", "label": "allow", "diff": diff}) + "\n")
    return path


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_a_diff_outside_the_cases_folder_is_refused(tmp_path: Path, how: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("aws_secret_access_key = not-a-diff\n")
    if how == "absolute":
        named = str(secret)
    elif how == "dotdot":
        named = "../secret.txt"
    else:
        (tmp_path / "cases").mkdir()
        (tmp_path / "cases" / "link.diff").symlink_to(secret)
        named = "link.diff"
    path = _cases(tmp_path, named)
    with pytest.raises(UsageError) as caught:
        from_file(path)
    assert caught.value.reason == "config_cases"
    assert "outside" in caught.value.message


def test_a_diff_inside_the_cases_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "cases" / "d").mkdir(parents=True)
    (tmp_path / "cases" / "d" / "one.diff").write_text(DIFF)
    plan = from_file(_cases(tmp_path, "d/one.diff"))
    assert plan.cases[0].load() == DIFF.encode()
