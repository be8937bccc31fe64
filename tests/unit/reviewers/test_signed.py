"""The MC1 signature on the gate's side (gate/reviewers/signed.py, gate/decide/signature.py):
the key setting checked when read, an answer held to it, a signature recorded, and the
header parser total over any text (Hypothesis)."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import replace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from gate.decide import signature
from gate.decide.attempt import EndReason
from gate.decide.decision import Binding, State, decide
from gate.decide.envelope import seal
from gate.errors import ConfigError, SignatureError, UsageError
from gate.reviewers import signed
from gate.reviewers.base import Reply
from gate.reviewers.settings import ReviewerSettings, validate

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
PEM = KEY.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
EC_PEM = (
    generate_private_key(SECP256R1())
    .public_key()
    .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    .decode()
)
SYSTEM, USER = "system", "user"
DIGEST = signature.prompt_sha256(SYSTEM, USER)
BODY = b'{"model":"","system":"system","user":"user","nonce":"00"}'  # the request sent
REQUEST = signature.request_sha256(BODY)
ENVELOPE = seal(b"answer")
URL = "http://127.0.0.1:9/review"


def reply(value: str | None, envelope: bytes = ENVELOPE) -> Reply:
    return Reply(
        provider="mc1",
        complete=True,
        reason="",
        detail="",
        end_reason=EndReason.TRAILER,
        raw=envelope,
        envelope=envelope,
        content="answer",
        signature_header=value,
    )


def settings_with(key: str | None) -> ReviewerSettings:
    return ReviewerSettings(provider="mc1", model="", base_url=URL, public_key=key)


def indented(pem: str) -> str:
    return "".join(f"    {line}\n" for line in pem.strip().splitlines())


# --- the setting, read and checked before any request --------------------------------


def test_the_key_is_read_from_the_config_as_pem_text() -> None:
    config = parse_config(
        f"reviewer:\n  provider: mc1\n  base_url: {URL}\n  public_key: |\n{indented(PEM)}",
        source="c.yml",
    )
    assert config.reviewer.public_key == PEM
    validate(settings_with(config.reviewer.public_key))


@pytest.mark.parametrize(
    ("pem", "words"),
    [
        ("not a key\n", "not a PEM public key"),
        (EC_PEM, "not Ed25519"),
        (PEM.replace("MCow", "MCox"), "not a PEM public key"),
    ],
)
def test_a_bad_key_in_the_config_names_the_key_and_line(pem: str, words: str) -> None:
    text = f"reviewer:\n  provider: mc1\n  base_url: {URL}\n  public_key: |\n{indented(pem)}"
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="c.yml")
    assert err.value.reason == "config_public_key"
    assert err.value.key == "reviewer.public_key"
    assert err.value.line == 4
    assert words in err.value.message
    with pytest.raises(UsageError) as usage:
        validate(settings_with(pem))
    assert usage.value.reason == "config_public_key"


def test_a_key_for_a_provider_that_cannot_sign_is_refused() -> None:
    text = f"reviewer:\n  provider: openai\n  model: m\n  public_key: |\n{indented(PEM)}"
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="c.yml")
    assert err.value.reason == "config_public_key"
    assert "provider: mc1" in err.value.message
    with pytest.raises(UsageError):
        validate(
            ReviewerSettings(
                provider="openai", model="m", base_url=URL, api_key="k", public_key=PEM
            )
        )


def test_a_fallbacks_key_is_checked_too() -> None:
    text = (
        "fallbacks:\n  - provider: mc1\n    base_url: http://127.0.0.1:9/r\n"
        "    public_key: not a key\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="c.yml")
    assert err.value.key == "fallbacks[0].public_key"


def test_a_key_on_one_mc1_reviewer_of_the_chain_is_held_by_every_mc1_reviewer() -> None:
    """A signature failure is an outage that asks the fallback: an mc1 reviewer of the
    chain without a key would take the rewriting hop's resealed answer (a downgrade)."""
    keyed = "    public_key: |\n" + "".join(f"      {line}\n" for line in PEM.strip().splitlines())
    unkeyed_fallback = (
        f"reviewer:\n  provider: mc1\n  base_url: {URL}\n  public_key: |\n{indented(PEM)}"
        f"fallbacks:\n  - provider: mc1\n    base_url: {URL}\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(unkeyed_fallback, source="c.yml")
    assert (err.value.reason, err.value.key) == ("config_public_key", "fallbacks[0].public_key")
    assert "reviewer.public_key" in err.value.message
    unkeyed_reviewer = (
        f"reviewer:\n  provider: mc1\n  base_url: {URL}\n"
        f"fallbacks:\n  - provider: mc1\n    base_url: {URL}\n{keyed}"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(unkeyed_reviewer, source="c.yml")
    assert err.value.key == "reviewer.public_key"
    # the input that fills in the reviewer's key is held to the same
    base = parse_config(
        f"reviewer:\n  provider: mc1\n  base_url: {URL}\n"
        f"fallbacks:\n  - provider: mc1\n    base_url: {URL}\n",
        source="c.yml",
    )
    with pytest.raises(ConfigError) as err:
        apply_inputs(base, {"public-key": PEM.strip()})
    assert err.value.key == "fallbacks[0].public_key"
    # every mc1 reviewer keyed, or another provider beside it (no signature to downgrade)
    both = parse_config(unkeyed_fallback + keyed, source="c.yml")
    assert both.fallbacks[0].public_key == PEM
    other = (
        f"reviewer:\n  provider: mc1\n  base_url: {URL}\n  public_key: |\n{indented(PEM)}"
        "fallbacks:\n  - provider: openai\n    model: m\n"
    )
    assert parse_config(other, source="c.yml").fallbacks[0].public_key is None


def test_the_input_fills_in_a_key_and_is_checked_as_the_file_is() -> None:
    base = parse_config(f"reviewer:\n  provider: mc1\n  base_url: {URL}\n", source="c.yml")
    assert apply_inputs(base, {"public-key": PEM.strip()}).reviewer.public_key == PEM.strip()
    with pytest.raises(ConfigError) as err:
        apply_inputs(base, {"public-key": EC_PEM})
    assert err.value.reason == "config_public_key"


def test_no_key_leaves_the_config_digest_as_it_was() -> None:
    from gate.review.result import config_sha256

    without = parse_config(f"reviewer:\n  provider: mc1\n  base_url: {URL}\n", source="c.yml")
    assert "public_key" not in without.to_json()["reviewer"]
    keyed = replace(without, reviewer=replace(without.reviewer, public_key=PEM))
    assert keyed.to_json()["reviewer"]["public_key"] == PEM
    assert config_sha256(keyed) != config_sha256(without)


# --- an answer held to the key ---------------------------------------------------------


def test_without_a_key_unsigned_mc1_is_as_before_and_a_signature_is_recorded_unchecked() -> None:
    plain = reply(None)
    assert (
        signed.checked(plain, settings_with(None), request=BODY, system=SYSTEM, user=USER) is plain
    )
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)
    got = signed.checked(reply(value), settings_with(None), request=BODY, system=SYSTEM, user=USER)
    assert got.complete
    assert got.signature == signature.Signature(
        signature.key_id(KEY.public_key()),
        value,
        REQUEST,
        DIGEST,
        hashlib.sha256(ENVELOPE).hexdigest(),
        checked=False,
    )
    junk = signed.checked(
        reply("x" * 5000), settings_with(None), request=BODY, system=SYSTEM, user=USER
    )
    assert junk.complete
    assert junk.signature is not None
    assert junk.signature.key_id == ""
    assert len(junk.signature.value) == signature.MAX_RECORDED


def test_with_a_key_the_signature_is_checked_and_recorded() -> None:
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)
    got = signed.checked(reply(value), settings_with(PEM), request=BODY, system=SYSTEM, user=USER)
    assert got.complete
    assert got.signature is not None
    assert got.signature.checked
    assert got.to_attempt(1).to_json()["signature"]["key_id"] == signature.key_id(KEY.public_key())


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "signature_missing"),
        ("ed25519 key=ed25519:0 sig=0", "signature_malformed"),
        (
            signature.sign(OTHER, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE),
            "signature_key",
        ),
        (
            signature.sign(
                KEY,
                request_digest=REQUEST,
                prompt_digest=signature.prompt_sha256("s", "u"),
                envelope=ENVELOPE,
            ),
            "signature_invalid",
        ),
        (
            signature.sign(
                KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=seal(b"other")
            ),
            "signature_invalid",
        ),
    ],
)
def test_with_a_key_anything_else_is_incomplete_and_not_retried(
    value: str | None, reason: str
) -> None:
    got = signed.checked(reply(value), settings_with(PEM), request=BODY, system=SYSTEM, user=USER)
    assert not got.complete
    assert got.envelope is None
    assert got.reason == reason
    assert got.retryable is False
    assert signature.key_id(KEY.public_key()) in got.detail
    attempt = got.to_attempt(1)
    decision = decide(None, binding=Binding("a" * 64, "1"), attempts=(attempt,))
    assert decision.state is State.INCOMPLETE
    assert decision.reason == reason
    assert decision.family == "unavailable"


