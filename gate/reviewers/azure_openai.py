"""Azure OpenAI Chat Completions streaming, read by the OpenAI chat reader.

Request: with ``reviewer.deployment``,
``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``
(``api_version``, default :data:`DEFAULT_API_VERSION`); without one, the v1 path
``POST {endpoint}/openai/v1/chat/completions`` with the model in the body (and
``api-version`` only when set). Auth on the deployments path: an ``api-key``
header (``auth: api-key``, the default, as ``openai.AzureOpenAI`` sends it), or a
Microsoft Entra access token as ``Authorization: Bearer`` (``auth: entra``). On
the v1 path the key or token goes as ``Authorization: Bearer``, as the ``openai``
client Microsoft documents for v1 sends it. The body is the OpenAI one
(:mod:`gate.reviewers.openai`).

Answer: the OpenAI chunk stream ending in ``data: [DONE]``, with Azure's
quirks: a first chunk with empty ``choices`` (and ``id: ""``) carrying
``prompt_filter_results``; ``content_filter_results`` on chunks; and
``finish_reason: content_filter``. A filter that fired (the finish reason
``content_filter``, or any ``filtered: true`` result on the prompt or the
answer) blocks with its own reason ``content_filter``, never as a pass and
never retried: the filter decides again the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from gate.decide.attempt import EndReason, FinishReason
from gate.providers import Provider
from gate.reviewers import openai
from gate.reviewers.base import HttpRequest, Reply, one_line
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.stream import Frame

NAME = Provider.AZURE_OPENAI
DEFAULT_API_VERSION = "2024-10-21"
ENTRA = "entra"


def request_url(settings: ReviewerSettings) -> str:
    root = settings.base_url.rstrip("/")
    if settings.deployment:
        version = settings.api_version or DEFAULT_API_VERSION
        return (
            f"{root}/openai/deployments/{quote(settings.deployment, safe='')}/chat/completions?"
            + urlencode({"api-version": version})
        )
    query = f"?{urlencode({'api-version': settings.api_version})}" if settings.api_version else ""
    return f"{root}/openai/v1/chat/completions{query}"


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    plain = openai.build_request(settings, system=system, user=user)
    body: dict[str, Any] = json.loads(plain.body)
    headers = {"accept": "text/event-stream"}
    if settings.api_key:
        if settings.auth == ENTRA or not settings.deployment:
            headers["authorization"] = f"Bearer {settings.api_key}"
        else:
            headers["api-key"] = settings.api_key
    return HttpRequest(
        url=request_url(settings),
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


def _items(value: object) -> list[dict[str, Any]]:
    """The objects of a list (anything else holds none; the chat reader judges its shape)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _fired(results: object) -> list[str]:
    """The categories of a filter result object that say ``filtered: true``."""
    if not isinstance(results, dict):
        return []
    return sorted(
        str(name)
        for name, value in results.items()
        if isinstance(value, dict) and value.get("filtered") is True
    )


class Stream(openai.Stream):
    PROVIDER = NAME
    REQUEST_ID_HEADERS: tuple[str, ...] = ("apim-request-id", "x-request-id", "x-ms-request-id")

    def __init__(self, settings: ReviewerSettings) -> None:
        super().__init__(settings)
        self.filtered: list[str] = []

    def on_event(self, frame: Frame) -> None:
        chunk = frame.value
        if isinstance(chunk, dict):
            if chunk.get("id") == "":
                chunk = {key: value for key, value in chunk.items() if key != "id"}
                frame = Frame(frame.name, frame.data, chunk, frame.problem)
            for item in _items(chunk.get("prompt_filter_results")):
                fired = _fired(item.get("content_filter_results"))
                self.filtered += [f"prompt {name}" for name in fired]
            for choice in _items(chunk.get("choices")):
                self.filtered += _fired(choice.get("content_filter_results"))
        super().on_event(frame)

    def judge_finish(self, finish: FinishReason, reply: Callable[..., Reply]) -> Reply:
        if self.finish == "content_filter" or self.filtered:
            which = ", ".join(dict.fromkeys(self.filtered)) or "unnamed"
            return reply(
                "content_filter",
                f"Azure's content filter stopped the answer (finish reason {self.finish!r}, "
                f"filtered: {one_line(which, self.settings.api_key, 120)}); a human must "
                "review this change; not retryable",
                EndReason.TRAILER,
            )
        return super().judge_finish(finish, reply)

    def normalize(self, verbatim: str) -> FinishReason:
        if self.filtered:
            return FinishReason.REFUSAL
        return super().normalize(verbatim)
