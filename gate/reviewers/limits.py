"""Quota and rate limits, read as each provider documents them.

A provider that refuses a request for capacity says which kind of refusal it is, and the
two kinds want opposite handling:

- a **rate limit** or an **overload** passes in seconds: retried (after ``Retry-After`` or
  ``retry-after-ms`` when sent), reason ``http_<status>``;
- a **quota or billing stop** will not heal in seconds: never retried, reason
  ``quota_exhausted``, and its message says who must act (the owner of the provider
  account).

The signatures, per dialect (each tested from the provider's documented error body, with
the official SDK's error classes as the oracle where they tell the kinds apart):

============== ================================================= ===========================
dialect         quota or billing stop (not retried)               rate limit / overload
============== ================================================= ===========================
OpenAI, Azure,  ``code``/``type`` ``insufficient_quota``,          429 ``rate_limit_exceeded``
Responses       ``billing_not_active``, ``billing_hard_limit_...`` (Azure: ``retry-after-ms``)
Anthropic       402 / ``billing_error``; 400 "credit balance is    429 ``rate_limit_error``,
                too low"; a ``*_spend_limit_reached`` code        529 ``overloaded_error``
Gemini, Vertex  ``RESOURCE_EXHAUSTED`` whose ``QuotaFailure``      ``RESOURCE_EXHAUSTED``
                names a per-day quota                             (per minute)
Bedrock         ``ServiceQuotaExceededException`` (400)           ``ThrottlingException``
                                                                  (429), ``ModelNotReady...``,
                                                                  ``ServiceUnavailable...``
============== ================================================= ===========================

:func:`classify` reads only the status, the headers and the start of the error body; it
can only stop a retry or name a refusal, never turn a refusal into an answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from gate.providers import Provider

#: the reason code of a quota or billing stop
QUOTA_REASON = "quota_exhausted"


class Limit(StrEnum):
    QUOTA = "quota"  # billing or quota: not retried, the account owner acts
    RATE = "rate_limit"  # per-minute limits: retried after the server's delay
    OVERLOADED = "overloaded"  # the provider is busy: retried


@dataclass(frozen=True)
class Refusal:
    """A capacity refusal: its kind and the provider's own words for it (the signature)."""

    kind: Limit
    signature: str

    @property
    def retryable(self) -> bool:
        return self.kind is not Limit.QUOTA

    def advice(self, provider: str) -> str:
        """Who acts, and how: the tail of the attempt's detail line."""
        if self.kind is Limit.QUOTA:
            return (
                f"the {provider} account's quota or billing is exhausted ({self.signature}); "
                "it will not heal in seconds, so it is not retried; whoever owns that "
                "account must add credit or raise the quota (or configure fallbacks:)"
            )
        if self.kind is Limit.RATE:
            return f"rate limited ({self.signature}); retryable after the server's delay"
        return f"the provider is overloaded ({self.signature}); retryable"


_OPENAI_QUOTA = frozenset(
    {"insufficient_quota", "billing_not_active", "billing_hard_limit_reached"}
)
#: the SDK's spend-limit classes (error.details.error_code), at 402 and 429
_ANTHROPIC_SPEND = frozenset(
    {"contract_spend_limit_reached", "enforced_spend_limit_reached"}
    | {"linked_organization_spend_limit_reached"}
)
_ANTHROPIC_CREDIT = re.compile(r"(?i)credit balance is too low")
_PER_DAY = re.compile(r"(?i)per[_ ]?day")
_BEDROCK_QUOTA = frozenset({"ServiceQuotaExceededException"})
_BEDROCK_RATE = frozenset({"ThrottlingException", "ModelNotReadyException"})
_BEDROCK_BUSY = frozenset({"ServiceUnavailableException"})


def _body(raw: bytes) -> object:
    """The error body as JSON, or None; only ever read for names, never trusted further."""
    try:
        return json.loads(raw.decode("utf-8", errors="replace")[:64_000])
    except (ValueError, RecursionError):
        return None


