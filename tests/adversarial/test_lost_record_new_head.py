"""A block whose record was lost stands on every later head of the same diff (issue 18,
finding 11 on a new head; found while writing the act memory scenario).

Class: *a posted blocking decision left unrecorded is consulted only on its own commit.*
The gate's comment exists (an earlier head passed), the rejected diff is pushed, the model
fails it and the tagged ``failure`` is posted, but every comment write answers 5xx: the
fail's record is lost. Rule 3 read only the head, and the earlier heads were read only when
there was no history at all, so an empty commit, a rebase or a later push of the same diff
asked the model again and its ``success`` landed, with no writer involved. Generated over
the GitHub fault, the evidence channel and the way to the new head; every variant must end
with the rejected diff asked once and its new head blocked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gate.lab.sim import ReviewerSimulator
from gate.memory.record import parse_history
from tests.adversarial.test_deleted_comment import (
    BAD,
    BAD_SHA,
    GOOD,
    Author,
    Truth,
    decided,
    diff_for,
)
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import BASE, CONFIG_PATH

Sim = Callable[..., ReviewerSimulator]
OTHER = diff_for("return a + b + 0")
SHAPES = ("empty_commit", "rebase", "good_then_back", "force_back_then_empty")


def _lose_the_record(fake: FakeGitHub, status: int) -> None:
    """Every comment write (a new comment, an edit of the gate's own) answers ``status``."""
    fake.inject(r"^POST .*/issues/7/comments", status, count=50)
    fake.inject(r"^PATCH .*/issues/comments/", status, count=50)


def _history(fake: FakeGitHub) -> str:
    [body] = [c["body"] for c in fake.comments[7] if "review-gate:sticky" in c["body"]]
    return str(body)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("report", ["status", "check-run"])
@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_lost_record_stands_on_a_new_head(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, status: int, report: str, shape: str
) -> None:
    fake = fake_github
    fake.set_file(BASE, CONFIG_PATH, f"report: {report}\n")
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    author.open(GOOD)  # passes: the gate's comment and its history exist
    before = _history(fake)
    _lose_the_record(fake, status)
    rejected = author.push(BAD)
    assert decided(fake, rejected, report) == ["failure"]
    assert _history(fake) == before  # the fail's record is lost
    assert not [r for r in parse_history(before) if r.diff_sha == BAD_SHA]
    with fake.lock:
        fake.faults.clear()
    if shape == "empty_commit":
        last = author.push(BAD)
    elif shape == "rebase":  # the rejected commit leaves the pull request; `before` names it
        last = author.push(BAD, rebase=True)
    elif shape == "good_then_back":  # another diff in between, then the rejected one again
        author.push(OTHER)
        last = author.push(BAD)
    else:
        author.force_back(rejected)
        last = author.push(BAD)
    assert truth.asked[BAD_SHA] == 1, f"the rejected diff was asked again: {truth.asked}"
    assert decided(fake, last, report) == ["failure"], fake.status_list(last)
    assert "success" not in decided(fake, last, report)


def test_a_recovered_block_is_carried_and_read_once(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    """The row is written into the comment by the run that recovers it, so the next run
    finds it in the history and reads no earlier head again."""
    fake = fake_github
    truth = Truth()
    author = Author(fake, tmp_path, sim_factory(truth))
    author.open(GOOD)
    _lose_the_record(fake, 502)
    rejected = author.push(BAD)
    with fake.lock:
        fake.faults.clear()
        fake.git.refs.clear()  # no question ledger either: the fallback is the statuses
    author.push(BAD)
    rows = [r for r in parse_history(_history(fake)) if r.question_tag is not None]
    assert [(r.head_sha, r.status) for r in rows] == [(rejected, "failure")]
    with fake.lock:
        fake.requests.clear()
    last = author.push(BAD, rebase=True)
    assert truth.asked[BAD_SHA] == 1
    assert decided(fake, last, "status") == ["failure"]
    assert not [r for r in fake.requests if r.path.endswith("/commits")]
