"""OpenAI Chat Completions streaming against a byte-exact local server (127.0.0.1)."""

from __future__ import annotations

import pytest

from gate.decide.attempt import EndReason, FinishReason, ReviewOutcome
from gate.decide.envelope import verify_text
from gate.lab.sim import ReviewerSimulator, SimRequest, SimResponse
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(60)

ANSWER = '```json\n{"verdict": "pass"}\n```\nLooks fine.'


def run(
    script: list[SimResponse], **overrides: object
) -> tuple[ReviewOutcome, int, list[SimRequest]]:
    with ReviewerSimulator("openai", lambda _req: ANSWER, script=script) as sim:
        outcome = review(
            sim.settings(**overrides), system="sys", user="diff", sleep=lambda _s: None
        )
        return outcome, sim.count, sim.exchanges


def test_clean_stop_is_sealed_with_the_streamed_text() -> None:
    outcome, count, exchanges = run([])
    assert count == 1
    attempt = outcome.last
    assert attempt is not None
    assert attempt.complete
    assert (attempt.reason, attempt.end_reason, attempt.finish_reason) == (
        "",
        EndReason.TRAILER,
        FinishReason.STOP,
    )
    assert attempt.provider_finish_reason == "stop"
    assert attempt.request_id == "req_sim"
    assert attempt.usage["completion_tokens"] > 0
    assert outcome.envelope is not None
    assert verify_text(outcome.envelope) == ANSWER
    assert attempt.bytes_received == len(outcome.raw)
    request = exchanges[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["max_tokens"] == 4096
    assert request.body["temperature"] == 0.0
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert "authorization" not in request.headers  # no key: none sent (local servers)


def test_bearer_key_sent_when_given() -> None:
    with ReviewerSimulator("openai") as sim:
        review(sim.settings(api_key="sk-test-123"), system="s", user="u")
        assert sim.exchanges[0].headers["authorization"] == "Bearer sk-test-123"


def test_length_stop_is_token_exhaustion_not_a_cut() -> None:
    outcome, count, _ = run([SimResponse(finish="length")])
    attempt = outcome.last
    assert attempt is not None
    assert not attempt.complete
    assert attempt.reason == "token_exhaustion"
    assert attempt.finish_reason is FinishReason.LENGTH
    assert attempt.end_reason is EndReason.TRAILER
    assert "max_tokens" in attempt.detail
    assert outcome.envelope is None
    assert count == 1  # a complete answer is never retried


def test_error_frame_followed_by_done_is_void() -> None:
    outcome, _, _ = run([SimResponse(error_frame="invalid_request_error")])
    attempt = outcome.last
    assert attempt is not None
    assert not attempt.complete
    assert attempt.reason == "error_frame"
    assert attempt.end_reason is EndReason.ERROR_FRAME
    assert b"data: [DONE]" in outcome.raw
    assert outcome.envelope is None


def test_missing_done_is_incomplete_and_retried() -> None:
    outcome, count, _ = run([SimResponse(end_marker=False)] * 3, attempts=3)
    assert count == 3
    assert [a.reason for a in outcome.attempts] == ["missing_done"] * 3
    assert outcome.envelope is None


def test_close_delimited_body_is_refused() -> None:
    outcome, count, _ = run([SimResponse(framing="close")])
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "close_delimited"
    assert attempt.end_reason is EndReason.SOCKET_CLOSE
    assert b"data: [DONE]" in outcome.raw  # everything arrived, and it is still refused
    assert count == 1
