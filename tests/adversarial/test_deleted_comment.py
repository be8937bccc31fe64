"""Evidence the gate wrote on an earlier commit of the pull request is consulted (issue 18).

Class: *evidence the gate wrote on an earlier commit of the PR is not consulted.* A writer
deletes the gate's sticky comment (or the workflow sets ``sticky_comment: false``); the
gate's tagged ``failure`` still stands on the commit it was posted on, but a new head with
the same diff is another commit, and used to be asked again: its ``success`` landed. The
variants generate the ways to that new head (an empty commit on top, a rebase that takes
the old commits out of the pull request, a force-push back then an empty commit, a good
push in between then a rebase onto the rejected diff) with 0 to 2 good heads pushed in
between (rebased out of the pull request when a comment can carry the block forward),
with the comment deleted or never written, with the evidence in commit statuses or in
check runs (``report: check-run``). Every variant must end with the
rejected diff asked once, and its new head never ``success``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.lab.demo import verdict_block
from gate.lab.sim import ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    REPO,
    Outcome,
    run_gate,
)

Sim = Callable[..., ReviewerSimulator]


def diff_for(body: str) -> bytes:
    return (
        b"diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
        b"@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    " + body.encode() + b"\n"
    )


BAD, GOOD = diff_for("return eval(a)"), diff_for("return a + b")
BAD_SHA = hashlib.sha256(BAD).hexdigest()


class Truth:
    """The reviewer: the first answer to the rejected diff is ``fail``, everything else
    passes (so a re-roll of the rejected diff shows as a second call and a success)."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        seen = self.asked.get(binding.diff_sha, 0)
        self.asked[binding.diff_sha] = seen + 1
        verdict = "fail" if binding.diff_sha == BAD_SHA and seen == 0 else "pass"
        return verdict_block(binding, verdict, [f"it is a {verdict}"], 0.9)


class Author:
    """Pushes to pull request #7 of the fake, keeping each head's chain of commits."""

    def __init__(self, fake: FakeGitHub, tmp: Path, sim: ReviewerSimulator) -> None:
        self.fake, self.tmp, self.sim = fake, tmp, sim
        self.count = 0
        self.chain: list[str] = []

    def commit(self, diff: bytes) -> str:
        self.count += 1
        head = hashlib.sha1(f"head {self.count}".encode(), usedforsecurity=False).hexdigest()
        self.fake.add_compare(BASE, head, diff)
        return head

    def open(self, diff: bytes) -> str:
        head = self.commit(diff)
        self.fake.add_pull(7, head_sha=head, base_sha=BASE, diff=diff)
        self.chain = [head]
        self.run("opened", head)
        return head

    def push(self, diff: bytes, *, rebase: bool = False) -> str:
        """A new commit with ``diff``: on top of the head, or rebased (the old commits
        leave the pull request; only ``before`` still names the old head)."""
        before, head = self.chain[-1], self.commit(diff)
        self.chain = [head] if rebase else [*self.chain, head]
        self.fake.move_head(7, head, commits=self.chain)
        self.run("synchronize", head, before=before)
        return head

    def force_back(self, head: str) -> None:
        before = self.chain[-1]
        self.chain = self.chain[: self.chain.index(head) + 1]
        self.fake.move_head(7, head, commits=self.chain)
        self.run("synchronize", head, before=before)

    def run(self, action: str, head: str, *, before: str | None = None) -> int:
        return self.run_outcome(action, head, before=before).code

    def run_outcome(self, action: str, head: str, *, before: str | None = None) -> Outcome:
        payload = pull_request_event(
            action, repository=REPO, number=7, head_sha=head, base_sha=BASE
        )
        if before is not None:
            payload["before"] = before
        return run_gate(self.tmp, self.fake, self.sim, payload)

    def delete_the_gates_comment(self) -> None:
        with self.fake.lock:
            self.fake.comments[7] = [
                c for c in self.fake.comments.get(7, []) if "review-gate:sticky" not in c["body"]
            ]


SHAPES = ("empty_commit", "rebase", "force_back_then_empty", "good_then_rebase")


