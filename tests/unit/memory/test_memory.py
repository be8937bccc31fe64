"""gate.memory.recall: a standing block of the same question stands, a pass is kept only on
the same head with the gate's own status and no block before it; everything else asks the
reviewer. The oracle below is written from the rules, not from the code."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.decision import State, Status
from gate.memory import Question, recall
from gate.memory.question import QuestionKey
from gate.memory.record import SOURCES, STATES, Record

KEY = QuestionKey(
    diff_sha="a" * 64, policy_version="1", config_sha="b" * 64, model="m", prompt_sha="c" * 64
)
Q = Question(KEY, head_sha="1" * 40)
BASE = Record(
    time="2026-12-01T09:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40, diff_sha="a" * 64,
    policy_version="1", config_sha="b" * 64, provider="openai", model="m", prompt_sha="c" * 64,
    state="fail", status="failure", verdict="fail", confidence=0.9, reason="reviewer_fail",
    source="model", fresh=False, certificate_sha=None, run_url=None,
)  # fmt: skip

variants = st.builds(
    lambda state, source, verdict, answers, fresh, diff, policy, model, prompt, head, config: (
        replace(
            BASE, state=state, status="success" if state == "pass" else "failure",
            source=source, verdict=verdict, answers=answers, fresh=fresh, diff_sha=diff,
            policy_version=policy, model=model, prompt_sha=prompt, head_sha=head,
            config_sha=config,
        )
    ),
    st.sampled_from(STATES), st.sampled_from(SOURCES), st.sampled_from([None, "pass", "fail"]),
    st.sampled_from([None, "pass=3", "pass=2,fail=1", "fail=1", "incomplete=1"]), st.booleans(),
    st.sampled_from(["a" * 64, "d" * 64]), st.sampled_from(["1", "2"]),
    st.sampled_from(["m", "n"]), st.sampled_from(["c" * 64, "e" * 64]),
    st.sampled_from(["1" * 40, "3" * 40]), st.sampled_from(["b" * 64, "f" * 64]),
)  # fmt: skip


def _same(r: Record) -> bool:
    return (r.diff_sha, r.policy_version, r.config_sha, r.model, r.prompt_sha) == (
        "a" * 64, "1", "b" * 64, "m", "c" * 64,
    )  # fmt: skip


def _answered(r: Record) -> bool:
    return r.source in ("model", "repaired", "cached")


def _blocks(r: Record) -> bool:
    if r.verdict == "fail" or r.state == "fail" or "fail=" in (r.answers or ""):
        return True
    return r.state == "needs_human" and _answered(r)


def _passes(r: Record) -> bool:
    return r.state == "pass" and _answered(r) and not _blocks(r)


@settings(max_examples=400, deadline=None)
@given(st.lists(variants, max_size=6), st.booleans())
def test_recall_follows_the_rules(recs, confirmed) -> None:
    decision = recall(recs, Q, status_confirmed=confirmed)
    counted = []
    for r in reversed([r for r in recs if _same(r)]):
        counted.append(r)
        if r.fresh and (_blocks(r) or _passes(r)):
            break
    if any(_blocks(r) for r in counted):
        assert decision is not None
        assert decision.status is Status.FAILURE
        assert decision.source == "cached"
        assert decision.reason in ("fail_stands", "block_stands")
        return
    newest_pass = next((r for r in counted if _passes(r)), None)
    if newest_pass is not None and newest_pass.head_sha == Q.head_sha and confirmed:
        assert decision is not None
        assert (decision.state, decision.reason, decision.source) == (
            State.PASS, "cached_pass", "cached",
        )  # fmt: skip
    else:
        assert decision is None  # never a pass without the gate's own status


def test_an_agreement_set_holding_a_fail_stands() -> None:
    unstable = replace(
        BASE, state="needs_human", verdict=None, reason="unstable", answers="pass=2,fail=1"
    )
    decision = recall([unstable], Q, status_confirmed=True)
    assert decision is not None
    assert decision.reason == "fail_stands"


def test_a_writers_fresh_pass_supersedes_the_older_fail() -> None:
    fresh_pass = replace(
        BASE, state="pass", status="success", verdict="pass", reason="reviewer_pass", fresh=True
    )
    decision = recall([BASE, fresh_pass], Q, status_confirmed=True)
    assert decision is not None
    assert decision.reason == "cached_pass"
    # an author's re-roll (not fresh) after a fail never supersedes it
    rolled = replace(fresh_pass, fresh=False)
    assert recall([BASE, rolled], Q, status_confirmed=True).reason == "fail_stands"  # type: ignore[union-attr]
