"""The comment command: ``/review-gate review`` on a pull request asks for a fresh review.

:mod:`gate.action.event` recognises the command (``issue_comment``, a new comment on a
pull request whose first line is the command, not written by a bot). Before anything
else, :func:`start` checks who asked, as the override label is checked: only a user with
write, maintain or admin permission (:data:`gate.action.github.pull.OVERRIDE_PERMISSIONS`)
may spend a model call. Anyone else gets a polite reply and nothing more: no status, no
model call. A writer's command is acknowledged with the 👀 reaction, then the run
reviews the pull request's current head as a fresh review, exactly like a ``synchronize``.
"""

from __future__ import annotations

from gate.action.github.client import GitHubClient
from gate.action.github.pull import OVERRIDE_PERMISSIONS
from gate.action.report import md
from gate.action.state import RunState
from gate.errors import GitHubError
from gate.safe.redact import redact

#: the reaction that says "started"
STARTED = "eyes"


def refusal_text(login: str, permission: str) -> str:
    return redact(
        f"Thanks for asking, {md(login)}. review-gate runs a review on request only for "
        f"users with write, maintain or admin permission on this repository (yours: "
        f"{md(permission)}), so no review was started. A maintainer can comment "
        "`/review-gate review` to ask for one; every push is reviewed anyway."
    )


def start(run: RunState, gh: GitHubClient) -> str | None:
    """None when the command may run (and it was acknowledged); else why not (replied)."""
    target = run.target
    if target is None or target.comment_id is None or target.pr_number is None:
        return None
    number, comment_id, login = target.pr_number, target.comment_id, target.sender
    permission = gh.permission(login) if login else "none"
    if permission not in OVERRIDE_PERMISSIONS:
        text = refusal_text(login, permission)
        gh.call(
            f"reply to the command in #{number}",
            lambda: gh.repo.get_issue(number).create_comment(text),
        )
        return (
            f"the command from @{login} (permission {permission}) was not run: only users "
            "with write, maintain or admin permission can ask for a review; replied"
        )
    url = f"{gh.repo.url}/issues/comments/{comment_id}/reactions"
    try:
        gh.call(
            f"react to the command comment {comment_id}",
            lambda: gh.repo.requester.requestJsonAndCheck("POST", url, input={"content": STARTED}),
        )
    except GitHubError as err:  # an acknowledgement only: the review still runs
        run.notes.append(f"could not react to the command: {err.message}")
    run.command = {"comment_id": comment_id, "login": login, "permission": permission}
    return None