def test_other_providers_and_incomplete_replies_are_left_alone() -> None:
    value = signature.sign(OTHER, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)
    other = replace(reply(value), provider="openai")
    assert (
        signed.checked(other, settings_with(PEM), request=BODY, system=SYSTEM, user=USER) is other
    )
    cut = replace(reply(value), complete=False, envelope=None)
    assert signed.checked(cut, settings_with(PEM), request=BODY, system=SYSTEM, user=USER) is cut


def test_a_recorded_signature_reads_back() -> None:
    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)
    recorded = signature.check(
        KEY.public_key(), value, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE
    )
    assert signature.Signature.from_json(recorded.to_json()) == recorded
    assert signature.Signature.from_json({"value": 1}) is None
    assert signature.Signature.from_json("x") is None


# --- the header parser, fuzzed --------------------------------------------------------

_FORM = re.compile(r"ed25519 key=ed25519:[0-9a-f]{16} sig=[A-Za-z0-9_-]{86}\Z")
VALUE = signature.sign(KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=200) | st.text(alphabet="ed25519 key=:sig0123456789abcdefAZ_-", max_size=140)
)
def test_the_parser_is_total_any_text_is_the_one_form_or_a_signature_error(text: str) -> None:
    if not _FORM.match(text):
        with pytest.raises(SignatureError) as err:
            signature.parse(text)
        assert err.value.reason in ("signature_missing", "signature_malformed")
        return
    signer, raw = signature.parse(text)
    assert len(raw) == 64
    assert text == f"ed25519 key={signer} sig={base64.urlsafe_b64encode(raw).rstrip(b'=').decode()}"


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(min_value=0, max_value=len(VALUE) - 1),
    new=st.characters(codec="latin-1"),
    tail=st.text(max_size=3),
)
def test_any_change_to_a_valid_value_never_checks(index: int, new: str, tail: str) -> None:
    changed = VALUE[:index] + new + VALUE[index + 1 :] + tail
    if changed == VALUE:
        return
    with pytest.raises(SignatureError):
        signature.check(
            KEY.public_key(),
            changed,
            request_digest=REQUEST,
            prompt_digest=DIGEST,
            envelope=ENVELOPE,
        )


