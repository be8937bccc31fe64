"""The audit certificate: what was asked, what arrived, what was decided.

:func:`build` assembles a JSON-ready record (gate version, the digests of the
inputs, the binding, the sealed envelope itself (base64) with its digest,
every attempt with its finish and end reasons and, for an MC1 service that signs, its
signature, and the decision), so a decision can be re-verified offline from the
certificate alone (``review-gate verify --from-certificate``), and who sealed each answer
checked against the service's public key (:func:`check_origin`). :func:`write` stores it with a
verified atomic write, every string redacted first (:mod:`gate.safe.redact`; the
paths of what was redacted are listed in ``context.redacted``), and refuses to
write a record in which a secret is still found. :func:`write_response` stores
the raw response beside it, redacted the same way.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gate import __version__
from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Binding, Decision
from gate.decide.envelope import sealed_json
from gate.decide.readback import words_for
from gate.decide.signature import Signature, check
from gate.errors import AtomicWriteError, SignatureError, SignatureMissing, UsageError
from gate.safe import redact
from gate.safe.atomic import atomic_write

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SCHEMA = "review-gate.certificate/1"


def build(
    decision: Decision,
    *,
    binding: Binding,
    attempts: Sequence[Attempt],
    inputs: Mapping[str, str],
    envelope: bytes | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the certificate as a JSON-ready dict (``inputs``: name -> sha256 hex)."""
    sealed = sealed_json(envelope)
    return {
        "schema": SCHEMA,
        "gate_version": __version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "binding": {
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
            "read": words_for(binding.diff_sha, binding.policy_version),
        },
        "inputs": dict(sorted(inputs.items())),
        "envelope": sealed,
        "attempts": [attempt.to_json() for attempt in attempts],
        "decision": decision.to_json(),
        "context": dict(extra or {}),
    }


def read_recorded(cert: Mapping[str, Any]) -> bool:
    """Whether ``cert`` was decided by the contract with the ``read`` member: its binding
    records the read words (:mod:`gate.decide.readback`). A certificate made before them
    is decided again by the contract it was decided by (five members); either contract
    refuses the other's verdicts (an extra or a missing member), so removing the record
    cannot lower the bar for a verdict that has the member (docs/verdict.md)."""
    binding = cert.get("binding")
    return isinstance(binding, Mapping) and "read" in binding


