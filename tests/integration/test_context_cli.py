"""``context: files`` in ``review-gate review`` (read from git at --commit in --repo) and in
``review-gate backtest`` (each case's head; ``--context diff --context files`` compared on
the same cases), against the scripted reviewer (gate.lab.scripted), which answers by the
first ``sim:MODE`` anywhere in the prompt: a file whose line far from the change says
``sim:fail`` fails only when the reviewer is shown the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate import cli
from gate.lab.scripted import Scripted
from gate.lab.sim import MODEL, ReviewerSimulator
from tests.githistory import History, new_history
from tests.gitrepo import git_bytes

KEY = "sk-context-test-key-not-real"
LIB = "# sim:fail: callers rely on parse() never returning None\n" + "".join(
    f"value_{i} = {i}\n" for i in range(1, 80)
)


@pytest.fixture
def sim() -> Iterator[ReviewerSimulator]:
    with ReviewerSimulator("openai", chooser=Scripted()) as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def history(tmp_path: Path) -> History:
    """main holds lib.py; a merged pull request edits its line 60 (the hunk's three lines
    of context never reach line 1), and a later commit reverts the merge (label block);
    a second merge adds a file (presumed allow)."""
    found = new_history(tmp_path / "repo")
    (found.repo / "lib.py").write_text(LIB, encoding="utf-8")
    found.git("add", "lib.py")
    found.git("commit", "-q", "-m", "lib")
    found.git("checkout", "-q", "-b", "pr-edit")
    (found.repo / "lib.py").write_text(LIB.replace("value_60 = 60", "value_60 = None"), "utf-8")
    found.git("commit", "-q", "-am", "value_60 may be None")
    found.git("checkout", "-q", "main")
    found.git("merge", "-q", "--no-ff", "pr-edit", "-m", "Merge pull request from pr-edit")
    found.revert(found.head(), merge=True)
    found.merge("ok.py", "pass")
    return found


def review(capsys: pytest.CaptureFixture[str], sim: ReviewerSimulator, *args: str) -> int:
    capsys.readouterr()
    argv = ["review", "--provider", "openai", "--base-url", sim.base_url, "--model", MODEL]
    return cli.main([*argv, "--attempts", "1", *args])


def test_review_reads_the_files_at_commit_and_the_reviewer_sees_them(
    tmp_path: Path, sim: ReviewerSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = history(tmp_path).repo
    merge = "HEAD~2"  # the merge of pr-edit (then the revert, then ok.py's merge)
    diff = tmp_path / "edit.diff"
    diff.write_bytes(git_bytes(repo, "diff", f"{merge}^1...{merge}^2"))
    head = git_bytes(repo, "rev-parse", f"{merge}^2").decode().strip()
    assert review(capsys, sim, "--diff", str(diff)) == 0  # the diff alone: a pass
    cert = tmp_path / "cert.json"
    code = review(
        capsys,
        sim,
        "--diff",
        str(diff),
        "--context",
        "files",
        "--commit",
        head,
        "--repo",
        str(repo),
        "--certificate",
        str(cert),
    )
    assert code == 1  # shown lib.py whole, the reviewer reads its line 1
    record = json.loads(cert.read_text())["context"]["reviewer_context"]
    assert record["source"] == f"git {head}"
    (shown,) = record["requests"][0]["shown"]
    assert (shown["path"], shown["lines"]) == ("lib.py", [1, 80])
    assert json.loads(cert.read_text())["context"]["coverage"]["reviewed"] == ["lib.py"]
    # verify re-decides from the diff alone, and names what else the reviewer saw
    capsys.readouterr()
    assert cli.main(["verify", "--from-certificate", str(cert), "--diff", str(diff)]) == 1
    err = capsys.readouterr().err
    assert "shown 1 parts of 1 changed files" in err
    assert f"read from git {head}" in err


def test_review_with_context_files_and_no_commit_is_a_usage_error(
    tmp_path: Path, sim: ReviewerSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    diff = tmp_path / "a.diff"
    diff.write_bytes(b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n")
    assert review(capsys, sim, "--diff", str(diff), "--context", "files") == 2
    err = capsys.readouterr().err
    assert "--context files" in err
    assert "pass --commit SHA" in err
    assert sim.requests == []


def test_backtest_compares_context_diff_with_context_files(
    tmp_path: Path, sim: ReviewerSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = history(tmp_path).repo
    capsys.readouterr()
    code = cli.main(
        [
            "backtest", "--repo", str(repo), "--last", "5", "--context", "diff",
            "--context", "files", "--provider", "openai", "--base-url", sim.base_url,
            "--model", MODEL, "--attempts", "1", "--out", str(tmp_path / "out"), "--json",
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    by_name = {c["name"]: c for c in report["configs"]}
    assert set(by_name) == {"context=diff", "context=files"}
    # the reverted edit: caught only when the reviewer is shown lib.py
    assert by_name["context=diff"]["catch_rate"]["k"] == 0
    assert by_name["context=files"]["catch_rate"]["k"] == 1
    (paired,) = report["comparisons"]
    assert (paired["catch_rate"]["a_only"], paired["catch_rate"]["b_only"]) == (0, 1)
    assert paired["would_block"]["difference"] == 0.0  # the good merge passes under both
    (cert_dir,) = (tmp_path / "out" / "certificates").glob("context_files-*")
    records = [json.loads(p.read_text())["context"] for p in sorted(cert_dir.glob("*.json"))]
    assert len(records) == 2  # the reverted edit and the good merge
    assert all(r["reviewer_context"]["source"].startswith("git ") for r in records)
    shown = sorted(p["path"] for r in records for q in r["reviewer_context"]["requests"]
                   for p in q["shown"])  # fmt: skip
    assert shown == ["lib.py", "ok.py"]


def test_a_review_in_chunks_shows_each_chunk_its_own_files_and_records_each(
    sim: ReviewerSimulator,
) -> None:
    """Through review_diff on the wire: every chunk's prompt as sent holds its own files'
    text and no other's, and the certificate names each request's parts."""
    from dataclasses import replace

    from gate.config.model import Config, ReviewerConfig
    from gate.lab.sim import extract_prompt
    from gate.memory.question import key_for
    from gate.review.context import HeadFiles, file_text
    from gate.review.pipeline import review_diff
    from gate.review.scope import select_diff

    names = [f"src/m{i}.py" for i in range(10)]
    diff = b"".join(
        f"diff --git a/{n} b/{n}\n--- a/{n}\n+++ b/{n}\n@@ -1 +1,20 @@\n-old\n".encode()
        + b"".join(f"+v{j} = {j}\n".encode() for j in range(20))
        for n in names
    )
    head = HeadFiles(
        "test", tuple(file_text(n, f"# FILE-OF {n}\n".encode() + b"v = 1\n" * 20) for n in names)
    )
    reviewer = ReviewerConfig(provider="openai", model=MODEL, base_url=sim.base_url, attempts=1)
    config = replace(
        Config(reviewer=reviewer),
        context="files",
        max_chunk_bytes=1024,
        incremental="always",
        concurrency=1,
    )
    selected = select_diff(diff, config)
    result = review_diff(
        selected.data, config, api_key=KEY, coverage=selected.coverage,
        question=key_for(selected.data, config, head=head), head=head, sleep=lambda _s: None,
    )  # fmt: skip
    assert str(result.decision.state) == "pass"
    assert len(result.chunks) > 1
    users = [extract_prompt("openai", r)[1] for r in sim.requests]
    assert len(users) == len(result.chunks)
    for user in users:
        inside = {n for n in names if f"--- a/{n}\n" in user}
        shown = {n for n in names if f"# FILE-OF {n}\n" in user}
        assert shown == inside  # its own files' text, and no other chunk's
    record = result.certificate["context"]["reviewer_context"]
    assert [r["chunk"] for r in record["requests"]] == [c.chunk.name for c in result.chunks]
    assert sorted(p["path"] for r in record["requests"] for p in r["shown"]) == names


def test_git_gives_regular_files_only_and_names_the_rest(tmp_path: Path) -> None:
    """A symbolic link is never followed (its blob is a path, not the file), a binary
    file and an absent one are named; a regular file reads back as its bytes."""
    from dataclasses import replace

    from gate.backtest.headfiles import head_files
    from gate.config.model import Config
    from gate.errors import UsageError
    from gate.review.context import LeftWhy, shown_for

    repo = new_history(tmp_path / "repo")
    (repo.repo / "a.py").write_text("x = 1\n", encoding="utf-8")
    (repo.repo / "bin.dat").write_bytes(b"\0\1\2")
    (repo.repo / "link.py").symlink_to("a.py")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "files")
    diff = b"".join(
        f"diff --git a/{n} b/{n}\n--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-o\n+n\n".encode()
        for n in ("a.py", "bin.dat", "link.py", "gone.py")
    )
    config = replace(Config(), context="files")
    head = head_files(repo.repo, "HEAD", diff, config)
    assert head is not None
    assert head.source == f"git {repo.head()}"
    shown = shown_for(diff, config, head)
    assert [(p.path, p.text) for p in shown.parts] == [("a.py", "x = 1\n")]
    assert [(x.path, x.why) for x in shown.left_out] == [
        ("bin.dat", LeftWhy.BINARY),
        ("link.py", LeftWhy.UNAVAILABLE),
        ("gone.py", LeftWhy.UNAVAILABLE),
    ]
    with pytest.raises(UsageError, match="no commit of"):
        head_files(repo.repo, "no-such-rev", diff, config)


def test_a_file_holding_a_fallbacks_key_is_never_shown_to_the_reviewer(
    tmp_path: Path,
    sim: ReviewerSimulator,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Attack (a secret into the prompt): a changed file holds a fallback reviewer's API
    key (a committed .env, say). The rule at input leaves out a file holding any secret of
    the run, but the fallbacks' keys were read (and registered) only after the files, or,
    in ``review``, never: the file went whole to the first reviewer's provider."""
    fallback_key = "sk-fallback-key-of-this-run-0123456789"
    monkeypatch.setenv("FALLBACK_KEY", fallback_key)
    found = new_history(tmp_path / "repo")
    text = f"API_KEY = '{fallback_key}'\n" + "".join(f"value_{i} = {i}\n" for i in range(1, 80))
    (found.repo / "settings.py").write_text(text, encoding="utf-8")
    found.git("add", "settings.py")
    found.git("commit", "-q", "-m", "settings")
    base = found.head()
    (found.repo / "settings.py").write_text(text.replace("value_60 = 60", "value_60 = 6"), "utf-8")
    found.git("commit", "-q", "-am", "value_60")
    diff = tmp_path / "edit.diff"
    diff.write_bytes(git_bytes(found.repo, "diff", base, "HEAD"))
    config = tmp_path / "c.yml"
    config.write_text(
        "fallbacks:\n  - provider: openai\n    model: other\n"
        f"    base_url: {sim.base_url}\n    api_key_env: FALLBACK_KEY\n",
        encoding="utf-8",
    )
    cert = tmp_path / "cert.json"
    review(
        capsys, sim, "--config", str(config), "--diff", str(diff), "--context", "files",
        "--commit", found.head(), "--repo", str(found.repo), "--certificate", str(cert),
    )  # fmt: skip
    assert sim.requests, "the reviewer was asked"
    assert all(fallback_key not in json.dumps(r) for r in sim.requests)
    record = json.loads(cert.read_text())["context"]["reviewer_context"]
    (left,) = record["requests"][0]["left_out"]
    assert (left["path"], left["why"]) == ("settings.py", "secret")