@settings(max_examples=100, deadline=None)
@given(
    raw=st.binary(min_size=64, max_size=64),
    hexid=st.text("0123456789abcdef", min_size=16, max_size=16),
)
def test_every_well_formed_value_parses_back_to_its_parts(raw: bytes, hexid: str) -> None:
    text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    assert signature.parse(f"ed25519 key=ed25519:{hexid} sig={text}") == (f"ed25519:{hexid}", raw)


def test_the_attempt_line_says_who_signed_and_whether_it_was_checked() -> None:
    from gate.reviewers.transport import attempt_line

    value = signature.sign(KEY, request_digest=REQUEST, prompt_digest=DIGEST, envelope=ENVELOPE)
    key_id = signature.key_id(KEY.public_key())
    for key, words in ((PEM, "(checked)"), (None, "(not checked: no reviewer.public_key")):
        got = signed.checked(
            reply(value), settings_with(key), request=BODY, system=SYSTEM, user=USER
        )
        line = attempt_line(got.to_attempt(1))
        assert f"signed by {key_id} {words}" in line
    assert "signed" not in attempt_line(reply(None).to_attempt(1))


def signed_record(
    envelope: bytes, prompt: str, request: bytes | None = None
) -> signature.Signature:
    """What the gate records for ``envelope``, signed by KEY for ``prompt`` and the
    request body ``request`` (by default one of its own: each request is a new one)."""
    body = request if request is not None else b"request for " + envelope + prompt.encode()
    sent = signature.request_sha256(body)
    value = signature.sign(KEY, request_digest=sent, prompt_digest=prompt, envelope=envelope)
    return signature.check(
        KEY.public_key(), value, request_digest=sent, prompt_digest=prompt, envelope=envelope
    )


