"""``review-gate review --statement --sarif`` end to end, then ``verify --statement``.

Every kind of run the command can end in (a pass, a fail with findings on lines and off
them, a review in chunks that passes and one that fails, a run blocked before any call,
an answer that is no verdict, a cut answer) writes a certificate, its in-toto statement
and a SARIF log. Each statement is checked by the in-toto bindings, the in-toto spec's
schema and the predicate's schema; each SARIF log by the OASIS SARIF 2.1.0 schema. Then
``verify --statement`` accepts each statement with its own certificate and diff, and
refuses it with any other.

Carried chunks (issue 24, incremental review) are not covered: that feature is not on
this branch; its certificate rows will reach the statement through the chunk manifest's
digest, as these do.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.export import sarif, statement
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.prompt import binding_in
from tests.export_oracles import check_sarif, check_statement
from tests.verdicts import fenced_verdict

SECRET = "sk-test-0123456789abcdef-not-real"
COMMIT = "c0ffee" + "0" * 34
SMALL = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1 +1,2 @@\n-retries = 0\n+retries = 3\n+timeout = 9\n"
)
#: reviewer words that must never reach the statement (and reach SARIF only inert)
MARK = "Zq7-reviewer-words"


def big_diff(files: int = 8, lines: int = 30) -> bytes:
    out = b""
    for i in range(files):
        name = f"src/m{i}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += f"@@ -1 +1,{lines} @@\n-old\n".encode()
        out += b"".join(f"+value_{j} = {i} * {j}\n".encode() for j in range(lines))
    return out


def answering(verdict: str, reasons: list[str] | None = None) -> Callable[[dict[str, Any]], str]:
    """A bound verdict for whatever chunk or diff the prompt carries."""

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        return fenced_verdict(
            binding,
            before="Reviewed.\n",
            verdict=verdict,
            reasons=reasons or [f"{MARK} [link](https://example.invalid) {{0}}"],
            confidence=0.95,
        )

    return respond


@dataclass(frozen=True)
class Case:
    name: str
    diff: bytes
    config: str
    respond: Callable[[dict[str, Any]], str] | None
    script: tuple[SimResponse, ...]
    code: int
    state: str
    chunked: bool = False


FINDINGS = [
    f"app.py:2: {MARK} retries are unbounded",
    f"app.py:40: {MARK} a line outside the diff",
    f"{MARK} no line at all",
]
CASES = [
    Case("pass", SMALL, "", answering("pass"), (), 0, "pass"),
    Case("fail", SMALL, "", answering("fail", FINDINGS), (), 1, "fail"),
    Case("chunked-pass", big_diff(), "max_chunk_bytes: 2048\n", answering("pass"), (), 0, "pass",
         True),
    Case(
        "chunked-fail",
        big_diff(),
        "max_chunk_bytes: 2048\n",
        answering("fail", [f"src/m1.py:3: {MARK} chunk finding"]),
        (),
        1,
        "fail",
        True,
    ),
    Case(
        "blocked-nothing",
        SMALL,
        "exclude: ['**']\nnothing_in_scope: block\n",
        answering("pass"),
        (),
        3,
        "needs_human",
    ),
    Case("passed-nothing-in-scope", SMALL, "exclude: ['**']\n", answering("pass"), (), 0, "pass"),
    Case("no-verdict", SMALL, "", lambda _r: f"{MARK} no fence here", (), 3, "needs_human"),
    Case(
        "cut",
        SMALL,
        "reviewer:\n  attempts: 1\n",
        None,
        (SimResponse(content="x" * 400, cut_after=300),),
        3,
        "incomplete",
    ),
]  # fmt: skip


@dataclass(frozen=True)
class Written:
    code: int
    folder: Path
    diff: Path
    cert: Path
    statement: Path
    sarif: Path
    selected: bytes


def run_review(tmp: Path, case: Case, capsys: pytest.CaptureFixture[str]) -> Written:
    folder = tmp / case.name
    folder.mkdir()
    diff, config = folder / "change.diff", folder / "review-gate.yml"
    diff.write_bytes(case.diff)
    config.write_text(case.config or "policy_version: '1'\n", "utf-8")
    cert = folder / "run.certificate.json"
    paths = (cert, folder / "run.statement.json", folder / "run.sarif")
    with ReviewerSimulator("openai", case.respond, script=case.script) as sim:
        code = main(
            [
                "review", "--diff", str(diff), "--config", str(config), "--provider", "openai",
                "--model", MODEL, "--base-url", sim.base_url, "--attempts", "1",
                "--commit", COMMIT, "--certificate", str(paths[0]), "--statement", str(paths[1]),
                "--sarif", str(paths[2]),
            ]
        )  # fmt: skip
    capsys.readouterr()
    recorded = json.loads(cert.read_text("utf-8"))
    selected = case.diff if recorded["binding"]["diff_sha"] == _sha(case.diff) else b""
    return Written(code, folder, diff, *paths, selected)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_run_writes_a_statement_and_sarif_the_standards_accept(
    tmp_path: Path, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_review(tmp_path, case, capsys)
    assert done.code == case.code
    cert_bytes = done.cert.read_bytes()
    raw = done.statement.read_bytes()
    made = json.loads(raw)
    check_statement(made)
    predicate = made["predicate"]
    cert = json.loads(cert_bytes)
    assert predicate["decision"]["state"] == case.state == cert["decision"]["state"]
    assert predicate["certificate"]["sha256"] == _sha(cert_bytes)
    assert predicate["decision"]["family"] == cert["decision"]["family"]
    assert predicate["decision"]["family"] is not None
    assert predicate["diff_sha"] == cert["binding"]["diff_sha"]
    assert predicate["commit"] == COMMIT
    assert {"gitCommit": COMMIT} in [s["digest"] for s in made["subject"]]
    assert (predicate["chunks"] is not None) == case.chunked
    if case.chunked:
        assert (
            predicate["chunks"]["manifest_sha256"]
            == (cert["context"]["chunks"]["manifest"]["sha256"])
        )
    # never reviewer text, never the key: the certificate is named by its digest only
    assert MARK not in raw.decode("ascii")
    assert SECRET not in raw.decode("ascii")
    log = json.loads(done.sarif.read_text("utf-8"))
    check_sarif(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "review-gate"
    assert run["invocations"][0]["executionSuccessful"] == (case.state in ("pass", "fail"))
    level = "error" if case.state == "fail" else "warning"
    assert all(r["level"] == level for r in run["results"])
    assert SECRET not in done.sarif.read_text("utf-8")


def test_findings_on_lines_are_results_and_the_rest_notifications(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_review(tmp_path, CASES[1], capsys)
    run = json.loads(done.sarif.read_text("utf-8"))["runs"][0]
    [result] = run["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "app.py"
    assert (region["startLine"], region["endLine"]) == (2, 2)
    assert result["partialFingerprints"][sarif.FINGERPRINT] == sarif.fingerprint(
        "app.py", f"{MARK} retries are unbounded", "1"
    )
    notes = [n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert notes[0] == "review-gate decided fail (reviewer_fail)"
    assert any("app.py:40 (outside the reviewed diff)" in n for n in notes)
    assert any(n.endswith("no line at all") for n in notes)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verify_accepts_each_statement_with_its_own_certificate_and_diff_only(
    tmp_path: Path, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_review(tmp_path, case, capsys)
    reviewed = done.folder / "reviewed.diff"
    reviewed.write_bytes(done.selected)
    argv = ["verify", "--statement", str(done.statement), "--from-certificate", str(done.cert)]
    code = main([*argv, "--diff", str(reviewed), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["statement"] == "matches"
    if case.name == "passed-nothing-in-scope":  # no reviewer call: no answer to re-decide
        assert (code, out["reason"]) == (3, "nothing_to_verify")
    else:
        assert code == (case.code if case.state != "blocked" else 3)
    # another diff: refused, naming the field
    other = done.folder / "other.diff"
    other.write_bytes(done.selected + b" ")
    assert main([*argv, "--diff", str(other), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["reason"] == "statement_mismatch"
    assert "predicate.diff_sha" in out["detail"]


def test_a_statement_path_that_cannot_be_written_leaves_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The statement is written after the certificate; when it cannot be (here: its path
    became a folder once checked), the exit code is the decision's and a note says so."""
    case = CASES[0]
    diff = tmp_path / "change.diff"
    diff.write_bytes(case.diff)
    cert, target = tmp_path / "c.json", tmp_path / "s.json"

    def respond(request: dict[str, Any]) -> str:
        target.mkdir(exist_ok=True)  # after the up-front check, before the write
        assert case.respond is not None
        return case.respond(request)

    with ReviewerSimulator("openai", respond) as sim:
        code = main(
            [
                "review", "--diff", str(diff), "--provider", "openai", "--model", MODEL,
                "--base-url", sim.base_url, "--certificate", str(cert),
                "--statement", str(target), "--sarif", str(target),
            ]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0
    assert f"note: no statement written to {target}" in err
    assert f"note: no SARIF written to {target}" in err
    assert statement.build(cert.read_bytes())["predicate"]["decision"]["state"] == "pass"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "the statement"),
        (b'{"_type": "https://in-toto.io/Statement/v0.1"}', "not an in-toto Statement v1"),
        (
            b'{"_type": "https://in-toto.io/Statement/v1", "predicateType": '
            b'"https://slsa.dev/provenance/v1"}',
            "not a review-gate decision",
        ),
        (b"[]", "not a JSON object"),
    ],
)
def test_a_malformed_or_foreign_statement_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, said: str
) -> None:
    done = run_review(tmp_path, CASES[0], capsys)
    bad = done.folder / "bad.json"
    bad.write_bytes(content)
    argv = ["verify", "--statement", str(bad), "--from-certificate", str(done.cert)]
    assert main([*argv, "--diff", str(done.diff)]) == 2
    assert said in capsys.readouterr().err


def test_statement_needs_a_certificate_and_a_diff_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_review(tmp_path, CASES[0], capsys)
    given = ["verify", "--statement", str(done.statement)]
    assert main([*given, "--diff", str(done.diff), "--policy-version", "1", "x.mc1"]) == 2
    assert "--statement needs --from-certificate" in capsys.readouterr().err
    assert main([*given, "--from-certificate", str(done.cert), "--diff", "-"]) == 2
    assert "give the diff as a file" in capsys.readouterr().err
