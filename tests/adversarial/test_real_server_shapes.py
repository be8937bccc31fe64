"""What real servers send: each body shape written from the provider's documented format.

Class: a dialect reader that sealed (or refused) an answer by the shape of ONE server,
so another server's complete answer blocked, or a non-answer passed as complete.

* OpenRouter's Responses endpoint ends with ``data: [DONE]`` after ``response.completed``
  (https://openrouter.ai/docs/api-reference/responses, "Streaming"): accepted exactly
  once, right after the terminal event; anything else after the end still blocks.
* Mistral's reasoning models (magistral) send ``delta.content`` as an array of content
  parts (https://docs.mistral.ai/capabilities/reasoning/ : ``text`` and ``thinking``
  chunks): the ``text`` parts are read in order; every other part type blocks as
  ``unsupported_content``.
* The gate sends no tools, so a tool call is never a complete verdict, in every dialect:
  chat completions ``delta.tool_calls``
  (https://platform.openai.com/docs/api-reference/chat-streaming), Responses
  ``function_call`` output items (https://platform.openai.com/docs/api-reference/responses-streaming),
  Anthropic ``tool_use`` blocks (https://docs.anthropic.com/en/docs/build-with-claude/streaming),
  Gemini ``functionCall`` parts with ``finishReason: STOP``
  (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse) and Bedrock
  ``toolUse`` blocks (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html).

Each shape is generated over its variants (preamble text or none, finish reason, every
chunking of the body), and each would pass, or block, wrongly on the code before issue 23.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gate.decide.attempt import EndReason
from gate.decide.envelope import verify
from gate.reviewers import anthropic, bedrock, gemini, openai, openai_responses
from gate.reviewers.base import Exchange, Failure, Framing, Reply
from gate.reviewers.eventstream import encode_frame
from gate.reviewers.settings import ReviewerSettings

ANSWER = "Reviewed: fine, ship it."
CHUNKINGS = [None, 1, 7, 64]


def judge(module: Any, provider: str, raw: bytes, chunk: int | None = None) -> Reply:
    stream = module.Stream(
        ReviewerSettings(provider=provider, model="m", base_url="http://127.0.0.1:9")
    )
    pieces = [raw[i : i + chunk] for i in range(0, len(raw), chunk)] if chunk else [raw]
    for piece in pieces:
        stream.feed(piece)
    kind = bedrock.MEDIA_TYPE if module is bedrock else "text/event-stream"
    exchange = Exchange(
        status=200,
        headers={"content-type": kind},
        raw=raw,
        framing=Framing.CHUNKED,
        failure=Failure.NONE,
        failure_detail="",
        end_reason=EndReason.TRAILER,
        retryable=False,
        elapsed_s=0.0,
        first_byte_s=0.0,
    )
    reply: Reply = stream.conclude(exchange)
    return reply


def sse(*objects: object, named: bool = False) -> bytes:
    out = b""
    for obj in objects:
        if isinstance(obj, bytes):
            out += obj
            continue
        assert isinstance(obj, dict)
        head = f"event: {obj['type']}\n" if named else ""
        out += f"{head}data: {json.dumps(obj)}\n\n".encode()
    return out


# --- OpenRouter Responses: data: [DONE] after response.completed -----------------------


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def responses_body(text: str, *, tail: bytes = b"", extra_items: tuple[Any, ...] = ()) -> bytes:
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
    events: list[object] = [{"type": "response.created", "response": response}]
    for item in extra_items:
        events.append({"type": "response.output_item.added", "output_index": 1, "item": item})
    for piece in pieces:
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
        )
    events.append(
        {"type": "response.output_text.done", "item_id": "msg_1", "content_index": 0, "text": text}
    )
    output = ([_message(text)] if text else []) + list(extra_items)
    done = {**response, "status": "completed", "output": output, "usage": {"input_tokens": 3}}
    events.append({"type": "response.completed", "response": done})
    return sse(*events) + tail


@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_openrouter_done_after_the_terminal_event_is_complete(chunk: int | None) -> None:
    reply = judge(
        openai_responses,
        "openai-responses",
        responses_body(ANSWER, tail=b"data: [DONE]\n\n"),
        chunk,
    )
    assert reply.complete, reply.detail
    assert reply.envelope is not None
    assert verify(reply.envelope) == ANSWER.encode()


@pytest.mark.parametrize(
    "tail",
    [
        b"data: [DONE]\n\ndata: [DONE]\n\n",
        b"data: [DONE]\n\ndata: {}\n\n",
        b"data: [DONE]x\n\n",
        b"data:  [DONE]\n\n",
        b"data: [DONE]\r\n\r\ndata: [DONE]\n\n",
        b"event: response.completed\ndata: [DONE]\n\n",
    ],
)
def test_only_that_one_marker_may_follow_the_terminal_event(tail: bytes) -> None:
    reply = judge(openai_responses, "openai-responses", responses_body(ANSWER, tail=tail))
    assert not reply.complete
    assert reply.reason == "malformed_event", reply.detail


def test_done_before_the_terminal_event_blocks() -> None:
    body = responses_body(ANSWER)
    cut = body.rindex(b'data: {"type": "response.completed"')
    reply = judge(
        openai_responses, "openai-responses", body[:cut] + b"data: [DONE]\n\n" + body[cut:]
    )
    assert reply.reason == "malformed_event"
    assert "before the terminal event" in reply.detail


def test_done_after_a_cut_is_still_a_cut() -> None:
    body = responses_body(ANSWER)
    cut = body.rindex(b'data: {"type": "response.completed"')
    reply = judge(openai_responses, "openai-responses", body[:cut] + b"data: [DONE]\n\n")
    assert not reply.complete
    assert reply.reason == "malformed_event"


# --- Mistral: delta.content as an array of content parts ------------------------------


def chat_chunk(content: object, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    }


def mistral_body(parts: list[list[dict[str, Any]] | str], finish: str = "stop") -> bytes:
    chunks: list[object] = [chat_chunk(part) for part in parts]
    chunks.append(chat_chunk("", finish))
    return sse(*chunks) + b"data: [DONE]\n\n"


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 9, 100])
@pytest.mark.parametrize("chunk", CHUNKINGS)
def test_mistral_text_parts_are_read_in_order(size: int, chunk: int | None) -> None:
    pieces = _split(ANSWER, size)
    # a mix: some deltas as arrays of one or two text parts, some as plain strings
    parts: list[list[dict[str, Any]] | str] = []
    for index, piece in enumerate(pieces):
        if index % 3 == 2:
            parts.append(piece)
        else:
            half = len(piece) // 2
            parts.append(
                [{"type": "text", "text": piece[:half]}, {"type": "text", "text": piece[half:]}]
            )
    reply = judge(openai, "openai", mistral_body(parts), chunk)
    assert reply.complete, reply.detail
    assert reply.envelope is not None
    assert verify(reply.envelope) == ANSWER.encode()


@pytest.mark.parametrize(
    "foreign",
    [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
        {"type": "reference", "reference_ids": [1]},
        {"type": "image_url", "image_url": "https://example.invalid/x.png"},
        {"type": "TEXT", "text": ANSWER},
    ],
)
@pytest.mark.parametrize("where", [0, 1, 2])
def test_mistral_any_other_part_type_blocks_with_its_own_reason(
    foreign: dict[str, Any], where: int
) -> None:
    parts: list[list[dict[str, Any]] | str] = [
        [{"type": "text", "text": piece}] for piece in _split(ANSWER, 9)
    ]
    parts.insert(where, [foreign])
    reply = judge(openai, "openai", mistral_body(parts))
    assert not reply.complete
    assert reply.envelope is None
    assert reply.reason == "unsupported_content", reply.detail
    assert repr(foreign["type"]) in reply.detail


@pytest.mark.parametrize(
    "content",
    [
        [{"text": "no type"}],
        ["a string part"],
        [{"type": "text"}],
        [{"type": "text", "text": 3}],
        7,
    ],
)
def test_mistral_malformed_parts_block(content: object) -> None:
    reply = judge(openai, "openai", mistral_body([content]))  # type: ignore[list-item]
    assert reply.reason == "malformed_event", reply.detail


# --- a tool call is never a complete verdict, in every dialect --------------------------

PREAMBLES = ["", "Let me look at the file first.", ANSWER]


def chat_tool_body(preamble: str, finish: str) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file"}}
    more = {"index": 0, "function": {"arguments": '{"path": "a.py"}'}}
    chunks: list[object] = []
    if preamble:
        chunks.append(chat_chunk(preamble))
    for delta in ({"tool_calls": [call]}, {"tool_calls": [more]}):
        chunks.append(
            {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        )
    chunks.append(chat_chunk(None, finish))
    return sse(*chunks) + b"data: [DONE]\n\n"


def responses_tool_body(preamble: str) -> bytes:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": "{}",
        "status": "completed",
    }
    return responses_body(preamble, extra_items=(item,))


def anthropic_tool_body(preamble: str, stop: str) -> bytes:
    events: list[object] = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}}
    ]
    if preamble:
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": preamble},
            },
            {"type": "content_block_stop", "index": 0},
        ]
    tool = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
    events += [
        {"type": "content_block_start", "index": 1, "content_block": tool},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return sse(*events, named=True)


def gemini_tool_body(preamble: str) -> bytes:
    parts: list[dict[str, Any]] = [{"text": preamble}] if preamble else []
    parts.append({"functionCall": {"name": "read_file", "args": {"path": "a.py"}}})
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 3},
        "responseId": "r1",
    }
    return sse(chunk)


def bedrock_tool_body(preamble: str, stop: str) -> bytes:
    def frame(name: str, payload: dict[str, Any]) -> bytes:
        headers = {
            ":message-type": "event",
            ":event-type": name,
            ":content-type": "application/json",
        }
        return encode_frame(headers, json.dumps(payload).encode())

    out = frame("messageStart", {"role": "assistant"})
    if preamble:
        out += frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": preamble}})
    start = {"toolUse": {"toolUseId": "t1", "name": "read_file"}}
    out += frame("contentBlockStart", {"contentBlockIndex": 1, "start": start})
    out += frame(
        "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{}"}}}
    )
    out += frame("contentBlockStop", {"contentBlockIndex": 1})
    out += frame("messageStop", {"stopReason": stop})
    out += frame("metadata", {"usage": {"inputTokens": 3, "outputTokens": 5}, "metrics": {}})
    return out


TOOL_CASES = [
    *[
        pytest.param(openai, "openai", chat_tool_body(p, f), id=f"chat-{f}-{len(p)}")
        for p in PREAMBLES
        for f in ("tool_calls", "stop")
    ],
    *[
        pytest.param(
            openai_responses, "openai-responses", responses_tool_body(p), id=f"resp-{len(p)}"
        )
        for p in PREAMBLES
    ],
    *[
        pytest.param(
            anthropic, "anthropic", anthropic_tool_body(p, s), id=f"anthropic-{s}-{len(p)}"
        )
        for p in PREAMBLES
        for s in ("tool_use", "end_turn")
    ],
    *[
        pytest.param(gemini, "gemini", gemini_tool_body(p), id=f"gemini-{len(p)}")
        for p in PREAMBLES
    ],
    *[
        pytest.param(bedrock, "bedrock", bedrock_tool_body(p, s), id=f"bedrock-{s}-{len(p)}")
        for p in PREAMBLES
        for s in ("tool_use", "end_turn")
    ],
]


@pytest.mark.parametrize("chunk", [None, 5])
@pytest.mark.parametrize(("module", "provider", "body"), TOOL_CASES)
def test_a_tool_call_is_never_a_complete_verdict(
    module: Any, provider: str, body: bytes, chunk: int | None
) -> None:
    reply = judge(module, provider, body, chunk)
    assert not reply.complete
    assert reply.envelope is None
    assert reply.reason == "unexpected_finish", reply.detail
    assert "read_file" in reply.detail
    assert "the gate sends no tools" in reply.detail
    assert not reply.retryable