def agreement_cert(
    first: signature.Signature, second: signature.Signature, envelope: bytes = ENVELOPE
) -> dict[str, Any]:
    """A certificate of two ``agreement`` answers (the second's envelope ``envelope``) with
    these records; the first is also the certificate's own answer."""
    from gate.decide.envelope import sealed_json

    rows = [
        {"number": n, "attempts": [{"signature": s.to_json()}], "envelope": sealed_json(e)}
        for n, s, e in ((1, first, ENVELOPE), (2, second, envelope))
    ]
    return {
        "inputs": {"prompt": DIGEST},
        "envelope": sealed_json(ENVELOPE),
        "attempts": [{"signature": first.to_json()}],
        "context": {"agreement": {"answers": rows}},
    }


def test_verify_offline_refuses_one_signed_answer_recorded_for_two_requests() -> None:
    """Attack, offline: without a key the gate records a replayed answer unchecked, with the
    digest of the request *it* sent; the signature, made for the first request, does not
    check for the second. A certificate whose two answers record one request (edited, or
    copied) is refused too: each request is a new one."""
    from gate.review.certificate import check_origin, sealed_answers

    first, second = signed_record(ENVELOPE, DIGEST), signed_record(ENVELOPE, DIGEST, b"2nd")
    names = [a.where for a in sealed_answers(agreement_cert(first, second))]
    assert names == ["answer 1", "answer 2"]  # the certificate's own answer is answer 1
    assert len(check_origin(agreement_cert(first, second), KEY.public_key())) == 2
    replayed = replace(second, value=first.value, checked=False)  # the first's signature
    with pytest.raises(SignatureError) as err:
        check_origin(agreement_cert(first, replayed), KEY.public_key())
    assert (err.value.reason, err.value.message[:10]) == ("signature_invalid", "answer 2: ")
    # one request recorded for both answers: never merged into one, refused
    for envelope in (ENVELOPE, seal(b"another answer")):
        other = signed_record(envelope, DIGEST, b"request for " + ENVELOPE + DIGEST.encode())
        assert other.request_sha256 == first.request_sha256
        cert = agreement_cert(first, other, envelope)
        assert len(sealed_answers(cert)) == 2
        with pytest.raises(SignatureError, match=r"answer 2: .* which answer 1 records too"):
            check_origin(cert, KEY.public_key())


