"""The action's statement, predicate and SARIF, against the fake GitHub (issue 25).

Each kind of run (a pass, a fail with findings, a review in chunks, a run blocked by a
guard, a cut answer) leaves beside its certificate an in-toto statement naming the head
commit, the reviewed diff and the certificate's digest, checked by the in-toto bindings
and schemas; with ``sarif: true`` a SARIF log checked by the OASIS schema. A file that
cannot be written leaves the decision, the status and the exit code as they were, and
the summary says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gate.action.report import md
from gate.export import statement
from gate.lab.sim import SimResponse
from tests.export_oracles import check_sarif, check_statement
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_findings_fake_github import REASONS, answer
from tests.integration.action.test_run_chunked import CONFIG as CHUNKED
from tests.integration.action.test_run_chunked import large_diff
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

RUNS = {
    "pass": (base.DIFF, None, answer(["src/calc.py:2: fine"], "pass", 0.95), 0, "pass"),
    "fail": (base.DIFF, None, answer(REASONS), 1, "fail"),
    "chunked": (large_diff(), CHUNKED, answer(["all good"], "pass", 0.95), 0, "pass"),
    "blocked": (
        base.DIFF,
        "exclude: ['**']\nnothing_in_scope: block\n",
        answer(["never asked"]),
        3,
        "needs_human",
    ),
    "nothing-in-scope": (base.DIFF, "exclude: ['**']\n", answer(["never asked"]), 0, "pass"),
    "cut": (base.DIFF, None, None, 3, "incomplete"),
}


def _gate(tmp_path: Path, fake: Any, sim_factory: Any, name: str) -> Any:
    diff, config, respond, _code, _state = RUNS[name]
    setup_pull(fake, diff=diff, config=config)
    script = (SimResponse(content="x" * 300, cut_after=200),) if respond is None else ()
    sim = sim_factory(respond, script)
    return run_gate(tmp_path, fake, sim, pr_payload(), inputs={"sarif": "true"})


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_run_leaves_a_statement_and_sarif_beside_its_certificate(
    tmp_path: Path, fake: Any, sim_factory: Any, name: str
) -> None:
    result = _gate(tmp_path, fake, sim_factory, name)
    _diff, _config, _respond, code, state = RUNS[name]
    assert result.code == code, result.stdout
    assert result.outputs["state"] == state
    cert_path = Path(result.outputs["certificate"])
    made_path = Path(result.outputs["statement"])
    assert made_path == statement.path_beside(cert_path)
    made = json.loads(made_path.read_text("utf-8"))
    check_statement(made)
    cert_bytes = cert_path.read_bytes()
    predicate = made["predicate"]
    assert predicate == json.loads(Path(result.outputs["predicate"]).read_text("utf-8"))
    assert predicate["certificate"]["sha256"] == hashlib.sha256(cert_bytes).hexdigest()
    assert predicate["commit"] == HEAD
    assert predicate["decision"]["state"] == state
    assert predicate["decision"]["family"] == json.loads(cert_bytes)["decision"]["family"]
    assert predicate["decision"]["family"] == result.outputs["family"]
    assert predicate["diff_sha"] == (result.outputs["diff-sha"] or None)
    assert {"gitCommit": HEAD} in [s["digest"] for s in made["subject"]]
    assert (predicate["chunks"] is not None) == (name == "chunked")
    assert base.API_KEY not in made_path.read_text("utf-8")
    log = json.loads(Path(result.outputs["sarif"]).read_text("utf-8"))
    check_sarif(log)
    assert log["runs"][0]["properties"]["reviewGate"]["commit"] == HEAD
    if name == "fail":
        located = [r["locations"][0]["physicalLocation"] for r in log["runs"][0]["results"]]
        assert [(p["artifactLocation"]["uri"], p["region"]["startLine"]) for p in located] == [
            ("src/calc.py", 2),
            ("src/calc.py", 1),
        ]
        assert {r["level"] for r in log["runs"][0]["results"]} == {"error"}


def test_sarif_is_written_only_when_asked(tmp_path: Path, fake: Any, sim_factory: Any) -> None:
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(answer(["fine"], "pass", 0.95)), pr_payload())
    assert result.code == 0
    assert result.outputs["sarif"] == ""
    assert result.outputs["statement"] != ""
    assert not list(tmp_path.glob("*.sarif"))


def test_exports_that_cannot_be_written_leave_the_decision_and_say_so(
    tmp_path: Path, fake: Any, sim_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The statement's and the SARIF log's writes fail (a full disk, say): the pass
    stands, on GitHub and in the exit code, and the summary names what is missing."""
    from gate.errors import AtomicWriteError
    from gate.export import sarif

    def refuse(*_a: object, **_k: object) -> str:
        raise AtomicWriteError("no space left on the device")

    monkeypatch.setattr(statement, "write", refuse)
    monkeypatch.setattr(sarif, "write", refuse)
    setup_pull(fake)
    sim = sim_factory(answer(["src/calc.py:2: fine"], "pass", 0.95))
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"sarif": "true"})
    assert result.code == 0
    assert fake.status_list(HEAD)[-1]["state"] == "success"
    assert (result.outputs["statement"], result.outputs["sarif"]) == ("", "")
    assert md("no in-toto statement was written: no space left on the device") in result.summary
    assert md("no SARIF file was written: no space left on the device") in result.summary


def test_a_carried_run_names_how_many_chunks_were_carried_and_from_which_certificate(
    tmp_path: Path, fake_github: Any, sim_factory: Any
) -> None:
    """Issue 24's incremental review: the second push carries the first run's chunk
    passes. Its statement counts the carried chunks and names the certificate they were
    first recorded in, by digest; both statements pass every check, and so does SARIF."""
    from gate.lab.demo import ScriptedModel
    from tests.fakes.events import pull_request_event
    from tests.integration.action.test_incremental_fake_github import pushed
    from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH, NEW_HEAD, REPO

    sim = sim_factory(ScriptedModel("pass"))
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    # both runs ask for SARIF: the config is part of the question a chunk is carried by
    fake_github.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=large_diff())
    fake_github.set_file(BASE, CONFIG_PATH, CHUNKED)
    first = run_gate(tmp_path / "one", fake_github, sim, pr_payload(), inputs={"sarif": "true"})
    assert first.code == 0, first.stdout
    fake_github.move_head(7, NEW_HEAD)
    fake_github.add_compare(BASE, NEW_HEAD, pushed())
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=NEW_HEAD, base_sha=BASE
    )
    second = run_gate(tmp_path / "two", fake_github, sim, payload, inputs={"sarif": "true"})
    assert second.code == 0, second.stdout
    made = json.loads(Path(second.outputs["statement"]).read_text("utf-8"))
    check_statement(made)
    chunks = made["predicate"]["chunks"]
    kept = [r for r in second.certificate["context"]["chunks"]["reviews"] if "carried" in r]
    assert chunks["carried"] == len(kept) >= 1
    first_sha = hashlib.sha256(Path(first.outputs["certificate"]).read_bytes()).hexdigest()
    assert chunks["carried_from"] == sorted({r["carried"]["certificate_sha"] for r in kept})
    assert chunks["carried_from"] == [first_sha]
    check_sarif(json.loads(Path(second.outputs["sarif"]).read_text("utf-8")))
