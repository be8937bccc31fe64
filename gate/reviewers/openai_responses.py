"""OpenAI Responses API streaming (``POST {base_url}/responses`` with ``stream: true``).

Request: ``{model, instructions, input: [user message], max_output_tokens,
temperature, stream: true, store: false}`` (the review is not stored at OpenAI).
Answer: SSE events, each data object carrying its ``type`` (and, when the
event is named, the name must be that type): ``response.created``, ...,
``response.output_text.delta`` (``delta`` is text; reasoning summaries and
other event types are not content), ..., then one terminal event:

* ``response.completed`` (``response.status: completed``): the end marker
  with the finish reason ``completed`` (a normal stop; a refusal part seen on
  the way makes it a refusal);
* ``response.incomplete``: the end marker with the finish reason
  ``incomplete_details.reason`` (``max_output_tokens`` is token exhaustion,
  ``content_filter`` a refusal);
* ``response.failed``: an error frame (``response.error``), read as an
  ``error`` event is (:func:`~gate.reviewers.stream.error_frame`): a quota or
  billing name in its ``code`` or its original ``type`` is a quota stop, never
  retried, whatever else it says.

OpenAI sends no ``[DONE]``; OpenRouter's Responses endpoint sends exactly one
``data: [DONE]`` (no event name, no other bytes) right after the terminal event,
and that one marker is accepted there. Nothing else may follow the terminal
event (a second marker, or one before it, is ``malformed_event``), and a
stream without a terminal event was cut.

The gate sends no tools: an output item that is neither a ``message`` nor
``reasoning`` (``function_call`` and every other ``*_call``) makes the answer
``unexpected_finish``, even when the response says ``completed``.

The text comes several times: as deltas, then whole in ``output_text.done``,
``content_part.done``, ``output_item.done`` and the terminal event's
``response.output`` (which the SDK's final response is built from). The gate
seals the deltas and requires every whole copy to equal them: a copy that
differs (a byte corrupted in transit, a proxy that rewrote one of them) is
``malformed_event``, so the gate never seals text other than what a client
reading any copy would show.
"""

from __future__ import annotations

import json
from typing import Any

from gate.decide.attempt import FinishReason
from gate.providers import Provider
from gate.reviewers.base import HttpRequest, one_line
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import ErrorFrame, Frame, SSEStream, error_frame, int_fields

NAME = Provider.OPENAI_RESPONSES
COMPLETED = "completed"

_FINISH = {
    COMPLETED: FinishReason.STOP,
    "max_output_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.REFUSAL,
}
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_TEXT_ITEMS = ("message", "reasoning")  # every other output item type is a tool call
#: what OpenRouter sends after the terminal event (https://openrouter.ai/docs/api-reference/responses)
DONE = "[DONE]"