def _error(body: object) -> Mapping[str, object]:
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, dict):
        return {}
    inner = body.get("error")
    return inner if isinstance(inner, dict) else body


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _openai(status: int, error: Mapping[str, object]) -> Refusal | None:
    for name in (_text(error.get("code")), _text(error.get("type"))):
        if name in _OPENAI_QUOTA:
            return Refusal(Limit.QUOTA, name)
    if status == 429:
        return Refusal(Limit.RATE, _text(error.get("code")) or "http_429")
    return None


def _anthropic(status: int, error: Mapping[str, object]) -> Refusal | None:
    kind = _text(error.get("type"))
    details = error.get("details")
    code = _text(details.get("error_code")) if isinstance(details, dict) else ""
    if code in _ANTHROPIC_SPEND:
        return Refusal(Limit.QUOTA, code)
    if status == 402 or kind == "billing_error":
        return Refusal(Limit.QUOTA, kind or "http_402")
    if kind == "invalid_request_error" and _ANTHROPIC_CREDIT.search(_text(error.get("message"))):
        return Refusal(Limit.QUOTA, "credit balance too low")
    if status == 529 or kind == "overloaded_error":
        return Refusal(Limit.OVERLOADED, kind or "http_529")
    if status == 429:
        return Refusal(Limit.RATE, kind or "http_429")
    return None


def _gemini(status: int, error: Mapping[str, object]) -> Refusal | None:
    if _text(error.get("status")) != "RESOURCE_EXHAUSTED" and status != 429:
        return None
    details = error.get("details")
    for detail in details if isinstance(details, list) else ():
        if not isinstance(detail, dict) or "QuotaFailure" not in _text(detail.get("@type")):
            continue
        violations = detail.get("violations")
        for item in violations if isinstance(violations, list) else ():
            quota = _text(item.get("quotaId")) if isinstance(item, dict) else ""
            if _PER_DAY.search(quota):
                return Refusal(Limit.QUOTA, f"RESOURCE_EXHAUSTED {quota}")
    return Refusal(Limit.RATE, _text(error.get("status")) or "http_429")


def bedrock_error_code(headers: Mapping[str, str], body: object) -> str:
    """The AWS error code as botocore reads it: ``x-amzn-errortype`` (before ``:``), else the
    body's ``__type`` (after ``#``), else its ``code``."""
    header = headers.get("x-amzn-errortype") or headers.get("X-Amzn-Errortype") or ""
    if header:
        return header.split(":", 1)[0]
    if isinstance(body, dict):
        kind = _text(body.get("__type")) or _text(body.get("code"))
        return kind.rsplit("#", 1)[-1]
    return ""


def _bedrock(status: int, headers: Mapping[str, str], body: object) -> Refusal | None:
    code = bedrock_error_code(headers, body)
    if code in _BEDROCK_QUOTA:
        return Refusal(Limit.QUOTA, code)
    if code in _BEDROCK_RATE or (not code and status == 429):
        return Refusal(Limit.RATE, code or "http_429")
    if code in _BEDROCK_BUSY:
        return Refusal(Limit.OVERLOADED, code)
    return None


def quota_in_frame(value: object) -> Refusal | None:
    """The quota or billing stop an error frame inside a 200 stream names (any dialect's
    signature: they do not collide), or None; an in-stream quota stop is not retried
    either."""
    error = _error(value)
    for found in (_openai(0, error), _anthropic(0, error), _gemini(0, error)):
        if found is not None and found.kind is Limit.QUOTA:
            return found
    return None


def classify(provider: str, status: int, headers: Mapping[str, str], raw: bytes) -> Refusal | None:
    """The capacity refusal a non-200 answer is, as ``provider`` documents it, or None."""
    body = _body(raw)
    error = _error(body)
    found: Refusal | None
    if provider in (Provider.OPENAI, Provider.OPENAI_RESPONSES, Provider.AZURE_OPENAI):
        found = _openai(status, error)
    elif provider == Provider.ANTHROPIC:
        found = _anthropic(status, error)
    elif provider == Provider.GEMINI:
        found = _gemini(status, error)
    elif provider == Provider.VERTEX:  # Google's errors, or Anthropic's for Claude on Vertex
        found = _anthropic(status, error) if "type" in error else _gemini(status, error)
    elif provider == Provider.BEDROCK:
        found = _bedrock(status, headers, body)
    else:
        found = None
    if found is None and status == 429:
        return Refusal(Limit.RATE, "http_429")
    return found
