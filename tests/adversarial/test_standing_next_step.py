"""A standing decision's next step says what changes the answer (issue 18, found by the act
scenario in tests/e2e/test_act_memory.py).

Class: a decision the gate repeats from memory (``fail_stands``, ``block_stands``,
``failure_stands``: an earlier answer of the same question, no model call) was given the
next step of a fresh decision of its family: "fix what the reasons above say and push; the
new head is reviewed again". Its reasons are not in the run, and a push of the same diff (an
empty commit, a rebase) is the same question and is *not* reviewed again, so the block
misled the author about how to act. Generated over every standing path and every event that
repeats it; each variant checks the comment and the summary, and that no model was asked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.action.event import REVIEW_COMMAND
from gate.action.guards import FRESH_LABEL
from gate.lab.sim import ReviewerSimulator
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    DIFF,
    REPO,
    pr_payload,
    run_gate,
    setup_pull,
)
from tests.integration.test_agreement_sim import scripted

Sim = Callable[..., ReviewerSimulator]
EMPTY = "e" * 40  # an empty commit on top of HEAD: a new head, the same diff
FIRST_RUN = "1111"  # the run that answered (every later run is run_gate's 4242)

#: the first run's config and answers, the reason its repeat stands with, and its family
STANDING: dict[str, tuple[str, list[str], str, str]] = {
    "fail": ("", ["fail"], "fail_stands", "rejected"),
    "agreement": ("agreement: 3\n", ["pass", "fail", "pass"], "fail_stands", "rejected"),
    "low-confidence": ("min_confidence: 0.95\n", ["pass"], "block_stands", "needs_human"),
    # the comment write failed: only the gate's tagged failure on the commit remembers it
    # (with no comment at all, it is read back as a row of the history: fail_stands)
    "lost-record": ("", ["fail"], "fail_stands", "rejected"),
}
EVENTS = ("reopened", "synchronize", "labeled", "ready_for_review")
#: a lost record on a new head is the gap docs/security.md names ("Known gap")
VARIANTS = [
    (f, e) for f in sorted(STANDING) for e in EVENTS if (f, e) != ("lost-record", "synchronize")
]


def _repeat(fake: FakeGitHub, event: str) -> dict[str, Any]:
    """The event that asks the same question again, with the fake moved to match."""
    if event == "synchronize":
        fake.move_head(7, EMPTY)
        fake.add_compare(BASE, EMPTY, DIFF)
        return pull_request_event(
            "synchronize", repository=REPO, number=7, head_sha=EMPTY, base_sha=BASE
        )
    if event == "labeled":
        return pr_payload("labeled", label="needs-docs")
    return pr_payload(event)


def _next_steps(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("**Next step**:")]


@pytest.mark.parametrize(("first", "event"), VARIANTS)
def test_a_standing_decision_says_what_changes_it(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, first: str, event: str
) -> None:
    fake = fake_github
    config, answers, reason, family = STANDING[first]
    setup_pull(fake, config=config)
    sim = sim_factory(scripted([*answers, *["pass"] * 30]))
    if first == "lost-record":
        fake.inject(r"^POST .*/issues/7/comments", 502, count=20)
    assert run_gate(tmp_path, fake, sim, pr_payload(), env={"GITHUB_RUN_ID": FIRST_RUN}).code != 0
    with fake.lock:
        fake.faults.clear()
    asked = sim.count
    result = run_gate(tmp_path, fake, sim, _repeat(fake, event))
    assert sim.count == asked, "the repeat asked the model again"
    assert result.outputs["reason"] == reason, result.stdout
    assert result.outputs["family"] == family
    (body,) = [c["body"] for c in fake.comments[7]]
    if first != "lost-record":  # the earlier run, which holds the answer's reasons, is named
        run_url = f"actions/runs/{FIRST_RUN}"
        assert run_url in result.certificate["decision"]["detail"]
        for text in (body, result.summary):
            assert run_url in text.replace("\\", ""), text
    for text in (body, result.summary):
        (step,) = _next_steps(text)
        assert "reviewed again" not in step, step
        assert "reasons above" not in step, step
        assert "answered before and that answer stands" in step
        assert "a new commit with the same diff is the same question" in step
        assert f"`{FRESH_LABEL}`" in step
        assert f"`{REVIEW_COMMAND}`" in step
        assert ("override" in step) == (family == "needs_human")
        assert step.endswith(f"#{family})")


@pytest.mark.parametrize("first", sorted(set(STANDING) - {"lost-record"}))
def test_a_fresh_decision_keeps_its_familys_step(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, first: str
) -> None:
    """The other side: a decision the model just made is not called standing."""
    fake = fake_github
    config, answers, _, _ = STANDING[first]
    setup_pull(fake, config=config)
    sim = sim_factory(scripted([*answers, *["pass"] * 30]))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    (step,) = _next_steps(result.summary)
    assert "answer stands" not in step, step