def dumps(cert: Mapping[str, Any]) -> bytes:
    return (json.dumps(cert, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def write(
    path: str | os.PathLike[str], cert: Mapping[str, Any], *, secrets: Sequence[str] = ()
) -> str:
    """Write the certificate atomically, redacted; return the SHA-256 of the bytes written.

    ``secrets`` are redacted as well as the ones registered (:func:`gate.safe.redact.remember`).
    A redacted envelope can no longer be re-verified: ``context.redacted`` says so.
    """
    changed: list[str] = []
    clean = redact.redact_value(dict(cert), *secrets, changed=changed)
    if changed:
        context = clean.get("context")
        clean["context"] = {**(context if isinstance(context, dict) else {}), "redacted": changed}
    data = dumps(clean)
    if redact.active(*secrets).found(data.decode("ascii")):
        raise AtomicWriteError(
            "refusing to write a certificate that contains a secret; this is a bug in "
            "review-gate, please report it (the secret itself is not shown)"
        )
    return atomic_write(path, data)


def write_response(path: str | os.PathLike[str], raw: bytes, *, secrets: Sequence[str] = ()) -> str:
    """Write the raw response (as received, secrets redacted) atomically; return its SHA-256."""
    return atomic_write(path, redact.redact_bytes(raw, *secrets))


def envelope_from(cert: Mapping[str, Any]) -> bytes:
    """Extract the sealed envelope from a certificate, checking its digest."""
    sealed = cert.get("envelope")
    if not isinstance(sealed, dict) or not isinstance(sealed.get("base64"), str):
        raise UsageError("the certificate holds no envelope (the attempt never completed)")
    context = cert.get("context")
    redacted = context.get("redacted") if isinstance(context, dict) else None
    if isinstance(redacted, list) and "$.envelope.base64" in redacted:
        raise UsageError(
            "the certificate's envelope held a secret and was redacted when it was "
            "written, so it cannot be re-verified from this certificate"
        )
    try:
        raw = base64.b64decode(sealed["base64"], validate=True)
    except ValueError as err:
        raise UsageError("the certificate's envelope is not valid base64") from err
    if hashlib.sha256(raw).hexdigest() != sealed.get("sha256"):
        raise UsageError("the certificate's envelope does not match its recorded sha256")
    return raw


def envelope_bytes(sealed: object) -> bytes | None:
    """A recorded envelope (``{"base64", "sha256"}``) as bytes; None if absent or if it
    does not match its digest (then nothing arrived, as far as a decision is concerned)."""
    if not isinstance(sealed, dict) or not isinstance(sealed.get("base64"), str):
        return None
    try:
        raw = base64.b64decode(sealed["base64"], validate=True)
    except ValueError:
        return None
    return raw if hashlib.sha256(raw).hexdigest() == sealed.get("sha256") else None


def attempts_from(cert: Mapping[str, Any]) -> tuple[Attempt, ...]:
    """Rebuild the recorded attempts (to re-decide a run that never completed)."""
    rows = cert.get("attempts")
    if not isinstance(rows, list):
        raise UsageError("the certificate has no attempts list")
    attempts = []
    for row in rows:
        try:
            attempts.append(
                Attempt(
                    number=int(row["number"]),
                    provider=str(row["provider"]),
                    complete=bool(row["complete"]),
                    reason=str(row["reason"]),
                    detail=str(row["detail"]),
                    end_reason=EndReason(row["end_reason"]),
                    finish_reason=FinishReason(row["finish_reason"]),
                    bytes_received=int(row["bytes_received"]),
                    signature=Signature.from_json(row.get("signature")),
                )
            )
        except (KeyError, TypeError, ValueError) as err:
            raise UsageError(f"the certificate has a malformed attempt record: {err}") from err
    return tuple(attempts)


@dataclass(frozen=True)
class Sealed:
    """One answer a certificate holds: where it is, its envelope, the prompt digest it
    answered (as the certificate records it) and the signature its last attempt recorded."""

    where: str  # "the answer", "answer 2", "chunk 3/7", "chunk 3/7 answer 2"
    envelope: bytes
    prompt_sha256: str | None
    signature: Signature | None


def sealed_answers(cert: Mapping[str, Any]) -> tuple[Sealed, ...]:
    """Every envelope the certificate holds (the answer, each ``agreement`` answer, each
    chunk's and each of its answers), with what each was asked and its signature. A chunk
    carried from an earlier run (``carried``) is left out: it was not asked here, and the
    certificate it came from (``carried_from``) holds its attempts and signature; the
    question it answered had the same config, ``public_key`` included.

    The certificate's own answer (and a chunk's) is also one of its numbered answers: it
    is left out when a numbered answer records the same envelope, prompt and request (one
    request, one answer). Numbered answers are never merged: k answers are k requests."""
    inputs = cert.get("inputs")
    prompt = inputs.get("prompt") if isinstance(inputs, dict) else None
    found: list[tuple[bool, Sealed]] = []  # (a group's own answer, the answer)
    _sealed(found, "the answer", cert, prompt)
    context = cert.get("context")
    context = context if isinstance(context, dict) else {}
    agreement = context.get("agreement")
    if isinstance(agreement, dict):
        for answer in _rows(agreement.get("answers")):
            _sealed(found, f"answer {answer.get('number')}", answer, prompt, numbered=True)
    chunks = context.get("chunks")
    for review in _rows(chunks.get("reviews") if isinstance(chunks, dict) else None):
        if review.get("carried") is not None:
            continue  # asked in an earlier run, under the same key: its certificate holds it
        name = f"chunk {review.get('chunk')}"
        asked = review.get("prompt_sha256")
        _sealed(found, name, review, asked)
        for answer in _rows(review.get("answers")):
            _sealed(found, f"{name} answer {answer.get('number')}", answer, asked, numbered=True)
    numbered = {_identity(sealed) for own, sealed in found if not own}
    seen: set[tuple[bytes, str, str]] = set()
    kept: list[Sealed] = []
    for own, sealed in found:
        identity = _identity(sealed)
        if own and (identity in numbered or identity in seen):
            continue  # a group's own answer is one of its numbered answers: one request
        seen.add(identity)
        kept.append(sealed)
    return tuple(kept)


def _identity(sealed: Sealed) -> tuple[bytes, str, str]:
    """What makes two records one answer: its envelope, prompt and the request sent."""
    sent = sealed.signature.request_sha256 if sealed.signature is not None else ""
    return sealed.envelope, sealed.prompt_sha256 or "", sent


def carried_chunks(cert: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the chunks the certificate holds as carried from an earlier run: their
    envelopes decide here, but no signature of theirs is held or checked here (the carry
    block holds envelopes, and a writer can edit it), so what :func:`sealed_answers` and
    :func:`check_origin` cover is not every answer the decision read."""
    context = cert.get("context")
    chunks = context.get("chunks") if isinstance(context, dict) else None
    reviews = _rows(chunks.get("reviews") if isinstance(chunks, dict) else None)
    return tuple(str(r.get("chunk")) for r in reviews if r.get("carried") is not None)


def _rows(value: object) -> list[Mapping[str, Any]]:
    return [row for row in value if isinstance(row, dict)] if isinstance(value, list) else []


def _sealed(
    found: list[tuple[bool, Sealed]],
    where: str,
    record: Mapping[str, Any],
    prompt: object,
    *,
    numbered: bool = False,
) -> None:
    envelope = envelope_bytes(record.get("envelope"))
    if envelope is None:
        return
    attempts = _rows(record.get("attempts"))
    signature = Signature.from_json(attempts[-1].get("signature")) if attempts else None
    asked = prompt if isinstance(prompt, str) else None
    found.append((not numbered, Sealed(where, envelope, asked, signature)))


def check_origin(cert: Mapping[str, Any], public_key: Ed25519PublicKey) -> tuple[Sealed, ...]:
    """Check that ``public_key`` signed every answer the certificate holds, for the request
    the gate sent (its recorded body digest) and the prompt the certificate records it was
    asked; return them. Raises :class:`SignatureError` naming the first answer whose
    signature is missing, by another key, or does not verify (another envelope, another
    request, another prompt, a forgery), or two answers recorded for one request (each
    request's nonce is fresh: one answer may not stand for two)."""
    answers = sealed_answers(cert)
    requests: dict[str, str] = {}
    for sealed in answers:
        recorded = sealed.signature
        try:
            if recorded is None:
                raise SignatureMissing(
                    "the certificate records no mc1-signature for it: the run received it "
                    "unsigned, so nothing proves who sealed it"
                )
            asked = sealed.prompt_sha256 or recorded.prompt_sha256
            if recorded.prompt_sha256 != asked:
                raise SignatureError(
                    f"its signature records the prompt {recorded.prompt_sha256[:16]}..., "
                    f"not the prompt {asked[:16]}... the certificate says was asked"
                )
            first = requests.setdefault(recorded.request_sha256, sealed.where)
            if first != sealed.where:
                raise SignatureError(
                    f"its signature records the request {recorded.request_sha256[:16]}..., "
                    f"which {first} records too: each request the gate sends is a new one "
                    "(a fresh nonce), so one answer may not stand for two"
                )
            check(
                public_key,
                recorded.value,
                request_digest=recorded.request_sha256,
                prompt_digest=asked,
                envelope=sealed.envelope,
            )
        except SignatureError as err:
            raise type(err)(f"{sealed.where}: {err.message}", reason=err.reason) from err
    return answers