def decided(fake: FakeGitHub, head: str, report: str) -> list[str]:
    """The gate's final decisions on ``head``, oldest first: its statuses, or the
    conclusions of its check runs (``report: check-run``)."""
    if report != "check-run":
        return [s for s in fake.states(head) if s != "pending"]
    with fake.lock:
        runs = sorted(fake.check_runs.values(), key=lambda r: int(r["id"]))
    return [str(r["conclusion"]) for r in runs if r["head_sha"] == head and r["conclusion"]]


@pytest.mark.parametrize("between", [0, 2])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("memory", ["deleted", "sticky_off"])
@pytest.mark.parametrize("report", ["status", "check-run"])
def test_a_rejected_diff_on_a_new_head_is_not_asked_again(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    report: str,
    memory: str,
    shape: str,
    between: int,
) -> None:
    fake = fake_github
    config = f"report: {report}\n"
    if memory == "sticky_off":
        config += "sticky_comment: false\n"
    fake.set_file(BASE, CONFIG_PATH, config)
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    assert decided(fake, rejected, report) == ["failure"]
    if memory == "deleted":
        author.delete_the_gates_comment()

    def rebase() -> bool:
        # a rebase takes the earlier commits out of the pull request: a comment carries
        # the block forward; with none, only the pull request's commits and the push's
        # ``before`` hold it (docs/security.md), so the rejected head must be one of them
        return memory == "deleted" or author.chain[-1] == rejected

    for _ in range(between):  # unrelated good heads
        author.push(GOOD, rebase=memory == "deleted")
    if shape == "empty_commit" and between == 0:
        last = author.push(BAD)
    elif shape == "force_back_then_empty" and between == 0:
        author.force_back(rejected)
        last = author.push(BAD)
    elif shape == "good_then_rebase":
        author.push(GOOD, rebase=False)
        last = author.push(BAD, rebase=rebase())
    else:  # the rejected diff again, on a commit of its own
        last = author.push(BAD, rebase=rebase())
        last = author.push(BAD) if shape == "empty_commit" else last
    assert truth.asked[BAD_SHA] == 1, f"the rejected diff was asked again: {truth.asked}"
    assert decided(fake, last, report) == ["failure"], fake.status_list(last)
    if report == "status":
        final = fake.status_list(last)[-1]["description"]
        assert "stands" in final, final


