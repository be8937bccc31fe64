"""A local reviewer that speaks each provider's wire dialect byte-exactly.

:class:`ReviewerSimulator` is a raw-socket HTTP/1.1 server on 127.0.0.1 (an
ephemeral port, a background thread, one request per connection) so tests
and ``review-gate demo`` control every byte: the SSE events of OpenAI Chat
Completions, Anthropic Messages and Gemini ``streamGenerateContent?alt=sse``,
or an MC1 envelope; chunked encoding with chosen chunk sizes,
``Content-Length`` or a close-delimited body; TCP segments split at chosen
offsets (``TCP_NODELAY`` and small sends); a cut, a stall, an endless body.

With ``tls`` (a server :class:`ssl.SSLContext`) it serves HTTPS instead.
A :class:`SimResponse` scripts one answer. The ``script`` is used in order,
one entry per request (:meth:`ReviewerSimulator.queue` adds to it); after it,
every request gets a healthy answer whose text comes from
``responder(request_json)``. Any 2xx status carries the dialect's stream (so a
206 can look whole); other statuses carry an error body. ``head`` replaces the
status line and headers byte for byte (e.g. both framing headers, in any order).
:func:`wire_for` returns the exact bytes the simulator sends for a response, so
tests can walk every offset.
The simulator never reaches beyond 127.0.0.1 and leaves no thread behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import http
import itertools
import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from gate.decide import signature
from gate.decide.envelope import SENTINEL, seal
from gate.providers import PROVIDERS
from gate.reviewers.eventstream import encode_frame
from gate.reviewers.settings import ReviewerSettings
from gate.serve import door

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

#: Every dialect the simulator speaks: all of the gate's providers.
DIALECTS = PROVIDERS
MODEL = "sim-model"
#: How long a stalled connection is held at most (the simulator stopping ends it sooner).
MAX_HOLD_S = 120.0
#: Bounds on an endless body.
ENDLESS_MAX_S = 120.0
ENDLESS_MAX_BYTES = 1 << 30

_FINISH = {
    "openai": {"stop": "stop", "length": "length", "refusal": "content_filter"},
    "anthropic": {"stop": "end_turn", "length": "max_tokens", "refusal": "refusal"},
    "gemini": {"stop": "STOP", "length": "MAX_TOKENS", "refusal": "SAFETY"},
    "mc1": {},
    "openai-responses": {
        "stop": "completed",
        "length": "max_output_tokens",
        "refusal": "content_filter",
    },
    "azure-openai": {"stop": "stop", "length": "length", "refusal": "content_filter"},
    "bedrock": {"stop": "end_turn", "length": "max_tokens", "refusal": "guardrail_intervened"},
    "vertex": {"stop": "STOP", "length": "MAX_TOKENS", "refusal": "SAFETY"},
}
_ERROR_TYPE = {"openai": "server_error", "anthropic": "overloaded_error", "gemini": "UNAVAILABLE"}
#: What the clouds need besides a base URL, for :meth:`ReviewerSimulator.settings` and tests.
SIM_EXTRAS: dict[str, dict[str, str]] = {
    "vertex": {"project": "sim-project", "location": "us-east5"},
    "bedrock": {"region": "us-east-1"},
}
#: Vertex serves Claude models in Anthropic's dialect (the path says which publisher).
VERTEX_CLAUDE = "claude-sim"


@dataclass(frozen=True)
class SimResponse:
    """One scripted answer. The defaults are a healthy, complete reply."""

    content: str | None = None  # None: ask the responder
    finish: str = "stop"  # "stop" | "length" | "refusal" | "none" (the provider never says)
    provider_finish: str | None = None  # the verbatim finish reason, overriding ``finish``
    status: int = 200
    retry_after: str | None = None  # Retry-After header value
    error_body: str | None = None  # body of a non-2xx answer (default: the dialect's error JSON)
    error_frame: str | None = None  # error type sent inside the 200 stream after the first piece
    end_marker: bool = True  # False: no [DONE] / message_stop / finishReason / MC1 sentinel
    framing: str = "chunked"  # "chunked" | "length" | "close"
    chunk_size: int | None = None  # HTTP chunk size; None: one chunk per event
    piece_size: int = 24  # content characters per delta event
    body: bytes | None = None  # exact body bytes (framing still applies)
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers
    head: bytes | None = None  # exact status line and headers (the body's framing still applies)
    split_at: tuple[int, ...] = ()  # wire offsets where one TCP send ends and the next begins
    segment_size: int | None = None  # send the wire in segments of this many bytes
    pause: float = 0.002  # seconds between sends when splitting
    pause_from: int = 0  # no pause before sends that start below this wire offset
    cut_after: int | None = None  # close the connection after this many wire bytes
    stall_after: int | None = None  # stop sending after this many wire bytes and hold on
    # while stalled, an SSE comment (": ping") every this many seconds, as llama.cpp's
    # server sends; stall_after must then end on an HTTP chunk of a chunked answer
    ping_every: float | None = None
    endless: bool = False  # after the headers, send events forever (bounded by the sim)
    usage: bool = True
    # the prompt tokens the usage reports; None: the prompt's own (one per 4 bytes, at
    # least 10), as a server that read it whole would (fewer: a server that cut it)
    prompt_tokens: int | None = None


@dataclass(frozen=True)
class SimRequest:
    """What one request carried (headers lower-cased)."""

    method: str
    path: str
    headers: dict[str, str] = field(repr=False)
    body: dict[str, Any]
    #: the body's exact bytes (what an MC1 signature covers)
    raw_body: bytes = field(default=b"", repr=False)


# --- rendering -----------------------------------------------------------------


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _data(obj: object, *, event: str | None = None, crlf: bool = False) -> bytes:
    line = b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    end = b"\r\n" if crlf else b"\n"
    head = b"event: " + event.encode() + end if event else b""
    return head + line + end + end


def _verbatim(dialect: str, response: SimResponse) -> str | None:
    if response.provider_finish is not None:
        return response.provider_finish
    if response.finish == "none":
        return None
    return _FINISH[dialect].get(response.finish, response.finish)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def render_events(
    dialect: str, content: str, response: SimResponse = SimResponse(), *, prompt_tokens: int = 10
) -> list[bytes]:
    """The body of a 200 answer, one element per SSE event (MC1: one element)."""
    if response.body is not None:
        return [response.body]
    pieces = _pieces(content, response.piece_size)
    finish = _verbatim(dialect, response)
    if dialect == "openai":
        return _openai(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect == "anthropic":
        return _anthropic(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect in ("gemini", "vertex"):
        return _gemini(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect == "openai-responses":
        return _responses(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect == "azure-openai":
        return _azure(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect == "bedrock":
        return _bedrock(pieces, finish, response, prompt_tokens, _tokens(content))
    if dialect == "mc1":
        if response.end_marker:
            return [seal(content.encode("utf-8"))]
        body = content.encode("utf-8")
        return [b"MC1 %d %s\n" % (len(body), hashlib.sha256(body).hexdigest().encode()) + body]
    raise ValueError(f"unknown dialect {dialect!r}")


def _openai(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    base = {
        "id": "chatcmpl-sim",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "system_fingerprint": "fp_sim",
    }

    def chunk(delta: dict[str, Any], reason: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return _data({**base, "choices": [choice]})

    out = [chunk({"role": "assistant", "content": "", "refusal": None}, None)]
    for index, piece in enumerate(pieces):
        out.append(chunk({"content": piece}, None))
        if index == 0 and r.error_frame:
            error = {"message": "The server had an error", "type": r.error_frame}
            out.append(_data({"error": {**error, "param": None, "code": None}}))
    if finish is not None:
        out.append(chunk({}, finish))
    if r.usage:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        usage["total_tokens"] = prompt + completion
        out.append(_data({**base, "choices": [], "usage": usage}))
    if r.end_marker:
        out.append(b"data: [DONE]\n\n")
    return out


def _anthropic(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    message: dict[str, Any] = {
        "id": "msg_sim",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": 1},
    }
    out = [
        _data({"type": "message_start", "message": message}, event="message_start"),
        _data(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            event="content_block_start",
        ),
        _data({"type": "ping"}, event="ping"),
    ]
    for index, piece in enumerate(pieces):
        delta = {"type": "content_block_delta", "index": 0}
        out.append(
            _data(
                {**delta, "delta": {"type": "text_delta", "text": piece}},
                event="content_block_delta",
            )
        )
        if index == 0 and r.error_frame:
            error = {"type": r.error_frame, "message": "Overloaded"}
            out.append(_data({"type": "error", "error": error}, event="error"))
    out.append(_data({"type": "content_block_stop", "index": 0}, event="content_block_stop"))
    delta_body: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": finish, "stop_sequence": None},
    }
    if r.usage:
        delta_body["usage"] = {"output_tokens": completion}
    out.append(_data(delta_body, event="message_delta"))
    if r.end_marker:
        out.append(_data({"type": "message_stop"}, event="message_stop"))
    return out


def _gemini(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    out = []
    last = len(pieces) - 1
    for index, piece in enumerate(pieces):
        candidate: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"}}
        final = index == last
        if final and finish is not None and r.end_marker:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        chunk: dict[str, Any] = {"candidates": [candidate]}
        if r.usage:
            usage = {"promptTokenCount": prompt, "totalTokenCount": prompt}
            if final:
                usage = {
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": completion,
                    "totalTokenCount": prompt + completion,
                }
            chunk["usageMetadata"] = usage
        chunk["modelVersion"] = MODEL
        chunk["responseId"] = "resp_sim"
        out.append(_data(chunk, crlf=True))
        if index == 0 and r.error_frame:
            code = 400 if "invalid" in r.error_frame.lower() else 503
            error = {"code": code, "message": "The model is overloaded.", "status": r.error_frame}
            out.append(_data({"error": error}, crlf=True))
    return out


def _responses(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    counter = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        return _data({"type": kind, "sequence_number": next(counter), **fields}, event=kind)

    response: dict[str, Any] = {
        "id": "resp_sim",
        "object": "response",
        "created_at": 1700000000,
        "status": "in_progress",
        "model": MODEL,
        "output": [],
        "usage": None,
    }
    item = {"id": "msg_sim", "type": "message", "status": "in_progress", "role": "assistant"}
    place = {"item_id": "msg_sim", "output_index": 0, "content_index": 0}
    out = [
        event("response.created", response=response),
        event("response.in_progress", response=response),
        event("response.output_item.added", output_index=0, item={**item, "content": []}),
        event("response.content_part.added", **place, part={"type": "output_text", "text": ""}),
    ]
    for index, piece in enumerate(pieces):
        out.append(event("response.output_text.delta", **place, delta=piece))
        if index == 0 and r.error_frame:
            out.append(
                event("error", code=r.error_frame, message="The server had an error", param=None)
            )
    text = "".join(pieces)
    out.append(event("response.output_text.done", **place, text=text))
    part = {"type": "output_text", "text": text, "annotations": []}
    out.append(event("response.content_part.done", **place, part=part))
    done = {**item, "status": "completed", "content": [part]}
    out.append(event("response.output_item.done", output_index=0, item=done))
    if finish is not None and r.end_marker:
        final = {**response, "output": [done]}
        if r.usage:
            final["usage"] = {
                "input_tokens": prompt,
                "output_tokens": completion,
                "total_tokens": prompt + completion,
            }
        if finish == "completed":
            out.append(event("response.completed", response={**final, "status": "completed"}))
        else:
            details = {"reason": finish}
            final = {**final, "status": "incomplete", "incomplete_details": details}
            out.append(event("response.incomplete", response=final))
    return out


_FILTERS = ("hate", "violence")  # Azure sends four; two keep the sweeps short


def _filters(fired: bool = False) -> dict[str, Any]:
    return {
        name: {"filtered": fired and name == "violence", "severity": "safe"} for name in _FILTERS
    }


def _azure(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    """OpenAI's chunks with Azure's quirks: a prompt-filter chunk first, filter results after."""
    first = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": _filters()}],
    }
    events = _openai(pieces, finish, r, prompt, completion)
    out = [_data(first)]
    for raw in events:
        if not raw.startswith(b"data: {"):
            out.append(raw)
            continue
        chunk = json.loads(raw[len(b"data: ") :])
        for choice in chunk.get("choices") or []:
            if choice.get("delta", {}).get("role") is None:
                fired = choice.get("finish_reason") == "content_filter"
                choice["content_filter_results"] = _filters(fired)
        out.append(_data(chunk))
    return out


def _frame_event(kind: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    body = json.dumps({**payload, "p": "abcdefghij"[: 1 + len(kind) % 10]}, separators=(",", ":"))
    return encode_frame(headers, body.encode())


def _bedrock(
    pieces: list[str], finish: str | None, r: SimResponse, prompt: int, completion: int
) -> list[bytes]:
    """ConverseStream's event-stream frames, one element per frame."""
    out = [_frame_event("messageStart", {"role": "assistant"})]
    for index, piece in enumerate(pieces):
        delta = {"contentBlockIndex": 0, "delta": {"text": piece}}
        out.append(_frame_event("contentBlockDelta", delta))
        if index == 0 and r.error_frame:
            headers = {
                ":exception-type": r.error_frame,
                ":content-type": "application/json",
                ":message-type": "exception",
            }
            out.append(encode_frame(headers, b'{"message":"The model is overloaded."}'))
    out.append(_frame_event("contentBlockStop", {"contentBlockIndex": 0}))
    if r.end_marker:
        out.append(_frame_event("messageStop", {"stopReason": finish} if finish else {}))
        usage = {"inputTokens": prompt, "outputTokens": completion}
        metadata: dict[str, Any] = {"metrics": {"latencyMs": 42}}
        if r.usage:
            metadata["usage"] = {**usage, "totalTokens": prompt + completion}
        out.append(_frame_event("metadata", metadata))
    return out