def request_body(settings: ReviewerSettings, *, system: str, user: str) -> dict[str, object]:
    return {
        "model": settings.model,
        "instructions": system,
        "input": [{"role": "user", "content": user}],
        "max_output_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "stream": True,
        "store": False,
    }


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    headers = {"accept": "text/event-stream"}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    body = request_body(settings, system=system, user=user)
    return HttpRequest(
        url=settings.base_url.rstrip("/") + "/responses",
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


def _key(data: dict[str, Any]) -> tuple[str, int]:
    item, index = data.get("item_id"), data.get("content_index")
    return (
        item if isinstance(item, str) else "",
        index if isinstance(index, int) and not isinstance(index, bool) else 0,
    )


def _message_texts(item: object) -> list[tuple[int, object]] | None:
    """(content index, text) of a message item's output_text parts; None when not a message."""
    if not isinstance(item, dict) or item.get("type") != "message":
        return None
    content = item.get("content")
    parts = content if isinstance(content, list) else []
    return [
        (index, part.get("text"))
        for index, part in enumerate(parts)
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]


class Stream(SSEStream):
    PROVIDER = NAME
    END_MARKER = "response.completed or response.incomplete"
    MISSING_END_REASON = "missing_response_completed"
    REQUEST_ID_HEADERS = ("x-request-id",)

    def __init__(self, settings: ReviewerSettings) -> None:
        super().__init__(settings)
        self.texts: dict[tuple[str, int], list[str]] = {}
        self.done = False  # OpenRouter's data: [DONE] seen after the terminal event

    def _same(self, copy: object, key: tuple[str, int], where: str) -> None:
        """A whole copy of one text part must equal its deltas."""
        if copy != "".join(self.texts.get(key, [])):
            self.note_malformed(
                f"malformed event: the text in {where} differs from its output_text deltas "
                "(a copy was altered in transit, or deltas are missing)"
            )

    def on_event(self, frame: Frame) -> None:
        if frame.data == DONE and not frame.name:
            self._done()
            return
        data = frame.object()
        kind = data.get("type")
        secret = self.settings.api_key
        if not isinstance(kind, str):
            self.note_malformed("malformed event: no type in the event data")
            return
        if frame.name and frame.name != kind:
            name, shown = one_line(frame.name, secret, 40), one_line(kind, secret, 40)
            self.note_malformed(f"malformed event: event {name!r} carries type {shown!r}")
            return
        if kind == "response.failed":  # an error frame wins, after the end too
            self._terminal(kind, data.get("response"))
            return
        if self.end_marker:
            self.note_malformed(f"malformed event: {one_line(kind, secret, 40)} after the end")
            return
        if kind == "response.output_text.delta":
            self._text(data.get("delta"), _key(data))
        elif kind == "response.output_text.done":
            self._same(data.get("text"), _key(data), kind)
        elif kind == "response.content_part.done":
            part = data.get("part")
            if isinstance(part, dict) and part.get("type") == "output_text":
                self._same(part.get("text"), _key(data), kind)
        elif kind == "response.output_item.added":
            self._tool(data.get("item"))
        elif kind == "response.output_item.done":
            item = data.get("item")
            self._tool(item)
            for index, text in _message_texts(item) or []:
                item_id = item.get("id") if isinstance(item, dict) else None
                self._same(text, (item_id if isinstance(item_id, str) else "", index), kind)
        elif kind == "response.refusal.delta":
            delta = data.get("delta")
            if isinstance(delta, str):
                self.refusal_text += delta
        elif kind in _TERMINAL:
            self._terminal(kind, data.get("response"))
        elif kind == "response.created":
            self._record(data.get("response"))
        # other event types (in_progress, output_item.*, content_part.*, reasoning, ...)
        # carry no content

    def _done(self) -> None:
        """OpenRouter's ``data: [DONE]``: accepted once, right after the terminal event."""
        if not self.end_marker:
            self.note_malformed("malformed event: data: [DONE] before the terminal event")
        elif self.done:
            self.note_malformed("malformed event: a second data: [DONE]")
        self.done = True

    def _tool(self, item: object) -> None:
        """An output item that is neither a message nor reasoning (``function_call``,
        ``custom_tool_call``, ``web_search_call``, ...) is a tool call."""
        if isinstance(item, dict) and item.get("type") not in _TEXT_ITEMS:
            name = item.get("name")
            self.note_tool_call(name if isinstance(name, str) else item.get("type"))

    def _text(self, text: object, key: tuple[str, int]) -> None:
        if not isinstance(text, str):
            self.note_malformed("malformed event: output_text delta is not a string")
            return
        self.parts.append(text)
        self.texts.setdefault(key, []).append(text)

    def _record(self, response: object) -> None:
        if isinstance(response, dict):
            if isinstance(response.get("id"), str) and self.response_id is None:
                self.response_id = response["id"]
            if isinstance(response.get("usage"), dict):
                self.usage = int_fields(response["usage"])

    def _terminal(self, kind: str, response: object) -> None:
        if not isinstance(response, dict):
            if kind == "response.failed":
                self.note_error(ErrorFrame("response.failed", "(no response object)", False))
            else:
                self.note_malformed(f"malformed event: {kind} without a response object")
            return
        self._record(response)
        if kind == "response.failed":  # whatever its status says
            self.note_error(error_frame({"error": response.get("error")}, self.settings.api_key))
            return
        status = response.get("status")
        if status != kind.removeprefix("response."):
            shown = one_line(str(status), self.settings.api_key, 40)
            self.note_malformed(f"malformed event: {kind} carries status {shown!r}")
            return
        output = response.get("output")
        if not isinstance(output, list):
            self.note_malformed(f"malformed event: {kind} without its output list")
            return
        for item in output:
            self._tool(item)
        whole = "".join(
            text if isinstance(text, str) else "\0"
            for item in output
            for _, text in _message_texts(item) or []
        )
        if whole != self.content:
            self.note_malformed(
                f"malformed event: the output text in {kind} differs from the output_text "
                "deltas (a copy was altered in transit, or deltas are missing)"
            )
            return
        self.end_marker = True
        if kind == "response.completed":
            self.note_finish(COMPLETED)
            return
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        self.note_finish(reason if isinstance(reason, str) and reason else "incomplete")

    def normalize(self, verbatim: str) -> FinishReason:
        if self.refusal_text and verbatim == COMPLETED:
            return FinishReason.REFUSAL
        return _FINISH.get(verbatim, FinishReason.OTHER)
