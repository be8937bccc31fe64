"""Class: an older success status read as the gate's current word on a head (memory).

Cause: memory (issue 11) keeps a recorded pass on the same head without a model call when
the head carries the gate's own ``success`` status. The check was "any success of the
gate's in this context", but statuses are append-only: after a pass, a writer's fresh
review (``review-gate:fresh``) of the same head that came back blocked (a low-confidence
pass, a malformed answer) posts ``failure``/``error`` and leaves a record that is not
decisive, so the older pass record and the older success status both still matched. Any
event the PR author can cause on that head (close and reopen, a label, a re-run) then
posted ``success`` again, with no model call: the newer blocking answer was undone.

Fix: :func:`gate.memory.status_confirms_pass` (used by
:func:`gate.action.guards.memory`): the gate's newest final (non-pending) status on the
head, newest first as GitHub lists them, must be ``success``.

Variants: the pure rule over every sequence of up to 6 statuses (4 states: 5,461
sequences, checked against a direct oracle); and through the whole action, (2 blocking
fresh answers) x (2 events the PR author or a triager can cause on the same head) = 4 runs
of three reviews each, against the fake GitHub and the simulator.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.integration.action.test_run_fake_github import (
    HEAD,
    fake,
    pr_payload,
    run_gate,
    setup_pull,
    sim_factory,
    verdict_text,
)

__all__ = ["fake", "sim_factory"]

STATES = ("pending", "success", "failure", "error")


def sequences(longest: int = 6) -> Iterator[tuple[str, ...]]:
    for size in range(longest + 1):
        yield from itertools.product(STATES, repeat=size)


def test_only_a_newest_final_success_confirms_a_pass() -> None:
    from gate.memory import status_confirms_pass

    count = 0
    for newest_first in sequences():
        final = [s for s in newest_first if s != "pending"]
        expected = bool(final) and final[0] == "success"
        assert status_confirms_pass(newest_first) is expected, newest_first
        count += 1
    assert count == 5461


def low_confidence(req):
    return verdict_text(req, "pass", 0.2)  # needs_human, status failure


def no_fence(_req):
    return "I looked at it and it seems fine."  # needs_human, status error


BLOCKING = {"low_confidence": (low_confidence, "failure"), "no_fence": (no_fence, "error")}
EVENTS = {
    "reopened": lambda: pr_payload("reopened"),
    "labeled": lambda: pr_payload("labeled", label="docs", sender="someone"),
}


@pytest.mark.parametrize("event", sorted(EVENTS))
@pytest.mark.parametrize("blocking", sorted(BLOCKING))
def test_a_blocked_fresh_review_is_not_undone_by_an_event_on_the_same_head(
    tmp_path, fake, sim_factory, blocking, event
):
    setup_pull(fake)
    answer, blocked_status = BLOCKING[blocking]
    calls = {"n": 0}

    def responder(req):
        calls["n"] += 1  # 1: pass, 2: the blocking fresh answer, 3: fail
        if calls["n"] == 1:
            return verdict_text(req, "pass")
        return answer(req) if calls["n"] == 2 else verdict_text(req, "fail")

    sim = sim_factory(responder)
    # 1: a confident pass, recorded, success on HEAD
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 0
    assert fake.states(HEAD) == ["pending", "success"]
    # 2: a writer asks for a fresh review of the same head; the answer blocks
    fake.permissions["maintainer"] = "write"
    fresh = pr_payload("labeled", label="review-gate:fresh", sender="maintainer")
    assert run_gate(tmp_path, fake, sim, fresh).code != 0
    assert fake.states(HEAD)[-1] == blocked_status
    # 3: an event on the same head: the old pass must not come back, and the blocking
    # answer stands without a re-roll (issue 18: every answer counts)
    third = run_gate(tmp_path, fake, sim, EVENTS[event]())
    assert sim.count == 2, "the blocking answer stands: no new call"
    assert third.code != 0
    assert fake.states(HEAD)[-1] == "failure"
    assert "success" not in fake.states(HEAD)[2:]
    assert fake.violations == []
