"""gate.decide.agreement.aggregate: k answers, one decision; never a pass unless all k pass.

The answers are real decisions: each is :func:`gate.decide.decision.decide` applied to a sealed
envelope generated here (pass or fail, confidence, bound or not, cut short or whole), so the
property covers every row of the decision table an answer can land in.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.schema import schema
from gate.decide.agreement import (
    MAX_AGREEMENT,
    Answer,
    aggregate,
    answers_json,
    record_json,
    stopped,
    stops_asking,
    summary,
)
from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Binding, Decision, State, Status, decide
from gate.decide.envelope import seal
from tests.verdicts import read_words

BINDING = Binding(diff_sha="a" * 64, policy_version="1")


def _fence(verdict: str, confidence: float, *, bound: bool, reasons: bool) -> bytes:
    obj = {
        "verdict": verdict,
        "reasons": ["looked at it"] if reasons else [],
        "confidence": confidence,
        "diff_sha": BINDING.diff_sha if bound else "b" * 64,
        "policy_version": BINDING.policy_version,
        "read": read_words(BINDING),
    }
    return seal(("```json\n" + json.dumps(obj) + "\n```\n").encode())


def _cut() -> Attempt:
    return Attempt(
        number=1,
        provider="openai",
        complete=False,
        reason="connection_cut",
        detail="cut",
        end_reason=EndReason("socket_close"),
        finish_reason=FinishReason("none"),
        bytes_received=10,
    )


@st.composite
def answers(draw: st.DrawFn) -> Decision:
    kind = draw(st.sampled_from(["verdict", "incomplete", "malformed"]))
    if kind == "incomplete":
        return decide(None, binding=BINDING, attempts=[_cut()])
    if kind == "malformed":
        return decide(seal(b"no fence here\n"), binding=BINDING)
    verdict = draw(st.sampled_from(["pass", "fail"]))
    confidence = draw(st.sampled_from([0.1, 0.5, 0.79, 0.8, 0.95, 1.0]))
    bound = draw(st.booleans())
    reasons = draw(st.booleans())
    return decide(
        _fence(verdict, confidence, bound=bound, reasons=reasons),
        binding=BINDING,
        min_confidence=0.8,
    )


def _is_pass(d: Decision) -> bool:
    return d.state is State.PASS and d.status is Status.SUCCESS


@settings(max_examples=400, deadline=None)
@given(st.lists(answers(), min_size=1, max_size=MAX_AGREEMENT))
def test_a_pass_needs_every_answer_to_pass(decisions: list[Decision]) -> None:
    result = aggregate(decisions)
    assert _is_pass(result) == all(_is_pass(d) for d in decisions)
    if not _is_pass(result):
        assert result.status is not Status.SUCCESS


@settings(max_examples=400, deadline=None)
@given(st.lists(answers(), min_size=2, max_size=MAX_AGREEMENT))
def test_any_disagreement_is_unstable_and_lists_every_answer(decisions: list[Decision]) -> None:
    result = aggregate(decisions)
    verdicts = {d.verdict.verdict for d in decisions if d.verdict is not None}
    if len(verdicts) > 1:
        assert (result.state, result.reason) == (State.NEEDS_HUMAN, "unstable")
        for number in range(1, len(decisions) + 1):
            assert f"#{number} " in result.detail
    else:
        assert result.reason != "unstable"
        assert result in decisions  # agreeing answers: one of them decides, unchanged
        if any(d.state is State.FAIL for d in decisions):
            assert result.state is State.FAIL


def test_three_answers_with_one_dissent_is_unstable() -> None:
    good = decide(_fence("pass", 0.9, bound=True, reasons=True), binding=BINDING)
    bad = decide(_fence("fail", 0.85, bound=True, reasons=True), binding=BINDING)
    assert _is_pass(good)
    assert bad.state is State.FAIL
    result = aggregate([good, bad, good])
    assert (result.state, result.status, result.reason) == (
        State.NEEDS_HUMAN,
        Status.FAILURE,
        "unstable",
    )
    assert "#1 pass (0.90" in result.detail
    assert "#2 fail (0.85" in result.detail
    answers_ = [Answer(d, (), None) for d in (good, bad, good)]
    assert summary(answers_) == "2/3 pass, 1/3 fail"
    assert summary(answers_[:1] * 3) == "3/3 agree: pass"
    assert [a["number"] for a in answers_json(answers_)] == [1, 2, 3]


def test_an_empty_list_is_a_bug_not_a_pass() -> None:
    try:
        aggregate([])
    except ValueError:
        return
    raise AssertionError("aggregate([]) must raise")


def test_the_schema_maximum_is_max_agreement() -> None:
    prop = schema()["properties"]["agreement"]
    assert (prop["minimum"], prop["maximum"], prop["default"]) == (1, MAX_AGREEMENT, 1)


@st.composite
def answer_sets(draw: st.DrawFn) -> tuple[int, list[Answer]]:
    """k, and the k answers a reviewer would give (an outage answer carries its cut)."""
    k = draw(st.integers(min_value=1, max_value=MAX_AGREEMENT))
    decisions = draw(st.lists(answers(), min_size=k, max_size=k))
    return k, [Answer(d, (_cut(),) if d.state is State.INCOMPLETE else (), None) for d in decisions]


def _asked(all_k: list[Answer]) -> list[Answer]:
    """What the pipeline asks: up to the first answer that stops the asking."""
    asked: list[Answer] = []
    for one in all_k:
        asked.append(one)
        if stops_asking(one):
            break
    return asked


@settings(max_examples=400, deadline=None)
@given(answer_sets())
def test_stopping_early_decides_as_asking_all_k(given_set: tuple[int, list[Answer]]) -> None:
    """Issue 33: the asking stops once no answer set could still pass. The decision is a
    pass exactly when asking all k is (the same pass when it is); it is the very decision
    of all k whenever the answers not asked repeat the last one asked; only
    an answer that decided a block (never a pass, never an outage) stops it."""
    k, all_k = given_set
    asked = _asked(all_k)
    early = aggregate([a.decision for a in asked])
    full = aggregate([a.decision for a in all_k])
    assert _is_pass(early) == _is_pass(full)
    if _is_pass(full):
        assert early == full
        assert len(asked) == k
    if len(asked) < k:
        last = asked[-1].decision
        assert not _is_pass(last)
        assert last.state is not State.INCOMPLETE
        assert not _is_pass(early)
        assert stopped(asked, k) is not None
        assert f"answer {len(asked)} of {k}" in str(stopped(asked, k))
    else:
        assert stopped(asked, k) is None
    repeated = aggregate([a.decision for a in asked + [asked[-1]] * (k - len(asked))])
    # the same decision (an unstable one's detail lists each answer, so it lists fewer)
    assert _key(early) == _key(repeated)


def _key(d: Decision) -> tuple[object, ...]:
    return d.state, d.status, d.reason, d.verdict, d.envelope_sha256


def test_a_short_set_is_recorded_with_how_many_were_asked_and_why() -> None:
    bad = decide(_fence("fail", 0.85, bound=True, reasons=True), binding=BINDING)
    record = record_json([Answer(bad, (), None)], 3)
    assert (record["k"], record["asked"]) == (3, 1)
    assert record["stopped"].startswith("answer 1 of 3 decided a block (fail (0.85))")
    assert record["summary"] == "1/1 agree: fail; 1 of 3 asked (no answer set could still pass)"
    assert len(record["answers"]) == 1