def error_body(dialect: str, status: int) -> bytes:
    """A provider-shaped JSON error body for a non-2xx answer."""
    phrase = http.HTTPStatus(status).phrase if status in http.HTTPStatus._value2member_map_ else ""
    if dialect == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        obj: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": phrase}}
    elif dialect in ("gemini", "vertex"):
        obj = {"error": {"code": status, "message": phrase, "status": "UNAVAILABLE"}}
    elif dialect == "bedrock":
        obj = {"message": phrase}
    else:
        kind = "rate_limit_exceeded" if status == 429 else "server_error"
        obj = {"error": {"message": phrase, "type": kind, "param": None, "code": None}}
    return json.dumps(obj).encode()


def quota_response(dialect: str) -> SimResponse:
    """The dialect's documented quota or billing stop (gate.reviewers.limits), as sent: a
    429 ``insufficient_quota`` for OpenAI's dialects, Anthropic's 402 ``billing_error``,
    Gemini's per-day ``RESOURCE_EXHAUSTED``, Bedrock's ``ServiceQuotaExceededException``;
    MC1 has none (a 503, retried like an outage)."""
    if dialect == "anthropic":
        obj: Any = {"type": "error", "error": {"type": "billing_error", "message": "billing"}}
        return SimResponse(status=402, error_body=json.dumps(obj))
    if dialect in ("gemini", "vertex"):
        quota = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        failure = {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": quota}],
        }
        obj = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED",
                         "details": [failure]}}  # fmt: skip
        return SimResponse(status=429, error_body=json.dumps(obj))
    if dialect == "bedrock":
        kind = ("x-amzn-ErrorType", "ServiceQuotaExceededException:http://internal.amazon.com/")
        body = json.dumps({"message": "Your request exceeds the service quota"})
        return SimResponse(status=400, error_body=body, headers=(kind,))
    if dialect == "mc1":
        return SimResponse(status=503)
    obj = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing "
            "details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    return SimResponse(status=429, error_body=json.dumps(obj))


