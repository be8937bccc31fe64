"""Fallback reviewers through real sockets: the primary's quota is exhausted (429
``insufficient_quota``), the first fallback is out (503 on every attempt), the second is cut
on every attempt, the third answers; every reviewer asked is certified and paid for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.config.load import parse_config
from gate.config.model import Config, ReviewerConfig, fallback_keys
from gate.decide.decision import Family, State
from gate.errors import ConfigError
from gate.lab.demo import ScriptedModel
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse
from gate.review.pipeline import review_diff
from tests.unit.reviewers.test_limits import OPENAI_QUOTA

DIFF = (Path(__file__).resolve().parents[2] / "gate" / "data" / "sample.diff").read_bytes()


def reviewer(sim: ReviewerSimulator, **over: Any) -> ReviewerConfig:
    return ReviewerConfig(
        provider=sim.dialect,
        model=MODEL,
        base_url=sim.base_url,
        attempts=2,
        read_timeout=5.0,
        deadline=20.0,
        **over,
    )


@pytest.fixture
def sims() -> Iterator[list[ReviewerSimulator]]:
    started = [
        ReviewerSimulator("openai", ScriptedModel("pass")),
        ReviewerSimulator("anthropic", ScriptedModel("pass")),
        ReviewerSimulator("gemini", ScriptedModel("pass")),
        ReviewerSimulator("openai-responses", ScriptedModel("pass")),
    ]
    for sim in started:
        sim.start()
    yield started
    for sim in started:
        sim.stop()


def test_quota_then_outage_then_cut_then_the_fallback_answers(
    sims: list[ReviewerSimulator],
) -> None:
    primary, out, cut, answers = sims
    primary.queue(SimResponse(status=429, error_body=json.dumps(OPENAI_QUOTA)))
    out.queue(SimResponse(status=503), SimResponse(status=503))
    cut.queue(SimResponse(cut_after=150), SimResponse(cut_after=150))
    config = Config(
        reviewer=reviewer(primary),
        fallbacks=(reviewer(out), reviewer(cut), reviewer(answers)),
    )
    result = review_diff(
        DIFF, config, api_key="k0", fallback_keys=("k1", "k2", "k3"), sleep=lambda _s: None
    )
    assert result.decision.state is State.PASS
    assert [s.count for s in sims] == [1, 2, 2, 1]  # the quota stop is not retried
    assert [r.decision.reason for r in result.earlier] == [
        "quota_exhausted",
        "http_503",
        "connection_cut",
    ]
    assert all(r.decision.family is Family.UNAVAILABLE for r in result.earlier)
    assert result.reviewer.provider == "openai-responses"
    assert len(result.paid_attempts()) == 6  # every request paid for, in order
    fallback = result.certificate["context"]["fallback"]
    assert fallback["answered_by"]["position"] == 4
    assert fallback["answered_by"]["provider"] == "openai-responses"
    assert [e["decision"]["reason"] for e in fallback["earlier"]] == [
        "quota_exhausted",
        "http_503",
        "connection_cut",
    ]
    assert "owns that account" in fallback["earlier"][0]["attempts"][0]["detail"]
    notes = "\n".join(result.notes)
    assert "reviewer 1 of 4 (openai sim-model) could not answer: quota_exhausted" in notes
    assert "fallback reviewer 4 (openai-responses sim-model) was asked and decided" in notes


def test_without_fallback_keys_only_the_reviewer_is_asked(
    sims: list[ReviewerSimulator],
) -> None:
    primary, fallback = sims[0], sims[3]
    primary.queue(SimResponse(status=429, error_body=json.dumps(OPENAI_QUOTA)))
    config = Config(reviewer=reviewer(primary), fallbacks=(reviewer(fallback),))
    result = review_diff(DIFF, config, api_key="k0", sleep=lambda _s: None)  # as replay asks
    assert result.decision.reason == "quota_exhausted"
    assert fallback.count == 0
    assert not result.earlier


def test_a_fallback_without_its_key_is_a_config_error_naming_the_setting() -> None:
    config = parse_config(
        "reviewer: {provider: openai, model: m}\n"
        "fallbacks:\n  - {provider: anthropic, model: c, api_key_env: FALLBACK_KEY}\n",
        source="cfg.yml",
    )
    with pytest.raises(ConfigError) as caught:
        fallback_keys(config, {"OPENAI_API_KEY": "x" * 20})
    err = caught.value
    assert err.reason == "config_fallback_key"
    assert err.key == "fallbacks.0.api_key_env"
    assert "FALLBACK_KEY" in err.message
    assert "secrets.FALLBACK_KEY" in err.message
    assert fallback_keys(config, {"FALLBACK_KEY": "y" * 20}) == ("y" * 20,)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("fallbacks: [{provider: nope, model: m}]", "fallbacks"),
        ("fallbacks: [{provider: openai, modle: m}]", "modle"),
        ("fallbacks: {provider: openai}", "fallbacks"),
        (
            "fallbacks: [{provider: openai}, {provider: openai}, {provider: openai}, "
            "{provider: openai}]",
            "fallbacks",
        ),
    ],
)
def test_a_wrong_fallbacks_list_is_refused_with_its_line(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("reviewer: {provider: openai, model: m}\n" + text + "\n", source="c.yml")
    assert where in caught.value.message
    assert "line 2" in caught.value.message
