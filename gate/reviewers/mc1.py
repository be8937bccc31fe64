"""An MC1 reviewer endpoint: a team's own service that seals its answer itself.

Request: ``POST {base_url}`` with ``Accept: application/x-mc1`` and the JSON
body ``{"model", "system", "user", "max_tokens", "temperature", "nonce"}``
(``Authorization: Bearer`` when a key is set); ``nonce`` is 32 fresh random hex digits
for each attempt, so no two requests the gate sends have the same bytes. Answer: the
response body *is* an MC1 envelope (``MC1 <len> <sha256>\\n<body>``), verified with
:class:`~gate.decide.envelope.StreamVerifier` while it streams, so a bad header or a
body longer than declared stops the read at once. The envelope is passed on
exactly as received, never re-sealed. A cut or a digest mismatch is retried;
an envelope the service built wrong is not. The ``mc1-signature`` header of a whole
envelope goes with the reply (:attr:`Reply.signature_header`):
:mod:`gate.reviewers.signed` checks it against ``reviewer.public_key`` and the exact request
body sent: an answer signed for another request (a replay, a rewritten ``model``) fails.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace

from gate.decide.attempt import EndReason
from gate.decide.envelope import StreamVerifier
from gate.decide.signature import HEADER
from gate.errors import EnvelopeError, SizeLimitExceeded
from gate.providers import Provider
from gate.reviewers.base import Exchange, Failure, HttpRequest, Reply
from gate.reviewers.settings import ReviewerSettings

NAME = Provider.MC1
MEDIA_TYPE = "application/x-mc1"
#: Envelope errors that mean the bytes did not arrive as sent (retried).
_RETRYABLE = frozenset({"length_mismatch", "digest_mismatch"})
#: random bytes of each request's nonce (hex: twice as many digits)
NONCE_BYTES = 16


def build_request(settings: ReviewerSettings, *, system: str, user: str) -> HttpRequest:
    body = {
        "model": settings.model,
        "system": system,
        "user": user,
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "nonce": secrets.token_hex(NONCE_BYTES),
    }
    headers = {"accept": MEDIA_TYPE}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    return HttpRequest(
        url=settings.base_url,
        headers=headers,
        body=json.dumps(body, ensure_ascii=False).encode("utf-8"),
    )


class Stream:
    """Feed the body to a streaming MC1 verifier; conclude into a :class:`Reply`."""

    def __init__(self, settings: ReviewerSettings) -> None:
        self.settings = settings
        self.verifier = StreamVerifier(max_size=settings.max_response_bytes)

    def feed(self, chunk: bytes) -> None:
        self.verifier.feed(chunk)  # raises EnvelopeError: perform() stops reading

    def conclude(self, exchange: Exchange) -> Reply:
        def reply(
            reason: str,
            detail: str,
            end: EndReason,
            *,
            retry: bool = False,
            envelope: bytes | None = None,
            content: str = "",
        ) -> Reply:
            return Reply.from_exchange(
                exchange,
                provider=NAME,
                reason=reason,
                detail=detail,
                end=end,
                secret=self.settings.api_key,
                request_id=exchange.header("x-request-id", "request-id"),
                retry=retry,
                envelope=envelope,
                content=content,
            )

        if exchange.head_refused:
            return reply(
                exchange.reason,
                exchange.failure_detail,
                EndReason.HTTP_ERROR,
                retry=exchange.retryable,
            )
        error = exchange.sink_error
        if isinstance(error, EnvelopeError):
            end = EndReason.SIZE_LIMIT if isinstance(error, SizeLimitExceeded) else EndReason.CANCEL
            return reply(
                f"envelope_{error.reason}",
                f"{error.message}; the gate stopped reading after {len(exchange.raw)} bytes; "
                "the reviewer service must answer with one whole MC1 envelope",
                end,
            )
        if exchange.failure == Failure.CONNECTION_CUT and exchange.raw:
            try:
                self.verifier.finish()
            except EnvelopeError as err:
                return reply(
                    f"envelope_{err.reason}",
                    f"{err.message}; {exchange.failure_detail}",
                    EndReason.SOCKET_CLOSE,
                    retry=True,
                )
        if exchange.failure:
            return reply(
                exchange.reason,
                exchange.failure_detail,
                exchange.end_reason,
                retry=exchange.retryable,
            )
        try:
            envelope = self.verifier.finish()
        except EnvelopeError as err:
            retry = err.reason in _RETRYABLE
            return reply(
                f"envelope_{err.reason}",
                f"{err.message}; "
                + (
                    "the bytes did not arrive as sent; retryable"
                    if retry
                    else "the reviewer service built a wrong envelope; not retryable"
                ),
                EndReason.TRAILER,
                retry=retry,
            )
        whole = reply("", "", EndReason.TRAILER, envelope=exchange.raw, content=envelope.text())
        return replace(whole, signature_header=exchange.headers.get(HEADER))
