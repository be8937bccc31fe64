"""Class: a quota or billing stop read as a passing rate limit.

An exhausted account answers 429 like a per-minute limit does. Retried, it burns the run's
attempts and deadline on an answer that cannot change, and its message blames nobody. Each
documented quota signature, over a real socket, must end the review after one request
with ``quota_exhausted`` (family ``unavailable``, not about the code) naming who acts; its
rate-limit twin must still be retried. Generated bodies check that no wrapping of a quota
name reads as a rate limit, and that no 429 without one reads as a quota stop.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses.response_error import ResponseError

from gate.decide.decision import Binding, Family, decide
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.reviewers.limits import QUOTA_REASON, Limit, classify
from gate.reviewers.transport import review
from tests.unit.reviewers.test_limits import (
    OPENAI_QUOTA,
    OPENAI_RATE,
    anthropic_error,
    gemini_exhausted,
)

CONTENT = "fine"
BEDROCK_QUOTA = (
    ("x-amzn-errortype", "ServiceQuotaExceededException:http://internal.amazon.com/coral/"),
)
BEDROCK_THROTTLE = (("x-amzn-errortype", "ThrottlingException:http://internal.amazon.com/coral/"),)
PER_DAY = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
PER_MINUTE = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
CREDIT = "Your credit balance is too low to access the Anthropic API."

#: (dialect, status, body, headers) of a quota stop, and of its rate-limit twin
QUOTA_STOPS: list[tuple[str, int, Any, tuple[tuple[str, str], ...]]] = [
    ("openai", 429, OPENAI_QUOTA, ()),
    ("openai-responses", 429, OPENAI_QUOTA, ()),
    ("azure-openai", 429, OPENAI_QUOTA, ()),
    ("anthropic", 402, anthropic_error("billing_error", "billing"), ()),
    ("anthropic", 400, anthropic_error("invalid_request_error", CREDIT), ()),
    (
        "anthropic",
        429,
        anthropic_error("rate_limit_error", "x", "enforced_spend_limit_reached"),
        (),
    ),
    ("gemini", 429, gemini_exhausted(PER_DAY), ()),
    ("vertex", 429, gemini_exhausted(PER_DAY), ()),
    ("bedrock", 400, {"message": "Your request exceeds the service quota"}, BEDROCK_QUOTA),
]
RATE_TWINS: list[tuple[str, int, Any, tuple[tuple[str, str], ...]]] = [
    ("openai", 429, OPENAI_RATE, ()),
    ("openai-responses", 429, OPENAI_RATE, ()),
    ("azure-openai", 429, OPENAI_RATE, (("retry-after-ms", "10"),)),
    ("anthropic", 529, anthropic_error("overloaded_error", "Overloaded"), ()),
    ("anthropic", 429, anthropic_error("rate_limit_error", "per-minute"), ()),
    ("gemini", 429, gemini_exhausted(PER_MINUTE), ()),
    ("vertex", 429, gemini_exhausted(None), ()),
    ("bedrock", 429, {"message": "Too many requests"}, BEDROCK_THROTTLE),
]


def ask(dialect: str, response: SimResponse) -> tuple[Any, int]:
    with ReviewerSimulator(dialect, lambda _req: CONTENT) as sim:
        sim.queue(response)
        outcome = review(sim.settings(attempts=3), system="S", user="U", sleep=lambda _s: None)
        return outcome, sim.count


@pytest.mark.parametrize(("dialect", "status", "body", "headers"), QUOTA_STOPS)
def test_a_quota_stop_is_asked_once_and_names_who_acts(
    dialect: str, status: int, body: Any, headers: tuple[tuple[str, str], ...]
) -> None:
    response = SimResponse(status=status, error_body=json.dumps(body), headers=headers)
    outcome, requests = ask(dialect, response)
    assert requests == 1  # never retried: it will not heal in seconds
    last = outcome.last
    assert last is not None
    assert last.reason == QUOTA_REASON
    assert not last.retryable
    assert "owns that account" in last.detail
    decision = decide(None, binding=Binding("0" * 64, "p"), attempts=outcome.attempts)
    assert decision.reason == QUOTA_REASON
    assert decision.family is Family.UNAVAILABLE


@pytest.mark.parametrize(("dialect", "status", "body", "headers"), RATE_TWINS)
def test_its_rate_limit_twin_is_still_retried(
    dialect: str, status: int, body: Any, headers: tuple[tuple[str, str], ...]
) -> None:
    response = SimResponse(status=status, error_body=json.dumps(body), headers=headers)
    outcome, requests = ask(dialect, response)
    assert requests == 2  # the scripted refusal, then the healthy answer
    assert outcome.attempts[0].reason == f"http_{status}"
    assert outcome.attempts[0].retryable
    assert outcome.envelope is not None


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
EXTRA = st.dictionaries(
    st.text(min_size=1, max_size=12).filter(lambda k: k not in {"type", "code", "error"}),
    JSON_SCALARS,
    max_size=4,
)
QUOTA_NAMES = st.sampled_from(["insufficient_quota", "billing_not_active"])


@settings(max_examples=150, deadline=None)
@given(
    name=QUOTA_NAMES,
    field=st.sampled_from(["code", "type"]),
    message=st.text(max_size=80),
    extra=EXTRA,
    status=st.sampled_from([429, 400, 403]),
    provider=st.sampled_from(["openai", "openai-responses", "azure-openai"]),
)
def test_no_wrapping_of_an_openai_quota_name_reads_as_a_rate_limit(
    name: str, field: str, message: str, extra: dict[str, Any], status: int, provider: str
) -> None:
    body = {"error": {**extra, "message": message, field: name}}
    found = classify(provider, status, {}, json.dumps(body).encode())
    assert found is not None
    assert found.kind is Limit.QUOTA
    assert not found.retryable


@settings(max_examples=150, deadline=None)
@given(
    code=st.text(max_size=30).filter(
        lambda c: (
            c not in {"insufficient_quota", "billing_not_active", "billing_hard_limit_reached"}
        )
    ),
    message=st.text(max_size=80),
    extra=EXTRA,
    provider=st.sampled_from(["openai", "openai-responses", "azure-openai", "mc1"]),
)
def test_a_429_without_a_quota_name_stays_a_retried_rate_limit(
    code: str, message: str, extra: dict[str, Any], provider: str
) -> None:
    body = {"error": {**extra, "message": message, "code": code, "type": code}}
    found = classify(provider, 429, {}, json.dumps(body).encode())
    assert found is not None
    assert found.kind is Limit.RATE
    assert found.retryable


#: (dialect, an error frame inside the 200 stream, whether it is a quota stop)
IN_STREAM = [
    ("openai", {"error": OPENAI_QUOTA["error"]}, True),
    ("openai", {"error": OPENAI_RATE["error"]}, False),
    ("gemini", gemini_exhausted(PER_DAY), True),
    ("gemini", gemini_exhausted(PER_MINUTE), False),
    ("vertex", gemini_exhausted(PER_DAY), True),
    ("anthropic", anthropic_error("billing_error", "billing"), True),
    ("anthropic", anthropic_error("overloaded_error", "Overloaded"), False),
]


@pytest.mark.parametrize(("dialect", "frame", "quota"), IN_STREAM)
def test_a_quota_stop_inside_the_stream_is_not_retried_either(
    dialect: str, frame: Any, quota: bool
) -> None:
    body = f"data: {json.dumps(frame)}\n\n".encode()
    outcome, requests = ask(dialect, SimResponse(body=body))
    first = outcome.attempts[0]
    if quota:
        assert requests == 1
        assert first.reason == QUOTA_REASON
        assert "owns that account" in first.detail
    else:
        assert requests == 2  # transient: the healthy answer follows
        assert first.reason == "error_frame"
        assert outcome.envelope is not None


# --- Responses: the quota stop in a response.failed -------------------------------------
# The class above, in the one dialect whose in-stream error is not an error event: the
# Responses API ends a failed response with ``response.failed`` carrying ``response.error``
# (code, message, and the original error ``type``). A quota name there is a quota stop as
# it is in an error event; the official SDK's ResponseError codes are the oracle for the
# codes a failed response carries.

RESPONSE_CODES = sorted(get_args(ResponseError.model_fields["code"].annotation))


def _failed(error: dict[str, Any]) -> bytes:
    created = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}
    failed = {
        "type": "response.failed",
        "response": {"id": "resp_1", "status": "failed", "output": [], "error": error},
    }
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
        for event in (created, failed)
    )


@settings(max_examples=40, deadline=None)
@given(
    name=QUOTA_NAMES,
    field=st.sampled_from(["code", "type"]),
    code=st.sampled_from(RESPONSE_CODES),
    message=st.text(max_size=60),
)
def test_a_quota_name_in_a_failed_response_is_a_quota_stop(
    name: str, field: str, code: str, message: str
) -> None:
    error = {"code": code, "message": message, field: name}
    outcome, requests = ask("openai-responses", SimResponse(body=_failed(error)))
    first = outcome.attempts[0]
    assert requests == 1, first.detail
    assert first.reason == QUOTA_REASON
    assert "owns that account" in first.detail


@settings(max_examples=25, deadline=None)
@given(code=st.sampled_from(RESPONSE_CODES), message=st.text(max_size=60))
def test_a_failed_response_without_a_quota_name_stays_an_error_frame(
    code: str, message: str
) -> None:
    error = {"code": code, "message": message, "type": None}
    outcome, _requests = ask("openai-responses", SimResponse(body=_failed(error)))
    assert outcome.attempts[0].reason == "error_frame"


# any shape where the error object belongs: null, a list, a string, nested objects, a quota
# name one level too deep; whatever it is, the failed response is never an answer
ANY_JSON = st.recursive(
    JSON_SCALARS | st.sampled_from(["insufficient_quota", "billing_not_active"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(error=ANY_JSON)
def test_a_failed_response_of_any_shape_is_never_an_answer(error: Any) -> None:
    outcome, requests = ask("openai-responses", SimResponse(body=_failed(error)))
    first = outcome.attempts[0]
    assert not first.complete
    assert first.reason in ("error_frame", QUOTA_REASON), first.detail
    if first.reason == QUOTA_REASON:
        assert requests == 1  # a quota stop is final
    decision = decide(outcome.envelope, binding=Binding("0" * 64, "1"), attempts=outcome.attempts)
    assert decision.family is not Family.PASS
