"""review_diff: binding, prompt, transport, decision and certificate in one call."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from gate.certificate import envelope_from
from gate.config import Config, ReviewerConfig
from gate.decision import State, decide
from gate.errors import ConfigError, UsageError
from gate.pipeline import binding_for, config_sha256, public_url, review_diff
from gate.prompt import binding_in, build_prompt
from gate.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt

DIFF = b"+print('hello')\n"
KEY = "sk-unit-test-key-not-real"


def config(base_url: str, **reviewer: Any) -> Config:
    values: dict[str, Any] = {"provider": "openai", "model": MODEL, "base_url": base_url}
    values.update(reviewer)
    return Config(reviewer=ReviewerConfig(**values), policy_version="p9", min_confidence=0.5)


def answer(request: dict[str, Any]) -> str:
    binding = binding_in(extract_prompt("openai", request)[1])
    assert binding is not None
    obj = {
        "verdict": "pass",
        "reasons": ["prints hello"],
        "confidence": 0.6,
        "diff_sha": binding.diff_sha,
        "policy_version": binding.policy_version,
    }
    return "```json\n" + json.dumps(obj) + "\n```\n"


def test_binding_is_sha256_of_the_exact_bytes_and_the_policy() -> None:
    binding = binding_for(DIFF, config("http://127.0.0.1:1/v1"))
    assert binding.diff_sha == hashlib.sha256(DIFF).hexdigest()
    assert binding.policy_version == "p9"
    assert binding_for(DIFF + b" ", config("http://x")).diff_sha != binding.diff_sha


def test_public_url_drops_credentials_query_and_fragment() -> None:
    assert public_url("https://u:p@api.example:8443/v1?key=s#f") == "https://api.example:8443/v1"
    assert public_url("http://[::1]:80/review") == "http://[::1]:80/review"


def test_review_diff_decides_and_certifies_what_it_sent() -> None:
    with ReviewerSimulator("openai", answer) as sim:
        cfg = config(sim.base_url)
        result = review_diff(DIFF, cfg, api_key=KEY, extra_cert={"command": "unit", "run": 7})
        system, user = extract_prompt("openai", sim.requests[0])
    assert result.decision.state is State.PASS  # 0.6 passes because min_confidence is 0.5
    prompt = build_prompt(DIFF, binding=result.binding)
    assert (system, user) == (prompt.system, prompt.user)
    assert result.prompt_sha256 == prompt.sha256()
    cert = result.certificate
    assert cert["inputs"] == {
        "config": config_sha256(cfg),
        "diff": hashlib.sha256(DIFF).hexdigest(),
        "prompt": prompt.sha256(),
    }
    assert cert["binding"] == {"diff_sha": result.binding.diff_sha, "policy_version": "p9"}
    assert cert["context"]["reviewer"]["base_url"] == sim.base_url
    assert cert["context"]["min_confidence"] == 0.5
    assert (cert["context"]["command"], cert["context"]["run"]) == ("unit", 7)
    assert KEY not in json.dumps(cert)
    # The certificate carries the envelope the decision was made on.
    again = decide(envelope_from(cert), binding=result.binding, min_confidence=0.5)
    assert again.state is State.PASS
    assert len(cert["attempts"]) == 1


def test_instructions_reach_the_prompt() -> None:
    with ReviewerSimulator("openai", answer) as sim:
        cfg = config(sim.base_url)
        cfg = Config(reviewer=cfg.reviewer, instructions="Never log tokens.")
        review_diff(DIFF, cfg, api_key=None)
        user = extract_prompt("openai", sim.requests[0])[1]
    assert "````text\nNever log tokens.\n````" in user


def test_retry_pauses_go_through_the_given_sleep() -> None:
    pauses: list[float] = []
    script = [SimResponse(cut_after=50), SimResponse(cut_after=50)]
    with ReviewerSimulator("openai", answer, script=script) as sim:
        result = review_diff(
            DIFF, config(sim.base_url, attempts=3), api_key=None, sleep=pauses.append
        )
        assert sim.count == 3
    assert len(pauses) == 2
    assert result.decision.state is State.PASS
    assert [a.complete for a in result.outcome.attempts] == [False, False, True]


def test_unusable_settings_raise_before_any_request() -> None:
    with ReviewerSimulator("openai", answer) as sim:
        with pytest.raises(ConfigError, match=r"reviewer\.model is not set"):
            review_diff(DIFF, config(sim.base_url, model=""), api_key=None)
        with pytest.raises(UsageError, match="unknown reviewer provider"):
            review_diff(DIFF, config(sim.base_url, provider="bard"), api_key=None)
        assert sim.count == 0
