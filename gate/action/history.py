"""The PR's records: read once, carried forward by every run, never overwritten unread.

:func:`load` reads the history block of the sticky comment the token's own identity
wrote (once per run, before the first guard, and again at the end if the run stopped
before it was read), with the gate's own standing blocks on the earlier heads when there
is no history to trust (:mod:`gate.action.earlier`); :func:`record_for` turns what the run learned
(:class:`~gate.action.state.RunState`) and the decision it posted into a
:class:`gate.memory.record.Record`; :func:`with_history` appends it to the earlier
records (:func:`gate.memory.standing.history_block`: one row per question, standing
blocks never dropped).

Nothing the gate wrote is lost or replaced unread: when the history could not be read
(unreadable, foreign, oversized) or the new block would drop a standing block,
:func:`with_history` returns None and the comment is left as it is (a note says so);
the gate's own ``failure`` on the commit then stands for the lost record
(:func:`gate.action.guards.memory`).
"""

from __future__ import annotations

from gate.action import carry, earlier, ledger
from gate.action.report import comment_marker
from gate.action.state import Artifacts, RunState
from gate.decide.decision import Decision
from gate.errors import GitHubError
from gate.memory import record, standing
from gate.review.carry import Book, CarryError
from gate.safe import untrusted


def load(run: RunState) -> None:
    """Read the PR's records into ``run.history`` (once). An unreadable block sets
    ``run.history_problem``; a GitHub error propagates (absence is never concluded)."""
    if run.history_loaded or run.pull is None or run.gh is None:
        return
    off = run.config is not None and not run.config.sticky_comment
    # sticky_comment: false writes no comment, and the question ledger is the memory:
    # the comments are not read (an author's thousands of them cost nothing)
    body = None if off else run.gh.own_comment(run.pull.number, marker=comment_marker(run.context))
    run.history_loaded = True
    run.own_comment = body
    try:
        run.history = record.parse_history(body or "")
    except record.RecordError as err:
        run.history = []
        run.history_problem = err.message
        run.notes.append(
            f"the history in the review-gate comment could not be read ({err.message}); "
            "it is kept as it is and not trusted"
        )
    if earlier.needed(run) and not ledger.present(run, run.gh):
        # no history to trust and no question ledger (a deployment's first runs, or a
        # writer deleted it): the gate's own tagged failures on the earlier heads. With
        # a ledger, the memory guard reads them only when the ledger lacks the question
        run.history = [*earlier.recover(run, run.gh), *run.history]


def _text(value: str, limit: int) -> str:
    """Printable ASCII, at most ``limit`` characters (the record's text format)."""
    clean = "".join(ch if " " <= ch <= "~" else "?" for ch in value)
    return clean[:limit]


def _source(run: RunState, decision: Decision) -> str:
    if decision.source == "cached":
        return "cached"
    if decision.reason == "override" and run.evidence.override is not None:
        return "override"
    if decision.source == "repaired":
        return "repaired"
    result = run.result
    if result is not None and (decision.state, decision.reason) == (
        result.decision.state,
        result.decision.reason,
    ):
        return "repaired" if result.decision.source == "repaired" else "model"
    return "gate"  # a guard's decision, even after a review (its verdict is still recorded)


def _label(decision: Decision | None) -> str | None:
    if decision is None:
        return None
    if decision.verdict is not None:
        return str(decision.verdict.verdict)
    return str(decision.state)


def answers_tally(run: RunState) -> str | None:
    """Every answer's verdict behind this run's review, counted (``pass=2,fail=1``):
    each of the k answers, each chunk's answers; None when no review was made."""
    result = run.result
    if result is None:
        return None
    labels: list[str | None] = []
    if result.chunks:
        for chunk in result.chunks:
            if chunk.answers:
                labels += [_label(a.decision) for a in chunk.answers]
            elif not chunk.split:
                labels.append(_label(chunk.decision))
    elif result.answers:
        labels += [_label(a.decision) for a in result.answers]
    else:
        labels.append(_label(result.review_decision or result.decision))
    counts: dict[str, int] = {}
    for label in labels:
        if label in ("pass", "fail", "needs_human", "incomplete"):
            counts[label] = counts.get(label, 0) + 1
    if not counts:
        return None
    order = ("pass", "fail", "needs_human", "incomplete")
    return ",".join(f"{name}={min(counts[name], 99_999)}" for name in order if name in counts)


