"""Each dialect's stream reader, fed bytes directly (no network): edge cases of the formats."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.decide.attempt import EndReason, FinishReason
from gate.decide.envelope import seal, verify
from gate.errors import TransportError
from gate.lab.sim import SimResponse, render_events
from gate.reviewers import anthropic, gemini, mc1, openai
from gate.reviewers.base import Exchange, Reply
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import load_object


def settings(provider: str) -> ReviewerSettings:
    return ReviewerSettings(provider=provider, model="m", base_url="http://127.0.0.1:1/")


def conclude(provider: str, body: bytes, **exchange: Any) -> Reply:
    module = {"openai": openai, "anthropic": anthropic, "gemini": gemini, "mc1": mc1}[provider]
    stream = module.Stream(settings(provider))
    sink_error = None
    try:
        stream.feed(body)
    except Exception as err:  # the MC1 reader raises to stop the read
        sink_error = err
    values: dict[str, Any] = {
        "status": 200,
        "headers": {"content-type": "text/event-stream"},
        "raw": body,
        "framing": "chunked",
        "failure": "",
        "failure_detail": "",
        "end_reason": EndReason.TRAILER,
        "retryable": False,
        "elapsed_s": 0.0,
        "first_byte_s": 0.0,
        "sink_error": sink_error,
    }
    values.update(exchange)
    reply: Reply = stream.conclude(Exchange(**values))
    return reply


def sse(*objects: object, event: str | None = None) -> bytes:
    out = b""
    for obj in objects:
        head = f"event: {event}\n" if event else ""
        data = obj if isinstance(obj, str) else json.dumps(obj)
        out += f"{head}data: {data}\n\n".encode()
    return out


def oa(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "mc1"])
def test_healthy_simulated_body_seals(provider: str) -> None:
    body = b"".join(render_events(provider, "hello ✓"))
    reply = conclude(provider, body)
    assert reply.complete, reply.detail
    assert reply.envelope is not None
    assert verify(reply.envelope) == "hello ✓".encode()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_cut_exchange_is_never_sealed_even_when_the_events_look_whole(provider: str) -> None:
    body = b"".join(render_events(provider, "hello"))
    reply = conclude(
        provider,
        body,
        failure="connection_cut",
        failure_detail="cut",
        end_reason=EndReason.SOCKET_CLOSE,
        retryable=True,
    )
    assert not reply.complete
    assert reply.reason == "connection_cut"
    assert reply.end_reason is EndReason.SOCKET_CLOSE


def test_openai_content_after_finish_is_malformed() -> None:
    body = sse(oa({"content": "a"}), oa({}, "stop"), oa({"content": "late"}), "[DONE]")
    reply = conclude("openai", body)
    assert reply.reason == "malformed_event"
    assert "after finish_reason" in reply.detail


def test_an_unpaired_surrogate_escape_is_the_models_end_not_a_crash() -> None:
    body = b'data: {"choices": [{"index": 0, "delta": {"content": "a\\ud800"}, '
    body += b'"finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'
    reply = conclude("openai", body)
    assert reply.reason == "unpaired_surrogate"  # the model wrote it: chosen
    assert "surrogate" in reply.detail
    assert reply.envelope is None


def test_openai_data_after_done_is_malformed() -> None:
    body = sse(oa({"content": "a"}, "stop"), "[DONE]", oa({"content": "b"}))
    assert conclude("openai", body).reason == "malformed_event"


def test_openai_refusal_field_is_a_refusal() -> None:
    body = sse(oa({"refusal": "I can't help with that."}), oa({}, "stop"), "[DONE]")
    reply = conclude("openai", body)
    assert reply.reason == "refusal"
    assert reply.finish_reason is FinishReason.REFUSAL
    assert "I can't help" in reply.detail


def test_openai_tool_calls_finish_is_not_a_stop() -> None:
    body = sse(oa({"content": "x"}), oa({}, "tool_calls"), "[DONE]")
    reply = conclude("openai", body)
    assert reply.reason == "unexpected_finish"
    assert reply.provider_finish_reason == "tool_calls"


def test_openai_event_error_frame_with_non_json_body() -> None:
    body = (
        sse(oa({"content": "x"}))
        + b"event: error\ndata: upstream died\n\n"
        + sse(oa({}, "stop"), "[DONE]")
    )
    reply = conclude("openai", body)
    assert reply.reason == "error_frame"
    assert "upstream died" in reply.detail


def test_openai_vllm_style_error_object_is_an_error_frame() -> None:
    error = {
        "object": "error",
        "message": "engine dead",
        "type": "InternalServerError",
        "code": 500,
    }
    body = sse(oa({"content": "x"}), error, oa({}, "stop"), "[DONE]")
    reply = conclude("openai", body)
    assert reply.reason == "error_frame"
    assert reply.retryable
    assert "engine dead" in reply.detail


def test_openai_usage_and_response_id_recorded() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5, "details": {"x": 1}}
    body = sse(oa({"content": "x"}, "stop"), {"id": "c1", "choices": [], "usage": usage}, "[DONE]")
    reply = conclude("openai", body, headers={})
    assert reply.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert reply.request_id == "c1"


def test_openai_non_streaming_json_answer_is_named() -> None:
    reply = conclude("openai", b'{"choices": []}\n', headers={"content-type": "application/json"})
    assert reply.reason == "not_event_stream"
    assert "application/json" in reply.detail
    assert not reply.retryable


def test_an_event_cut_before_its_blank_line_is_partial() -> None:
    body = sse(oa({"content": "a"}, "stop"), "[DONE]")[:-1]  # "[DONE]" lacks its blank line
    reply = conclude("openai", body)
    assert reply.reason == "partial_event"
    assert reply.retryable


def ant(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def test_anthropic_thinking_is_not_content_and_unknown_events_are_ignored() -> None:
    body = (
        ant("message_start", message={"id": "msg_1", "usage": {"input_tokens": 4}})
        + ant("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""})
        + ant("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"})
        + ant("content_block_stop", index=0)
        + ant("some_future_event", payload=1)
        + ant("content_block_start", index=1, content_block={"type": "text", "text": ""})
        + ant("content_block_delta", index=1, delta={"type": "text_delta", "text": "answer"})
        + ant("content_block_stop", index=1)
        + ant("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9})
        + ant("message_stop")
    )
    reply = conclude("anthropic", body, headers={})
    assert reply.complete, reply.detail
    assert reply.content == "answer"
    assert reply.usage == {"input_tokens": 4, "output_tokens": 9}
    assert reply.request_id == "msg_1"


def test_anthropic_event_name_and_type_must_agree() -> None:
    body = ant("message_start", message={}) + sse({"type": "message_stop"}, event="message_delta")
    assert conclude("anthropic", body).reason == "malformed_event"


def test_anthropic_content_before_message_start_is_malformed() -> None:
    body = ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "x"})
    assert conclude("anthropic", body).reason == "malformed_event"


def test_anthropic_message_stop_without_stop_reason() -> None:
    body = ant("message_start", message={}) + ant("message_delta", delta={}) + ant("message_stop")
    reply = conclude("anthropic", body)
    assert reply.reason == "missing_finish_reason"
    assert reply.retryable


def test_anthropic_invalid_request_error_frame_is_not_transient() -> None:
    body = ant("message_start", message={}) + sse(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
        event="error",
    )
    reply = conclude("anthropic", body)
    assert reply.reason == "error_frame"
    assert not reply.retryable


def gem(**candidate: Any) -> dict[str, Any]:
    return {"candidates": [{"index": 0, **candidate}], "responseId": "r1"}


def test_gemini_thought_parts_are_not_content() -> None:
    parts = [{"text": "thinking", "thought": True}, {"text": "answer"}]
    body = sse(gem(content={"parts": parts}, finishReason="STOP"))
    reply = conclude("gemini", body)
    assert reply.complete
    assert reply.content == "answer"
    assert reply.request_id == "r1"


def test_gemini_text_after_finish_reason_is_malformed() -> None:
    body = sse(
        gem(content={"parts": [{"text": "a"}]}, finishReason="STOP"),
        gem(content={"parts": [{"text": "b"}]}),
    )
    assert conclude("gemini", body).reason == "malformed_event"


def test_gemini_blocked_prompt_is_a_refusal() -> None:
    body = sse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})
    reply = conclude("gemini", body)
    assert reply.reason == "refusal"
    assert reply.provider_finish_reason == "PROHIBITED_CONTENT"


@pytest.mark.parametrize(
    ("verbatim", "reason"), [("RECITATION", "refusal"), ("OTHER", "unexpected_finish")]
)
def test_gemini_other_finish_reasons(verbatim: str, reason: str) -> None:
    body = sse(gem(content={"parts": [{"text": "a"}]}, finishReason=verbatim))
    assert conclude("gemini", body).reason == reason


def test_gemini_error_object_in_stream() -> None:
    body = sse(
        gem(content={"parts": [{"text": "a"}]}),
        {"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}},
        gem(content={"parts": [{"text": ""}]}, finishReason="STOP"),
    )
    reply = conclude("gemini", body)
    assert reply.reason == "error_frame"
    assert reply.retryable


def test_mc1_passes_the_envelope_on_as_received() -> None:
    envelope = seal(b"verdict text")
    reply = conclude("mc1", envelope, headers={"x-request-id": "abc"})
    assert reply.complete
    assert reply.envelope == envelope
    assert reply.content == "verdict text"
    assert reply.request_id == "abc"
    assert reply.finish_reason is FinishReason.NONE


def test_mc1_short_body_is_length_mismatch_and_retryable() -> None:
    envelope = seal(b"verdict text")
    reply = conclude("mc1", envelope[:-3])
    assert reply.reason == "envelope_length_mismatch"
    assert reply.retryable


def test_mc1_not_an_envelope_is_refused_at_the_first_bytes() -> None:
    reply = conclude("mc1", b'{"verdict": "pass"}')
    assert reply.reason == "envelope_missing_header"
    assert reply.end_reason is EndReason.CANCEL
    assert not reply.retryable


def test_sim_end_marker_switch_changes_only_the_marker() -> None:
    whole = b"".join(render_events("openai", "abc"))
    cut = b"".join(render_events("openai", "abc", SimResponse(end_marker=False)))
    assert whole == cut + b"data: [DONE]\n\n"


def two_finishes(provider: str, first: str, second: str) -> bytes:
    """A whole answer whose finish reason comes twice: ``first``, then ``second``."""
    if provider == "openai":
        return sse(oa({"content": "a"}, first), oa({"content": ""}, second), "[DONE]")
    if provider == "anthropic":
        return (
            ant("message_start", message={})
            + ant("content_block_delta", index=0, delta={"type": "text_delta", "text": "a"})
            + ant("message_delta", delta={"stop_reason": first})
            + ant("message_delta", delta={"stop_reason": second})
            + ant("message_stop")
        )
    return sse(
        gem(content={"parts": [{"text": "a"}]}, finishReason=first),
        gem(content={"parts": [{"text": ""}]}, finishReason=second),
    )


@pytest.mark.parametrize(
    ("provider", "length", "stop"),
    [
        ("openai", "length", "stop"),
        ("anthropic", "max_tokens", "end_turn"),
        ("gemini", "MAX_TOKENS", "STOP"),
    ],
)
def test_a_second_different_finish_reason_is_malformed_never_sealed(
    provider: str, length: str, stop: str
) -> None:
    reply = conclude(provider, two_finishes(provider, length, stop))
    assert reply.reason == "malformed_event", reply.detail
    assert f"a second finish reason {stop!r} after {length!r}" in reply.detail
    assert not reply.complete
    assert reply.envelope is None
    assert not reply.retryable  # the stream broke its own format: asking again is not the fix
    assert reply.provider_finish_reason == length  # the first one stays on record


@pytest.mark.parametrize(
    ("provider", "stop"), [("openai", "stop"), ("anthropic", "end_turn"), ("gemini", "STOP")]
)
def test_the_same_finish_reason_twice_is_still_a_stop(provider: str, stop: str) -> None:
    reply = conclude(provider, two_finishes(provider, stop, stop))
    assert reply.complete, reply.detail
    assert reply.content == "a"


@pytest.mark.parametrize(
    ("data", "words"), [("9" * 4301, "4300 digits"), ("[" * 50_000, "levels deep")]
)
def test_load_object_maps_json_python_cannot_read_to_malformed_event(data: str, words: str) -> None:
    with pytest.raises(TransportError) as caught:
        load_object(data)
    assert caught.value.reason == "malformed_event"
    assert words in caught.value.message
    nested = '{"a": ' + data + "}"
    with pytest.raises(TransportError) as inner:
        load_object(nested)
    assert inner.value.reason == "malformed_event"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_an_error_frame_python_cannot_read_is_still_an_error_frame(provider: str) -> None:
    start = ant("message_start", message={}) if provider == "anthropic" else b""
    body = start + b"event: error\ndata: " + b"[" * 50_000 + b"\n\n"
    reply = conclude(provider, body)
    assert reply.reason == "error_frame"
    assert not reply.complete
