"""agreement: k answers on fresh connections against the simulator, through review_diff
and ``review-gate review --agreement``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate import cli
from gate.config.inputs import apply_inputs
from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.errors import ConfigError
from gate.lab.sim import MODEL, ReviewerSimulator, extract_prompt
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from tests.verdicts import fenced_verdict

DIFF = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -0,0 +1 @@\n+print('hello')\n"
KEY = "sk-agreement-test-key-not-real"


def scripted(verdicts: list[str]) -> Callable[[dict[str, Any]], str]:
    """Answer the n-th request with ``verdicts[n]`` (bound to what was asked)."""
    calls: list[int] = []

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        verdict = verdicts[len(calls) % len(verdicts)]
        calls.append(1)
        return fenced_verdict(binding, verdict=verdict, reasons=[f"it is a {verdict}"])

    return respond


def config(base_url: str, k: int) -> Config:
    reviewer = ReviewerConfig(provider="openai", model=MODEL, base_url=base_url)
    return apply_inputs(Config(reviewer=reviewer), {"agreement": str(k)})


def test_agreement_3_with_one_dissent_is_needs_human_unstable(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(scripted(["pass", "pass", "fail"]))
    result = review_diff(DIFF, config(sim.base_url, 3), api_key=KEY)
    assert sim.count == 3
    assert (result.decision.state, result.decision.reason) == (State.NEEDS_HUMAN, "unstable")
    assert "#3 fail (0.90" in result.decision.detail
    agreement = result.certificate["context"]["agreement"]
    assert (agreement["k"], agreement["asked"], agreement["stopped"]) == (3, 3, None)
    assert agreement["summary"] == "2/3 pass, 1/3 fail"
    envelopes = [a["envelope"] for a in agreement["answers"]]
    assert all(e is not None and e["base64"] for e in envelopes)
    assert len({e["sha256"] for e in envelopes}) == 2  # pass twice, fail once
    assert result.notes[0] == "agreement: 2/3 pass, 1/3 fail"


def test_agreement_3_all_passing_is_a_pass(sim_factory: Callable[..., ReviewerSimulator]) -> None:
    sim = sim_factory(scripted(["pass"]))
    result = review_diff(DIFF, config(sim.base_url, 3), api_key=KEY)
    assert sim.count == 3
    assert result.decision.state is State.PASS
    assert result.agreement() == "3/3 agree: pass"


def test_agreement_1_asks_once_and_records_no_agreement(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(scripted(["fail"]))
    result = review_diff(DIFF, config(sim.base_url, 1), api_key=KEY)
    assert sim.count == 1
    assert result.decision.state is State.FAIL
    assert "agreement" not in result.certificate["context"]


@pytest.mark.parametrize("bad", ["0", "6", "two", "1.5"])
def test_agreement_out_of_range_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError):
        apply_inputs(Config(), {"agreement": bad})


def test_review_cli_agreement_flag(
    sim_factory: Callable[..., ReviewerSimulator],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim = sim_factory(scripted(["pass", "fail"]))
    diff = tmp_path / "x.diff"
    diff.write_bytes(DIFF)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    code = cli.main(
        ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL,
         "--base-url", sim.base_url, "--agreement", "2", "--json"]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 3
    assert out["reason"] == "unstable"
    assert sim.count == 2


def test_the_asking_stops_at_the_first_answer_that_decides_a_block(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Issue 33: a fail first leaves no set of 3 that could pass: the other two are not
    asked nor paid for, the certificate says how many of the k were asked and why, and
    ``verify --from-certificate`` re-decides the short set as the run decided it."""
    from gate.review.certificate import write
    from gate.review.cost import cost_of

    sim = sim_factory(scripted(["fail", "pass", "pass"]))
    result = review_diff(DIFF, config(sim.base_url, 3), api_key=KEY)
    assert sim.count == 1
    assert (result.decision.state, result.decision.reason) == (State.FAIL, "reviewer_fail")
    agreement = result.certificate["context"]["agreement"]
    assert (agreement["k"], agreement["asked"], len(agreement["answers"])) == (3, 1, 1)
    assert agreement["stopped"].startswith("answer 1 of 3 decided a block (fail (0.90))")
    assert result.agreement() == "1/1 agree: fail; 1 of 3 asked (no answer set could still pass)"
    assert len(result.paid_attempts()) == 1
    assert len(cost_of(result.paid_attempts(), config(sim.base_url, 3)).attempts) == 1
    cert = tmp_path / "cert.json"
    write(str(cert), result.certificate)
    capsys.readouterr()
    diff = tmp_path / "x.diff"
    diff.write_bytes(DIFF)
    code = cli.main(["verify", "--from-certificate", str(cert), "--diff", str(diff), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert (code, out["state"], out["reason"]) == (1, "fail", result.decision.reason)