_REQUEST_ID_HEADER = {
    "openai": "x-request-id",
    "anthropic": "request-id",
    "mc1": "x-request-id",
    "openai-responses": "x-request-id",
    "azure-openai": "apim-request-id",
    "bedrock": "x-amzn-RequestId",
}
_CONTENT_TYPE = {
    "openai": "text/event-stream; charset=utf-8",
    "anthropic": "text/event-stream; charset=utf-8",
    "gemini": "text/event-stream",
    "mc1": "application/x-mc1",
    "openai-responses": "text/event-stream; charset=utf-8",
    "azure-openai": "text/event-stream; charset=utf-8",
    "bedrock": "application/vnd.amazon.eventstream",
    "vertex": "text/event-stream",
}


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    phrase = http.HTTPStatus(status).phrase if status in http.HTTPStatus._value2member_map_ else "X"
    lines = [f"HTTP/1.1 {status} {phrase}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _frame(parts: list[bytes], framing: str, chunk_size: int | None) -> bytes:
    body = b"".join(parts)
    if framing != "chunked":
        return body
    chunks = (
        [body[i : i + chunk_size] for i in range(0, len(body), chunk_size)]
        if chunk_size
        else [part for part in parts if part]
    )
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


def wire_for(
    dialect: str,
    content: str,
    response: SimResponse = SimResponse(),
    *,
    prompt_tokens: int = 10,
    signer: Callable[[bytes], str] | None = None,
) -> bytes:
    """The exact bytes (status line, headers, framed body) sent for ``response``.

    ``signer`` (MC1): the ``mc1-signature`` value for the envelope's bytes, sent in a
    header of a 2xx answer unless ``response.headers`` carries one already."""
    headers: list[tuple[str, str]] = []
    if not 200 <= response.status < 300:
        body_parts = [
            response.error_body.encode()
            if response.error_body is not None
            else error_body(dialect, response.status)
        ]
        headers.append(("Content-Type", "application/json"))
    else:
        body_parts = render_events(dialect, content, response, prompt_tokens=prompt_tokens)
        headers.append(("Content-Type", _CONTENT_TYPE[dialect]))
        headers.append(("Cache-Control", "no-cache"))
        scripted = {name.lower() for name, _ in response.headers}
        if signer is not None and dialect == "mc1" and signature.HEADER not in scripted:
            headers.append((signature.HEADER, signer(b"".join(body_parts))))
    if dialect in _REQUEST_ID_HEADER:
        headers.append((_REQUEST_ID_HEADER[dialect], "req_sim"))
    if response.retry_after is not None:
        headers.append(("Retry-After", response.retry_after))
    headers.extend(response.headers)
    headers.append(("Connection", "close"))
    framing = response.framing if 200 <= response.status < 300 else "length"
    if response.endless:
        framing = "chunked"
    if framing == "chunked":
        headers.append(("Transfer-Encoding", "chunked"))
    elif framing == "length":
        headers.append(("Content-Length", str(sum(len(p) for p in body_parts))))
    head = response.head if response.head is not None else _head(response.status, headers)
    if response.endless:
        return head
    return head + _frame(body_parts, framing, response.chunk_size)


@dataclass(frozen=True)
class SimServer:
    """The self-hosted server the simulator plays besides its chat endpoint (issue 33):
    what it tells of its context, in the real server's shape (:func:`context_wire`).

    ``kind``: ``llama.cpp`` (``GET /props``), ``vllm`` (``GET /v1/models`` with
    ``max_model_len``), ``ollama`` (``POST /api/show``, ``num_ctx`` among ``parameters``)
    or ``llama-cpp-python`` (no context endpoint: its ``/v1/models`` has no size).
    ``n_ctx`` None: the server does not tell (Ollama without ``num_ctx``). ``body`` and
    ``status`` replace the answer of the context endpoint; ``stall_s`` holds it first."""

    kind: str
    n_ctx: int | None = 8192
    body: bytes | None = None
    status: int = 200
    stall_s: float = 0.0


#: the context endpoints, by (method, path), each with the kind that serves it
CONTEXT_PATHS = {
    ("GET", "/props"): "llama.cpp",
    ("GET", "/v1/models"): "vllm",
    ("POST", "/api/show"): "ollama",
}
#: each kind's body for a path it does not serve (404), as the real server writes it
_NOT_FOUND: dict[str, tuple[str, bytes]] = {
    "llama.cpp": ("application/json; charset=utf-8",
                  b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}'),
    "vllm": ("application/json", b'{"detail":"Not Found"}'),
    "ollama": ("text/plain", b"404 page not found"),
    "llama-cpp-python": ("application/json", b'{"detail":"Not Found"}'),
}  # fmt: skip


def context_json(server: SimServer, method: str, path: str, model: str) -> bytes | None:
    """The body ``server`` answers a context endpoint with (compact JSON, its own key
    order), or None when it does not serve that endpoint (a 404)."""
    kind = CONTEXT_PATHS.get((method, path))
    if kind == "vllm" and server.kind in ("llama-cpp-python", "ollama"):
        # both list their models in OpenAI's shape, with no context size
        owner = "me" if server.kind == "llama-cpp-python" else "library"
        card: dict[str, Any] = {"id": model, "object": "model", "owned_by": owner}
        if server.kind == "llama-cpp-python":
            card["permissions"] = []
        else:
            card = {"id": model, "object": "model", "created": 1733500000, "owned_by": owner}
        return _compact({"object": "list", "data": [card]})
    if kind != server.kind:
        return None
    if kind == "llama.cpp":
        settings: dict[str, Any] = {
            "params": {
                "n_predict": -1,
                "seed": 4294967295,
                "temperature": 0.8,
                "top_k": 40,
                "top_p": 0.95,
            }
        }
        if server.n_ctx is not None:
            settings["n_ctx"] = server.n_ctx
        return _compact({
            "default_generation_settings": settings,
            "total_slots": 1,
            "model_alias": model,
            "model_path": f"/models/{model}.gguf",
            "modalities": {"vision": False, "audio": False},
            "endpoint_slots": True,
            "endpoint_props": False,
            "endpoint_metrics": False,
            "webui": True,
            "chat_template": "{% for message in messages %}<|im_start|>{{ message['role'] }}"
            "\n{{ message['content'] }}<|im_end|>\n{% endfor %}",
            "bos_token": "<|im_start|>",
            "eos_token": "<|im_end|>",
            "build_info": "b6000-sim",
        })  # fmt: skip
    if kind == "vllm":
        return _compact({"object": "list", "data": [{
            "id": model, "object": "model", "created": 1733500000, "owned_by": "vllm",
            "root": model, "parent": None, "max_model_len": server.n_ctx,
            "permission": [{"id": "modelperm-sim", "object": "model_permission",
                            "created": 1733500000, "allow_create_engine": False,
                            "allow_sampling": True, "allow_logprobs": True,
                            "allow_search_indices": False, "allow_view": True,
                            "allow_fine_tuning": False, "organization": "*", "group": None,
                            "is_blocking": False}],
        }]})  # fmt: skip
    # Ollama: parameters as ``ollama show`` formats them ("%-*s %#v", 30 wide), in no order
    lines = [f'{"stop":<30} "<|im_end|>"']
    if server.n_ctx is not None:
        lines.insert(0, f"{'num_ctx':<30} {server.n_ctx}")
    return _compact({
        "license": "Apache License 2.0",
        "modelfile": f"# Modelfile generated by \"ollama show\"\nFROM {model}\n",
        "parameters": "\n".join(lines),
        "template": "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n"
        "{{ end }}<|im_start|>assistant\n",
        "details": {"parent_model": "", "format": "gguf", "family": "llama",
                    "families": ["llama"], "parameter_size": "134.52M",
                    "quantization_level": "Q4_1"},
        # the length the model was trained for: never the context Ollama gives it
        "model_info": {"general.architecture": "llama", "llama.context_length": 8192},
        "capabilities": ["completion"],
        "modified_at": "2026-12-01T00:00:00Z",
    })  # fmt: skip


def context_wire(server: SimServer, method: str, path: str, model: str) -> bytes:
    """The exact bytes ``server`` sends for a request to ``path`` (a context endpoint or
    not): its answer, or its own 404."""
    body = context_json(server, method, path, model)
    if (method, path) in CONTEXT_PATHS and CONTEXT_PATHS[(method, path)] == server.kind:
        body = server.body if server.body is not None else body
        status = server.status
    else:
        status = 200 if body is not None else 404
    if body is None:
        kind_type, body = _NOT_FOUND.get(server.kind, _NOT_FOUND["vllm"])
    else:
        kind_type = _NOT_FOUND.get(server.kind, _NOT_FOUND["vllm"])[0]
        if server.kind == "ollama":
            kind_type = "application/json; charset=utf-8"
    headers = [("Content-Type", kind_type), ("Content-Length", str(len(body))),
               ("Connection", "close")]  # fmt: skip
    return _head(status, headers) + body


def _compact(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _endless_event(dialect: str) -> bytes:
    """One content event, repeated forever by an endless body."""
    text = "la " * 300
    if dialect == "mc1":
        return text.encode()
    quiet = SimResponse(piece_size=len(text), finish="none", usage=False, end_marker=False)
    events = render_events(dialect, text, quiet)
    index = {"openai": 1, "anthropic": 3, "openai-responses": 4, "azure-openai": 2, "bedrock": 1}
    return events[index.get(dialect, 0)]


def extract_prompt(dialect: str, body: dict[str, Any]) -> tuple[str, str]:
    """(system, user) from a request body of any dialect, for responders."""

    def text(value: object) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return "".join(text(item) for item in value)
        if isinstance(value, dict):
            if "text" in value:
                return text(value["text"])
            return text(value.get("content", value.get("parts", "")))
        return ""

    if dialect == "openai-responses":
        return text(body.get("instructions", "")), text(body.get("input", []))
    if dialect == "bedrock":
        return text(body.get("system", [])), text(body.get("messages", []))
    if dialect == "vertex":
        dialect = "anthropic" if "messages" in body else "gemini"
    if dialect in ("openai", "azure-openai"):
        messages = body.get("messages") or []
        system = "".join(text(m) for m in messages if m.get("role") == "system")
        user = "".join(text(m) for m in messages if m.get("role") == "user")
        return system, user
    if dialect == "anthropic":
        messages = body.get("messages") or []
        return text(body.get("system", "")), "".join(text(m) for m in messages)
    if dialect == "gemini":
        return text(body.get("systemInstruction", "")), text(body.get("contents", []))
    return str(body.get("system", "")), str(body.get("user", ""))


#: the parts of the prompt a :class:`PromptCut` server drops
CUTS = ("none", "head", "middle", "tail", "system")


@dataclass(frozen=True)
class PromptCut:
    """A ``chooser``: a server that drops part of the prompt, then answers honestly about
    what it saw (issue 33's proof).

    ``drop`` names the part: ``head`` keeps the end of the user message (Ollama's way),
    ``tail`` its start, ``middle`` both ends around a region at its middle, each keeping
    ``kept`` of its bytes; ``system`` drops the system message (a chat template that has
    no place for it). The answer is a confident pass bound to the binding it saw (none:
    zeros), or, with ``grammar``, the one the request's grammar writes in, repeating the
    read words it saw (:func:`gate.decide.readback.words_in`); with ``usage`` it reports
    the prompt tokens of what it kept, one per 4 bytes.
    """

    drop: str = "none"
    kept: float = 1.0
    usage: bool = True
    grammar: bool = False
    dialect: str = "openai"

    def seen(self, system: str, user: str) -> tuple[str, str]:
        """The (system, user) text that reached the model."""
        raw = user.encode()
        keep = int(len(raw) * self.kept)
        if self.drop == "head":
            raw = raw[len(raw) - keep :]
        elif self.drop == "tail":
            raw = raw[:keep]
        elif self.drop == "middle":
            raw = raw[: keep // 2] + raw[len(raw) - (keep - keep // 2) :]
        return ("" if self.drop == "system" else system), raw.decode("utf-8", "ignore")

    def __call__(self, body: dict[str, Any]) -> SimResponse:
        from gate.decide.decision import binding_in
        from gate.decide.readback import words_in

        whole_system, whole_user = extract_prompt(self.dialect, body)
        system, user = self.seen(whole_system, whole_user)
        text = f"{system}\n{user}"
        binding = binding_in(text) or (binding_in(whole_user) if self.grammar else None)
        verdict = {
            "verdict": "pass",
            "reasons": ["the part I was shown is fine"],
            "confidence": 0.95,
            "read": words_in(text),
            "diff_sha": binding.diff_sha if binding else "0" * 64,
            "policy_version": binding.policy_version if binding else "",
        }
        tokens = max(1, len(f"{system}{user}".encode()) // 4)
        return SimResponse(
            content="```json\n" + json.dumps(verdict) + "\n```\n",
            usage=self.usage,
            prompt_tokens=tokens,
        )


# --- the server ----------------------------------------------------------------


def _default_responder(request: dict[str, Any]) -> str:
    return "ok"


class ReviewerSimulator:
    """A local reviewer server; use as a context manager."""

    def __init__(
        self,
        dialect: str,
        responder: Callable[[dict[str, Any]], str] | None = None,
        *,
        script: Sequence[SimResponse] = (),
        tls: ssl.SSLContext | None = None,
        chooser: Callable[[dict[str, Any]], SimResponse] | None = None,
        port: int = 0,
        record: bool = True,
        front_door: door.Door | None = None,
        server: SimServer | None = None,
        signing_key: Ed25519PrivateKey | None = None,
    ) -> None:
        """``chooser`` picks each answer from the request's body once ``script`` is spent
        (``review-gate demo --serve`` chooses by model name); ``port`` 0 is any free port;
        ``record`` False keeps no request (a long run: :attr:`count` still counts);
        ``front_door`` refuses what ``review-gate serve`` refuses (``Host``, ``Origin``, the
        body's length) before the body is read (``demo --serve``).
        ``server``: the self-hosted server it plays besides the chat endpoint (its
        context endpoints answer as that server's do; they are counted in
        :attr:`preflights`, not in :attr:`count`). ``signing_key`` (MC1): every 2xx
        answer is signed with it, as ``review-gate serve`` signs, over the prompt of the
        request it answers and the envelope sent."""
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}; use one of {', '.join(DIALECTS)}")
        self.dialect = dialect
        self.responder = responder or _default_responder
        self._tls = tls
        self._script = list(script)
        self._chooser = chooser
        self._port = port
        self._server = server
        self._preflights: list[SimRequest] = []
        self._signing_key = signing_key
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._requests: list[SimRequest] = []
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self.port = 0
        self.model_lists = 0  # GET /v1/models answered (not among the requests)
        self._record = record
        self._door = front_door
        self._count = 0

    # -- lifecycle
    def __enter__(self) -> ReviewerSimulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self._port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, name="sim-accept", daemon=True)
        self._acceptor.start()

    def stop(self) -> None:
        self._stop.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(timeout=5)

    def queue(self, *responses: SimResponse) -> None:
        """Script the next answers after those already scripted (one simulator, many cases)."""
        with self._lock:
            self._script.extend(responses)

    # -- what tests read
    @property
    def base_url(self) -> str:
        scheme = "https" if self._tls is not None else "http"
        root = f"{scheme}://127.0.0.1:{self.port}"
        if self.dialect in ("openai", "openai-responses"):
            return root + "/v1"
        if self.dialect == "mc1":
            return root + "/review"
        return root

    def settings(self, **overrides: Any) -> ReviewerSettings:
        """Reviewer settings that point at this simulator (short limits for tests)."""
        values: dict[str, Any] = {
            "provider": self.dialect,
            "model": MODEL,
            "base_url": self.base_url,
            "connect_timeout": 5.0,
            "read_timeout": 10.0,
            "deadline": 20.0,
            "backoff_base": 0.0,
            "backoff_cap": 0.0,
            **SIM_EXTRAS.get(self.dialect, {}),
        }
        values.update(overrides)
        return ReviewerSettings(**values)

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self._requests]

    @property
    def exchanges(self) -> list[SimRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    @property
    def preflights(self) -> list[SimRequest]:
        """The requests to anything but the chat endpoint, with a ``server`` played."""
        with self._lock:
            return list(self._preflights)

    # -- serving
    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(
                target=self._serve, args=(conn,), name="sim-conn", daemon=True
            )
            with self._lock:  # what ended is dropped: a long run keeps only what is open
                self._threads = [t for t in self._threads if t.is_alive()]
                self._conns = [c for c in self._conns if c.fileno() != -1]
                self._conns.append(conn)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(10.0)
            if self._tls is not None:
                plain = conn
                conn = self._tls.wrap_socket(plain, server_side=True)
                with self._lock:
                    self._conns[self._conns.index(plain)] = conn
            request = self._read_request(conn)
            if request is None:
                return
            if self._server is not None and not self._path_ok(request):
                self._answer_server(conn, request, self._server)
                return
            if self._lists_models(conn, request):
                return
            with self._lock:
                self._count += 1
                if self._record:
                    self._requests.append(request)
                if self._script:
                    response = self._script.pop(0)
                elif self._chooser is not None:
                    response = self._chooser(request.body)
                else:
                    response = SimResponse()
            if not self._path_ok(request):
                wire = wire_for(
                    self.dialect,
                    "",
                    SimResponse(status=404, error_body=json.dumps({"error": "no such path"})),
                )
                conn.sendall(wire)
                return
            content = response.content
            if content is None and 200 <= response.status < 300 and response.body is None:
                content = self.responder(request.body)
            self._respond(conn, request, response, content or "")
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def _lists_models(self, conn: socket.socket, request: SimRequest) -> bool:
        """``GET /v1/models`` of the OpenAI dialect, as every compatible server answers it
        (``review-gate serve`` asks it at start-up); not counted among the requests."""
        if (request.method, request.path) != ("GET", "/v1/models") or self.dialect != "openai":
            return False
        with self._lock:
            self.model_lists += 1
        listing = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        body = json.dumps(listing).encode()
        head = _head(
            200,
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("Connection", "close"),
            ],
        )
        conn.sendall(head + body)
        return True

    def _answer_server(self, conn: socket.socket, request: SimRequest, server: SimServer) -> None:
        with self._lock:
            self._preflights.append(request)
        if server.stall_s and self._stop.wait(min(server.stall_s, MAX_HOLD_S)):
            return
        model = str(request.body.get("model") or MODEL)
        conn.sendall(context_wire(server, request.method, request.path, model))

    def _path_ok(self, request: SimRequest) -> bool:
        if request.method != "POST":
            return False
        if self.dialect == "openai":
            return request.path == "/v1/chat/completions"
        if self.dialect == "anthropic":
            return request.path == "/v1/messages"
        if self.dialect == "gemini":
            return request.path.startswith("/v1beta/models/") and request.path.endswith(
                ":streamGenerateContent?alt=sse"
            )
        if self.dialect == "openai-responses":
            return request.path == "/v1/responses"
        if self.dialect == "azure-openai":
            return request.path == "/openai/v1/chat/completions" or (
                request.path.startswith("/openai/deployments/")
                and "/chat/completions?api-version=" in request.path
            )
        if self.dialect == "bedrock":
            return request.path.startswith("/model/") and request.path.endswith("/converse-stream")
        if self.dialect == "vertex":
            return request.path.startswith("/v1/projects/") and request.path.endswith(
                (":streamGenerateContent?alt=sse", ":streamRawPredict")
            )
        return request.path == "/review"

    def _refuse(self, conn: socket.socket, refusal: door.Refusal) -> None:
        """The front door's refusal (``review-gate serve``'s own, :mod:`gate.serve.door`)."""
        error = {"error": {"type": refusal.reason, "message": refusal.message}}
        conn.sendall(
            wire_for(
                self.dialect, "", SimResponse(status=refusal.status, error_body=json.dumps(error))
            )
        )
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
        self._drain(conn)

    def _read_request(self, conn: socket.socket) -> SimRequest | None:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return None
            data += more
            if len(data) > 1 << 20:
                return None
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = [*lines[0].split(" ", 2), "", ""][:3]
        headers: dict[str, str] = {}
        pairs = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
            pairs.append((name, value.strip()))
        if self._door is not None:  # before a byte of the body is read
            refusal = door.check(self._door, method, pairs)
            if refusal is not None:
                self._refuse(conn, refusal)
                return None
        length = int(headers.get("content-length", "0") or 0)
        while len(rest) < length:
            more = conn.recv(65536)
            if not more:
                return None
            rest += more
        try:
            body = json.loads(rest[:length] or b"{}")
        except ValueError:
            body = {"_unparsed": rest[:length].decode("utf-8", "replace")}
        return SimRequest(
            method=method, path=path, headers=headers, body=body, raw_body=rest[:length]
        )

    def _respond(
        self, conn: socket.socket, request: SimRequest, response: SimResponse, content: str
    ) -> None:
        dialect = self.wire_dialect(request.path)
        read = response.prompt_tokens
        if read is None:
            system, user = extract_prompt(dialect, request.body)
            # one token per 4 bytes, and never under the 10 a scripted answer has always
            # reported, so the wire of a tiny test prompt is what render_events() makes
            read = max(10, len((system + user).encode("utf-8", "surrogatepass")) // 4)
        wire = wire_for(
            dialect, content, response, prompt_tokens=read, signer=self._signer(request)
        )
        limit = len(wire)
        for bound in (response.cut_after, response.stall_after):
            if bound is not None:
                limit = min(limit, bound)
        cuts = sorted({0, limit, *(o for o in response.split_at if 0 < o < limit)})
        if response.segment_size:
            step = response.segment_size
            cuts = sorted({*cuts, *range(response.pause_from, limit, step)})
        for index, (lo, hi) in enumerate(itertools.pairwise(cuts)):
            wait = response.pause if index and lo >= response.pause_from else 0.0
            if wait and self._stop.wait(wait):
                return
            conn.sendall(wire[lo:hi])
        if response.endless and limit == len(wire):
            self._endless(conn)
            return
        if response.stall_after is not None and response.stall_after < len(wire):
            self._hold(conn, response.ping_every)
        if response.framing == "close" or response.cut_after is not None:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)
            self._drain(conn)

    def _signer(self, request: SimRequest) -> Callable[[bytes], str] | None:
        """What signs an answer to ``request``: the key over its exact body and its prompt
        (MC1), or None."""
        key = self._signing_key
        if key is None or self.dialect != "mc1":
            return None
        system, user = extract_prompt("mc1", request.body)
        digest = signature.prompt_sha256(system, user)
        sent = signature.request_sha256(request.raw_body)
        return lambda envelope: signature.sign(
            key, request_digest=sent, prompt_digest=digest, envelope=envelope
        )

    def wire_dialect(self, path: str) -> str:
        """The dialect the answer is in: Vertex serves Claude models in Anthropic's."""
        if self.dialect == "vertex" and "/publishers/anthropic/" in path:
            return "anthropic"
        return self.dialect

    def _endless(self, conn: socket.socket) -> None:
        event = _endless_event(self.dialect)
        chunk = b"%x\r\n%s\r\n" % (len(event), event)
        started, sent = time.monotonic(), 0
        while not self._stop.is_set() and sent < ENDLESS_MAX_BYTES:
            if time.monotonic() - started > ENDLESS_MAX_S:
                return
            conn.sendall(chunk)
            sent += len(chunk)

    def _hold(self, conn: socket.socket, ping_every: float | None = None) -> None:
        """Keep the connection open, sending nothing (or only keep-alive comments, one
        HTTP chunk each, every ``ping_every`` seconds), until the client leaves."""
        started = last_ping = time.monotonic()
        ping = b": ping\n\n"
        while not self._stop.is_set() and time.monotonic() - started < MAX_HOLD_S:
            readable, _, _ = select.select([conn], [], [], 0.05)
            if readable and not conn.recv(4096):
                return
            if ping_every is not None and time.monotonic() - last_ping >= ping_every:
                last_ping = time.monotonic()
                try:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(ping), ping))
                except OSError:
                    return

    def _drain(self, conn: socket.socket) -> None:
        """Wait briefly for the client to close, so the close is seen as the body's end."""
        conn.settimeout(2.0)
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass


__all__ = [
    "DIALECTS",
    "SENTINEL",
    "SIM_EXTRAS",
    "VERTEX_CLAUDE",
    "ReviewerSimulator",
    "SimRequest",
    "SimResponse",
    "error_body",
    "extract_prompt",
    "render_events",
    "wire_for",
]
