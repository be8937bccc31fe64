"""Every limit holds against a real local server: deadline, read timeout, size, connect."""

from __future__ import annotations

import socket

import pytest

from gate.decide.attempt import EndReason
from gate.lab.sim import DIALECTS, ReviewerSimulator, SimResponse, render_events, wire_for
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_server_that_never_answers_hits_the_deadline(dialect: str) -> None:
    # connected and request read, not one byte back; the read timeout alone would wait 30s
    with ReviewerSimulator(dialect, script=[SimResponse(stall_after=0)]) as sim:
        outcome = review(
            sim.settings(deadline=1.0, read_timeout=30.0, attempts=1), system="s", user="u"
        )
        assert sim.count == 1
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "deadline"
    assert attempt.end_reason is EndReason.TIMEOUT
    assert attempt.retryable
    assert attempt.bytes_received == 0
    assert outcome.envelope is None


@pytest.mark.parametrize("dialect", ["openai", "mc1"])
def test_a_trickle_inside_the_read_timeout_still_hits_the_deadline(dialect: str) -> None:
    # one byte every 50 ms: no single read ever waits 0.5 s, so only the gate's own
    # deadline (the watchdog, also while the headers are still arriving) can stop it
    trickle = SimResponse(segment_size=1, pause=0.05)
    with ReviewerSimulator(dialect, script=[trickle]) as sim:
        outcome = review(
            # read_timeout far above one pause: only the deadline can end it, however loaded
            # the machine is (every pause is 0.01 s; together they outlast the 1 s deadline)
            sim.settings(deadline=1.0, read_timeout=5.0, attempts=1),
            system="s",
            user="u",
        )
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "deadline"
    assert attempt.end_reason is EndReason.TIMEOUT
    assert outcome.envelope is None


def test_a_trickle_in_the_body_hits_the_deadline() -> None:
    content = "x" * 400
    body = b"".join(render_events("openai", content))
    head = len(wire_for("openai", content)) - len(body) - 200  # well inside the body
    trickle = SimResponse(content=content, segment_size=1, pause=0.01, pause_from=head)
    with ReviewerSimulator("openai", script=[trickle]) as sim:
        outcome = review(
            # read_timeout far above one pause: only the deadline can end it, however loaded
            # the machine is (every pause is 0.01 s; together they outlast the 1 s deadline)
            sim.settings(deadline=1.0, read_timeout=5.0, attempts=1),
            system="s",
            user="u",
        )
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "deadline"
    assert 0 < attempt.bytes_received < len(body)


def test_a_stall_mid_body_is_a_read_timeout() -> None:
    with ReviewerSimulator("anthropic", script=[SimResponse(stall_after=400)]) as sim:
        outcome = review(
            sim.settings(read_timeout=0.3, deadline=20.0, attempts=1), system="s", user="u"
        )
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "timeout"
    assert attempt.end_reason is EndReason.TIMEOUT
    assert attempt.retryable
    assert attempt.bytes_received > 0


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_server_that_sends_forever_hits_the_size_cap(dialect: str) -> None:
    limit = 64 * 1024
    with ReviewerSimulator(dialect, script=[SimResponse(endless=True)] * 3) as sim:
        outcome = review(sim.settings(max_response_bytes=limit, attempts=3), system="s", user="u")
        count = sim.count
    attempt = outcome.last
    assert attempt is not None
    if dialect == "mc1":
        # the streaming verifier refuses the first bytes: not an envelope at all
        assert attempt.reason == "envelope_missing_header"
    else:
        assert attempt.reason == "size_limit"
        assert attempt.end_reason is EndReason.SIZE_LIMIT
        assert attempt.bytes_received == limit
        assert "max_response_bytes" in attempt.detail
    assert count == 1  # a size cap is not a reason to download it all again
    assert outcome.envelope is None


def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    with ReviewerSimulator("gemini", script=[SimResponse(framing="length")]) as sim:
        outcome = review(sim.settings(max_response_bytes=100, attempts=1), system="s", user="u")
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason == "size_limit"
    assert attempt.bytes_received == 0


def test_mc1_declared_size_over_the_cap_is_refused_from_the_header() -> None:
    content = "y" * 5000
    with ReviewerSimulator("mc1", script=[SimResponse(content=content)]) as sim:
        outcome = review(sim.settings(max_response_bytes=1000, attempts=1), system="s", user="u")
    attempt = outcome.last
    assert attempt is not None
    assert attempt.reason in ("envelope_size_limit", "size_limit")
    assert attempt.end_reason is EndReason.SIZE_LIMIT


def test_nothing_listening_is_a_connect_error_retried_within_budget() -> None:
    probe = socket.socket()  # bound, never listening: refused, and kept reserved
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    sleeps: list[float] = []
    from gate.reviewers.settings import ReviewerSettings

    settings = ReviewerSettings(
        provider="openai",
        model="m",
        base_url=f"http://127.0.0.1:{port}/v1",
        attempts=3,
        connect_timeout=2.0,
        backoff_base=0.01,
    )
    outcome = review(settings, system="s", user="u", sleep=sleeps.append)
    assert [a.reason for a in outcome.attempts] == ["connect_error"] * 3
    assert len(sleeps) == 2
    assert all(a.http_status is None for a in outcome.attempts)
    assert "base_url" in outcome.attempts[-1].detail
    assert outcome.envelope is None
    probe.close()
