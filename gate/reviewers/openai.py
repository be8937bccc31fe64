"""OpenAI Chat Completions streaming, for OpenAI and every compatible server.

Covers api.openai.com and OpenAI-compatible servers (Ollama, vLLM, llama.cpp,
LiteLLM proxy) through ``base_url``. Request: ``POST {base_url}/chat/completions``
with ``stream: true`` and ``stream_options.include_usage``. Answer: SSE
``data:`` chunks (``chat.completion.chunk``) whose ``choices[0].delta.content``
carry the text, a chunk with ``finish_reason``, an optional usage chunk, then
``data: [DONE]``. An ``error`` object (or ``event: error``) anywhere voids the
answer, even when ``[DONE]`` follows it or is its data (the precedence rule of
:mod:`~gate.reviewers.stream`).

``data: [DONE]`` followed by spaces or tabs is the end marker too: the
official SDK ends the stream at any data that starts with ``[DONE]``, and the
marker is only one piece of the evidence (a finish reason ``stop`` must have
come before it, nothing may follow it, and an error frame still wins), so
whitespace a proxy adds cannot make a cut or an error look complete. Anything
else after ``[DONE]`` is not the marker, and not JSON: a malformed event.
"""

from __future__ import annotations

import json

from gate.decide.attempt import FinishReason
from gate.decide.decision import binding_in
from gate.decide.grammar import verdict_grammar
from gate.providers import Provider
from gate.reviewers.base import HttpRequest, one_line
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import Frame, SSEStream, int_fields

NAME = Provider.OPENAI

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.REFUSAL,
}


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    body = {
        "model": settings.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
    }
    grammar = _grammar(settings, user)
    if settings.output_grammar == "gbnf" and grammar is not None:
        body["grammar"] = grammar
    elif settings.output_grammar == "vllm" and grammar is not None:
        body["structured_outputs"] = {"grammar": grammar}
    headers = {"accept": "text/event-stream"}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    return HttpRequest(
        url=settings.base_url.rstrip("/") + "/chat/completions",
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


def _grammar(settings: ReviewerSettings, user: str) -> str | None:
    """The verdict grammar for this request, when ``output_grammar`` asks for one.

    The binding comes from the gate's own lines at the head of the user message
    (:func:`~gate.decide.decision.binding_in`); a prompt without them (none the gate
    builds) is sent without a grammar, and the answer is checked as always.
    """
    if settings.output_grammar == "none":
        return None
    binding = binding_in(user)
    return verdict_grammar(binding) if binding is not None else None


class Stream(SSEStream):
    PROVIDER = NAME
    END_MARKER = "data: [DONE]"
    MISSING_END_REASON = "missing_done"
    REQUEST_ID_HEADERS: tuple[str, ...] = ("x-request-id",)

    def on_event(self, frame: Frame) -> None:
        if self.end_marker:
            self.note_malformed("malformed event: data after data: [DONE]")
            return
        if frame.data.rstrip(" \t") == "[DONE]":
            self.end_marker = True
            return
        chunk = frame.object()
        if isinstance(chunk.get("id"), str) and self.response_id is None:
            self.response_id = chunk["id"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = int_fields(chunk["usage"])
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            self.note_malformed("malformed event: choices is not a list")
            return
        for choice in choices:
            if not isinstance(choice, dict):
                self.note_malformed("malformed event: a choice is not an object")
                return
            if choice.get("index", 0) != 0:
                continue
            self._choice(choice)

    def _choice(self, choice: dict[str, object]) -> None:
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            self.note_malformed("malformed event: delta is not an object")
            return
        text = self._content(delta.get("content"))
        if text is None:
            return
        if text and self.finish is not None:
            self.note_malformed("malformed event: content after finish_reason")
            return
        self.parts.append(text)
        for key in ("tool_calls", "function_call"):
            self._tools(delta.get(key))
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            self.refusal_text += refusal
        reason = choice.get("finish_reason")
        if reason is not None:
            if not isinstance(reason, str):
                self.note_malformed("malformed event: finish_reason is not a string")
                return
            self.note_finish(reason)

    def _content(self, content: object) -> str | None:
        """``delta.content``: a string, or (Mistral) an array of content parts, whose
        ``text`` parts are read in order; any other part type is noted and blocks
        (``unsupported_content``). None when the delta is malformed."""
        if content is None or isinstance(content, str):
            return content or ""
        if not isinstance(content, list):
            self.note_malformed("malformed event: delta.content is not a string or a list")
            return None
        texts: list[str] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if not isinstance(part, dict) or not isinstance(kind, str):
                self.note_malformed("malformed event: a content part is not a typed object")
                return None
            if kind != "text":
                shown = one_line(kind, self.settings.api_key, limit=40)
                self.note_unread(f"the answer holds a content part of type {shown!r}")
                continue
            text = part.get("text")
            if not isinstance(text, str):
                self.note_malformed("malformed event: a text content part without its text")
                return None
            texts.append(text)
        return "".join(texts)

    def _tools(self, calls: object) -> None:
        """``delta.tool_calls`` (a list) or the older ``delta.function_call`` (an object)."""
        for call in calls if isinstance(calls, list) else [calls] if calls is not None else []:
            name: object = None
            if isinstance(call, dict):
                function = call.get("function")
                name = function.get("name") if isinstance(function, dict) else call.get("name")
            self.note_tool_call(name)

    def normalize(self, verbatim: str) -> FinishReason:
        if self.refusal_text and verbatim == "stop":
            return FinishReason.REFUSAL
        return _FINISH.get(verbatim, FinishReason.OTHER)
