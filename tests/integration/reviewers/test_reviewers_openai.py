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


@pytest.mark.parametrize("framing", ["chunked", "length"])
@pytest.mark.parametrize("body", [b"", b": ping\n\n", b": ping\n\n: ping\n\n"])
def test_an_empty_200_answer_is_named_and_not_retried(framing: str, body: bytes) -> None:
    """A real llama.cpp server answers a prompt longer than its context with a 200 and an
    empty event stream (issue 33): the framing is whole, so no byte was lost on the way;
    it is named with the fix and not retried three times as a cut."""
    outcome, count, _ = run([SimResponse(body=body, framing=framing)] * 3, attempts=3)
    assert count == 1
    attempt = outcome.last
    assert attempt is not None
    assert not attempt.complete
    assert attempt.reason == "empty_answer"
    assert "--ctx-size" in attempt.detail
    assert "num_ctx" in attempt.detail
    assert outcome.envelope is None


def test_a_stream_cut_before_its_first_event_is_still_a_cut() -> None:
    """The same empty answer whose framing is not whole (the connection closed before
    the terminal chunk) is a cut, retried."""
    from gate.lab.sim import wire_for

    head = wire_for("openai", ANSWER).index(b"\r\n\r\n") + 4
    outcome, count, _ = run([SimResponse(cut_after=head)] * 2, attempts=2)
    assert count == 2
    assert outcome.last is not None
    assert outcome.last.reason != "empty_answer"
    assert outcome.last.retryable


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
