"""The signature of an MC1 envelope, made where the answer is made (``review-gate serve``).

An MC1 envelope proves an answer arrived whole; a signature proves *who* sealed it, and
for which request, so that nothing between the reviewer service and the gate (a proxy
that cuts, rewrites and re-hashes, replays an earlier answer, or rewrites the request)
can turn another answer into this one.

The service signs, with Ed25519, the message::

    review-gate mc1-signature v2\\n<request_sha256>\\n<prompt_sha256>\\n<envelope_sha256>\\n

``request_sha256`` is :func:`request_sha256` of the exact request body the service
received (model, max_tokens, temperature, the prompt and the gate's fresh ``nonce``: the
gate computes it from the bytes it sent, so a rewritten request, or an answer to any other
request, replayed, does not verify); ``prompt_sha256`` is :func:`prompt_sha256` of the
system and user messages in it (what a certificate records, so ``verify`` can tie the
signature to the prompt offline); ``envelope_sha256`` the SHA-256 of the whole envelope,
header and body. The signature travels in the response header :data:`HEADER`::

    mc1-signature: ed25519 key=<key id> sig=<64 bytes, base64url without padding>

The key id is :func:`key_id` of the public key: ``ed25519:`` and the first 16 hex digits
of the SHA-256 of its 32 raw bytes. Everything here is pure: keys come in as bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gate.errors import (
    ConfigError,
    SignatureError,
    SignatureKey,
    SignatureMalformed,
    SignatureMissing,
)

if TYPE_CHECKING:  # cryptography is imported where a key is used, not at start-up
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

#: the response header that carries the signature (HTTP header names are case-blind)
HEADER = "mc1-signature"
ALGORITHM = "ed25519"
_CONTEXT = b"review-gate mc1-signature v2\n"
_SIGNATURE_BYTES = 64
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_VALUE = re.compile(r"ed25519 key=(ed25519:[0-9a-f]{16}) sig=([A-Za-z0-9_-]{86})\Z")


#: the longest header value recorded when no key checks it (a valid one is 125 characters)
MAX_RECORDED = 200


@dataclass(frozen=True)
class Signature:
    """A signature as an attempt and the certificate record it.

    ``checked`` is true when :func:`check` verified it against the configured key; a
    signature that arrived where no key is configured is recorded unchecked
    (:func:`unchecked`): it proves nothing until ``review-gate verify --public-key``
    checks it offline against the recorded envelope, request and prompt digests.
    ``request_sha256`` is the digest of the request body the gate *sent* (the body itself
    holds the prompt, which a certificate keeps as its digest only).
    """

    key_id: str  # "" when the value is not the one accepted form
    value: str  # the header value, exactly as received (unchecked: at most MAX_RECORDED)
    request_sha256: str
    prompt_sha256: str
    envelope_sha256: str
    checked: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id or None,
            "value": self.value,
            "request_sha256": self.request_sha256,
            "prompt_sha256": self.prompt_sha256,
            "envelope_sha256": self.envelope_sha256,
            "checked": self.checked,
        }

    @staticmethod
    def from_json(value: object) -> Signature | None:
        """A recorded signature, or None when ``value`` is not one (read strictly)."""
        if not isinstance(value, dict):
            return None
        key, text = value.get("key_id"), value.get("value")
        request = value.get("request_sha256")
        prompt, envelope = value.get("prompt_sha256"), value.get("envelope_sha256")
        checked = value.get("checked")
        if not (
            (key is None or isinstance(key, str))
            and isinstance(text, str)
            and isinstance(request, str)
            and isinstance(prompt, str)
            and isinstance(envelope, str)
            and isinstance(checked, bool)
        ):
            return None
        return Signature(key or "", text, request, prompt, envelope, checked)


def prompt_sha256(system: str, user: str) -> str:
    """SHA-256 of the canonical JSON of both messages: the prompt's one digest (the
    certificate's, the question key's and the signed message's)."""
    canonical = json.dumps(
        {"system": system, "user": user},
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_sha256(body: bytes) -> str:
    """SHA-256 of the exact request body bytes: what the gate sent, what the service got."""
    return hashlib.sha256(body).hexdigest()


def key_id(public_key: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return f"{ALGORITHM}:{hashlib.sha256(raw).hexdigest()[:16]}"


def message(request_digest: str, prompt_digest: str, envelope_digest: str) -> bytes:
    """The bytes signed: a fixed context, then the three digests, each checked for shape."""
    digests = (
        ("request", request_digest),
        ("prompt", prompt_digest),
        ("envelope", envelope_digest),
    )
    for name, digest in digests:
        if not _HEX64.match(digest):
            raise SignatureMalformed(f"the {name} digest is not 64 lowercase hex digits")
    return _CONTEXT + f"{request_digest}\n{prompt_digest}\n{envelope_digest}\n".encode("ascii")


def parse(value: str | None) -> tuple[str, bytes]:
    """(key id, 64 signature bytes) of a :data:`HEADER` value, or the error it is.

    Raises :class:`SignatureMissing` (no value) or :class:`SignatureMalformed` (not the
    one accepted form, or a base64url text that is not the canonical spelling of 64
    bytes). Nothing is verified here: :func:`check` does.
    """
    if value is None or value == "":
        raise SignatureMissing(
            f"the envelope carries no {HEADER} header, and a reviewer public key is "
            "configured: only the reviewer service holding the private key can seal it"
        )
    match = _VALUE.match(value)
    if match is None:
        raise SignatureMalformed(
            f"the {HEADER} header is not 'ed25519 key=ed25519:<16 hex> sig=<86 base64url>'"
        )
    signer, text = match.groups()
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (
        binascii.Error,
        ValueError,
    ) as err:  # pragma: no cover - the regex admits only base64url
        raise SignatureMalformed(f"the {HEADER} signature is not base64url") from err
    if len(raw) != _SIGNATURE_BYTES or base64.urlsafe_b64encode(raw).rstrip(b"=") != text.encode():
        raise SignatureMalformed(f"the {HEADER} signature is not one canonical 64-byte value")
    return signer, raw


def unchecked(value: str, *, request_digest: str, prompt_digest: str, envelope: bytes) -> Signature:
    """The record of a signature that arrived where no key is configured: its key id when
    it has the accepted form (else ""), its value (bounded), ``checked`` false."""
    try:
        signer, _ = parse(value)
    except SignatureError:
        signer = ""
    return Signature(
        key_id=signer,
        value=value[:MAX_RECORDED],
        request_sha256=request_digest,
        prompt_sha256=prompt_digest,
        envelope_sha256=hashlib.sha256(envelope).hexdigest(),
        checked=False,
    )


def sign(
    private_key: Ed25519PrivateKey, *, request_digest: str, prompt_digest: str, envelope: bytes
) -> str:
    """The :data:`HEADER` value for ``envelope``, answered to the request whose body has
    the digest ``request_digest`` and whose messages have ``prompt_digest``."""
    envelope_digest = hashlib.sha256(envelope).hexdigest()
    raw = private_key.sign(message(request_digest, prompt_digest, envelope_digest))
    text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
    return f"{ALGORITHM} key={key_id(private_key.public_key())} sig={text}"


def check(
    public_key: Ed25519PublicKey,
    value: str | None,
    *,
    request_digest: str,
    prompt_digest: str,
    envelope: bytes,
) -> Signature:
    """The signature in ``value`` over ``envelope`` for the request ``request_digest``
    (the body sent) with the prompt ``prompt_digest``, or an error.

    Raises :class:`SignatureMissing` (no header), :class:`SignatureMalformed` (not the
    one accepted form), :class:`SignatureKey` (signed by another key) or
    :class:`SignatureError` (the signature does not verify: another envelope, another
    request (a rewritten one, or an answer to another request replayed), another prompt,
    or a forgery).
    """
    signer, raw = parse(value)
    expected = key_id(public_key)
    if signer != expected:
        raise SignatureKey(
            f"the envelope is signed by key {signer}, not by the configured {expected}"
        )
    from cryptography.exceptions import InvalidSignature

    envelope_digest = hashlib.sha256(envelope).hexdigest()
    try:
        public_key.verify(raw, message(request_digest, prompt_digest, envelope_digest))
    except InvalidSignature as err:
        raise SignatureError(
            "the envelope's signature does not verify: it was made for another envelope, "
            "or for another request than the one sent (another prompt, model, max_tokens "
            "or temperature, or another request's nonce: a replayed answer), or not by "
            "the configured key"
        ) from err
    assert value is not None  # parse() refused None
    return Signature(
        key_id=signer,
        value=value,
        request_sha256=request_digest,
        prompt_sha256=prompt_digest,
        envelope_sha256=envelope_digest,
    )


def public_key_from_pem(data: bytes, *, source: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM (``-----BEGIN PUBLIC KEY-----``); ``source`` names
    the setting or file in the error."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as err:
        raise ConfigError(
            f"not a PEM public key ({err})",
            source=source,
            fix="give the file that 'review-gate serve --new-key PATH' wrote as PATH.pub",
            reason="config_public_key",
        ) from err
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(
            "the public key is not Ed25519",
            source=source,
            fix="give the reviewer service's Ed25519 public key (review-gate serve --new-key)",
            reason="config_public_key",
        )
    return key


def private_key_from_pem(data: bytes, *, source: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from unencrypted PKCS#8 PEM; ``source`` names the file."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        raise ConfigError(
            f"not an unencrypted PEM private key ({err})",
            source=source,
            fix="make one with 'review-gate serve --new-key PATH'",
            reason="config_private_key",
        ) from err
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(
            "the private key is not Ed25519",
            source=source,
            fix="make one with 'review-gate serve --new-key PATH'",
            reason="config_private_key",
        )
    return key
