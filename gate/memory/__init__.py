"""Memory at review time: an earlier decision of the same question, without a new call.

:func:`recall` looks through a pull request's records (:mod:`gate.memory.record`, newest first)
for the newest decisive one (``pass`` or ``fail``, from the model, a repair or an
earlier recall) that answered the same question: the same ``diff_sha``,
``policy_version``, model and prompt digest. Then:

* a ``fail`` stands, for any head: a re-push, a rebase or an empty commit that leaves
  the diff bytes unchanged is the same question (``fail_stands``, status
  ``fail stands: the same diff was rejected at <time>``);
* a ``pass`` is kept for the same head SHA and config digest only (``cached_pass``),
  and only when the gate's own identity's *newest* final status on that SHA, in the
  same context, is ``success`` (:func:`status_confirms_pass`, passed in as
  ``status_confirmed``): the comment is an index, the status the statement. An older
  success under a newer ``failure`` or ``error`` (a fresh review that blocked, a run
  that failed) confirms nothing: that pass is no longer the gate's word on the head;
* anything else (no such record, a pass on another head, a fresh review asked for) is
  None: the reviewer is asked.

Both decisions carry ``source="cached"``. Besides :func:`gate.decide.decision.decide` and the
human override, :func:`recall` is the one other place a ``success`` can come from, and
only by repeating a success the gate itself posted on the same commit for the same
question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gate.decide.decision import Decision, State, Status, blocked, describe
from gate.memory.record import Record

#: the sources whose decision answered the question (not a guard, not a human)
DECISIVE_SOURCES = frozenset({"model", "repaired", "cached"})


@dataclass(frozen=True)
class Question:
    """What a review would ask: the key a record must match, and the commit."""

    diff_sha: str
    policy_version: str
    model: str
    prompt_sha: str
    head_sha: str
    config_sha: str
    #: the fallbacks' models: a decision by any reviewer the config may ask answers the
    #: same question (a fail by a fallback stands for the reviewer before it, and back)
    fallback_models: tuple[str, ...] = ()


def status_confirms_pass(states: Sequence[str]) -> bool:
    """Whether the gate's own statuses on a head (one context, newest first, as GitHub
    lists them) say ``success`` now: the newest one that is not ``pending`` (the current
    run's own pending comes first) must be ``success``. None at all confirms nothing."""
    final = next((state for state in states if state != "pending"), None)
    return final == "success"


def earlier(records: Sequence[Record], question: Question) -> Record | None:
    """The newest decisive record of the same question, or None."""
    for record in reversed(records):
        if record.source not in DECISIVE_SOURCES or record.state not in ("pass", "fail"):
            continue
        if any(
            record.same_review(
                diff_sha=question.diff_sha,
                policy_version=question.policy_version,
                model=model,
                prompt_sha=question.prompt_sha,
            )
            for model in (question.model, *question.fallback_models)
        ):
            return record
    return None


def recall(
    records: Sequence[Record], question: Question, *, status_confirmed: bool
) -> Decision | None:
    """The earlier decision that stands (module docstring), or None to ask the reviewer."""
    found = earlier(records, question)
    if found is None:
        return None
    if found.state == "fail":
        detail = (
            f"the same diff was rejected at {found.time} (diff {question.diff_sha[:12]}, policy "
            f"{found.policy_version}, model {found.model}); no new call was made. Change the "
            "diff, or ask for a fresh review with the review-gate:fresh label"
        )
        decision = blocked(State.FAIL, "fail_stands", detail, status=Status.FAILURE)
        return replace(
            decision,
            description=describe("fail stands", f"the same diff was rejected at {found.time}"),
            source="cached",
        )
    same_commit = found.head_sha == question.head_sha and found.config_sha == question.config_sha
    if same_commit and status_confirmed:
        return Decision(
            state=State.PASS,
            status=Status.SUCCESS,
            reason="cached_pass",
            description=describe("pass (kept)", f"the same diff passed at {found.time}"),
            detail=(
                f"the same diff passed on this commit at {found.time}; the gate's own success "
                "status confirms it; no new call was made"
            ),
            source="cached",
        )
    return None
