"""The gate's ``mc1`` provider through ``review-gate serve`` to a simulated model server.

A whole upstream answer comes back sealed and signed, and the gate decides on it (a pass,
a fail); every answer the gate itself would refuse from that server directly (a cut, no
end marker, ``max_tokens``, a filter, an empty answer, a prompt the server cut, a stall)
is never sealed, and the gate reads serve's refusal as the same end it would have read
from the upstream: an outage stays an outage, a chosen end stays chosen, with its reason.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from gate.decide.decision import State
from gate.decide.ends import End, end_of
from gate.decide.signature import (
    HEADER,
    check,
    prompt_sha256,
    public_key_from_pem,
    request_sha256,
)
from gate.errors import SignatureError
from gate.lab.demo import ScriptedModel, demo_config, load_sample
from gate.lab.sim import SimResponse
from gate.review.pipeline import review_diff
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.transport import call_once
from gate.serve.keys import new_key, public_path
from tests.fakes.hop import Hop
from tests.integration.serve.conftest import TOKEN, Running


def _review(url: str, public_key: str | None = None, *, agreement: int = 1) -> Any:
    config = demo_config(url, read_timeout=10.0, provider="mc1")
    reviewer = replace(config.reviewer, public_key=public_key)
    config = replace(config, reviewer=reviewer, agreement=agreement)
    return review_diff(load_sample(), config, api_key=TOKEN, sleep=lambda _: None)


@pytest.mark.parametrize(("mode", "state"), [("pass", State.PASS), ("fail", State.FAIL)])
@pytest.mark.parametrize("keyed", [False, True])
def test_the_gate_decides_on_what_serve_sealed(
    sim_factory: Any, serve: Any, key_path: Path, mode: str, state: State, keyed: bool
) -> None:
    sim = sim_factory(ScriptedModel(mode))
    running: Running = serve(sim)
    public = public_path(key_path).read_text() if keyed else None
    result = _review(running.url, public)
    assert result.decision.state is state, result.decision
    assert sim.count == 1  # one upstream call per gate attempt, no retries inside serve


def test_the_gate_with_another_public_key_refuses_what_serve_signed(
    sim_factory: Any, serve: Any, tmp_path: Path
) -> None:
    other = tmp_path / "other.key"
    new_key(other)
    sim = sim_factory(ScriptedModel("pass"))
    running: Running = serve(sim)
    result = _review(running.url, public_path(other).read_text())
    assert result.decision.state is State.INCOMPLETE
    assert result.decision.reason == "signature_key", result.decision


def test_the_signature_verifies_with_the_public_key_for_this_request(
    sim_factory: Any, serve: Any, key_path: Path
) -> None:
    sim = sim_factory(lambda _: "an answer")
    running: Running = serve(sim)
    request = {"model": "m", "system": "sys", "user": "usr", "max_tokens": 50, "temperature": 0}
    body = json.dumps({**request, "nonce": "0" * 32}).encode()
    response = running.post(body)
    assert response.status_code == 200
    assert b"0" * 32 not in response.content + str(response.headers).encode()  # no echo
    public = public_key_from_pem(public_path(key_path).read_bytes(), source="test")
    digests = {"prompt_digest": prompt_sha256("sys", "usr"), "envelope": response.content}
    signed = check(public, response.headers[HEADER], request_digest=request_sha256(body), **digests)
    assert signed.key_id == running.service.key_id
    # another prompt, another nonce, another model: each another request, refused
    for other in (
        {"user": "usr!"},
        {"nonce": "1" + "0" * 31},
        {"model": "n"},
        {"max_tokens": 51},
        {"temperature": 1},
    ):
        changed = json.dumps({**request, "nonce": "0" * 32, **other}).encode()
        with pytest.raises(SignatureError, match="does not verify"):
            check(
                public, response.headers[HEADER], request_digest=request_sha256(changed), **digests
            )


def test_a_hop_that_rewrites_the_model_or_replays_an_answer_is_refused_at_the_gate(
    sim_factory: Any, serve: Any, key_path: Path
) -> None:
    """Attack, end to end: a hop between the gate and serve rewrites the request's model
    (serve answers and signs the body it received), or answers the second ``agreement``
    request with serve's signed answer to the first. Serve echoes nothing; the gate
    checks each signature against the body it sent."""

    def other_model(body: bytes) -> bytes:
        return json.dumps({**json.loads(body), "model": "a-cheaper-model"}).encode()

    public = public_path(key_path).read_text()
    sim = sim_factory(ScriptedModel("pass"))
    running: Running = serve(sim)
    assert _review(running.url, public).decision.state is State.PASS  # no hop: passes
    with Hop(running.url, rewrite=other_model) as hop:
        rewritten = _review(hop.url, public)
        assert hop.forwarded == 1
        assert json.loads(hop.sent[0])["model"] == "a-cheaper-model"
    assert rewritten.decision.state is State.INCOMPLETE, rewritten.decision
    assert rewritten.decision.reason == "signature_invalid"
    with Hop(running.url, replay=True) as hop:
        replayed = _review(hop.url, public, agreement=2)
        assert (hop.forwarded, hop.replayed) == (1, 1)
    assert replayed.decision.state is State.INCOMPLETE, replayed.decision
    assert replayed.decision.reason == "signature_invalid"


def _mc1(url: str) -> ReviewerSettings:
    return ReviewerSettings(
        provider="mc1",
        model="m",
        base_url=url,
        api_key=TOKEN,
        connect_timeout=5.0,
        read_timeout=15.0,
        deadline=20.0,
    )


SYSTEM, USER = "the contract", "the diff " * 400  # 3.6 KB: a bound of 450 prompt tokens

#: (upstream answer, serve's status, the upstream's reason, where it lands): a chosen end
#: is the reason the gate records; an outage is recorded as serve's status (http_502 ...)
#: with the upstream's reason in its detail
ENDS: dict[str, tuple[SimResponse, int, str, End]] = {
    "cut": (SimResponse(content="x" * 600, cut_after=400), 502, "connection_cut", End.OUTAGE),
    "no_done": (SimResponse(content="half", end_marker=False), 502, "missing_done", End.OUTAGE),
    "no_finish": (SimResponse(content="a", finish="none"), 502, "missing_finish", End.OUTAGE),
    "max_tokens": (SimResponse(content="a", finish="length"), 422, "token_exhaustion", End.CHOSEN),
    "filtered": (SimResponse(content="a", finish="refusal"), 422, "refusal", End.CHOSEN),
    "empty": (SimResponse(body=b""), 422, "empty_answer", End.CHOSEN),
    "prompt_cut": (SimResponse(content="ok", prompt_tokens=100), 422, "prompt_cut", End.CHOSEN),
    "overflow": (
        SimResponse(
            status=400,
            error_body=json.dumps({"error": {"message": "maximum context length is 2048"}}),
        ),
        422,
        "context_overflow",
        End.CHOSEN,
    ),
    "upstream_503": (SimResponse(status=503), 502, "http_503", End.OUTAGE),
    "rate_limited": (SimResponse(status=429, retry_after="7"), 503, "http_429", End.OUTAGE),
}


@pytest.mark.parametrize("case", list(ENDS))
def test_an_unwhole_upstream_answer_is_never_sealed_and_keeps_its_end(
    sim_factory: Any, serve: Any, case: str
) -> None:
    upstream, status, reason, end = ENDS[case]
    sim = sim_factory(script=[upstream])
    running: Running = serve(sim)
    reply = call_once(_mc1(running.url), system=SYSTEM, user=USER)
    assert not reply.complete
    assert reply.envelope is None
    assert reply.http_status == status, reply.detail
    if end is End.CHOSEN:
        assert reply.reason == reason, (reply.reason, reply.detail)
    else:
        assert reply.reason == f"http_{status}"
        assert reply.retryable
        assert f"({reason}" in reply.detail, reply.detail
    assert end_of(reply.to_attempt(1)) is end
    assert sim.count == 1
    if case == "rate_limited":
        assert reply.retry_after == 7.0


def test_a_stalled_upstream_is_a_timeout_not_a_seal(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory(script=[SimResponse(content="y" * 300, stall_after=250)])
    running: Running = serve(sim, read_timeout=0.5, deadline=2.0)
    reply = call_once(_mc1(running.url), system=SYSTEM, user=USER)
    assert reply.http_status == 504
    assert not reply.complete
    assert end_of(reply.to_attempt(1)) is End.OUTAGE


def test_an_upstream_in_another_dialect_is_an_outage(sim_factory: Any, serve: Any) -> None:
    other = sim_factory(dialect="mc1")  # an MC1 service: no /chat/completions there
    running: Running = serve(other, check=False, upstream=other.base_url.rsplit("/", 1)[0])
    reply = call_once(_mc1(running.url), system=SYSTEM, user=USER)
    assert reply.http_status == 502
    assert not reply.complete
    assert end_of(reply.to_attempt(1)) is End.OUTAGE


def test_an_upstream_that_is_gone_is_an_outage(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory()
    running: Running = serve(sim)
    sim.stop()
    reply = call_once(_mc1(running.url), system=SYSTEM, user=USER)
    assert reply.http_status == 502
    assert reply.reason == "http_502"
    assert "connect" in reply.detail
    assert end_of(reply.to_attempt(1)) is End.OUTAGE
    health = httpx.get(running.root + "/healthz", timeout=10.0)
    assert health.status_code == 503
    assert health.json()["upstream"] == "unreachable"


def test_an_answer_over_the_answer_limit_is_never_sealed(sim_factory: Any, serve: Any) -> None:
    sim = sim_factory(script=[SimResponse(content="long " * 2000)])
    running: Running = serve(sim, max_answer_bytes=4096)
    reply = call_once(_mc1(running.url), system=SYSTEM, user=USER)
    assert reply.http_status == 422
    assert reply.reason == "size_limit"
    assert end_of(reply.to_attempt(1)) is End.CHOSEN  # the model's length chose it
