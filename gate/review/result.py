"""What one review produced (and each chunk of it), and the certificate built from it.

:class:`ReviewResult` is what :func:`gate.review.pipeline.review_diff` returns, whether the diff
went in one request or in chunks (:func:`gate.review.chunked.review_chunks` builds it
too); the certificate is built from it, once, by the caller that writes it.
:func:`blocked_certificate` is the certificate of a run blocked before any request.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from gate.config.model import Config
from gate.decide.agreement import Answer, answers_json, record_json
from gate.decide.agreement import summary as agreement_summary
from gate.decide.attempt import Attempt, ReviewOutcome
from gate.decide.decision import Binding, Decision, binding_for
from gate.diff import Coverage
from gate.review import certificate

if TYPE_CHECKING:
    from gate.review.carry import Carried
    from gate.review.chunks import Chunk
    from gate.reviewers.settings import ReviewerSettings


@dataclass(frozen=True)
class ChunkReview:
    """One chunk as reviewed: its bytes' digest, prompt, attempts and decision.

    ``split`` is true for a chunk that overflowed the window and was replaced by its
    halves (which follow it); it is evidence, not part of the table.
    """

    chunk: Chunk
    total: int
    prompt_sha256: str
    outcome: ReviewOutcome
    decision: Decision | None
    split: bool = False
    #: with ``agreement: k`` > 1, the chunk's answers asked (``outcome`` holds all their
    #: attempts): k, or fewer when one decided a block
    answers: tuple[Answer, ...] = ()
    #: where the chunk's answers were carried from (no call was made for it), if carried
    carried: Carried | None = None
    #: the answers ``agreement: k`` asks for
    k: int = 1

    def to_json(self) -> dict[str, Any]:
        envelope = self.outcome.envelope
        return {
            "chunk": self.chunk.name,
            "diff_sha": self.chunk.sha,
            "bytes": self.chunk.size,
            "files": self.chunk.files(),
            "prompt_sha256": self.prompt_sha256,
            "split": self.split,
            "decision": None if self.decision is None else self.decision.to_json(),
            "attempts": [a.to_json() for a in self.outcome.attempts],
            "envelope": None
            if envelope is None
            else {
                "sha256": hashlib.sha256(envelope).hexdigest(),
                "length": len(envelope),
                "base64": base64.b64encode(envelope).decode("ascii"),
            },
            **({"answers": answers_json(self.answers)} if len(self.answers) > 1 else {}),
            **({"asked": len(self.answers), "k": self.k} if self.k > 1 else {}),
            **({"carried": self.carried.to_json()} if self.carried is not None else {}),
        }

    @property
    def state(self) -> str:
        if self.split:
            return "split"
        return "missing" if self.decision is None else str(self.decision.state)

    @property
    def reason(self) -> str:
        if self.split:
            return "context_overflow"
        return "missing_chunk" if self.decision is None else self.decision.reason


@dataclass(frozen=True)
class Reviewer:
    """Who reviewed, as the certificate names it (no key, no credentials in the URL)."""

    provider: str
    model: str
    base_url: str
    max_tokens: int
    temperature: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReviewResult:
    """Everything one review produced; the certificate is built from it, once, by whoever
    writes it (:meth:`certificate_for`), with the caller's own context added."""

    decision: Decision
    outcome: ReviewOutcome
    binding: Binding
    prompt_sha256: str
    config_sha256: str
    reviewer: Reviewer
    min_confidence: float
    #: what the reviewer saw (when the caller passed it); ``decision`` already
    #: reflects it, ``review_decision`` is the verdict's own decision
    coverage: Coverage | None = None
    review_decision: Decision | None = None
    notes: tuple[str, ...] = ()
    #: the caller's context for the certificate, given to :func:`review_diff`
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: each chunk as reviewed, when the diff was reviewed in chunks (gate/review/chunked.py)
    chunks: tuple[ChunkReview, ...] = ()
    #: with ``agreement: k`` > 1, each answer asked (``outcome`` is the first's): k, or
    #: fewer when one decided a block (:func:`gate.decide.agreement.stops_asking`)
    answers: tuple[Answer, ...] = ()
    #: the reviewers asked before this one (``fallbacks:``), each of which could not
    #: answer for an ``unavailable`` reason; ``reviewer`` is the one that answered
    earlier: tuple[ReviewResult, ...] = ()
    #: the answers ``agreement: k`` asks for (``answers`` holds those asked)
    k: int = 1

    def paid_attempts(self) -> tuple[Attempt, ...]:
        """Every request the review paid for, in order: each attempt of each of the
        ``agreement`` answers asked (``outcome`` holds only the first answer's), and in a
        chunked review each chunk's, halves and overflowed chunks included. The cost
        is counted over these."""
        before = tuple(a for result in self.earlier for a in result.paid_attempts())
        if self.chunks:
            return before + tuple(a for review in self.chunks for a in review.outcome.attempts)
        if len(self.answers) > 1:
            return before + tuple(a for answer in self.answers for a in answer.attempts)
        return before + self.outcome.attempts

    def paid_models(self) -> tuple[str, ...]:
        """The model of each of :meth:`paid_attempts`, in the same order (a fallback's
        attempts are priced at its own model's rate)."""
        before = tuple(m for result in self.earlier for m in result.paid_models())
        own = len(self.paid_attempts()) - len(before)
        return before + (self.reviewer.model,) * own

    def agreement(self) -> str | None:
        """``3/3 agree: pass`` (for the summary), or None with ``agreement: 1``."""
        return agreement_summary(self.answers, self.k) if self.k > 1 and self.answers else None

    def certificate_for(
        self, decision: Decision | None = None, *, extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The certificate of this review, deciding ``decision`` (default: the review's)."""
        context: dict[str, Any] = {
            "reviewer": self.reviewer.to_json(),
            "min_confidence": self.min_confidence,
        }
        if self.coverage is not None:
            context["coverage"] = self.coverage.to_json()
            if self.review_decision is not None and self.decision is not self.review_decision:
                context["review_decision"] = self.review_decision.to_json()
        if self.k > 1 and self.answers:
            context["agreement"] = record_json(self.answers, self.k)
        if self.earlier:
            context["fallback"] = fallback_json(self)
        context.update(self.extra)
        context.update(extra or {})
        return certificate.build(
            decision or self.decision,
            binding=self.binding,
            attempts=self.outcome.attempts,
            inputs={
                "diff": self.binding.diff_sha,
                "prompt": self.prompt_sha256,
                "config": self.config_sha256,
            },
            envelope=self.outcome.envelope,
            extra=context,
        )

    @cached_property
    def certificate(self) -> dict[str, Any]:
        """The certificate with no caller context (built on first use)."""
        return self.certificate_for()


def fallback_json(result: ReviewResult) -> dict[str, Any]:
    """The certificate's ``context.fallback``: who answered, and why each earlier one did not."""
    return {
        "answered_by": {"position": len(result.earlier) + 1, **result.reviewer.to_json()},
        "earlier": [
            {
                "position": n,
                "reviewer": r.reviewer.to_json(),
                "decision": r.decision.to_json(),
                "attempts": [a.to_json() for a in r.paid_attempts()],
            }
            for n, r in enumerate(result.earlier, 1)
        ],
    }


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe for a certificate).

    A URL urllib cannot read (it never reaches a certificate: the transport's
    validation refuses it first) is shown as ``"<invalid URL>"``, never raised.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def blocked_certificate(
    decision: Decision,
    diff: bytes,
    config: Config,
    *,
    coverage: Coverage | None = None,
    extra_cert: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The certificate of a run blocked before any reviewer call (no attempts, no envelope)."""
    binding = binding_for(diff, config)
    context: dict[str, Any] = {"min_confidence": config.min_confidence}
    if coverage is not None:
        context["coverage"] = coverage.to_json()
    context.update(extra_cert or {})
    return certificate.build(
        decision,
        binding=binding,
        attempts=(),
        inputs={"diff": binding.diff_sha, "config": config_sha256(config)},
        envelope=None,
        extra=context,
    )


def config_sha256(config: Config) -> str:
    canonical = json.dumps(config.to_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def reviewer_of(settings: ReviewerSettings) -> Reviewer:
    """Who reviewed, as the certificate names it (no key; the URL without credentials)."""
    return Reviewer(
        provider=settings.provider,
        model=settings.model,
        base_url=public_url(settings.base_url),
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
    )
