"""Carried chunk answers: a chunk's earlier bound answer reused, never assumed.

Incremental review (docs/decisions/0009-carrying.md). On a new head the gate plans
the chunks of the final diff as always; a chunk whose exact bytes (its ``diff_sha``) and
whose *question* (:meth:`gate.memory.question.QuestionKey.chunk_question`, derived from
the one question key the caller passes in, :class:`Asked`: its policy, config digest and
model, and the chunk prompt's template) equal those of a chunk the gate reviewed
before is *carried*: its recorded envelopes are decided again, here, by
:func:`gate.decide.decision.decide` against this chunk's own binding, and

- a ``pass`` (every one of the ``agreement`` answers a bound, confident pass) is carried:
  no call is made for the chunk;
- a ``fail`` stands: no call is made, and the review fails (a standing fail of the
  chunk's question is never re-rolled by carrying);
- anything else (unbound, malformed, low confidence, a different answer count) is not
  carried: the chunk is sent like any other.

Nothing is taken from a record but bytes the gate decides again: a record whose
envelope names another chunk's digest or policy is unbound, and a record of another
question is never looked up. Where a record may come from is the caller's rule
(:class:`Ledger`): the action reads only the gate's own sticky comment
(:mod:`gate.action.carry`), ``review-gate review --carry`` a certificate file the user
names. What a carried pass proves: a reviewer saw exactly these bytes, under the same
policy, config, model and prompt template, and passed them, with the file list of its
own run (not this one's) in its prompt.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gate.decide.agreement import aggregate as agree
from gate.decide.decision import Binding, Decision, State, decide
from gate.diff import SHA256_HEX
from gate.errors import GateError
from gate.review.certificate import envelope_bytes
from gate.review.chunks import Chunk
from gate.safe import strictjson

#: a run's label (its URL) as a carried answer names it: printable ASCII, 300 at most
RUN_TEXT = re.compile(r"[\x20-\x7e]{1,300}")


class CarryError(GateError):
    """A carry source (certificate or block) that is not of the expected shape."""

    reason = "bad_carry"


@dataclass(frozen=True)
class Carried:
    """One chunk's earlier answers: its question, its digest, the sealed envelopes (one
    per ``agreement`` answer), and where they were first recorded."""

    question: str
    diff_sha: str
    envelopes: tuple[bytes, ...]
    #: the run (URL) or file the answers were first recorded in
    run: str
    #: SHA-256 of the certificate that first recorded them ("" when not known)
    certificate_sha: str = ""

    def origin(self) -> str:
        """``<run> (certificate 1a2b3c4d5e6f)``: where the answers were first recorded, as
        the chunk table names it (the certificate part when its digest is known)."""
        sha = f" (certificate {self.certificate_sha[:12]})" if self.certificate_sha else ""
        return self.run + sha

    def to_json(self) -> dict[str, Any]:
        """Where the carried answers came from, for the certificate and the comment."""
        return {"question": self.question, "run": self.run, "certificate_sha": self.certificate_sha}


class Asked(Protocol):
    """The question a review answers, as a review in chunks needs it: the one key
    (:class:`gate.memory.question.QuestionKey`, given by the caller), bound to the bytes
    and the config reviewed, and the question each chunk answers, derived from it."""

    @property
    def diff_sha(self) -> str: ...

    @property
    def config_sha(self) -> str: ...

    def chunk_question(self, template_sha: str, *, model: str | None = None) -> str: ...


class Ledger(Protocol):
    """Where earlier chunk answers are looked up: by question and chunk digest only."""

    def find(self, question: str, diff_sha: str) -> Carried | None: ...


@dataclass(frozen=True)
class Book:
    """An in-memory :class:`Ledger`: one entry per (question, chunk digest); the first
    entry given for a key is kept."""

    entries: Mapping[tuple[str, str], Carried] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[Carried]) -> Book:
        entries: dict[tuple[str, str], Carried] = {}
        for item in items:
            entries.setdefault((item.question, item.diff_sha), item)
        return cls(entries)

    def find(self, question: str, diff_sha: str) -> Carried | None:
        return self.entries.get((question, diff_sha))

    def __len__(self) -> int:
        return len(self.entries)


def settle(carried: Carried, chunk: Chunk, *, policy_version: str, min_confidence: float,
           agreement: int) -> Decision | None:  # fmt: skip
    """The carried answers decided again for ``chunk``: a pass or a fail to carry, or
    None (send the chunk). Each envelope is decided by :func:`gate.decide.decision.decide`
    against ``chunk``'s own binding, then the ``agreement`` rule (a pass needs every
    answer to pass). A record of another chunk or question is None, and so is one of more
    answers than ``agreement``; one of fewer (the asking stopped at an answer that decided
    a block) carries only a fail, never a pass."""
    asked = len(carried.envelopes)
    if carried.diff_sha != chunk.sha or not 0 < asked <= agreement:
        return None
    binding = Binding(diff_sha=chunk.sha, policy_version=policy_version)
    decision = agree(
        [decide(env, binding=binding, min_confidence=min_confidence) for env in carried.envelopes]
    )
    if decision.state is State.PASS and asked == agreement:
        return decision
    return decision if decision.state is State.FAIL else None


def _origin(review: Mapping[str, Any], run: str, certificate_sha: str) -> tuple[str, str]:
    """Where a review's answers were first recorded: its own ``carried`` note (a chunk
    this certificate carried from an earlier one), else this certificate."""
    note = review.get("carried")
    if isinstance(note, dict):
        first_run, first_sha = note.get("run"), note.get("certificate_sha")
        if isinstance(first_run, str) and RUN_TEXT.fullmatch(first_run):
            if isinstance(first_sha, str) and SHA256_HEX.fullmatch(first_sha):
                return first_run, first_sha
            return first_run, ""
    return run, certificate_sha


def from_certificate(data: bytes, *, run: str) -> Book:
    """The chunk answers a certificate of a review in chunks recorded (its
    ``context.chunks``), each under the certificate's question; every envelope is
    checked against its digest, and a review that is split, has no envelope or has a
    malformed field is left out. Raises :class:`CarryError` for a file that is no
    certificate of a review in chunks (say which, so the caller can tell the user)."""
    cert = strictjson.loads(data, error=CarryError, what="the carry certificate")
    if not isinstance(cert, dict) or not isinstance(cert.get("context"), dict):
        raise CarryError("the carry file is not a review-gate certificate")
    chunks = cert["context"].get("chunks")
    if not isinstance(chunks, dict) or not isinstance(chunks.get("reviews"), list):
        raise CarryError("the carry certificate is not of a review in chunks (no context.chunks)")
    question = chunks.get("question")
    if not isinstance(question, str) or not SHA256_HEX.fullmatch(question):
        raise CarryError("the carry certificate names no chunk question (written before carrying)")
    label = run if RUN_TEXT.fullmatch(run) else "a certificate"
    own_sha = hashlib.sha256(data).hexdigest()
    items: list[Carried] = []
    for review in chunks["reviews"]:
        if not isinstance(review, dict) or review.get("split"):
            continue
        diff_sha = review.get("diff_sha")
        if not isinstance(diff_sha, str) or not SHA256_HEX.fullmatch(diff_sha):
            continue
        answers = review.get("answers")
        sealed = (
            [a.get("envelope") if isinstance(a, dict) else None for a in answers]
            if isinstance(answers, list) and answers
            else [review.get("envelope")]
        )
        envelopes = [envelope_bytes(one) for one in sealed]
        if not envelopes or any(env is None for env in envelopes):
            continue
        first_run, first_sha = _origin(review, label, own_sha)
        items.append(
            Carried(
                question=question,
                diff_sha=diff_sha,
                envelopes=tuple(env for env in envelopes if env is not None),
                run=first_run,
                certificate_sha=first_sha,
            )
        )
    return Book.of(items)


__all__ = ["Asked", "Book", "Carried", "CarryError", "Ledger", "from_certificate", "settle"]
