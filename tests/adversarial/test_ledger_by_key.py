"""What stands is found by its key (issue 31, findings 4 and 7).

Class: *what stands is found by a scan with a cap the author can exceed, or by evidence
of one kind only.* Before the question ledger, a standing block was found in the sticky
comment's history (bounded: 60 rows, 24,000 characters), on the head's statuses, and on
the newest 100 earlier heads of the pull request, and only a ``failure`` carried the
question's tag on the commit. Each cap was a re-roll:

* finding 4: rejected pushes fill the comment's history, so a later rejection's record is
  never written (the comment is kept rather than drop a block); 101 more commits put its
  tagged ``failure`` below the 100 earlier heads the gate re-reads; the rejected diff is
  asked again and its lucky pass is ``success``;
* finding 7: a malformed, unbound or repaired answer blocks as ``error``,
  untagged, and stands only through the comment: with ``sticky_comment: false`` or a
  deleted comment, a reopen or an empty commit asks again and a lucky pass is ``success``.

Fix (:mod:`gate.action.ledger`): every decided question is an entry of a git tree at
``refs/review-gate/ledger``, found by its key in five reads, written (compare-and-swap)
before the decision's status is posted. Generated over how many rejections fill the
history and how many commits bury the block (finding 4), and over the kind of answer, the
memory lost and the way back to the same question (finding 7). Every variant failed on
49652ce (the rejected diff asked twice, its second answer ``success``).
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
from tests.adversarial.test_deleted_comment import Author, decided, diff_for
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH

Sim = Callable[..., ReviewerSimulator]
MARKER = "review-gate:sticky"


class FirstAnswerBlocks:
    """The reviewer: the first answer to a diff holding ``eval`` is ``kind`` (a fail, or
    an answer that blocks without a verdict the gate can take); every later answer is a
    confident pass, so a re-roll shows as a second call and a ``success``."""

    def __init__(self, kind: str = "fail") -> None:
        self.kind = kind
        self.asked: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        seen = self.asked.get(binding.diff_sha, 0)
        self.asked[binding.diff_sha] = seen + 1
        _system, user = extract_prompt("openai", request)
        if seen or "eval(" not in user:
            return verdict_block(binding, "pass", ["it adds"], 0.95)
        if self.kind == "fail":
            return verdict_block(binding, "fail", ["it evaluates its input"], 0.95)
        if self.kind == "malformed":
            return "I looked at it and it seems fine, no JSON today."
        if self.kind == "unbound":
            other = type(binding)(diff_sha="0" * 64, policy_version=binding.policy_version)
            return verdict_block(other, "pass", ["it adds"], 0.95)
        assert self.kind == "repaired"  # a pass whose JSON is cut: repaired, never a pass
        return verdict_block(binding, "pass", ["it adds"], 0.95).replace("\n}\n```", "\n```")


def _sha(diff: bytes) -> str:
    return hashlib.sha256(diff).hexdigest()


def _history_chars(fake: FakeGitHub) -> str:
    bodies = [c["body"] for c in fake.comments.get(7, []) if MARKER in c["body"]]
    return bodies[0] if bodies else ""


@pytest.mark.parametrize("above", [101, 120])
@pytest.mark.parametrize("back", ["push", "rebase"])
def test_finding_4_a_full_history_and_a_buried_failure(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, above: int, back: str
) -> None:
    fake = fake_github
    truth = FirstAnswerBlocks()
    author = Author(fake, tmp_path, sim_factory(truth))
    author.open(diff_for("return a + b"))
    # rejected pushes, each a new diff, until the comment no longer takes a new record
    rejected_diff = b""
    for n in range(60):
        kept = _history_chars(fake)
        rejected_diff = diff_for(f"return eval(a) + {n}")
        author.push(rejected_diff)
        if _history_chars(fake) == kept:
            break  # the history is full: this rejection's record was not written
    else:
        pytest.fail("the history never filled")
    rejected = author.chain[-1]
    assert decided(fake, rejected, "status")[-1] == "failure"
    # commits whose runs were cancelled (or pushed at once) bury it below 100 heads
    buried = [author.commit(rejected_diff) for _ in range(above)]
    author.chain = [*author.chain, *buried]
    last = author.push(rejected_diff, rebase=back == "rebase")
    assert truth.asked[_sha(rejected_diff)] == 1, "the rejected diff was asked again"
    assert decided(fake, last, "status") == ["failure"]


@pytest.mark.parametrize("back", ["reopened", "empty_commit"])
@pytest.mark.parametrize("memory", ["sticky_off", "deleted"])
@pytest.mark.parametrize("kind", ["malformed", "unbound", "repaired"])
def test_finding_7_a_block_of_any_kind_stands_without_the_comment(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, kind: str, memory: str, back: str
) -> None:
    fake = fake_github
    if memory == "sticky_off":
        fake.set_file(BASE, CONFIG_PATH, "sticky_comment: false\n")
    truth = FirstAnswerBlocks(kind)
    author = Author(fake, tmp_path, sim_factory(truth))
    bad = diff_for("return eval(a)")
    head = author.open(bad)
    assert decided(fake, head, "status") == ["error"]
    if memory == "deleted":
        author.delete_the_gates_comment()
    if back == "reopened":
        author.run("reopened", head)
        last = head
    else:
        last = author.push(bad)
    assert truth.asked[_sha(bad)] == 1, f"the {kind} answer was asked again"
    assert "success" not in decided(fake, last, "status"), fake.status_list(last)
