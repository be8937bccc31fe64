"""gate/decide/ends.py: every member of every table, and each provider's own codes, land
where docs/reviewers.md ("How an attempt ends") says, with the official SDKs as the oracle.

Fix a class where it lives, once: these tests walk every ``Failure``, ``FinishReason``,
``End`` and ``Limit`` member, every reason code a dialect can write (read from the source),
every HTTP status, every marker, and every finish or block reason the SDKs of OpenAI,
Anthropic, Google (google-genai) and AWS (botocore's bedrock-runtime model) enumerate,
through each dialect's real stream reader.
"""

from __future__ import annotations

import ast
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Family, State, Status, decide
from gate.decide.ends import (
    FINISH_ENDS,
    MARKED_STATUSES,
    OUTAGE_4XX,
    REASONS,
    REFUSAL_MARKERS,
    End,
    end_of,
    name_refusal,
    reason_end,
    status_end,
)
from gate.lab.sim import SimResponse, render_events
from gate.reviewers import anthropic, bedrock, gemini, openai, openai_responses
from gate.reviewers.base import Exchange, Failure, Framing, Reply
from gate.reviewers.limits import QUOTA_REASON, Limit
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.transport import dialect, named

GATE = Path(__file__).resolve().parents[2] / "gate"
BINDING_DIFF = "0" * 64


def _reply(provider: str, body: bytes) -> Reply:
    """``body`` as a whole 200 answer, read by ``provider``'s own stream reader."""
    settings_ = ReviewerSettings(provider=provider, model="m", base_url="http://127.0.0.1:1/")
    stream = dialect(provider).parser(settings_)
    stream.feed(body)
    kind = bedrock.MEDIA_TYPE if provider == "bedrock" else "text/event-stream"
    exchange = Exchange(
        status=200, headers={"content-type": kind}, raw=body, framing=Framing.CHUNKED,
        failure=Failure.NONE, failure_detail="", end_reason=EndReason.TRAILER, retryable=False,
        elapsed_s=0.0, first_byte_s=0.0,
    )  # fmt: skip
    return stream.conclude(exchange)


def _end(provider: str, verbatim: str) -> End:
    body = b"".join(render_events(provider, "text", SimResponse(provider_finish=verbatim)))
    return end_of(_reply(provider, body).to_attempt(1))


# --- the tables --------------------------------------------------------------------------


def test_every_finish_reason_and_every_end_is_placed() -> None:
    assert set(FINISH_ENDS) == set(FinishReason)
    assert set(FINISH_ENDS.values()) | set(REASONS.values()) == set(End)
    assert FINISH_ENDS[FinishReason.STOP] is End.ANSWERED
    assert all(end is not End.ANSWERED for end in REASONS.values())  # no code is an answer


def test_every_transport_failure_is_mapped() -> None:
    for failure in Failure:
        if failure in (Failure.NONE, Failure.HTTP_STATUS):
            continue  # a whole body; http_<status> goes by status_end
        assert failure.value in REASONS, f"Failure.{failure.name} is not in ends.REASONS"


def _reasons_in_source() -> set[str]:
    """Every reason code a dialect or the transport writes: the first argument of each
    ``reply(...)`` call, each ``TransportError``'s reason, each ``*_REASON`` attribute."""
    found: set[str] = set()
    for path in (GATE / "reviewers").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "reply":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.add(first.value)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "TransportError":
                for keyword in node.keywords:  # a stream's own error, never a setup error
                    value = keyword.value
                    if keyword.arg == "reason" and isinstance(value, ast.Constant):
                        found.add(str(value.value))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [getattr(t, "id", "") for t in node.targets]
                if any(n.endswith("_REASON") for n in names) and isinstance(node.value.value, str):
                    found.add(node.value.value)
    return found - {""}


def test_every_reason_a_dialect_writes_is_mapped() -> None:
    written = _reasons_in_source()
    assert {"refusal", "token_exhaustion", "content_filter", "missing_done"} <= written
    unmapped = sorted(r for r in written if r not in REASONS and r != "error_frame")
    assert unmapped == [], f"reason codes nobody placed in gate.decide.ends.REASONS: {unmapped}"


