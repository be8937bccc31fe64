"""The MC1 signature (gate/decide/signature.py): only the key's own signature, over this
envelope, this request body and this prompt, checks; every other value is refused with its
own reason."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from gate.decide import signature
from gate.decide.envelope import seal
from gate.errors import (
    ConfigError,
    EnvelopeError,
    SignatureError,
    SignatureKey,
    SignatureMalformed,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
PROMPT = signature.prompt_sha256("system", "user")
REQUEST = signature.request_sha256(b'{"model":"m","system":"system","user":"user","nonce":"1"}')
ENVELOPE = seal(b"answer")


def test_the_keys_own_signature_checks_and_is_recorded() -> None:
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    checked = signature.check(
        KEY.public_key(), value, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE
    )
    assert checked.key_id == signature.key_id(KEY.public_key())
    assert checked.value == value
    assert checked.prompt_sha256 == PROMPT
    assert checked.request_sha256 == REQUEST


def test_the_signed_message_is_the_v2_one_the_docs_give() -> None:
    """docs/mc1.md gives these bytes; a service of another language signs exactly them."""
    envelope_digest = signature.request_sha256(ENVELOPE)  # SHA-256 of the bytes, as any
    assert signature.message(REQUEST, PROMPT, envelope_digest) == (
        f"review-gate mc1-signature v2\n{REQUEST}\n{PROMPT}\n{envelope_digest}\n".encode()
    )
    with pytest.raises(SignatureMalformed, match="request digest"):
        signature.message("A" * 64, PROMPT, envelope_digest)


def test_another_request_body_is_refused_whatever_it_changes() -> None:
    """The request's digest is the exact body: another model, another parameter, another
    nonce (an answer to another request, replayed) each make another message."""
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    for body in (
        b'{"model":"other","system":"system","user":"user","nonce":"1"}',
        b'{"model":"m","system":"system","user":"user","nonce":"2"}',
        b'{"model":"m","system":"system","user":"user","nonce":"1"} ',
    ):
        with pytest.raises(SignatureError) as err:
            signature.check(
                KEY.public_key(),
                value,
                request_digest=signature.request_sha256(body),
                prompt_digest=PROMPT,
                envelope=ENVELOPE,
            )
        assert err.value.reason == "signature_invalid"


def test_the_prompt_digest_is_the_prompts_own() -> None:
    from gate.review.prompt import Prompt

    assert Prompt(system="system", user="user").sha256() == PROMPT


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "signature_missing"),
        ("", "signature_missing"),
        ("ed25519 key=x sig=y", "signature_malformed"),
    ],
)
def test_missing_or_malformed(value: str | None, reason: str) -> None:
    with pytest.raises(SignatureError) as err:
        signature.check(
            KEY.public_key(), value, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE
        )
    assert err.value.reason == reason
    assert isinstance(err.value, EnvelopeError)


def test_another_key_another_envelope_another_prompt_are_refused() -> None:
    other = signature.sign(OTHER, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    with pytest.raises(SignatureKey):
        signature.check(
            KEY.public_key(), other, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE
        )
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    with pytest.raises(SignatureError) as err:
        signature.check(
            KEY.public_key(),
            value,
            request_digest=REQUEST,
            prompt_digest=PROMPT,
            envelope=seal(b"other"),
        )
    assert err.value.reason == "signature_invalid"
    another = signature.prompt_sha256("system", "another user")
    with pytest.raises(SignatureError):
        signature.check(
            KEY.public_key(),
            value,
            request_digest=REQUEST,
            prompt_digest=another,
            envelope=ENVELOPE,
        )
    # another key's signature under this key's id: the id matches, the bytes do not
    forged = value.split(" sig=")[0] + " sig=" + other.split(" sig=")[1]
    with pytest.raises(SignatureError) as err:
        signature.check(
            KEY.public_key(),
            forged,
            request_digest=REQUEST,
            prompt_digest=PROMPT,
            envelope=ENVELOPE,
        )
    assert err.value.reason == "signature_invalid"


def test_every_flipped_character_of_the_value_is_refused() -> None:
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    alphabet = "AB_-a0"
    for index, char in enumerate(value):
        for new in alphabet:
            if new == char:
                continue
            changed = value[:index] + new + value[index + 1 :]
            with pytest.raises(SignatureError):
                signature.check(
                    KEY.public_key(),
                    changed,
                    request_digest=REQUEST,
                    prompt_digest=PROMPT,
                    envelope=ENVELOPE,
                )


def test_a_non_canonical_base64_tail_is_refused() -> None:
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=PROMPT, envelope=ENVELOPE)
    head, text = value.split(" sig=")
    raw = base64.urlsafe_b64decode(text + "==")
    # the last character carries 2 unused bits: a different character can decode the same
    last = text[-1]
    for candidate in "AQgw":
        if candidate != last:
            twin = text[:-1] + candidate
            if base64.urlsafe_b64decode(twin + "==") == raw:
                with pytest.raises(SignatureMalformed):
                    signature.check(
                        KEY.public_key(),
                        f"{head} sig={twin}",
                        request_digest=REQUEST,
                        prompt_digest=PROMPT,
                        envelope=ENVELOPE,
                    )


def test_keys_from_pem_and_their_errors() -> None:
    private_pem = KEY.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public_pem = KEY.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    assert signature.key_id(
        signature.private_key_from_pem(private_pem, source="k").public_key()
    ) == signature.key_id(signature.public_key_from_pem(public_pem, source="k.pub"))
    with pytest.raises(ConfigError) as err:
        signature.public_key_from_pem(b"not a key", source="reviewer.public_key")
    assert err.value.reason == "config_public_key"
    assert "reviewer.public_key" in err.value.message
    with pytest.raises(ConfigError) as err:
        signature.private_key_from_pem(public_pem, source="key.pem")
    assert err.value.reason == "config_private_key"
