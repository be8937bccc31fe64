"""The gate's own blocks on a pull request's earlier heads: what a deleted comment cannot take.

The pull request's records live in the sticky comment, which any writer can delete (and
with ``sticky_comment: false`` there is none). The gate's own ``failure`` statuses, tagged
with their question (their mark, :mod:`gate.action.github.mark`), stay on the commits they were
posted on, but a new head with the same diff (an empty commit, a rebase, a force-push to
an equivalent commit) is another commit: rule 3 of docs/security.md reads only the head.

So when the run has no history to trust (:func:`needed`: no history block was found, or
``sticky_comment: false``), :func:`recover` reads the gate's own statuses (created by the
token's known identity, in the run's context, and the check runs of the gate's own app,
each channel the config's ``report`` posts to) on the pull request's heads, newest first:

1. the head itself, then the event's ``before`` (the head a ``synchronize`` push
   replaced, which a force-push or a rebase took out of the pull request);
2. the pull request's commits (``GET /repos/{owner}/{repo}/pulls/{number}/commits``),
   newest first;

at most :data:`MAX_EARLIER` commits, one call per channel each. A commit whose newest
decisive status (:func:`newest_decisive`) is a tagged ``failure`` gives one row per tag
(:func:`row`: a standing block of that tag, ``question_tag`` set, the commit it was found
on as ``head_sha``). The rows go into the run's history, so the memory guard finds a
block of this run's question exactly as it finds a record, and every path that writes the
comment carries them forward: a chain of later heads keeps them after the earlier commits
leave the pull request.

A history that exists can still miss a block: the run that posted a ``failure`` could not
write the comment (GitHub answered 5xx on every attempt), so its record was lost while the
status stands on its commit. So a run that is about to ask the model (no record, no status
on the head decides its question) reads the earlier heads too, once
(:func:`gate.action.guards.memory`); the rows no history record explains
(:func:`unexplained`) are added as the newest, and so stand over any record of the same
question, until a writer's fresh review; the comment then carries them.

With a question ledger (:mod:`gate.action.ledger`), which finds a block by its key, this
is the fallback: the earlier heads are read only while there is no ledger, or before a
model call by a run with no comment history (a block whose ledger write GitHub refused
then still stands on its commit).

Beyond the bound (a pull request of more commits than :data:`MAX_EARLIER`), the older
commits are not read and a note says how many; docs/security.md names the re-roll that
leaves. A GitHub error propagates: absence is never concluded from a failed read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from gate.action.github import mark
from gate.action.github.client import GitHubClient
from gate.action.github.pull import MAX_PULL_COMMITS
from gate.action.state import RunState
from gate.memory import record
from gate.memory.record import Record

#: earlier heads read at most, one call per channel each (the head and ``before`` included)
MAX_EARLIER = 100


#: what the gate posted on a commit, newest first: (state, kind, the question's tag or
#: None), from one channel (its statuses, or its check runs); the kind and the tag are
#: read from the gate's mark (:mod:`gate.action.github.mark`), never from its words
Seen = list[tuple[str, str | None, str | None]]


def seen_on(run: RunState, gh: GitHubClient, sha: str) -> list[Seen]:
    """The gate's own statuses and check runs on ``sha``, one list per channel the
    config's ``report`` posts to (the token can read what it may write: ``statuses`` or
    ``checks``): the commit statuses in the run's context, with the kind and tag of
    their mark; the check runs of the gate's own app named like the context, with the
    kind and tag of their ``external_id`` (:meth:`GitHubClient.own_check_runs`). Both are
    on the commit, where no PR author can edit or delete them."""
    mode = run.config.report if run.config is not None else "status"
    found: list[Seen] = []
    if mode in ("status", "both"):
        statuses = gh.own_statuses(
            sha, context=run.context, enough=lambda s, text: decisive(s, mark.of_status(text).kind)
        )
        marks = [(state, mark.of_status(text)) for state, text in statuses]
        found.append([(state, m.kind, m.tag) for state, m in marks])
    if mode in ("check-run", "both"):
        checks = gh.own_check_runs(sha, name=run.context)
        found.append([(c.state, c.kind, c.tag) for c in checks])
    return found


def decisive(state: str, kind: str | None) -> bool:
    """Whether a status of the gate's decides the question: a ``failure``, or a
    ``success`` whose mark says a model's pass (:func:`newest_decisive`). A writer's
    override is marked ``override`` whatever its description says (``superseded by …``
    included), and an unmarked success has no kind: neither decides anything."""
    return state == "failure" or (state == "success" and kind == "pass")


def newest_decisive(seen: Seen) -> tuple[str, str | None, str | None] | None:
    """The gate's newest decisive status among ``seen`` (newest first): a ``failure``, or
    a model's ``success``. A pending, an error (an outage, a guard that stopped the run)
    and an override decide nothing about the question, so they cannot hide an earlier
    failure."""
    return next(
        ((state, kind, tagged) for state, kind, tagged in seen if decisive(state, kind)),
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


def newest_ancestors(run: RunState, gh: GitHubClient, listed: set[str]) -> list[str]:
    """The head's ancestors, nearest first (breadth first over every parent), that GitHub
    has not ``listed``, at most :data:`MAX_EARLIER`: the newest commits of a pull request
    longer than GitHub's list (its oldest :data:`~gate.action.github.pull.MAX_PULL_COMMITS`).
    Every parent, not the first only: a merge made from the base's side has the base's
    history as its first parent and the pull request's own commits as its second. The
    commit dates, which the author sets, order nothing here."""
    found: list[str] = []
    seen = {run.head}
    todo = deque([run.head])
    while todo and len(found) < MAX_EARLIER:
        for parent in gh.commit_parents(todo.popleft()):
            if parent in listed or parent in seen:
                continue
            seen.add(parent)
            found.append(parent)
            todo.append(parent)
    return found[:MAX_EARLIER]


def row(run: RunState, sha: str, tag: str, kind: str | None) -> Record:
    """The standing-block row of the question ``tag`` found on ``sha`` (module docstring):
    a ``fail`` where its mark says so, else ``needs_human``."""
    rejected = kind == "fail"
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


def unexplained(rows: Sequence[Record], history: Sequence[Record]) -> list[Record]:
    """The recovered ``rows`` whose failure no record of ``history`` explains: none holds
    a ``failure`` on the same commit (the record written with that status, or the row
    already carried)."""
    explained = {r.head_sha for r in history if r.status == "failure"}
    return [r for r in rows if r.head_sha not in explained]


def recover(run: RunState, gh: GitHubClient) -> list[Record]:
    """The standing-block rows of the pull request's earlier heads (module docstring),
    one per question tag (the newest commit that holds it), newest commit first."""
    if run.pull is None or run.earlier_read:
        return []
    run.earlier_read = True
    commits = gh.pull_commits(run.pull.number)
    # GitHub lists the oldest 250 and stops: past it, the newest are found from the head
    cut = len(commits) >= MAX_PULL_COMMITS
    newer = newest_ancestors(run, gh, set(commits)) if cut else []
    chosen, left = heads(run, [*commits, *reversed(newer)])
    rows: dict[str, Record] = {}
    for sha in chosen:
        for seen in seen_on(run, gh, sha):
            final = newest_decisive(seen)
            if final is None or final[0] != "failure" or final[2] is None:
                continue
            if final[2] not in rows:
                rows[final[2]] = row(run, sha, final[2], final[1])
    if not rows and not left and not cut:
        return []  # nothing to say: no block on any head, every head read
    off = run.config is not None and not run.config.sticky_comment
    if off:
        why = "sticky_comment: false"
    elif not run.history:
        why = "no history in the review-gate comment"
    else:
        why = "no record in the review-gate comment decides this question"
    run.notes.append(
        f"{why}: the gate's own statuses on {len(chosen)} heads of this pull request were "
        f"read; {len(rows)} standing block(s) found"
        + (
            f"; {left} older commits were not read (at most {MAX_EARLIER}; docs/security.md)"
            if left
            else ""
        )
        + (
            f"; GitHub lists only the oldest {MAX_PULL_COMMITS} commits of a pull request: "
            f"{len(newer)} newer ones were found among the head's ancestors"
            + (f" (at most {MAX_EARLIER}; docs/security.md)" if len(newer) >= MAX_EARLIER else "")
            if cut
            else ""
        )
    )
    return list(rows.values())
