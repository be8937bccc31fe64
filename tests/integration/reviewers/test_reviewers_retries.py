"""Retries: only for bytes that did not arrive; bounded, backed off, Retry-After honoured."""

from __future__ import annotations

import random

import pytest

from gate.decide.attempt import EndReason
from gate.decide.envelope import verify_text
from gate.lab.sim import DIALECTS, ReviewerSimulator, SimResponse, render_events
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(60)

ANSWER = '```json\n{"verdict": "fail", "reasons": ["bug"]}\n```\n'


@pytest.mark.parametrize("dialect", DIALECTS)
def test_429_with_retry_after_is_honoured_up_to_the_cap(dialect: str) -> None:
    sleeps: list[float] = []
    script = [SimResponse(status=429, retry_after="7"), SimResponse(status=429, retry_after="2")]
    with ReviewerSimulator(dialect, lambda _r: ANSWER, script=script) as sim:
        settings = sim.settings(attempts=3, retry_after_cap=5.0, backoff_base=100.0)
        outcome = review(settings, system="s", user="u", sleep=sleeps.append)
        count = sim.count
    assert sleeps == [5.0, 2.0]  # 7 capped at 5; 2 as asked; never the 100 s backoff
    assert count == 3
    first, second, third = outcome.attempts
    assert (first.reason, first.http_status, first.end_reason) == (
        "http_429",
        429,
        EndReason.HTTP_ERROR,
    )
    assert "Retry-After 7s honoured as 5.00s" in first.detail
    assert second.reason == "http_429"
    assert third.complete
    assert outcome.envelope is not None
    assert verify_text(outcome.envelope) == ANSWER


def test_retry_after_ms_and_http_date_forms() -> None:
    sleeps: list[float] = []
    script = [
        SimResponse(status=429, headers=(("retry-after-ms", "1500"),)),
        SimResponse(status=503, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"),  # in the past
    ]
    with ReviewerSimulator("openai", script=script) as sim:
        outcome = review(sim.settings(attempts=3), system="s", user="u", sleep=sleeps.append)
    assert sleeps == [1.5, 0.0]
    assert outcome.last is not None
    assert outcome.last.complete


@pytest.mark.parametrize("dialect", DIALECTS)
def test_500_then_success(dialect: str) -> None:
    sleeps: list[float] = []
    with ReviewerSimulator(dialect, lambda _r: ANSWER, script=[SimResponse(status=500)]) as sim:
        settings = sim.settings(attempts=3, backoff_base=1.0, backoff_cap=30.0)
        outcome = review(settings, system="s", user="u", sleep=sleeps.append)
        count = sim.count
    assert count == 2
    assert [a.reason for a in outcome.attempts] == ["http_500", ""]
    assert [a.number for a in outcome.attempts] == [1, 2]
    assert len(sleeps) == 1
    assert 0.5 <= sleeps[0] <= 1.0  # base 1 s, jittered into its upper half
    assert outcome.envelope is not None
    assert outcome.raw == b"".join(render_events(dialect, ANSWER))


def test_budget_spent_is_incomplete_with_every_attempt_recorded() -> None:
    sleeps: list[float] = []
    script = [SimResponse(status=502), SimResponse(cut_after=300), SimResponse(status=503)]
    with ReviewerSimulator("anthropic", script=script) as sim:
        settings = sim.settings(attempts=3, backoff_base=2.0, backoff_cap=3.0)
        outcome = review(settings, system="s", user="u", sleep=sleeps.append, rng=random.Random(7))
        count = sim.count
    assert count == 3
    assert [a.reason for a in outcome.attempts] == ["http_502", "connection_cut", "http_503"]
    assert outcome.envelope is None
    assert len(sleeps) == 2
    assert 1.0 <= sleeps[0] <= 2.0
    assert 1.5 <= sleeps[1] <= 3.0  # 4 s capped at 3, jittered
    assert outcome.attempts[-1].retryable  # it would have been retried: the budget is spent


COMPLETE_ANSWERS = [
    pytest.param(SimResponse(), "", id="healthy-fail-verdict"),
    pytest.param(SimResponse(content="no fence, not a verdict"), "", id="malformed-content"),
    pytest.param(SimResponse(finish="length"), "token_exhaustion", id="length"),
    pytest.param(SimResponse(finish="refusal"), "refusal", id="refusal"),
    pytest.param(SimResponse(provider_finish="tool_calls"), "unexpected_finish", id="other-finish"),
    pytest.param(SimResponse(status=400), "http_400", id="http-400"),
    pytest.param(SimResponse(status=401), "http_401", id="http-401"),
    pytest.param(SimResponse(framing="close"), "close_delimited", id="close-delimited"),
    pytest.param(
        SimResponse(error_frame="invalid_request_error"), "error_frame", id="final-error-frame"
    ),
    pytest.param(
        SimResponse(body=b"data: {nope}\n\ndata: [DONE]\n\n"), "malformed_event", id="bad-event"
    ),
]


@pytest.mark.parametrize(("response", "reason"), COMPLETE_ANSWERS)
def test_no_retry_after_a_complete_answer(response: SimResponse, reason: str) -> None:
    sleeps: list[float] = []
    with ReviewerSimulator("openai", lambda _r: ANSWER, script=[response] * 5) as sim:
        outcome = review(sim.settings(attempts=5), system="s", user="u", sleep=sleeps.append)
        count = sim.count
    assert count == 1  # the server saw exactly one request
    assert sleeps == []
    assert len(outcome.attempts) == 1
    assert outcome.attempts[0].reason == reason
    assert not outcome.attempts[0].retryable


@pytest.mark.parametrize("dialect", DIALECTS)
def test_retries_stop_at_the_first_complete_answer(dialect: str) -> None:
    script = [SimResponse(cut_after=200), SimResponse(status=503)]
    with ReviewerSimulator(dialect, lambda _r: ANSWER, script=script) as sim:
        outcome = review(sim.settings(attempts=5), system="s", user="u", sleep=lambda _s: None)
        count = sim.count
    assert count == 3  # two failures, one answer, and not one request more
    assert [a.complete for a in outcome.attempts] == [False, False, True]
