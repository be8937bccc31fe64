"""Removing a label (issue 18, rule 5 of docs/security.md): the class "a writer's exception
outlives the writer's act".

``pull_request`` has an ``unlabeled`` activity type; the gate used to refuse it (not a
reviewed action), so an override's ``success`` stood on the head after its label was
removed, until some later event ran. Now the workflows run on ``unlabeled`` and the gate:

* removing the **override** label decides the head again without it: the earlier standing
  block stands (no call), a kept pass is kept (no call), and with no earlier answer the
  reviewer is asked;
* removing **any other** label changes nothing: no status, no call, exit 0.

Each variant is generated from (what came before the override) x (the reviewer's answer)
or (the label removed) x (the state the head is in), and fails on main 482136c (there the
``unlabeled`` run is a usage error and the override's success stays).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull
from tests.integration.test_agreement_sim import scripted

Sim = Callable[..., ReviewerSimulator]
OVERRIDE = "review-gate:override"


def _label(fake: FakeGitHub, name: str) -> None:
    with fake.lock:
        pull = fake.pulls[7]
        pull["labels"] = [*pull["labels"], {"name": name, "id": 99, "color": "ededed"}]


def _unlabel(fake: FakeGitHub, name: str) -> None:
    with fake.lock:
        pull = fake.pulls[7]
        pull["labels"] = [lb for lb in pull["labels"] if lb["name"] != name]


def _override(tmp_path: Path, fake: FakeGitHub, sim: ReviewerSimulator) -> None:
    fake.permissions["maintainer"] = "write"
    _label(fake, OVERRIDE)
    labelled = pr_payload("labeled", label=OVERRIDE, sender="maintainer")
    assert run_gate(tmp_path, fake, sim, labelled).code == 0
    assert fake.states(HEAD)[-1] == "success"


@pytest.mark.parametrize("before", ["reviewed", "not_reviewed"])
@pytest.mark.parametrize("answer", ["fail", "pass"])
def test_removing_the_override_decides_without_it(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, before: str, answer: str
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(scripted([answer, *["pass"] * 9]))
    if before == "reviewed":
        first = run_gate(tmp_path, fake, sim, pr_payload())
        assert first.code == (1 if answer == "fail" else 0), first.stdout
    _override(tmp_path, fake, sim)
    calls = sim.count
    _unlabel(fake, OVERRIDE)
    removed = run_gate(tmp_path, fake, sim, pr_payload("unlabeled", label=OVERRIDE))
    final = fake.states(HEAD)[-1]
    if before == "reviewed":
        # the earlier answer decides again, with no new call: a fail stands, a pass is kept
        assert sim.count == calls, removed.stdout
        assert final == ("failure" if answer == "fail" else "success"), removed.stdout
    else:
        # nothing was asked before the override: asked now, and its answer is posted
        assert sim.count == calls + 1, removed.stdout
        assert final == ("failure" if answer == "fail" else "success"), removed.stdout
    assert removed.code == (1 if answer == "fail" else 0), removed.stdout


@pytest.mark.parametrize(
    "removed", ["docs", "review-gate:fresh", "needs-review", "review-gate:override-2", "Ünïcode ✓"]
)
@pytest.mark.parametrize("state", ["failed", "passed", "overridden"])
def test_removing_another_label_changes_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, removed: str, state: str
) -> None:
    fake = fake_github
    setup_pull(fake)
    sim = sim_factory(scripted(["fail" if state != "passed" else "pass", *["pass"] * 9]))
    run_gate(tmp_path, fake, sim, pr_payload())
    if state == "overridden":
        _override(tmp_path, fake, sim)
    statuses, calls = list(fake.states(HEAD)), sim.count
    _label(fake, removed)
    _unlabel(fake, removed)
    done = run_gate(tmp_path, fake, sim, pr_payload("unlabeled", label=removed))
    assert done.code == 0, done.stdout
    assert fake.states(HEAD) == statuses
    assert sim.count == calls
    assert done.outputs.get("status") == "none", done.outputs
