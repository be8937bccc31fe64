"""The chunk table: one decision for a pull request reviewed in chunks, as one pure function.

Each chunk is decided by :func:`gate.decide.decision.decide` against its own binding (the
SHA-256 of that chunk's bytes). :func:`aggregate` then applies one fixed table, in order:

1. any chunk ``fail``: ``fail`` / failure, the failing chunk's reason (``reviewer_fail``,
   ``repaired_fail``) and the reasons of every failing chunk;
2. else any chunk ``needs_human``: ``needs_human``, that chunk's status and reason
   (``diff_sha_mismatch``, ``low_confidence``, an end the model or the diff chose, ...):
   decided by an answer, it stands, so an outage in another chunk never hides it;
3. else any chunk ``incomplete``, or missing: ``incomplete`` / error, that chunk's reason
   (``connection_cut``, ...) or ``missing_chunk``;
4. else (every chunk ``pass``): ``pass`` / success (``reviewer_pass``), with the lowest
   confidence of any chunk and the reasons of every chunk.

A missing chunk (no decision for a planned chunk) is never a pass, and an empty plan
is ``incomplete``. A pass here is only ever made of passes :func:`~gate.decide.decision.decide`
made: a chunk's decision that is not exactly ``pass``/``success`` with a verdict counts
as what it is, never as a pass. With one chunk the table returns that chunk's decision
unchanged, so a small pull request is decided exactly as before chunking existed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.decide.decision import Binding, Decision, State, Status, blocked, describe
from gate.decide.verdict import Verdict


def _passed(decision: Decision) -> bool:
    return (
        decision.state is State.PASS
        and decision.status is Status.SUCCESS
        and decision.verdict is not None
        and decision.verdict.verdict == "pass"
    )


def _needs_human(name: str, total: int, decision: Decision) -> Decision:
    """``needs_human`` for one chunk that did not pass, with its reason and status."""
    status = decision.status if decision.status is not Status.SUCCESS else Status.ERROR
    detail = f"chunk {name}/{total}: {decision.detail}"
    return blocked(State.NEEDS_HUMAN, decision.reason, detail, status=status)


def aggregate(decisions: Sequence[tuple[str, Decision | None]], *, binding: Binding) -> Decision:
    """The pull request's decision from ``(chunk name, decision or None if missing)`` rows,
    in plan order. ``binding`` is the whole selected diff's (named in an aggregated pass)."""
    total = len(decisions)
    if total == 0:
        return blocked(State.INCOMPLETE, "missing_chunk", "no chunk was reviewed")
    if total == 1 and decisions[0][1] is not None:
        return decisions[0][1]
    failed = [(name, d) for name, d in decisions if d is not None and d.state is State.FAIL]
    if failed:
        name, first = failed[0]
        detail = "; ".join(f"chunk {n}/{total}: {d.detail}" for n, d in failed)
        return Decision(
            state=State.FAIL,
            status=Status.FAILURE,
            reason=first.reason,
            description=describe(f"fail in chunk {name}/{total}", first.description),
            detail=detail,
            verdict=first.verdict,
            source=first.source,
            envelope_sha256=first.envelope_sha256,
        )
    for name, decision in decisions:
        if decision is not None and decision.state is State.NEEDS_HUMAN:
            return _needs_human(name, total, decision)
    for name, decision in decisions:
        if decision is None:
            return blocked(
                State.INCOMPLETE,
                "missing_chunk",
                f"chunk {name}/{total} has no decision; a missing chunk is never a pass",
            )
    for name, decision in decisions:
        assert decision is not None
        if decision.state is State.INCOMPLETE:
            return blocked(
                State.INCOMPLETE, decision.reason, f"chunk {name}/{total}: {decision.detail}"
            )
    for name, decision in decisions:
        assert decision is not None
        if not _passed(decision):
            return _needs_human(name, total, decision)
    verdicts = [(name, d.verdict) for name, d in decisions if d is not None and d.verdict]
    lowest = min(v.confidence for _, v in verdicts)
    reasons = tuple(f"chunk {name}: {reason}" for name, v in verdicts for reason in v.reasons)
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="reviewer_pass",
        description=describe(
            "pass", f"{total} chunks, lowest confidence {lowest:g}, {len(reasons)} reasons"
        ),
        detail="; ".join(reasons),
        verdict=Verdict(
            verdict="pass",
            reasons=reasons,
            confidence=lowest,
            diff_sha=binding.diff_sha,
            policy_version=binding.policy_version,
        ),
        source="envelope",
    )