def test_every_envelope_error_is_mapped() -> None:
    import gate.errors as errors

    for value in vars(errors).values():
        if isinstance(value, type) and issubclass(value, errors.EnvelopeError):
            assert value.reason in REASONS, value
            assert f"envelope_{value.reason}" in REASONS, value  # as the MC1 dialect names it


@pytest.mark.parametrize("status", range(100, 600))
def test_every_http_status(status: int) -> None:
    expected = End.CHOSEN if 400 <= status < 500 and status not in OUTAGE_4XX else End.OUTAGE
    assert status_end(status) is expected
    assert reason_end(f"http_{status}") is expected


def test_every_limit_is_an_outage() -> None:
    statuses = {Limit.QUOTA: 402, Limit.RATE: 429, Limit.OVERLOADED: 529}
    assert set(statuses) == set(Limit)
    assert reason_end(QUOTA_REASON) is End.OUTAGE
    for status in statuses.values():
        assert reason_end(f"http_{status}") is End.OUTAGE


@pytest.mark.parametrize(("marker", "reason"), REFUSAL_MARKERS)
def test_every_marker_names_its_reason(marker: bytes, reason: str) -> None:
    body = b'{"error": {"message": "... ' + marker.upper() + b' ..."}}'
    for status in MARKED_STATUSES:
        assert name_refusal(status, body) == reason
    assert name_refusal(500, body) is None
    assert reason in REASONS


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_a_code_nobody_mapped_is_the_diffs_doing(code: str) -> None:
    if code in REASONS or code == "error_frame" or code.startswith("http_"):
        return
    assert reason_end(code) is End.CHOSEN
    assert reason_end("error_frame", transient=False) is End.CHOSEN
    assert reason_end("error_frame", transient=True) is End.OUTAGE


# --- each provider's own codes, the SDKs as the oracle -----------------------------------


def _literal(annotation: Any) -> list[str]:
    values: list[str] = []
    for arg in typing.get_args(annotation):
        values += [arg] if isinstance(arg, str) else _literal(arg)
    return values


def test_openai_chat_finish_reasons() -> None:
    from openai.types.chat.chat_completion_chunk import Choice

    codes = _literal(Choice.model_fields["finish_reason"].annotation)
    assert "content_filter" in codes
    for code in codes:
        for provider in ("openai", "azure-openai"):
            expected = End.ANSWERED if code == "stop" else End.CHOSEN
            assert _end(provider, code) is expected, (provider, code)
    assert set(openai._FINISH) <= set(codes)


def test_openai_responses_incomplete_reasons() -> None:
    from openai.types.responses.response import IncompleteDetails

    codes = _literal(IncompleteDetails.model_fields["reason"].annotation)
    assert {"max_output_tokens", "content_filter"} <= set(codes)
    for code in codes:
        assert _end("openai-responses", code) is End.CHOSEN, code
    assert _end("openai-responses", openai_responses.COMPLETED) is End.ANSWERED


def test_anthropic_stop_reasons() -> None:
    from anthropic.types import StopReason

    codes = _literal(StopReason)
    assert "refusal" in codes
    for code in codes:
        expected = End.ANSWERED if code in ("end_turn", "stop_sequence") else End.CHOSEN
        assert _end("anthropic", code) is expected, code
    assert set(anthropic._FINISH) <= set(codes)


def test_gemini_finish_and_block_reasons() -> None:
    from google.genai import types

    for member in types.FinishReason:
        expected = End.ANSWERED if member.value == "STOP" else End.CHOSEN
        for provider in ("gemini", "vertex"):
            assert _end(provider, member.value) is expected, (provider, member)
    assert {m.value for m in types.FinishReason} >= gemini._REFUSALS
    for blocked in types.BlockedReason:
        body = b"data: " + json.dumps({"promptFeedback": {"blockReason": blocked.value}}).encode()
        reply = _reply("gemini", body + b"\n\n")
        assert end_of(reply.to_attempt(1)) is End.CHOSEN, blocked
        assert reply.reason == "refusal"


