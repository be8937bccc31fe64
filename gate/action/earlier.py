"""The gate's own blocks on a pull request's earlier heads: what a deleted comment cannot take.

The pull request's records live in the sticky comment, which any writer can delete (and
with ``sticky_comment: false`` there is none). The gate's own ``failure`` statuses, tagged
with their question (:func:`gate.memory.question.tag`), stay on the commits they were
posted on, but a new head with the same diff (an empty commit, a rebase, a force-push to
an equivalent commit) is another commit: rule 3 of docs/security.md reads only the head.

So when the run has no history to trust (:func:`needed`: no history block was found, or
``sticky_comment: false``), :func:`recover` reads the gate's own statuses (created by the
token's known identity, in the run's context) on the pull request's heads, newest first:

1. the head itself, then the event's ``before`` (the head a ``synchronize`` push
   replaced, which a force-push or a rebase took out of the pull request);
2. the pull request's commits (``GET /repos/{owner}/{repo}/pulls/{number}/commits``),
   newest first;

at most :data:`MAX_EARLIER` commits, one statuses call each. A commit whose newest
decisive status (:func:`newest_decisive`) is a tagged ``failure`` gives one row per tag
(:func:`row`: a standing block of that tag, ``question_tag`` set, the commit it was found
on as ``head_sha``). The rows go into the run's history, so the memory guard finds a
block of this run's question exactly as it finds a record, and every path that writes the
comment carries them forward: a chain of later heads keeps them after the earlier commits
leave the pull request.

Beyond the bound (a pull request of more commits than :data:`MAX_EARLIER`), the older
commits are not read and a note says how many; docs/security.md names the re-roll that
leaves. A GitHub error propagates: absence is never concluded from a failed read.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.action.github.client import GitHubClient
from gate.action.state import RunState
from gate.memory import question, record
from gate.memory.record import Record

#: earlier heads read at most, one statuses call each (the head and ``before`` included)
MAX_EARLIER = 100


def overridden(description: str) -> bool:
    """Whether a success description is a writer's override (:func:`guards.override`)."""
    return description.startswith(("overridden by @", "overridden:"))


def newest_decisive(statuses: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The gate's newest decisive status among ``statuses`` (newest first): a ``failure``,
    or a ``success`` that is not a writer's override. A pending, an error (an outage, a
    guard that stopped the run) and an override decide nothing about the question, so
    they cannot hide an earlier failure."""
    return next(
        (
            (state, text)
            for state, text in statuses
            if state == "failure" or (state == "success" and not overridden(text))
        ),
        None,
    )


def needed(run: RunState) -> bool:
    """Whether the run has no history to trust and must read the earlier heads: a history
    that was read and holds no record (no gate comment, or a comment without its history
    block), or ``sticky_comment: false``. An unreadable history blocks on its own."""
    if run.pull is None or run.history_problem is not None:
        return False
    off = run.config is not None and not run.config.sticky_comment
    return off or not run.history


def heads(run: RunState, commits: Sequence[str]) -> tuple[list[str], int]:
    """The commits to read, newest first and each once (the head, ``before``, then the
    pull request's commits), at most :data:`MAX_EARLIER`; and how many were left out."""
    before = run.target.before if run.target is not None else ""
    wanted: list[str] = []
    for sha in (run.head, before, *reversed(commits)):
        if sha and sha not in wanted:
            wanted.append(sha)
    return wanted[:MAX_EARLIER], max(0, len(wanted) - MAX_EARLIER)


def row(run: RunState, sha: str, tag: str, description: str) -> Record:
    """The standing-block row of the question ``tag`` found on ``sha`` (module docstring)."""
    rejected = description.startswith("rejected")
    return record.check(
        Record(
            time=record.now(),
            base_sha=run.base,
            head_sha=sha,
            diff_sha=None,
            policy_version="",
            config_sha=None,
            provider="",
            model="",
            prompt_sha=None,
            state="fail" if rejected else "needs_human",
            status="failure",
            verdict=None,
            confidence=None,
            reason="earlier_head_failure",
            source="cached",
            fresh=False,
            certificate_sha=None,
            run_url=None,
            question_tag=tag,
        )
    )


def recover(run: RunState, gh: GitHubClient) -> list[Record]:
    """The standing-block rows of the pull request's earlier heads (module docstring),
    one per question tag (the newest commit that holds it), newest commit first."""
    if run.pull is None:
        return []
    chosen, left = heads(run, gh.pull_commits(run.pull.number))
    rows: dict[str, Record] = {}
    for sha in chosen:
        final = newest_decisive(gh.own_statuses(sha, context=run.context))
        if final is None or final[0] != "failure":
            continue
        tag = question.tag_of(final[1])
        if tag is not None and tag not in rows:
            rows[tag] = row(run, sha, tag, final[1])
    why = "no history in the review-gate comment" if not run.history else "sticky_comment: false"
    run.notes.append(
        f"{why}: the gate's own statuses on {len(chosen)} heads of this pull request were "
        f"read; {len(rows)} standing block(s) found"
        + (
            f"; {left} older commits were not read (at most {MAX_EARLIER}; docs/security.md)"
            if left
            else ""
        )
    )
    return list(rows.values())
