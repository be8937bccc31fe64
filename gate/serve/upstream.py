"""One question forwarded upstream, and what the service answers the gate.

:func:`parse` reads the gate's MC1 request (``{model, system, user, max_tokens,
temperature, nonce}``, strict JSON, exact types) and keeps the SHA-256 of its exact
bytes. :func:`forward` asks the upstream once through the gate's own transport
(:func:`gate.reviewers.transport.call_once`: the openai dialect's stream, ``perform``
under every limit, the prompt tokens read against
:func:`gate.reviewers.prompt_read.lower_bound`, a refusal's body named). Then:

* the attempt carried every piece of completeness evidence (the end marker, a ``stop``
  finish reason, enough prompt tokens): 200, the MC1 envelope the transport sealed,
  signed (:func:`gate.decide.signature.sign`) over the digest of the request body as
  received, in the ``mc1-signature`` header; nothing of the request is echoed: the gate
  checks the signature against the body it sent, so a request rewritten on the way (the
  model, a parameter) or an answer replayed to another request does not verify;
* it ended by the model's or the diff's doing (:data:`gate.decide.ends.End.CHOSEN`: a
  prompt the upstream cut, ``max_tokens``, a filter, an empty answer, the context
  window): 422, whose body names the end as ``"review-gate-end:<reason>"``
  (:data:`gate.decide.ends.SERVICE_END`), so the gate records that very end;
* the upstream could not answer (an outage: connect, a cut, a timeout, 5xx, a stream
  without its end marker): 502, 504 for a timeout, 503 with the upstream's
  ``Retry-After`` for its 429; the gate retries these and may ask a fallback;
* the request was cut (its client left, the shutdown's grace ran out): 503, never sealed.

Nothing here logs: :class:`Answer` carries codes and sizes for the access log, and the
upstream's words only in the body the authenticated client reads.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gate.decide.ends import End, reason_end
from gate.decide.signature import HEADER, prompt_sha256, request_sha256, sign
from gate.errors import GateError
from gate.reviewers.mc1 import MEDIA_TYPE
from gate.safe import strictjson

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from gate.reviewers.base import Reply
    from gate.reviewers.settings import ReviewerSettings
    from gate.serve.cancel import Cancel
    from gate.serve.config import ServeConfig

#: the reasons of an outage that is a timeout (504; every other outage is a 502)
TIMEOUTS = frozenset({"timeout", "connect_timeout", "deadline"})
MAX_TOKENS = 1_000_000
MAX_MODEL = 256
#: the bounds of a request's nonce (the gate sends 32 hex digits: gate.reviewers.mc1)
NONCE_CHARS = (16, 128)


class BadQuestion(GateError):
    """The request body is not the gate's MC1 request (400)."""

    reason = "bad_request"


@dataclass(frozen=True)
class Question:
    model: str
    system: str = field(repr=False)
    user: str = field(repr=False)
    max_tokens: int
    temperature: float
    #: SHA-256 of the request body's exact bytes, as received: what the signature covers
    request_sha256: str


@dataclass(frozen=True)
class Answer:
    """What the service sends: status, headers, body; and for the log, codes and sizes."""

    status: int
    body: bytes = field(repr=False)
    headers: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # "" for a sealed answer, else the upstream's (or the cut's) code
    upstream_status: int | None = None

    @property
    def sealed(self) -> bool:
        return self.status == 200


def _bad(message: str, *, reason: str | None = None) -> BadQuestion:
    return BadQuestion(f"not an MC1 request: {message}")


def parse(body: bytes) -> Question:
    """The gate's request, read strictly; :class:`BadQuestion` naming what is wrong."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _bad("the body is not UTF-8") from err
    value = strictjson.loads(text, what="the request", error=_bad)
    if not isinstance(value, dict):
        raise _bad("the body is not a JSON object")
    expected = {"model", "system", "user", "max_tokens", "temperature", "nonce"}
    if set(value) != expected:
        raise _bad(f"the keys must be exactly {', '.join(sorted(expected))}")
    model, system, user = value["model"], value["system"], value["user"]
    if not all(isinstance(item, str) for item in (model, system, user)):
        raise _bad("model, system and user must be strings")
    if not all(_is_text(item) for item in (model, system, user, value["nonce"])):
        # a JSON escape of a lone surrogate: no text, and no digest to sign it by
        raise _bad("a string holds a lone surrogate (an escape such as \\ud800): not text")
    if not 0 < len(model) <= MAX_MODEL:
        raise _bad(f"model must have 1 to {MAX_MODEL} characters")
    nonce, (fewest, most) = value["nonce"], NONCE_CHARS
    if not isinstance(nonce, str) or not fewest <= len(nonce) <= most:
        raise _bad(f"nonce must be a string of {fewest} to {most} characters")
    tokens, temperature = value["max_tokens"], value["temperature"]
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= MAX_TOKENS:
        raise _bad(f"max_tokens must be an integer within 1-{MAX_TOKENS}")
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not (math.isfinite(temperature) and 0 <= temperature <= 2)
    ):
        raise _bad("temperature must be a number within 0-2")
    return Question(model, system, user, tokens, float(temperature), request_sha256(body))


def _is_text(value: object) -> bool:
    """Whether ``value`` is not a string, or one UTF-8 can encode (no lone surrogate)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def error_body(reason: str, message: str, *, end: str = "") -> bytes:
    """A JSON error the gate reads (``error.type: error.message``); ``end`` names a chosen
    end as :data:`gate.decide.ends.SERVICE_END` has it."""
    error = {"type": reason, "message": message}
    if end:
        error["code"] = f"review-gate-end:{end}"
    return json.dumps({"error": error}, ensure_ascii=True).encode("ascii")


