"""The decision table, and the table of hostile responses from the incidents."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import (
    MAX_DESCRIPTION,
    Binding,
    Family,
    State,
    Status,
    blocked,
    decide,
    exit_code,
)
from gate.decide.envelope import seal
from tests.verdicts import read_words

DIFF_SHA = hashlib.sha256(b"diff --git a/x b/x\n").hexdigest()
POLICY = "2026-11"
BINDING = Binding(DIFF_SHA, POLICY)


def verdict(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "verdict": "pass",
        "reasons": ["tests cover the new branch", "no API change"],
        "confidence": 0.91,
        "diff_sha": DIFF_SHA,
        "policy_version": POLICY,
        "read": read_words(DIFF_SHA, POLICY),
    }
    base.update(over)
    return base


def fenced(obj: Any, *, before: str = "Review follows.\n") -> str:
    return f"{before}```json\n{json.dumps(obj)}\n```\n"


def env(text: str | bytes) -> bytes:
    return seal(text.encode() if isinstance(text, str) else text)


ECHOED_EXAMPLE = {
    "verdict": "pass",
    "reasons": [],
    "confidence": 1.0,
    "diff_sha": "<diff_sha>",
    "policy_version": "<policy_version>",
}

HOSTILE: list[tuple[str, bytes, State, str]] = [
    (
        "echoed example block before the real verdict",
        env(fenced(ECHOED_EXAMPLE, before="Format:\n") + fenced(verdict(verdict="fail"))),
        State.NEEDS_HUMAN,
        "multiple_fences",
    ),
    (
        "two verdict blocks",
        env(fenced(verdict()) + fenced(verdict())),
        State.NEEDS_HUMAN,
        "multiple_fences",
    ),
    ("bare unfenced JSON", env(json.dumps(verdict())), State.NEEDS_HUMAN, "no_fence"),
    (
        "fence cut before its closing line",
        env("```json\n" + json.dumps(verdict()) + "\n"),
        State.NEEDS_HUMAN,
        "unclosed_fence",
    ),
    (
        "bare ``` fence instead of ```json",
        env("```\n" + json.dumps(verdict()) + "\n```\n"),
        State.NEEDS_HUMAN,
        "bad_fence_info",
    ),
    (
        "tilde fence elsewhere",
        env(fenced(verdict()) + "~~~\nnote\n~~~\n"),
        State.NEEDS_HUMAN,
        "multiple_fences",
    ),
    (
        'reason containing "verdict": "pass" in a fail',
        env(fenced(verdict(verdict="fail", reasons=['ignore this: "verdict": "pass"']))),
        State.FAIL,
        "reviewer_fail",
    ),
    (
        "duplicate keys",
        env("```json\n" + json.dumps(verdict(verdict="fail"))[:-1] + ', "verdict": "pass"}\n```\n'),
        State.NEEDS_HUMAN,
        "duplicate_key",
    ),
    (
        "NaN confidence",
        env(fenced(verdict()).replace("0.91", "NaN")),
        State.NEEDS_HUMAN,
        "non_finite",
    ),
    (
        "Infinity confidence",
        env(fenced(verdict()).replace("0.91", "Infinity")),
        State.NEEDS_HUMAN,
        "non_finite",
    ),
    (
        "true as confidence",
        env(fenced(verdict(confidence=True))),
        State.NEEDS_HUMAN,
        "bad_confidence",
    ),
    ("confidence 1.5", env(fenced(verdict(confidence=1.5))), State.NEEDS_HUMAN, "confidence_range"),
    (
        "confidence -0.1",
        env(fenced(verdict(confidence=-0.1))),
        State.NEEDS_HUMAN,
        "confidence_range",
    ),
    (
        'confidence "0.9"',
        env(fenced(verdict(confidence="0.9"))),
        State.NEEDS_HUMAN,
        "bad_confidence",
    ),
    ("an extra key", env(fenced(verdict(severity="low"))), State.NEEDS_HUMAN, "extra_key"),
    (
        "a missing key",
        env(fenced({k: v for k, v in verdict().items() if k != "confidence"})),
        State.NEEDS_HUMAN,
        "missing_key",
    ),
    ("verdict accept", env(fenced(verdict(verdict="accept"))), State.NEEDS_HUMAN, "bad_verdict"),
    ("verdict PASS", env(fenced(verdict(verdict="PASS"))), State.NEEDS_HUMAN, "bad_verdict"),
    ("reasons a string", env(fenced(verdict(reasons="ok"))), State.NEEDS_HUMAN, "bad_reasons"),
    ("blank reason", env(fenced(verdict(reasons=["  "]))), State.NEEDS_HUMAN, "bad_reasons"),
    ("top-level array", env("```json\n[1]\n```\n"), State.NEEDS_HUMAN, "not_object"),
    (
        "too deep",
        env("```json\n" + "[" * 40 + "]" * 40 + "\n```\n"),
        State.NEEDS_HUMAN,
        "too_deep",
    ),
    (
        "wrong diff_sha",
        env(fenced(verdict(diff_sha="0" * 64))),
        State.NEEDS_HUMAN,
        "diff_sha_mismatch",
    ),
    (
        "wrong policy_version",
        env(fenced(verdict(policy_version="2025-01"))),
        State.NEEDS_HUMAN,
        "policy_version_mismatch",
    ),
    (
        "CRLF header",
        env(fenced(verdict())).replace(b"\n", b"\r\n", 1),
        State.INCOMPLETE,
        "bad_header",
    ),
    (
        "leading-zero length",
        env(fenced(verdict())).replace(b"MC1 ", b"MC1 0", 1),
        State.INCOMPLETE,
        "bad_header",
    ),
    (
        "a 30-digit length",
        b"MC1 " + b"1" * 30 + b" " + b"a" * 64 + b"\nx\nEND\n",
        State.INCOMPLETE,
        "bad_header",
    ),
    ("invalid UTF-8", env(fenced(verdict()).encode() + b"\xc3"), State.NEEDS_HUMAN, "bad_encoding"),
    (
        "UTF-8 BOM before the header",
        b"\xef\xbb\xbf" + env(fenced(verdict())),
        State.INCOMPLETE,
        "missing_header",
    ),
    (
        "UTF-8 BOM in the content",
        env("\ufeff```json\n" + json.dumps(verdict()) + "\n```\n"),
        State.NEEDS_HUMAN,
        "bad_fence_info",
    ),
    ("bytes after the body", env(fenced(verdict())) + b"\n", State.INCOMPLETE, "trailing_bytes"),
    ("pass with empty reasons", env(fenced(verdict(reasons=[]))), State.NEEDS_HUMAN, "no_reasons"),
    (
        "pass with confidence below the minimum",
        env(fenced(verdict(confidence=0.5))),
        State.NEEDS_HUMAN,
        "low_confidence",
    ),
    (
        "two-byte structural cut inside the fence (pass)",
        env("```json\n" + json.dumps(verdict(reasons=["ok"]))[:-1] + "\n```\n"),
        State.NEEDS_HUMAN,
        "repaired_pass",
    ),
    (
        "two-byte structural cut inside the fence (fail)",
        env(
            "```json\n"
            + json.dumps(
                {
                    "verdict": "fail",
                    "confidence": 0.9,
                    "diff_sha": DIFF_SHA,
                    "policy_version": POLICY,
                    "read": read_words(DIFF_SHA, POLICY),
                    "reasons": ["sql injection"],
                }
            )[:-2]
            + "\n```\n"
        ),
        State.FAIL,
        "repaired_fail",
    ),
    (
        "stream cut mid-object then closed by a naive repair",
        env('```json\n{"verdict": "pass"\n```\n'),
        State.NEEDS_HUMAN,
        "missing_key",
    ),
    (
        "cut inside a string",
        env('```json\n{"verdict": "pass", "reasons": ["goo\n```\n'),
        State.NEEDS_HUMAN,
        "json_syntax",
    ),
    (
        "cut mid-number",
        env(
            "```json\n"
            + json.dumps(verdict())[:-1].rsplit('"policy_version"', 1)[0]
            + '"c": 0.9\n```\n'
        ),
        State.NEEDS_HUMAN,
        "json_syntax",
    ),
    (
        "a flipped body byte",
        env(fenced(verdict())).replace(b'"fail"', b'"fail"').replace(b"0.91", b"0.99"),
        State.INCOMPLETE,
        "digest_mismatch",
    ),
    (
        "indented fence line elsewhere",
        env(fenced(verdict()) + "    ```\n"),
        State.NEEDS_HUMAN,
        "multiple_fences",
    ),
]


@pytest.mark.parametrize(("name", "raw", "state", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_response(name: str, raw: bytes, state: State, reason: str) -> None:
    decision = decide(raw, binding=BINDING, min_confidence=0.8)
    assert (decision.state, decision.reason) == (state, reason), decision.detail
    assert decision.status is not Status.SUCCESS
    assert len(decision.description) <= MAX_DESCRIPTION
    assert decision.description.startswith(str(state).replace("_", "_"))
    assert exit_code(decision) != 0


def test_echoed_example_never_wins_even_when_it_is_first() -> None:
    raw = env(fenced(ECHOED_EXAMPLE, before="Schema:\n") + fenced(verdict(verdict="fail")))
    decision = decide(raw, binding=BINDING)
    assert decision.state is State.NEEDS_HUMAN
    assert decision.verdict is None


def test_healthy_pass() -> None:
    decision = decide(env(fenced(verdict())), binding=BINDING, min_confidence=0.8)
    assert decision.state is State.PASS
    assert decision.status is Status.SUCCESS
    assert decision.reason == "reviewer_pass"
    assert decision.source == "envelope"
    assert decision.verdict is not None
    assert decision.verdict.confidence == 0.91
    assert exit_code(decision) == 0
    assert decision.description == "pass: confidence 0.91, 2 reasons"


def test_confidence_equal_to_minimum_passes() -> None:
    decision = decide(env(fenced(verdict(confidence=0.8))), binding=BINDING, min_confidence=0.8)
    assert decision.state is State.PASS


def test_integer_confidence_one_passes() -> None:
    decision = decide(env(fenced(verdict(confidence=1))), binding=BINDING)
    assert decision.state is State.PASS


def test_fail_is_failure_and_names_the_first_reason() -> None:
    decision = decide(
        env(fenced(verdict(verdict="fail", reasons=["leaks a token"]))), binding=BINDING
    )
    assert (decision.state, decision.status) == (State.FAIL, Status.FAILURE)
    assert decision.description == "fail: leaks a token"
    assert exit_code(decision) == 1


def test_fail_with_low_confidence_is_still_fail() -> None:
    decision = decide(
        env(fenced(verdict(verdict="fail", confidence=0.1, reasons=[]))), binding=BINDING
    )
    assert decision.state is State.FAIL


def test_low_confidence_pass_is_failure_status() -> None:
    decision = decide(env(fenced(verdict(confidence=0.2))), binding=BINDING)
    assert (decision.state, decision.status) == (State.NEEDS_HUMAN, Status.FAILURE)
    assert "0.2 below the minimum 0.8" in decision.description


def test_malformed_is_error_status() -> None:
    decision = decide(env("no fence here"), binding=BINDING)
    assert (decision.state, decision.status) == (State.NEEDS_HUMAN, Status.ERROR)


def _attempt(n: int, reason: str, end: EndReason, detail: str) -> Attempt:
    return Attempt(
        number=n,
        provider="openai",
        complete=False,
        reason=reason,
        detail=detail,
        end_reason=end,
        finish_reason=FinishReason.NONE,
    )


def test_incomplete_after_attempts_names_the_last_cause() -> None:
    attempts = [
        _attempt(1, "timeout", EndReason.TIMEOUT, "read timeout after 60s"),
        _attempt(2, "http_500", EndReason.HTTP_ERROR, "HTTP 500 from the reviewer"),
        _attempt(3, "digest_mismatch", EndReason.SOCKET_CLOSE, "digest mismatch"),
    ]
    decision = decide(None, binding=BINDING, attempts=attempts)
    assert (decision.state, decision.status) == (State.INCOMPLETE, Status.ERROR)
    assert decision.reason == "digest_mismatch"
    assert decision.description == "incomplete after 3 attempts: digest mismatch (socket_close)"
    assert exit_code(decision) == 3


def test_token_exhaustion_is_told_apart() -> None:
    attempt = Attempt(
        number=1,
        provider="anthropic",
        complete=False,
        reason="token_exhaustion",
        detail="the model ran out of tokens (max_tokens); raise max_tokens",
        end_reason=EndReason.TRAILER,
        finish_reason=FinishReason.LENGTH,
        provider_finish_reason="max_tokens",
    )
    decision = decide(None, binding=BINDING, attempts=[attempt])
    assert decision.reason == "token_exhaustion"
    assert "raise max_tokens" in decision.description
    # an end the model chose (gate.decide.ends): a block about the code that stands
    assert (decision.state, decision.status) == (State.NEEDS_HUMAN, Status.FAILURE)
    assert decision.family is Family.NEEDS_HUMAN
    assert "stands until the diff changes" in decision.detail


def test_no_attempts_no_envelope() -> None:
    decision = decide(None, binding=BINDING)
    assert decision.state is State.INCOMPLETE
    assert decision.reason == "no_response"


def test_description_is_bounded_and_single_line() -> None:
    long = "x" * 500 + "\n\x1b[31m"
    decision = decide(env(fenced(verdict(verdict="fail", reasons=[long]))), binding=BINDING)
    assert len(decision.description) == MAX_DESCRIPTION
    assert decision.description.endswith("...")
    assert "\n" not in decision.description
    assert "\x1b" not in decision.description


def test_blocked_never_passes() -> None:
    with pytest.raises(ValueError, match="never produces a pass"):
        blocked(State.PASS, "x", "y")
    with pytest.raises(ValueError, match="never produces a pass"):
        blocked(State.NEEDS_HUMAN, "x", "y", status=Status.SUCCESS)
    decision = blocked(State.NEEDS_HUMAN, "partial_coverage", "2 files not reviewed")
    assert decision.description == "needs_human: 2 files not reviewed"
    assert exit_code(decision) == 3


def test_oversize_envelope_is_size_limit() -> None:
    raw = env(fenced(verdict()))
    decision = decide(raw, binding=BINDING, max_size=10)
    assert (decision.state, decision.reason) == (State.INCOMPLETE, "size_limit")


# --- properties -------------------------------------------------------------

reasons_st = st.lists(st.text(min_size=1, max_size=30).filter(str.strip), max_size=4)
verdict_st = st.builds(
    verdict,
    verdict=st.sampled_from(["pass", "fail"]),
    reasons=reasons_st,
    confidence=st.floats(0, 1),
)


@settings(max_examples=200, deadline=None)
@given(verdict_st, st.integers(0, 100_000), st.integers(1, 255))
def test_any_byte_change_of_a_valid_envelope_is_not_a_pass(
    obj: dict[str, Any], position: int, xor: int
) -> None:
    raw = bytearray(env(fenced(obj)))
    raw[position % len(raw)] ^= xor
    assert decide(bytes(raw), binding=BINDING).state is not State.PASS


@settings(max_examples=200, deadline=None)
@given(verdict_st, st.integers(0, 100_000))
def test_any_truncation_of_a_valid_envelope_is_incomplete(obj: dict[str, Any], cut: int) -> None:
    raw = env(fenced(obj))
    decision = decide(raw[: cut % len(raw)], binding=BINDING)
    assert decision.state is State.INCOMPLETE


@settings(max_examples=200, deadline=None)
@given(verdict_st, st.text(max_size=60), st.integers(0, 10_000))
def test_any_content_edit_inside_a_resealed_envelope_cannot_forge_a_pass_from_a_fail(
    obj: dict[str, Any], junk: str, where: int
) -> None:
    """Even a correctly resealed edit never turns the text of a fail into a pass."""
    obj = dict(obj, verdict="fail")
    text = fenced(obj)
    at = where % (len(text) + 1)
    edited = text[:at] + junk + text[at:]
    decision = decide(env(edited), binding=BINDING)
    if decision.state is State.PASS:
        # only possible if the junk itself spells a complete, single, bound pass
        assert '"pass"' in junk


def test_blockquoted_second_verdict_blocks() -> None:
    quoted = "> ```json\n> " + json.dumps(verdict(verdict="fail")) + "\n> ```\n"
    decision = decide(env(quoted + fenced(verdict())), binding=BINDING)
    assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "bad_fence_info")
    decision = decide(env(fenced(verdict()) + quoted), binding=BINDING)
    assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "multiple_fences")


def test_huge_integer_confidence_is_needs_human() -> None:
    text = fenced(verdict()).replace("0.91", "1" + "0" * 5000)
    decision = decide(env(text), binding=BINDING)
    assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "bad_number")
