"""Class: *a capped listing read as the newest.*

GitHub's ``GET /repos/{owner}/{repo}/pulls/{number}/commits`` lists a pull request's
commits oldest first and stops at 250: past that, the *newest* commits are the ones it
leaves out (GitHub's docs send a caller elsewhere for the rest). The earlier-heads read
(:mod:`gate.action.earlier`) reversed that list and read its first 100 as "the newest
100": on a pull request of more than 250 commits it read commits 250 down to 151, never
the newest, and its note said "older commits were not read". The fake GitHub served the
*newest* 250 (``[-250:]``), which hid this; it now serves the oldest 250, as GitHub does.

Attack (an author without write access, ``sticky_comment: false`` or a deleted comment):
a pull request of more than 250 commits; the rejected head; commits pushed on it whose
runs were cancelled by the workflow's concurrency group before they posted (or that
were pushed at once). The last push's ``before`` holds nothing, and the rejected head,
among the newest, was not in GitHub's list: the diff was asked again and could pass.

Since the question ledger (issue 31) finds the block by its key, these variants delete
the ledger's ref too: they hold the fallback a deployment without a ledger keeps.

Fix (:func:`gate.action.earlier.newest_ancestors`): when the list is at GitHub's cap, the
head's ancestors are walked, every parent, nearest first (``GET /repos/{owner}/{repo}/git/
commits/{sha}``), stopping at listed commits, at most 100, and read first (a first-parent
walk alone missed a merge made from the base's side). Not the List commits endpoint: it
orders by the commit dates, which the author sets. Generated over the pull request's
length x how many unposted commits lie above the rejected one x the memory that was lost;
every variant with the rejected head past the 250 failed before the fix.
"""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from tests.adversarial.test_deleted_comment import BAD, BAD_SHA, Author, Sim, Truth, decided
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH, REPO, run_gate

#: GitHub's own cap on a pull request's commit list
GITHUB_LISTS = 250


def _shas(prefix: str, count: int) -> list[str]:
    return [
        hashlib.sha1(f"{prefix} {i}".encode(), usedforsecurity=False).hexdigest()
        for i in range(count)
    ]


def _rejected_after(
    tmp_path: Path, fake: FakeGitHub, sim_factory: Sim, memory: str, fillers: list[str]
) -> tuple[Truth, Author, str]:
    """Pull request #7 of ``fillers`` and then the rejected head, opened and decided
    (``sticky_comment: false`` first when ``memory`` says so)."""
    if memory == "sticky_off":
        fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.commit(BAD)
    fake.add_pull(7, head_sha=rejected, base_sha=BASE, diff=BAD)
    fake.move_head(7, rejected, commits=[*fillers, rejected])
    opened = pull_request_event(
        "opened", repository=REPO, number=7, head_sha=rejected, base_sha=BASE
    )
    run_gate(tmp_path, fake, author.sim, opened)
    return truth, author, rejected


def test_the_fake_lists_the_oldest_250_as_github_does(fake_github: FakeGitHub) -> None:
    fake = fake_github
    chain = [hashlib.sha1(f"c{i}".encode(), usedforsecurity=False).hexdigest() for i in range(300)]
    fake.add_pull(7, head_sha=chain[-1], base_sha=BASE, diff=BAD)
    fake.move_head(7, chain[-1], commits=chain)
    settings = GitHubSettings(
        repository=fake.repository, api_url=fake.api_url, token=fake.token, throttle=False
    )
    assert GitHubClient(settings).pull_commits(7) == chain[:GITHUB_LISTS]


@pytest.mark.parametrize("memory", ["sticky_off", "deleted"])
@pytest.mark.parametrize("above", [1, 40])
@pytest.mark.parametrize("length", [252, 300, 400])
def test_a_rejected_head_among_the_newest_of_a_long_pull_request_stands(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    length: int,
    above: int,
    memory: str,
) -> None:
    """``length`` commits before the rejected one's successors; ``above`` commits pushed
    over the rejected head whose runs posted nothing; then the push that is run."""
    fake = fake_github
    fillers = _shas("filler", length - 2)
    truth, author, rejected = _rejected_after(tmp_path, fake, sim_factory, memory, fillers)
    assert decided(fake, rejected, "status") == ["failure"]
    if memory == "deleted":
        author.delete_the_gates_comment()
    with fake.lock:  # no question ledger (which finds the block by its key): the fallback
        fake.git.refs.clear()
    cancelled = [author.commit(BAD) for _ in range(above)]  # runs cancelled: nothing posted
    head = author.commit(BAD)
    chain = [*fillers, rejected, *cancelled, head]
    fake.move_head(7, head, commits=chain)
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=head, base_sha=BASE
    )
    payload["before"] = cancelled[-1]
    run = run_gate(tmp_path, fake, author.sim, payload)
    said = run.stdout + run.summary
    newer = min(len(chain) - 250 - 1, 100)  # past GitHub's list, the head excluded; walked
    assert f"{newer} newer ones were found among the head's ancestors" in said
    assert truth.asked[BAD_SHA] == 1, "the rejected diff was asked again"
    assert decided(fake, head, "status") == ["failure"]


@pytest.mark.parametrize("memory", ["sticky_off", "deleted"])
@pytest.mark.parametrize("base_history", [5, 150])
def test_a_merge_made_from_the_base_side_hides_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, base_history: int, memory: str
) -> None:
    """The author merges the branch into the base's tip and pushes that merge: its first
    parent is the base's history, its second the pull request's own commits (the rejected
    head one below the cancelled push). A first-parent walk went down the base's history
    and never met the rejected head."""
    fake = fake_github
    fillers = _shas("filler", 260)
    truth, author, rejected = _rejected_after(tmp_path, fake, sim_factory, memory, fillers)
    if memory == "deleted":
        author.delete_the_gates_comment()
    with fake.lock:  # no question ledger (which finds the block by its key): the fallback
        fake.git.refs.clear()
    cancelled = author.commit(BAD)  # its run was cancelled: nothing posted on it
    history = _shas("base", base_history)
    merge = author.commit(BAD)
    with fake.lock:
        for older, newer in itertools.pairwise(history):
            fake.parents[newer] = [older]
        fake.parents[history[0]] = []
        fake.parents[merge] = [history[-1], cancelled]  # the base's side first
    fake.move_head(7, merge, commits=[*fillers, rejected, cancelled, merge])
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=merge, base_sha=BASE
    )
    payload["before"] = cancelled
    run_gate(tmp_path, fake, author.sim, payload)
    assert truth.asked[BAD_SHA] == 1, "the rejected diff was asked again"
    assert decided(fake, merge, "status") == ["failure"]
