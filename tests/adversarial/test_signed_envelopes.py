"""Class: an MC1 answer sealed by someone other than the reviewer service.

Cause: an MC1 envelope proves only that the bytes arrived as they were sealed. Anything
between the service and the gate (a proxy, a cache, a compromised hop) can rewrite the
answer, a ``fail`` into a ``pass``, and seal it again with the length and SHA-256
recomputed; it can also replay a signed answer the service gave to another question.
It can also rewrite the request (another ``model``, ``max_tokens``, ``temperature``) and
pass the other model's signed answer on, or replay one signed answer to several requests
of the same prompt (the k ``agreement`` requests, a later review).
Fix: with ``reviewer.public_key`` set, every whole envelope must carry the service's
Ed25519 signature over the exact request body the gate sent (with a fresh nonce in each),
the prompt's digest and the exact envelope received (gate.reviewers.signed); anything else
is ``incomplete``, never a pass, never retried.

Generated: every cut and every flipped byte of a signed answer (the envelope and the
``mc1-signature`` header line) through real sockets and the fault proxy, and through the
whole-buffer path (the MC1 dialect fed the bytes, then the signature check, then the
decision); the fault proxy's reseal (a rewriting hop without the key); a valid answer
re-signed with another key; a signed answer to another prompt replayed to this one; a hop
(tests/fakes/hop.py) that rewrites the request or replays the first answer to the
``agreement`` requests; an earlier review's signed answer replayed to a later one. The
same signed answer unmodified passes, and without a key the rewrite and the replay pass:
only the signature tells them apart.
"""

from __future__ import annotations

