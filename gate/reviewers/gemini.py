"""Google Gemini ``streamGenerateContent`` with ``alt=sse``.

Request: ``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``
with the key in the ``x-goog-api-key`` header (never in the URL). Answer:
SSE ``data:`` chunks, each a ``GenerateContentResponse``; the text is in
``candidates[0].content.parts[].text`` (parts marked ``thought`` are not
content), the final chunk carries ``candidates[0].finishReason`` and there is
no ``[DONE]``, so a stream without ``finishReason`` is cut. ``usageMetadata``
and ``responseId`` are recorded; a ``promptFeedback.blockReason`` is a
refusal; an ``error`` object inside the 200 stream voids the answer.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from gate.decide.attempt import FinishReason
from gate.providers import Provider
from gate.reviewers.base import HttpRequest
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import Frame, SSEStream, int_fields

NAME = Provider.GEMINI

_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "LANGUAGE",
    }
)


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    model = settings.model.removeprefix("models/")
    body = {
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": [{"role": "user", "parts": [{"text": user}]}],
        "generationConfig": {
            "maxOutputTokens": settings.max_tokens,
            "temperature": settings.temperature,
        },
    }
    headers = {"accept": "text/event-stream"}
    if settings.api_key:
        headers["x-goog-api-key"] = settings.api_key
    return HttpRequest(
        url=(
            settings.base_url.rstrip("/")
            + f"/v1beta/models/{quote(model, safe='-._~')}:streamGenerateContent?alt=sse"
        ),
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


class Stream(SSEStream):
    PROVIDER = NAME
    END_MARKER = "a final chunk with finishReason"
    MISSING_END_REASON = "missing_finish_reason"
    REQUEST_ID_HEADERS: tuple[str, ...] = ("x-request-id",)

    def __init__(self, settings: ReviewerSettings) -> None:
        super().__init__(settings)
        self.blocked = False

    def missing_end_detail(self) -> str:
        return (
            "the stream ended without a chunk carrying finishReason (Gemini sends no [DONE], "
            "so this is how a cut looks); retryable"
        )

    def on_event(self, frame: Frame) -> None:
        chunk = frame.object()
        if isinstance(chunk.get("responseId"), str) and self.response_id is None:
            self.response_id = chunk["responseId"]
        if isinstance(chunk.get("usageMetadata"), dict):
            self.usage = int_fields(chunk["usageMetadata"])
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            self.blocked = True
            self.note_finish(feedback["blockReason"])
            self.end_marker = True
        candidates = chunk.get("candidates") or []
        if not isinstance(candidates, list):
            self.note_malformed("malformed event: candidates is not a list")
            return
        for candidate in candidates:
            if not isinstance(candidate, dict):
                self.note_malformed("malformed event: a candidate is not an object")
                return
            if candidate.get("index", 0) == 0:
                self._candidate(candidate)

    def _candidate(self, candidate: dict[str, object]) -> None:
        content = candidate.get("content") or {}
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict) or part.get("thought") is True:
                continue
            for tool in ("functionCall", "executableCode"):
                if tool in part:
                    call = part[tool]
                    self.note_tool_call(call.get("name") if isinstance(call, dict) else tool)
            text = part.get("text")
            if text is None:
                continue
            if not isinstance(text, str):
                self.note_malformed("malformed event: a part's text is not a string")
                return
            if text and self.end_marker:
                self.note_malformed("malformed event: text after the chunk with finishReason")
                return
            self.parts.append(text)
        reason = candidate.get("finishReason")
        if reason is not None:
            if not isinstance(reason, str):
                self.note_malformed("malformed event: finishReason is not a string")
                return
            self.note_finish(reason)
            self.end_marker = True

    def normalize(self, verbatim: str) -> FinishReason:
        if self.blocked or verbatim in _REFUSALS:
            return FinishReason.REFUSAL
        if verbatim == "STOP":
            return FinishReason.STOP
        if verbatim == "MAX_TOKENS":
            return FinishReason.LENGTH
        return FinishReason.OTHER
