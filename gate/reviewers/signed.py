"""The MC1 signature of an answer, checked against ``reviewer.public_key``.

An MC1 envelope proves the answer arrived whole; it cannot prove who sealed it: anything
between the reviewer service and the gate (a proxy, a cache, a compromised hop) can rewrite
the answer and seal it again, length and SHA-256 recomputed. ``review-gate serve`` signs
each envelope with its Ed25519 key over the exact request body it received (model,
parameters, prompt and the gate's fresh nonce), the prompt's digest and the envelope's
bytes (:mod:`gate.decide.signature`); :func:`checked` holds every whole MC1 answer to the
body the gate sent:

* with ``public_key`` set, an answer whose signature is missing, malformed, by another key,
  or made for another request (a rewritten one, or an answer to an earlier request
  replayed: each request's nonce is fresh) or another envelope is unsealed: the attempt
  ends with the error's reason (``signature_missing``, ``signature_malformed``, ``signature_key``,
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
    request_sha256,
    unchecked,
)
from gate.errors import SignatureError
from gate.providers import Provider

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from gate.decide.signature import Signature
    from gate.reviewers.base import Reply
    from gate.reviewers.settings import ReviewerSettings


@cache
def _key(pem: str) -> Ed25519PublicKey:
    """The configured key, read once per PEM text (validated before any request)."""
    return public_key_from_pem(pem.encode("utf-8"), source="reviewer.public_key")


def checked(
    reply: Reply, settings: ReviewerSettings, *, request: bytes, system: str, user: str
) -> Reply:
    """``reply`` with its signature recorded, or, when ``settings.public_key`` is set and
    the signature does not check for the request body ``request`` the gate sent (with
    the prompt ``system`` and ``user``), the same attempt unsealed with the error's
    reason."""
    if not reply.complete or reply.envelope is None or reply.provider != Provider.MC1:
        return reply
    envelope, value = reply.envelope, reply.signature_header
    if settings.public_key is None and not value:
        return reply  # unsigned MC1 where no key is configured: as it always was
    sent, asked = request_sha256(request), prompt_sha256(system, user)

    def recorded(value: str) -> Signature:
        return unchecked(value, request_digest=sent, prompt_digest=asked, envelope=envelope)

    if settings.public_key is None:
        assert value  # the branch above returned for no value
        return replace(reply, signature=recorded(value))
    key = _key(settings.public_key)
    try:
        signature = check(key, value, request_digest=sent, prompt_digest=asked, envelope=envelope)
    except SignatureError as err:
        record = None if not value else recorded(value)
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
                f"answer to the request the gate sent (key {key_id(key)} is configured in "
                "reviewer.public_key): a hop between the service and the gate rewrote the "
                "answer or the request, or replayed an answer to another request, or the "
                f"service signs with another key or without one; check {HEADER} at the "
                "service and what stands in between; not retryable"
            ),
        )
    return replace(reply, signature=signature)
