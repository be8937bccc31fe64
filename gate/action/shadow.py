"""``mode: shadow``: the whole review, posted as what the gate would have done, never as a decision.

A team that has installed the gate reads what it would do to its own pull requests before
it makes it required (docs/action.md, "From shadow to required"). A shadow run is the
review run of :mod:`gate.action.run` (selection, guards, cost bound, the review, the
certificate, the job summary), with four differences, each held by structure, not by
wording (docs/decisions/0048-shadow-mode.md):

1. **Its own context.** It posts under :func:`context_for` the required context
   (``review-gate/shadow`` for ``review-gate``): a name no required run reads, since every
   reader of the gate's evidence (:mod:`gate.action.shown`, :mod:`gate.action.earlier`, the
   memory guard) reads by the required context, and the shadow one is never equal to it.
2. **Its own kinds.** What it posts is marked ``would_pass`` or ``would_block``
   (:data:`gate.action.github.mark.SHADOW_KINDS`): a commit status in state ``success``
   (branch protection does not require it; the words say what the gate would have done),
   or a completed check run with conclusion ``neutral``. No reader takes either kind for a
   decision: a ``success`` decides only as ``pass``, a block stands only as a ``failure``.
3. **No memory.** It neither reads nor writes the question ledger, the sticky comment or
   the earlier heads, posts no pending, no comment and no pull request review, and answers
   no ``/review-gate review`` command: every question it meets is asked, as ``backtest``
   asks (memory off), so ``review-gate stats --shadow`` over its certificates counts the
   same rates (:func:`gate.memory.stats.shadow_rates`), and a later required run on the
   same head asks the model itself.
4. **It never fails the job.** Every decision and every error exits 0
   (:func:`exit_code`); only a usage error (a wrong input, an unsupported event) exits 2:
   the workflow's own mistake, found on its first run, which a silent shadow would hide
   for the whole calibration.

Writes are bounded as everywhere (:mod:`gate.action.shown`): a shadow status or check run
is written only when what it says (would pass, would block, and the question) changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gate.action import checks, shown
from gate.action.event import Target
from gate.action.github.mark import Mark
from gate.action.shown import Shown
from gate.action.state import RunState
from gate.decide.decision import Status, describe
from gate.errors import ExitCode

#: what a shadow context is: the required context with this after it
SUFFIX = "/shadow"
#: the state of every shadow commit status (the words and the mark say the rest)
STATE = "success"
#: the conclusion of every shadow check run
CONCLUSION = "neutral"


def context_for(required: str) -> str:
    """The context a shadow run posts under: never the required one (``review-gate`` gives
    ``review-gate/shadow``)."""
    return required + SUFFIX


def ignores(target: Target) -> str | None:
    """Why a shadow run asks for nothing on this event: a ``/review-gate review`` comment
    asks the required gate for a fresh review, not its shadow; None for any other event."""
    if target.comment_id is None:
        return None
    return "mode: shadow answers no /review-gate review command; the required gate does"


def would(status: Status) -> str:
    """The shadow kind of a final status: ``would_pass`` for a ``success`` only."""
    return "would_pass" if status is Status.SUCCESS else "would_block"


def words(status: Status, description: str) -> str:
    """What a shadow post says: ``would pass: …`` or ``would block: <the reason>``."""
    return describe("would pass" if status is Status.SUCCESS else "would block", description)


def post(run: RunState, seen: Shown, status: Status, description: str, *, tag: str) -> None:
    """Post what the gate would have done with ``status`` on the channels the config's
    ``report`` names, each only when it does not show it already; nothing for a
    ``pending`` (a shadow run posts no progress and no skipped draft)."""
    if status is Status.PENDING:
        return
    if not run.context.endswith(SUFFIX):  # a bug: the required context is never written
        raise ValueError(f"a shadow post under {run.context!r}, not a shadow context")
    gh = run.gh
    assert gh is not None
    mode = run.config.report if run.config is not None else "status"
    marked = Mark(would(status), tag or None)
    text = words(status, description)
    # the shadow's own channel: another app's run of that name could only save a write
    if checks.wants_check(mode) and not shown.shows(seen.check, CONCLUSION, marked):
        run.check_run_id = checks.post_neutral(
            gh,
            name=run.context,
            head=run.head,
            description=text,
            details_url=run.run_url,
            marked=marked,
        )
        shown.wrote_check(gh, seen, CONCLUSION, marked)
    if checks.wants_status(mode) and not shown.shows(seen.status, STATE, marked):
        counted = replace(marked, count=shown.next_count(seen))
        gh.create_status(
            run.head,
            state=STATE,
            description=text,
            context=run.context,
            target_url=run.run_url,
            marked=counted,
        )
        shown.wrote_status(gh, seen, STATE, counted)


def recorded(run: RunState, status: Status, description: str) -> tuple[str, str]:
    """(status, description) the outputs and the summary report for a shadow post."""
    mode = run.config.report if run.config is not None else "status"
    return (STATE if checks.wants_status(mode) else CONCLUSION), words(status, description)


def evidence(run: RunState, status: Status) -> dict[str, str]:
    """The certificate's ``context.shadow``: what the run would have done, where it said
    so, and the question (``review-gate stats --shadow`` counts its answers by it)."""
    out = {"context": run.context, "would": would(status)}
    if run.question is not None:
        out["question"] = run.question.id
    return out


def quiet(lines: Sequence[str]) -> list[str]:
    """The run's annotations as warnings: a shadow run's block is no error of the job."""
    return [
        "::warning" + line[len("::error") :] if line.startswith("::error") else line
        for line in lines
    ]


def exit_code(code: int) -> int:
    """A shadow run's exit code: 0 whatever was decided; a usage error stays 2."""
    return ExitCode.USAGE if code == ExitCode.USAGE else ExitCode.PASS
