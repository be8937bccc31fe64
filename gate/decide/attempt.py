"""What one call to a reviewer produced: the typed record every stage shares.

A transport (:mod:`gate.reviewers`) returns a :class:`ReviewOutcome`: every
attempt it made, in order, and, only when the last attempt carried all the
completeness evidence, the sealed MC1 envelope of the reviewer's content.
The decision (:mod:`gate.decide.decision`) and the certificate read nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from gate.decide.signature import Signature


class EndReason(StrEnum):
    """How the byte stream of one attempt ended."""

    TRAILER = "trailer"  # the protocol's own end (Content-Length met, terminal chunk, end marker)
    SOCKET_CLOSE = "socket_close"  # the peer closed the connection early
    TIMEOUT = "timeout"  # connect/read timeout or the total deadline
    CANCEL = "cancel"  # cancelled by the gate (e.g. interrupted)
    SIZE_LIMIT = "size_limit"  # the response exceeded the maximum size
    HTTP_ERROR = "http_error"  # a non-2xx answer
    ERROR_FRAME = "error_frame"  # an error event inside a 200 stream


class FinishReason(StrEnum):
    """The provider's finish reason, normalized."""

    STOP = "stop"  # stop, end_turn, stop_sequence, STOP
    LENGTH = "length"  # length, max_tokens, MAX_TOKENS: token exhaustion
    REFUSAL = "refusal"  # refusal, content_filter, SAFETY, RECITATION, ...
    OTHER = "other"  # anything else the provider said
    NONE = "none"  # the provider never said (stream cut, MC1 endpoint)


@dataclass(frozen=True)
class Attempt:
    """One request to the reviewer and what came back."""

    number: int
    provider: str
    complete: bool
    reason: str  # "" when complete, else a stable code: token_exhaustion, missing_done, ...
    detail: str  # one human sentence naming the cause (and the fix, where there is one)
    end_reason: EndReason
    finish_reason: FinishReason = FinishReason.NONE
    provider_finish_reason: str | None = None
    http_status: int | None = None
    bytes_received: int = 0
    raw_sha256: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)
    request_id: str | None = None
    elapsed_s: float = 0.0
    retryable: bool = False
    #: the MC1 service's signature of this attempt's envelope (gate.reviewers.signed):
    #: checked against reviewer.public_key, or recorded unchecked where none is set
    signature: Signature | None = None

    def to_json(self) -> dict[str, Any]:
        signed = {} if self.signature is None else {"signature": self.signature.to_json()}
        return {
            "number": self.number,
            "provider": self.provider,
            "complete": self.complete,
            "reason": self.reason,
            "detail": self.detail,
            "end_reason": str(self.end_reason),
            "finish_reason": str(self.finish_reason),
            "provider_finish_reason": self.provider_finish_reason,
            "http_status": self.http_status,
            "bytes_received": self.bytes_received,
            "raw_sha256": self.raw_sha256,
            "usage": dict(self.usage),
            "request_id": self.request_id,
            "elapsed_s": round(self.elapsed_s, 3),
            "retryable": self.retryable,
            **signed,
        }


@dataclass(frozen=True)
class ChunkAttempt(Attempt):
    """An attempt as a review in chunks reports it live (``on_attempt``): the same
    attempt, with the chunk it was for (``7/40``). Only the live report carries it; the
    outcome and the certificate keep the plain :class:`Attempt` inside each chunk's record.
    """

    chunk: str = ""

    @staticmethod
    def of(attempt: Attempt, chunk: str) -> ChunkAttempt:
        values = {f.name: getattr(attempt, f.name) for f in fields(Attempt)}
        return ChunkAttempt(**values, chunk=chunk)


@dataclass(frozen=True)
class ReviewOutcome:
    """Every attempt, and the sealed envelope when the last one was complete."""

    attempts: tuple[Attempt, ...]
    envelope: bytes | None  # MC1 envelope; None unless the last attempt was complete
    raw: bytes = b""  # the last attempt's bytes exactly as received (for --save-response)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None