def refused(status: int, reason: str, message: str, **headers: str) -> Answer:
    return Answer(
        status, error_body(reason, message), {"content-type": "application/json", **headers}, reason
    )


def forward(
    config: ServeConfig, question: Question, key: Ed25519PrivateKey, cancel: Cancel
) -> Answer:
    """Ask the upstream once and answer the gate (module docstring)."""
    from gate.reviewers.transport import call_once  # httpx: when a question comes

    settings = config.upstream_settings(
        model=question.model, max_tokens=question.max_tokens, temperature=question.temperature
    )
    if cancel.why:
        return _cut(cancel.why, None)
    if (over := _over_window(settings, question)) is not None:
        return over
    reply = call_once(
        settings, system=question.system, user=question.user, watchdog=cancel.watchdog
    )
    if cancel.why:  # cut while it ran: whatever arrived is never sealed
        return _cut(cancel.why, reply.http_status)
    if reply.complete and reply.envelope is not None:
        signature = sign(
            key,
            request_digest=question.request_sha256,
            prompt_digest=prompt_sha256(question.system, question.user),
            envelope=reply.envelope,
        )
        headers = {"content-type": MEDIA_TYPE, HEADER: signature, "cache-control": "no-store"}
        return Answer(200, reply.envelope, headers, "", reply.http_status)
    return _unsealed(reply)


def _over_window(settings: ReviewerSettings, question: Question) -> Answer | None:
    """With ``--context-window``, the gate's own preflight (:mod:`gate.reviewers.window`)
    and bound (:func:`gate.review.budget.tokens_at_most`): a prompt the upstream cannot
    fit is 422 ``context_overflow``, not sent; a size that cannot be read is 502 (the
    gate's ``incomplete``); None: ask the upstream."""
    from gate.decide.ends import CONTEXT_OVERFLOW
    from gate.errors import ContextUnknown
    from gate.review.budget import tokens_at_most
    from gate.reviewers.window import context_of

    try:
        served = context_of(settings)
    except ContextUnknown as err:
        said = f"the upstream's context could not be read: {err.message}"
        return Answer(502, error_body(err.reason, said), {"content-type": "application/json"},
                      err.reason)  # fmt: skip
    if served is None or served.tokens is None:
        return None
    size = len(question.system.encode("utf-8")) + len(question.user.encode("utf-8"))
    if tokens_at_most(size) + question.max_tokens <= served.tokens:
        return None
    said = (
        f"the prompt ({size:,} bytes: up to {tokens_at_most(size):,} tokens) and max_tokens "
        f"{question.max_tokens:,} cannot fit the upstream's context of {served.tokens:,} "
        f"tokens ({served.source}), so it was not sent; raise the server's context or lower "
        "max_chunk_bytes or max_tokens in the gate's config"
    )
    body = error_body(CONTEXT_OVERFLOW, said, end=CONTEXT_OVERFLOW)
    return Answer(422, body, {"content-type": "application/json"}, CONTEXT_OVERFLOW)


def _cut(why: str, upstream_status: int | None) -> Answer:
    answer = refused(
        503,
        why,
        "the request was cut before the upstream's answer was whole (the service is "
        "stopping, or the client left); nothing was sealed; retryable",
        **{"retry-after": "1"},
    )
    return Answer(answer.status, answer.body, answer.headers, why, upstream_status)


def _unsealed(reply: Reply) -> Answer:
    """The error the gate reads as the upstream's end (module docstring)."""
    end = reason_end(reply.reason, transient=reply.retryable)
    said = f"the upstream's answer was not sealed: {reply.detail}"
    headers = {"content-type": "application/json"}
    if end is End.CHOSEN:
        body = error_body(reply.reason, said, end=reply.reason)
        return Answer(422, body, headers, reply.reason, reply.http_status)
    status = 504 if reply.reason in TIMEOUTS else 502
    if reply.http_status == 429 or reply.reason == "quota_exhausted":
        status = 503
        if reply.retry_after is not None:
            headers["retry-after"] = str(max(1, math.ceil(reply.retry_after)))
    body = error_body(reply.reason or "upstream_error", said)
    return Answer(status, body, headers, reply.reason, reply.http_status)
