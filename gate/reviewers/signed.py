"""The MC1 signature of an answer, checked against ``reviewer.public_key``.

An MC1 envelope proves the answer arrived whole; it cannot prove who sealed it: anything
between the reviewer service and the gate (a proxy, a cache, a compromised hop) can rewrite
the answer and seal it again, length and SHA-256 recomputed. ``review-gate serve`` signs
each envelope with its Ed25519 key over the prompt it was asked and the envelope's bytes
(:mod:`gate.decide.signature`); :func:`checked` holds every whole MC1 answer to that:

* with ``public_key`` set, an answer whose signature is missing, malformed, by another key,
  or made for another prompt or another envelope is unsealed: the attempt ends with the
  error's reason (``signature_missing``, ``signature_malformed``, ``signature_key``,
  ``signature_invalid``), ``incomplete`` and never retried. Only a whole envelope is
  checked, so every one of these arrived whole: bytes that did not arrive are the
  envelope's errors (retried as before), and asking again through the same rewriting
  hop pays for another answer that is refused the same way (decision record 0051);
* with none set, a signature that arrived is recorded unchecked (``checked: false``), so
  ``review-gate verify --public-key`` can check it offline; unsigned MC1 works as before.

The checked or unchecked signature goes into the attempt and the certificate.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING

from gate.decide.signature import (
    HEADER,
    check,
    key_id,
    prompt_sha256,
    public_key_from_pem,
    unchecked,
)
from gate.errors import SignatureError
from gate.providers import Provider

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from gate.reviewers.base import Reply
    from gate.reviewers.settings import ReviewerSettings


@cache
def _key(pem: str) -> Ed25519PublicKey:
    """The configured key, read once per PEM text (validated before any request)."""
    return public_key_from_pem(pem.encode("utf-8"), source="reviewer.public_key")


def checked(reply: Reply, settings: ReviewerSettings, *, system: str, user: str) -> Reply:
    """``reply`` with its signature recorded, or, when ``settings.public_key`` is set and
    the signature does not check for the prompt ``system`` and ``user`` the gate sent, the
    same attempt unsealed with the error's reason."""
    if not reply.complete or reply.envelope is None or reply.provider != Provider.MC1:
        return reply
    envelope, value = reply.envelope, reply.signature_header
    if settings.public_key is None:
        if not value:
            return reply  # unsigned MC1 where no key is configured: as it always was
        digest = prompt_sha256(system, user)
        return replace(reply, signature=unchecked(value, prompt_digest=digest, envelope=envelope))
    prompt_digest = prompt_sha256(system, user)
    key = _key(settings.public_key)
    try:
        signature = check(key, value, prompt_digest=prompt_digest, envelope=envelope)
    except SignatureError as err:
        record = (
            None if not value else unchecked(value, prompt_digest=prompt_digest, envelope=envelope)
        )
        return replace(
            reply,
            complete=False,
            envelope=None,
            content="",
            retryable=False,
            signature=record,
            reason=err.reason,
            detail=(
                f"{err.message}; the answer arrived whole but is not the reviewer service's "
                f"(key {key_id(key)} is configured in reviewer.public_key): a hop between the "
                f"service and the gate rewrote it, or the service signs with another key or "
                f"without one; check {HEADER} at the service and what stands in between; "
                "not retryable"
            ),
        )
    return replace(reply, signature=signature)
