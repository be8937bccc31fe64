"""Class: *a capped listing read as the whole evidence.* The gate's own ``failure`` on a
commit is the evidence of a block when no record explains it (``sticky_comment: false``,
a deleted comment, a comment write GitHub refused). The gate reads a commit's statuses
newest first and stopped, quietly, after :data:`~gate.action.github.write.
MAX_COMMENTS_SCANNED` of them, whoever posted them: what lay below read as "no block".

Attack: the statuses of *every* context and creator count towards the scan. Once the
gate's tagged failure is on the head, anything that posts statuses on that commit buries
it: another CI system the author can re-trigger (close and reopen the pull request), or
the gate's own non-decisive statuses (each run's ``pending``, an ``error``). Once more
than the scan lie above the failure, a run on the same head (reopened) did not see it,
asked the model again, and a second answer could pass: a re-roll of a rejected diff.

Fix (:meth:`gate.action.github.write.StatusWriter.own_statuses` and ``own_check_runs``): a
list that goes on past the scan while no decisive status was found in it is an error
(``github_evidence_cut``), never "nothing there": the run errors (not about the code)
and names the fix (push a new commit: its list starts empty).

Generated over: who buried it (another context, another creator, the gate's own
``pending`` and ``error`` statuses, a mix) x how many statuses lie above it (exactly the
scan, and past it by one page) x the memory that was lost (``sticky_comment: false``, a
deleted comment). Each variant fails on the code before the fix (the rejected diff is
asked again and its head gets ``success``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.action.github.write import MAX_COMMENTS_SCANNED
from tests.adversarial.test_deleted_comment import BAD, BAD_SHA, Author, Sim, Truth
from tests.fakes.github import MAX_STATUSES, FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH

BURIERS = {
    # (context, login or None for the gate's own identity, state)
    "other_ci": [("ci/external", "external-ci[bot]", "success")],
    "other_context_same_token": [("lint", None, "success")],
    "own_pending": [("review-gate", None, "pending")],
    "own_error": [("review-gate", None, "error")],
    "mix": [
        ("ci/external", "external-ci[bot]", "pending"),
        ("review-gate", None, "pending"),
        ("ci/external", "external-ci[bot]", "success"),
        ("review-gate", None, "error"),
    ],
}
DEPTHS = {"the_scan": MAX_COMMENTS_SCANNED, "past_it": MAX_COMMENTS_SCANNED + 100}


def gates(fake: FakeGitHub, sha: str) -> list[dict[str, object]]:
    """The statuses in the gate's context, oldest first (the noise of ``lint`` and the
    other CI left out)."""
    return [s for s in fake.status_list(sha) if s["context"] == "review-gate"]


def bury(fake: FakeGitHub, sha: str, who: str, count: int) -> None:
    """``count`` statuses above the gate's failure; GitHub keeps at most 1,000 per context
    (tests/fakes/github.py enforces it), so what one context cannot hold goes on in
    another context of the same author (``<context>/2``)."""
    shapes = BURIERS[who]
    held: dict[str, int] = {"review-gate": len(gates(fake, sha))}
    for n in range(count):
        context, login, state = shapes[n % len(shapes)]
        if held.get(context, 0) >= MAX_STATUSES - 10:
            context = f"{context}/2"
        held[context] = held.get(context, 0) + 1
        fake.add_status(sha, state=state, description=f"noise {n}", context=context, login=login)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("memory", ["sticky_off", "deleted"])
@pytest.mark.parametrize("depth", sorted(DEPTHS))
@pytest.mark.parametrize("who", sorted(BURIERS))
def test_a_buried_failure_is_never_read_as_no_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, who: str, depth: str, memory: str
) -> None:
    fake = fake_github
    if memory == "sticky_off":
        fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    assert fake.states(rejected) == ["pending", "failure"]
    if memory == "deleted":
        author.delete_the_gates_comment()
    bury(fake, rejected, who, DEPTHS[depth])
    outcome = author.run_outcome("reopened", rejected)
    assert truth.asked[BAD_SHA] == 1, "the rejected diff was asked again"
    assert "success" not in [s["state"] for s in gates(fake, rejected)]
    assert outcome.code != 0
    final = gates(fake, rejected)[-1]
    assert final["state"] in ("failure", "error"), final


def test_a_failure_within_the_scan_still_stands(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    """The control: fewer statuses above the failure than the scan, and it stands, with
    no error (the fix did not turn every long list into an error)."""
    fake = fake_github
    fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    bury(fake, rejected, "mix", MAX_COMMENTS_SCANNED - 10)
    author.run_outcome("reopened", rejected)
    assert truth.asked[BAD_SHA] == 1
    final = gates(fake, rejected)[-1]
    assert final["state"] == "failure", final
    assert "stands" in final["description"], final
