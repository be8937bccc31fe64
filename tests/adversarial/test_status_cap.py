"""The status cap never freezes ``success`` (issue 31, finding 5).

Class: *writes made per event, against a store GitHub caps.* GitHub keeps at most 1,000
statuses per commit and context and answers 422 to the next one. The gate posted two on
every event (a ``pending``, then the decision), even a reopen that decided nothing new:
after about 500 reopens of a passed head GitHub refused every later status there, and a
second pull request from the same head into a stricter base could post no block, so the
head's frozen ``success`` satisfied it.

The fix (docs/decisions/0042-writes-bounded-by-decisions.md): a status is written only
when what the head shows for the context changes, found by the context's key (the
combined status); every status carries the number of statuses the context holds, and a
``success`` is posted only while room for a block after it remains; a refused write ends
the run in a block on every channel still open, naming the cause and who can clear it.

The variants generate how many statuses an earlier gate (one that wrote on every event)
left on the head and how many reopens follow (enough to reach the cap at two statuses
each, and more); when a stricter pull request from the same head arrives, the head must
never show ``success`` while that pull request's question failed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.lab.demo import verdict_block
from gate.lab.sim import ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from tests.adversarial.test_deleted_comment import BAD
from tests.adversarial.test_state_machine import reset
from tests.fakes.events import pull_request_event
from tests.fakes.github import MAX_STATUSES, FakeGitHub
from tests.integration.action.test_run_fake_github import CONFIG_PATH, REPO, run_gate

Sim = Callable[..., ReviewerSimulator]
MAIN, STAGING, HEAD = "2" * 40, "4" * 40, "d4" * 20
CONTEXT = "review-gate"


def strict_fails(request: dict[str, Any]) -> str:
    """The reviewer: the diff fails under the strict base's policy, passes under the lax."""
    binding = binding_in(extract_prompt("openai", request)[1])
    assert binding is not None
    verdict = "fail" if binding.policy_version == "strict" else "pass"
    return verdict_block(binding, verdict, [f"scripted {verdict}"], 0.95)


def in_context(fake: FakeGitHub) -> list[dict[str, Any]]:
    return [s for s in fake.status_list(HEAD) if s["context"] == CONTEXT]


@settings(
    max_examples=5,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    left=st.integers(2, 12),
    extra=st.integers(0, 3),
    shown=st.sampled_from(["success", "pending"]),
)
def test_a_capped_context_never_keeps_a_success_the_sibling_did_not_earn(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    left: int,
    extra: int,
    shown: str,
) -> None:
    fake = reset(fake_github)
    fake.set_file(MAIN, CONFIG_PATH, "policy_version: 'lax'\n")
    fake.set_file(STAGING, CONFIG_PATH, "policy_version: 'strict'\n")
    sim = sim_factory(strict_fails)
    fake.add_pull(7, head_sha=HEAD, base_sha=MAIN, diff=BAD, base_ref="main")
    fake.add_pull(8, head_sha=HEAD, base_sha=STAGING, diff=BAD, base_ref="staging")
    fake.pulls[8]["state"] = "closed"  # opened later
    opened = pull_request_event("opened", repository=REPO, number=7, head_sha=HEAD, base_sha=MAIN)
    assert run_gate(tmp_path, fake, sim, opened).code == 0
    assert in_context(fake)[-1]["state"] == "success"

    # an earlier gate wrote two statuses on every reopen of the passed head: the context
    # is ``left`` statuses short of GitHub's cap, its newest the pass (or a run's pending)
    final = in_context(fake)[-1]["description"]
    while len(in_context(fake)) < MAX_STATUSES - left:
        fake.add_status(HEAD, state="pending", description="pending: review in progress")
        fake.add_status(HEAD, state="success", description=final)
    if shown == "pending":
        fake.add_status(HEAD, state="pending", description="pending: review in progress")
    reopened = pull_request_event(
        "reopened", repository=REPO, number=7, head_sha=HEAD, base_sha=MAIN
    )
    for _ in range((left + 1) // 2 + extra):  # enough to reach the cap at two a reopen
        run_gate(tmp_path, fake, sim, reopened)

    # a second pull request from the same head, into the stricter base
    fake.pulls[8]["state"] = "open"
    sibling = pull_request_event(
        "opened", repository=REPO, number=8, head_sha=HEAD, base_sha=STAGING
    )
    outcome = run_gate(tmp_path, fake, sim, sibling)
    assert outcome.code != 0, outcome.stdout
    newest = in_context(fake)[-1]
    assert newest["state"] != "success", (
        f"#8's question failed, yet its head shows {newest['state']}: {newest['description']}"
    )
    assert len(in_context(fake)) <= MAX_STATUSES
    assert fake.violations == [], fake.violations
