"""Agreement: k independent answers to one prompt, aggregated into one decision.

With ``agreement: k`` the pipeline asks the reviewer k times, each on a fresh
connection, and :func:`aggregate` turns the k decisions (each made by
:func:`gate.decide.decision.decide`) into one. The rules, in order:

1. a pass needs k complete, bound passes: the aggregate is a pass only when every
   answer is a pass (``state`` pass, status success); it is then the first answer's
   own decision, so the one function that returns a pass is still ``decide``;
2. any disagreement between verdicts (one answer's verdict says ``pass``, another's
   ``fail``) is ``needs_human`` (``unstable``), its detail listing each answer's verdict
   and confidence;
3. otherwise the verdicts agree and at least one answer blocks: a ``fail`` among them
   stands (a complete fail is final), else the first ``needs_human`` (a low-confidence
   pass, a malformed answer, an end the model or the diff chose: each decided by the
   answer, so it stands), else the first blocking answer (an outage: ``incomplete``).
   An outage beside an answer never hides the answer: the review would be asked again.

The asking stops at the first answer that decides a block (:func:`stops_asking`): a pass
needs k passes, so no set of answers could still pass, and the rest are not asked (nor
paid for). An outage (the reviewer could not answer: :func:`gate.decide.ends.outage`)
rules out a pass too but does not stop the asking: a later answer may decide, and what
it decides stands (a ``fail`` stands on the next push; a fallback reviewer is asked only
when no answer decided anything), so an outage never becomes a re-roll. The decision is
then :func:`aggregate` of the answers asked: a block exactly when asking all k would
block (never a pass either way), and the very decision asking all k gives whenever the
answers not asked would repeat the last one asked.

:func:`aggregate` is pure; the certificate holds each answer asked, how many of the k
were asked and why the asking stopped (:func:`record_json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.decide.attempt import Attempt
from gate.decide.decision import Decision, Family, State, Status, blocked
from gate.decide.ends import outage
from gate.decide.envelope import sealed_json

#: the largest k (each answer is a paid call); the config schema's maximum
MAX_AGREEMENT = 5


@dataclass(frozen=True)
class Answer:
    """One of the k answers: its attempts, its envelope (if complete) and its decision."""

    decision: Decision
    attempts: tuple[Attempt, ...]
    envelope: bytes | None

    def label(self) -> str:
        """``pass (0.92)``, ``fail (0.80)``, or the state and reason when no verdict was read."""
        verdict = self.decision.verdict
        if verdict is not None:
            return f"{verdict.verdict} ({verdict.confidence:.2f})"
        return f"{self.decision.state} ({self.decision.reason})"


def _is_pass(decision: Decision) -> bool:
    return decision.state is State.PASS and decision.status is Status.SUCCESS


def stops_asking(answer: Answer) -> bool:
    """Whether the asking stops at ``answer``: it is no pass, so no set of k answers
    could still pass, and it decided its block (anything but an outage, after which a
    later answer may still decide: module docstring)."""
    if _is_pass(answer.decision):
        return False
    if answer.decision.family is not Family.UNAVAILABLE:
        return True
    return not all(outage(a) for a in answer.attempts if not a.complete)


def stopped(answers: Sequence[Answer], k: int) -> str | None:
    """Why fewer than ``k`` answers were asked, or None when all k were."""
    if len(answers) >= k or not answers:
        return None
    last = answers[-1]
    return (
        f"answer {len(answers)} of {k} decided a block ({last.label()}): no answer set "
        f"could still pass, so the other {k - len(answers)} were not asked"
    )


def aggregate(decisions: Sequence[Decision]) -> Decision:
    """One decision from the k answers' decisions (module docstring); never a pass unless
    every one is a pass. An empty sequence is a bug (ValueError), never a pass."""
    if not decisions:
        raise ValueError("aggregate() needs at least one answer")
    if all(_is_pass(d) for d in decisions):
        return decisions[0]
    if len(decisions) == 1:
        return decisions[0]
    verdicts = {d.verdict.verdict for d in decisions if d.verdict is not None}
    if len(verdicts) > 1:
        return unstable(decisions)
    for state in (State.FAIL, State.NEEDS_HUMAN):
        found = next((d for d in decisions if d.state is state), None)
        if found is not None:
            return found
    return next(d for d in decisions if not _is_pass(d))


def unstable(decisions: Sequence[Decision]) -> Decision:
    """``needs_human`` (``unstable``): the answers disagree; each is listed."""
    parts = []
    for number, decision in enumerate(decisions, 1):
        verdict = decision.verdict
        if verdict is not None:
            parts.append(
                f"#{number} {verdict.verdict} ({verdict.confidence:.2f}, {decision.state})"
            )
        else:
            parts.append(f"#{number} {decision.state} ({decision.reason})")
    detail = (
        f"unstable: the {len(decisions)} answers disagree: {'; '.join(parts)}; "
        "a human must decide (each answer is in the certificate)"
    )
    return blocked(State.NEEDS_HUMAN, "unstable", detail, status=Status.FAILURE)


def summary(answers: Sequence[Answer], k: int | None = None) -> str:
    """``3/3 agree: pass`` or ``2/3 pass, 1/3 fail`` (for the job summary), with
    ``; 2 of 3 asked`` when the asking stopped before all ``k``."""
    counted = _tally(answers)
    if k is not None and len(answers) < k:
        return f"{counted}; {len(answers)} of {k} asked (no answer set could still pass)"
    return counted


def _tally(answers: Sequence[Answer]) -> str:
    labels = [
        str(a.decision.verdict.verdict) if a.decision.verdict is not None else str(a.decision.state)
        for a in answers
    ]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    total = len(labels)
    if len(counts) == 1:
        return f"{total}/{total} agree: {labels[0]}"
    return ", ".join(f"{n}/{total} {label}" for label, n in counts.items())


def record_json(answers: Sequence[Answer], k: int) -> dict[str, Any]:
    """The certificate's ``agreement``: the k asked for, how many were asked and why the
    asking stopped (None: all k were), the summary and each answer asked."""
    return {
        "k": k,
        "asked": len(answers),
        "stopped": stopped(answers, k),
        "summary": summary(answers, k),
        "answers": answers_json(answers),
    }


def answers_json(answers: Sequence[Answer]) -> list[dict[str, Any]]:
    """Each answer for the certificate: its decision, attempts and envelope (base64)."""
    out = []
    for number, answer in enumerate(answers, 1):
        out.append(
            {
                "number": number,
                "decision": answer.decision.to_json(),
                "attempts": [a.to_json() for a in answer.attempts],
                "envelope": sealed_json(answer.envelope),
            }
        )
    return out
