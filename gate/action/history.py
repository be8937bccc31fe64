"""The run's decision as a durable record, kept in the sticky comment's history block.

:func:`record_for` turns what the run learned (:class:`~gate.action.state.RunState`) and the
decision it posted into a :class:`gate.memory.record.Record`; :func:`with_history` appends the
PR's history (the earlier records read by :func:`gate.action.guards.memory`, plus this
one) to the comment body. A record that cannot be written is a note, never a lost comment.
"""

from __future__ import annotations

from gate.action import carry
from gate.action.state import Artifacts, RunState
from gate.decide.decision import Decision
from gate.memory import record


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
    if run.result is not None:
        return "repaired" if run.result.decision.source == "repaired" else "model"
    return "gate"


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
    )


def with_history(
    body: str, run: RunState, decision: Decision, state: str, artifacts: Artifacts
) -> str:
    """``body`` with the history block: the earlier records and this decision's."""
    try:
        block = record.history_block([*run.history, record_for(run, decision, state, artifacts)])
    except record.RecordError as err:
        run.notes.append(f"the decision record was not written: {err.message}")
        return carry.strip(record.strip_history(body))  # no block the comment's text spells
    visible = carry.strip(record.strip_history(body))
    carried = carry_block(run, artifacts)
    # GitHub's limit, the two blocks, the joins
    room = 65_536 - record.MAX_BLOCK_CHARS - carry.MAX_BLOCK_CHARS - 200
    if len(visible) > room:
        visible = visible[:room] + "\n\n… (cut; see the job summary)"
    return f"{visible}\n\n{block}\n" + (f"{carried}\n" if carried else "")


def carry_block(run: RunState, artifacts: Artifacts) -> str:
    """The chunk answers this run leaves for the next push (:mod:`gate.action.carry`):
    its own review's in chunks, else the ones it read and did not replace (a run that
    stopped before reviewing keeps them), else none."""
    entries = carry.entries_of(
        run.result, run_url=run.run_url, certificate_sha=artifacts.digests.get("certificate")
    )
    if not entries and run.result is None and run.carry is not None:
        entries = list(run.carry.entries.values())
    return carry.block(entries)