def test_bedrock_stop_reasons() -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    codes = model.shape_for("StopReason").enum
    assert {"guardrail_intervened", "content_filtered"} <= set(codes)
    for code in codes:
        expected = End.ANSWERED if code in ("end_turn", "stop_sequence") else End.CHOSEN
        assert _end("bedrock", code) is expected, code
    assert set(bedrock._FINISH) <= set(codes)


@pytest.mark.parametrize("where", ["prompt", "answer"])
def test_azures_filter_results_are_chosen(where: str) -> None:
    from tests.adversarial.test_diff_caused_ends import AZURE_CATEGORIES, azure_body

    for category in AZURE_CATEGORIES:
        reply = _reply("azure-openai", azure_body(where, category))
        assert reply.reason == "content_filter"
        assert end_of(reply.to_attempt(1)) is End.CHOSEN


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "bedrock"])
@settings(max_examples=25, deadline=None)
@given(code=st.from_regex(r"[A-Za-z][A-Za-z_]{1,30}", fullmatch=True))
def test_an_unknown_finish_is_chosen(provider: str, code: str) -> None:
    stops = {"stop", "end_turn", "stop_sequence", "STOP"}
    if code in stops:
        return
    assert _end(provider, code) is End.CHOSEN


# --- what each end decides ---------------------------------------------------------------


def _attempt(reason: str, *, status: int | None = None, retryable: bool = False) -> Attempt:
    return Attempt(
        number=1, provider="openai", complete=False, reason=reason, detail=f"said {reason}",
        end_reason=EndReason.TRAILER, http_status=status, retryable=retryable,
    )  # fmt: skip


@pytest.mark.parametrize("reason", sorted(REASONS))
def test_every_reason_decides_by_its_end(reason: str) -> None:
    from gate.decide.decision import Binding

    decision = decide(None, binding=Binding(BINDING_DIFF, "1"), attempts=[_attempt(reason)])
    if REASONS[reason] is End.OUTAGE:
        assert (decision.state, decision.family) == (State.INCOMPLETE, Family.UNAVAILABLE)
    else:  # chosen: about the code, posted as failure, and it stands (memory.stands)
        assert decision.state is State.NEEDS_HUMAN
        assert decision.status is Status.FAILURE
        assert decision.family.about_the_code


def test_a_4xx_is_named_once_for_every_caller() -> None:
    body = json.dumps({"error": {"code": "context_length_exceeded", "message": "too long"}})
    reply = Reply(
        provider="openai", complete=False, reason="http_400", detail="HTTP 400",
        end_reason=EndReason.HTTP_ERROR, http_status=400, raw=body.encode(),
    )  # fmt: skip
    assert named(reply).reason == "context_overflow"
    assert end_of(named(reply).to_attempt(1)) is End.CHOSEN
    quota = Reply(
        provider="openai", complete=False, reason=QUOTA_REASON, detail="quota",
        end_reason=EndReason.HTTP_ERROR, http_status=400, raw=body.encode(),
    )  # fmt: skip
    assert named(quota) is quota  # a quota stop keeps its own name


@pytest.mark.parametrize(
    ("reason", "named_as"),
    [
        ("prompt_cut", "prompt_cut"),  # review-gate serve's upstream cut the prompt
        ("token_exhaustion", "token_exhaustion"),
        ("empty_answer", "empty_answer"),
        ("refusal", "refusal"),
        ("connection_cut", None),  # an outage cannot be named by a body: only lowered
        ("missing_done", None),
        ("no_such_code", None),
    ],
)
def test_a_service_names_its_chosen_end_in_its_422(reason: str, named_as: str | None) -> None:
    error = {"type": reason, "message": "m", "code": f"review-gate-end:{reason}"}
    body = json.dumps({"error": error}).encode()
    assert name_refusal(422, body) == named_as
    assert name_refusal(500, body) is None  # a 5xx stays an outage whatever it says
    if named_as is not None:
        assert reason_end(named_as) is End.CHOSEN


def test_a_service_end_quoted_inside_another_string_is_not_read() -> None:
    quoted = json.dumps({"error": {"message": 'the diff says "review-gate-end:refusal"'}})
    assert name_refusal(422, quoted.encode()) is None
