"""Google Vertex AI: Gemini models and Anthropic's Claude models, with an OAuth access token.

Requests go to ``{base_url}/v1/projects/{project}/locations/{location}/publishers/...``
(``base_url`` is ``https://{location}-aiplatform.googleapis.com``, or
``https://aiplatform.googleapis.com`` for ``global``) with
``Authorization: Bearer {access token}`` (``GOOGLE_OAUTH_ACCESS_TOKEN``, which
``google-github-actions/auth`` with ``token_format: access_token`` provides):

* a model named ``claude-...`` is Anthropic on Vertex:
  ``.../publishers/anthropic/models/{model}:streamRawPredict`` with the
  Messages body, no ``model`` in it and ``anthropic_version: vertex-2023-10-16``;
  the answer is read by the Anthropic reader (:mod:`gate.reviewers.anthropic`);
* any other model is Gemini:
  ``.../publishers/google/models/{model}:streamGenerateContent?alt=sse`` with the
  Gemini body, read by the Gemini reader (:mod:`gate.reviewers.gemini`).

The completeness evidence is the reader's own, unchanged.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from gate.providers import Provider
from gate.reviewers import anthropic, gemini
from gate.reviewers.base import HttpRequest, Parser
from gate.reviewers.settings import ReviewerSettings

NAME = Provider.VERTEX
ANTHROPIC_VERSION = "vertex-2023-10-16"


def is_claude(model: str) -> bool:
    return model.removeprefix("publishers/anthropic/models/").startswith("claude")


def model_path(settings: ReviewerSettings) -> str:
    publisher = "anthropic" if is_claude(settings.model) else "google"
    model = settings.model.rsplit("/", 1)[-1]
    return (
        f"/v1/projects/{quote(settings.project or '', safe='')}"
        f"/locations/{quote(settings.location or '', safe='')}"
        f"/publishers/{publisher}/models/{quote(model, safe='-._~@')}"
    )


def request_url(settings: ReviewerSettings) -> str:
    root = settings.base_url.rstrip("/") + model_path(settings)
    if is_claude(settings.model):
        return root + ":streamRawPredict"
    return root + ":streamGenerateContent?alt=sse"


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    module = anthropic if is_claude(settings.model) else gemini
    plain = module.build_request(settings, system=system, user=user)
    body = json.loads(plain.body)
    if module is anthropic:
        del body["model"]
        body = {"anthropic_version": ANTHROPIC_VERSION, **body}
    headers = {"accept": "text/event-stream"}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    return HttpRequest(
        url=request_url(settings),
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


class GeminiStream(gemini.Stream):
    PROVIDER = NAME


class AnthropicStream(anthropic.Stream):
    PROVIDER = NAME
    REQUEST_ID_HEADERS: tuple[str, ...] = ("request-id", "x-request-id", "x-cloud-trace-context")


def Stream(settings: ReviewerSettings) -> Parser:
    """The reader for the model's publisher."""
    if is_claude(settings.model):
        return AnthropicStream(settings)
    return GeminiStream(settings)
