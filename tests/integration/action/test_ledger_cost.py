"""What one run costs in GitHub requests, whatever an author piles on (issue 31).

A pull request whose head carries the gate's tagged ``failure`` under ``statuses`` other
statuses (another CI, newer), ``comments`` comments after the gate's own, and a chain of
``commits`` commits; then the run of a ``reopened`` event on that head (the re-roll an
author can ask for as often as they like): with the sticky comment, and with
``sticky_comment: false``. :func:`measure` counts the fake's requests by kind; it uses
nothing but the action's entry point and the fake, so the same function measured the
code before the ledger (docs/action.md, "What a run costs").

The bound: with the question ledger, the counts at 300 commits, 2,000 comments and 900
statuses are the counts at 3, 20 and 9.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.adversarial.test_deleted_comment import BAD, GOOD, Truth
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH, REPO, run_gate

SCALES = {"small": (3, 20, 9), "large": (300, 2000, 900)}


def _kind(path: str) -> str:
    """A request's kind, for the table (ids and SHAs left out)."""
    for name in ("git/ref", "git/commits", "git/trees", "git/blobs", "statuses", "comments",
                 "pulls/7/commits", "check-runs", "contents", "compare", "pulls"):  # fmt: skip
        if f"/{name}" in path:
            return name
    return path.rsplit("/", 1)[-1]


def measure(
    tmp_path: Path, commits: int, comments: int, statuses: int, *, sticky: bool, push: bool = False
) -> Counter[str]:
    """The requests of one ``reopened`` run (module docstring), by kind; ``push``: of the
    run of a push of a new diff instead (a new question: the model is asked)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    with FakeGitHub(REPO) as fake:
        if not sticky:
            fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
        chain = [
            hashlib.sha1(f"c{i}".encode(), usedforsecurity=False).hexdigest()
            for i in range(commits)
        ]
        head = chain[-1]
        fake.add_pull(7, head_sha=head, base_sha=BASE, diff=BAD)
        fake.move_head(7, head, commits=chain)
        truth = Truth()
        sim = ReviewerSimulator("openai", truth)
        sim.start()
        try:
            opened = pull_request_event(
                "opened", repository=REPO, number=7, head_sha=head, base_sha=BASE
            )
            assert run_gate(tmp_path, fake, sim, opened).code == 1
            for i in range(comments):
                fake.add_comment(7, f"comment {i}", login="mallory")
            for i in range(statuses):
                fake.add_status(head, state="success", description=f"ok {i}", context="ci/other",
                                login="other-ci[bot]")  # fmt: skip
            with fake.lock:
                fake.requests.clear()
            if push:
                new = hashlib.sha1(b"new", usedforsecurity=False).hexdigest()
                fake.add_compare(BASE, new, GOOD)
                fake.move_head(7, new, commits=[*chain, new])
                event = pull_request_event(
                    "synchronize", repository=REPO, number=7, head_sha=new, base_sha=BASE
                )
                event["before"] = head
                assert run_gate(tmp_path, fake, sim, event).code == 0
                assert sum(truth.asked.values()) == 2
            else:
                event = pull_request_event(
                    "reopened", repository=REPO, number=7, head_sha=head, base_sha=BASE
                )
                assert run_gate(tmp_path, fake, sim, event).code == 1
                assert sum(truth.asked.values()) == 1
            with fake.lock:
                return Counter(_kind(r.path) for r in fake.requests)
        finally:
            sim.stop()


@pytest.mark.parametrize("sticky", [True, False])
def test_a_run_costs_the_same_whatever_the_author_piles_on(tmp_path: Path, sticky: bool) -> None:
    found = {
        name: measure(tmp_path / name, *counts, sticky=sticky) for name, counts in SCALES.items()
    }
    for name, counts in found.items():
        print(f"sticky={sticky} {name} {SCALES[name]}: {sum(counts.values())} {dict(counts)}")
    large, small = found["large"], found["small"]
    # writes bounded by decisions (decision 0042): the reopen writes nothing when the token's
    # identity is read from the author of the status the head shows, among the commit's
    # newest 100; past them (900 other statuses here) it posts its pending and decision
    # once, which puts them on top again: two requests more, whatever the count
    assert large["statuses"] <= small["statuses"] + 2
    assert {k: v for k, v in large.items() if k != "statuses"} == {
        k: v for k, v in small.items() if k != "statuses"
    }
    assert sum(large.values()) <= 25


@pytest.mark.parametrize("sticky", [True, False])
def test_what_a_new_question_costs(tmp_path: Path, sticky: bool) -> None:
    """A push of a new diff asks the model. With the comment's history beside the ledger,
    that costs the same at any scale; with ``sticky_comment: false`` the gate's statuses
    on the earlier heads are read first, as before (at most 100 heads), the fallback for
    a block whose ledger write GitHub refused: bounded, not constant (docs/action.md)."""
    found = {
        name: measure(tmp_path / f"push-{name}", *counts, sticky=sticky, push=True)
        for name, counts in SCALES.items()
    }
    for name, counts in found.items():
        print(f"push sticky={sticky} {name} {SCALES[name]}: {sum(counts.values())} {dict(counts)}")
    if sticky:
        assert found["large"] == found["small"]
    assert sum(found["large"].values()) <= 200
