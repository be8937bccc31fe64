"""review_diff: binding, prompt, transport, decision and certificate in one call."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State, binding_for, decide
from gate.errors import ConfigError, GateError, UsageError
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.certificate import envelope_from
from gate.review.pipeline import review_diff
from gate.review.prompt import build_prompt
from gate.review.result import blocked_certificate, config_sha256, public_url
from gate.review.scope import guard_coverage, nothing_reviewed, select_diff
from tests.verdicts import answer_to, read_words

DIFF = b"+print('hello')\n"
KEY = "sk-unit-test-key-not-real"


def config(base_url: str, **reviewer: Any) -> Config:
    values: dict[str, Any] = {"provider": "openai", "model": MODEL, "base_url": base_url}
    values.update(reviewer)
    return Config(reviewer=ReviewerConfig(**values), policy_version="p9", min_confidence=0.5)


def answer(request: dict[str, Any]) -> str:
    return answer_to(request, reasons=["prints hello"], confidence=0.6)


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
    assert cert["binding"] == {
        "diff_sha": result.binding.diff_sha,
        "policy_version": "p9",
        "read": read_words(result.binding),
    }
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


# --- the selection shared by the action and the CLI ---------------------------------

APP = b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\n"
PNG = b"diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n"
LOCK = (
    b"diff --git a/poetry.lock b/poetry.lock\n--- a/poetry.lock\n+++ b/poetry.lock\n@@ -1 +1 @@\n"
)


def test_select_diff_applies_include_exclude_and_the_byte_limit() -> None:
    cfg = Config(exclude=("*.lock",), max_diff_bytes=len(APP))
    selected = select_diff(APP + LOCK + PNG, cfg)
    assert selected.data == APP
    assert selected.coverage.reviewed == ("app.py",)
    assert {(s.path, str(s.why)) for s in selected.coverage.skipped} == {
        ("poetry.lock", "filtered"),
        ("logo.png", "binary"),
    }
    tight = select_diff(APP + APP.replace(b"app.py", b"b.py"), Config(max_diff_bytes=len(APP)))
    assert [str(s.why) for s in tight.coverage.skipped] == ["over_byte_limit"]


@pytest.mark.parametrize(
    ("diff", "cfg", "cause"),
    [
        (b"", Config(), "holds no file section"),
        (b"--- a/x\n+++ b/x\n", Config(), "no 'diff --git' headers"),
        (APP, Config(include=("src/**",)), "0 of 1 files reviewed (1 filtered)"),
        (PNG, Config(), "0 of 1 files reviewed (1 binary)"),
    ],
)
def test_nothing_reviewed_names_why(diff: bytes, cfg: Config, cause: str) -> None:
    decision = nothing_reviewed(select_diff(diff, cfg).coverage)
    assert decision is not None
    assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "nothing_reviewed")
    assert cause in decision.detail
    assert nothing_reviewed(select_diff(APP, Config()).coverage) is None


def test_guard_coverage_blocks_a_pass_only_when_partial_is_not_allowed() -> None:
    incomplete = decide(None, binding=binding_for(APP, Config()))  # a blocking decision
    partial = select_diff(APP + PNG, Config()).coverage
    complete = select_diff(APP + LOCK, Config(exclude=("*.lock",))).coverage
    with ReviewerSimulator("openai", answer) as sim:
        ok = review_diff(APP, config(sim.base_url), api_key=None).decision
    assert ok.state is State.PASS
    guarded, note = guard_coverage(ok, partial, allow_partial=False)
    assert (guarded.state, guarded.reason, note) == (State.NEEDS_HUMAN, "partial_coverage", None)
    assert guard_coverage(ok, partial, allow_partial=True) == (ok, None)
    assert guard_coverage(ok, complete, allow_partial=False) == (ok, None)  # filtered is intended
    kept, note = guard_coverage(incomplete, partial, allow_partial=False)
    assert kept is incomplete
    assert note == "partial coverage: 1 of 2 files reviewed (1 binary)"


def test_review_diff_with_partial_coverage_blocks_before_any_request() -> None:
    """Issue 20: coverage is decided before the reviewer is asked (and paid); with partial
    coverage allowed the review runs and the certificate records the manifest."""
    from dataclasses import replace

    selected = select_diff(APP + PNG, Config())
    with ReviewerSimulator("openai", answer) as sim:
        cfg = config(sim.base_url)
        result = review_diff(selected.data, cfg, api_key=None, coverage=selected.coverage)
        assert sim.count == 0
        with pytest.raises(GateError) as err:  # a manifest for other bytes is a bug
            review_diff(APP + b"+", cfg, api_key=None, coverage=selected.coverage)
        assert err.value.reason == "internal_error"
        allowed = review_diff(
            selected.data,
            replace(cfg, allow_partial_coverage=True),
            api_key=None,
            coverage=selected.coverage,
        )
        assert sim.count == 1
    assert (result.decision.state, result.decision.reason) == (
        State.NEEDS_HUMAN,
        "partial_coverage",
    )
    assert result.outcome.attempts == ()
    cert = result.certificate
    assert cert["decision"]["reason"] == "partial_coverage"
    assert cert["attempts"] == []
    assert cert["context"]["coverage"]["skipped"][0]["why"] == "binary"
    assert allowed.decision.reason == "reviewer_pass"
    assert allowed.certificate["context"]["coverage"]["complete"] is False


def test_blocked_certificate_has_no_attempts_and_no_envelope() -> None:
    selected = select_diff(b"", Config())
    decision = nothing_reviewed(selected.coverage)
    assert decision is not None
    cert = blocked_certificate(
        decision, selected.data, Config(), coverage=selected.coverage, extra_cert={"command": "x"}
    )
    assert cert["decision"]["reason"] == "nothing_reviewed"
    assert (cert["attempts"], cert["envelope"]) == ([], None)
    assert cert["binding"]["diff_sha"] == hashlib.sha256(b"").hexdigest()
    assert cert["context"]["command"] == "x"
    assert cert["context"]["coverage"]["reviewed"] == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/v1", "http://[::1"])
def test_a_base_url_that_is_no_url_is_a_usage_error_not_a_crash(url: str) -> None:
    """The action reads base_url from a config file: it must block with a reason, not crash."""
    with pytest.raises(UsageError) as caught:
        review_diff(DIFF, config(url), api_key=None)
    assert caught.value.reason == "bad_base_url"
    assert public_url(url) == "<invalid URL>"


def test_each_attempt_is_reported_as_it_ends_before_the_next_one() -> None:
    """on_attempt runs before the pause that precedes the next attempt: the CLI prints live."""
    events: list[str] = []
    script = [SimResponse(status=503, retry_after="0"), SimResponse(cut_after=50)]
    with ReviewerSimulator("openai", answer, script=script) as sim:
        result = review_diff(
            DIFF,
            config(sim.base_url, attempts=3),
            api_key=None,
            sleep=lambda s: events.append("pause"),
            on_attempt=lambda a: events.append(f"attempt {a.number} {a.reason or 'complete'}"),
        )
    assert events == [
        "attempt 1 http_503",
        "pause",
        "attempt 2 connection_cut",
        "pause",
        "attempt 3 complete",
    ]
    assert result.decision.state is State.PASS
    assert len(result.outcome.attempts) == 3