import collections
import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gate.config.model import Config, ReviewerConfig
from gate.decide import signature
from gate.decide.attempt import EndReason
from gate.decide.decision import Binding, Decision, State, decide
from gate.decide.ends import End, reason_end
from gate.decide.envelope import seal
from gate.errors import EnvelopeError
from gate.lab.faults import Fault, FaultKind, FaultProxy
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.result import ReviewResult
from gate.reviewers import mc1, signed
from gate.reviewers.base import Exchange, Failure, Framing
from gate.reviewers.settings import ReviewerSettings
from tests.fakes.hop import Hop
from tests.verdicts import fenced_verdict, read_words

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
DIFF = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def pem(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return raw.decode("ascii")


def verdict_for(request: dict[str, Any], verdict: str = "pass") -> str:
    binding = binding_in(extract_prompt("mc1", request)[1])
    assert binding is not None
    return fenced_verdict(binding, verdict=verdict, reasons=["x is now 2"])


def failing(request: dict[str, Any]) -> str:
    return verdict_for(request, "fail")


def config_for(
    base_url: str, *, key: str | None = pem(KEY), attempts: int = 1, instructions: str = ""
) -> Config:
    return Config(
        reviewer=ReviewerConfig(
            provider="mc1",
            model=MODEL,
            base_url=base_url,
            public_key=key,
            connect_timeout=5.0,
            read_timeout=5.0,
            deadline=10.0,
            attempts=attempts,
        ),
        policy_version="3",
        instructions=instructions,
    )


def run(config: Config) -> ReviewResult:
    return review_diff(DIFF, config, api_key=None)


def via(proxy: FaultProxy, url: str) -> str:
    return proxy.url + urlsplit(url).path


def signed_sim(script: list[SimResponse], key: Ed25519PrivateKey = KEY, responder: Any = None):
    return ReviewerSimulator("mc1", responder or verdict_for, script=script, signing_key=key)


# --- through real sockets and the fault proxy ----------------------------------------


@pytest.mark.timeout(240)
@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_every_cut_of_a_signed_answer_blocks(framing: str) -> None:
    with (
        signed_sim([SimResponse(framing=framing)] * 5_000) as sim,
        FaultProxy(("127.0.0.1", sim.port)) as proxy,
    ):
        config = config_for(via(proxy, sim.base_url))
        first = run(config)
        assert first.decision.state is State.PASS, first.decision.description
        assert proxy.wait(5)
        reference = bytes(proxy.records[0].captured)
        assert f"\r\n{signature.HEADER}: ed25519 key=".encode() in reference
        reasons: collections.Counter[str] = collections.Counter()
        for offset in range(len(reference)):
            proxy.fault = Fault(FaultKind.CUT, offset)
            decision = run(config).decision
            assert decision.state is State.INCOMPLETE, (offset, decision)
            reasons[decision.reason] += 1
        assert proxy.wait(5)
        assert [r.client_bytes for r in proxy.records[1:]] == list(range(len(reference)))
        proxy.fault = Fault()
        assert run(config).decision.state is State.PASS
    assert sum(reasons.values()) == len(reference) > 300
    print(f"{framing}: {len(reference)} cuts, reasons {dict(reasons)}")


@pytest.mark.timeout(240)
def test_every_flip_of_the_signature_header_and_the_envelope_blocks() -> None:
    with (
        signed_sim([SimResponse(framing="length")] * 5_000) as sim,
        FaultProxy(("127.0.0.1", sim.port)) as proxy,
    ):
        config = config_for(via(proxy, sim.base_url))
        assert run(config).decision.state is State.PASS
        assert proxy.wait(5)
        reference = bytes(proxy.records[0].captured)
        line = reference.index(f"\r\n{signature.HEADER}:".encode()) + 2
        line_end = reference.index(b"\r\n", line) + 2
        body = reference.index(b"\r\n\r\n") + 4
        offsets = [*range(line, line_end), *range(body, len(reference))]
        states: collections.Counter[str] = collections.Counter()
        for offset in offsets:
            proxy.fault = Fault(FaultKind.FLIP, offset)
            decision = run(config).decision
            assert decision.state is not State.PASS, (offset, reference[offset : offset + 1])
            states[f"{decision.state}:{decision.reason}"] += 1
        assert proxy.wait(5)
        assert all(record.applied for record in proxy.records[1:])
    assert sum(states.values()) == len(offsets) > 200
    # a flip in the signature's value is the signature's error, never a retry's success
    assert states["incomplete:signature_invalid"] + states["incomplete:signature_malformed"] > 80
    print(f"{len(offsets)} flips, decisions {dict(states)}")


def test_a_resealed_rewrite_passes_the_envelope_and_fails_the_signature() -> None:
    """The fault proxy turns the service's signed fail into a pass, sealed again."""
    with (
        signed_sim([], responder=failing) as sim,
        FaultProxy(("127.0.0.1", sim.port), Fault(FaultKind.RESEAL)) as proxy,
    ):
        url = via(proxy, sim.base_url)
        without_key = run(config_for(url, key=None))
        assert without_key.decision.state is State.PASS  # the envelope alone is fooled
        assert without_key.outcome.attempts[-1].signature is not None
        assert without_key.outcome.attempts[-1].signature.checked is False
        before = sim.count
        result = run(config_for(url, attempts=3))
        assert result.decision.state is State.INCOMPLETE
        assert result.decision.reason == "signature_invalid"
        assert sim.count - before == 1  # arrived whole: not asked again
        assert result.outcome.attempts[-1].retryable is False
        assert all(record.applied for record in proxy.records)
        proxy.fault = Fault()
        honest = run(config_for(url))
        assert honest.decision.state is State.FAIL  # the service's own answer


def test_an_answer_signed_with_another_key_is_refused() -> None:
    with signed_sim([], key=OTHER) as sim:
        result = run(config_for(sim.base_url, attempts=3))
        assert result.decision.state is State.INCOMPLETE
        assert result.decision.reason == "signature_key"
        assert signature.key_id(OTHER.public_key()) in result.decision.detail
        assert sim.count == 1
        assert run(config_for(sim.base_url, key=pem(OTHER))).decision.state is (State.PASS)


def test_a_signed_answer_to_another_prompt_replayed_here_is_refused() -> None:
    """The same diff and policy, so the verdict's binding holds, but another prompt (other
    instructions): the service signed it for that question, not this one."""
    with signed_sim([]) as sim:
        elsewhere = run(config_for(sim.base_url, instructions="Be lenient."))
        assert elsewhere.decision.state is State.PASS
        envelope = elsewhere.outcome.envelope
        recorded = elsewhere.outcome.attempts[-1].signature
        assert envelope is not None
        assert recorded is not None
        assert recorded.checked
    replay = SimResponse(body=envelope, headers=((signature.HEADER, recorded.value),))
    with ReviewerSimulator("mc1", script=[replay, replay]) as sim:
        without_key = run(config_for(sim.base_url, key=None))
        assert without_key.decision.state is State.PASS  # the binding alone is fooled
        result = run(config_for(sim.base_url))
        assert result.prompt_sha256 != recorded.prompt_sha256
        assert result.decision.state is State.INCOMPLETE
        assert result.decision.reason == "signature_invalid"


def test_a_hop_replaying_the_first_signed_answer_to_every_agreement_request_is_refused() -> None:
    """Attack: ``agreement: 2`` asks the same prompt twice for two independent answers. A
    hop answers the second request with the service's signed answer to the first: it
    was signed for this prompt and this envelope, so a signature over those alone
    checked, and one answer counted twice. The signature covers the exact request body,
    whose fresh nonce differs per request: the replay is never a second answer."""
    with signed_sim([]) as sim, Hop(sim.base_url, replay=True) as hop:
        without_key = run(replace(config_for(hop.url, key=None), agreement=2))
        assert without_key.decision.state is State.PASS  # without a key, fooled
        assert (hop.forwarded, hop.replayed) == (1, 1)
    with signed_sim([]) as sim, Hop(sim.base_url, replay=True) as hop:
        result = run(replace(config_for(hop.url, attempts=3), agreement=2))
        assert (hop.forwarded, hop.replayed) == (1, 1)  # the replay is not asked again
        assert sim.count == 1
    assert result.decision.state is State.INCOMPLETE, result.decision
    assert result.decision.reason == "signature_invalid"
    answers = result.certificate["context"]["agreement"]["answers"]
    assert [a["envelope"] is not None for a in answers] == [True, False]


@pytest.mark.parametrize(
    ("member", "value"), [("model", "another-model"), ("max_tokens", 7), ("temperature", 2)]
)
def test_a_hop_rewriting_the_request_gets_a_signature_that_does_not_check(
    member: str, value: object
) -> None:
    """Attack: a hop rewrites the request's ``model`` (or ``max_tokens``,
    ``temperature``) and leaves the prompt as it was; the service answers the other
    model and signs, for the same prompt, so a signature over the prompt and the envelope
    checked and another model's answer counted as the configured one's (the model is part
    of the question key). The service signs the digest of the body it received; the gate
    checks it against the body it sent."""

    def rewrite(body: bytes) -> bytes:
        request = json.loads(body)
        assert request[member] != value
        return json.dumps({**request, member: value}).encode()

    with signed_sim([]) as sim, Hop(sim.base_url, rewrite=rewrite) as hop:
        assert run(config_for(hop.url, key=None)).decision.state is State.PASS  # fooled
        result = run(config_for(hop.url, attempts=3))
        assert json.loads(hop.sent[-1])[member] == value  # the service was asked that
        assert hop.forwarded == 2  # not retried
    assert result.decision.state is State.INCOMPLETE, result.decision
    assert result.decision.reason == "signature_invalid"


def test_a_signed_answer_from_an_earlier_review_of_the_same_prompt_is_refused() -> None:
    """Attack: the same diff, policy and instructions reviewed again (a re-run, a later
    push of the same change): the prompt is the same, so the service's signed answer to
    the earlier review, replayed, was signed for this prompt. Each request carries a fresh
    nonce the signature covers: an earlier answer never answers a later request."""
    with signed_sim([]) as sim:
        earlier = run(config_for(sim.base_url))
        assert earlier.decision.state is State.PASS
    envelope, recorded = earlier.outcome.envelope, earlier.outcome.attempts[-1].signature
    assert envelope is not None
    assert recorded is not None
    replay = SimResponse(body=envelope, headers=((signature.HEADER, recorded.value),))
    with ReviewerSimulator("mc1", script=[replay, replay]) as sim:
        assert run(config_for(sim.base_url, key=None)).decision.state is State.PASS  # fooled
        result = run(config_for(sim.base_url))
    assert result.prompt_sha256 == earlier.prompt_sha256  # the very same question
    assert result.decision.state is State.INCOMPLETE, result.decision
    assert result.decision.reason == "signature_invalid"


def test_the_unmodified_signed_answer_passes_and_is_recorded() -> None:
    with signed_sim([]) as sim:
        result = run(config_for(sim.base_url))
    assert result.decision.state is State.PASS
    recorded = result.outcome.attempts[-1].signature
    assert recorded is not None
    assert recorded.checked
    assert recorded.key_id == signature.key_id(KEY.public_key())
    assert recorded.prompt_sha256 == result.prompt_sha256
    row = result.certificate["attempts"][-1]["signature"]
    assert row == recorded.to_json()


# --- the whole-buffer path ----------------------------------------------------------

SYSTEM, USER = "the contract", "the question"
SENT = b'{"model":"","system":"the contract","user":"the question","nonce":"0a"}'
SETTINGS = ReviewerSettings(
    provider="mc1", model="", base_url="http://127.0.0.1:9/review", public_key=pem(KEY)
)
BINDING = Binding("a" * 64, "3")
VERDICT = {
    "verdict": "pass",
    "reasons": ["x is now 2"],
    "confidence": 0.9,
    "diff_sha": BINDING.diff_sha,
    "policy_version": BINDING.policy_version,
    "read": read_words(BINDING),
}
ANSWER = seal(f"```json\n{json.dumps(VERDICT)}\n```\n".encode())


def judge(envelope: bytes, value: str | None) -> Decision:
    """What the gate decides on ``envelope`` with ``value`` as its signature header, read
    whole by the MC1 dialect, then checked against the key, then decided."""
    stream = mc1.Stream(SETTINGS)
    error = None
    try:
        stream.feed(envelope)
    except EnvelopeError as err:
        error = err
    exchange = Exchange(
        status=200,
        headers={} if value is None else {signature.HEADER: value},
        raw=envelope,
        framing=Framing.CONTENT_LENGTH,
        failure=Failure.NONE,
        failure_detail="",
        end_reason=EndReason.TRAILER,
        retryable=False,
        elapsed_s=0.0,
        first_byte_s=0.0,
        sink_error=error,
    )
    reply = signed.checked(
        stream.conclude(exchange), SETTINGS, request=SENT, system=SYSTEM, user=USER
    )
    return decide(reply.envelope, binding=BINDING, attempts=(reply.to_attempt(1),))


def test_whole_buffer_every_cut_and_flip_of_envelope_and_header_is_refused() -> None:
    value = signature.sign(
        KEY,
        request_digest=signature.request_sha256(SENT),
        prompt_digest=signature.prompt_sha256(SYSTEM, USER),
        envelope=ANSWER,
    )
    assert judge(ANSWER, value).state is State.PASS  # the same bytes, unmodified
    reasons: collections.Counter[str] = collections.Counter()
    for cut in range(len(ANSWER)):
        decision = judge(ANSWER[:cut], value)
        assert decision.state is State.INCOMPLETE, cut
        reasons[decision.reason] += 1
    for index in range(len(ANSWER)):
        flipped = bytearray(ANSWER)
        flipped[index] ^= 0x01
        decision = judge(bytes(flipped), value)
        assert decision.state is not State.PASS, index
        reasons[decision.reason] += 1
    raw = value.encode("latin-1")
    for cut in range(len(raw)):
        decision = judge(ANSWER, raw[:cut].decode("latin-1"))
        assert decision.state is State.INCOMPLETE, cut
        reasons[decision.reason] += 1
    for index in range(len(raw)):
        for mask in (0x01, 0x20):
            flipped = bytearray(raw)
            flipped[index] ^= mask
            decision = judge(ANSWER, bytes(flipped).decode("latin-1"))
            assert decision.state is State.INCOMPLETE, (index, mask)
            reasons[decision.reason] += 1
    missing = judge(ANSWER, None)
    assert (missing.state, missing.reason) == (State.INCOMPLETE, "signature_missing")
    assert {"signature_invalid", "signature_malformed", "signature_key"} <= set(reasons)
    print(dict(reasons))


@pytest.mark.parametrize(
    "reason", ["signature_missing", "signature_malformed", "signature_key", "signature_invalid"]
)
def test_every_signature_reason_is_an_outage_that_decides_incomplete(reason: str) -> None:
    assert reason_end(reason) is End.OUTAGE
    assert reason_end(f"envelope_{reason}") is End.OUTAGE


def test_a_signature_failure_never_hands_the_review_to_an_unsigned_mc1_fallback() -> None:
    """Attack (a downgrade): the hop that rewrites answers breaks the keyed reviewer's
    signature on purpose; that is an outage, so the fallback is asked, and an mc1
    fallback without a key takes the hop's resealed pass. A key on one reviewer of the
    chain is held by every mc1 reviewer of it, or the review is refused before any
    request (config_public_key), never asked through the unsigned door."""

    from gate.errors import UsageError

    with (
        signed_sim([], responder=failing) as sim,
        FaultProxy(("127.0.0.1", sim.port), Fault(FaultKind.RESEAL)) as proxy,
    ):
        url = via(proxy, sim.base_url)
        keyed = config_for(url)
        config = replace(keyed, fallbacks=(replace(keyed.reviewer, public_key=None),))
        before = sim.count
        with pytest.raises(UsageError) as err:
            review_diff(DIFF, config, api_key=None, fallback_keys=[None])
        assert err.value.reason == "config_public_key"
        assert "fallbacks[0]" in err.value.message
        assert sim.count == before  # refused before any request
        both = replace(config, fallbacks=(keyed.reviewer,))
        result = review_diff(DIFF, both, api_key=None, fallback_keys=[None])
        assert result.decision.state is State.INCOMPLETE  # each signature refused
        assert result.decision.reason == "signature_invalid"
