"""gate/reviewers/pool.py: context overflow recognised only where the provider says so;
the shared pause and the run-wide deadline."""

from __future__ import annotations

import pytest

from gate.decide.attempt import EndReason
from gate.reviewers.base import Reply
from gate.reviewers.pool import Pacer, context_overflow
from gate.reviewers.transport import named


def _reply(status: int, body: bytes) -> Reply:
    """The reply as every caller of the transport reads it (its refusal named)."""
    return named(
        Reply(
            provider="openai",
            complete=False,
            reason=f"http_{status}",
            detail="",
            end_reason=EndReason.HTTP_ERROR,
            http_status=status,
            raw=body,
        )
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"error": {"code": "context_length_exceeded", "message": "too long"}}',
        b'{"type": "error", "error": {"message": "prompt is too long: 210000 tokens"}}',
        b'{"error": {"message": "The input token count (9) exceeds the maximum number of '
        b'tokens allowed (8).", "status": "INVALID_ARGUMENT"}}',
        b'{"detail": "This model\'s maximum context length is 8192 tokens"}',
    ],
)
def test_overflow_is_recognised(body: bytes) -> None:
    assert context_overflow(_reply(400, body))
    assert context_overflow(_reply(413, body))


def test_a_429_that_names_the_prompts_size_is_overflow() -> None:
    """A rate-limit status whose body names the request's size: waiting never helps, so it
    is the prompt's doing, not an outage (tests/adversarial/test_provoked_outages.py)."""
    assert context_overflow(_reply(429, b'{"error": {"code": "context_length_exceeded"}}'))


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, b'{"error": {"message": "invalid model"}}'),
        (500, b"prompt is too long"),
    ],
)
def test_other_errors_are_not_overflow(status: int, body: bytes) -> None:
    assert not context_overflow(_reply(status, body))


def test_a_hold_pauses_later_waits_and_never_past_the_deadline() -> None:
    now = [100.0]
    slept: list[float] = []
    pacer = Pacer(10.0, sleep=slept.append, clock=lambda: now[0])
    assert pacer.wait() == 0.0
    pacer.hold(30.0)  # longer than the run has left
    assert pacer.wait() == pytest.approx(10.0)
    now[0] += 4.0
    assert pacer.wait() == pytest.approx(6.0)
    assert slept == [pytest.approx(10.0), pytest.approx(6.0)]
    assert pacer.remaining() == pytest.approx(6.0)
