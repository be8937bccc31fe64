"""``review-gate demo``: every case gets its decision, certificates re-verify, nothing is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import gate.review.pipeline
from gate.cli import main
from gate.decide.decision import Decision, State, Status
from gate.lab.demo import load_sample

REPO = Path(__file__).resolve().parents[2]
EXPECTED = {
    "healthy": "pass",
    "cut": "incomplete",
    "flip-sha": "needs_human",
    "flip-done": "incomplete",
    "stall": "incomplete",
    "echoed-example": "needs_human",
    "reject": "fail",
    "out-of-tokens": "needs_human",  # the model's own end: it stands (gate.decide.ends)
    "large": "pass",
    "large-cut": "incomplete",
    "quota-fallback": "pass",
}


def test_demo_table_certificates_and_no_thread_left(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "220")  # every column (narrower: test_newcomer_cli.py)
    before = {thread.ident for thread in threading.enumerate()}
    out_dir = tmp_path / "demo"
    code = main(["demo", "--out", str(out_dir)])
    out, _ = capsys.readouterr()
    assert code == 0
    assert {thread.ident for thread in threading.enumerate()} == before
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[:1]}
    for case, state in EXPECTED.items():
        assert f"  {state}  " in rows[case], rows[case]
        assert "EXPECTED" not in rows[case]
        cert = json.loads((out_dir / f"{case}.json").read_text())
        assert cert["decision"]["state"] == state
        assert cert["context"]["case"] == case
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == sorted([*(f"{c}.json" for c in EXPECTED), "sample.diff", "large.diff"])
    assert (out_dir / "sample.diff").read_bytes() == load_sample()
    assert "11/11 as expected" in out
    assert f"certificates: {out_dir}/" in out
    assert (
        f"review-gate verify --from-certificate {out_dir / 'healthy.json'} "
        f"--diff {out_dir / 'sample.diff'} --policy-version 1"
    ) in out
    assert "--json prints every detail in full" in out
    # the flip-done row says "end trailer, finish stop" next to incomplete: a footnote says why
    assert rows["flip-done"].split("  incomplete")[0].rstrip().endswith("finish stop *")
    assert rows["*"].startswith("* flip-done: the HTTP response ended properly")
    assert "only the data: [DONE] end marker was corrupted" in rows["*"]


def test_demo_json_names_why_each_case_blocked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--out", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    cases = {c["case"]: c for c in summary["cases"]}
    assert summary["ok"] is True
    assert "[DONE] end marker was corrupted" in cases["flip-done"]["note"]
    assert cases["healthy"]["note"] is None
    assert {name: c["decision"]["state"] for name, c in cases.items()} == EXPECTED
    reasons = {name: c["decision"]["reason"] for name, c in cases.items()}
    assert reasons["healthy"] == "reviewer_pass"
    assert reasons["cut"] == "connection_cut"
    assert reasons["stall"] == "timeout"
    assert reasons["echoed-example"] == "multiple_fences"
    assert reasons["reject"] == "reviewer_fail"
    assert reasons["out-of-tokens"] == "token_exhaustion"
    assert reasons["flip-sha"] in ("diff_sha_mismatch", "unbound")
    # Retries happen only where bytes did not arrive.
    tries = {name: len(c["attempts"]) for name, c in cases.items()}
    assert tries["cut"] == tries["stall"] == 2
    assert tries["healthy"] == tries["reject"] == tries["echoed-example"] == 1
    # The wire really was broken where the table says.
    healthy_bytes = cases["healthy"]["wire_bytes"]
    assert cases["cut"]["wire_bytes"] == healthy_bytes // 2
    assert cases["flip-sha"]["wire_bytes"] == healthy_bytes
    # the large pull request: several chunks, all asked; one cut chunk blocks it all
    assert reasons["large"] == "reviewer_pass"
    assert tries["large"] >= 3
    assert reasons["large-cut"] == "connection_cut"
    assert "chunk 2/" in cases["large-cut"]["decision"]["detail"]


def test_demo_certificates_reverify_offline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    diff = tmp_path / "sample.diff"  # the demo writes the diff it reviewed next to them
    verify = ["verify", "--diff", str(diff), "--policy-version", "1", "--from-certificate"]
    assert main([*verify, str(tmp_path / "healthy.json")]) == 0
    assert main([*verify, str(tmp_path / "reject.json")]) == 1
    assert main([*verify, str(tmp_path / "flip-sha.json")]) == 3
    assert main([*verify, str(tmp_path / "echoed-example.json")]) == 3
    capsys.readouterr()
    # no envelope ever arrived: re-decided from the recorded attempts, still incomplete
    assert main(["verify", "--json", *verify[1:], str(tmp_path / "cut.json")]) == 3
    assert json.loads(capsys.readouterr().out)["reason"] == "connection_cut"


def test_demo_exit_code_follows_the_decisions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate that passed everything would be caught by the demo itself."""

    def always_pass(envelope: bytes | None, **_: Any) -> Decision:
        return Decision(State.PASS, Status.SUCCESS, "reviewer_pass", "pass: broken gate", "")

    monkeypatch.setattr(gate.review.pipeline, "decide", always_pass)
    assert main(["demo", "--out", str(tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "pass (EXPECTED incomplete)" in out
    # the single-request cases: only healthy is still right (the large cases decide per
    # chunk in gate.review.chunked, which this patch does not reach)
    assert "4/11 as expected" in out  # and quota-fallback, a pass either way


def test_demo_out_must_be_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["demo", "--out", str(blocker)]) == 2
    assert "cannot create the output folder" in capsys.readouterr().err


def test_demo_as_a_process_needs_no_key_and_exits(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "review-gate-demo" / "healthy.json").is_file()
    assert "every case got its expected decision" in proc.stdout


#: flip-sha where the answer carries its own integrity (CRCs, or every whole copy of the
#: text checked against its deltas): the flip is caught before the verdict is read.
SHA_FLIP_CAUGHT = {"bedrock", "openai-responses"}


@pytest.mark.parametrize("provider", ["openai-responses", "azure-openai", "bedrock", "vertex"])
def test_demo_runs_every_case_in_the_cloud_dialects(
    provider: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = {thread.ident for thread in threading.enumerate()}
    code = main(["demo", "--provider", provider, "--json", "--out", str(tmp_path / provider)])
    out, _ = capsys.readouterr()
    assert code == 0, out
    assert {thread.ident for thread in threading.enumerate()} == before
    cases = {case["case"]: case for case in json.loads(out)["cases"]}
    expected = dict(EXPECTED)
    if provider in SHA_FLIP_CAUGHT:
        expected["flip-sha"] = "incomplete"
    if provider in ("gemini", "vertex"):  # a flipped finish reason is one nobody mapped
        expected["flip-done"] = "needs_human"
    assert {name: case["decision"]["state"] for name, case in cases.items()} == expected
    assert all(a["provider"] == provider for c in cases.values() for a in c["attempts"])
