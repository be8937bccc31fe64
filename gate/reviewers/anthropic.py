"""Anthropic Messages streaming.

Request: ``POST {base_url}/v1/messages`` with ``x-api-key``,
``anthropic-version: 2023-06-01`` and ``stream: true``. Answer: SSE events
``message_start``, then per content block ``content_block_start``,
``content_block_delta`` (``text_delta`` carries the text; thinking and tool
deltas are not content), ``content_block_stop``, then ``message_delta`` with
``delta.stop_reason`` and finally ``message_stop``. ``ping`` may come
anywhere; ``event: error`` may come inside an HTTP 200 and voids the answer.
Unknown event types are ignored, as Anthropic's versioning policy asks.

Every event must be named, and its name must be its data's ``type``. The
official SDK dispatches on the ``event:`` line and skips an unnamed event, so a
proxy that strips the names would make the gate seal text the SDK never
shows: an unnamed event is ``malformed_event``.
"""

from __future__ import annotations

import json

from gate.decide.attempt import FinishReason
from gate.providers import Provider
from gate.reviewers.base import HttpRequest, one_line
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import Frame, SSEStream, int_fields

NAME = Provider.ANTHROPIC
API_VERSION = "2023-06-01"

_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.REFUSAL,
}


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    body = {
        "model": settings.model,
        "system": system,
        "messages": [{"role": "user", "content": user}],
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "stream": True,
    }
    headers = {"accept": "text/event-stream", "anthropic-version": API_VERSION}
    if settings.api_key:
        headers["x-api-key"] = settings.api_key
    return HttpRequest(
        url=settings.base_url.rstrip("/") + "/v1/messages",
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


class Stream(SSEStream):
    PROVIDER = NAME
    END_MARKER = "event: message_stop"
    MISSING_END_REASON = "missing_message_stop"
    REQUEST_ID_HEADERS: tuple[str, ...] = ("request-id", "x-request-id")

    def __init__(self, settings: ReviewerSettings) -> None:
        super().__init__(settings)
        self.started = False

    def on_event(self, frame: Frame) -> None:
        data = frame.object()
        if not frame.name:
            self.note_malformed(
                "malformed event: an event without an event: line (the official SDK skips "
                "it, so its text would not be shown; a proxy may strip event names)"
            )
            return
        kind = data.get("type")
        if not isinstance(kind, str):
            self.note_malformed("malformed event: no type in the event data")
            return
        if frame.name != kind:
            secret = self.settings.api_key
            name, shown = one_line(frame.name, secret, 40), one_line(kind, secret, 40)
            self.note_malformed(f"malformed event: event {name!r} carries type {shown!r}")
            return
        if kind == "ping":
            return
        if self.end_marker:
            self.note_malformed(f"malformed event: {kind} after message_stop")
            return
        if kind == "message_start":
            self._start(data)
            return
        if not self.started and kind.startswith(("content_block", "message_")):
            self.note_malformed(f"malformed event: {kind} before message_start")
            return
        if kind == "content_block_start":
            block = data.get("content_block")
            if isinstance(block, dict) and block.get("type") == "text":
                self._text(block.get("text", ""))
            elif isinstance(block, dict) and str(block.get("type", "")).endswith("tool_use"):
                self.note_tool_call(block.get("name"))  # tool_use, server_tool_use, mcp_...
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if not isinstance(delta, dict):
                self.note_malformed("malformed event: content_block_delta without a delta")
            elif delta.get("type") == "text_delta":
                self._text(delta.get("text"))
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.end_marker = True
        # content_block_stop and event types added later carry no content

    def _start(self, data: dict[str, object]) -> None:
        if self.started:
            self.note_malformed("malformed event: a second message_start")
            return
        self.started = True
        message = data.get("message")
        if isinstance(message, dict):
            if isinstance(message.get("id"), str):
                self.response_id = message["id"]
            self.usage.update(int_fields(message.get("usage")))

    def _text(self, text: object) -> None:
        if not isinstance(text, str):
            self.note_malformed("malformed event: text is not a string")
            return
        if text and self.finish is not None:
            self.note_malformed("malformed event: text after the stop_reason")
            return
        self.parts.append(text)

    def _message_delta(self, data: dict[str, object]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict):
            reason = delta.get("stop_reason")
            if reason is not None:
                if not isinstance(reason, str):
                    self.note_malformed("malformed event: stop_reason is not a string")
                    return
                self.note_finish(reason)
        self.usage.update(int_fields(data.get("usage")))

    def normalize(self, verbatim: str) -> FinishReason:
        return _FINISH.get(verbatim, FinishReason.OTHER)