def test_a_certificates_answers_each_checked_for_its_own_prompt_carried_chunks_left_out() -> None:
    from gate.decide.envelope import sealed_json
    from gate.review.certificate import check_origin, sealed_answers

    def row(envelope: bytes, prompt: str) -> dict[str, object]:
        recorded = signed_record(envelope, prompt)
        return {"attempts": [{"signature": recorded.to_json()}], "envelope": sealed_json(envelope)}

    one, two = signature.prompt_sha256("s", "chunk 1"), signature.prompt_sha256("s", "chunk 2")
    reviews = [
        {"chunk": "1/3", "prompt_sha256": one, **row(seal(b"a"), one)},
        {"chunk": "2/3", "prompt_sha256": two, **row(seal(b"b"), two)},
        # carried: asked in an earlier run; its attempts are in that run's certificate
        {"chunk": "3/3", "prompt_sha256": "", "attempts": [], "envelope": sealed_json(seal(b"c")),
         "carried": {"from": "x"}},
    ]  # fmt: skip
    cert = {
        "inputs": {},
        "envelope": None,
        "attempts": [],
        "context": {"chunks": {"reviews": reviews}},
    }
    assert [a.where for a in sealed_answers(cert)] == ["chunk 1/3", "chunk 2/3"]
    assert len(check_origin(cert, KEY.public_key())) == 2
    with pytest.raises(SignatureError) as err:
        check_origin(cert, OTHER.public_key())
    assert err.value.reason == "signature_key"
    reviews[1]["prompt_sha256"] = one  # the certificate says chunk 2 was asked chunk 1's prompt
    with pytest.raises(SignatureError) as err:
        check_origin(cert, KEY.public_key())
    assert err.value.message.startswith("chunk 2/3: ")


def test_the_statement_claims_no_origin_for_a_certificate_with_a_carried_chunk() -> None:
    """Attack: the carry block holds envelopes, not signatures, and a writer can edit the
    gate's comment, so a carried chunk's pass may be one nobody signed. The predicate's
    ``signed_by`` says the gate checked a signature on every answer; with a chunk carried,
    it did not, so the attested statement claims no origin (it claimed the key)."""
    from gate.decide.envelope import sealed_json
    from gate.export.statement import signed_by

    def row(chunk: str, envelope: bytes, prompt: str) -> dict[str, object]:
        recorded = signed_record(envelope, prompt)
        return {
            "chunk": chunk,
            "prompt_sha256": prompt,
            "attempts": [{"signature": recorded.to_json()}],
            "envelope": sealed_json(envelope),
        }

    one, two = signature.prompt_sha256("s", "chunk 1"), signature.prompt_sha256("s", "chunk 2")
    reviews = [row("1/2", seal(b"a"), one), row("2/2", seal(b"b"), two)]
    cert = {
        "inputs": {},
        "envelope": None,
        "attempts": [],
        "context": {"chunks": {"reviews": reviews}},
    }
    assert signed_by(cert) == [signature.key_id(KEY.public_key())]
    forged = sealed_json(seal(b"forged pass"))
    reviews[1] = {"chunk": "2/2", "prompt_sha256": "", "attempts": [], "envelope": forged}
    reviews[1]["carried"] = {"run": "x"}
    assert signed_by(cert) is None


def test_verify_public_key_says_a_carried_chunk_was_not_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``verify --public-key`` said every answer was signed while a carried chunk's
    envelope, which decides the chunk, had no signature checked at all."""
    from gate.commands.verify import origin_check
    from gate.decide.envelope import sealed_json

    prompt = signature.prompt_sha256("s", "chunk 1")
    envelope = seal(b"a")
    recorded = signed_record(envelope, prompt)
    reviews = [
        {"chunk": "1/2", "prompt_sha256": prompt, "envelope": sealed_json(envelope),
         "attempts": [{"signature": recorded.to_json()}]},
        {"chunk": "2/2", "prompt_sha256": "", "attempts": [],
         "envelope": sealed_json(seal(b"forged pass")), "carried": {"run": "x"}},
    ]  # fmt: skip
    cert = {
        "inputs": {},
        "envelope": None,
        "attempts": [],
        "context": {"chunks": {"reviews": reviews}},
    }
    assert origin_check(cert, KEY.public_key(), "k.pub") is None
    said = capsys.readouterr().err
    assert "1 answer(s) signed by" in said
    assert "1 chunk(s) carried from an earlier run are not checked here" in said
