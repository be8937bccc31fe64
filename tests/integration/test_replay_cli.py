"""``review-gate replay`` against the simulator: stable, unstable, degraded, unreplayable."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gate import cli
from gate.lab.sim import MODEL, ReviewerSimulator
from tests.integration.test_agreement_sim import DIFF, KEY, scripted


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def certify(tmp_path: Path, sim: ReviewerSimulator, name: str = "c.json") -> Path:
    diff = tmp_path / "x.diff"
    diff.write_bytes(DIFF)
    cert = tmp_path / name
    args = ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL,
            "--base-url", sim.base_url, "--certificate", str(cert)]  # fmt: skip
    assert cli.main(args) in (0, 1)
    return cert


def replay(*args: str) -> int:
    return cli.main(["replay", *args])


def rows(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_a_stable_replay(tmp_path, env, sim_factory, capsys) -> None:
    sim = sim_factory(scripted(["pass"]))
    cert = certify(tmp_path, sim)
    capsys.readouterr()
    assert replay(str(cert), "--diff", str(tmp_path / "x.diff")) == 0
    [row] = rows(capsys.readouterr().out)
    assert row[2:5] == ["pass", "pass", "stable"]
    assert sim.count == 2


def test_an_unstable_replay_the_second_answer_fails(tmp_path, env, sim_factory, capsys) -> None:
    sim = sim_factory(scripted(["pass", "fail"]))
    cert = certify(tmp_path, sim)
    capsys.readouterr()
    assert replay(str(cert), "--diff", str(tmp_path / "x.diff")) == 1
    [row] = rows(capsys.readouterr().out)
    assert row[2:5] == ["pass", "fail", "unstable"]


def test_a_diff_that_no_longer_matches_is_unreplayable(tmp_path, env, sim_factory, capsys):
    sim = sim_factory(scripted(["pass"]))
    cert = certify(tmp_path, sim)
    sha = hashlib.sha256(DIFF).hexdigest()
    folder = tmp_path / "diffs"
    folder.mkdir()
    (folder / f"{sha}.diff").write_bytes(DIFF.replace(b"hello", b"HELLO"))
    capsys.readouterr()
    assert replay(str(cert), "--diff-dir", str(folder)) == 3
    [row] = rows(capsys.readouterr().out)
    assert row[4] == "unreplayable"
    assert "no longer hash" in row[5]
    assert sim.count == 1  # no call for bytes that are not the recorded ones


def test_a_missing_diff_and_an_unreachable_reviewer_are_unreplayable(
    tmp_path, env, sim_factory, capsys
):
    sim = sim_factory(scripted(["pass"]))
    cert = certify(tmp_path, sim)
    empty = tmp_path / "none"
    empty.mkdir()
    capsys.readouterr()
    assert replay(str(cert), "--diff-dir", str(empty)) == 3
    note = rows(capsys.readouterr().out)[0][5]
    assert note.startswith(
        f"diff missing: no file '{empty / hashlib.sha256(DIFF).hexdigest()}.diff'"
    )
    sim.stop()
    assert replay(str(cert), "--diff", str(tmp_path / "x.diff")) == 3
    assert rows(capsys.readouterr().out)[0][5].startswith("reviewer:")


def test_a_repaired_record_is_degraded_and_a_changed_one_unstable(
    tmp_path, env, sim_factory, capsys
):
    sim = sim_factory(scripted(["fail"]))
    cert = certify(tmp_path, sim)
    data: dict[str, Any] = json.loads(cert.read_text())
    data["decision"]["source"] = "repaired"
    data["decision"]["reason"] = "repaired_fail"
    cert.write_text(json.dumps(data))
    capsys.readouterr()
    assert replay(str(cert), "--diff", str(tmp_path / "x.diff")) == 0
    [row] = rows(capsys.readouterr().out)
    assert row[4:] == ["degraded", "recorded from repaired"]


def test_reviewer_flags_override_the_certificate(tmp_path, env, sim_factory, capsys) -> None:
    old = sim_factory(scripted(["pass"]))
    cert = certify(tmp_path, old)
    new = sim_factory(scripted(["fail"]))
    capsys.readouterr()
    code = replay(str(cert), "--diff", str(tmp_path / "x.diff"), "--base-url", new.base_url)
    assert code == 1
    assert (old.count, new.count) == (1, 1)


def test_several_certificates_need_a_diff_dir(tmp_path, env, sim_factory) -> None:
    sim = sim_factory(scripted(["pass"]))
    a, b = certify(tmp_path, sim, "a.json"), certify(tmp_path, sim, "b.json")
    assert replay(str(a), str(b), "--diff", str(tmp_path / "x.diff")) == 2


def test_not_a_certificate_is_unreplayable(tmp_path, env, capsys) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"a": 1, "a": 2}')
    (tmp_path / "x.diff").write_bytes(DIFF)
    assert replay(str(junk), "--diff", str(tmp_path / "x.diff")) == 3
    assert "twice" in capsys.readouterr().out


def test_a_short_agreement_set_replays_stable(tmp_path, env, sim_factory, capsys) -> None:
    """Issue 33: ``agreement: 3`` stops at a first fail; the certificate holds one answer of
    three, and replay reads it (fail) and asks again as the review did (one answer)."""
    sim = sim_factory(scripted(["fail"]))
    diff = tmp_path / "x.diff"
    diff.write_bytes(DIFF)
    cert = tmp_path / "c.json"
    args = ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL,
            "--base-url", sim.base_url, "--certificate", str(cert), "--agreement", "3"]  # fmt: skip
    assert cli.main(args) == 1
    agreement = json.loads(cert.read_text())["context"]["agreement"]
    assert (agreement["k"], agreement["asked"]) == (3, 1)
    assert sim.count == 1
    capsys.readouterr()
    assert replay(str(cert), "--diff", str(diff)) == 0
    [row] = rows(capsys.readouterr().out)
    assert row[2:5] == ["fail", "fail", "stable"]
    assert sim.count == 2
