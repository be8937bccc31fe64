"""gate.memory.recall: an earlier fail stands, a pass is kept only on the same head with the
gate's own status; everything else asks the reviewer."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.decision import State, Status
from gate.memory import Question, recall
from gate.memory.record import SOURCES, STATES, Record

Q = Question(
    diff_sha="a" * 64, policy_version="1", model="m", prompt_sha="c" * 64,
    head_sha="1" * 40, config_sha="b" * 64,
)  # fmt: skip
BASE = Record(
    time="2026-12-01T09:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40, diff_sha="a" * 64,
    policy_version="1", config_sha="b" * 64, provider="openai", model="m", prompt_sha="c" * 64,
    state="fail", status="failure", verdict="fail", confidence=0.9, reason="reviewer_fail",
    source="model", fresh=False, certificate_sha=None, run_url=None,
)  # fmt: skip

variants = st.builds(
    lambda state, source, diff, policy, model, prompt, head, config: replace(
        BASE, state=state, source=source, diff_sha=diff, policy_version=policy, model=model,
        prompt_sha=prompt, head_sha=head, config_sha=config,
    ),
    st.sampled_from(STATES), st.sampled_from(SOURCES),
    st.sampled_from(["a" * 64, "d" * 64]), st.sampled_from(["1", "2"]),
    st.sampled_from(["m", "n"]), st.sampled_from(["c" * 64, "e" * 64]),
    st.sampled_from(["1" * 40, "3" * 40]), st.sampled_from(["b" * 64, "f" * 64]),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(variants, max_size=6), st.booleans())
def test_recall_repeats_only_a_decisive_record_of_the_same_question(recs, confirmed) -> None:
    decision = recall(recs, Q, status_confirmed=confirmed)
    same = [
        r for r in recs
        if r.source in ("model", "repaired", "cached") and r.state in ("pass", "fail")
        and (r.diff_sha, r.policy_version, r.model, r.prompt_sha)
        == (Q.diff_sha, Q.policy_version, Q.model, Q.prompt_sha)
    ]  # fmt: skip
    if not same:
        assert decision is None
        return
    newest = same[-1]
    if newest.state == "fail":
        assert decision is not None
        assert (decision.state, decision.status, decision.reason) == (
            State.FAIL, Status.FAILURE, "fail_stands",
        )  # fmt: skip
        assert decision.description.startswith("fail stands: the same diff was rejected at")
    elif newest.head_sha == Q.head_sha and newest.config_sha == Q.config_sha and confirmed:
        assert decision is not None
        assert (decision.state, decision.reason, decision.source) == (
            State.PASS, "cached_pass", "cached",
        )  # fmt: skip
    else:
        assert decision is None  # never a pass without the gate's own status
