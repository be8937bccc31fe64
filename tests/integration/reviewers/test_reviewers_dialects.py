"""Every dialect against a byte-exact local server: what completes, what does not, and why."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from gate.decide.attempt import EndReason, FinishReason, ReviewOutcome
from gate.decide.envelope import verify_text
from gate.lab.sim import (
    DIALECTS,
    ReviewerSimulator,
    SimRequest,
    SimResponse,
    render_events,
    wire_for,
)
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(60)

SSE = ("openai", "anthropic", "gemini", "openai-responses", "azure-openai", "vertex")
#: Every dialect that streams a model's own words (all but MC1, which seals its answer itself).
STREAMED = (*SSE, "bedrock")
ANSWER = 'Reviewed.\n```json\n{"verdict": "pass", "reasons": ["ok"]}\n```\n'
MISSING_END = {
    "openai": "missing_done",
    "anthropic": "missing_message_stop",
    "gemini": "missing_finish_reason",
    "mc1": "envelope_missing_sentinel",
    "openai-responses": "missing_response_completed",
    "azure-openai": "missing_done",
    "bedrock": "missing_message_stop",
    "vertex": "missing_finish_reason",
}
LENGTH = {
    "openai": "length",
    "anthropic": "max_tokens",
    "gemini": "MAX_TOKENS",
    "openai-responses": "max_output_tokens",
    "azure-openai": "length",
    "bedrock": "max_tokens",
    "vertex": "MAX_TOKENS",
}
REFUSAL = {
    "openai": "content_filter",
    "anthropic": "refusal",
    "gemini": "SAFETY",
    "openai-responses": "content_filter",
    "azure-openai": "content_filter",
    "bedrock": "guardrail_intervened",
    "vertex": "SAFETY",
}


def run(
    dialect: str, script: list[SimResponse], **overrides: Any
) -> tuple[ReviewOutcome, int, list[SimRequest]]:
    sleeps: list[float] = []
    with ReviewerSimulator(dialect, lambda _req: ANSWER, script=script) as sim:
        outcome = review(sim.settings(**overrides), system="SYS", user="USER", sleep=sleeps.append)
    for attempt in outcome.attempts:  # every detail: one printable line, or empty when complete
        assert "\n" not in attempt.detail
        assert len(attempt.detail) <= 480
        assert bool(attempt.detail) is not attempt.complete
    return outcome, sim.count, sim.exchanges


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_clean_stop_is_sealed(dialect: str, framing: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(framing=framing)])
    attempt = outcome.last
    assert attempt is not None
    assert attempt.complete, attempt.detail
    assert attempt.reason == ""
    assert attempt.end_reason is EndReason.TRAILER
    expected_finish = FinishReason.NONE if dialect == "mc1" else FinishReason.STOP
    assert attempt.finish_reason is expected_finish
    assert outcome.envelope is not None
    assert verify_text(outcome.envelope) == ANSWER
    body = b"".join(render_events(dialect, ANSWER))
    assert outcome.raw == body  # the body bytes exactly as sent
    assert attempt.raw_sha256 == hashlib.sha256(body).hexdigest()
    assert attempt.bytes_received == len(body)
    assert count == 1
    if dialect == "mc1":
        assert outcome.envelope == body  # passed on as received, never re-sealed
    else:
        assert attempt.usage  # usage recorded
        assert attempt.request_id


def test_requests_follow_each_dialects_wire_format() -> None:
    _, _, (openai,) = run("openai", [], api_key="sk-o", max_tokens=77)
    assert openai.path == "/v1/chat/completions"
    assert openai.headers["authorization"] == "Bearer sk-o"
    assert openai.body["max_tokens"] == 77
    assert openai.body["stream"] is True
    assert openai.body["stream_options"] == {"include_usage": True}

    _, _, (anthropic,) = run("anthropic", [], api_key="sk-a", max_tokens=77)
    assert anthropic.path == "/v1/messages"
    assert anthropic.headers["x-api-key"] == "sk-a"
    assert anthropic.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in anthropic.headers
    assert anthropic.body == {
        "model": "sim-model",
        "system": "SYS",
        "messages": [{"role": "user", "content": "USER"}],
        "max_tokens": 77,
        "temperature": 0.0,
        "stream": True,
    }

    _, _, (gemini,) = run("gemini", [], api_key="g-key", max_tokens=77)
    assert gemini.path == "/v1beta/models/sim-model:streamGenerateContent?alt=sse"
    assert gemini.headers["x-goog-api-key"] == "g-key"
    assert "g-key" not in gemini.path
    assert gemini.body == {
        "systemInstruction": {"parts": [{"text": "SYS"}]},
        "contents": [{"role": "user", "parts": [{"text": "USER"}]}],
        "generationConfig": {"maxOutputTokens": 77, "temperature": 0.0},
    }

    _, _, (mc1,) = run("mc1", [], max_tokens=77)
    assert mc1.path == "/review"
    assert mc1.headers["accept"] == "application/x-mc1"
    nonce = mc1.body.pop("nonce")  # fresh for each request: what the signature covers
    assert re.fullmatch(r"[0-9a-f]{32}", nonce), nonce
    assert mc1.body == {
        "model": "sim-model",
        "system": "SYS",
        "user": "USER",
        "max_tokens": 77,
        "temperature": 0.0,
    }
    _, _, (again,) = run("mc1", [], max_tokens=77)
    assert again.body["nonce"] != nonce


@pytest.mark.parametrize("dialect", STREAMED)
def test_length_stop_is_token_exhaustion_and_final(dialect: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(finish="length")], attempts=3)
    attempt = outcome.last
    assert attempt is not None
    assert not attempt.complete
    assert attempt.reason == "token_exhaustion"
    assert attempt.finish_reason is FinishReason.LENGTH
    assert attempt.provider_finish_reason == LENGTH[dialect]
    assert attempt.end_reason is EndReason.TRAILER  # ended properly: not a cut
    assert "raise max_tokens" in attempt.detail
    assert outcome.envelope is None
    assert count == 1  # a complete answer is not retried


@pytest.mark.parametrize("dialect", STREAMED)
def test_refusal_or_safety_stop_blocks_and_is_final(dialect: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(finish="refusal")], attempts=3)
    attempt = outcome.last
    assert attempt is not None
    # Azure's content filter blocks with its own reason
    assert attempt.reason == ("content_filter" if dialect == "azure-openai" else "refusal")
    assert attempt.finish_reason is FinishReason.REFUSAL
    assert attempt.provider_finish_reason == REFUSAL[dialect]
    assert outcome.envelope is None
    assert count == 1


@pytest.mark.parametrize("dialect", STREAMED)
@pytest.mark.parametrize(
    ("kind", "retried"), [("invalid_request_error", False), ("overloaded_error", True)]
)
def test_error_frame_followed_by_the_end_marker_is_void(
    dialect: str, kind: str, retried: bool
) -> None:
    outcome, count, _ = run(dialect, [SimResponse(error_frame=kind)] * 2, attempts=2)
    first = outcome.attempts[0]
    assert first.reason == "error_frame"
    assert first.end_reason is EndReason.ERROR_FRAME
    assert first.retryable is retried
    # everything else about the stream was complete, and it still did not pass
    assert first.provider_finish_reason is not None
    if retried:
        assert count == 2
        assert [a.reason for a in outcome.attempts] == ["error_frame", "error_frame"]
    else:
        assert count == 1
    assert outcome.envelope is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_missing_end_marker_is_incomplete(dialect: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(end_marker=False)] * 3, attempts=3)
    assert outcome.envelope is None
    assert {a.reason for a in outcome.attempts} == {MISSING_END[dialect]}
    assert all(a.end_reason is EndReason.TRAILER for a in outcome.attempts)
    # an SSE stream that ended without its marker may be cut: retried; a wrongly built
    # envelope arrived whole (length and digest matched): not retried
    assert count == (1 if dialect == "mc1" else 3)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_end_marker_without_finish_reason_is_incomplete(dialect: str) -> None:
    outcome, _, _ = run(dialect, [SimResponse(finish="none")], attempts=1)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "missing_finish_reason"
    assert attempt.finish_reason is FinishReason.NONE
    assert outcome.envelope is None


def test_gemini_stream_without_finish_reason_is_incomplete() -> None:
    outcome, _, _ = run("gemini", [SimResponse(finish="none")], attempts=1)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "missing_finish_reason"
    assert attempt.retryable
    assert b"finishReason" not in outcome.raw
    assert outcome.envelope is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_close_delimited_body_is_refused(dialect: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(framing="close")], attempts=3)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "close_delimited"
    assert attempt.end_reason is EndReason.SOCKET_CLOSE
    assert outcome.raw == b"".join(render_events(dialect, ANSWER))  # all of it, still refused
    assert outcome.envelope is None
    assert count == 1


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("keep", [1, 40, -40, -1])
def test_a_cut_connection_is_incomplete_and_retried(dialect: str, keep: int) -> None:
    wire = wire_for(dialect, ANSWER)
    cut = keep if keep > 0 else len(wire) + keep
    outcome, count, _ = run(dialect, [SimResponse(cut_after=cut)] * 2, attempts=2)
    attempt = outcome.last
    assert attempt is not None
    assert not attempt.complete
    assert attempt.end_reason is EndReason.SOCKET_CLOSE
    body = b"".join(render_events(dialect, ANSWER))
    if dialect == "mc1" and attempt.bytes_received not in (0, len(body)):
        assert attempt.reason == "envelope_length_mismatch"
    else:
        assert attempt.reason == "connection_cut"
    assert attempt.retryable
    assert count == 2
    assert outcome.envelope is None


@pytest.mark.parametrize("dialect", SSE)
def test_malformed_event_is_final_and_not_sealed(dialect: str) -> None:
    body = b"".join(render_events(dialect, ANSWER))
    broken = body.replace(b'"', b"'", 1)  # the first event's JSON no longer parses
    outcome, count, _ = run(dialect, [SimResponse(body=broken)], attempts=3)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "malformed_event"
    assert outcome.envelope is None
    assert count == 1


def test_mc1_digest_mismatch_is_retried_and_a_bad_header_is_not() -> None:
    body = b"".join(render_events("mc1", ANSWER))
    flipped = bytearray(body)
    flipped[-10] ^= 0x01
    outcome, count, _ = run("mc1", [SimResponse(body=bytes(flipped))], attempts=2)
    assert [a.reason for a in outcome.attempts] == ["envelope_digest_mismatch", ""]
    assert outcome.envelope == body
    assert count == 2

    outcome, count, _ = run("mc1", [SimResponse(body=b"HTTP/1.1 oops " + body)], attempts=2)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "envelope_missing_header"
    assert count == 1


def test_mc1_trailing_bytes_stop_the_read() -> None:
    body = b"".join(render_events("mc1", ANSWER))
    outcome, _, _ = run("mc1", [SimResponse(body=body + b"extra")], attempts=1)
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "envelope_trailing_bytes"
    assert outcome.envelope is None


def test_anthropic_pings_anywhere_are_harmless() -> None:
    events = render_events("anthropic", ANSWER)
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    body = ping + ping.join(events) + ping
    outcome, _, _ = run("anthropic", [SimResponse(body=body)], attempts=1)
    assert outcome.envelope is not None
    assert verify_text(outcome.envelope) == ANSWER


def test_secrets_never_reach_details_or_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")  # bedrock signs with the key
    key = "sk-secret-DO-NOT-LEAK-1234567890"
    echo = '{"error": {"type": "invalid_api_key", "message": "Incorrect API key provided: %s"}}'
    for dialect in DIALECTS:
        script = [SimResponse(status=401, error_body=echo % key)]
        with ReviewerSimulator(dialect, script=script) as sim:
            settings = sim.settings(api_key=key)
            outcome = review(settings, system="s", user="u")
        attempt = outcome.last
        assert attempt is not None
        assert attempt.reason == "http_401"
        assert "[redacted]" in attempt.detail
        assert key not in repr(settings)
        assert key not in repr(outcome.attempts)
        assert key not in str(attempt.to_json())


HUGE_INT = "1" * 5000  # more digits than Python's int conversion allows: a ValueError
DEEP = "[" * 100_000  # deeper than the recursion limit: a RecursionError


@pytest.mark.parametrize("dialect", SSE)
@pytest.mark.parametrize(("data", "error"), [(HUGE_INT, "4300 digits"), (DEEP, "levels deep")])
def test_json_python_cannot_read_is_a_malformed_event_with_the_record_kept(
    dialect: str, data: str, error: str
) -> None:
    body = f"data: {data}\n\n".encode()
    outcome, count, _ = run(dialect, [SimResponse(body=body)])
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "malformed_event"
    assert error in attempt.detail
    assert not attempt.complete
    assert not attempt.retryable
    assert outcome.envelope is None
    assert outcome.raw == body  # the bytes are kept for --save-response and the certificate
    assert attempt.raw_sha256 == hashlib.sha256(body).hexdigest()
    assert count == 1


@pytest.mark.parametrize("dialect", SSE)
def test_a_deeply_nested_error_body_is_still_the_http_status(dialect: str) -> None:
    outcome, count, _ = run(dialect, [SimResponse(status=400, error_body=DEEP)])
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "http_400"
    assert attempt.http_status == 400
    assert count == 1
