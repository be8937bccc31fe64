"""Memory at review time: an earlier decision of the same question, without a new call.

The question is :class:`gate.memory.question.QuestionKey` (diff bytes, policy, config
digest, model, whole-diff prompt digest), the same for every review shape. :func:`recall`
looks through a pull request's records (:mod:`gate.memory.record`, newest first) for the
records that answered that exact question, and:

* an answer that was not a clean pass **stands**, for any head (:func:`stands`): a
  ``fail``, any answer of an agreement set or of a chunk that said ``fail`` (the record's
  ``answers`` tally), a ``needs_human`` the reviewer's answer caused (low confidence, no
  reasons, malformed or repaired, unstable answers), and a model fail that a later guard
  replaced (``superseded``). A re-push, a rebase, an empty commit, a reopen that leaves the
  five fields unchanged is the same question (``fail_stands``, status ``fail stands: ...``).
  Only a transport failure (no answer arrived, ``incomplete``) does not stand;
* a block stands until the diff (or another field of the key) changes, or a writer asks
  for a fresh review: a record made by a writer's fresh review supersedes every older
  record of the same question (:func:`decisive`);
* a ``pass`` is kept for the same head SHA only (``cached_pass``), only when no standing
  block of the same question precedes it, and only when the gate's own identity's
  *newest* final status on that SHA, in the same context, is ``success``
  (:func:`status_confirms_pass`, passed in as ``status_confirmed``): the comment is an
  index, the status the statement;
* anything else is None: the reviewer is asked.

Besides :func:`gate.decide.decision.decide` and the human override, :func:`recall` is the one
other place a ``success`` can come from, and only by repeating a success the gate itself
posted on the same commit for the same question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gate.decide.decision import Decision, State, Status, blocked, describe
from gate.memory.question import QuestionKey
from gate.memory.record import Record
from gate.memory.standing import DECISIVE_SOURCES, any_fail, decisive, passed, stands

__all__ = [
    "DECISIVE_SOURCES",
    "Question",
    "any_fail",
    "decisive",
    "fail_stands",
    "passed",
    "recall",
    "stands",
    "status_confirms_pass",
]


@dataclass(frozen=True)
class Question:
    """What a review would ask (the key a record must match) and the commit it is for."""

    key: QuestionKey
    head_sha: str


def status_confirms_pass(states: Sequence[str]) -> bool:
    """Whether the gate's own statuses on a head (one context, newest first, as GitHub
    lists them) say ``success`` now: the newest one that is not ``pending`` (the current
    run's own pending comes first) must be ``success``. None at all confirms nothing."""
    final = next((state for state in states if state != "pending"), None)
    return final == "success"


def recall(
    records: Sequence[Record], question: Question, *, status_confirmed: bool
) -> Decision | None:
    """The earlier decision that stands (module docstring), or None to ask the reviewer."""
    block, kept = decisive(records, question.key)
    if block is not None:
        return fail_stands(block, question)
    if kept is not None and kept.head_sha == question.head_sha and status_confirmed:
        return Decision(
            state=State.PASS,
            status=Status.SUCCESS,
            reason="cached_pass",
            description=describe("pass (kept)", f"the same diff passed at {kept.time}"),
            detail=(
                f"the same diff passed on this commit at {kept.time}; the gate's own success "
                "status confirms it; no new call was made"
            ),
            source="cached",
        )
    return None


def fail_stands(found: Record, question: Question) -> Decision:
    """The standing block of ``found``, repeated for ``question`` with no new call: a
    fail as ``fail`` (``fail_stands``), any other answer that did not pass as
    ``needs_human`` (``block_stands``)."""
    rejected = any_fail(found)
    how = "rejected" if rejected else "not passed"
    answers = f", answers {found.answers}" if found.answers else ""
    if found.question_tag is not None:
        # a row recovered from the gate's own tagged failure on an earlier head
        what = (
            f"the gate's own failure status on commit {found.head_sha[:12]}, an earlier head "
            f"of this pull request, answered this same question ({question.key.id[:12]}, "
            f"diff {question.key.diff_sha[:12]})"
        )
    else:
        what = (
            f"the same diff was {how} at {found.time} on commit {found.head_sha[:12]}: "
            f"{found.state} ({found.reason}{answers}) (question {question.key.id[:12]}, diff "
            f"{question.key.diff_sha[:12]}, policy {found.policy_version}, model {found.model})"
        )
        if found.run_url:  # where the answer's reasons are: this run does not repeat them
            what += f"; its reasons are in the run {found.run_url}"
    detail = (
        f"{what}; no new call was made. The block is about the code: the author can change "
        "the diff; a writer can ask for a fresh review with the review-gate:fresh label, or "
        "override"
    )
    state, reason = (State.FAIL, "fail_stands") if rejected else (State.NEEDS_HUMAN, "block_stands")
    decision = blocked(state, reason, detail, status=Status.FAILURE)
    prefix = "fail stands" if rejected else "block stands"
    return replace(
        decision,
        description=describe(
            prefix,
            f"the gate's failure on {found.head_sha[:7]} stands"
            if found.question_tag is not None
            else f"the same diff was {how} at {found.time}",
        ),
        source="cached",
    )