def record_for(
    run: RunState, decision: Decision, state: str, artifacts: Artifacts
) -> record.Record:
    """The record of the decision this run posted."""
    config = run.config
    result = run.result
    answered = decision.verdict
    if answered is None and run.evidence.review_decision is not None:
        answered = run.evidence.review_decision.verdict
    if answered is None and result is not None and result.review_decision is not None:
        answered = result.review_decision.verdict
    coverage = run.evidence.coverage
    posted = run.evidence.posted
    verdict = answered.verdict if answered is not None else None
    return record.Record(
        time=record.now(),
        base_sha=run.base,
        head_sha=run.head,
        diff_sha=coverage.diff_sha if coverage is not None else None,
        policy_version=_text(config.policy_version, 64) if config else "",
        config_sha=run.config_sha or None,
        # who answered: a fallback's own name when the reviewer before it could not
        provider=_text(result.reviewer.provider if result else config.reviewer.provider, 40)
        if config
        else "",
        model=_text(result.reviewer.model if result else config.reviewer.model, 200)
        if config
        else "",
        prompt_sha=(result.prompt_sha256 if result is not None else run.prompt_sha) or None,
        state=state,
        status=posted.status if posted is not None else str(decision.status),
        verdict=verdict if verdict in ("pass", "fail") else None,
        confidence=answered.confidence if answered is not None else None,
        reason=_text(decision.reason, 80),
        source=_source(run, decision),
        fresh=run.fresh,
        certificate_sha=artifacts.digests.get("certificate"),
        run_url=_text(run.run_url, 300) if run.run_url else None,
        answers=answers_tally(run),
    )


def with_history(
    body: str, run: RunState, decision: Decision, state: str, artifacts: Artifacts
) -> str | None:
    """``body`` with the history block (the earlier records and this decision's), or None
    when the comment must be left as it is (module docstring)."""
    try:
        load(run)
    except GitHubError as err:
        run.notes.append(f"the review-gate comment was not read ({err.message}); left as it is")
        return None
    if run.history_problem is not None:
        run.notes.append("this decision is not added to the unreadable history; see the status")
        return None
    try:
        rec = run.decided_record
        if rec is None or (rec.state, rec.reason) != (state, decision.reason[:80]):
            rec = record_for(run, decision, state, artifacts)
        block = standing.history_block([*run.history, rec])
    except record.RecordError as err:
        run.notes.append(f"the decision record was not written, the comment is kept: {err.message}")
        return None
    visible = visible_part(body)
    carried = carry_block(run, artifacts)
    # GitHub's limit, the two blocks, the joins
    room = 65_536 - len(block) - len(carried) - 200
    if len(visible) > room:
        visible = visible[:room] + "\n\n… (cut; see the job summary)"
    return f"{visible}\n\n{block}\n" + (f"{carried}\n" if carried else "")


def visible_part(body: str) -> str:
    """The comment's text without the gate's blocks: history and carry removed together,
    until a whole pass removes nothing (a carry block nested in a history block, which an
    asset's file name can spell, must not leave a history block behind)."""
    return untrusted.remove_every((record.BLOCK, carry.BLOCK), body).rstrip()


def carry_block(run: RunState, artifacts: Artifacts) -> str:
    """The chunk answers this run leaves for the next push (:mod:`gate.action.carry`):
    its own review's in chunks, else the ones it read and did not replace (a run that
    stopped before reviewing keeps them), else none."""
    entries = carry.entries_of(
        run.result, run_url=run.run_url, certificate_sha=artifacts.digests.get("certificate")
    )
    if not entries and run.result is None:
        entries = list(_carry_read(run).entries.values())
    return carry.block(entries)


def _carry_read(run: RunState) -> Book:
    """The chunk answers the gate's own comment held when this run read it (:func:`load`),
    whether or not a guard let the run as far as the memory guard, which reads them for
    the review (:func:`gate.action.guards.carried`): every path that writes the comment
    carries what it read. A block that is not well-formed is not carried (it carried
    nothing either; the memory guard's note says so when the run gets that far)."""
    if run.carry is not None:
        return run.carry
    try:
        return carry.read(run.own_comment)
    except CarryError:
        return Book()
