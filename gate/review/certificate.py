"""The audit certificate: what was asked, what arrived, what was decided.

:func:`build` assembles a JSON-ready record (gate version, the digests of the
inputs, the binding, the sealed envelope itself (base64) with its digest,
every attempt with its finish and end reasons, and the decision), so a
decision can be re-verified offline from the certificate alone
(``review-gate verify --certificate-in``). :func:`write` stores it with a
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
from datetime import UTC, datetime
from typing import Any

from gate import __version__
from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Binding, Decision
from gate.decide.envelope import sealed_json
from gate.decide.signature import Signature
from gate.errors import AtomicWriteError, UsageError
from gate.safe import redact
from gate.safe.atomic import atomic_write

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
        "binding": {"diff_sha": binding.diff_sha, "policy_version": binding.policy_version},
        "inputs": dict(sorted(inputs.items())),
        "envelope": sealed,
        "attempts": [attempt.to_json() for attempt in attempts],
        "decision": decision.to_json(),
        "context": dict(extra or {}),
    }


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