def test_a_block_recovered_from_an_earlier_head_names_it_and_who_can_act(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    truth = Truth()
    author = Author(fake_github, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    author.delete_the_gates_comment()
    with fake_github.lock:  # and the question ledger: the earlier head's status is left
        fake_github.git.refs.clear()
    last = author.push(BAD, rebase=True)
    assert fake_github.states(last)[-1] == "failure"
    comment = next(c["body"] for c in fake_github.comments[7] if "review-gate:sticky" in c["body"])
    assert rejected[:12] in comment  # the commit it was found on
    for says in ("about the code", "fresh label", "override"):  # who can act, and how
        assert says in comment
    status = fake_github.status_list(last)[-1]["description"]
    assert f"the gate's failure on {rejected[:7]} stands" in status, status
    assert author.run("reopened", last) == 1
    assert truth.asked[BAD_SHA] == 1


@pytest.mark.parametrize("report", ["status", "check-run"])
@pytest.mark.parametrize("on_top", [False, True])
def test_a_new_pull_request_of_the_same_branch_is_not_asked_again(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, report: str, on_top: bool
) -> None:
    """The author closes the rejected pull request and opens another from the same branch
    (with an empty commit on top, or not): the new pull request has no comment of its own,
    and its commits hold the rejected head, whose tagged failure stands."""
    fake = fake_github
    fake.set_file(BASE, CONFIG_PATH, f"report: {report}\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    with fake.lock:
        fake.pulls[7]["state"] = "closed"
    head = author.commit(BAD) if on_top else rejected
    fake.add_pull(10, head_sha=head, base_sha=BASE, diff=BAD)
    fake.move_head(10, head, commits=[rejected, head] if on_top else [rejected])
    payload = pull_request_event("opened", repository=REPO, number=10, head_sha=head, base_sha=BASE)
    assert run_gate(tmp_path, fake, author.sim, payload).code == 1
    assert truth.asked[BAD_SHA] == 1
    assert decided(fake, head, report)[-1] == "failure"
    assert "success" not in decided(fake, head, report)


@pytest.mark.parametrize("lag", [1, 2])
@pytest.mark.parametrize("reads", [1, 2, 50])
@pytest.mark.parametrize("report", ["status", "check-run"])
def test_a_lagging_list_never_hides_the_block(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, lag: int, reads: int, report: str
) -> None:
    """Class: *a status list read lacks the newest statuses* (a read replica behind the
    write GitHub answered 201 to). The comment is gone, so the head's tagged failure is
    the only evidence; a list that lags by the run's own pending and that failure must
    not read as "no block": the run waits for its own write to show, else errors."""
    fake = fake_github
    fake.set_file(BASE, CONFIG_PATH, f"report: {report}\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    author.delete_the_gates_comment()
    with fake.lock:
        fake.git.refs.clear()  # no question ledger either (it finds the block by its key)
        if report == "status":
            fake.status_lag, fake.status_lag_reads = lag, reads
        else:
            fake.check_lag, fake.check_lag_reads = lag, reads
    run = author.run_outcome("reopened", rejected)
    with fake.lock:
        fake.status_lag = fake.status_lag_reads = fake.check_lag = fake.check_lag_reads = 0
    assert truth.asked[BAD_SHA] == 1
    final = decided(fake, rejected, report)
    assert "success" not in final, final
    if reads == 50:  # the list never caught up: the run errors, naming why
        assert final[-1] in ("error", "failure"), final  # a check run concludes failure
        assert "does not yet show" in run.stdout + run.summary
    else:  # it caught up on a later read: the block stands
        assert final[-1] == "failure", final
        assert "does not yet show" not in run.stdout + run.summary


@pytest.mark.parametrize("ledger", [False, True])
@pytest.mark.parametrize("age", [1, 60, 99, 100, 140])
def test_the_earlier_heads_are_read_within_their_bound(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, age: int, ledger: bool
) -> None:
    """A pull request of 150 commits with no history (``sticky_comment: false``), the
    rejected head ``age`` commits below the new head: the newest 100 heads are read, one
    statuses call each, and no more; a block among them stands; beyond them the diff is
    asked again (the re-roll docs/security.md names) and the run's note says how many
    commits were not read. The run never blocks for the commits it did not read. With the
    question ledger (issue 31) the block is found by its key, at any age, and no earlier
    head is read."""
    fake = fake_github
    fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    rejected = author.open(BAD)
    fillers = [hashlib.sha1(f"filler {i}".encode(), usedforsecurity=False).hexdigest()
               for i in range(149)]  # fmt: skip
    chain = [*fillers[: 149 - age], rejected, *fillers[149 - age : 148]]
    head = author.commit(BAD)
    chain = [*chain, head]
    assert len(chain) == 150
    assert chain[-1 - age] == rejected
    fake.move_head(7, head, commits=chain)
    if not ledger:
        with fake.lock:
            fake.git.refs.clear()
    before = len(fake.requests)
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=head, base_sha=BASE
    )
    payload["before"] = chain[-2]
    run = run_gate(tmp_path, fake, author.sim, payload)
    reads = [
        r for r in fake.requests[before:] if r.operation == "repos/list-commit-statuses-for-ref"
    ]
    assert len(reads) <= 100 + 1  # the earlier heads, and the memory guard's read of the head
    if ledger:
        assert reads == []  # the ledger answered by the question's key: no list is read
        assert truth.asked[BAD_SHA] == 1
        assert decided(fake, head, "status") == ["failure"]
    elif age < 100:
        assert truth.asked[BAD_SHA] == 1
        assert decided(fake, head, "status") == ["failure"]
    else:
        assert truth.asked[BAD_SHA] == 2  # the documented re-roll beyond the bound
        assert "50 older commits were not read" in run.stdout + run.summary
