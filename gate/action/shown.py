"""What the head shows for the gate's context, found by its key, and whether a write changes it.

The gate writes a status or a check run only when what it says for that head, context
and question changes (docs/decisions/0042-writes-bounded-by-decisions.md): a reopen, a
label or a re-run that decides what the head already shows writes nothing, so no event
an author can repeat adds to what GitHub keeps. What the head shows is read by its key,
never by scanning a list an author can make longer:

1. the status channel: the newest status of the context, from the commit's combined
   status (:meth:`GitHubClient.shown_status`), and its mark
   (:mod:`gate.action.github.mark`): its kind, question and the count of statuses the
   context holds; an unmarked one (an older gate's, another tool's) is counted once
   (:meth:`GitHubClient.count_in_context`);
2. the check-run channel: the newest check run of the name
   (:meth:`GitHubClient.shown_check_run`, ``filter=latest``).

GitHub keeps at most :data:`MAX_STATUSES` statuses per commit and context and refuses the
next with 422. So a ``success`` is written only while :data:`RESERVE` statuses remain
after it (:func:`room_for_success`): a block can always follow it, and a context that
fills up ends on a block, never on a ``success`` (docs/security.md, "What the gate writes").

The ``pending`` status that opens a run is deferred when every channel already shows a
decision of the gate's (:func:`defer_pending`): the run then writes only if it decides
something else, and posts ``pending`` before it asks a model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gate.action.github.client import GitHubClient
from gate.action.github.mark import Mark, of_status
from gate.action.github.records import SeenCheck
from gate.errors import GitHubError

#: GitHub's cap: statuses per commit and context (the 1,001st is refused with 422)
MAX_STATUSES = 1000
#: statuses kept free after a ``success``, for the blocks that may have to follow it
RESERVE = 10


@dataclass
class Shown:
    """What the head shows on each channel (None: nothing, or not read)."""

    #: the status channel: (state, mark) of the context's newest status
    status: tuple[str, Mark] | None = None
    #: statuses the context holds on the head (None: more than the gate could count)
    count: int | None = 0
    #: GitHub's id of the newest status (to read its author when the identity is unknown)
    status_id: int | None = None
    #: the check-run channel: (state, mark) of the newest check run of the name
    check: tuple[str, Mark] | None = None
    #: the app that wrote that check run
    check_app: str = ""


def read(gh: GitHubClient, head: str, context: str, *, statuses: bool, checks: bool) -> Shown:
    """What ``head`` shows in ``context`` on the channels asked for, each by its key."""
    shown = Shown()
    if statuses:
        found = gh.shown_status(head, context=context)
        if found is not None:
            marked = of_status(found.description)
            shown.status, shown.status_id = (found.state, marked), found.id
            shown.count = (
                marked.count
                if marked.count is not None
                else gh.count_in_context(head, context=context)
            )
    if checks:
        check = gh.shown_check_run(head, name=context)
        if check is not None:
            seen, _cid, app = check
            shown.check, shown.check_app = (seen.state, _mark_of_check(seen)), app
    return shown


def _mark_of_check(seen: SeenCheck) -> Mark:
    return Mark(seen.kind, seen.tag)


def defer_pending(
    gh: GitHubClient, shown: Shown, head: str, *, statuses: bool, checks: bool
) -> bool:
    """Whether the run's opening ``pending`` can wait: every channel shows a decision the
    gate marked, and the token's identity (which adopts the gate's own comment) is known
    without a write: named by the input ``identity``, answered by ``GET /user``, or read
    from the author of the status the head shows when it is among the commit's newest 100
    (then confirmed by the run's first write). A check run's app is compared with that
    identity, never taken for it. Otherwise the run posts ``pending`` and learns the
    identity from that write."""
    if statuses:
        if shown.status is None or shown.status[1].kind is None or shown.count is None:
            return False
        if not _identity(gh, shown, head):
            return False
    if checks and (shown.check is None or shown.check[1].kind is None):
        return False
    return (statuses or checks) and shows_check(gh, shown)


def _identity(gh: GitHubClient, shown: Shown, head: str) -> bool:
    """Whether the token's identity is known, or can be, without a write."""
    if gh.known_identity() is not None:
        return True
    try:
        gh.identity()
        return True
    except GitHubError as err:
        if err.reason != "identity_unknown":
            raise
    author = gh.status_author(head, shown.status_id) if shown.status_id is not None else None
    return author is not None and gh.adopt_shown_identity(author)


def shows_status(gh: GitHubClient, shown: Shown) -> bool:
    """Whether the status channel shows a status: what branch protection reads for the
    context is its newest status, whoever wrote it (GitHub's combined status names no
    author; docs/security.md says what an expected source changes)."""
    return shown.status is not None


def shows_check(gh: GitHubClient, shown: Shown) -> bool:
    """Whether the check run the head shows was written by the token's own app."""
    known = gh.known_identity()
    own = known.login.lower() if known is not None and known.kind == "Bot" else ""
    return shown.check is None or (bool(own) and own == f"{shown.check_app}[bot]".lower())


def shows(channel: tuple[str, Mark] | None, state: str, marked: Mark) -> bool:
    """Whether a channel already shows ``state`` with the same kind and question."""
    return channel is not None and channel[0] == state and marked.same_as(channel[1])


def next_count(shown: Shown) -> int:
    """The count the next status in the context carries (an unknown count is a full one)."""
    return MAX_STATUSES if shown.count is None else shown.count + 1


def wrote_status(gh: GitHubClient, shown: Shown, state: str, marked: Mark) -> None:
    shown.status, shown.count = (state, marked), marked.count


def wrote_check(gh: GitHubClient, shown: Shown, state: str, marked: Mark) -> None:
    shown.check = (state, replace(marked, count=None))
    known = gh.known_identity()
    shown.check_app = known.login.removesuffix("[bot]") if known is not None else ""


def room_for_success(gh: GitHubClient, shown: Shown, marked: Mark) -> bool:
    """Whether a ``success`` with ``marked`` may be written on the status channel: it is
    shown already (nothing is written), or :data:`RESERVE` statuses remain after it."""
    if shows(shown.status, "success", marked) and shows_status(gh, shown):
        return True
    return shown.count is not None and shown.count + 1 <= MAX_STATUSES - RESERVE


def budget_spent(shown: Shown) -> str:
    """Why a ``success`` is withheld (:func:`room_for_success`), and who can act."""
    held = "more than the gate could count" if shown.count is None else f"{shown.count}"
    return (
        f"this commit holds {held} statuses in this context; GitHub keeps at most "
        f"{MAX_STATUSES} and the gate keeps the last {RESERVE} for blocks, so no success is "
        "posted here. Push a new commit (its statuses start empty)"
    )
